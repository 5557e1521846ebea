"""Script mode: a whole program run as written, every kernel launch captured and bounds-checked.

The program (kernels, the Python that allocates tensors and launches them, its asserts and its
benchmarks) runs as its own `__main__` in Triton's interpreter, with Triton's launch path hooked:

    kernel[grid](...) ─▶ @triton.autotune / @triton.heuristics ─▶ InterpretedFunction.run ◀─ hooked here

so each launch, however it was made, is recorded (`result.launches`, docs/result.md) and runs under
the bounds sanitizer (sandbox.trace). One launch is seen whole: `options.launch`, or by default the
first launch of the kernel launched last; its trace, timings and IR are the result's, as for a form
run. An out-of-bounds access stops its launch before it happens and ends the run naming the launch,
even where the program catches the exception. On a GPU the same capture hooks the compiled launch
path instead, each launch checked by the GPU tracer first (sandbox.run.script_gpu).
"""
import contextlib
import inspect
import math
import sys
import time
import types
import weakref

import torch
import triton
from triton.runtime import interpreter
from triton.runtime.autotuner import Autotuner
from triton.runtime.jit import JITFunction

from sandbox import result as results
from sandbox.errors import RunError
from sandbox.run import bench, host_driver
from sandbox.run.ir import compile_kernel
from sandbox.trace import provenance
from sandbox.run.kernel import (LAUNCH_OPTIONS, Kernel, as_run_error, interpreter_mode, launch_error, user_line,
                            write_source)
from sandbox.trace.interpreter import Tracer
from sandbox.trace.record import index_of, owners_by_position

MAX_LAUNCHES = 1000  # launches listed; past them a program's launches are counted, still checked
DEFAULT_NUM_WARPS, DEFAULT_NUM_STAGES = 4, 3  # Triton's, for a launch that names neither
MAX_TEXT = 256  # characters of a string argument kept in its launch's record
MAX_CHARTS, MAX_CHART_POINTS = 8, 200  # perf_report plots kept for the page, and points of each


def run_script(spec, emit, scratch, limits, device):
    """Run the program of a `"mode": "script"` spec where `device` (result.device) says: Triton's
    interpreter, or the GPU (sandbox.run.script_gpu); the result lists its launches."""
    result = results.new(device)
    path = f"{scratch}/program.py"
    capture = None
    try:
        write_source(spec["source"], path)
        if device["kind"] == "gpu":
            from sandbox.run.script_gpu import GpuCapture
            capture = GpuCapture(spec["options"], path, limits, scratch, emit)
        else:
            capture = Capture(spec["options"], path, limits)
        emit("status", {"phase": "running", "message": f"running the program {capture.where}"})
        failure = capture.run_program(spec["options"]["seed"])
        chosen = capture.chosen()
        result["launches"] = capture.listing(chosen)
        result["benchmarks"] = capture.benchmarks.charts or None
        result["notes"] += capture.notes
        if chosen is not None:
            show(result, capture.kept[chosen], chosen, capture, emit)
        error = capture.error or failure
        if error is not None:
            results.fail(result, error)
        elif capture.total == 0:
            result["notes"].append("The program launched no Triton kernel.")
    except Exception as e:
        results.fail(result, as_run_error(e, path, "program", "running the program"))
        if capture is not None and result["launches"] is None:
            result["launches"] = capture.listing(None)
    return result


def show(result, kept, index, capture, emit):
    """The chosen launch's trace, timings and IR, each sent as soon as it is ready (the trace may
    have been sent already, as its launch ran); a launch that failed has its trace up to the failure
    only."""
    def ready(part, content):
        result[part] = content
        if content is not None:
            emit("partial", {"part": part, "content": content})

    if kept.sent:
        result["trace"] = kept.trace
    else:
        ready("trace", kept.trace)
    if kept.ms is None:
        return
    if capture.options["bench"]:
        emit("status", {"phase": "bench", "message": f"timing launch {index}"})
        ready("timings", capture.timings(kept, index))
    if capture.options["ir"]:
        emit("status", {"phase": "ir", "message": "compiling to TTIR, TTGIR, LLIR, PTX and SASS"})
        try:
            ir = compile_kernel(*compiled_twin(kept.function, capture.path), capture.path, kept.arguments,
                                num_warps=kept.num_warps, num_stages=kept.num_stages, arch=capture.options["arch"])
        except RunError as e:
            ir = {"error": e.to_dict()}  # a launch that ran but does not compile for the target: worth seeing
        ready("ir", ir)


