"""Runs through the real server: the real worker pool, Triton's interpreter on this CPU."""
import os
import subprocess
import sys
import time

import pytest

from app import socketio
from app.dispatch.slot import worker_env
from tests.support import ROOT
from tests.support.kernels import ENDLESS, VECTOR_ADD, vector_add_spec

pytestmark = pytest.mark.integration  # starts run processes and workers


def run(client, spec):
    response = client.post("/api/run", json=spec)
    assert response.status_code == 200, response.get_data(as_text=True)
    return response.get_json()


def test_vector_add_passes_its_check(client, spec):
    result = run(client, spec)
    assert result["status"] == "ok", result["error"]
    assert result["run_id"]
    assert result["device"]["kind"] == client.get("/healthz").get_json()["device"]["kind"]
    out = result["check"]["outputs"]["out"]
    assert out["ok"] and out["mismatched"] == 0 and out["unwritten"] == 0


def test_a_mask_that_stops_short_leaves_unwritten_elements(client):
    spec = vector_add_spec(n=10, block=4, source=VECTOR_ADD.replace("mask = offs < n", "mask = offs < n - 3"))
    result = run(client, spec)
    assert result["status"] == "mismatch"
    assert result["check"]["outputs"]["out"]["unwritten"] == 3


def test_print_in_the_kernel_reaches_stdout(client):
    source = VECTOR_ADD.replace("    mask = offs < n\n", "    mask = offs < n\n    print('pid', pid)\n")
    result = run(client, vector_add_spec(n=8, block=4, source=source))
    assert result["status"] == "ok"
    if result["device"]["kind"] == "interpreter":
        assert result["stdout"].count("pid") == 2  # once per program
    else:
        assert "pid: 0" in result["stdout"] and "pid: 1" in result["stdout"]  # once per GPU thread


def test_syntax_error_names_parse_phase_and_line(client):
    source = VECTOR_ADD.replace("mask = offs < n", "mask = offs < n)")
    error = run(client, vector_add_spec(source=source))["error"]
    assert error["phase"] == "parse" and error["line"] == 9


def test_non_power_of_two_arange_is_explained(client):
    # The n=7, BLOCK=3 picture: Triton refuses a block of 3 lanes.
    result = run(client, vector_add_spec(n=7, block=3))
    error = result["error"]
    assert result["status"] == "error"
    assert error["line"] == 8
    assert "power of 2" in error["message"] and "mask" in error["hint"]


def test_unmapped_argument_is_named(client):
    spec = vector_add_spec()
    del spec["args"]["n"]
    error = run(client, spec)["error"]
    assert error["phase"] == "build" and "'n'" in error["message"] and "not mapped" in error["message"]


def test_unknown_name_in_an_argument_is_named(client):
    spec = vector_add_spec()
    spec["args"]["n"] = "z.numel()"
    error = run(client, spec)["error"]
    assert error["phase"] == "build" and "'z'" in error["message"] and "not an input" in error["message"]


def test_argument_that_is_not_a_parameter_is_named(client):
    spec = vector_add_spec()
    spec["args"]["BLOCK"] = 4
    error = run(client, spec)["error"]
    assert error["phase"] == "build" and "'BLOCK'" in error["message"]


def test_malformed_spec_is_a_400_with_the_field(client):
    response = client.post("/api/run", json={"source": "x", "kernel": "k"})
    assert response.status_code == 400
    error = response.get_json()["error"]
    assert "grid" in error["message"] and error["field"] == "grid" and error["phase"] == "parse"


@pytest.mark.parametrize("source, words", [
    ("import os\nos._exit(3)\n", "exited with status 3"),
    ("import ctypes\nctypes.string_at(0)\n", "SIGSEGV"),
])
def test_a_run_that_kills_its_process_costs_only_that_run(client, spec, source, words):
    result = run(client, {**spec, "source": source})
    assert result["status"] == "error" and result["error"]["phase"] == "sandbox"
    assert words in result["error"]["message"]
    assert run(client, spec)["status"] == "ok"


