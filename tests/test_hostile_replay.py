"""A script's launches replayed alone against their own program: the inputs a replay uses are the
listing run's own files, written by the program's process, so the program can swap them for links
or bytes of another size. The worker keeps only plain files of exactly the size the launch's record
says (a spoiled launch is not kept, and selecting it runs the whole program again, said before it
runs), and only for the owner: nothing of one person's run reaches another's replay.

Real runs: the session's app, real workers, jailed run processes, Triton's interpreter on this CPU.
"""
import os

import pytest

from app import socketio
from sandbox.run.replay import RAN_BYTES, ran_name
from tests.test_runs import collect_until_result
from tests.support.apps import running_app
from tests.test_script import program
from tests.test_script_launches_ahead import kept_run

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


# After its launches, the program plants what a replay would show of them as they ran (sandbox.run.replay:
# `ran`): a link in place of launch 1's, one past the bytes kept of a run in place of launch 0's.
PLANTED_RUNS = program("axpy_clamp.py") + '''
import json
import os
os.remove("launch-inputs/1.ran.json")
os.symlink("/etc/passwd", "launch-inputs/1.ran.json")
with open("launch-inputs/0.ran.json", "w") as f:
    f.write(json.dumps({"trace": {}, "ms": 1.0, "trace_pid": None, "padding": " " * (RAN_BYTES + 1)}))
'''.replace("RAN_BYTES", str(RAN_BYTES))


@pytest.fixture(scope="module")
def own_root(tmp_path_factory):
    """An app whose RUN_ROOT the test knows: what its worker keeps of an owner's run is looked at."""
    root = tmp_path_factory.mktemp("replay")
    with running_app(root, WORKERS=1, RUN_ROOT=str(root / "runs")) as app:
        yield app


@pytest.mark.cpu_only  # the interpreter keeps a launch's run (a GPU host replays the launch)
def test_a_planted_run_of_a_launch_is_not_kept_and_its_selection_launches_it(own_root):
    app, person = own_root, own_root.test_client()
    honest = {"version": 1, "mode": "script", "source": program("axpy_clamp.py"), "options": {}}
    assert person.post("/api/run", json=honest).get_json()["status"] == "ok"
    assert {ran_name(0), ran_name(1)} <= set(os.listdir(kept_run(app, person)))  # an honest run's are kept
    spec = {**honest, "source": PLANTED_RUNS}
    first = person.post("/api/run", json=spec).get_json()
    assert first["status"] == "ok" and first["launches"]["replay"]["kept"] == [0, 1], first["error"]
    kept = kept_run(app, person)
    assert not {ran_name(0), ran_name(1)} & set(os.listdir(kept))  # its inputs kept, not those
    for index in (0, 1):
        shown = person.post("/api/run", json={**spec, "options": {"launch": index}}).get_json()
        assert shown["status"] == "ok" and shown["launches"]["replay"]["replayed"], shown["error"]
        assert any("replayed alone" in note for note in shown["notes"])  # launched again, from its inputs
        assert shown["trace"]["grid"] == first["launches"]["list"][index]["grid"]