class LaunchFailed(BaseException):
    """A launch failed (out of bounds, or raised): the program stops there. A BaseException, so that
    the program's own `except Exception` does not take it for one of its errors and go on."""


class Kept:
    """What a launch that may be shown leaves: its trace, its arguments and how it ran."""

    def __init__(self, function, arguments, tensors, trace, ms, num_warps, num_stages, autotuner):
        self.function, self.arguments, self.tensors, self.trace = function, arguments, tensors, trace
        self.ms, self.num_warps, self.num_stages, self.autotuner = ms, num_warps, num_stages, autotuner
        self.sent = False  # its trace was sent as the launch ran
        self.replay = None  # on a GPU: the launch again, from its inputs as they were (script_gpu)


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


class Capture:
    """The program's launches, as Triton makes them; see the module's docstring."""
    where = "in Triton's interpreter"
    clock = "the interpreter's wall clock"

    def __init__(self, options, path, limits):
        self.options, self.path = options, path
        self.limits = {k: limits[k] for k in ("max_programs", "max_bytes") if k in limits}
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
        with self.origins.watching(), self.environment():
            try:
                exec(code, module.__dict__)
            except LaunchFailed:
                pass  # the launch's error, kept, is the run's
            except SystemExit as e:
                if e.code not in (None, 0):
                    return RunError("program", f"the program exited with status {e.code}", type="SystemExit",
                                    line=user_line(e, self.path))
            except Exception as e:
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
            return capture.launch(lambda: run(fn, *args, grid=grid, warmup=False, **kwargs), fn, args, kwargs, grid)

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
        prune_configs_by, as a form run does (sandbox.run.pipeline.launch)."""
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
        grid = resolve_grid(grid, {**kwargs, **arguments})
        autotuner = Tuned(self.tuning[-1], self.timed_earlier()) if self.tuning else None
        record = describe_launch(index, kernel, arguments, grid, self.call_line(), kwargs.get("num_warps", DEFAULT_NUM_WARPS),
                                 kwargs.get("num_stages", DEFAULT_NUM_STAGES),
                                 autotuner.best_config if autotuner else None)
        for arg in record["args"]:
            if arg["kind"] == "tensor":
                arg["values"] = self.origins.of(arguments[arg["name"]])
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
        trace, start = None, time.perf_counter()
        try:
            with self.tracer(kernel, arguments, tensors, grid, keep and self.options["trace"]) as tracer:
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
                                    autotuner)
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
        owners = owners_by_position(self.analyses[kernel.name], arguments, tensors)
        only = self.options["trace_pid"]
        return Tracer(tensors, self.path, owners=owners, record=record,
                      only=None if only is None else index_of(only, grid), **self.limits)

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
                                    record["num_stages"], None)
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

    def listing(self, chosen):
        return {"total": self.total, "selected": chosen, "list": self.launches}


class Origins:
    """Where the program's tensors came from, so that a form run can make them again ("Make a form
    from this launch", sandbox.launch_form): torch's factories are watched while the program runs.
    A tensor made by a fill (`torch.zeros`, `torch.full`, `torch.empty`, ...) is that call; one drawn
    by a random factory (`torch.rand`, `torch.randn`, `torch.randint`, their `_like`) is the draws
    since the program's last `torch.manual_seed`, checked by drawing them again from that seed
    (anything else that drew from the generator would show there). A tensor changed since it was
    made (its version moved), a view of it, or one made otherwise has no origin, and says why."""
    RANDOM = ("rand", "randn", "randint", "rand_like", "randn_like", "randint_like")
    FILLS = ("zeros", "ones", "full", "empty", "zeros_like", "ones_like", "full_like", "empty_like")
    MAX_DRAWS = 16  # draws since the seed that a form repeats; past them a tensor is not made again

    def __init__(self, seed):
        self.seed, self.draws = seed, []  # the draws since the last torch.manual_seed
        self.made = {}                    # id(tensor) -> (weak reference, version, origin)
        self.replaying = False

    @contextlib.contextmanager
    def watching(self):
        with contextlib.suppress(Exception):
            # `with torch.device(...)` knows the factories by identity, from a list it makes once: made
            # now, it names torch's own, not the watchers (the program's device blocks keep working).
            from torch.utils._device import _device_constructors
            _device_constructors()
        originals = {name: getattr(torch, name) for name in ("manual_seed",) + self.RANDOM + self.FILLS}
        for name, original in originals.items():
            setattr(torch, name, self.watched(name, original))
        try:
            yield
        finally:
            for name, original in originals.items():
                setattr(torch, name, original)

    def watched(self, name, original):
        origins = self

        def call(*args, **kwargs):
            value = original(*args, **kwargs)
            if origins.replaying:
                return value
            if name == "manual_seed":
                origins.seed, origins.draws = args[0] if args else kwargs.get("seed"), []
            elif isinstance(value, torch.Tensor):
                origins.made_by(name, value, args, kwargs)
            return value

        return call

    def made_by(self, name, tensor, args, kwargs):
        expression = factory_call(name.removesuffix("_like"), tensor, args, kwargs)
        if name in self.RANDOM:
            if expression is None or not isinstance(self.seed, int):
                self.draws = None  # a draw the form cannot repeat: the later ones cannot be repeated either
            elif self.draws is not None:
                self.draws.append(expression)
            origin = {"seed": self.seed, "draws": list(self.draws)} if self.draws and len(self.draws) <= self.MAX_DRAWS \
                else {"why": f"drawn after {self.MAX_DRAWS} other random tensors since the seed" if self.draws
                      else "drawn from a generator the form cannot set again (its seed or an earlier draw unknown)"}
        else:
            origin = {"expression": expression} if expression else {"why": f"made by torch.{name} with arguments "
                                                                           f"a form cannot repeat"}
        key = id(tensor)
        # forgotten with the tensor: a program that makes tensors in a loop keeps no more than it holds
        self.made[key] = (weakref.ref(tensor, lambda _: self.made.pop(key, None)), tensor._version, origin)

    def of(self, tensor):
        """The origin of a launch's tensor argument (docs/result.md, `values`)."""
        made = self.made.get(id(tensor))
        if made is None or made[0]() is not tensor:
            return {"why": "made by the program other than by one torch factory call (an expression, a view, a copy)"}
        _, version, origin = made
        if tensor._version != version:
            return {"why": "changed by the program since it was made"}
        if "draws" in origin and "checked" not in origin:
            origin["checked"] = self.drawn_again(origin, tensor)
        if origin.get("checked") is False:
            return {"why": "its generator was drawn from by more than the torch calls the form repeats"}
        return {k: v for k, v in origin.items() if k != "checked"}

    def drawn_again(self, origin, tensor):
        """The draws since the seed, repeated on the tensor's device: do they make the same values?"""
        devices = [tensor.device.index or 0] if tensor.device.type == "cuda" else []
        self.replaying = True
        try:
            with torch.random.fork_rng(devices=devices), torch.device(tensor.device):
                torch.manual_seed(origin["seed"])
                values = [eval(expression, {"torch": torch}) for expression in origin["draws"]]  # our own text
                return bool(values[-1].shape == tensor.shape and torch.equal(values[-1], tensor))
        except Exception:
            return False
        finally:
            self.replaying = False


