"""The dispatcher under abuse and under load, through the real server and real workers: nothing a
request sends wedges a worker slot, waits are bounded, and the queue is fair between owners."""
import json
import os
import threading
import time

import pytest

from app import create_app, socketio
from app.dispatch import interface, slot as dispatcher_module
from tests.support.apps import wait_until_ready
from tests.support.kernels import ENDLESS
from tests.test_runs import collect_until_result, run

TIMEOUT_S = 3.0


@pytest.fixture(scope="module")
def app(tmp_path_factory):
    """One worker and a short run timeout: an endless run holds the only worker for 3 s, so that the
    runs after it wait in the queue."""
    app = create_app({"TESTING": True, "DATABASE": str(tmp_path_factory.mktemp("db") / "t.sqlite"),
                      "WORKERS": 1, "RUN_TIMEOUT_S": TIMEOUT_S})
    wait_until_ready(app)
    yield app
    app.extensions["dispatcher"].stop()


def health(app):
    return app.test_client().get("/healthz").get_json()


def wait_for(condition, timeout_s=30, what="the condition"):
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if condition():
            return
        time.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what}")


def occupy_the_worker(app, spec):
    """Start an endless run on the only worker; returns an Event set once its (timeout) result came."""
    done = threading.Event()
    app.extensions["dispatcher"].submit({**spec, "source": ENDLESS}, "someone else",
                                        listener=lambda _id, type, _c: type == "result" and done.set())
    wait_for(lambda: health(app)["workers"][0]["state"] == "busy" and health(app)["queued"] == 0,
             what="the endless run to start")
    return done


def settle(app):
    """Wait until the worker is free and nothing waits: the next test starts on an idle server."""
    wait_for(lambda: health(app)["queued"] == 0 and health(app)["workers"][0]["state"] == "ready",
             timeout_s=60, what="an idle server")


def nan_body(spec):
    """The spec with a NaN argument (JSON has no NaN; json.dumps writes one anyway)."""
    return {**spec, "args": {**spec["args"], "n": float("nan")}}


# --- NaN and Infinity -------------------------------------------------------------------------------

@pytest.mark.parametrize("change, words", [
    (lambda s: {**s, "args": {**s["args"], "n": float("nan")}}, "args.n must be a finite number, not NaN"),
    (lambda s: {**s, "options": {"flops": float("inf")}}, "options.flops must be a finite number, not Infinity"),
    (lambda s: {"spec": {**s, "options": {"flops": [1, [2, float("-inf")]]}}},
     "spec.options.flops[1][1] must be a finite number, not -Infinity"),
])
@pytest.mark.parametrize("path", ["/api/run", "/api/snippets", "/api/export"])
def test_nan_or_infinity_in_a_body_is_a_400_naming_the_field(app, client, spec, change, words, path):
    response = client.post(path, data=json.dumps(change(spec)), content_type="application/json")
    assert response.status_code == 400, response.get_data(as_text=True)
    assert response.get_json()["error"]["message"] == words


def test_five_nan_runs_in_a_row_leave_the_server_running(app, client, spec):
    for _ in range(5):
        response = client.post("/api/run", data=json.dumps(nan_body(spec)), content_type="application/json")
        assert response.status_code == 400
    assert run(client, spec)["status"] == "ok"
    assert health(app)["ok"]


def test_nan_over_socketio_is_refused_in_the_ack_and_the_next_run_works(app, spec):
    browser = socketio.test_client(app)
    ack = browser.emit("run", {"spec": {**spec, "options": {"flops": float("inf")}}}, callback=True)
    assert {k: ack["error"][k] for k in ("phase", "message", "field")} == {
        "phase": "parse", "message": "options.flops must be a finite number, not Infinity", "field": "options.flops"}
    ack = browser.emit("run", {"spec": nan_body(spec)}, callback=True)
    assert "args.n must be a finite number, not NaN" in ack["error"]["message"]
    run_id = browser.emit("run", {"spec": spec}, callback=True)["run_id"]
    assert collect_until_result(browser, run_id)[-1]["args"][0]["result"]["status"] == "ok"
    assert health(app)["ok"]


