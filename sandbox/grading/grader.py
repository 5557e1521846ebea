"""The grader: a run process that grades a kernel and runs nothing else of its student's.

    worker ── student's spec ──▶ run process: the module runs, the page's launch (trace, timings, IR)
                                 ──▶ worker (which reads nothing else of it)
    worker ── the kept source + the puzzle's tests ──▶ grader (another run process, forked from the
                                              same zygote, jailed alike): reads the kernel from the
                                              source, checks it, builds every test's inputs from a
                                              seed only it knows, launches, checks, times ──▶ worker: the verdict

The grader never imports the student's module. It reads the kernel's functions, constexprs and
autotune configs from the source the server kept, without running it (sandbox.grading.kept), so what
is graded is what that text says, whatever the student's process did; sandbox.grading.submission
checks that they are a kernel's and nothing else, then Triton's front end must accept them. It
takes the puzzle's own tests from the server: their inputs, arguments, grid, hidden reference and
tolerance (never the submission's `options.atol`). Each test runs in the interpreter with the
bounds check (the first one traced, for the page's comparison with the solution), the masked-off lanes of a load without `other` poisoned (NaN; 23130 for
integers), not the interpreter's 0: on a GPU they are undefined (a test that fails with such lanes
runs again with the 0s, to say whether they are why). On a GPU the compiled kernel is then
launched on copies of the same inputs and that is what is checked and timed (the last test, a
puzzle's largest, each timed launch starting from the inputs and outputs as they were built: no
launch finds what an earlier one wrote). The
reference is evaluated after the launch, from copies of the inputs the kernel never saw. Its output is nobody's: the worker drops what the grader prints.
"""
import math
import os
import secrets
import time
from dataclasses import dataclass

import torch
import triton
import triton.language as tl

from sandbox.errors import RunError
from sandbox.grading import kept, submission, verdict
from sandbox.launch import build
from sandbox.run import bench
from sandbox.run import check as checking
from sandbox.launch.ir import compile_error, parse_arch, specialize
from sandbox.launch.kernel import as_run_error, launch_error, silenced, write_source
from sandbox.launch.launcher import launch
from sandbox.run.launch_pass import tracing_launch
from sandbox.trace.record import LIMITS as TRACE_LIMITS

NAMESPACE = {"torch": torch, "triton": triton, "tl": tl, "math": math}  # what a puzzle's expressions see


@dataclass
class Graded:
    interpreted: object  # sandbox.launch.kernel.Kernel
    compiled: object
    path: str
    launch: dict  # num_warps, num_stages: the student's choice


def grade(job, emit, scratch, limits, kind):
    """The grading of one submission: {"puzzle": {name, ok, tests, diff, timing}, "check"} (the
    first test's check, as the page shows a run's)."""
    tests = job["tests"]
    seed = secrets.randbelow(2 ** 31)  # known to this process only
    trace_limits = {name: limits.get(name, default) for name, default in TRACE_LIMITS.items()}
    emit("status", {"phase": "checking", "message": "grading: checking that the kernel is a Triton kernel"})
    try:
        graded = load(kept.package(job["source"], job["kernel"]), os.path.join(scratch, "graded_kernel.py"), tests[0],
                      seed, job["launch"])
    except RunError as e:
        results = [failed(e)] * len(tests)
    except Exception as e:  # noqa: BLE001  (whatever the kernel does to the front end, it is its failure)
        results = [failed(as_run_error(e, "", "compile", "grading the kernel"))] * len(tests)
    else:
        results = []
        for index, test in enumerate(tests):
            emit("status", {"phase": "checking", "message": f"grading: test {index + 1} of {len(tests)}"})
            results.append(run_test(graded, test, seed + index, kind, trace_limits, record=index == 0,
                                    timed=index == len(tests) - 1))
    return graded_verdict(job, tests, results, kind)


def load(package, path, first, seed, options):
    """The kernel, checked and loaded twice (for the interpreter and for the compiler), after Triton's
    front end has compiled it to TTIR with the first test's arguments."""
    checked = submission.check(package)
    name = package["kernel"]
    write_source(submission.bare_source(checked[0]), path)
    compiled, module = submission.load(checked, name, path, interpret=False)
    with silenced():
        inputs, _ = build.build_inputs(test_spec(first, seed), NAMESPACE, "cpu")
        args, _ = build.build_args(test_spec(first, seed), compiled, {**NAMESPACE, **inputs})
    front_end(compiled, module, args, options)
    interpreted, _ = submission.load(checked, name, path, interpret=True)
    return Graded(interpreted, compiled, path, options)


def front_end(kernel, module, args, options):
    """Triton's code generator over the kernel (to TTIR only): it refuses what is not Triton."""
    from triton._C.libtriton import ir
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource
    from triton.compiler.compiler import make_backend
    config = kernel.config(None, options["num_warps"], options["num_stages"])
    target = GPUTarget("cuda", parse_arch(None), 32)
    backend = make_backend(target)
    try:
        signature, constexprs, attrs = specialize(kernel.jit, {**args, **config.kwargs})
        compile_options = backend.parse_options({"num_warps": config.num_warps, "num_stages": config.num_stages})
        context = ir.context()
        ir.load_dialects(context)
        backend.load_dialects(context)
        with silenced():
            ASTSource(kernel.jit, signature, constexprs=constexprs, attrs=attrs).make_ir(
                target, compile_options, backend.get_codegen_implementation(compile_options), backend.get_module_map(),
                context)
    except RunError:
        raise
    except Exception as e:
        raise compile_error(e, module) from None


