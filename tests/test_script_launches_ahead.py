"""After a program's run, its other kept launches are replayed ahead (sandbox.worker.ahead) while its
person reads the result: a click on one finds its whole replay made, on whichever worker of the host
the click lands; on a GPU host a replay ahead gives the GPU back to any run. The server's check of
each launch is made as the program goes on (sandbox.worker.checks_ahead)."""
import hashlib
import json
import os
import subprocess
import threading
import time

import pytest

from app.gallery import load_example
from sandbox.worker.ahead import CompileAhead, view_key
from sandbox import protocol
from sandbox.worker.checks_ahead import CheckedLaunches, ChecksAhead, check_key
from sandbox.worker.main import Worker
from sandbox.worker.run_process import Settings
from sandbox.worker.kept_launches import MANIFEST, SHOWING, KeptLaunches, program_key
from sandbox.worker.script_runs import REPLAYED_AHEAD
from tests.support.apps import running_app
from tests.test_shared_kernels import owner_cache

PROGRAM = '''import torch
import triton
import triton.language as tl


@triton.jit
def doubled(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=offs < n) * 2, mask=offs < n)


@triton.jit
def negated(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, -tl.load(x_ptr + offs, mask=offs < n), mask=offs < n)


x = torch.randn(300)
out = torch.empty_like(x)
doubled[(3,)](x, out, 300, BLOCK=128)
negated[(5,)](x, out, 300, BLOCK=64)
'''


@pytest.fixture(scope="module")
def app(tmp_path_factory):
    root = tmp_path_factory.mktemp("ahead")
    with running_app(root, WORKERS=1, RUN_ROOT=str(root / "runs")) as app:
        yield app


def run(client, **options):
    spec = {"version": 1, "mode": "script", "source": PROGRAM,
            "options": {"check": True, "trace": True, "bench": True, "ir": True, **options}}
    result = client.post("/api/run", json=spec).get_json()
    assert result["status"] == "ok", result["error"]
    return result


def settled(app, client, timeout_s=90, quiet_s=3.0):
    """The owner's kernels once nothing has been added to them for `quiet_s` and no launch is being
    replayed ahead (in the interpreter a replay's IR comes after its trace and timing)."""
    entries, since, deadline = owner_cache(app, client), time.monotonic(), time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        time.sleep(0.5)
        now = owner_cache(app, client)
        if now != entries or os.path.exists(os.path.join(kept_run(app, client), SHOWING)):
            entries, since = now, time.monotonic()
        elif time.monotonic() - since >= quiet_s:
            return entries
    raise AssertionError("the owner's kernels kept changing")


def test_a_click_on_another_launch_finds_it_compiled_ahead(app):
    person = app.test_client()
    shown = run(person)["launches"]["selected"]
    kept = settled(app, person)
    other = 1 - shown
    clicked = run(person, launch=other)
    assert clicked["launches"]["replay"]["replayed"] and clicked["ir"] is not None
    assert owner_cache(app, person) == kept  # nothing left for the click to compile


def test_a_run_of_a_foreign_program_compiles_nothing_ahead(app):
    person = app.test_client()
    spec = {"version": 1, "mode": "script", "source": PROGRAM.replace("* 2", "* 3"),
            "options": {"check": True, "trace": True, "bench": True, "ir": True}}
    result = person.post("/api/run", json={"spec": spec, "from_link": True}).get_json()
    assert result["status"] == "ok", result["error"]
    time.sleep(3)
    assert owner_cache(app, person) == []


def kept_run(app, client):
    """The owner's kept launches (sandbox.worker.kept_launches), digested as the dispatcher does."""
    with client.session_transaction() as session:
        owner = session["owner"]
    return os.path.join(app.config["RUN_ROOT"], "kept-launches", hashlib.sha256(owner.encode()).hexdigest()[:32])


def wait_for(path, timeout_s=90):
    deadline = time.monotonic() + timeout_s
    while not os.path.exists(path):
        assert time.monotonic() < deadline, f"{path} never came"
        time.sleep(0.2)


