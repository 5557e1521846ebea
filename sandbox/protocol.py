"""The server <-> worker protocol: JSON lines, one message per line, built by one function.

Every message: {"type", "id", "run_id", "content"}. The server sends `job` (its spec normalized by
sandbox.spec, the digest of the run's owner, `from_link`, and `checked_before`: this launch passed
the bounds check before; the worker's settings come once, in
its environment) and, once, `warm` (the gallery's specs as shipped, for sandbox.warming: never a
user's); a worker sends `ready` once warm, `warming` (its warm-up's progress) at any time between
jobs, then for each job any number of `status` and
`stdout`, `checked` (the launch passed the bounds check), `partial` (a section of the result as soon as
it is ready: {part, content}, each part at most once, sandbox.result.PARTS), `timed` (the
reference's timing, {key, reference_ms}, which the worker's slot keeps for later runs of its owner:
sandbox.pipeline.reference_key), and exactly one `result`
(sandbox.result), which is the run process's own line, passed on unchanged once its shape is checked. Between a run process and its worker there is also
`ready` (warm, with the isolation steps taken).
A worker's output is untrusted: the server parses it with `decode`, which never executes anything.
"""
import json
import uuid

SERVER_TYPES = ("job", "warm")
WORKER_TYPES = ("ready", "status", "stdout", "checked", "partial", "timed", "result", "warming")
RUN_TYPES = ("status", "checked", "partial", "timed", "result")  # a run process's messages to its worker, once it has its job
MAX_LINE_BYTES = 16 * 1024 * 1024


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


def decode(line, allowed=WORKER_TYPES):
    """Parse one line; None if it is not a well-formed message of an allowed type."""
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