def test_spec(test, seed):
    return {"kernel": test["kernel"], "inputs": test["inputs"], "args": test["args"], "grid": test["grid"],
            "options": {"seed": seed}}


def failed(error):
    """A test that stopped with `error`; an out-of-bounds stop keeps its trace up to the stopped access
    (the comparison with the solution shows what the kernel wrote before it)."""
    return {"status": "error", "error": error.to_dict(), "check": None, "trace": error.trace, "kernel_ms": None}


def run_test(graded, test, seed, kind, limits, record, timed):
    """One test: {"status", "error", "check", "trace" (recorded or None), "kernel_ms", "undefined_loads"
    (it failed with the masked-off lanes of its loads without `other` poisoned, and passes where they
    read the interpreter's 0: it depends on values a GPU leaves undefined)}."""
    spec = test_spec(test, seed)
    options = {"trace": record, "trace_pid": None, **graded.launch}
    undefined = False
    try:
        with silenced():
            before, outputs, poisoned, grid, trace, tracer, kernel_ms = interpreted(graded, spec, options, limits,
                                                                                     poison=True)
            device = "cpu"
            if kind == "gpu":
                (outputs, kernel_ms), device = gpu_launch(graded, spec, before, grid, options, timed), "cuda"
            expected = references(test["reference"], before, device)
            check = compared(test, outputs, expected, poisoned)
            if not check["ok"] and tracer.undefined_lanes and kind != "gpu":
                # Again with the interpreter's 0s: its check is the one to show, NaNs from poisoned
                # lanes (which look like never-written elements) aside.
                _, zeroed, *_ = interpreted(graded, spec, {**options, "trace": False}, limits, poison=False)
                clean = compared(test, zeroed, expected, poisoned)
                undefined = clean["ok"]
                if undefined:
                    for output in check["outputs"].values():
                        output["unwritten"] = 0
                else:
                    check = clean
    except RunError as e:
        return failed(e)
    return {"status": "ok" if check["ok"] else "mismatch", "error": None, "check": check, "trace": trace,
            "kernel_ms": kernel_ms if timed else None, "undefined_loads": undefined}


def interpreted(graded, spec, options, limits, poison):
    """The kernel in the interpreter on the test's inputs: (the inputs before, after, the poisoned
    outputs' names, the grid, the trace or None, the Tracer, the launch's time)."""
    inputs, poisoned = build.build_inputs(spec, NAMESPACE, "cpu")
    before = {name: t.clone() for name, t in inputs.items()}
    args, scope = build.build_args(spec, graded.interpreted, {**NAMESPACE, **inputs})
    grid = build.build_grid(spec, args, scope)
    start = time.perf_counter()
    try:
        trace, tracer = tracing_launch(graded.interpreted, grid, args, inputs, graded.path, options, limits,
                                       poison=poison)
    except Exception as e:
        raise launch_error(e, graded.path) from None
    kernel_ms = {"median": (time.perf_counter() - start) * 1e3, "n": 1}  # the interpreter's one launch
    return before, inputs, poisoned, grid, trace, tracer, kernel_ms


def compared(test, outputs, expected, poisoned):
    return checking.compare({name: outputs[name] for name in expected}, expected, poisoned,
                            atol=test["options"].get("atol"), rtol=test["options"].get("rtol"))


def gpu_launch(graded, spec, before, grid, options, timed):
    """The compiled kernel on GPU copies of the inputs: (the tensors after it, its time or None)."""
    tensors = {name: t.to("cuda") for name, t in before.items()}
    with torch.device("cuda"):
        args, scope = build.build_args(spec, graded.compiled, {**NAMESPACE, **tensors})
    grids = build.GridPerConfig(spec, scope) if graded.compiled.autotuner else grid
    try:
        launch(graded.compiled, grids, args, options)
        torch.cuda.synchronize()
    except Exception as e:
        raise launch_error(e, graded.path, "compile" if "CompilationError" in type(e).__name__ else "launch") from None
    kernel_ms = None
    if timed:  # the first launch's outputs are kept for the check; each timed launch starts afresh
        outputs = {name: t.clone() for name, t in tensors.items()}
        pristine = {name: t.to("cuda") for name, t in before.items()}
        timed_grid = grids.last if graded.compiled.autotuner else grid

        def refresh():
            for name, tensor in tensors.items():
                tensor.copy_(pristine[name])
        kernel_ms = bench.time_gpu(lambda: launch(graded.compiled, timed_grid, args, options), refresh=refresh)
        tensors = outputs
    return tensors, kernel_ms


def references(reference, before, device):
    """The hidden reference, evaluated after the launch from fresh copies of the inputs."""
    namespace = {**NAMESPACE, **{name: t.clone().to(device) for name, t in before.items()}}
    return build.references(reference, namespace, device)


def graded_verdict(job, tests, results, kind):
    summaries = [verdict.summary(test["label"], result, hidden=test.get("hidden", False))
                 for test, result in zip(tests, results)]
    first, last = results[0], results[-1]
    expected = job.get("expected")
    summaries[0] = verdict.with_races(summaries[0], first["trace"], expected, list(tests[0]["reference"]))
    summaries = [verdict.with_failures(s) for s in summaries]
    timing = None
    if last["kernel_ms"] is not None and all(s["ok"] for s in summaries):
        timing = {"device": kind, "kernel_ms": last["kernel_ms"], "ranked": kind == "gpu"}
    return {"puzzle": {"name": job["puzzle"], "ok": all(s["ok"] for s in summaries), "tests": summaries,
                       "diff": verdict.diff(expected, first["trace"], list(tests[0]["reference"]))
                       if expected and first["trace"] else None,
                       "timing": timing},
            "check": first["check"]}
