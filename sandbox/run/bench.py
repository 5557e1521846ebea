"""Timing: GPU kernels with CUDA events as triton.testing.do_bench does, interpreter runs and CPU
references by wall clock, the device's copy bandwidth to compare a kernel's GB/s against, and the
datasheet tensor-core peak to compare its TFLOP/s against."""
import contextlib
import ctypes
import functools
import os
import statistics
import sys
import time

import math

import torch
import triton.testing

from sandbox import result as results
from sandbox.launch.kernel import described
from sandbox.launch.launcher import TUNING_REP_MS
from sandbox.trace.record import unique_bytes

LAUNCH_BOUND_MS = 0.01  # below ~10 µs a kernel's time is mostly launch overhead
AUTOTUNE_LISTED = 64  # configs of an autotuner listed in a result: its size is bounded, whatever the program's
MAX_CPU_REPS = 100  # enough samples for stable quantiles of a fast CPU function
MIN_GPU_REPS = 10  # timed launches, however long a launch takes
PEAK_COPY_BYTES = 1 << 28  # 256 MiB each way: far past L2, so the copy runs from DRAM

# Dense tensor-core peaks in TFLOP/s by device name (torch.cuda.get_device_name()) and the kind of
# math that inputs of each size get from tl.dot. Source: NVIDIA's H100 and H200 Tensor Core GPU
# datasheets, which list peaks "with sparsity"; dense is half of those (H100 SXM and H200:
# TF32 989, FP16/BF16 1,979, FP8 3,958; H100 PCIe: 756, 1,513, 3,026). Peaks at boost clock,
# which real kernels do not reach.
PEAK_TFLOPS = {
    "NVIDIA H100 80GB HBM3": {"tf32": 494.5, "fp16/bf16": 989.5, "fp8": 1979.0},  # H100 SXM5
    "NVIDIA H100 PCIe": {"tf32": 378.0, "fp16/bf16": 756.5, "fp8": 1513.0},
    "NVIDIA H200": {"tf32": 494.5, "fp16/bf16": 989.5, "fp8": 1979.0},  # H200 SXM
}
# tl.dot on fp32 inputs uses tf32 by default; 2-byte floats are fp16 or bf16; 1-byte floats fp8.
DOT_KIND_BY_ELEMENT_SIZE = {4: "tf32", 2: "fp16/bf16", 1: "fp8"}


def time_gpu(fn, *, warmup_ms=25, rep_ms=100, refresh=None):
    """{"median", "p20", "p80", "n"} in ms of `fn` on the GPU, taken as triton.testing.do_bench takes
    them: warm-up outside the samples, a 256 MB buffer written before each timed call so that no call
    finds its data in L2, CUDA events around each call, as many calls as fit in `rep_ms`. (Stopping
    once the median looked settled was tried: a small kernel's time drifts over those 100 ms, and
    the early median was 14% off do_bench's on the H100.) `refresh()`, where given, runs before each
    call beside the flush, outside the events: the grader restores the inputs and outputs there, so
    that no call finds what an earlier one wrote."""
    driver = triton.runtime.driver.active
    device = driver.get_device_interface()
    with output_dropped():
        fn()
        device.synchronize()
        flush = driver.get_empty_cache_for_benchmark()
        estimate_ms = max(estimate_call_ms(fn, device, driver, flush, refresh), 1e-6)
        for _ in range(max(1, int(warmup_ms / estimate_ms))):
            fn()
        times = timed_calls(fn, device, driver, flush, max(MIN_GPU_REPS, int(rep_ms / estimate_ms)), refresh)
    return summarize(times)


def estimate_call_ms(fn, device, driver, flush, refresh=None, count=5):
    """A call's time with its L2 flush, as do_bench estimates it to count its repetitions."""
    start, end = device.Event(enable_timing=True), device.Event(enable_timing=True)
    start.record()
    for _ in range(count):
        driver.clear_cache(flush)
        if refresh is not None:
            refresh()
        fn()
    end.record()
    device.synchronize()
    return start.elapsed_time(end) / count


def timed_calls(fn, device, driver, flush, count, refresh=None):
    """Milliseconds of `count` calls of `fn`, each after L2 is flushed (and `refresh()`), by CUDA events
    (do_bench's way)."""
    starts = [device.Event(enable_timing=True) for _ in range(count)]
    ends = [device.Event(enable_timing=True) for _ in range(count)]
    for start, end in zip(starts, ends):
        driver.clear_cache(flush)
        if refresh is not None:
            refresh()
        start.record()
        fn()
        end.record()
    device.synchronize()
    return [start.elapsed_time(end) for start, end in zip(starts, ends)]