def factory_call(name, tensor, args, kwargs):
    """The torch call that makes a tensor as `tensor` was made (its shape and dtype; a fill's value,
    randint's bounds), or None where they are not plain numbers."""
    shape, dtype = tuple(tensor.shape), f"torch.{str(tensor.dtype).removeprefix('torch.')}"
    if name == "randint":
        numbers = [a for a in args if isinstance(a, int) and not isinstance(a, bool)]
        low, high = kwargs.get("low", numbers[0] if len(numbers) > 1 else 0), kwargs.get("high", numbers[-1] if numbers else None)
        if not (isinstance(low, int) and isinstance(high, int)):
            return None
        return f"torch.randint({low}, {high}, {shape}, dtype={dtype})"
    if name == "full":
        value = kwargs.get("fill_value", args[1] if len(args) > 1 else None)  # full(size, v), full_like(t, v)
        if isinstance(value, torch.Tensor) and value.numel() == 1:
            value = value.item()
        if not isinstance(value, (bool, int, float)) or isinstance(value, float) and not math.isfinite(value):
            return None
        return f"torch.full({shape}, {value!r}, dtype={dtype})"
    return f"torch.{name}({shape}, dtype={dtype})"


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
    if error.phase == "program" and isinstance(exc, AssertionError):
        error.message = f"assert failed{': ' + str(exc) if str(exc) else ''}"
        error.hint = "The program's own check failed: the kernel's output differs from what the program expected."
    return error