def test_a_message_with_nan_is_refused_unless_it_is_a_result_that_may_say_null():
    from sandbox import protocol
    with pytest.raises(ValueError):
        protocol.encode(protocol.message("job", "r1", spec={"args": {"n": float("nan")}}))
    line = protocol.encode(protocol.message("result", "r1", result={"max_rel_err": float("inf"), "ms": 1.5}),
                           nan_to_null=True)
    assert protocol.decode(line)["content"]["result"] == {"max_rel_err": None, "ms": 1.5}


def test_a_spec_that_cannot_reach_a_worker_costs_only_that_run(app, client, spec):
    # A spec past every check but unencodable (NaN: JSON has none) is that run's error, not a dead slot,
    # and its worker is kept: nothing was written to it.
    dispatcher = app.extensions["dispatcher"]
    restarts = health(app)["workers"][0]["restarts"]
    for _ in range(5):
        results = []
        dispatcher.submit(nan_body(spec), "owner",
                          listener=lambda _id, type, content: type == "result" and results.append(content))
        wait_for(lambda: results, what="the unencodable run's result")
        assert results[0]["result"]["error"]["phase"] == "sandbox"
    assert run(client, spec)["status"] == "ok"
    assert health(app)["ok"] and health(app)["workers"][0]["restarts"] == restarts


def test_num_warps_must_be_a_power_of_two(client, spec):
    response = client.post("/api/run", json={**spec, "options": {"num_warps": 3}})
    assert response.status_code == 400
    assert "options.num_warps must be a power of 2" in response.get_json()["error"]["message"]


# --- a slot is never wedged ---------------------------------------------------------------------------

def test_a_listener_that_raises_does_not_stop_the_run_or_the_slot(app, client, spec):
    heard = []

    def broken(_run_id, type, content):
        heard.append(type)
        raise RuntimeError("the client's socket went away")

    app.extensions["dispatcher"].submit(spec, "owner", listener=broken)
    wait_for(lambda: "result" in heard, what="the broken listener's result")
    assert "status" in heard  # it raised on every status, and the run went on to its result
    assert run(client, spec)["status"] == "ok"
    assert health(app)["ok"]


def test_a_worker_line_nested_deeper_than_pythons_stack_is_dropped():
    from sandbox import protocol
    assert protocol.decode(b"[" * 100_000 + b"]" * 100_000) is None  # not a RecursionError in the reader


def test_a_line_past_the_message_limits_is_measured_and_never_parsed():
    import tracemalloc

    from sandbox import protocol
    limits = protocol.Limits(max_bytes=1 << 20, max_depth=8, max_elements=1000)

    def status(value):
        return json.dumps({"type": "status", "id": "i", "run_id": "r", "content": {"a": value}}).encode()

    def nested(depth):
        return json.loads("[" * depth + "]" * depth)

    assert protocol.decode(status('a "[{[{" string\\" [[[[[[[[[[ holds no structure'), limits=limits)
    assert protocol.decode(status(nested(6)), limits=limits)  # 8 deep with the message and its content
    assert "MESSAGE_MAX_DEPTH" in protocol.over_limits(status(nested(7)), limits)
    assert "MESSAGE_MAX_DEPTH" in protocol.over_limits(status([{"b": [{"c": nested(3)}]}]), limits)
    assert protocol.decode(status(list(range(990))), limits=limits)
    assert "MESSAGE_MAX_ELEMENTS" in protocol.over_limits(status([{}] * 1001), limits)
    assert "MESSAGE_MAX_BYTES" in protocol.over_limits(status("x" * (1 << 20)), limits)
    assert protocol.decode(status([{}] * 1001), limits=limits) is None
    # 15 MB of tiny objects, at the default limits: refused on its bytes, quickly, making no objects.
    line = b'{"type":"result","id":"i","run_id":"r","content":{"result":[' + b"{}," * 4_999_999 + b"{}]}}"
    tracemalloc.start()
    start = time.perf_counter()
    assert "MESSAGE_MAX_ELEMENTS" in protocol.over_limits(line) and protocol.decode(line) is None
    elapsed_s, peak = time.perf_counter() - start, tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert elapsed_s < 1.0 and peak < 3 * len(line), (elapsed_s, peak)  # copies of the bytes, no objects