@contextlib.contextmanager
def output_dropped():
    """A kernel's print (device printf, written by the driver to fd 1) once per launch: the run shows
    its first launch's, not those of the hundreds of timing launches (which would fill the output limit)."""
    libc = ctypes.CDLL(None)
    sys.stdout.flush()
    saved, devnull = os.dup(1), os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, 1)
    try:
        yield
    finally:
        torch.cuda.synchronize()  # the device's printf buffer reaches fd 1 now, still dropped
        libc.fflush(None)
        os.dup2(saved, 1)
        os.close(saved)
        os.close(devnull)


def time_cpu(fn, *, reps=None, budget_s=1.0):
    """{"median", "p20", "p80", "n"} in ms of wall clock. After one warm-up call, `reps` timed calls,
    or as many as fit in `budget_s`; a call too slow to repeat within the budget is the only sample."""
    first_ms = wall_ms(fn)
    if reps is None:
        reps = min(MAX_CPU_REPS, int(budget_s * 1e3 / max(first_ms, 1e-3)) - 1)
        if reps < 1:
            return summarize([first_ms])
    return summarize([wall_ms(fn) for _ in range(reps)])


LENT_PEAK = {}  # {"gbps": the copy bandwidth its worker lent this process (lend_peak_gbps)}


def lend_peak_gbps(gbps):
    """The device's copy bandwidth as its worker's warm-up measured it (sandbox.worker.warming): this
    process's runs report it and measure none (~30 ms of copies each)."""
    LENT_PEAK["gbps"] = gbps


@functools.cache
def peak_gbps():
    """Device-to-device copy bandwidth in GB/s (bytes read plus written), measured once (or lent);
    None without CUDA."""
    if not torch.cuda.is_available():
        return None
    if LENT_PEAK.get("gbps"):
        return LENT_PEAK["gbps"]
    src = torch.empty(PEAK_COPY_BYTES, dtype=torch.uint8, device="cuda")
    dst = torch.empty_like(src)
    # Measured where none was lent (the warm-up's runs, a run before it), so short: ~200 copies of 0.13 ms.
    median_ms = time_gpu(lambda: dst.copy_(src), warmup_ms=5, rep_ms=25)["median"]
    return bandwidth(2 * PEAK_COPY_BYTES, median_ms)


def peak_tflops(device_name, tensors):
    """(dense tensor-core peak in TFLOP/s, its kind such as "fp16/bf16 tensor core, dense") for the
    narrowest floating-point dtype among `tensors`; (None, None) for a device not in PEAK_TFLOPS."""
    sizes = [t.element_size() for t in tensors if t.dtype.is_floating_point]
    peaks = PEAK_TFLOPS.get(device_name)
    kind = DOT_KIND_BY_ELEMENT_SIZE.get(min(sizes)) if sizes else None
    if peaks is None or kind is None:
        return None, None
    return peaks[kind], f"{kind} tensor core, dense (datasheet)"


def tflops(flops, median_ms):
    """TFLOP/s (1e12 per second); None when either number is missing or the time is not positive."""
    if flops is None or not median_ms or median_ms <= 0:
        return None
    return flops / (median_ms * 1e-3) / 1e12


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


# ---------------------------------------------------------------- a run's timings

def interpreter_timings(launch_ms, reference_ms, moved, flops, autotuner):
    """The interpreter's wall clock, labelled as such: no bandwidth or TFLOP/s claims, only counts."""
    notes, table = [], None
    if autotuner is not None:
        table = autotune_table(autotuner, {}, autotuner.best_config)
        notes.append("Triton's interpreter does not time autotune configs: this run used the first config "
                     "(the first left by prune_configs_by, where the autotuner has one).")
        notes += filter(None, [autotune_listed(autotuner)])
    return results.timings(kernel_ms=summarize([launch_ms]), interpreter=True, reference_ms=reference_ms,
                           bytes_moved=moved[0], bytes_source=moved[1], flops=flops, autotune=table, notes=notes)


