"""The user's kernel: their module imported from a real file, the @triton.jit function under any
@triton.autotune / @triton.heuristics, its parameters, and the user's line in a traceback.
Used by the run pipeline (interpreter or GPU), its trace pass and the IR compile alike.
"""
import contextlib
import importlib.util
import inspect
import io
import itertools
import os
import sys
import traceback
from dataclasses import dataclass, field

import triton
import triton.language as tl
from triton.runtime.autotuner import Autotuner, Config, Heuristics

from sandbox.errors import RunError, compiler_failure, error_chain, explain, hint_for, lacked_by_triton
from sandbox.launch import compiler_output, host_driver

# Floating-point fusion as Triton before 3.10 does it by default (on: the GPU host's 3.6 and the CPU's
# 3.9 give a kernel the same numbers), said outright: 3.9 warns, at every process's first compile,
# that its default is about to change, a warning about the server rather than the person's kernel. An
# operator's own TRITON_DEFAULT_FP_FUSION stands (the worker and its runs pass it on).
os.environ.setdefault("TRITON_DEFAULT_FP_FUSION", "1")

_module_ids = itertools.count()
_SANDBOX = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # sandbox/, above launch/

# Keywords Triton's launch reads as compile options (Config.all_kwargs' names).
LAUNCH_OPTIONS = ("num_warps", "num_stages", "num_ctas", "maxnreg")


def launch_keywords(args, **options):
    """The keywords of `jit[grid](**...)`: the arguments and the launch options. Triton binds a keyword
    to the kernel's parameter of that name first and reads its compile options from the same keywords,
    so a parameter named like an option (the fused-softmax tutorial's `num_stages: tl.constexpr`) takes
    that keyword, its value serving both, and the option is not passed a second time."""
    return {**{name: value for name, value in options.items() if name not in args}, **args}


class GridError(ValueError):
    """A grid Triton would not launch as written."""


def triton_grid(grid):
    """`grid` (an int, or a tuple or list of them) as compiled Triton launches it: three dimensions, a
    missing one 1. Triton reads the first three entries and ignores the rest (its interpreter refuses
    them): an extra entry of 1 is dropped as Triton drops it; one above 1 is refused, for Triton would
    run none of the programs it asks for."""
    try:
        dims = tuple(int(g) for g in grid) if isinstance(grid, (tuple, list)) else (int(grid),)
    except (TypeError, ValueError):
        raise GridError(f"{grid!r} is no grid: give a tuple of 1 to 3 integers, or a function of the "
                        f"launch's meta-parameters that returns one") from None
    if not dims:
        raise GridError("() has no entry: give a tuple of 1 to 3 integers")
    extra = dims[3:]
    if any(g != 1 for g in extra):
        raise GridError(f"{dims} has {len(dims)} entries, and Triton launches only the first 3, ignoring the rest: "
                        f"fold {', '.join(map(str, extra))} into the first three (e.g. ({dims[0]} * {extra[0]}, "
                        f"...) and split tl.program_id(0) in the kernel)")
    return dims[:3] + (1,) * (3 - len(dims[:3]))


@contextlib.contextmanager
def interpreter_mode(on):
    """@triton.jit picks the interpreter at decoration time from this knob."""
    before = triton.knobs.runtime.interpret
    triton.knobs.runtime.interpret = on
    try:
        yield
    finally:
        triton.knobs.runtime.interpret = before


@contextlib.contextmanager
def silenced():
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        yield


def write_source(source, path):
    """The source as a real file (compiled @triton.jit needs inspect.getsource), checked for syntax."""
    with open(path, "w") as f:
        f.write(source)
    try:
        compile(source, path, "exec")
    except SyntaxError as e:
        raise RunError("parse", e.msg, type="SyntaxError", line=e.lineno, field="source") from None


