"""Compile ahead (the `compile` event, sandbox.worker.ahead): through the real server and its real workers,
as the page sends it while its person types."""
import time

from app import socketio
from sandbox.run.pipeline import COMPILED_AHEAD
from tests.support.kernels import VECTOR_ADD, vector_add_spec
from tests.test_runs import collect_until_result


def edited(mark, **options):
    """The vector add with one edit (a new source: nothing of it is compiled yet), IR on as the page has it."""
    source = VECTOR_ADD.replace("    mask = offs < n\n", f"    mask = offs < n  # {mark} {time.time()}\n")
    return vector_add_spec(n=4096, source=source, ir=True, **options)


def answer(client, compile_id, timeout_s=60):
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        for event in client.get_received():
            if event["name"] == "compile_result" and event["args"][0]["compile_id"] == compile_id:
                return event["args"][0]
        time.sleep(0.05)
    raise AssertionError(f"no compile_result for {compile_id}")


def test_a_compile_error_comes_back_with_its_line_before_any_run(app):
    client = socketio.test_client(app)
    spec = edited("error")
    spec["args"]["BLOCK_SIZE"] = 3  # tl.arange(0, 3): not a power of 2
    ack = client.emit("compile", {"spec": spec}, callback=True)
    found = answer(client, ack["compile_id"])
    assert found["ok"] is False
    assert found["error"]["phase"] == "compile" and found["error"]["line"] == 8
    assert "power of 2" in found["error"]["message"] and found["error"]["hint"]


def test_a_run_after_its_compile_ahead_says_it_was_compiled_ahead(app):
    client = socketio.test_client(app)
    spec = edited("ahead")
    assert answer(client, client.emit("compile", {"spec": spec}, callback=True)["compile_id"])["ok"] is True
    run_id = client.emit("run", {"spec": spec}, callback=True)["run_id"]
    result = collect_until_result(client, run_id)[-1]["args"][0]["result"]
    assert result["status"] == "ok", result["error"]
    assert COMPILED_AHEAD in result["notes"]
    other = client.emit("run", {"spec": edited("not compiled ahead")}, callback=True)["run_id"]
    assert COMPILED_AHEAD not in collect_until_result(client, other)[-1]["args"][0]["result"]["notes"]


def test_a_malformed_compile_request_is_refused_in_the_ack_naming_the_field(app):
    client = socketio.test_client(app)
    ack = client.emit("compile", {"spec": {**edited("bad"), "inputs": []}}, callback=True)
    assert ack["error"]["phase"] == "parse" and ack["error"]["field"] == "inputs"
    ack = client.emit("compile", {"spec": edited("x"), "extra": 1}, callback=True)
    assert "extra" in ack["error"]["message"]


def test_a_flood_of_compiles_from_one_client_never_delays_another_clients_run(app):
    """Compiles wait behind every run and replace each other per owner: another client's run starts
    first in line, and the flood costs it no more than a run beside an idle server, give or take."""
    flooder, student = socketio.test_client(app), socketio.test_client(app)
    spec = vector_add_spec(n=4096)
    collect_until_result(student, student.emit("run", {"spec": spec}, callback=True)["run_id"])  # warm

    def timed_run():
        start = time.monotonic()
        run_id = student.emit("run", {"spec": spec}, callback=True)["run_id"]
        events = collect_until_result(student, run_id)
        return time.monotonic() - start, events

    alone, _ = timed_run()
    acks = [flooder.emit("compile", {"spec": edited(f"flood {i}")}, callback=True) for i in range(40)]
    ids = [ack["compile_id"] for ack in acks if "compile_id" in ack]
    refused = [ack["error"] for ack in acks if "error" in ack]
    assert ids and all(error["phase"] == "limit" and "faster than" in error["message"] for error in refused)
    assert len(ids) < 10, "one compile per 0.25 s and owner: the rest are refused at once"
    beside, events = timed_run()
    queued = [e["args"][0] for e in events if e["name"] == "run_status" and e["args"][0]["phase"] == "queued"]
    assert queued[0]["position"] == 1  # no compile is ahead of a run in line
    assert events[-1]["args"][0]["result"]["status"] == "ok"
    assert beside < 2 * alone + 1.0, (alone, beside)
    # the newest request of the flood is answered; most of the older ones were replaced unanswered
    last = answer(flooder, ids[-1])
    assert last["ok"] is True
    answered = [e for e in flooder.get_received() if e["name"] == "compile_result"]
    assert len(answered) < 10, len(answered)