def test_a_worker_line_past_the_limits_fails_the_run_in_hand_and_marks_the_worker(monkeypatch):
    import queue as queues
    import types

    from app.dispatch.slot import WorkerProcess
    from sandbox import protocol
    r, w = os.pipe()
    worker = WorkerProcess.__new__(WorkerProcess)
    worker.proc, worker.limits = types.SimpleNamespace(stdout=os.fdopen(r, "rb")), protocol.Limits(max_bytes=4096)
    worker.messages, worker.warming, worker.broken = queues.Queue(), None, None
    reader = threading.Thread(target=worker._read, daemon=True)
    reader.start()
    with os.fdopen(w, "wb") as pipe:
        pipe.write(b'{"type":"status","id":"i","run_id":"r","content":{"x":"' + b"y" * 10_000 + b'"}}\n')
        pipe.write(protocol.encode(protocol.message("status", "r", phase="running", message="fine")))
    reader.join(10)
    beyond = worker.messages.get(timeout=5)
    assert beyond[0] == "beyond" and "MESSAGE_MAX_BYTES" in beyond[1] and worker.broken
    while (msg := worker.messages.get(timeout=5)) is not None and isinstance(msg, tuple):
        pass  # the rest of the long line, each piece past the limit too
    assert msg["content"]["message"] == "fine"


def test_healthz_says_not_ok_while_a_slot_is_stuck():
    # A slot stuck mid-run is simulated by its state: no real run can hold a slot that long.
    app = create_app({"START_WORKERS": False, "DATABASE": ":memory:", "RUN_TIMEOUT_S": 3.0})
    slot = app.extensions["dispatcher"].slots[0]
    slot.state, slot.busy_since = "busy", time.monotonic() - 1
    response = app.test_client().get("/healthz")
    assert response.status_code == 200 and response.get_json()["workers"][0]["busy_s"] >= 1
    slot.busy_since = time.monotonic() - (3.0 + app.config["RUN_GRACE_S"] + app.config["STUCK_MARGIN_S"] + 1)
    response = app.test_client().get("/healthz")
    assert response.status_code == 503
    health = response.get_json()
    assert not health["ok"] and health["workers"][0]["stuck"] and health["workers"][0]["busy_s"] > 28


def test_a_worker_that_will_not_start_is_tried_again_ever_less_often_and_healthz_says_so(monkeypatch):
    """The worker's start fails (a broken driver, a full disk: simulated at the start itself, which
    every other test does for real); the slot waits 1, 2, 4, ... s (here 0.05, 0.1, ...) between tries."""
    monkeypatch.setattr(dispatcher_module, "RESTART_FIRST_S", 0.05)
    starts = []

    def cannot_start(slot):
        starts.append(time.monotonic())
        raise RuntimeError("worker failed to start")

    monkeypatch.setattr(dispatcher_module.Slot, "_start_worker", cannot_start)
    app = create_app({"START_WORKERS": False, "DATABASE": ":memory:", "WORKERS": 1})
    dispatcher = app.extensions["dispatcher"].start()
    try:
        time.sleep(1.0)
    finally:
        dispatcher.stop()
    gaps = [b - a for a, b in zip(starts, starts[1:])]
    assert 4 <= len(starts) <= 6, starts  # 0.05 + 0.1 + 0.2 + 0.4 s: not one try every 0.05 s
    assert all(later > 1.5 * earlier for earlier, later in zip(gaps, gaps[1:])), gaps
    worker = dispatcher.health()["workers"][0]
    assert worker["state"] == "dead" and worker["failed_starts"] == len(starts)
    assert dispatcher_module.restart_delay_s(30) == dispatcher_module.RESTART_MAX_S


