"""A script's launches replayed alone against their own program: the inputs a replay uses are the
listing run's own files, written by the program's process, so the program can swap them for links
or bytes of another size. The worker keeps only plain files of exactly the size the launch's record
says (a spoiled launch is not kept, and selecting it runs the whole program again, said before it
runs), and only for the owner: nothing of one person's run reaches another's replay.

Real runs: the session's app, real workers, jailed run processes, Triton's interpreter on this CPU.
"""
import pytest

from app import socketio
from tests.test_runs import collect_until_result
from tests.test_script import program

pytestmark = pytest.mark.integration

# After its launches, the program spoils what its run wrote of them: a link in place of launch 1's
# first tensor, two bytes more on launch 0's output.
SPOILED = program("axpy_clamp.py") + '''
import os
os.remove("launch-inputs/1.x_ptr")
os.symlink("/etc/passwd", "launch-inputs/1.x_ptr")
with open("launch-inputs/0.out_ptr", "ab") as f:
    f.write(b"xx")
'''


def run(app, client, source, **options):
    ack = client.emit("run", {"spec": {"mode": "script", "source": source, "options": options}}, callback=True)
    assert "run_id" in ack, ack
    events = collect_until_result(client, ack["run_id"], timeout_s=90)
    return events[-1]["args"][0]["result"], [e["args"][0]["message"] for e in events if e["name"] == "run_status"]


def test_planted_links_and_sizes_are_not_kept_and_a_selection_runs_the_program(app):
    client = socketio.test_client(app)
    first, _ = run(app, client, SPOILED)
    assert first["status"] == "ok", first["error"]
    assert first["launches"]["replay"]["kept"] == [] and "not kept" in first["launches"]["replay"]["why"]
    shown, statuses = run(app, client, SPOILED, launch=1)
    assert shown["stdout"].count("largest gap from torch") == 1  # the whole program ran again
    assert any(s.startswith("re-running the whole program to show launch 1: its inputs were not kept") for s in statuses)
    assert not shown["launches"]["replay"]["replayed"] and shown["server_check"]["bounds"] == "ok"


def test_one_persons_kept_inputs_are_never_another_persons_replay(app):
    source = program("axpy_clamp.py") + "\nprint('ran whole')\n"
    owner, other = socketio.test_client(app), socketio.test_client(app)
    first, _ = run(app, owner, source)
    assert first["launches"]["replay"]["kept"] == [0, 1]
    theirs, statuses = run(app, other, source, launch=1)
    assert "ran whole" in theirs["stdout"] and not theirs["launches"]["replay"]["replayed"]
    assert any(s.startswith("re-running the whole program to show launch 1: the inputs kept") for s in statuses)
    mine, _ = run(app, owner, source, launch=1)
    assert "ran whole" not in mine["stdout"] and mine["launches"]["replay"]["replayed"]
