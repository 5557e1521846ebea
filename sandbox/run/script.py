"""Script mode: a whole program run as written, every kernel launch captured and bounds-checked.

The program (kernels, the Python that allocates tensors and launches them, its asserts and its
benchmarks) runs as its own `__main__` in Triton's interpreter, with Triton's launch path hooked:

    kernel[grid](...) ─▶ @triton.autotune / @triton.heuristics ─▶ InterpretedFunction.run ◀─ hooked here

so each launch, however it was made, is recorded (`result.launches`, docs/result.md) and runs under
the bounds sanitizer (sandbox.trace). One launch is seen whole: `options.launch`, or by default the
first launch of the kernel launched last; its trace, timings, timeline (on a GPU, options.timeline)
and IR are the result's, as for a form run. An out-of-bounds access stops its launch before it
happens and ends the run naming the launch, even where the program catches the exception. On a GPU
the same capture hooks the compiled launch path instead, each launch checked by the GPU tracer
first (sandbox.run.script_gpu).
"""
import time

from sandbox import result as results
from sandbox.launch.kernel import as_run_error, write_source
from sandbox.launch.warned import Warned
from sandbox.run.capture import Capture
from sandbox.run.script_gpu import GpuCapture
from sandbox.timeline.run import NO_GPU


def run_script(spec, emit, scratch, limits, device):
    """Run the program of a `"mode": "script"` spec where `device` (result.device) says: Triton's
    interpreter, or the GPU (sandbox.run.script_gpu); the result lists its launches. Once the program
    has ended, its result so far goes to the worker (`finished`) before the page's own steps (timing
    and compiling the shown launch), which its worker bounds apart from the program's time: a step
    that runs long never takes the program's result with it."""
    result = results.new(device)
    path = f"{scratch}/program.py"
    warned = Warned(path)
    with warned.catching():
        run_program(spec, emit, scratch, limits, path, result)
    return warned.into(result)


def run_program(spec, emit, scratch, limits, path, result):
    """The program run from its file `path`, its launches, chosen launch and error filled into `result`."""
    capture = None
    start = time.perf_counter()
    try:
        write_source(spec["source"], path)
        if result["device"]["kind"] == "gpu":
            capture = GpuCapture(spec["options"], path, limits, scratch, emit)
        else:
            capture = Capture(spec["options"], path, limits, emit)
        emit("status", {"phase": "running", "message": f"running the program {capture.where}"})
        failure = capture.run_program(spec["options"]["seed"])
        chosen = capture.chosen()
        result["launches"] = capture.listing(chosen, (time.perf_counter() - start) * 1e3)
        result["benchmarks"] = capture.benchmarks.charts or None
        result["notes"] += capture.notes
        kept = capture.kept.get(chosen)
        if kept is not None:
            show_trace(result, kept, emit)
        if spec["options"]["timeline"] and result["device"]["kind"] != "gpu":
            result["notes"].append(NO_GPU)
        error = capture.error or failure
        if error is not None:
            results.fail(result, error)
        elif capture.total == 0:
            result["notes"].append("The program launched no Triton kernel.")
        emit("finished", {"result": result})
        if kept is not None and kept.ms is not None:
            show_steps(result, kept, chosen, capture, emit)
    except Exception as e:
        results.fail(result, as_run_error(e, path, "program", "running the program"))
        if capture is not None and result["launches"] is None:
            result["launches"] = capture.listing(None)


def show_trace(result, kept, emit):
    """The chosen launch's trace (it may have been sent already, as its launch ran); a launch that
    failed has its trace up to the failure only."""
    result["trace"] = kept.trace
    if not kept.sent and kept.trace is not None:
        emit("partial", {"part": "trace", "content": kept.trace})


def show_steps(result, kept, index, capture, emit):
    """The page's own steps for the chosen launch: its timings, its timeline (on a GPU) and its IR,
    each sent as soon as it is ready."""
    def ready(part, content):
        result[part] = content
        if content is not None:
            emit("partial", {"part": part, "content": content})

    if capture.options["ir"]:
        capture.disassemble_shown(kept)
    if capture.options["bench"]:
        emit("status", {"phase": "bench", "message": f"timing launch {index}"})
        ready("timings", capture.timings(kept, index))
    if capture.options["timeline"] and result["device"]["kind"] == "gpu":
        emit("status", {"phase": "bench",
                        "message": f"recording a timeline of launch {index} with Proton's instrumentation"})
        kernel_ms = ((result["timings"] or {}).get("kernel_ms") or {}).get("median")
        ready("timeline", capture.record_timeline(kept, result["notes"], kernel_ms))
    if capture.options["ir"]:
        emit("status", {"phase": "ir", "message": "compiling to TTIR, TTGIR, LLIR, PTX and SASS"})
        ready("ir", capture.shown_ir(kept, result["notes"]))