def load_module(path, interpret, phase="build"):
    """Import the user's file afresh, for the interpreter or for the compiler. What it prints goes
    where the caller's output goes (the trace pass and the IR compile silence it: the run shows it once)."""
    with open(path) as f:
        code = compile(f.read(), path, "exec")
    module_name = f"playground_kernel_{next(_module_ids)}"
    module = importlib.util.module_from_spec(importlib.util.spec_from_file_location(module_name, path))
    sys.modules[module_name] = module
    host_driver.install()  # tutorial modules ask triton.runtime.driver.active for the device at import
    compiler_output.install()  # a failed pass's diagnostic reaches the run's error
    with interpreter_mode(interpret), host_driver.cuda_is_the_cpu():
        try:
            exec(code, module.__dict__)
        except SystemExit as e:  # sys.exit(), exit(), argparse's error at the module's top level
            raise RunError(phase, f"the module exited while it was loaded (sys.exit({e.code!r})): a form run imports "
                                  f"the module to find its kernel, so nothing at its top level may exit. Put the "
                                  f"program's part under `if __name__ == \"__main__\":`, or run the whole program in "
                                  f"script mode", type="SystemExit", line=user_line(e, path), field="source") from None
        except BaseException as e:  # an Exception, or a BaseException of a library's (pytest.skip's)
            kind, message = explain(e)
            raise RunError(phase, f"running the module failed: {kind}: {message}", type=kind, line=user_line(e, path),
                           field="source") from None
    return module


def user_line(exc, path):
    """The deepest line of the user's source in an exception's traceback (or its causes)."""
    line = getattr(exc, "lineno", None) if isinstance(exc, SyntaxError) else None
    for raised in error_chain(exc):
        for frame in traceback.extract_tb(raised.__traceback__):
            if frame.filename == path:
                line = frame.lineno
    return line


def raised_by_playground(exc, path):
    """True when the playground's own code raised `exc` (its innermost cause): a bug of ours, not a
    complaint of Triton's or torch's about the user's kernel, nor the user's code failing."""
    inner = exc
    while inner.__cause__ is not None:
        inner = inner.__cause__
    frames = traceback.extract_tb(inner.__traceback__)
    if not frames:
        return False
    where = os.path.abspath(frames[-1].filename)
    return where.startswith(_SANDBOX + os.sep) and where != os.path.abspath(path)


def as_run_error(exc, path, phase="sandbox", doing="running your kernel"):
    """`exc` as the run's error: itself if a RunError; a bug report if the playground raised it
    (`doing` says what it was doing); else the user's error in `phase`, at their line (or, with no
    line to name, their source)."""
    if isinstance(exc, RunError):
        return exc
    failure = compiler_failure(exc, path)
    if failure is not None:
        if failure.line is None:  # Triton named none: the launch's line, in a program that made it
            failure.line = user_line(exc, path)
            failure.field = None if failure.line is not None else "source"
        return failure
    lacked = lacked_by_triton(exc, phase, user_line(exc, path))
    if lacked is not None:
        return lacked
    kind, message = explain(exc)
    if raised_by_playground(exc, path):
        return RunError("sandbox", f"the playground failed while {doing} ({kind}: {message})", type="PlaygroundBug",
                        hint="This is a bug in the playground, not in your kernel. Share this run's link (Share) "
                             "with the playground's maintainers: it holds everything needed to see it again.",
                        line=user_line(exc, path))
    line = user_line(exc, path)
    return RunError(phase, message, type=kind, hint=hint_for(message) or hint_for(str(exc)), line=line,
                    field=None if line is not None else "source")


def launch_error(exc, path, phase="launch"):
    """`exc`, raised by a launch, as the run's error; in the interpreter, with the program that ran."""
    if isinstance(exc, RunError):
        return exc
    error = as_run_error(exc, path, phase, "launching the kernel")
    with contextlib.suppress(Exception):
        from triton.runtime.interpreter import interpreter_builder
        error.pid = list(interpreter_builder.grid_idx)
    return error


