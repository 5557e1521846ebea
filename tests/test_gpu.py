"""The GPU path, through the real server and workers. Run on a GPU host: `pytest -m gpu`."""
import pytest

from tests.conftest import VECTOR_ADD, vector_add_spec

pytestmark = pytest.mark.gpu


def run(client, spec):
    response = client.post("/api/run", json=spec)
    assert response.status_code == 200
    return response.get_json()


def test_vector_add_runs_on_the_gpu_with_timings(client):
    result = run(client, vector_add_spec(n=1 << 20, ir=True))
    assert result["status"] == "ok", result["error"]
    assert result["device"]["kind"] == "gpu"
    timings = result["timings"]
    assert timings["kernel_ms"]["median"] > 0 and timings["kernel_ms"]["n"] >= 10
    assert timings["gbps"] > 50 and timings["peak_gbps"] > timings["gbps"] * 0.2
    assert timings["bytes"] == 3 * 4 * (1 << 20) and timings["bytes_source"] == "trace"
    assert ".target sm_" in result["ir"]["ptx"] and result["ir"]["n_regs"]


def test_masked_tail_trace_comes_from_the_cpu_pass(client):
    result = run(client, vector_add_spec(n=10, block=4))
    assert result["status"] == "ok"
    program_2 = [p for p in result["trace"]["programs"] if p["pid"] == [2, 0, 0]][0]
    store = [a for a in program_2["accesses"] if a["op"] == "store"][0]
    assert store["offsets"] == [[8, 2]] and store["masked"] == [[10, 2]]


def test_an_out_of_bounds_store_is_stopped_before_the_gpu_launch(client):
    source = VECTOR_ADD.replace("tl.store(out_ptr + offs, x + y, mask=mask)", "tl.store(out_ptr + offs, x + y)")
    result = run(client, vector_add_spec(n=10, block=4, source=source))
    assert result["status"] == "error" and result["error"]["pid"] == [2, 0, 0]
    assert "out" in result["error"]["message"]
    assert run(client, vector_add_spec(n=10, block=4))["status"] == "ok"


def test_a_loop_over_tl_cdiv_works(client):
    # triton 3.6's interpreter with numpy 2.5 failed on range(0, tl.cdiv(...)): the trace pass must not.
    source = '''import triton
import triton.language as tl


@triton.jit
def chunked_sum(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    acc = tl.zeros([BLOCK], dtype=tl.float32)
    for k in range(0, tl.cdiv(n, BLOCK)):
        offs = k * BLOCK + tl.arange(0, BLOCK)
        acc += tl.load(x_ptr + offs, mask=offs < n, other=0.0)
    tl.store(out_ptr, tl.sum(acc))
'''
    spec = {"source": source, "kernel": "chunked_sum",
            "inputs": {"x": "torch.randn(1000)", "out": "torch.empty(1)"},
            "args": {"x_ptr": "x", "out_ptr": "out", "n": "x.numel()", "BLOCK": 128},
            "grid": "(1,)", "reference": {"out": "x.sum().reshape(1)"},
            "options": {"atol": 1e-3, "rtol": 1e-4}}
    result = run(client, spec)
    assert result["status"] == "ok", result["error"]
    assert len(result["trace"]["programs"][0]["accesses"]) == 8 + 1
