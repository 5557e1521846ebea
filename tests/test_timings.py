"""The timings a run reports, through sandbox.run.pipeline.run_spec in Triton's interpreter: what is
counted, what is labelled as interpreter time, autotuned and heuristic kernels, FLOP counts."""
import math

import pytest
import torch
from triton import Config

from sandbox.run import bench
from sandbox.run.bench import autotune_table
from sandbox.run.pipeline import run_spec
from tests.support.kernels import VECTOR_ADD, vector_add_spec

AUTOTUNED_ADD = VECTOR_ADD.replace("@triton.jit\n", '''@triton.autotune(configs=[triton.Config({"BLOCK_SIZE": 128}, num_warps=4),
                          triton.Config({"BLOCK_SIZE": 256}, num_warps=8)], key=["n"])
@triton.jit
''')

HEURISTIC_ADD = VECTOR_ADD.replace("@triton.jit\n", '''@triton.heuristics({"BLOCK_SIZE": lambda args: triton.next_power_of_2(args["n"]) // 4})
@triton.jit
''')


def interpreted(spec, **options):
    spec["options"].update({"device": "interpreter", **options})
    return run_spec(spec)


def without_block_size(spec):
    del spec["args"]["BLOCK_SIZE"]
    spec["grid"] = "lambda meta: (triton.cdiv(meta['n'], meta['BLOCK_SIZE']),)"
    return spec


def test_interpreter_timings_are_labelled_and_claim_no_speed():
    result = interpreted(vector_add_spec(n=1000, block=256))
    assert result["status"] == "ok", result["error"]
    timings = result["timings"]
    assert timings["interpreter"] is True
    assert timings["kernel_ms"]["n"] == 1 and timings["kernel_ms"]["median"] > 0
    assert timings["reference_ms"]["n"] > 1  # the CPU reference is timed properly
    assert timings["gbps"] is None and timings["peak_gbps"] is None
    assert timings["tflops"] is None and timings["speedup"] is None and timings["compile_ms"] is None


def test_bytes_count_each_element_loaded_and_stored_once_from_the_trace():
    timings = interpreted(vector_add_spec(n=1000, block=256))["timings"]
    assert timings["bytes"] == 3 * 4 * 1000 and timings["bytes_source"] == "trace"


def test_without_a_trace_bytes_are_the_tensors_sizes():
    spec = vector_add_spec(n=1000, block=256)
    spec["inputs"]["spare"] = "torch.zeros(500)"  # never touched by the kernel, yet counted without a trace
    timings = interpreted(spec, trace=False)["timings"]
    assert timings["bytes"] == (3 * 1000 + 500) * 4 and timings["bytes_source"] == "tensors"


def test_flops_expression_is_evaluated_over_inputs_and_arguments():
    timings = interpreted(vector_add_spec(n=1000, block=256), flops="n + x.numel()")["timings"]
    assert timings["flops"] == 2000
    assert timings["tflops"] is None and timings["peak_tflops"] is None  # a count, no speed claim


def test_a_flops_literal_is_taken_as_is():
    assert interpreted(vector_add_spec(n=1000, block=256), flops=1000)["timings"]["flops"] == 1000


def test_a_broken_flops_expression_is_named():
    result = interpreted(vector_add_spec(n=1000, block=256), flops="2 * M")
    assert result["status"] == "error"
    assert "options.flops" in result["error"]["message"] and "'M'" in result["error"]["message"]


def test_bench_off_means_no_timings():
    assert interpreted(vector_add_spec(n=1000, block=256), bench=False)["timings"] is None


def test_an_autotuned_kernel_runs_its_first_config_in_the_interpreter():
    result = interpreted(without_block_size(vector_add_spec(n=1000, source=AUTOTUNED_ADD)))
    assert result["status"] == "ok", result["error"]
    assert result["trace"]["grid"] == [8, 1, 1]  # cdiv(1000, 128): the first config's BLOCK_SIZE
    table = result["timings"]["autotune"]
    assert [row["config"] for row in table] == [{"BLOCK_SIZE": 128, "num_warps": 4, "num_stages": 3},
                                                {"BLOCK_SIZE": 256, "num_warps": 8, "num_stages": 3}]
    assert [row["chosen"] for row in table] == [True, False]
    assert all(row["ms"] is None for row in table)
    assert any("first config" in note for note in result["timings"]["notes"])


def test_an_autotuned_parameter_in_the_arguments_is_refused():
    spec = vector_add_spec(n=1000, source=AUTOTUNED_ADD)
    result = interpreted(spec)
    assert result["status"] == "error" and result["error"]["phase"] == "build"
    assert "'BLOCK_SIZE'" in result["error"]["message"] and "autotune" in result["error"]["message"]


def test_a_heuristic_parameter_may_be_left_to_the_heuristic():
    result = interpreted(without_block_size(vector_add_spec(n=1000, source=HEURISTIC_ADD)))
    assert result["status"] == "ok", result["error"]
    assert result["trace"]["grid"] == [4, 1, 1]  # next_power_of_2(1000) // 4 = 256 lanes per program
    assert result["timings"]["autotune"] is None


def test_autotune_table_reports_each_configs_median_and_the_choice():
    fast, slow, broken = (Config({"BLOCK": b}, num_warps=w) for b, w in ((128, 4), (64, 2), (512, 8)))

    class Tuned:  # what the table reads of an Autotuner after a GPU launch
        configs = [slow, fast, broken]

    # configs_timings maps each config to do_bench's [median, p20, p80]; a config that failed is inf.
    timings = {slow: [0.31, 0.30, 0.33], fast: [0.12, 0.11, 0.13], broken: [math.inf] * 3}
    table = autotune_table(Tuned, timings, Config({"BLOCK": 128}, num_warps=4))
    assert [(row["config"]["BLOCK"], row["ms"], row["chosen"]) for row in table] == [
        (64, 0.31, False), (128, 0.12, True), (512, None, False)]
    assert table[1]["config"] == {"BLOCK": 128, "num_warps": 4, "num_stages": 3}


@pytest.mark.parametrize("dtype, peak", [(torch.float16, 989.5), (torch.bfloat16, 989.5), (torch.float32, 494.5)])
def test_peak_tflops_follow_the_narrowest_float_input(dtype, peak):
    tensors = [torch.empty(4, dtype=dtype), torch.empty(4, dtype=torch.float32), torch.empty(4, dtype=torch.int64)]
    value, kind = bench.peak_tflops("NVIDIA H200", tensors)
    assert value == peak and "tensor core" in kind


def test_peak_tflops_is_unknown_for_other_devices_and_integer_kernels():
    assert bench.peak_tflops("NVIDIA A10G", [torch.empty(4, dtype=torch.float16)]) == (None, None)
    assert bench.peak_tflops("NVIDIA H200", [torch.empty(4, dtype=torch.int32)]) == (None, None)


def test_tflops_is_flops_over_time():
    assert bench.tflops(2 * 4096 ** 3, 0.2) == pytest.approx(687.19, rel=1e-4)
    assert bench.tflops(None, 0.2) is None and bench.tflops(10, 0) is None