@dataclass
class Kernel:
    """What the user named as the kernel: `launcher` is the object to launch (the autotuner or
    heuristics around the jit function, if any), `jit` the @triton.jit function itself."""
    name: str
    launcher: object
    jit: object
    autotuner: Autotuner = None
    heuristics: dict = None  # {meta-parameter: rule(args) -> value}
    first: Config = None  # the config the interpreter runs: the autotuner's first after its pruning (settle)
    left_out: list = field(default_factory=list)  # configs whose compile outlasted CONFIG_COMPILE_S (launcher)
    untimed: list = field(default_factory=list)  # configs a replayed launch did not time again (keep_to)

    def __post_init__(self):
        if self.autotuner is not None and self.first is None:
            self.first = self.autotuner.configs[0]

    @property
    def function(self):
        """The Python function under the jit (its name is the one in the source)."""
        fn = self.jit
        while hasattr(fn, "fn"):
            fn = fn.fn
        return fn

    @property
    def signature(self):
        """{name: inspect.Parameter} of the Python function, in order: the one reader of a loaded
        kernel's parameters (a source not run is read by sandbox.spec.parameter_names)."""
        return dict(inspect.signature(self.function).parameters)

    @property
    def params(self):
        """[(name, is_constexpr, has_default)] from the Python function's signature."""
        return [(p.name, p.annotation is tl.constexpr or "constexpr" in str(p.annotation),
                 p.default is not inspect.Parameter.empty)
                for p in self.signature.values()]

    @property
    def defaults(self):
        """{name: default} of the parameters that have one."""
        return {name: p.default for name, p in self.signature.items() if p.default is not inspect.Parameter.empty}

    @property
    def tuned(self):
        """{meta-parameter: value} the autotuner's config sets (the one the interpreter runs)."""
        return dict(self.first.kwargs) if self.autotuner else {}

    @property
    def tuned_names(self):
        """The meta-parameters any of the autotuner's configs sets."""
        return {name for config in self.autotuner.configs for name in config.kwargs} if self.autotuner else set()

    def settle(self, args):
        """Choose the config the interpreter runs, as the autotuner would before timing: its configs
        after `prune_configs_by` (early_config_prune, perf_model and top_k), given the launch's
        arguments by name, the first of them."""
        if self.autotuner is None or not (self.autotuner.early_config_prune or self.autotuner.perf_model):
            return
        self.autotuner.nargs = dict(args)
        try:
            self.first = self.autotuner.prune_configs({})[0]
        finally:
            self.autotuner.nargs = None

    def positional(self, args):
        """`args` split as people launch a kernel: the leading parameters in order, positionally (an
        autotuner's prune_configs_by and its key read them by name from there), the rest by keyword."""
        names = [name for name, _, _ in self.params]
        count = next((i for i, name in enumerate(names) if name not in args), len(names))
        return [args[name] for name in names[:count]], {k: v for k, v in args.items() if k not in names[:count]}

    @property
    def interpreted(self):
        from triton.runtime.interpreter import InterpretedFunction
        return isinstance(self.jit, InterpretedFunction)

    def config(self, chosen=None, num_warps=4, num_stages=3):
        """The launch configuration that applies: the autotuner's `chosen` config (its first when none
        was chosen: the interpreter's), else the spec's num_warps and num_stages."""
        if self.autotuner is None:
            return Config({}, num_warps=num_warps, num_stages=num_stages)
        return chosen or self.first

    def chosen(self):
        """The autotuner's choice once it has timed its configs, else None (the interpreter times none: config())."""
        if self.autotuner is None or self.interpreted:
            return None
        return getattr(self.autotuner, "best_config", None)

    def keep_to(self, named):
        """Leave the autotuner only its config that a script's launch record names (`named`, the record's
        "config"): a replay of the launch runs the config the program's autotuner chose, not timing the
        configs again (`untimed`). Where no config is so named, the autotuner tunes as ever."""
        chosen = next((config for config in self.autotuner.configs if described(config) == named), None)
        if chosen is not None:
            self.untimed = [config for config in self.autotuner.configs if config is not chosen]
            self.autotuner.configs, self.first = [chosen], chosen


def described(config):
    """An autotuner's config as a result names it (a launch record's "config", an autotune table's row,
    an error): its values, num_warps and num_stages."""
    return {**config.kwargs, "num_warps": config.num_warps, "num_stages": config.num_stages}


def unwrap(obj, name):
    """The Kernel of an object of the user's module, or None if it is not a Triton kernel."""
    autotuner, heuristics, launcher = None, {}, obj
    while isinstance(obj, (Autotuner, Heuristics)):
        if isinstance(obj, Autotuner) and autotuner is None and obj.configs:
            autotuner = obj
        elif isinstance(obj, Heuristics):
            heuristics.update(obj.values)
        obj = obj.fn
    if not hasattr(obj, "arg_names"):
        return None
    return Kernel(name, launcher, obj, autotuner, heuristics)


def find_kernel(module, name, phase="build"):
    kernel = unwrap(getattr(module, name, None), name)
    if kernel is None:
        found = ", ".join(n for n, obj in vars(module).items()
                          if hasattr(obj, "__getitem__") and unwrap(obj, n) is not None) or "none"
        raise RunError(phase, f"there is no @triton.jit function named '{name}' in the source "
                              f"(jit functions found: {found})", field="kernel")
    return kernel
