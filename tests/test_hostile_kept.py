"""Nothing of one person's code reaches another's runs through what is kept for later runs: code that
is not the owner's own (a teacher's puzzle, someone else's shared link) never writes what a later
run of the owner reads (compiled kernels and their IR, reference timings, passed bounds checks),
whatever the route: a run, a compile ahead, a step, a sweep, a script, a graded run. And a run of the
owner's own code keeps a timing only where a later run of the same reference looks.

Each attack runs on real workers and is followed by the victim's own run, which must find nothing
planted: the entry a planting run leaves in its kernel cache, named as Triton names one, is not lent
to the victim's next run nor kept on the host; a forged 31,337 ms reference timing is not reported.
The unit tests below check that every route's job is made through the one decision
(app.dispatch.jobs.provenance) and that the page says whose code it sends from one module."""
import glob
import json
import os
import pathlib
import re
import secrets
import tempfile
import time

import pytest

from app import socketio
from app.dispatch import jobs as jobs_module
from app.dispatch.interface import QueueFull
from app.owners import key as owner_key
from sandbox.protocol import FOREIGN, OWN
from tests.support import attacks as H
from tests.support import ROOT
from tests.support.kernels import VECTOR_ADD, vector_add_spec
from tests.support.hostile import puzzle_body
from tests.support.tritons import kept_dir
from tests.test_runs import collect_until_result

FORGED_MS = 31337.0
KEPT_NOTE = "measured in an earlier run of the same reference"
# Module-level code of a victim's own run: the names in the kernel cache it was lent.
LIST_LENT = ("\nimport json as _json, os as _os\n"
             "print('LENT ' + _json.dumps(sorted(_os.listdir(_os.environ['TRITON_CACHE_DIR']))), flush=True)\n")
# Module-level code that forges the reference's timing a run reports to its worker (`timed`), under
# the key a run of the references EXPRS (the run's own, with None) computes.
FORGE_TIMING = """
import sandbox.run.pipeline as _pipeline
def _forged(self, timer, before):
    if not self.spec['reference']:
        return None
    exprs = EXPRS or list(self.spec['reference'].values())
    key = _pipeline.reference_key(exprs, before, self.result['device'], timer.__name__)
    forged = {'median': FORGED, 'p20': FORGED, 'p80': FORGED, 'n': 10}
    self.emit('timed', {'key': key, 'reference_ms': forged})
    return forged
_pipeline.Run.reference_time = _forged
"""


# ---------------------------------------------------------------- the app and the victim's view

@pytest.fixture(scope="module")
def kept(tmp_path_factory):
    """One worker (its slot keeps the reference timings: every run lands on it) and no gallery
    warm-up: whatever a kernel cache holds, a test's runs put there."""
    from app import create_app
    from tests.support.apps import wait_until_ready
    root = tmp_path_factory.mktemp("kept")
    app = create_app({"TESTING": True, "DATABASE": str(root / "db.sqlite"), "RUN_ROOT": str(root / "runs"),
                      "WORKERS": 1, "SHARED_KERNELS": 0, "RUN_TIMEOUT_S": 30.0})
    try:
        wait_until_ready(app)
        yield app
    finally:
        app.extensions["dispatcher"].stop()


def person(app):
    """A browser: its own session (owner), for HTTP and Socket.IO alike."""
    browser = app.test_client()
    browser.get("/")
    return browser, socketio.test_client(app, flask_test_client=browser)


def planted_name():
    return "planted" + secrets.token_hex(8)


def plant(name):
    """Python that plants an entry named `name` in the kernel cache of the run it runs in."""
    return H.GRADED_PLANT.replace("KEY", repr(name))


def plant_expression(name):
    return f"exec({plant(name)!r}) or torch.randn(N)"


def run(browser, spec, from_link=False):
    response = browser.post("/api/run", json={"spec": spec, "from_link": True} if from_link else spec)
    assert response.status_code == 200, response.get_data(as_text=True)[:2000]
    return response.get_json()


def lent_to_own_run(browser):
    """The names in the kernel cache the person's next own run is lent."""
    result = run(browser, vector_add_spec(n=1024, block=256, source=VECTOR_ADD + LIST_LENT))
    assert result["status"] == "ok", result.get("error")
    lines = [line for line in result["stdout"].splitlines() if line.startswith("LENT ")]
    assert lines, result["stdout"]
    return json.loads(lines[0][len("LENT "):])