STRAY = """
import os, time
read_end, write_end = os.pipe()
if os.fork() == 0:  # a daemon, detached the classic way: new session, double fork
    os.setsid()
    stray = os.fork()
    if stray == 0:
        os.execv('/bin/sleep', ['sleep', '{marker}'])
    os.write(write_end, str(stray).encode())
    os._exit(0)
print('stray', int(os.read(read_end, 32)))
"""


def host_processes_with(marker):
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                if marker.encode() in f.read():
                    found.append(int(pid))
        except OSError:
            continue
    return found


def test_a_process_a_run_leaves_behind_is_killed_with_the_run(client, spec):
    marker = f"600.{os.getpid()}{time.monotonic_ns() % 100000}"  # a sleep this long is this test's daemon
    result = run(client, {**spec, "source": spec["source"] + STRAY.replace("{marker}", marker)})
    assert result["status"] == "ok", result["error"]
    assert int(result["stdout"].split("stray")[1].split()[0]) > 0
    deadline = time.monotonic() + 5
    while host_processes_with(marker) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert host_processes_with(marker) == [], "the run's daemon outlived it"


PIPES = """
import os
def pipes(readable):
    inodes = []
    for fd in os.listdir('/proc/self/fd'):
        try:
            target = os.readlink(f'/proc/self/fd/{fd}')
            flags = int(open(f'/proc/self/fdinfo/{fd}').read().split('flags:')[1].split()[0], 8)
        except OSError:
            continue
        if target.startswith('pipe:') and (flags & 3 == 0) == readable:
            inodes.append(target)
    return sorted(inodes)
print('reads:', pipes(True))
print('writes:', pipes(False))
"""


def test_no_run_holds_the_read_end_of_a_pipe_it_did_not_make(client, spec):
    # The next run's process is forked while this one still exists: it must not inherit this one's
    # pipes. Its own are write ends (its messages, its output) and pairs it made (CUDA's, say).
    for _ in range(4):
        result = run(client, {**spec, "source": spec["source"] + PIPES})
        assert result["status"] == "ok", result["error"]
        reads = set(eval(result["stdout"].split("reads:")[1].splitlines()[0]))
        writes = set(eval(result["stdout"].split("writes:")[1].splitlines()[0]))
        assert writes  # its stdout and message pipes at least
        assert reads <= writes, f"a run holds the read end of another process's pipe: {reads - writes}"


SNOOP = """
import os, tempfile
print('environment:', sorted(os.environ))
print('database visible:', os.path.exists({database!r}))
print('runs visible:', os.path.exists({run_root!r}))
"""


def test_a_run_sees_neither_the_servers_secrets_nor_its_database_nor_other_runs(app, client, spec):
    import tempfile
    from sandbox.worker.run_process import RUN_ENVIRONMENT
    health = client.get("/healthz").get_json()
    snoop = SNOOP.format(database=app.config["DATABASE"], run_root=os.path.join(tempfile.gettempdir(), "playground-runs"))
    result = run(client, {**spec, "source": spec["source"] + snoop})
    assert result["status"] == "ok", result["error"]
    environment = eval(result["stdout"].split("environment:")[1].splitlines()[0])
    from sandbox.worker.shared_kernels import ENV as SHARED_KERNELS_AT  # the read-only shared cache's path in the run
    allowed = {*RUN_ENVIRONMENT, "HOME", "TMPDIR", "TRITON_CACHE_DIR", "TRITON_CACHE_MANAGER", SHARED_KERNELS_AT}
    assert [k for k in environment if k not in allowed] == []
    if "minimal read-only root" in health["isolation"]:
        assert "database visible: False" in result["stdout"]
        assert "runs visible: False" in result["stdout"]


ESCAPE = """
import ctypes, os
libc = ctypes.CDLL(None, use_errno=True)
print('unmount:', libc.umount2(b'/tmp', 2), ctypes.get_errno())
print('remount:', libc.mount(None, b'/', None, 0x20 | 0x1000, None), ctypes.get_errno())  # MS_REMOUNT | MS_BIND, writable
print('runs:', os.path.exists({run_root!r}))
print('status:', [l.split()[:2] for l in open('/proc/self/status') if l.startswith(('CapEff', 'NoNewPrivs'))])
"""


