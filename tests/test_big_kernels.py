"""Big real kernels as engineers paste them (benchmarks.big_kernels, written here): a persistent
matmul and a fused attention forward run checked and traced, and a mask removed from either is the
named out-of-bounds error. Small sizes in the interpreter; the GPU's test sizes under `pytest -m gpu`
(their time to a whole result, measured as a person meets it: `python -m benchmarks.edit_loop --cases
persistent,attention`)."""
import pytest

from benchmarks.big_kernels import attention_spec, persistent_matmul_spec

SMALL = {"persistent matmul": lambda: persistent_matmul_spec(n=80, programs=3, block=32),
         "attention": lambda: attention_spec(n=72, heads=2, head_dim=16, block_m=32, block_n=16)}
GPU_SIZE = {"persistent matmul": persistent_matmul_spec, "attention": attention_spec}
# name: (the masked access as written, the same without its mask, the tensor it then runs past)
UNMASKED = {"persistent matmul": (", mask=(rows[:, None] < M) & (ks[None, :] < K), other=0.0", "a"),
            "attention": (", mask=cols[:, None] < seq_len, other=0.0", "v")}


def run(client, spec):
    response = client.post("/api/run", json=spec)
    assert response.status_code == 200
    return response.get_json()


def unmasked(name, spec):
    written, tensor = UNMASKED[name]
    assert written in spec["source"]
    spec["source"] = spec["source"].replace(written, "", 1)
    return spec, tensor


def checked_and_traced(result):
    assert result["status"] == "ok", (result["error"], result["stdout"][-3000:])
    assert result["check"]["ok"]
    assert result["trace"]["programs_traced"] >= 1


@pytest.mark.parametrize("name", SMALL)
def test_a_big_kernel_runs_checked_and_traced_in_the_interpreter(client, name):
    spec = SMALL[name]()
    spec["options"].update(bench=False, ir=False)
    checked_and_traced(run(client, spec))


@pytest.mark.parametrize("name", SMALL)
def test_a_big_kernel_without_a_mask_is_stopped_naming_the_tensor(client, name):
    spec, tensor = unmasked(name, SMALL[name]())
    spec["options"].update(bench=False, ir=False)
    result = run(client, spec)
    assert result["status"] == "error" and result["error"]["type"] == "OutOfBounds", (result["error"], result["stdout"][-3000:])
    assert f"loads `{tensor}`" in result["error"]["message"], result["error"]["message"]


@pytest.mark.gpu
@pytest.mark.parametrize("name", GPU_SIZE)
def test_a_big_kernel_at_its_gpu_size_runs_checked_traced_timed_and_compiled(client, name):
    result = run(client, GPU_SIZE[name]())
    checked_and_traced(result)
    assert result["timings"]["kernel_ms"]["median"] > 0
    assert result["ir"]["sass"] and result["ir"]["n_regs"]


@pytest.mark.gpu
@pytest.mark.parametrize("name", GPU_SIZE)
def test_a_big_kernel_at_its_gpu_size_without_a_mask_is_stopped_before_its_launch(client, name):
    spec, tensor = unmasked(name, GPU_SIZE[name]())
    spec["inputs"] = {k: v.replace("1024", "1000").replace("2048", "2000") for k, v in spec["inputs"].items()}
    spec["args"] = {k: (1000 if v == 1024 else 2000 if v == 2048 else v) for k, v in spec["args"].items()}
    result = run(client, spec)
    assert result["status"] == "error" and result["error"]["type"] == "OutOfBounds", (result["error"], result["stdout"][-3000:])