def bind(kernel, args, kwargs):
    """{parameter: value} of one launch, defaults included, as Triton binds them."""
    params = inspect.signature(kernel.function).parameters
    bound = {name: param.default for name, param in params.items() if param.default is not inspect.Parameter.empty}
    bound.update(zip(params, args))
    bound.update({name: value for name, value in kwargs.items() if name in params})
    return {name: bound[name] for name in params if name in bound}  # in the signature's order


def resolve_grid(grid, meta):
    grid = grid(meta) if callable(grid) else grid
    grid = tuple(grid) if isinstance(grid, (tuple, list)) else (grid,)
    return tuple(int(g) for g in grid) + (1,) * (3 - len(grid))


def grid_text(grid):
    shown = list(grid)
    while len(shown) > 1 and shown[-1] == 1:
        shown.pop()
    return ", ".join(map(str, shown)) + ("," if len(shown) == 1 else "")


def describe_launch(index, kernel, arguments, grid, line, num_warps, num_stages, config):
    """A launch's record in `result.launches.list` (docs/result.md)."""
    constexprs = {name for name, is_constexpr, _ in kernel.params if is_constexpr}
    return {"index": index, "kernel": kernel.name, "line": line, "grid": list(grid),
            "args": [describe_argument(name, value, name in constexprs) for name, value in arguments.items()],
            "num_warps": num_warps, "num_stages": num_stages,
            "config": None if config is None else {**config.kwargs, "num_warps": config.num_warps,
                                                   "num_stages": config.num_stages},
            "ms": None, "bounds": "unchecked"}


def describe_argument(name, value, constexpr):
    if isinstance(value, torch.Tensor):
        return {"name": name, "kind": "tensor", "shape": list(value.shape),
                "dtype": str(value.dtype).removeprefix("torch."), "strides": list(value.stride()),
                "device": str(value.device)}
    if hasattr(value, "value") and type(value).__name__ == "constexpr":
        value = value.value
    if not (value is None or isinstance(value, (bool, int, float, str))):
        value = repr(value)[:80]
    elif isinstance(value, str) and len(value) > MAX_TEXT:
        value = value[:MAX_TEXT] + "…"  # a launch's record stays small, whatever the program passes
    elif isinstance(value, float) and not math.isfinite(value):
        value = repr(value)
    return {"name": name, "kind": "constexpr" if constexpr else "scalar", "value": value}


def interpreter_do_bench(fn, warmup=25, rep=100, grad_to_none=None, quantiles=None, return_mode="mean"):
    """triton.testing.do_bench in the interpreter: `fn` once, by the wall clock (the interpreter's
    time says nothing of a GPU's; timing it a hundred times would only spend the run's time)."""
    start = time.perf_counter()
    fn()
    ms = (time.perf_counter() - start) * 1e3
    if quantiles is not None:
        return [ms for _ in quantiles]
    return [ms] if return_mode == "all" else ms


