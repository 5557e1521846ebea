"""One launch, as every run makes it: bounds-checked and traced → launched → timed → compiled to its
IR, with one set of fallbacks. A form run (sandbox.run.pipeline.Run) makes its one launch so; script
mode (sandbox.run.capture.Capture, sandbox.run.script_gpu.GpuCapture) makes each launch its program
makes so, and times and compiles the one it shows. Each is a LaunchPass, and overrides only the
steps that differ for it:

    step                 the pass                                   overridden by
    check and trace      in the interpreter: its Tracer over the    -
                         launch's tensors (interpreter_tracer)
                         on a GPU: the GPU tracer's instrumented    -
                         launch over copies, the real launch's
                         compile beside it (sanitize_on_gpu)
      a launch it        why, in the same words for every run       unseen_on_gpu: a form run traces it in
      cannot check       (unseen_by_gpu, INSTRUMENTED_BUILD_FAILED) the interpreter on CPU copies; a script's
                                                                    launch runs unchecked, said in the notes
    launch               a failure is the launch's error, a         -
                         compile error the compile's (launch_failed)
    time                 sandbox.run.bench                          each: what it times and against what
    IR                   sandbox.launch.ir; a launch that ran but   -
                         does not compile for the target shows why
                         (ir_of)
"""
from dataclasses import dataclass

from sandbox.errors import RunError, compiler_failure
from sandbox.launch import build, launcher
from sandbox.launch.kernel import launch_error
from sandbox.trace import provenance
from sandbox.trace.interpreter import Tracer
from sandbox.trace.record import LIMITS as TRACE_LIMITS, index_of, owners_by_position

GPU_TRACER_OFF = "the GPU tracer is off on this server (GPU_TRACER=0)"
INSTRUMENTED_BUILD_FAILED = "the GPU tracer's instrumented build of this kernel did not compile"
NOT_COMPILED = ("Triton's compiler refuses this kernel (the IR tab says why, and where), though Triton's interpreter "
                "ran it: the interpreter runs Python the compiler does not accept, so compiled for a GPU it fails as "
                "written.")


@dataclass
class Launch:
    """One launch as the pass sees it: the kernel (sandbox.launch.kernel.Kernel), its arguments by
    parameter, its tensors by name and its grid (3 ints)."""
    kernel: object
    arguments: dict
    tensors: dict
    grid: tuple


def interpreter_tracer(path, analysis, arguments, tensors, grid, options, limits, record, **tracer_options):
    """The interpreter's bounds sanitizer of one launch (its tracer too, where `record`): each
    access owned by the tensor its pointer derives from (`analysis`, sandbox.trace.provenance); only
    `options.trace_pid`'s program recorded where one is asked for."""
    only = options.get("trace_pid")
    return Tracer(tensors, path, owners=owners_by_position(analysis, arguments, tensors), record=record,
                  only=None if only is None else index_of(only, grid), **limits, **tracer_options)


def traced_launch(kernel, grid, args, tensors, path, options, limits, budget_s=None):
    """Launch in the interpreter with the bounds sanitizer on; returns the trace (or None).
    With `budget_s` the launch stops with TraceBudgetExceeded once that time is spent."""
    return tracing_launch(kernel, grid, args, tensors, path, options, limits, budget_s=budget_s)[0]


def tracing_launch(kernel, grid, args, tensors, path, options, limits, **tracer_options):
    """traced_launch's launch: (the trace or None, the Tracer that ran it)."""
    launch_tensors = build.launch_tensors(tensors, args)
    with interpreter_tracer(path, provenance.analyze_kernel(path, kernel), args, launch_tensors, grid, options,
                            limits, options["trace"], **tracer_options) as tracer:
        launcher.launch(kernel, grid, args, options)
    return (tracer.result(grid) if options["trace"] else None), tracer


class LaunchPass:
    """The steps of a launch every run shares; see the module's docstring."""

    def __init__(self, path, options, limits):
        self.path, self.options = path, options
        self.limits = {k: limits.get(k, default) for k, default in TRACE_LIMITS.items()}
        self.gpu_tracer_on = limits.get("gpu_tracer", True)
        self.compiled_beside_ms = 0.0  # the real launch's compile, done on a thread beside the GPU check

    def unseen_by_gpu(self, tracer):
        """Why the GPU tracer cannot check the launch of `tracer` (sandbox.trace.gpu.InstrumentedTracer), or None."""
        if not self.gpu_tracer_on:
            return GPU_TRACER_OFF
        return f"the GPU tracer cannot see {tracer.unsupported}" if tracer.unsupported else None

    def sanitize_on_gpu(self, tracer, check, launch, compile_real=None):
        """The bounds check (and trace) of a launch on the GPU, before the real launch: `check()`, the
        GPU tracer's instrumented launch over copies of its tensors, with `compile_real()` (the real
        launch's compile) on a thread beside the check's own compile. Returns (what `check()` returned,
        True); where the GPU tracer cannot check the launch, (what unseen_on_gpu makes of it, False).
        Raises the out-of-bounds RunError, the real launch never happening; any other failure of the
        instrumented launch but its build is the launch's error."""
        why = self.unseen_by_gpu(tracer)
        if why is None:
            compiling = launcher.Background(compile_real) if compile_real else None
            try:
                checked = check()
            except Exception as e:
                real = self.real_compile_failure(compiling)
                if real is not None:  # the kernel itself does not compile: that, not the check's echo of it
                    raise real from None
                if isinstance(e, RunError):
                    raise
                if "CompilationError" not in type(e).__name__:
                    raise launch_error(e, self.path) from None
                why = INSTRUMENTED_BUILD_FAILED
            finally:
                if compiling is not None:  # a later interpreter pass loads the module anew: no compile under way
                    compiling.wait()
            if why is None:
                self.compiled_beside_ms = compiling.ms if compiling is not None else 0.0
                return checked, True
        return self.unseen_on_gpu(why, launch), False

    def real_compile_failure(self, compiling):
        """The real launch's compile (a Background, or None), if it failed inside Triton's compiler,
        as the run's error; else None."""
        error = compiling.wait() if compiling is not None else None
        return launch_error(error, self.path, "compile") if compiler_failure(error, self.path) else None

    def unseen_on_gpu(self, why, launch):
        """What becomes of a launch (a Launch) the GPU tracer cannot check, `why`: each run says."""
        raise NotImplementedError

    def launch_failed(self, exc):
        """The real launch's failure as its error: a compile error the compile's, at its line."""
        return launch_error(exc, self.path, "compile" if "CompilationError" in type(exc).__name__ else "launch")

    @property
    def ir_of_launch(self):
        """The IR asked for is of the local GPU: the kernel the launch compiled (sandbox.launch.ir.ir_of_compiled),
        its disassembly started as soon as that kernel is known."""
        return self.options["ir"] and self.options["arch"] is None

    @staticmethod
    def ir_of(compile, notes=None):
        """The IR `compile()` makes of the configuration that ran; a launch that ran but does not
        compile for the target is worth seeing, not a failed run: its error, as the IR. `notes`: the
        result's, where the launch ran in Triton's interpreter, which runs what the compiler refuses."""
        try:
            return compile()
        except RunError as e:
            if notes is not None and e.phase == "compile":
                notes.append(NOT_COMPILED)
            return {"error": e.to_dict()}
