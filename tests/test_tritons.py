"""Several Triton versions on one server, through its real workers: the default and a second one
(tests/support/tritons.py), each a worker of its own. GET /api/spec lists them; a run names one in
options.triton and its result's device says which ran it; a version the server does not run, or
whose worker cannot start, is refused naming the versions it has; a share link keeps the version;
a kernel using what only the newer version has runs there and fails on the older naming it; what a
worker keeps is kept per version."""
import os
import time
import uuid

import pytest

from app.owners import key as owner_key
from sandbox import tritons
from tests.support.apps import running_app
from tests.support.kernels import vector_add_spec
from tests.support.tritons import ATOMIC_LOAD, atomic_load_spec, newer_and_older, require_extra

pytestmark = pytest.mark.integration
ABSENT = "3.0.0"  # named in TRITON_VERSIONS, installed nowhere: its worker cannot start
BROKEN = "3.1.0"  # its directory holds pip's record and no Triton: its worker imports another, and is not started


def wait_for_workers(app, timeout_s=180):
    """Until the default's and the second version's workers are ready and the absent one's is dead."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        states = {w["triton"]: w["state"] for w in app.extensions["dispatcher"].health()["workers"]}
        if states.get(ABSENT) == "dead" and all(s == "ready" for v, s in states.items() if v not in (ABSENT, BROKEN)):
            return
        time.sleep(0.2)
    raise RuntimeError(f"the workers did not start: {states}")


@pytest.fixture(scope="module")
def app(tmp_path_factory):
    extra = require_extra()
    directory = tmp_path_factory.mktemp("tritons")
    installed = directory / "tritons"
    (installed / BROKEN / f"triton-{BROKEN}.dist-info").mkdir(parents=True)
    (installed / extra).symlink_to(tritons.directory(extra))
    with running_app(directory, WORKERS=1, RUN_ROOT=str(directory / "runs"), TRITONS_DIR=str(installed),
                     TRITON_VERSIONS=f"{extra} {ABSENT} {BROKEN}", wait=wait_for_workers) as app:
        yield app


@pytest.fixture
def client(app):
    return app.test_client()


def run(client, spec):
    response = client.post("/api/run", json=spec)
    return response.status_code, response.get_json()


def test_the_spec_lists_the_versions_the_server_runs_with_their_release_dates(client):
    extra, default = require_extra(), tritons.default_version()
    body = client.get("/api/spec").get_json()
    listed = {v["version"]: v for v in body["tritons"]}
    assert listed[default] == {"version": default, "released": tritons.RELEASED[default], "default": True, "live": True}
    assert listed[extra] == {"version": extra, "released": tritons.RELEASED[extra], "default": False, "live": True}
    assert listed[ABSENT]["live"] is False  # its worker cannot start
    assert body["options"]["triton"]["choices"] == [default, extra, ABSENT, BROKEN]
    assert body["options"]["triton"]["default"] is None


def test_a_run_goes_to_the_worker_of_the_version_it_names_and_says_which_ran_it(client):
    extra, default = require_extra(), tritons.default_version()
    for asked, ran in ((extra, extra), (None, default), (default, default)):
        status, result = run(client, vector_add_spec(n=1024, **({"triton": asked} if asked else {})))
        assert status == 200 and result["status"] == "ok", result
        assert result["device"]["triton"] == ran


def test_a_version_the_server_does_not_run_is_refused_naming_those_it_runs(client):
    status, body = run(client, vector_add_spec(n=1024, triton="9.9.9"))
    assert status == 400 and body["error"]["type"] == "TritonUnknown" and body["error"]["field"] == "options.triton"
    assert "does not run Triton 9.9.9" in body["error"]["message"]
    assert f"{tritons.default_version()} (the default)" in body["error"]["message"]
    status, body = run(client, vector_add_spec(n=1024, triton="latest"))
    assert status == 400 and body["error"]["field"] == "options.triton"


def test_a_version_whose_worker_cannot_start_is_refused_saying_why(client):
    status, body = run(client, vector_add_spec(n=1024, triton=ABSENT))
    assert status == 503 and body["error"]["type"] == "TritonUnavailable", body
    assert f"no worker of Triton {ABSENT} is running" in body["error"]["message"]
    assert "not installed" in body["error"]["message"]


def test_a_run_waiting_for_a_version_whose_worker_then_fails_to_start_is_refused_at_once(app, client):
    """A worker whose directory holds no whole install imports another Triton: its start fails, saying
    so, and a run that waited for it is refused then, not left to the queue's wait."""
    def broken():
        return next(w for w in app.extensions["dispatcher"].health()["workers"] if w["triton"] == BROKEN)
    deadline = time.monotonic() + 120
    while not (broken()["failed_starts"] and broken()["state"] == "starting" and broken()["pid"]):
        assert time.monotonic() < deadline, broken()
        time.sleep(0.05)
    started = time.monotonic()
    status, result = run(client, vector_add_spec(n=1024, triton=BROKEN))
    assert status == 200 and result["error"]["type"] == "TritonUnavailable", result
    assert f"imported Triton {tritons.default_version()}" in result["error"]["message"]
    assert "holds no whole install" in result["error"]["message"] and time.monotonic() - started < 30