def kept_on_host(app, browser):
    with browser.session_transaction() as session:
        owner = session["owner"]
    directory = os.path.join(kept_dir(app.config["RUN_ROOT"], "kernel-caches"), owner_key(owner))
    return sorted(os.listdir(directory)) if os.path.isdir(directory) else []


def assert_nothing_planted(app, browser, name):
    lent = lent_to_own_run(browser)
    assert name not in lent, f"the victim's own run was lent the planted entry: {lent}"
    assert name not in kept_on_host(app, browser), "the planted entry was kept in the victim's kernels on the host"


def teachers_puzzle(app, **changes):
    """A teacher's puzzle, stored as POST /api/puzzles stores one once its checks pass (the checks are
    test_hostile_owners' and test_puzzles'); the spec its page runs."""
    from app.course import puzzles
    body = json.loads(puzzle_body(**changes))
    body["title"] = "Puzzle " + secrets.token_hex(6)
    with app.app_context():
        name = puzzles.save(puzzles.from_spec(body))
    return app.test_client().get(f"/api/puzzles/{name}").json["spec"]


def compile_answer(page, ack, timeout_s=90):
    """The compile_result of a compile ahead the server took, or the ack's error if it took none."""
    if "compile_id" not in ack:
        return ack
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        for event in page.get_received():
            if event["name"] == "compile_result" and event["args"][0]["compile_id"] == ack["compile_id"]:
                return event["args"][0]
        time.sleep(0.05)
    raise AssertionError(f"no answer to the compile ahead {ack['compile_id']}")


def timings_of(result):
    assert result["status"] == "ok", result.get("error")
    return result["timings"]


# ---------------------------------------------------------------- the attacks

@pytest.mark.integration
def test_compile_ahead_on_a_teachers_puzzle_page_plants_nothing_in_the_students_kernels(kept):
    name = planted_name()
    spec = teachers_puzzle(kept, inputs={"x": plant_expression(name), "y": "torch.randn(N)", "out": "torch.empty(N)"})
    student, page = person(kept)
    answer = compile_answer(page, page.emit("compile", {"spec": {**spec, "source": VECTOR_ADD}}, callback=True))
    assert_nothing_planted(kept, student, name)
    assert (answer.get("error") or {}).get("type") == "NotCompiledAhead", answer  # nothing of it could be kept


@pytest.mark.integration
def test_compile_ahead_of_a_shared_links_code_plants_nothing(kept):
    """The page never compiles a link's code ahead; a client that asks anyway is refused."""
    name = planted_name()
    viewer, page = person(kept)
    link = vector_add_spec(n=1024, block=256, source=VECTOR_ADD + plant(name))
    answer = compile_answer(page, page.emit("compile", {"spec": link, "from_link": True}, callback=True))
    assert_nothing_planted(kept, viewer, name)
    assert (answer.get("error") or {}).get("type") == "NotCompiledAhead", answer


@pytest.mark.integration
def test_stepping_through_a_teachers_puzzle_plants_nothing_in_the_students_kernels(kept):
    name = planted_name()
    spec = teachers_puzzle(kept, inputs={"x": plant_expression(name), "y": "torch.randn(N)", "out": "torch.empty(N)"})
    student, _ = person(kept)
    stepped = run(student, {**spec, "source": VECTOR_ADD, "options": {**spec["options"], "step_pid": [0]}})
    assert stepped["steps"] and "GRADED-FINDINGS" in stepped["stdout"], stepped.get("error")  # the plant ran
    assert_nothing_planted(kept, student, name)


@pytest.mark.integration
@pytest.mark.parametrize("route", ["run", "step", "sweep", "script", "ir"])
def test_a_shared_links_code_plants_nothing_whatever_the_route(kept, route):
    """Someone else's link, run as the page runs it (from_link) on each route: its code's entry
    never reaches the viewer's own runs."""
    name = planted_name()
    viewer, _ = person(kept)
    link = vector_add_spec(n=1024, block=256, source=VECTOR_ADD + plant(name))
    link["options"].update({"step": {"step_pid": [1]}, "sweep": {"sweep": {"BLOCK_SIZE": [128, 256]}},
                            "ir": {"ir": True}}.get(route, {}))
    if route == "script":
        link = {"mode": "script", "source": VECTOR_ADD + plant(name), "options": {}}
    result = run(viewer, link, from_link=True)
    assert "GRADED-FINDINGS" in result["stdout"], (result["status"], result.get("error"))  # the plant ran
    assert_nothing_planted(kept, viewer, name)


