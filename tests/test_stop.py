"""The Socket.IO `stop` event through the real server and one real worker: it ends the client's
run, running or waiting, at once, and nobody else's; the next run works."""
import time

import pytest

from app import socketio
from tests.support.apps import first_worker_busy, running_app, wait_until_busy, wait_until_ready
from tests.support.kernels import ENDLESS, vector_add_spec
from tests.test_runs import collect_until_result



@pytest.fixture(scope="module")
def app(tmp_path_factory):
    with running_app(tmp_path_factory.mktemp("db"), WORKERS=1, RUN_TIMEOUT_S=20.0) as app:
        yield app


def ready(app):
    wait_until_ready(app, timeout_s=60)


def result_of(client, run_id):
    return collect_until_result(client, run_id)[-1]["args"][0]["result"]


def test_stop_ends_a_running_run_at_once_and_the_next_run_works(app):
    ready(app)
    alice, mallory = socketio.test_client(app), socketio.test_client(app)
    run_id = alice.emit("run", {"spec": vector_add_spec(n=1024, source=ENDLESS)}, callback=True)["run_id"]
    wait_until_busy(app)

    assert mallory.emit("stop", {"run_id": run_id}, callback=True) == {"stopped": False}  # not hers
    assert first_worker_busy(app)
    pressed = time.monotonic()
    assert alice.emit("stop", {"run_id": run_id}, callback=True) == {"stopped": True}
    result = collect_until_result(alice, run_id, timeout_s=2)[-1]["args"][0]["result"]  # at once, not at the 20 s limit
    print(f"\nstopped after {time.monotonic() - pressed:.2f} s")
    assert result["status"] == "error" and result["error"]["phase"] == "stopped"
    assert "you stopped this run while it ran" in result["error"]["message"]

    ready(app)  # a fresh worker in place of the one that ran it
    run_id = alice.emit("run", {"spec": vector_add_spec(n=1024)}, callback=True)["run_id"]
    assert result_of(alice, run_id)["status"] == "ok"


def test_stop_takes_a_waiting_run_out_of_the_queue(app):
    ready(app)
    alice = socketio.test_client(app)
    endless = alice.emit("run", {"spec": vector_add_spec(n=1024, source=ENDLESS)}, callback=True)["run_id"]
    wait_until_busy(app)
    waiting = alice.emit("run", {"spec": vector_add_spec(n=1024)}, callback=True)["run_id"]
    assert app.extensions["dispatcher"].health()["queued"] == 1

    assert alice.emit("stop", {"run_id": waiting}, callback=True) == {"stopped": True}
    result = result_of(alice, waiting)
    assert result["error"]["phase"] == "stopped" and "before it started" in result["error"]["message"]
    assert app.extensions["dispatcher"].health()["queued"] == 0
    alice.emit("stop", {"run_id": endless}, callback=True)
    assert result_of(alice, endless)["error"]["phase"] == "stopped"


def test_stop_without_a_run_id_is_refused_in_the_ack(app):
    client = socketio.test_client(app)
    ack = client.emit("stop", {}, callback=True)
    assert ack["stopped"] is False and "run_id" in ack["error"]["message"]
    assert client.emit("stop", {"run_id": "no-such-run"}, callback=True) == {"stopped": False}


