"""The server <-> worker protocol: JSON lines, one message per line, built by one function.

Every message: {"type", "id", "run_id", "content"}. The server sends `job` (a Job: its spec normalized
by sandbox.spec, and beside it the digest of the run's owner, its `provenance` (whose code it is: OWN,
FOREIGN), what this server kept for it, a graded run's hidden check; the worker's settings come once,
in its environment), `compile` (a Job too: a compile ahead, sandbox.worker.ahead), once, `warm` (the gallery's specs as shipped, for sandbox.worker.warming: never a
user's), and `preempt` (end the run under way, the server's own work, now: a person's run waits for
its worker; the worker answers `preempted` instead of its result, and the server queues the run
again); a worker sends `ready` once warm, `warming` (its warm-up's progress) at any time between
jobs, then for each job any number of `status` and
`stdout`, `sanitized` (the launch passed the bounds check), `partial` (a section of the result as soon as
it is ready: {part, content}, each part at most once, sandbox.result.PARTS), `timed` (the
reference's timing, {key, reference_ms}, which the worker's slot keeps for later runs of its owner
where the spec it sent points, sandbox.spec.timing_key), and exactly one `result`
(sandbox.result), which is the run process's own line, passed on unchanged once its shape is checked. Between a run process and its worker there is also
`ready` (warm, with the isolation steps taken).
A worker's output is untrusted: the server parses it with `decode`, which never executes anything,
and which measures a line before it parses it (Limits: its bytes, how deep it nests, how many
values it holds), so that no line can make the reader build more Python objects than a real result
needs. A run's messages meet the same bounds in its worker, and the worker's in the web process.
"""
import json
import os
import re
import uuid
from dataclasses import dataclass, field, fields, replace as copy_with

from sandbox import settings

SERVER_TYPES = ("job", "warm", "compile", "preempt")
# `unstarted`: the worker could not start, and why (a message, never a traceback); its last line.
WORKER_TYPES = ("ready", "unstarted", "status", "stdout", "sanitized", "partial", "timed", "result", "warming", "compiled",
                "preempted")
# A run process's messages to its worker, once it has its job.
# `finished`: a script's program has ended, {"result": its result so far}, before the page's own steps
# (timing, IR): its worker keeps it, and delivers it should a step run past SCRIPT_STEPS_S.
# `shown`: {"launch": index, "part", "content"} as each part is ready, then {"launch": index, "result"}: a
# script's kept launch replayed whole ahead of its selection, in the interpreter (sandbox.worker.ahead);
# its worker keeps them for the owner's click on that launch.
# `launched`: {"launch": its record}, as a script's program is about to make one of its first SAID_AS_LAUNCHED
# launches: its worker starts the server's check of it (sandbox.worker.checks_ahead) while the program goes on.
RUN_TYPES = ("status", "sanitized", "partial", "timed", "finished", "shown", "launched", "result")
SAID_AS_LAUNCHED = 16  # as many as a worker keeps waiting; a program's other launches are checked after its run
# The server's own check of a script's shown launch (sandbox.grading.recheck), after its steps: its bound.
RECHECK_BUDGET_S = 10.0
# Compiles ahead a worker runs at once (of different owners, sandbox.worker.ahead), its checks ahead
# (sandbox.worker.checks_ahead) among them: with its run, the processes whose memory the server counts
# per worker (app.dispatch.memory).
MAX_COMPILES_AHEAD = 2


@dataclass(frozen=True)
class Limits:
    """The bounds of one message line (MESSAGE_MAX_BYTES, MESSAGE_MAX_DEPTH, MESSAGE_MAX_ELEMENTS).
    A real result is far inside them: a trace of TRACE_MAX_BYTES is about 0.6 million values, a graded
    result carries two, and none nests deeper than 10."""
    max_bytes: int = settings.default("MESSAGE_MAX_BYTES")
    max_depth: int = settings.default("MESSAGE_MAX_DEPTH")
    max_elements: int = settings.default("MESSAGE_MAX_ELEMENTS")

    @classmethod
    def from_environment(cls, environ=os.environ):
        """The bounds the server set for its workers (their environment: sandbox.settings)."""
        return cls(*(max(1, settings.value(name, environ))
                     for name in ("MESSAGE_MAX_BYTES", "MESSAGE_MAX_DEPTH", "MESSAGE_MAX_ELEMENTS")))


