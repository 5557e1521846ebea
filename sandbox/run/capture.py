"""Script mode's capture: the program run as its own `__main__` in Triton's interpreter, with
Triton's launch path hooked (sandbox.run.script says how), each launch numbered, recorded
(sandbox.run.launch_record) and made by the launch pass (sandbox.run.launch_pass: bounds-checked
and traced); the launches that may be shown kept."""
import contextlib
import os
import sys
import time
import traceback
import types

import torch
import triton
from triton.runtime import interpreter
from triton.runtime.autotuner import Autotuner

from sandbox import protocol
from sandbox.errors import RunError
from sandbox.launch import compiler_output, host_driver
from sandbox.launch.ir import compile_kernel
from sandbox.launch.kernel import (LAUNCH_OPTIONS, GridError, Kernel, as_run_error, interpreter_mode, launch_error,
                                   user_line)
from sandbox.launch.twin import compiled_twin
from sandbox.run import bench
from sandbox.run.benchmarks import Benchmarks, interpreter_do_bench
from sandbox.run.launch_pass import LaunchPass, interpreter_tracer
from sandbox.run.launch_record import (DEFAULT_NUM_STAGES, DEFAULT_NUM_WARPS, bind, describe_launch, grid_text,
                                       resolve_grid)
from sandbox.run.origins import Origins
from sandbox.run.replay import InputKeeper
from sandbox.trace import provenance

MAX_LAUNCHES = 1000  # launches listed; past them a program's launches are counted, still checked


class LaunchFailed(BaseException):
    """A launch failed (out of bounds, or raised): the program stops there. A BaseException, so that
    the program's own `except Exception` does not take it for one of its errors and go on."""


class Kept:
    """What a launch that may be shown leaves: its trace, its arguments and how it ran."""

    def __init__(self, function, arguments, tensors, trace, ms, num_warps, num_stages, autotuner, grid):
        self.function, self.arguments, self.tensors, self.trace = function, arguments, tensors, trace
        self.ms, self.num_warps, self.num_stages, self.autotuner = ms, num_warps, num_stages, autotuner
        self.grid = grid  # as launched: 3 ints
        self.sent = False  # its trace was sent as the launch ran
        self.replay = None  # on a GPU: the launch again, from its inputs as they were (script_gpu)
        self.compiled = None  # and the CompiledKernel it launched, for its IR


class Tuned:
    """An autotuner's decision as one launch met it: the config it chose and the timings it chose by
    (a later key's tuning, such as a benchmark's next size, changes the autotuner itself);
    `timed_earlier`: read from Triton's autotuning cache, timed by an earlier run of the program."""

    def __init__(self, autotuner, timed_earlier=False):
        self.autotuner, self.timed_earlier = autotuner, timed_earlier
        self.best_config = autotuner.best_config
        self.configs_timings = dict(getattr(autotuner, "configs_timings", None) or {})

    @property
    def configs(self):
        return self.autotuner.configs


