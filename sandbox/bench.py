"""Timing: GPU kernels with CUDA events as triton.testing.do_bench does, interpreter runs and CPU
references by wall clock, and the device's copy bandwidth to compare a kernel's GB/s against."""
import functools
import statistics
import time

import torch
import triton.testing

MAX_CPU_REPS = 100  # enough samples for stable quantiles of a fast CPU function
PEAK_COPY_BYTES = 1 << 28  # 256 MiB each way: far past L2, so the copy runs from DRAM


def time_gpu(fn, *, warmup_ms=25, rep_ms=100):
    """{"median", "p20", "p80", "n"} in ms of `fn` on the GPU. do_bench warms up outside the samples
    and writes a 256 MB buffer before each timed call so that no call finds its data in L2."""
    times = triton.testing.do_bench(fn, warmup=warmup_ms, rep=rep_ms, return_mode="all")
    return summarize(times)


def time_cpu(fn, *, reps=None, budget_s=1.0):
    """{"median", "p20", "p80", "n"} in ms of wall clock. After one warm-up call, `reps` timed calls,
    or as many as fit in `budget_s`; a call too slow to repeat within the budget is the only sample."""
    first_ms = wall_ms(fn)
    if reps is None:
        reps = min(MAX_CPU_REPS, int(budget_s * 1e3 / max(first_ms, 1e-3)) - 1)
        if reps < 1:
            return summarize([first_ms])
    return summarize([wall_ms(fn) for _ in range(reps)])


@functools.cache
def peak_gbps():
    """Device-to-device copy bandwidth in GB/s (bytes read plus written), measured once; None without CUDA."""
    if not torch.cuda.is_available():
        return None
    src = torch.empty(PEAK_COPY_BYTES, dtype=torch.uint8, device="cuda")
    dst = torch.empty_like(src)
    median_ms = time_gpu(lambda: dst.copy_(src))["median"]
    return bandwidth(2 * PEAK_COPY_BYTES, median_ms)


def bandwidth(bytes_moved, median_ms):
    """GB/s (1e9 bytes per second); None when either number is missing or the time is not positive."""
    if bytes_moved is None or not median_ms or median_ms <= 0:
        return None
    return bytes_moved / (median_ms * 1e-3) / 1e9


def wall_ms(fn):
    start = time.perf_counter()
    fn()
    return (time.perf_counter() - start) * 1e3


def summarize(times):
    ordered = sorted(times)
    return {"median": statistics.median(ordered), "p20": quantile(ordered, 0.2),
            "p80": quantile(ordered, 0.8), "n": len(ordered)}


def quantile(ordered, q):
    """Linear interpolation between the closest ranks, as torch.quantile and triton's do_bench do."""
    position = q * (len(ordered) - 1)
    low = int(position)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (position - low)
