"""The GPU path, through the real server and workers. Run on a GPU host: `pytest -m gpu`."""
import pytest

from app.gallery import load_example
from sandbox.run.bench import PEAK_TFLOPS
from tests.support.kernels import VECTOR_ADD, vector_add_spec
from tests.test_timings import AUTOTUNED_ADD, without_block_size

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


def test_a_launch_too_big_to_trace_in_time_still_runs_with_a_note():
    """The interpreter's pass, for what the GPU tracer cannot see (here: a pointer picked by tl.where)."""
    from sandbox.run.pipeline import run_spec
    source = VECTOR_ADD.replace("x = tl.load(x_ptr + offs, mask=mask)",
                                "x = tl.load(tl.where(n > 0, x_ptr, y_ptr) + offs, mask=mask)")
    result = run_spec(vector_add_spec(n=1 << 16, block=256, source=source), limits={"trace_budget_s": 0.0})
    assert result["status"] == "ok", result["error"]
    assert "GPU tracer cannot see" in result["notes"][0]
    assert result["trace"] is None and "too slow for a launch this size" in result["notes"][1]
    assert result["timings"]["bytes_source"] == "tensors"


def test_check_only_without_sanitizer_skips_the_cpu_pass(client):
    spec = vector_add_spec(n=10, block=4)
    spec["options"].update({"trace": False, "sanitize": False, "bench": False, "ir": False})
    result = run(client, spec)
    assert result["status"] == "ok" and result["trace"] is None
    assert "no bounds check" in result["notes"][0].lower()


def test_rerunning_the_same_launch_skips_the_repeated_bounds_check_on_any_worker(client):
    import time
    spec = vector_add_spec(n=7777, block=256)
    spec["options"].update({"trace": False, "bench": False, "ir": False})
    notes = []
    for _ in range(4):  # two workers, a person's pause between runs: they land on either
        result = run(client, spec)
        assert result["status"] == "ok", result["error"]
        notes.append(" ".join(result["notes"]))
        time.sleep(0.5)
    assert "not repeated" not in notes[0]
    assert all("not repeated" in n for n in notes[1:])


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


def test_kernel_and_reference_are_timed_side_by_side(client):
    timings = run(client, vector_add_spec(n=1 << 20))["timings"]
    assert timings["interpreter"] is False
    for stats in (timings["kernel_ms"], timings["reference_ms"]):
        assert 0 < stats["p20"] <= stats["median"] <= stats["p80"] and stats["n"] >= 10
    assert timings["speedup"] == pytest.approx(timings["reference_ms"]["median"] / timings["kernel_ms"]["median"])
    # The first launch (compiling, or loading from Triton's cache) is kept out of the samples.
    assert timings["compile_ms"] > 10 * timings["kernel_ms"]["p80"]


def test_a_launch_too_short_for_a_bandwidth_says_so(client):
    small, large = (run(client, vector_add_spec(n=n, trace=False, sanitize=False))["timings"] for n in (1024, 1 << 24))
    assert "mostly fixed cost" in " ".join(small["notes"])
    assert not any("fixed cost" in note for note in large["notes"])


def test_an_autotuned_kernel_shows_every_configs_time_and_the_choice(client):
    result = run(client, without_block_size(vector_add_spec(n=1 << 16, source=AUTOTUNED_ADD)))
    assert result["status"] == "ok", result["error"]
    table = result["timings"]["autotune"]
    assert [row["config"]["BLOCK_SIZE"] for row in table] == [128, 256]
    assert all(row["ms"] > 0 for row in table)
    chosen = [row for row in table if row["chosen"]]
    assert len(chosen) == 1 and chosen[0]["ms"] == min(row["ms"] for row in table)
    assert any("each over 20 ms of calls" in note for note in result["timings"]["notes"])