def test_a_share_link_keeps_the_version(client):
    extra = require_extra()
    saved = client.post("/api/snippets", json={"spec": vector_add_spec(n=1024, triton=extra)}).get_json()
    assert client.get(f"/api/snippets/{saved['id']}").get_json()["spec"]["options"]["triton"] == extra
    assert f'"triton": "{extra}"' in client.get(f"/s/{saved['id']}").get_data(as_text=True)


def test_a_kernel_using_what_only_the_newer_version_has_runs_there_and_fails_on_the_older_naming_it(client):
    newer, older = newer_and_older()
    status, result = run(client, atomic_load_spec(triton=newer))
    assert result["status"] == "ok" and result["device"]["triton"] == newer, result
    status, result = run(client, atomic_load_spec(triton=older))
    error = result["error"]
    assert result["status"] == "error" and result["device"]["triton"] == older
    assert error["message"].startswith(f"Triton {older} has no tl.atomic_load"), error
    assert error["field"] == "options.triton" and error["line"] == 9 and error["type"] == "AttributeError"
    # A script's launch of it too, and on the newer version it runs.
    program = ATOMIC_LOAD + "\nx = torch.arange(1, 65, dtype=torch.float32)\nout = torch.empty(64)\ncopy_kernel[(1,)](x, out, 64, BLOCK=64)\n"
    for version, status in ((older, "error"), (newer, "ok")):
        result = run(client, {"mode": "script", "source": program, "options": {"triton": version, "ir": False}})[1]
        assert result["status"] == status and result["device"]["triton"] == version, result
        if status == "error":
            assert f"): Triton {older} has no tl.atomic_load" in result["error"]["message"], result["error"]
            assert result["error"]["field"] == "options.triton"


def test_kernels_are_kept_per_version(app, client):
    """Each version's worker keeps its owners' kernels in a directory of its own (kernel-caches/<version>):
    no version is lent what another compiled."""
    extra, default = require_extra(), tritons.default_version()
    spec = vector_add_spec(n=1024, ir=True)
    spec["source"] += f"\n# {uuid.uuid4().hex}: compiled by this owner, not lent from the gallery's\n"
    for version in (default, extra):
        assert run(client, {**spec, "options": {**spec["options"], "triton": version}})[1]["status"] == "ok"
    root = os.path.join(app.config["RUN_ROOT"], "kernel-caches")
    assert sorted(os.listdir(root)) == sorted([default, extra])

    with client.session_transaction() as session:
        owner = owner_key(session["owner"])

    def kept(version):  # this owner's entries, collected just after each run's reply
        directory = os.path.join(root, version, owner)
        return set(os.listdir(directory)) if os.path.isdir(directory) else set()
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and not (kept(default) and kept(extra)):
        time.sleep(0.2)
    assert kept(default) and kept(extra) and not kept(default) & kept(extra), (kept(default), kept(extra))
    assert sorted(os.listdir(os.path.join(app.config["RUN_ROOT"], "shared-kernels"))) == sorted([default, extra])


def test_what_the_dispatcher_keeps_of_a_run_is_keyed_by_its_version():
    """The bounds checks passed and the compiles ahead done are kept per Triton version too."""
    from app.dispatch.jobs import Job
    from sandbox.spec import compile_key, normalize
    specs = [normalize(vector_add_spec(n=1024, **({"triton": v} if v else {}))) for v in (None, "3.8.0", "3.9.0")]
    jobs = [Job(spec, None, "someone") for spec in specs]
    for job, version in zip(jobs, (None, "3.8.0", "3.9.0")):
        job.triton = version or "3.7.1"
    assert len({job.launch for job in jobs}) == 3
    assert len({compile_key(spec) for spec in specs}) == 3


def test_the_added_versions_are_read_once_each_and_a_malformed_one_is_refused_naming_it():
    assert tritons.added_versions({"TRITON_VERSIONS": "3.8.0, 3.7.1 3.8.0"}) == ["3.8.0", "3.7.1"]
    assert tritons.added_versions({}) == []
    with pytest.raises(ValueError, match="'latest' is not a Triton release"):
        tritons.added_versions({"TRITON_VERSIONS": "3.8.0 latest"})