def test_a_run_cannot_undo_its_isolation(client, spec):
    import tempfile
    isolation = client.get("/healthz").get_json()["isolation"]
    if "minimal read-only root" not in isolation:
        pytest.skip(f"this host allows no private mounts ({isolation})")
    escape = ESCAPE.format(run_root=os.path.join(tempfile.gettempdir(), "playground-runs"))
    result = run(client, {**spec, "source": spec["source"] + escape})
    assert result["status"] == "ok", result["error"]
    assert "unmount: -1 1" in result["stdout"] and "remount: -1 1" in result["stdout"]  # EPERM
    assert "runs: False" in result["stdout"]
    assert "['CapEff:', '0000000000000000']" in result["stdout"] and "['NoNewPrivs:', '1']" in result["stdout"]


CACHE_SNOOP = """
import os
print('cache:', sorted(os.listdir(os.environ['TRITON_CACHE_DIR'])))
"""


def test_a_run_gets_its_owners_compiled_kernels_and_no_one_elses(app, spec):
    if "minimal read-only root" not in app.test_client().get("/healthz").get_json()["isolation"]:
        pytest.skip("without private mounts a run can see every scratch dir")
    alice, bob = app.test_client(), app.test_client()  # two browsers: two session cookies
    assert run(alice, {**spec, "options": {"ir": True}})["ir"]["ptx"]
    snoop = {**spec, "source": spec["source"] + CACHE_SNOOP}
    seen = {name: eval(run(client, snoop)["stdout"].split("cache:")[1].splitlines()[0])
            for name, client in (("alice", alice), ("bob", bob))}
    assert seen["alice"], "the owner's next run starts without the kernel it compiled"
    assert seen["bob"] == []


WRITER = """
import os
for path in ({server_file!r}, '/etc/playground-was-here', 'scratch.txt'):
    try:
        with open(path, 'w') as f:
            f.write('x')
        print('wrote', path)
    except OSError as e:
        print('refused', path)
"""


def test_a_run_writes_only_its_own_scratch_dir(client, spec):
    isolation = client.get("/healthz").get_json()["isolation"]
    if "minimal read-only root" not in isolation:
        pytest.skip(f"this host allows no private read-only filesystem ({isolation})")
    server_file = os.path.join(ROOT, "app", "planted.py")
    result = run(client, {**spec, "source": spec["source"] + WRITER.format(server_file=server_file)})
    assert result["status"] == "ok", result["error"]
    assert f"refused {server_file}" in result["stdout"] and not os.path.exists(server_file)
    assert "refused /etc/playground-was-here" in result["stdout"] and "wrote scratch.txt" in result["stdout"]


def test_what_the_module_prints_is_shown_once_even_with_the_ir_compiled(client):
    result = run(client, vector_add_spec(n=8, block=4, ir=True, source=VECTOR_ADD + "\nprint('module loaded')\n"))
    assert result["status"] == "ok" and result["ir"]["ptx"]
    assert result["stdout"].count("module loaded") == 1


def test_the_server_secret_never_reaches_a_worker(app, monkeypatch):
    monkeypatch.setenv("SECRET_KEY", "do-not-leak")
    env = worker_env(app.extensions["dispatcher"].config)
    assert "SECRET_KEY" not in env and "do-not-leak" not in env.values()
    assert env["PYTHONPATH"] and "PATH" in env


def test_healthz_reports_warm_workers(client):
    health = client.get("/healthz").get_json()
    assert health["ok"]
    assert health["device"]["kind"] in ("interpreter", "gpu")
    assert health["device"]["triton"].startswith("3.")
    assert all(w["state"] in ("ready", "busy") for w in health["workers"])


def test_socketio_streams_phases_then_the_result(app, spec):
    client = socketio.test_client(app)
    ack = client.emit("run", {"spec": spec}, callback=True)
    run_id = ack["run_id"]
    events = collect_until_result(client, run_id)
    phases = [e["args"][0]["phase"] for e in events if e["name"] == "run_status"]
    assert phases[0] == "queued"
    assert {"compiling", "running", "checking"} <= set(phases)
    result = events[-1]["args"][0]
    assert events[-1]["name"] == "run_result" and result["run_id"] == run_id
    assert result["result"]["status"] == "ok"
    assert all(e["args"][0]["run_id"] == run_id for e in events)


