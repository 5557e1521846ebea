"""The one error type a run reports, and the plain-words hints for Triton's common mistakes."""
import re

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
]


def hint_for(message):
    for pattern, hint in HINTS:
        if pattern.search(message or ""):
            return hint
    return None