def test_a_click_shows_its_launch_as_replayed_while_its_person_read(app):
    person = app.test_client()
    other = 1 - run(person)["launches"]["selected"]
    made = os.path.join(kept_run(app, person), f"shown.{other}.json")
    wait_for(made)
    ahead = run(person, launch=other)
    assert REPLAYED_AHEAD in ahead["notes"]
    os.unlink(made)
    replayed = run(person, launch=other)  # made now, as a click without it is
    assert REPLAYED_AHEAD not in replayed["notes"]
    for part in ("trace", "launches", "server_check", "check"):
        assert ahead.get(part) == replayed.get(part), part
    assert ahead["ir"]["ptx"] == replayed["ir"]["ptx"]


# Five big launches, then the small one shown, all on the GPU: each replay ahead (trace, timing, IR) takes
# ~0.5 s there.
MANY_BIG = PROGRAM.replace("x = torch.randn(300)", """DEVICE = triton.runtime.driver.active.get_active_torch_device()
x = torch.randn(300, device=DEVICE)""").replace("doubled[(3,)](x, out, 300, BLOCK=128)", """y = torch.randn(1 << 22, device=DEVICE)
for _ in range(5):
    doubled[(1 << 14,)](y, torch.empty_like(y), 1 << 22, BLOCK=256)""")


@pytest.mark.gpu
def test_on_a_gpu_another_persons_run_ends_a_replay_ahead_and_a_click_replays_its_launch_itself(app):
    person, other = app.test_client(), app.test_client()
    spec = {"version": 1, "mode": "script", "source": MANY_BIG,
            "options": {"check": True, "trace": True, "bench": True, "ir": True}}
    first = person.post("/api/run", json=spec).get_json()
    assert first["status"] == "ok" and first["launches"]["selected"] == 5, first["error"]
    kept = kept_run(app, person)
    wait_for(os.path.join(kept, "shown.0.json"))
    form = load_example("vector_add")["spec"]
    assert other.post("/api/run", json=form).get_json()["status"] == "ok"
    # The GPU went to that run: the replay ahead ended, whatever it had not reached left to its click.
    assert not os.path.exists(os.path.join(kept, SHOWING))
    left = [i for i in range(1, 5) if not os.path.exists(os.path.join(kept, f"shown.{i}.json"))]
    assert left, "the replay ahead went on beside another person's run"
    time.sleep(1)
    assert [i for i in left if os.path.exists(os.path.join(kept, f"shown.{i}.json"))] == []  # not begun again
    clicked = person.post("/api/run", json={**spec, "options": {**spec["options"], "launch": left[-1]}}).get_json()
    assert clicked["status"] == "ok" and REPLAYED_AHEAD not in clicked["notes"], clicked["error"]
    assert clicked["timings"]["kernel_ms"]["median"] > 0


# The launch shown by default is the last kernel's (1); the one to click, 0, takes a while in the interpreter.
def checked_ahead(app):
    """The host's verdicts of the server's checks made ahead (sandbox.worker.checks_ahead)."""
    root = os.path.join(app.config["RUN_ROOT"], "checked-launches")
    verdicts = {}
    for name in sorted(os.listdir(root)) if os.path.isdir(root) else []:
        if name.endswith(".json"):
            with open(os.path.join(root, name)) as f:
                verdicts[name] = json.load(f)
    return verdicts


# Launch 0 is made, then the program goes on for a while before its last launch (the one shown).
GOES_ON = PROGRAM.replace("import torch", "import time\n\nimport torch").replace(
    "negated[(5,)]", "time.sleep(4)\nnegated[(5,)]")


def test_the_servers_check_of_a_launch_is_made_while_its_program_goes_on(app):
    person = app.test_client()
    spec = {"version": 1, "mode": "script", "source": GOES_ON.replace("* 2", "* 5"),  # no verdict of another test's
            "options": {"check": True, "trace": True, "bench": True, "ir": True}}
    before = checked_ahead(app)
    first = person.post("/api/run", json=spec).get_json()
    assert first["status"] == "ok" and first["launches"]["selected"] == 1, first["error"]
    made = [verdict for name, verdict in checked_ahead(app).items() if name not in before]
    assert {"launch": 0, "bounds": "ok", "message": None} in made  # as the result came: made as the program slept
    clicked = person.post("/api/run", json={**spec, "options": {**spec["options"], "launch": 0}}).get_json()
    assert clicked["server_check"] == {"launch": 0, "bounds": "ok", "message": None}