def test_a_matmul_reports_tflops_against_the_tensor_core_peak(client):
    spec = load_example("matmul")["spec"]
    spec["inputs"] = {"a": "torch.randn(256, 256, dtype=torch.float16)", "b": "torch.randn(256, 256, dtype=torch.float16)",
                      "c": "torch.empty(256, 256, dtype=torch.float16)"}
    spec["args"].update(BLOCK_M=64, BLOCK_N=64, BLOCK_K=32)
    spec["options"]["ir"] = False
    result = run(client, spec)
    assert result["status"] == "ok", result["error"]
    timings = result["timings"]
    assert timings["flops"] == 2 * 256 ** 3
    assert timings["tflops"] == pytest.approx(timings["flops"] / timings["kernel_ms"]["median"] / 1e9)
    peaks = PEAK_TFLOPS.get(result["device"]["name"])
    assert timings["peak_tflops"] == (peaks["fp16/bf16"] if peaks else None)
    if peaks:
        assert timings["tflops"] < timings["peak_tflops"] and timings["peak_tflops_kind"].startswith("fp16/bf16")


def test_changing_a_meta_parameter_recompiles_once_then_the_cache_is_warm(client):
    # A fresh kernel (a unique comment changes the source hash), so the first launch compiles.
    import uuid
    source = VECTOR_ADD.replace("    mask = offs < n\n", f"    mask = offs < n  # {uuid.uuid4().hex}\n")
    first_launch = {}
    for warps in (4, 2, 4, 2):
        # No bounds check either: each run compiles at its launch, the same way, the cache the difference.
        spec = vector_add_spec(n=1 << 16, source=source, num_warps=warps, trace=False, sanitize=False)
        result = run(client, spec)
        assert result["status"] == "ok", result["error"]
        first_launch.setdefault(warps, []).append(result["timings"]["compile_ms"])
    for warps, (compiled, cached) in first_launch.items():
        # Each run is a fresh process: a cached launch still loads the binary, but compiles nothing.
        assert cached < compiled / 2, (warps, compiled, cached)


def spinning_add(spin, loop="range"):
    """The vector add under @triton.heuristics above @triton.autotune (as fla's activations are
    wrapped), its configs spinning each element `spin` times through a step that leaves it as it was."""
    return VECTOR_ADD.replace("@triton.jit\n", f'''@triton.heuristics({{"EVEN": lambda args: args["n"] % 1024 == 0}})
@triton.autotune(configs=[triton.Config({{"BLOCK_SIZE": 1024, "SPIN": 1}}, num_warps=4),
                          triton.Config({{"BLOCK_SIZE": 1024, "SPIN": {spin}}}, num_warps=4)], key=["n"])
@triton.jit
''').replace("BLOCK_SIZE: tl.constexpr):", "BLOCK_SIZE: tl.constexpr, EVEN: tl.constexpr, SPIN: tl.constexpr):").replace(
        "    tl.store(", f"    s = x\n    for _ in tl.{loop}(SPIN):\n        s = s * 0.5 + x * 0.5\n    tl.store(").replace(
        "x + y, mask", "s + y, mask")


def test_an_autotuner_under_heuristics_times_real_launches_of_each_config(client):
    """Triton's warmup of a heuristics wrapper runs the autotuner itself, timing calls that only
    compile: the run compiles each config through the autotuner's own warmup instead."""
    result = run(client, without_block_size(vector_add_spec(n=1 << 22, source=spinning_add(4096))))
    assert result["status"] == "ok", result["error"]
    fast, slow = result["timings"]["autotune"]
    assert fast["chosen"] and not slow["chosen"] and slow["ms"] > 5 * fast["ms"], (fast, slow)


def test_a_config_still_compiling_past_the_budget_is_left_out_of_the_tuning_and_named(monkeypatch):
    from sandbox.launch import launcher
    from sandbox.run.pipeline import run_spec
    monkeypatch.setattr(launcher, "CONFIG_COMPILE_S", 0.2)
    spec = without_block_size(vector_add_spec(n=1 << 16, source=spinning_add(4096, "static_range"), bench=True))
    result = run_spec(spec)
    assert result["status"] == "ok", result["error"]
    assert any(note.startswith("1 of the autotuner's 2 configs had not compiled 0.2 s after") and "SPIN=4096"
               in note for note in result["notes"]), result["notes"]
    table = result["timings"]["autotune"]  # the one left out listed, untimed (the other, alone, ran untimed too)
    assert [(row["config"]["SPIN"], row["chosen"]) for row in table] == [(1, True), (4096, False)]
    assert table[1]["ms"] is None