def test_socketio_streams_each_part_of_the_result_as_it_is_ready_then_the_whole_result(app, spec):
    """The page-default options: the trace (the launch), then the check, the timings, the IR, each
    sent as the run finishes it (before the status of the phase after it) and equal to the same
    section of the one result that follows them."""
    client = socketio.test_client(app)
    spec["options"].update(check=True, trace=True, bench=True, ir=True)
    run_id = client.emit("run", {"spec": spec}, callback=True)["run_id"]
    events = collect_until_result(client, run_id)
    seen = [e["args"][0]["part"] if e["name"] == "run_partial" else e["args"][0].get("phase", e["name"])
            for e in events]
    assert seen.index("trace") < seen.index("checking") < seen.index("check") < seen.index("timings") \
        < seen.index("ir") < len(seen) - 1, seen  # "ir": the IR phase's status, before the part of that name
    assert seen[-1] == "run_result" and seen.count("ir") == 2, seen
    parts = [e["args"][0] for e in events if e["name"] == "run_partial"]
    result = events[-1]["args"][0]["result"]
    assert result["status"] == "ok" and not result["ir"].get("error"), result["error"] or result["ir"]
    assert [p["part"] for p in parts] == ["trace", "check", "timings", "ir"]
    for part in parts:
        assert set(part) == {"run_id", "part", "content"} and part["run_id"] == run_id
        assert part["content"] == result[part["part"]], part["part"]


def test_a_section_not_asked_for_sends_no_part_and_an_http_run_gets_the_whole_result(app, client, spec):
    sio = socketio.test_client(app)
    spec["options"].update(trace=False, bench=False, ir=False)
    run_id = sio.emit("run", {"spec": spec}, callback=True)["run_id"]
    parts = [e["args"][0]["part"] for e in collect_until_result(sio, run_id) if e["name"] == "run_partial"]
    assert parts == ["check"]
    assert run(client, spec)["check"]["ok"]


def test_two_clients_never_see_each_others_runs(app, spec):
    alice, bob = socketio.test_client(app), socketio.test_client(app)
    alice_run = alice.emit("run", {"spec": spec}, callback=True)["run_id"]
    collect_until_result(alice, alice_run)
    assert bob.get_received() == []


def test_socketio_rejects_a_malformed_spec_in_the_ack(app):
    client = socketio.test_client(app)
    ack = client.emit("run", {"spec": {"kernel": "k"}}, callback=True)
    assert "source" in ack["error"]["message"]


def collect_until_result(client, run_id, timeout_s=60):
    events, deadline = [], time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        for event in client.get_received():
            events.append(event)
            if event["name"] == "run_result" and event["args"][0]["run_id"] == run_id:
                return events
        time.sleep(0.05)
    raise AssertionError(f"no result for {run_id}: {events}")


@pytest.fixture(scope="module")
def quick_timeout_app(tmp_path_factory):
    from tests.support.apps import running_app
    with running_app(tmp_path_factory.mktemp("db"), WORKERS=1, RUN_TIMEOUT_S=3.0) as app:
        yield app


@pytest.mark.parametrize("where", ["input", "module"])
def test_an_endless_loop_times_out_and_the_next_run_works(quick_timeout_app, spec, where):
    client = quick_timeout_app.test_client()
    looping = dict(spec)
    if where == "input":
        looping["inputs"] = {**spec["inputs"], "x": "[0 for _ in iter(int, 1)]"}
    else:
        looping["source"] = ENDLESS
    start = time.monotonic()
    result = run(client, looping)
    assert result["error"]["phase"] == "timeout"
    assert time.monotonic() - start < 3.0 + 2.0
    assert run(client, spec)["status"] == "ok"


def test_the_web_process_never_imports_torch_or_triton():
    code = ("import sys; from app import create_app; "
            "app = create_app({'START_WORKERS': False, 'DATABASE': ':memory:'}); "
            "c = app.test_client(); c.get('/'); c.get('/api/examples'); "
            "assert 'torch' not in sys.modules and 'triton' not in sys.modules, 'imported'")
    subprocess.run([sys.executable, "-c", code], cwd=ROOT, check=True)


def test_inputs_keep_their_order_through_the_api(client):
    spec = client.get("/api/examples/vector_add").get_json()["spec"]
    assert list(spec["inputs"]) == ["x", "y", "out"]