def test_a_check_is_the_same_whatever_the_program_made_of_its_launch():
    """A launch's record as the program is about to make it names the same check as the record the
    result lists, with its time and the program's own bounds verdict filled in."""
    record = {"index": 0, "kernel": "doubled", "grid": [3, 1, 1], "args": [], "ms": None, "bounds": "unchecked"}
    listed = {**record, "ms": 1.25, "bounds": "ok"}
    assert check_key(PROGRAM, record) == check_key(PROGRAM, listed)
    assert check_key(PROGRAM, record) != check_key(PROGRAM, {**record, "grid": [4, 1, 1]})
    assert check_key(PROGRAM, record) != check_key(GOES_ON, record)


def test_a_run_has_no_more_launches_checked_as_it_goes_on_than_an_honest_program_says(tmp_path):
    worker = Worker.__new__(Worker)
    worker.checks_ahead = ChecksAhead(None, CheckedLaunches(str(tmp_path)), None, room=lambda: False)
    launched = worker.checks_as_launched("a" * 32, PROGRAM)
    for index in range(protocol.SAID_AS_LAUNCHED + 8):  # a run process that says more than its program made
        launched({"index": index, "kernel": "doubled"})
    assert [job["launch"]["index"] for _, job in worker.checks_ahead.waiting.values()] == list(
        range(protocol.SAID_AS_LAUNCHED))
    worker.checks_as_launched("a" * 32, GOES_ON)  # the owner's next program: the older one's checks are stale
    assert not worker.checks_ahead.waiting


SLOW_OTHER = PROGRAM.replace("doubled[(3,)](x, out, 300, BLOCK=128)", """y = torch.randn(1 << 16)
doubled[(1024,)](y, torch.empty_like(y), 1 << 16, BLOCK=64)""")


def test_a_click_that_finds_its_launch_being_replayed_ahead_waits_for_it(app):
    person = app.test_client()
    spec = {"version": 1, "mode": "script", "source": SLOW_OTHER,
            "options": {"check": True, "trace": True, "bench": True, "ir": True}}
    first = person.post("/api/run", json=spec).get_json()
    assert first["status"] == "ok" and first["launches"]["selected"] == 1, first["error"]
    clicked = person.post("/api/run", json={**spec, "options": {**spec["options"], "launch": 0}}).get_json()
    assert clicked["status"] == "ok", clicked["error"]
    assert REPLAYED_AHEAD in clicked["notes"]  # its 1024 programs' replay was under way: waited for, not begun again
    assert clicked["server_check"] == {"launch": 0, "bounds": "ok", "message": None}


def test_a_click_follows_the_launch_another_worker_replays_ahead_only_while_that_worker_lives(tmp_path, monkeypatch):
    spec = {"version": 1, "mode": "script", "source": PROGRAM, "options": {"launch": 1}}
    kept, owner = KeptLaunches(str(tmp_path), 1 << 20), "a" * 32
    os.makedirs(kept.owner_dir(owner))
    with open(os.path.join(kept.owner_dir(owner), MANIFEST), "w") as f:
        json.dump({"key": program_key(spec), "records": {}, "listing": {}}, f)
    monkeypatch.setenv("TRITON_CACHE_DIR", str(tmp_path / "cache"))
    ahead = CompileAhead(Settings.from_environment(False, False), None, None, None, kept)  # an interpreter host's

    def marked_by(pid, launches=(1,)):
        with open(os.path.join(kept.owner_dir(owner), SHOWING), "w") as f:
            json.dump({"view": view_key(spec), "launches": list(launches), "pid": pid}, f)

    def follow(spec):
        sent, started = [], time.monotonic()
        result = ahead.follow_shown(owner, spec, 10, lambda part, content: sent.append((part, content, result_kept())))
        return result, sent, time.monotonic() - started

    def result_kept():
        return os.path.exists(os.path.join(kept.owner_dir(owner), "shown.1.json"))

    worker = subprocess.Popen(["sleep", "30"])  # another worker of the host, alive
    try:
        marked_by(worker.pid, launches=(0, 1))  # launch 1 after 0, whose time is not known: its click replays it
        assert follow(spec)[0] is None and follow(spec)[2] < 1
        marked_by(worker.pid)
        trace, result = {"programs": []}, {"status": "ok", "notes": []}
        threading.Timer(0.3, kept.keep_shown, (owner, spec, view_key(spec), 1), {"part": "trace", "content": trace}).start()
        threading.Timer(0.8, kept.keep_shown, (owner, spec, view_key(spec), 1), {"result": result}).start()
        shown, sent, _ = follow(spec)
        assert shown == result and sent == [("trace", trace, False)]  # the part streamed before the result came
        assert not os.path.exists(os.path.join(kept.owner_dir(owner), "shown.1.trace.json"))  # the result holds it
        assert follow({**spec, "options": {"launch": 0}})[0] is None  # not one it replays
    finally:
        worker.kill()
        worker.wait()
    marked_by(worker.pid)  # a worker that died replays nothing: no wait
    os.unlink(os.path.join(kept.owner_dir(owner), "shown.1.json"))
    shown, _, waited_s = follow(spec)
    assert shown is None and waited_s < 1