class Capture(LaunchPass):
    """The program's launches, as Triton makes them, each made by the launch pass
    (sandbox.run.launch_pass); see the module's docstring."""
    where = "in Triton's interpreter"
    clock = "the interpreter's wall clock"

    def __init__(self, options, path, limits, emit):
        super().__init__(path, options, limits)
        self.emit = emit
        self.launches = []      # the records listed in the result, up to MAX_LAUNCHES
        self.total = 0          # every launch, listed or not
        self.first_of = {}      # kernel name -> index of its first launch
        self.last_kernel = None
        self.kept = {}          # index -> Kept, for launches that may be shown
        self.error = None       # the first launch that failed, even if the program caught it
        self.tuning = []        # the autotuners whose run is under way (innermost last)
        self.analyses = {}      # kernel name -> its provenance analysis
        self.notes = []
        self.benchmarks = Benchmarks(options["benchmarks"] == "all", self.notes, self.clock)
        # Each listed launch's inputs, kept for a replay of it alone (sandbox.run.replay), where the run may keep them.
        kept_bytes = limits.get("kept_inputs_bytes", 0)
        self.inputs = InputKeeper(os.path.dirname(path), kept_bytes) if kept_bytes > 0 else None
        with open(path) as f:
            self.source = f.read()

    # -- the program

    def run_program(self, seed):
        """Run the program to its end; returns its own failure as a RunError, or None."""
        module = types.ModuleType("__main__")
        module.__file__ = self.path
        code = compile(self.source, self.path, "exec")
        torch.manual_seed(seed)
        self.origins = Origins(seed)
        compiler_output.install()  # a failed pass's diagnostic reaches the launch's error
        with self.origins.watching(), self.environment():
            try:
                exec(code, module.__dict__)
            except LaunchFailed:
                pass  # the launch's error, kept, is the run's
            except SystemExit as e:
                if e.code not in (None, 0):
                    return RunError("program", f"the program exited with status {e.code}", type="SystemExit",
                                    line=user_line(e, self.path))
            except BaseException as e:  # an Exception, or a BaseException of a library's (pytest.skip's)
                if self.error is None:  # else the launch's error, already kept, is the run's
                    return program_error(e, self.path)
        return None

    @contextlib.contextmanager
    def environment(self):
        """What the program runs in: the interpreter standing in for the driver, the launch path hooked."""
        with host_driver.standing_in() as driver, interpreter_mode(True), self.hooked():
            try:
                yield
            finally:
                stood_in = host_driver.note_of(driver, "Triton's interpreter ran this program")
                if stood_in:
                    self.notes.append(stood_in)

    @contextlib.contextmanager
    def hooked(self):
        """Triton's launch path, autotuner, do_bench and perf_report, as script mode runs them."""
        capture = self
        run, tune, do_bench, mark_run = (interpreter.InterpretedFunction.run, Autotuner.run,
                                         triton.testing.do_bench, triton.testing.Mark.run)

        def launched(fn, *args, grid, warmup, **kwargs):
            if warmup:
                return Warmed(fn, args, kwargs, capture.path, lambda grid, *args, **options: launched(
                    fn, *args, grid=grid, warmup=False, **options))
            as_launched = lambda meta: resolve_grid(grid, meta)  # noqa: E731 (the interpreter refuses a 4th entry of 1)
            return capture.launch(lambda: run(fn, *args, grid=as_launched, warmup=False, **kwargs), fn, args, kwargs, grid)

        def tuned(autotuner, *args, **kwargs):
            return capture.tune(tune, autotuner, args, kwargs)

        interpreter.InterpretedFunction.run = launched
        Autotuner.run = tuned
        triton.testing.do_bench = interpreter_do_bench
        triton.testing.Mark.run = self.benchmarks.run
        try:
            yield
        finally:
            interpreter.InterpretedFunction.run = run
            Autotuner.run = tune
            triton.testing.do_bench = do_bench
            triton.testing.Mark.run = mark_run

    def tune(self, tune, autotuner, args, kwargs):
        """An autotuner's run: the interpreter cannot time configs, so it runs the first one left by
        prune_configs_by, as a form run does (sandbox.launch.launcher.launch)."""
        configs = autotuner.configs
        if len(configs) > 1:
            autotuner.nargs = dict(zip(autotuner.arg_names, args))
            autotuner.configs = [autotuner.prune_configs(kwargs)[0]]
        self.tuning.append(autotuner)
        try:
            return tune(autotuner, *args, **kwargs)
        finally:
            self.tuning.pop()
            autotuner.configs = configs

    # -- one launch

    def begin(self, fn, args, kwargs, grid):
        """Number and record a launch: (index, Kernel, bound arguments, grid as 3 ints, its record,
        whether it may be shown, the autotuner that made it)."""
        index = self.total
        self.total += 1
        kernel = Kernel(fn.__name__, fn, fn)
        arguments = bind(kernel, args, kwargs)
        try:
            grid = resolve_grid(grid, {**kwargs, **arguments})
        except GridError as e:
            line = self.call_line()
            self.error = self.error or RunError("launch", f"launch {index} ({kernel.name}, called at line {line}): "
                                                          f"the grid {e}", type="GridError", line=line, launch=index)
            raise LaunchFailed() from None
        autotuner = Tuned(self.tuning[-1], self.timed_earlier()) if self.tuning else None
        record = describe_launch(index, kernel, arguments, grid, self.call_line(), kwargs.get("num_warps", DEFAULT_NUM_WARPS),
                                 kwargs.get("num_stages", DEFAULT_NUM_STAGES),
                                 autotuner.best_config if autotuner else None)
        for arg in record["args"]:
            if arg["kind"] == "tensor":
                arg["values"] = self.origins.of(arguments[arg["name"]])
        if index < protocol.SAID_AS_LAUNCHED:  # its worker checks it as the program goes on
            self.emit("launched", {"launch": record})
        if index < MAX_LAUNCHES:
            self.launches.append(record)
        elif index == MAX_LAUNCHES:
            self.notes.append(f"The program launched more than {MAX_LAUNCHES} kernels: the ones past launch "
                              f"{MAX_LAUNCHES - 1} are counted and bounds-checked, not listed.")
        wanted = self.options["launch"]
        keep = index == wanted if wanted is not None else kernel.name not in self.first_of
        self.first_of.setdefault(kernel.name, index)
        self.last_kernel = kernel.name
        return index, kernel, arguments, grid, record, keep, autotuner

    def timed_earlier(self):
        """Whether the autotuner under way took its choice from an earlier run's timings."""
        return False

    def keep_inputs(self, index, tensors):
        """A listed launch's tensors as it receives them, for a replay of it alone."""
        if self.inputs is not None and index < MAX_LAUNCHES:
            self.inputs.keep(index, tensors)

    def refuse_device(self, index, kernel, record, tensors, device, why):
        """Stop at launch `index` if a tensor argument is not on `device` (torch's device type)."""
        elsewhere = next((name for name, t in tensors.items() if t.device.type != device), None)
        if elsewhere is None:
            return
        record["bounds"] = "failed"
        self.error = self.error or RunError(
            "launch", f"launch {index} ({kernel.name}, called at line {record['line']}): argument '{elsewhere}' is "
                      f"a tensor on {tensors[elsewhere].device}, but {why}",
            type="DeviceMismatch", line=record["line"], launch=index)
        raise LaunchFailed()

    def launch(self, run, fn, args, kwargs, grid):
        index, kernel, arguments, grid, record, keep, autotuner = self.begin(fn, args, kwargs, grid)
        tensors = {name: value for name, value in arguments.items() if isinstance(value, torch.Tensor)}
        self.refuse_device(index, kernel, record, tensors, "cpu",
                           "a script runs in Triton's interpreter on the CPU: make tensors on "
                           "triton.runtime.driver.active.get_active_torch_device() (here 'cpu')")
        self.keep_inputs(index, tensors)
        trace, start = None, time.perf_counter()
        # Traced where it may be shown, and where its run is kept for a replay of it (sandbox.run.replay: in the
        # interpreter the launch is the cost, not its trace).
        kept_ran = self.inputs is not None and self.inputs.keeps_ran(index)
        try:
            with self.tracer(kernel, arguments, tensors, grid, (keep or kept_ran) and self.options["trace"]) as tracer:
                value = run()
            trace = tracer.result(grid) if tracer.record else None
        except Exception as e:
            record["bounds"] = "out_of_bounds" if isinstance(e, RunError) and e.type == "OutOfBounds" else "failed"
            self.failed(e, index, record, kernel, arguments, tensors, grid, run)
            raise LaunchFailed() from None
        ms = (time.perf_counter() - start) * 1e3
        record["ms"], record["bounds"] = ms, "ok"
        if keep:
            self.kept[index] = Kept(fn, arguments, tensors, trace, ms, record["num_warps"], record["num_stages"],
                                    autotuner, grid)
        if kept_ran and trace is not None:
            self.inputs.keep_ran(index, trace, ms, self.options["trace_pid"])
        return value

    def timings(self, kept, index):
        """The shown launch's timings: in the interpreter, its one run by the wall clock."""
        timings = bench.interpreter_timings(kept.ms, None, bench.bytes_moved(kept.trace, kept.tensors), None,
                                            kept.autotuner)
        timings["notes"].append(f"Launch {index} as the program ran it, once, in Triton's interpreter.")
        return timings

    def tracer(self, kernel, arguments, tensors, grid, record):
        if kernel.name not in self.analyses:
            self.analyses[kernel.name] = provenance.analyze(self.source, kernel.name)
        return interpreter_tracer(self.path, self.analyses[kernel.name], arguments, tensors, grid, self.options,
                                  self.limits, record)

    def failed(self, exc, index, record, kernel, arguments, tensors, grid, run):
        """Keep the run's error for launch `index`, which failed: named by its launch, with the trace up
        to the offending access (the launch is traced again for it where it was not recorded)."""
        error = launch_error(exc, self.path)
        if error.type == "OutOfBounds" and error.trace is None and self.options["trace"]:
            error.trace = self.retrace(kernel, arguments, tensors, grid, run)
        error.launch = index
        error.message = (f"launch {index} ({kernel.name}[{grid_text(grid)}], called at line {record['line']}): "
                         f"{error.message}")
        if error.trace is not None:
            self.kept[index] = Kept(kernel.jit, arguments, tensors, error.trace, None, record["num_warps"],
                                    record["num_stages"], None, grid)
        if self.error is None:
            self.error = error

    def retrace(self, kernel, arguments, tensors, grid, run):
        """The trace of a launch that stopped out of bounds, up to the offending access."""
        try:
            with self.tracer(kernel, arguments, tensors, grid, True):
                run()
        except RunError as e:
            return e.trace
        return None

    def call_line(self):
        """The line of the program that launched the kernel: the innermost frame in its file
        outside the kernels themselves (the interpreter runs them as Python)."""
        frame = sys._getframe(2)
        while frame is not None:
            if frame.f_code.co_filename == self.path:
                return frame.f_lineno
            frame = frame.f_back
        return None

    # -- the result

    def chosen(self):
        """The launch to show: the one that failed, else options.launch, else the first launch of the
        kernel launched last (None where it left nothing to show)."""
        if self.error is not None:
            return self.error.launch if self.error.launch in self.kept else None
        wanted = self.options["launch"]
        if wanted is None:
            return self.first_of.get(self.last_kernel)
        if wanted >= self.total:
            self.notes.append(f"options.launch is {wanted}, but the program made {self.total} launch(es): "
                              f"none is shown.")
            return None
        return wanted if wanted in self.kept else None

    def shown_ir(self, kept, notes):
        """The IR of the shown launch `kept`: its kernel compiled for options.arch (sm90 where no GPU is);
        `notes` (the result's) say why where it ran in the interpreter but does not compile."""
        return self.ir_of(lambda: compile_kernel(
            *compiled_twin(kept.function, self.path), self.path, kept.arguments, num_warps=kept.num_warps,
            num_stages=kept.num_stages, arch=self.options["arch"]), notes)

    def disassemble_shown(self, kept):
        """Start what the shown launch's IR step will wait for, beside the steps before it (on a GPU)."""

    def listing(self, chosen, program_ms=None):
        """result.launches: `replay` is the server's to say (the worker's, once the run has ended)."""
        return {"total": self.total, "selected": chosen, "list": self.launches, "program_ms": program_ms,
                "replay": None}