class Benchmarks:
    """triton.testing.perf_report's benchmarks, run by the playground: each at its first point only
    unless every point is asked for, its table printed without pandas or matplotlib, and the plot it
    would draw kept for the page (`charts`: result.benchmarks, docs/result.md)."""

    def __init__(self, every_point, notes, clock):
        self.every_point, self.notes, self.clock = every_point, notes, clock
        self.charts = []

    @property
    def run(self):
        benchmarks = self

        def run(mark, show_plots=False, print_data=False, save_path="", return_df=False, **kwargs):
            tables = [benchmarks.run_one(mark, bench, print_data, kwargs)
                      for bench in (mark.benchmarks if isinstance(mark.benchmarks, list) else [mark.benchmarks])]
            if return_df:
                return tables if isinstance(mark.benchmarks, list) else tables[0]
            return None

        return run

    def note(self, text):
        if text not in self.notes:
            self.notes.append(text)

    def run_one(self, mark, bench, print_data, kwargs):
        x_names = list(bench.x_names)
        points = list(bench.x_vals)
        if not self.every_point and len(points) > 1:
            self.note(f"The perf_report benchmark '{bench.plot_name}' ran at its first point only ({len(points)} points; "
                      f"options.benchmarks \"all\" runs every one), its times {self.clock}.")
            points = points[:1]
        header = x_names + [f"{name} ({bench.ylabel})" for name in bench.line_names]
        rows = []
        for x in points:
            x = list(x) if isinstance(x, (list, tuple)) else [x] * len(x_names)
            row = list(x)
            for y in bench.line_vals:
                value = mark.fn(**dict(zip(x_names, x)), **{bench.line_arg: y}, **bench.args, **kwargs)
                row.append(value[0] if isinstance(value, (list, tuple)) else value)
            rows.append(row)
        if print_data:
            print(f"{bench.plot_name}:")
            print(table_text(header, rows))
        if len(self.charts) < MAX_CHARTS:
            self.charts.append(chart(bench, x_names, rows, len(bench.x_vals)))
        return {"header": header, "rows": rows}


def chart(bench, x_names, rows, points):
    """A benchmark's plot as data (result.benchmarks): its first x against each line's value, as
    perf_report draws it. A value that is no finite number is null."""
    def number(value):
        value = value.item() if isinstance(value, torch.Tensor) and value.numel() == 1 else value
        return value if isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value) else None

    width = len(x_names)
    return {"name": str(bench.plot_name)[:MAX_TEXT], "x": str(bench.xlabel or x_names[0])[:MAX_TEXT],
            "y": str(bench.ylabel)[:MAX_TEXT], "x_log": bool(bench.x_log), "y_log": bool(bench.y_log),
            "lines": [str(name)[:MAX_TEXT] for name in bench.line_names],
            "points": [[number(row[0]), [number(v) for v in row[width:]]] for row in rows[:MAX_CHART_POINTS]],
            "points_total": points}


def table_text(header, rows):
    """Columns right-aligned under their headers, as pandas prints a DataFrame."""
    cells = [[""] + header] + [[str(i)] + [f"{v:.6f}" if isinstance(v, float) else str(v) for v in row]
                               for i, row in enumerate(rows)]
    widths = [max(len(row[c]) for row in cells) for c in range(len(cells[0]))]
    return "\n".join("  ".join(cell.rjust(width) for cell, width in zip(row, widths)) for row in cells)


def compiled_twin(function, path):
    """The compilable twin of an interpreted kernel (a compiled one is its own): each @triton.jit function of the program made a
    JITFunction over the same code, in a copy of the program's globals, so helpers it calls resolve
    to their twins too. The program is not run again to compile it."""
    module = types.ModuleType("playground_program_twin")
    namespace = module.__dict__
    namespace.update(function.fn.__globals__)
    module.__file__ = path
    if not isinstance(function, interpreter.InterpretedFunction):  # on a GPU: the program's own kernel
        return Kernel(function.fn.__name__, function, function, heuristics={}), module
    for name, value in list(namespace.items()):
        if isinstance(value, interpreter.InterpretedFunction) and value.fn.__code__.co_filename == path:
            namespace[name] = twin_of(value, namespace)
    module.__file__ = path
    twin = namespace.get(function.fn.__name__)
    if not isinstance(twin, JITFunction) or twin.fn.__code__ is not function.fn.__code__:
        twin = twin_of(function, namespace)
    return Kernel(function.fn.__name__, twin, twin, heuristics={}), module


def twin_of(interpreted, namespace):
    fn = interpreted.fn
    copy = types.FunctionType(fn.__code__, namespace, fn.__name__, fn.__defaults__, fn.__closure__)
    copy.__annotations__, copy.__module__, copy.__qualname__ = fn.__annotations__, fn.__module__, fn.__qualname__
    return JITFunction(copy, **interpreted.kwargs)


__all__ = ["run_script", "MAX_LAUNCHES"]