def test_a_click_waits_for_a_replay_ahead_that_reaches_its_launch_sooner_than_its_own_would_end(tmp_path):
    """Launches replayed ahead in their order: a click on one behind others follows that replay where the
    ones before it took no longer in the program's run than it did, and replays it itself otherwise."""
    kept, owner = KeptLaunches(str(tmp_path), 1 << 20), "a" * 32
    os.makedirs(kept.owner_dir(owner))

    def took(**ms):
        with open(os.path.join(kept.owner_dir(owner), MANIFEST), "w") as f:
            json.dump({"records": {name.removeprefix("l"): {"index": int(name[1:]), "ms": t} for name, t in ms.items()}}, f)

    took(l0=400.0, l1=900.0, l2=300.0)
    assert kept.due(owner, [0, 1, 2], 0)  # under way
    assert kept.due(owner, [0, 1, 2], 1)  # after 0.4 s of others, itself 0.9 s
    assert not kept.due(owner, [0, 1, 2], 2)  # after 1.3 s of others, itself 0.3 s
    with open(os.path.join(kept.owner_dir(owner), "shown.0.json"), "w") as f:
        json.dump({}, f)
    assert not kept.due(owner, [0, 1, 2], 0)  # made: its click shows it
    took(l0=400.0, l1=900.0, l2=1000.0)
    assert kept.due(owner, [0, 1, 2], 2)  # 0 made: 0.9 s before it, itself 1 s
    took(l1=900.0, l2=1000.0)
    assert not kept.due(owner, [0, 1, 2, 3], 3)  # not a launch it knows the time of


# A program that writes launches to check on its run's message pipe, as its capture would, forged.
SAYS_MORE = PROGRAM.replace("import torch", "import json\nimport os\nimport sys\n\nimport torch") + '''
frame = sys._getframe()
while "run_id" not in frame.f_locals:
    frame = frame.f_back
for index in range(200):
    forged = {"index": index, "kernel": "doubled", "grid": [index + 1, 1, 1], "args": [], "num_warps": 4, "num_stages": 3}
    message = {"type": "launched", "id": "0", "run_id": frame.f_locals["run_id"], "content": {"launch": forged}}
    os.write(4, (json.dumps(message) + "\\n").encode())
'''


def test_a_program_that_says_more_launches_than_it_makes_has_no_more_checked_than_an_honest_one(app):
    person = app.test_client()
    before = checked_ahead(app)
    spec = {"version": 1, "mode": "script", "source": SAYS_MORE, "options": {"trace": True}}
    result = person.post("/api/run", json=spec).get_json()
    assert result["status"] == "ok" and result["launches"]["total"] == 2, result["error"]
    made, deadline, quiet_since = 0, time.monotonic() + 90, time.monotonic()
    # Until its two honest launches are checked and no verdict has come for a while (checks ahead run at
    # idle priority: on a busy host they wait their turn).
    while made < 2 or time.monotonic() - quiet_since < 4:
        assert time.monotonic() < deadline, "its checks never settled"
        time.sleep(0.5)
        now = len(set(checked_ahead(app)) - set(before))
        made, quiet_since = now, quiet_since if now == made else time.monotonic()
    assert 2 <= made <= protocol.SAID_AS_LAUNCHED  # its two launches and some of its forged ones, no more
    assert run(person)["status"] == "ok"  # its worker serves on