def gpu_timings(kernel_ms, reference_ms, first_launch_ms, moved, flops, tensors, autotuner, tuned_note=None,
                left_out=()):
    """Kernel and reference side by side (CUDA events, warmed up, L2 flushed), the first launch
    (compile) apart, bandwidth against the measured copy peak, TFLOP/s when the FLOPs are known.
    `tuned_note`: what the autotuner did, where not as a form run's autotuner does it. `left_out`: the
    configs the run left out of the tuning (sandbox.launch.launcher), listed untimed."""
    peak, peak_kind = peak_tflops(torch.cuda.get_device_name(), tensors)
    notes, table = [], None
    if autotuner is not None:
        table = autotune_table(autotuner, getattr(autotuner, "configs_timings", {}) or {}, autotuner.best_config,
                               left_out)
        notes.append(tuned_note or autotune_note(autotuner))
        notes += filter(None, [autotune_listed(autotuner)])
    if kernel_ms["median"] < LAUNCH_BOUND_MS:
        notes.append(f"At {kernel_ms['median'] * 1e3:.1f} µs a launch is mostly fixed cost (a few µs on any GPU), "
                     f"not memory traffic: give it more work (bigger inputs) to measure its bandwidth.")
    return results.timings(kernel_ms=kernel_ms, interpreter=False, compile_ms=first_launch_ms,
                           reference_ms=reference_ms, bytes_moved=moved[0], bytes_source=moved[1],
                           gbps=bandwidth(moved[0], kernel_ms["median"]), peak_gbps=peak_gbps(),
                           flops=flops, tflops=tflops(flops, kernel_ms["median"]),
                           peak_tflops=peak if flops else None, peak_tflops_kind=peak_kind if flops else None,
                           autotune=table, notes=notes)


def bytes_moved(trace, tensors):
    """(bytes, how counted): unique elements loaded plus stored, times their size, from a complete
    trace (every program, every access); else the sizes of all the tensors."""
    if trace and trace.get("bytes_touched") is not None:  # counted per element over the whole launch
        return trace["bytes_touched"], "trace"
    if trace and not trace.get("sampled") and not any(p.get("truncated") for p in trace["programs"]):
        return unique_bytes(trace), "trace"
    return sum(t.numel() * t.element_size() for t in tensors.values()), "tensors"


def autotune_table(autotuner, timings, chosen, left_out=()):
    """[{"config": {meta-parameters, num_warps, num_stages}, "ms", "chosen"}] for the autotuner's
    first AUTOTUNE_LISTED configs, the chosen one always among them (see autotune_listed), then those
    `left_out` of its tuning. `timings` is the autotuner's configs_timings (do_bench's [median, p20,
    p80] per config); a config it did not time (one left out too), or one that failed to compile or
    run (inf), has ms None."""
    table = []
    for config in _listed(list(autotuner.configs) + list(left_out), chosen):
        ms = timings.get(config)
        ms = ms[0] if isinstance(ms, (list, tuple)) else ms
        table.append({"config": described(config),
                      "ms": ms if ms is not None and math.isfinite(ms) else None,
                      "chosen": config == chosen})
    return table


def _listed(configs, chosen):
    listed = list(configs[:AUTOTUNE_LISTED])
    if len(configs) > AUTOTUNE_LISTED and chosen is not None and chosen not in listed:
        listed[-1] = chosen
    return listed


def autotune_listed(autotuner):
    """The note of an autotuner of more configs than a result lists, else None."""
    count = len(autotuner.configs)
    if count <= AUTOTUNE_LISTED:
        return None
    return (f"The autotuner has {count:,} configs: the table lists {AUTOTUNE_LISTED}, the first ones and the one "
            f"chosen.")


def untimed_note(kernel):
    """What the autotuner did where a replayed launch kept to its program's choice (Kernel.keep_to), or None."""
    if not kernel.untimed:
        return None
    return ("This launch ran the config the program's autotuner chose for it (marked), as the program ran it: "
            "the program's run timed the configs, and they were not timed again.")


def autotune_note(autotuner):
    if len(autotuner.configs) == 1:
        return "One autotune config: the autotuner ran it without timing it."
    briefly = (f" (each over {TUNING_REP_MS} ms of calls, where Triton's default is 100 ms: the chosen config is "
               f"then timed in full below)" if getattr(autotuner, "timed_briefly", False) else "")
    return (f"The autotuner timed each config (median ms){briefly} and launched the fastest; the first launch's "
            f"time includes compiling and timing them all. The trace is of the first config's launch.")