@pytest.mark.integration
def test_a_shared_links_forged_reference_timing_is_not_reported_to_the_viewers_own_runs(kept):
    viewer, _ = person(kept)
    forging = VECTOR_ADD + FORGE_TIMING.replace("EXPRS", "None").replace("FORGED", repr(FORGED_MS))
    linked = run(viewer, vector_add_spec(n=1024, block=256, bench=True, source=forging), from_link=True)
    assert timings_of(linked)["reference_ms"]["median"] == FORGED_MS  # the link's own run shows its own claim
    own = timings_of(run(viewer, vector_add_spec(n=1024, block=256, bench=True)))
    assert own["reference_ms"]["median"] != FORGED_MS, "the viewer's own run reported the link's forged timing"
    assert not any(KEPT_NOTE in note for note in own["notes"]), own["notes"]


@pytest.mark.integration
def test_a_run_cannot_keep_a_timing_where_another_references_key_points(kept):
    """A run reports a timing under the key of another reference (`y + x` for its `x + y`): the
    slot keeps it under the key of the spec it sent, where the other reference's run never looks."""
    owner, _ = person(kept)
    colliding = FORGE_TIMING.replace("EXPRS", repr(["y + x"])).replace("FORGED", repr(FORGED_MS))
    run(owner, vector_add_spec(n=1024, block=256, bench=True, source=VECTOR_ADD + colliding))
    other = {**vector_add_spec(n=1024, block=256, bench=True), "reference": {"out": "y + x"}}
    timings = timings_of(run(owner, other))
    assert timings["reference_ms"]["median"] != FORGED_MS, "a run kept a timing under another reference's key"
    assert not any(KEPT_NOTE in note for note in timings["notes"]), timings["notes"]
    again = timings_of(run(owner, other))  # its own timing is kept, where it points
    assert any(KEPT_NOTE in note for note in again["notes"]) and again["reference_ms"] == timings["reference_ms"]


# ---------------------------------------------------------------- the page: the Step tab of a link

@pytest.mark.browser
def test_the_step_tab_of_someone_elses_link_plants_nothing_in_the_viewers_kernels(app, browser, live_server):
    from tests.support.browser import new_page
    from tests.test_browser import open_playground, run_and_wait
    from tests.test_stepper import step_through
    name = planted_name()
    spec = {**vector_add_spec(n=1024, block=256, source=VECTOR_ADD + plant(name)), "options": {"device": "interpreter"}}
    shared = app.test_client().post("/api/snippets", json={"spec": spec, "ui": {"pane": "results", "pid": None}})
    assert shared.status_code == 200, shared.get_data(as_text=True)
    viewer = new_page(browser, console=False)
    sent = []
    viewer.on("request", lambda request: request.method == "POST" and request.url.endswith("/api/run")
              and sent.append(json.loads(request.post_data)))
    try:
        open_playground(viewer, live_server + "/s/" + shared.json["id"])
        assert run_and_wait(viewer, lambda page: page.get_by_role("button", name="Run this shared kernel").click()) == "ok"
        viewer.click('[data-tab="step"]')
        step_through(viewer, [1])
        assert sent and all(body.get("from_link") is True for body in sent), sent
        run_root = app.config["RUN_ROOT"] or os.path.join(tempfile.gettempdir(), "playground-runs")
        caches = os.path.join(run_root, "kernel-caches", "*", "*", name)
        deadline = time.monotonic() + 5  # the collect follows the result
        while time.monotonic() < deadline and not glob.glob(caches):
            time.sleep(0.1)
        assert not glob.glob(caches), "the link's step planted an entry in the viewer's kernel cache"
    finally:
        viewer.context.close()


# ---------------------------------------------------------------- one decision, every route

class Decided(str):
    """Whose code a job is, as the one decision (app.dispatch.jobs.provenance) said it."""