def test_a_tensor_made_in_an_argument_expression_is_traced_by_its_parameter(client):
    spec = vector_add_spec(n=8, block=4)
    spec["args"]["y_ptr"] = "torch.ones(8)"
    spec["reference"] = {"out": "x + 1"}
    result = run(client, spec)
    assert result["status"] == "ok", result["error"]
    assert "y_ptr" in result["trace"]["tensors"]


def test_scratch_dirs_go_with_their_runs_and_with_a_stopped_or_killed_worker(tmp_path, spec):
    import tempfile
    from app import create_app
    from tests.support.apps import wait_until_ready, wait_until_warmed
    run_root = os.path.join(tempfile.gettempdir(), "playground-runs")
    os.makedirs(run_root, exist_ok=True)
    orphan = tempfile.mkdtemp(prefix="run-999999999-", dir=run_root)  # left by a worker long dead
    app = create_app({"TESTING": True, "DATABASE": str(tmp_path / "t.sqlite"), "WORKERS": 1})
    wait_until_ready(app)
    wait_until_warmed(app)  # its warm-up's run processes come and go too
    worker_pid = app.extensions["dispatcher"].health()["workers"][0]["pid"]
    assert run(app.test_client(), spec)["status"] == "ok"
    assert not os.path.exists(orphan)
    mine = lambda: [n for n in os.listdir(run_root) if n.startswith(f"run-{worker_pid}-")]  # noqa: E731
    deadline = time.monotonic() + 10
    while len(mine()) > 2 and time.monotonic() < deadline:  # the finished run's goes just after its reply
        time.sleep(0.05)
    assert 1 <= len(mine()) <= 2  # the spare run processes, forked ahead of need
    app.extensions["dispatcher"].stop()
    assert mine() == []


def test_a_warm_run_process_that_died_waiting_is_replaced_without_failing_the_next_run(make_app, spec):
    import signal
    app = make_app(WORKERS=1, SHARED_KERNELS=0)  # only spares among its children: no warm-up run
    client = app.test_client()
    assert run(client, spec)["status"] == "ok"
    worker_pid = app.extensions["dispatcher"].health()["workers"][0]["pid"]
    with open(f"/proc/{worker_pid}/task/{worker_pid}/children") as f:
        waiting = [int(pid) for pid in f.read().split() if comm(int(pid)) == "run"]
    assert waiting, "the worker keeps a run process warm"
    for pid in waiting:
        os.kill(pid, signal.SIGKILL)  # as the host's OOM killer might
    time.sleep(0.2)
    result = run(client, spec)
    assert result["status"] == "ok", result["error"]


def comm(pid):
    with open(f"/proc/{pid}/comm") as f:
        return f.read().strip()


def test_a_worker_is_single_threaded_so_its_forks_inherit_no_held_lock(app):
    for worker in app.extensions["dispatcher"].health()["workers"]:
        assert len(os.listdir(f"/proc/{worker['pid']}/task")) == 1


def test_the_references_time_is_kept_per_worker_and_owner_and_said_so(make_app):
    """The same reference over inputs of the same shapes and dtypes is timed once on a worker, for
    its owner; another shape is timed again, and so is another owner's."""
    app = make_app(WORKERS=1, SHARED_KERNELS=0)
    spec = vector_add_spec(n=4096, bench=True)
    alice, bob = socketio.test_client(app), socketio.test_client(app)

    def timings(client, spec):
        run_id = client.emit("run", {"spec": spec}, callback=True)["run_id"]
        result = collect_until_result(client, run_id)[-1]["args"][0]["result"]
        assert result["status"] == "ok", result["error"]
        return result["timings"]

    kept = "measured in an earlier run of the same reference"
    first, again = timings(alice, spec), timings(alice, {**spec, "source": spec["source"] + "\n# edited\n"})
    assert not any(kept in note for note in first["notes"])
    assert any(kept in note for note in again["notes"]) and again["reference_ms"] == first["reference_ms"]
    other_shape = timings(alice, vector_add_spec(n=2048, bench=True))
    assert not any(kept in note for note in other_shape["notes"])
    assert not any(kept in note for note in timings(bob, spec)["notes"])