class Warmed:
    """What `kernel.warmup(...)` gives a program in the interpreter, which compiles nothing: the
    compiled kernel's facts (`n_regs`, `n_spills`, `metadata.shared`, as the fused-softmax tutorial
    reads them for its occupancy), from the kernel compiled for the IR's target; and its launch,
    `warmed[grid](*args)`, a launch of the kernel like any other (captured and bounds-checked)."""

    def __init__(self, function, args, kwargs, path, launch):
        self.function, self.path, self.launch = function, path, launch
        kernel = Kernel(function.fn.__name__, function, function)
        self.arguments = bind(kernel, args, kwargs)
        # The launch options it was warmed up with (a parameter named like one is an argument).
        self.options = {k: v for k, v in kwargs.items() if k in LAUNCH_OPTIONS and k not in self.arguments}
        self.compiled = None

    def _init_handles(self):
        if self.compiled is None:
            self.compiled = compile_kernel(*compiled_twin(self.function, self.path), self.path, self.arguments,
                                           num_warps=kwarg_or(self.options, self.arguments, "num_warps", DEFAULT_NUM_WARPS),
                                           num_stages=kwarg_or(self.options, self.arguments, "num_stages",
                                                               DEFAULT_NUM_STAGES))
        return self.compiled

    @property
    def n_regs(self):
        return self._init_handles()["n_regs"]

    @property
    def n_spills(self):
        return self._init_handles()["n_spills"]

    @property
    def metadata(self):
        compiled = self._init_handles()
        return types.SimpleNamespace(shared=compiled["shared_bytes"], name=self.function.fn.__name__,
                                     num_warps=kwarg_or(self.options, self.arguments, "num_warps", DEFAULT_NUM_WARPS))

    def __getitem__(self, grid):
        def runner(*args, stream=None):
            return self.launch(grid, *args, **self.options)
        return runner


def kwarg_or(options, arguments, name, default):
    value = options.get(name, arguments.get(name, default))
    return getattr(value, "value", value)


def program_error(exc, path):
    """The program's own failure (an exception, a failed assert) as the run's error, at its line."""
    error = as_run_error(exc, path, "program", "running the program")
    if error.phase == "program" and isinstance(exc, AssertionError) and is_a_check(exc, path):
        error.message = f"assert failed{': ' + str(exc) if str(exc) else ''}"
        error.hint = "The program's own check failed: the kernel's output differs from what the program expected."
    return error


def is_a_check(exc, path):
    """Whether an AssertionError is the program's own check failing: an `assert` of its own, or a
    comparison of torch.testing or numpy.testing (torch asserts inside itself too, on a CUDA call
    without CUDA: that is no check)."""
    frames = traceback.extract_tb(exc.__traceback__)
    where = os.path.abspath(frames[-1].filename) if frames else ""
    return where == os.path.abspath(path) or any(f"{os.sep}{lib}{os.sep}testing{os.sep}" in where
                                                 for lib in ("torch", "numpy"))