@pytest.fixture
def queued(monkeypatch, tmp_path):
    """(an app without workers, the jobs and compiles its queue was handed): every job is refused as a
    full queue refuses it, so no route waits; the one decision marks what it decides."""
    from app import create_app
    from app.dispatch.jobs import JobQueue
    app = create_app({"START_WORKERS": False, "DATABASE": str(tmp_path / "db.sqlite")})
    handed, decide = [], jobs_module.provenance

    def refuse(queue, job):
        handed.append(job)
        raise QueueFull("full")
    monkeypatch.setattr(jobs_module, "provenance", lambda *args, **kwargs: Decided(decide(*args, **kwargs)))
    monkeypatch.setattr(JobQueue, "put", refuse)
    monkeypatch.setattr(JobQueue, "put_compile", refuse)
    return app, handed


def test_every_routes_job_is_made_through_the_one_decision(queued):
    app, handed = queued
    puzzle = app.test_client().get("/api/puzzles").json["puzzles"][0]["name"]
    puzzle_spec = app.test_client().get(f"/api/puzzles/{puzzle}").json["spec"]
    own = vector_add_spec(n=1024, block=256)
    step = {**own, "options": {**own["options"], "step_pid": [0]}}
    sweep = {**own, "options": {**own["options"], "sweep": {"BLOCK_SIZE": [128, 256]}}}
    script = {"mode": "script", "source": VECTOR_ADD, "options": {}}
    puzzle_step = {**puzzle_spec, "options": {**puzzle_spec["options"], "step_pid": [0]}}
    browser = app.test_client()
    page = socketio.test_client(app, flask_test_client=browser)
    routes = [  # (route, spec, from_link, whose code its job must be)
        *[(route, spec, link, FOREIGN if link else OWN) for route in ("run", "http")
          for spec in (own, step, sweep, script) for link in (False, True)],
        *[(route, spec, False, FOREIGN) for route in ("run", "http") for spec in (puzzle_spec, puzzle_step)],
        ("compile", own, False, OWN),
    ]
    people = lambda: [job for job in handed if not job.owner.startswith("server-")]  # noqa: E731 (not a solution's run)
    for route, spec, link, whose in routes:
        before = len(people())
        body = {"spec": spec, **({"from_link": True} if link else {})}
        if route == "http":
            assert browser.post("/api/run", json=body).status_code in (429, 503)
        else:
            assert "error" in page.emit(route, body, callback=True)
        assert len(people()) == before + 1 and people()[-1].provenance == whose, (route, spec, link)
    for spec, link in ((puzzle_spec, False), (puzzle_step, False), (own, True), (step, True)):  # compiled at run time only
        answer = page.emit("compile", {"spec": spec, "from_link": link}, callback=True)
        assert answer["error"]["type"] == "NotCompiledAhead", answer
    before = len(people())
    assert app.test_client().post("/api/puzzles", json=json.loads(puzzle_body())).status_code in (429, 503)
    assert len(people()) == before + 1 and people()[-1].provenance == FOREIGN  # a teacher's check: no one's own
    # Whatever its route (a solution's run too), every job carries what the one decision said.
    assert handed and all(isinstance(job.provenance, Decided) for job in handed)


def test_foreign_code_is_lent_and_keeps_nothing_and_the_worker_maps_whose_code_once():
    from app.dispatch.jobs import CompileRequest, Job
    from app.dispatch.kept import ReferenceTimes
    from sandbox.protocol import kept_for
    from sandbox.spec import normalize
    own = normalize(vector_add_spec(n=1024, block=256))
    mine, theirs = Job(own, None, "a" * 32), Job(own, None, "a" * 32, from_link=True)
    assert mine.store == owner_key("a" * 32) and mine.launch[0] == mine.store
    assert theirs.store is None and theirs.launch is None  # no bounds-check memory either
    arrived = Job.arrived(theirs.message(), None, 0.0)
    assert arrived.provenance == FOREIGN and arrived.store is None
    assert CompileRequest(own, "a" * 32, None, from_link=True).store is None
    assert CompileRequest({**own, "options": {**own["options"], "puzzle": "add"}}, "a" * 32, None).store is None
    # The worker's one mapping: a job that does not say whose code it is keeps nothing.
    assert kept_for("f" * 32, OWN) == "f" * 32
    assert kept_for("f" * 32, FOREIGN) is None and kept_for("f" * 32, None) is None and kept_for("f" * 32, True) is None
    times = ReferenceTimes()
    times.add(None, "k", "run-key", {"median": 1.0})
    times.add("s", None, "run-key", {"median": 1.0})
    assert times.times == {}
    times.add("s", "k", "run-key", {"median": 1.0})
    assert times.lent("s", "k") == {"run-key": {"median": 1.0}} and times.lent("s", "other") == {}
    assert times.lent(None, "k") == {}


