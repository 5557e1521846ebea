"""Script mode's results against their own program: a script runs in the process that captures its
launches and builds its result, so the program can unhook the capture, rewrite its records, or
write a result of its own on the run's message pipe. None of that can be stopped from inside that
process; what holds is that the result says so: its worker, out of the program's reach, marks every
section the run process sent as the program's claim (`result.claims`, sandbox.result), and keeps
nothing a script's run says for later runs (a passed bounds check, a reference's time).

Real runs: the session's app, real workers, jailed run processes, Triton's interpreter on this CPU.
"""
import pytest

from app import socketio
from sandbox import result as results
from tests.test_runs import collect_until_result

pytestmark = pytest.mark.integration

KERNEL = '''import gc
import json
import os
import sys

import torch
import triton
import triton.language as tl
from triton.runtime import interpreter


@triton.jit
def spill(x_ptr, B: tl.constexpr):
    offs = tl.arange(0, B)
    tl.store(x_ptr + offs, tl.load(x_ptr + offs) + 1)  # no mask: past x's 4 elements


buffer = torch.zeros(64)
x = buffer[:4]  # a view: the launch's writes past its end land in `buffer`, where they can be seen
'''

# The capture's hook closes over Triton's own launch: put that back, and launch out of bounds.
UNHOOKED = KERNEL + '''
hooked = interpreter.InterpretedFunction.run
original = next(cell.cell_contents for cell in hooked.__closure__ or ()
                if getattr(cell.cell_contents, "__qualname__", "") == "InterpretedFunction.run")
interpreter.InterpretedFunction.run = original
spill[(1,)](x, B=64)
print("wrote past x:", buffer[4:8].tolist())
'''

# The capture stops the launch before its first out-of-bounds access; the program catches that,
# takes the error back and rewrites its launch list: its verdict, its time, a launch more.
REWRITTEN = KERNEL + '''
capture = next(o for o in gc.get_objects() if type(o).__name__ == "Capture")
try:
    spill[(1,)](x, B=64)
except BaseException:
    pass
capture.error = None
capture.launches[0].update(bounds="ok", ms=0.0001)
capture.launches.append({**capture.launches[0], "index": 1, "kernel": "vector_add", "grid": [1024, 1, 1]})
capture.total = 2
capture.options["launch"] = 0
print("rewritten")
'''

# The whole result, written by the program on the run's message pipe (the descriptor its capture
# would write on), verdicts and times its own, marked as checked by no one; and a passed bounds check
# and a reference's time for the server to keep. Then the process ends before the real one is sent.
FORGED = KERNEL + '''
frame = sys._getframe()
while "run_id" not in frame.f_locals:
    frame = frame.f_back
run_id = frame.f_locals["run_id"]
result = next(o for o in gc.get_objects() if isinstance(o, dict) and "launches" in o and o.get("run_id", 0) is None)
launch = {"index": 0, "kernel": "spill", "line": 20, "grid": [1, 1, 1], "args": [], "num_warps": 4,
          "num_stages": 3, "config": None, "ms": 0.0001, "bounds": "ok"}
summary = {"median": 0.0001, "p20": 0.0001, "p80": 0.0001, "n": 100}
result.update(status="ok", error=None, claims=None, notes=[],
              launches={"total": 1, "selected": 0, "list": [launch], "program_ms": 1.0, "replay": None},
              check={"ok": True, "outputs": {}})
def send(type, **content):
    os.write(4, (json.dumps({"type": type, "id": "0", "run_id": run_id, "content": content}) + "\\n").encode())
send("sanitized")
send("timed", key="f" * 64, reference_ms=summary)
send("result", result=result)
os._exit(0)
'''


def run_script(app, source):
    """(result, events) of one script run through the real server, as the page sends it."""
    client = socketio.test_client(app)
    ack = client.emit("run", {"spec": {"mode": "script", "source": source, "options": {}}}, callback=True)
    assert "run_id" in ack, ack
    events = collect_until_result(client, ack["run_id"], timeout_s=90)
    return events[-1]["args"][0]["result"], events


def assert_the_programs_word(result):
    """Every section the run process sent is marked as the program's claim, whatever it wrote."""
    assert result["claims"] == list(results.PROGRAM_CLAIMS)
    assert {"status", "error", "launches", "trace", "timings", "notes", "check"} <= set(result["claims"])
    assert results.problems(result) == []


def kept_for_later(app):
    """What the server keeps of runs for later ones: launches that passed the bounds check, and
    reference timings, on every slot."""
    slots = app.extensions["dispatcher"].slots
    sanitized = set(slots[0].shared.sanitized.keys)
    timed = {key for slot in slots for kept in slot.references.times.values() for key in kept}
    return sanitized, timed


def test_a_program_that_unhooks_the_capture_launches_unseen_and_its_ok_is_its_own(app):
    result, _ = run_script(app, UNHOOKED)
    assert "wrote past x: [1.0, 1.0, 1.0, 1.0]" in result["stdout"]  # the attack did launch out of bounds
    assert result["launches"]["total"] == 0 and result["status"] == "ok"  # what the program lets be seen
    assert_the_programs_word(result)
    assert result["server_check"] is None  # the server saw no launch to check


def test_a_program_that_rewrites_its_launch_list_and_verdicts_is_marked_and_checked_again(app):
    result, _ = run_script(app, REWRITTEN)
    assert "rewritten" in result["stdout"]
    listed = result["launches"]["list"]
    assert [launch["kernel"] for launch in listed] == ["spill", "vector_add"] and listed[0]["bounds"] == "ok"
    assert_the_programs_word(result)
    # The shown launch, checked again where none of the program runs: the kernel from the source the
    # server kept, launched as the record says, goes out of bounds.
    check = result["server_check"]
    assert check["launch"] == 0 and check["bounds"] == "out_of_bounds", check
    assert "loads `x` at offsets 4..63, but `x` has 4 elements" in check["message"]


def test_a_program_that_forges_its_result_verdicts_and_times_gets_them_marked_and_kept_nowhere(app):
    sanitized_before, timed_before = kept_for_later(app)
    result, events = run_script(app, FORGED)
    assert result["launches"]["list"][0]["ms"] == 0.0001 and result["check"] == {"ok": True, "outputs": {}}
    assert_the_programs_word(result)  # its `claims: null` replaced
    check = result["server_check"]  # its record names no argument to launch with
    assert check["bounds"] == "unchecked" and "could not check" in check["message"], check
    sanitized_after, timed_after = kept_for_later(app)
    assert sanitized_after == sanitized_before and "f" * 64 not in timed_after and timed_after <= timed_before


def test_an_honest_script_is_the_programs_word_too_and_a_form_run_is_not_marked(app, spec):
    result, _ = run_script(app, KERNEL + "spill[(1,)](buffer, B=64)\n")
    assert result["status"] == "ok" and result["launches"]["list"][0]["bounds"] == "ok", result["error"]
    assert_the_programs_word(result)
    assert result["server_check"] == {"launch": 0, "bounds": "ok", "message": None}
    client = socketio.test_client(app)
    ack = client.emit("run", {"spec": spec}, callback=True)
    form = collect_until_result(client, ack["run_id"])[-1]["args"][0]["result"]
    assert form["status"] == "ok" and form["claims"] is None
