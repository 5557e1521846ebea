"""The one error type a run reports, and the plain-words hints for Triton's common mistakes."""
import functools
import importlib.metadata
import os
import re
import traceback

PHASES = ("parse", "build", "compile", "launch", "check", "bench", "trace", "ir",
          "timeout", "limit", "sandbox", "stopped", "program")


class RunError(Exception):
    """A run failed in `phase`. Fields, never text to parse back: `message` in plain words, `hint`
    (what a beginner should try; found from the message when not given), `line` of the user's
    source, `pid` the program id, `field` the spec field at fault ("args.n", "inputs.x", "grid",
    "reference.out", "options.flops", "source", "kernel"), `launch` the index of the program's
    launch at fault (script mode)."""

    trace = None  # an out-of-bounds error's trace, up to and including the offending access

    def __init__(self, phase, message, *, type=None, hint=None, line=None, pid=None, field=None, launch=None):
        assert phase in PHASES, phase
        super().__init__(message)
        self.phase, self.message, self.type = phase, message, type
        self.hint = hint if hint is not None else hint_for(message)
        self.line, self.pid, self.field, self.launch = line, pid, field, launch

    def to_dict(self):
        return {"phase": self.phase, "type": self.type or "RunError", "message": self.message,
                "hint": self.hint, "line": self.line, "pid": self.pid, "field": self.field,
                "launch": self.launch}


class Refused(Exception):
    """A request refused before any run, as every HTTP route and Socket.IO ack answers it (the one
    handler: app.web.errors): its class says `status` (HTTP), `phase` (parse, limit, timeout or
    sandbox) and `type` (the class's own name: one type per refusal, whatever the route); `field` names
    the request's field at fault, `retry_after` the seconds a 429 asks to wait."""

    status, phase = 400, "parse"

    def __init__(self, message, field=None, *, retry_after=None, hint=None):
        super().__init__(message)
        self.field, self.retry_after, self.hint = field, retry_after, hint

    @classmethod
    def kind(cls):
        return cls.__name__

    def error(self):
        """The refusal as a run's error (the body's one shape)."""
        return RunError(self.phase, str(self), type=self.kind(), hint=self.hint, field=self.field)


def unknown_fields(found, allowed, where, refusal, prefix=""):
    """Refuse (raise `refusal(message, field)`) a mapping `found` holding a key outside `allowed`: the
    message names up to five of them (sorted) and what `where` ("in the run spec") may hold; the
    field is the first, after `prefix` (its parent's path: "options.")."""
    unknown = sorted((key for key in found if key not in allowed), key=str)
    if unknown:
        names = ", ".join(repr(str(key) if len(str(key)) <= 40 else str(key)[:40] + "…") for key in unknown[:5])
        raise refusal(f"unknown field{'s' if len(unknown) > 1 else ''} {where}: {names}"
                      f"{' and more' if len(unknown) > 5 else ''}; it has only {', '.join(allowed)}",
                      prefix + str(unknown[0])[:40])


class StartError(RuntimeError):
    """A worker, or a run process of one, could not start; its message says why in a line, as
    /healthz shows it (never a traceback)."""


def explain(exc):
    """(type name, message) of the innermost meaningful exception: the interpreter wraps errors as
    InterpreterError(repr(e)), the compiler as CompilationError. The type is a field of its own:
    the message does not repeat it."""
    inner = exc
    while inner.__cause__ is not None:
        inner = inner.__cause__
    return type(inner).__name__, str(inner) or type(inner).__name__


# (pattern in Triton's message, what a beginner should read). Checked in order; first match wins.
HINTS = [
    (re.compile(r"arange's range must be a power of 2|range must be a power of 2", re.I),
     "tl.arange(start, end) needs end - start to be a power of 2 (1, 2, 4, 8, 16, ...). "
     "Round the block size up to the next power of 2 (triton.next_power_of_2(n)) "
     "and mask the extra lanes off with `mask = offs < n`."),
    (re.compile(r"arange's arguments must be of type tl.constexpr", re.I),
     "tl.arange(start, end) needs numbers known at compile time: declare the size as a "
     "`BLOCK: tl.constexpr` parameter instead of a plain argument."),
    (re.compile(r"numel.*power of|shape.*power of 2|must be a power of 2", re.I),
     "Block shapes in Triton must be powers of 2. Round the size up "
     "(triton.next_power_of_2) and mask the extra lanes."),
    (re.compile(r"Cannot broadcast|incompatible shapes|shape mismatch", re.I),
     "Two blocks with different shapes were combined. Check the shapes of your offsets: "
     "a row vector is offs[None, :] and a column vector offs[:, None]."),
    (re.compile(r"Block pointers have been removed", re.I),
     "Triton 3.9 removed block pointers (tl.make_block_ptr, tl.advance): describe the tensor once with "
     "tl.make_tensor_descriptor(base, shape, strides, block_shape), then load and store tiles by their offsets "
     "(desc.load([m, n]), desc.store([m, n], tile)); tiles past the edge read zeros, so no boundary_check."),
]


