"""Timings shown in the timings pane: quantiles, sample counts and bandwidth."""
import time

import pytest
import torch
import triton
import triton.language as tl

from sandbox.run.bench import MAX_CPU_REPS, bandwidth, peak_gbps, time_cpu, time_gpu

needs_gpu = [pytest.mark.gpu]


def gpu_test(test):
    for mark in needs_gpu:
        test = mark(test)
    return test


def assert_ordered(timing):
    assert set(timing) == {"median", "p20", "p80", "n"}
    assert 0 < timing["p20"] <= timing["median"] <= timing["p80"]


def test_time_cpu_of_a_torch_reference():
    x = torch.randn(1 << 16)
    timing = time_cpu(lambda: x + x, budget_s=0.2)
    assert_ordered(timing)
    assert 1 < timing["n"] <= MAX_CPU_REPS


def test_time_cpu_runs_the_requested_number_of_times():
    calls = []
    timing = time_cpu(lambda: calls.append(time.sleep(0.002)), reps=5)
    assert timing["n"] == 5 and len(calls) == 6  # one warm-up call outside the samples
    assert_ordered(timing)
    assert timing["median"] >= 2


def test_time_cpu_of_a_call_slower_than_the_budget_is_one_sample():
    timing = time_cpu(lambda: time.sleep(0.05), budget_s=0.01)
    assert timing["n"] == 1 and timing["median"] == timing["p20"] == timing["p80"] >= 50


def test_bandwidth_is_bytes_over_time_in_gb_per_s():
    assert bandwidth(3 * 4 * (1 << 20), 0.01) == pytest.approx(1258.29, rel=1e-4)
    assert bandwidth(10**9, 1000.0) == pytest.approx(1.0)
    assert bandwidth(100, 0.0) is None and bandwidth(None, 1.0) is None


@pytest.mark.cpu_only
def test_peak_bandwidth_is_unknown_without_cuda():
    assert peak_gbps() is None


@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK_SIZE: tl.constexpr):
    offs = tl.program_id(0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) + tl.load(y_ptr + offs, mask=mask), mask=mask)


@gpu_test
def test_time_gpu_of_a_vector_add_is_bandwidth_bound():
    n = 1 << 24
    x, y, out = (torch.randn(n, device="cuda") for _ in range(3))
    timing = time_gpu(lambda: add_kernel[(triton.cdiv(n, 1024),)](x, y, out, n, BLOCK_SIZE=1024))
    assert_ordered(timing)
    assert timing["n"] >= 10
    achieved = bandwidth(3 * 4 * n, timing["median"])
    assert 100 < achieved <= peak_gbps() * 1.2


@gpu_test
def test_peak_bandwidth_is_measured_once():
    first = peak_gbps()
    assert first > 100
    start = time.perf_counter()
    assert peak_gbps() == first
    assert time.perf_counter() - start < 0.01


@gpu_test
def test_gpu_timing_takes_as_many_samples_as_do_bench_and_agrees_with_it():
    # 64 MB each way (~50 us): a few-microsecond kernel's median moves by 10% between two benches of it.
    x = torch.randn(1 << 24, device="cuda")
    timing = time_gpu(lambda: x.add_(1.0))
    assert_ordered(timing)
    standalone = triton.testing.do_bench(lambda: x.add_(1.0), return_mode="all")
    assert 0.5 < timing["n"] / len(standalone) < 2, (timing["n"], len(standalone))
    assert abs(timing["median"] / torch.tensor(standalone).median().item() - 1) < 0.1