LIMITS = Limits.from_environment()
MAX_LINE_BYTES = LIMITS.max_bytes
# A JSON string (its escapes included); what a scan of a line's structure skips.
_STRING = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"', re.S)
_NOT_BRACKETS = bytes(b for b in range(256) if b not in b"[]{}")
_INNERMOST = re.compile(rb"\[\]|\{\}")  # one pass takes away one level: the text it leaves is not looked at again


# Whose code a job runs (a run's or a compile ahead's), decided once by the server where every job is
# made (app.dispatch.jobs.provenance): its owner's own, or anyone else's (a shared link's, a puzzle's,
# a graded run's, the server's own work).
OWN, FOREIGN = "own", "foreign"


def kept_for(owner, provenance):
    """The store of what is kept for later runs that a job may read and write (compiled kernels and
    their IR, reference timings, passed bounds checks): its owner's, for the owner's own code; None,
    nothing lent and nothing kept, for anyone else's code or a job that does not say whose it is.
    The one mapping, on both sides: app.dispatch (slot, pool) and sandbox.worker (main, ahead)."""
    return owner if provenance == OWN and isinstance(owner, str) and owner else None


@dataclass(frozen=True)
class Job:
    """What a `job` message carries: the spec, only what sandbox.spec defines (a run process normalizes
    it), and beside it what the server and the worker know of the run. The one definition, read by
    `Job.read` wherever a job arrives (the worker, its run processes)."""
    spec: object = None
    owner: str = None                # the digest of the run's owner
    provenance: str = FOREIGN        # whose code it runs (OWN, FOREIGN): what it may keep (kept_for)
    sanitized_before: bool = False   # this launch passed the bounds check on this server before
    compiled_ahead: bool = False     # a compile ahead of this spec finished into the kernels it is lent
    reference_times: dict = field(default_factory=dict)  # {reference key: timing} its worker kept for the owner
    peak_gbps: float = None          # the device's copy bandwidth its worker's warm-up measured (sandbox.run.bench)
    grading: dict = None             # a graded run's hidden check: the worker gives it to the grader alone
    compile_ahead: bool = False      # compile what a run of the spec would, launching nothing (sandbox.worker.ahead)
    grade: dict = None               # a grader's job (sandbox.grading.grader): it runs no module and has no spec
    recheck: dict = None             # the server's check of a script's launch (sandbox.grading.recheck): no program runs
    replay: dict = None              # {"launch": a record}: a script's launch alone, from the inputs its worker kept
                                     # from the run that listed it (sandbox.run.replay): no program runs; with
                                     # compile_ahead, {"launches": [records]}: those launches compiled, none run
    yields: bool = False             # the server's own work (a puzzle's solution run): it yields its worker to a
                                     # person's run, and takes a warm run process only where another stays warm

    _KINDS = {"owner": (str, type(None)), "provenance": (str,), "sanitized_before": (bool,), "compiled_ahead": (bool,),
             "reference_times": (dict,), "peak_gbps": (int, float, type(None)), "grading": (dict, type(None)),
             "compile_ahead": (bool,), "grade": (dict, type(None)), "recheck": (dict, type(None)),
             "replay": (dict, type(None)), "yields": (bool,)}

    @classmethod
    def read(cls, content):
        """The job of a message's content; JobError naming the field that is not the job's, or not of
        its kind. The spec is the run's to check (a run says what is wrong with it)."""
        names = {f.name for f in fields(cls)}
        unknown = sorted(set(content) - names)
        if unknown:
            raise JobError(f"a job has no field {unknown[0]!r}")
        for name, kinds in cls._KINDS.items():
            if name in content and not isinstance(content[name], kinds):
                raise JobError(f"a job's {name!r} is a {type(content[name]).__name__}")
        return cls(**content)

    @classmethod
    def of_run(cls, spec, **known):
        """The job of a run of `spec` as the server holds it: a graded run's hidden check, which the
        server keeps beside the spec's fields (app.course.puzzles), goes into the job's own field."""
        if isinstance(spec, dict) and "grading" in spec:
            spec, known["grading"] = {k: v for k, v in spec.items() if k != "grading"}, spec["grading"]
        return cls(spec=spec, **known)

    def replace(self, **changes):
        return copy_with(self, **changes)

    def message(self, run_id, type="job"):
        """The job as a message: a `job`, or the server's `compile` (a compile ahead, sandbox.worker.ahead)."""
        assert type in ("job", "compile"), type
        return message(type, run_id, **{f.name: getattr(self, f.name) for f in fields(self)})