def hint_for(message):
    for pattern, hint in HINTS:
        if pattern.search(message or ""):
            return hint
    return None


# ---------------------------------------------------------------- failures inside Triton's compiler

# The stages of Triton's compiler after its front end, by the function of its backend
# (triton/backends/<backend>/compiler.py) that makes each, and what to try when one fails.
COMPILER_STAGES = {
    "make_ttir": ("TTIR", "Triton's own IR could not be simplified: the kernel likely uses a construct this "
                          "Triton lowers only in part."),
    "make_ttgir": ("TTGIR", "Laying the kernel out on the GPU failed (layouts, software pipelining, tl.dot's "
                            "lowering): try num_stages=1, another num_warps, or tl.dot blocks of at least 16 "
                            "in each dimension."),
    "gluon_to_ttgir": ("TTGIR", "Lowering the Gluon kernel to Triton's GPU IR failed: check its layouts against "
                                "this Triton's Gluon."),
    "make_llir": ("LLIR", "Lowering to LLVM failed: often an operation or dtype this GPU target lacks (fp8 needs "
                          "sm89 or later), or inline assembly it cannot take."),
    "make_ptx": ("PTX", "LLVM could not emit PTX for this target: try another target GPU or dtype."),
    "make_cubin": ("SASS (ptxas)", "ptxas refused the PTX: inline assembly it does not know, or more "
                                   "registers or shared memory than the GPU has (smaller blocks, fewer stages)."),
    "make_amdgcn": ("AMDGCN", "LLVM could not emit AMDGCN for this target."),
    "make_hsaco": ("HSACO", "The AMD linker refused the kernel."),
}


@functools.cache
def triton_version():
    try:
        return importlib.metadata.version("triton")
    except importlib.metadata.PackageNotFoundError:
        return "(unknown)"


# What a kernel uses that this Triton lacks, as Python says it: a name its modules do not have.
LACKED = re.compile(r"module '(?P<module>triton(?:\.\w+)*)' has no attribute '(?P<name>\w+)'"
                    r"|cannot import name '(?P<imported>\w+)' from '(?P<origin>triton(?:\.\w+)*)'")


def lacked_by_triton(exc, phase, line=None):
    """`exc` (anywhere in its chain) says the kernel uses a name this Triton's modules lack (a
    function a newer release added, one an older had): the run's error naming the version, its field
    options.triton (the version picker). None for any other error."""
    for raised in error_chain(exc):
        found = LACKED.search(str(raised))
        if found is not None:
            break
    else:
        return None
    module, name = found["module"] or found["origin"], found["name"] or found["imported"]
    shown = {"triton.language": "tl"}.get(module, module)
    version = triton_version()
    return RunError(phase, f"Triton {version} has no {shown}.{name}: this kernel uses something this version lacks "
                           f"({module} has no attribute '{name}')", line=line,
                    type="AttributeError" if found["module"] else "ImportError",
                    field="options.triton",
                    hint=f"Another Triton release may have it (newer releases add functions and drop old "
                         f"ones): choose one beside num_warps (options.triton; GET /api/spec lists this "
                         f"server's). This run used Triton {version}.")


def error_chain(exc):
    """`exc`, then what it was raised from or during, innermost last (each once)."""
    seen = set()
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        yield exc
        exc = exc.__cause__ or exc.__context__


def compiler_stage(exc):
    """The stage name of Triton's compiler in which `exc` (or an exception it was raised from) was
    raised, or None when it did not come from inside Triton's compiler."""
    for raised in error_chain(exc):
        for frame in reversed(traceback.extract_tb(raised.__traceback__)):
            if frame.name in COMPILER_STAGES and f"{os.sep}triton{os.sep}backends{os.sep}" in frame.filename:
                return frame.name
    return None


def compiler_failure(exc, path, line=None):
    """`exc` raised inside Triton's compiler, after its front end accepted the kernel, as the run's
    error: Triton's version, the stage, the source line (`line`, or one Triton's message names in
    `path`) and what to try. None when `exc` did not come from there."""
    stage = compiler_stage(exc)
    if stage is None:
        return None
    name, advice = COMPILER_STAGES[stage]
    inner = exc
    while inner.__cause__ is not None:
        inner = inner.__cause__
    text = (str(inner) or type(inner).__name__).strip()
    if line is None:
        named = re.search(re.escape(path) + r'"?:(\d+)', text)
        line = int(named.group(1)) if named else None
    version = triton_version()
    return RunError("compile", f"Triton {version}'s compiler failed at its {name} stage"
                               f"{f' (at line {line})' if line else ''}: {type(inner).__name__}: {text}",
                    type=type(inner).__name__, line=line, field=None if line else "source",
                    hint=f"{advice} The front end accepted the kernel; a pass after it did not. A kernel written "
                         f"for another Triton (a newer release, Triton's main branch) may need that version: "
                         f"this playground compiles with Triton {version}.")