@pytest.mark.integration
def test_healthz_is_not_ok_while_a_slot_cannot_start_and_says_which_and_why(tmp_path):
    """Slot 0 starts its worker; slot 1's worker fails for real at its start (its run root lies under
    a file), as a worker whose GPU its runs cannot use does: /healthz is not ok, names the slot and
    its error in a line, and the slot keeps trying, ever less often."""
    (tmp_path / "file").write_text("")
    app = create_app({"START_WORKERS": False, "DATABASE": ":memory:", "WORKERS": 2, "RUN_ROOT": str(tmp_path / "runs")})
    dispatcher = app.extensions["dispatcher"]
    broken = dispatcher.slots[1]
    broken.config = {**broken.config, "RUN_ROOT": str(tmp_path / "file" / "runs")}
    dispatcher.start()
    try:
        wait_for(lambda: health(app)["workers"][0]["state"] == "ready" and health(app)["workers"][1]["failed_starts"] >= 2,
                 timeout_s=180, what="slot 0 ready and two failed starts of slot 1")
        response = app.test_client().get("/healthz")
        body = response.get_json()
        assert response.status_code == 503 and body["ok"] is False
        worker = body["workers"][1]
        assert worker["state"] in ("dead", "starting") and worker["gpu"] == broken.gpu
        assert worker["start_error"].startswith("NotADirectoryError: ") and "file/runs" in worker["start_error"]
        assert "Traceback" not in worker["start_error"] and "\n" not in worker["start_error"]
        problem, = body["problems"]
        where = f"GPU {broken.gpu}" if broken.gpu is not None else "no GPU"  # the host's second GPU, or none
        assert problem.startswith(f"worker 1 ({where}) cannot start: NotADirectoryError: ")
        assert "failed starts in a row" in problem
        assert body["workers"][0]["start_error"] is None and body["workers"][0]["state"] == "ready"
    finally:
        dispatcher.stop()


def test_an_api_run_that_cannot_finish_answers_an_error_and_leaves_the_queue(spec):
    # No worker ever takes the job; the wait bound (shrunk here, by the app's config) still ends the request.
    app = create_app({"START_WORKERS": False, "DATABASE": ":memory:", "RUN_TIMEOUT_S": 0.2, "QUEUE_WAIT_S": 0.3,
                      "RUN_GRACE_S": 0, "WAIT_MARGIN_S": 0.5})
    start = time.monotonic()
    response = app.test_client().post("/api/run", json=spec)
    assert response.status_code == 503 and time.monotonic() - start < 5
    error = response.get_json()["error"]
    assert "could not finish this run within 1 s" in error["message"]
    assert (error["phase"], error["type"]) == ("timeout", "RunLost")
    assert app.extensions["dispatcher"].health()["queued"] == 0


# --- a fair queue -------------------------------------------------------------------------------------

def queued_messages(client):
    return [e["args"][0]["message"] for e in client.get_received()
            if e["name"] == "run_status" and e["args"][0]["phase"] == "queued"]


def test_one_owner_may_have_four_runs_waiting_and_another_owner_still_gets_in(app, spec):
    http = app.test_client()
    http.get("/")  # the page load that gives this browser its owner id
    alice = socketio.test_client(app, flask_test_client=http)
    done = occupy_the_worker(app, spec)
    acks = [alice.emit("run", {"spec": spec}, callback=True) for _ in range(5)]
    assert all("run_id" in ack for ack in acks[:4])
    assert {k: acks[4]["error"][k] for k in ("phase", "message")} == {
        "phase": "limit", "message": "you already have 4 runs waiting; wait for one to finish"}
    assert queued_messages(alice) == ["queued: 1st in line", "queued: 2nd in line", "queued: 3rd in line",
                                      "queued: 4th in line"]
    response = http.post("/api/run", json=spec)  # the same browser, over HTTP
    assert response.status_code == 429 and "4 runs waiting" in response.get_json()["error"]["message"]
    bob = socketio.test_client(app)
    assert "run_id" in bob.emit("run", {"spec": spec}, callback=True)
    assert queued_messages(bob) == ["queued: 5th in line"]
    alice.disconnect()
    bob.disconnect()
    assert done.wait(TIMEOUT_S + 15)
    settle(app)


