"""The user's kernel: their module imported from a real file, the @triton.jit function under any
@triton.autotune / @triton.heuristics, its parameters, and the user's line in a traceback.
Used by the run pipeline (interpreter or GPU), its trace pass and the IR compile alike.
"""
import contextlib
import importlib.util
import inspect
import io
import itertools
import sys
import traceback
from dataclasses import dataclass

import triton
import triton.language as tl
from triton.runtime.autotuner import Autotuner, Config, Heuristics

from sandbox.errors import RunError, explain

_module_ids = itertools.count()


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
    with interpreter_mode(interpret):
        try:
            exec(code, module.__dict__)
        except Exception as e:
            kind, message = explain(e)
            raise RunError(phase, f"running the module failed: {kind}: {message}", type=kind, line=user_line(e, path),
                           field="source") from None
    return module


def user_line(exc, path):
    """The deepest line of the user's source in an exception's traceback (or its causes)."""
    line = getattr(exc, "lineno", None) if isinstance(exc, SyntaxError) else None
    seen = set()
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        for frame in traceback.extract_tb(exc.__traceback__):
            if frame.filename == path:
                line = frame.lineno
        exc = exc.__cause__ or exc.__context__
    return line


def as_run_error(exc, path):
    """`exc` as the run's error: itself if a RunError, else a "sandbox" error (a bug of ours or an
    exotic user error) that still names the user's line."""
    if isinstance(exc, RunError):
        return exc
    kind, message = explain(exc)
    return RunError("sandbox", message, type=kind, line=user_line(exc, path))


@dataclass
class Kernel:
    """What the user named as the kernel: `launcher` is the object to launch (the autotuner or
    heuristics around the jit function, if any), `jit` the @triton.jit function itself."""
    name: str
    launcher: object
    jit: object
    autotuner: Autotuner = None
    heuristics: dict = None  # {meta-parameter: rule(args) -> value}

    @property
    def function(self):
        """The Python function under the jit (its name is the one in the source)."""
        fn = self.jit
        while hasattr(fn, "fn"):
            fn = fn.fn
        return fn

    @property
    def params(self):
        """[(name, is_constexpr, has_default)] from the Python function's signature."""
        return [(p.name, p.annotation is tl.constexpr or "constexpr" in str(p.annotation),
                 p.default is not inspect.Parameter.empty)
                for p in inspect.signature(self.function).parameters.values()]

    @property
    def tuned(self):
        """{meta-parameter: value} the autotuner's configs set (its first config's values)."""
        return dict(self.autotuner.configs[0].kwargs) if self.autotuner else {}

    @property
    def interpreted(self):
        from triton.runtime.interpreter import InterpretedFunction
        return isinstance(self.jit, InterpretedFunction)

    def config(self, chosen=None, num_warps=4, num_stages=3):
        """The launch configuration that applies: the autotuner's `chosen` config (its first when none
        was chosen: the interpreter's), else the spec's num_warps and num_stages."""
        if self.autotuner is None:
            return Config({}, num_warps=num_warps, num_stages=num_stages)
        return chosen or self.autotuner.configs[0]


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