class JobError(ValueError):
    """A job message that is not one (the server's bug: it is answered with an error, the worker goes on)."""


def new_id():
    return uuid.uuid4().hex[:16]


def message(type, run_id=None, **content):
    assert type in SERVER_TYPES + WORKER_TYPES + RUN_TYPES, type
    return {"type": type, "id": new_id(), "run_id": run_id, "content": content}


def encode(msg, nan_to_null=False):
    """One line of JSON; ValueError for NaN or infinity, which JSON has no form for, unless
    `nan_to_null` (a result's max error of a NaN output): then they become null, in a second pass
    taken only when needed (a result with a trace is megabytes: one walk is enough)."""
    try:
        text = json.dumps(msg, separators=(",", ":"), allow_nan=False, default=str)
    except ValueError:
        if not nan_to_null:
            raise
        text = json.dumps(jsonable(msg), separators=(",", ":"), allow_nan=False, default=str)
    return (text + "\n").encode()


def over_limits(line, limits=None):
    """Why a line may not be parsed (a sentence naming the bound it passes), or None. Measured on
    the bytes, before any object is made: strings are skipped, then the values counted (each comma
    and each opening bracket) and the nesting measured by taking away innermost pairs of brackets,
    as many times as the depth allows (each pass one C-speed replace)."""
    limits = limits or LIMITS
    if isinstance(line, str):
        line = line.encode(errors="surrogatepass")
    if len(line) > limits.max_bytes:
        return f"a message of {len(line)} bytes (the limit is {limits.max_bytes}: MESSAGE_MAX_BYTES)"
    structure = _STRING.sub(b"", line)
    elements = structure.count(b",") + structure.count(b"[") + structure.count(b"{")
    if elements > limits.max_elements:
        return f"a message of {elements} values (the limit is {limits.max_elements}: MESSAGE_MAX_ELEMENTS)"
    brackets = structure.translate(None, _NOT_BRACKETS)
    for _ in range(limits.max_depth):
        if not brackets:
            return None
        shorter = _INNERMOST.sub(b"", brackets)
        if len(shorter) == len(brackets):
            return None  # not balanced: not JSON, which the parser says
        brackets = shorter
    if brackets:
        return f"a message nested more than {limits.max_depth} levels deep (the limit: MESSAGE_MAX_DEPTH)"
    return None


def decode(line, allowed=WORKER_TYPES, limits=None):
    """Parse one line; None if it is not a well-formed message of an allowed type, or if it is
    beyond `limits` (over_limits says why), which is measured before anything is parsed."""
    if over_limits(line, limits) is not None:
        return None
    try:
        msg = json.loads(line)
    except (ValueError, UnicodeDecodeError, RecursionError):  # RecursionError: nesting deeper than Python's stack
        return None
    if not (isinstance(msg, dict) and msg.get("type") in allowed and isinstance(msg.get("content"), dict)):
        return None
    return msg


def jsonable(value):
    """`value` with NaN and infinity replaced by None."""
    if isinstance(value, float) and (value != value or value in (float("inf"), float("-inf"))):
        return None
    if isinstance(value, dict):
        return {k: jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [jsonable(v) for v in value]
    return value