def test_the_page_sends_its_code_to_run_or_compile_from_one_module():
    """Whose code the page shows is said with every run and compile it asks for: they leave through
    static/js/shared/provenance.js and nowhere else, so no route (Run, compile ahead, Step, Compare, a
    script, a program fetched for the diagram) can leave without it."""
    js = pathlib.Path(ROOT, "static", "js")
    senders = []
    for path in sorted(js.rglob("*.js")):
        if path.name != "provenance.js":
            text = re.sub(r"^\s*//.*$", "", path.read_text(encoding="utf-8"), flags=re.M)  # what it does, not what it says
            if re.search(r"""["'`]/api/run["'`]|\.emit\(\s*["'](run|compile)["']|from_link""", text):
                senders.append(str(path.relative_to(js)))
    assert senders == []
    with open(js / "shared" / "provenance.js", encoding="utf-8") as f:
        text = f.read()
    assert text.count("from_link: true") == 1 and '"/api/run"' in text


def test_what_compiles_ahead_keep_on_the_hosts_disk_is_bounded_in_rate(tmp_path):
    """A worker's compiles ahead together keep at most their budget's bytes (a burst, then a rate):
    entries past it are not written to the host's kernel caches, whichever owner's they are."""
    from sandbox.worker.kernel_cache import KernelCaches, WriteBudget
    now = [0.0]
    budget = WriteBudget(rate=1 << 20, burst=4 << 20, clock=lambda: now[0])
    caches = KernelCaches(str(tmp_path / "caches"))

    def compiled(owner, entries, mb=1):
        run = tmp_path / secrets.token_hex(4)
        for i in range(entries):
            (run / f"E{secrets.token_hex(8)}").mkdir(parents=True)
        for entry in run.iterdir():
            (entry / "k.cubin").write_bytes(b"\1" * (mb << 20))
        return caches.collect(owner, str(run), budget=budget)

    owners = [secrets.token_hex(16) for _ in range(5)]
    assert compiled(owners[0], 3) == 3  # the burst
    assert compiled(owners[1], 3) == 1  # what is left of it, whoever's compile it is
    assert compiled(owners[2], 2) == 0
    now[0] += 2.0
    assert compiled(owners[3], 3) == 2  # refilled at the rate
    assert compiled(owners[4], 1, mb=5) == 0  # never more than the burst at once


# Module-level code of a compile ahead that keeps 3 entries of 4 MB, then stops its compile.
BULKY = """
import os as _os
for _i in range(3):
    _entry = _os.path.join(_os.environ['TRITON_CACHE_DIR'], 'bulky' + _os.urandom(12).hex())
    _os.makedirs(_entry)
    with open(_os.path.join(_entry, 'k.cubin'), 'wb') as _f:
        _f.write(_os.urandom(4 << 20))
raise ValueError('kept enough')
"""


@pytest.mark.integration
def test_a_flood_of_compiles_ahead_keeps_no_more_than_its_budget_on_the_hosts_disk(make_app):
    """One client, a fresh session per page, compiles ahead as fast as it is let, each compile keeping
    12 MB: what reaches the host's kernel caches stays within COMPILE_KEEP_MB_PER_S (here 1 MB/s,
    after a 4 MB burst), and something does (the compiles finished)."""
    app = make_app(WORKERS=1, SHARED_KERNELS=0, COMPILE_KEEP_MB_PER_S=1)
    pages = [socketio.test_client(app) for _ in range(8)]
    start = time.monotonic()
    while time.monotonic() - start < 15:
        for page in pages:
            spec = vector_add_spec(n=1024, block=256, source=VECTOR_ADD + BULKY + f"# {secrets.token_hex(6)}\n")
            page.emit("compile", {"spec": spec}, callback=True)
            time.sleep(0.25)
    time.sleep(5)  # the compiles under way finish
    elapsed_s = time.monotonic() - start
    kept = glob.glob(os.path.join(app.config["RUN_ROOT"], "kernel-caches", "*", "*", "bulky*", "k.cubin"))
    kept_mb = sum(os.path.getsize(path) for path in kept) / (1 << 20)
    assert kept, "no compile ahead kept anything: the flood measured nothing"
    assert kept_mb <= 4 + elapsed_s, f"{kept_mb:.0f} MB kept in {elapsed_s:.0f} s"