def test_a_disconnected_clients_waiting_runs_never_start(app, spec):
    done = occupy_the_worker(app, spec)
    runs_before = health(app)["workers"][0]["runs"]
    carol = socketio.test_client(app)
    for _ in range(3):
        assert "run_id" in carol.emit("run", {"spec": spec}, callback=True)
    assert health(app)["queued"] == 3
    carol.disconnect()
    assert health(app)["queued"] == 0
    dave = socketio.test_client(app)
    run_id = dave.emit("run", {"spec": spec}, callback=True)["run_id"]
    assert done.wait(TIMEOUT_S + 15)
    events = collect_until_result(dave, run_id)
    assert events[-1]["args"][0]["result"]["status"] == "ok"
    # The endless run, then dave's: none of carol's three ran in between.
    assert health(app)["workers"][0]["runs"] == runs_before + 2
    assert health(app)["queued"] == 0


def test_a_run_that_waited_too_long_is_dropped_with_a_clear_error(app, spec, monkeypatch):
    monkeypatch.setitem(app.config, "QUEUE_WAIT_S", 1.0)
    done = occupy_the_worker(app, spec)  # holds the worker for 3 s: the next run waits longer than 1 s
    runs_before = health(app)["workers"][0]["runs"]
    erin = socketio.test_client(app)
    run_id = erin.emit("run", {"spec": spec}, callback=True)["run_id"]
    result = collect_until_result(erin, run_id)[-1]["args"][0]["result"]
    assert done.is_set()
    assert result["status"] == "error" and result["error"]["phase"] == "limit"
    assert result["error"]["message"] == "the server was too busy to start this run within 1 s; try again"
    assert health(app)["workers"][0]["runs"] == runs_before + 1  # the endless run only
    monkeypatch.setitem(app.config, "QUEUE_WAIT_S", 120.0)
    run_id = erin.emit("run", {"spec": spec}, callback=True)["run_id"]
    assert collect_until_result(erin, run_id)[-1]["args"][0]["result"]["status"] == "ok"


# --- runs from a shared link ----------------------------------------------------------------------------

@pytest.fixture
def sent_jobs(app, monkeypatch):
    """The job messages the slot writes to its worker (the real write still happens)."""
    lines = []
    real_send = dispatcher_module.WorkerProcess.send

    def send(self, line, deadline):
        lines.append(json.loads(line))
        return real_send(self, line, deadline)

    monkeypatch.setattr(dispatcher_module.WorkerProcess, "send", send)
    return lines


def test_from_link_reaches_the_worker_as_the_jobs_provenance(app, client, spec, sent_jobs):
    browser = socketio.test_client(app)
    for from_link in (True, False):
        run_id = browser.emit("run", {"spec": spec, "from_link": from_link}, callback=True)["run_id"]
        assert collect_until_result(browser, run_id)[-1]["args"][0]["result"]["status"] == "ok"
    response = client.post("/api/run", json={"spec": spec, "from_link": True})
    assert response.status_code == 200 and response.get_json()["status"] == "ok"
    assert [job["content"]["provenance"] for job in sent_jobs] == ["foreign", "own", "foreign"]
    assert all("from_link" not in job["content"]["spec"] for job in sent_jobs)


@pytest.mark.integration
def test_a_worker_that_died_while_idle_is_replaced_before_the_next_run(make_app):
    """Nothing watches an idle worker: the next job finds it dead and starts a new one for itself,
    instead of being written to a dead pipe and lost."""
    import signal
    from tests.support.kernels import vector_add_spec
    app = make_app(WORKERS=1, PUZZLE_WARMUP=0, SHARED_KERNELS=0)
    pool = app.extensions["dispatcher"]
    slot = pool.slots[0]
    dead = slot.worker.proc.pid
    os.kill(dead, signal.SIGKILL)
    wait_for(lambda: slot.worker.proc.poll() is not None, 10, "the worker to die")
    result = pool.run(vector_add_spec(n=4096), "alice")
    assert result["status"] == "ok", result["error"]
    assert slot.worker.proc.pid != dead and health(app)["workers"][0]["state"] == "ready"
