"""The test tiers keep their promise (tests/conftest.py): a unit test that starts a worker or opens
a network connection fails, naming itself; a test that drives chromium is marked browser."""
import socket

import conftest  # tests/conftest.py, as pytest loaded it
import pytest


def test_a_unit_test_opens_no_network_connection():
    with pytest.raises(conftest.StartsAWorker, match="is a unit test and connects to"):
        socket.create_connection(("127.0.0.1", 9), timeout=1)


def test_a_unit_test_may_use_a_local_socket():
    left, right = socket.socketpair()
    left.sendall(b"x")
    assert right.recv(1) == b"x"
    left.close(), right.close()


def test_a_unit_test_starts_no_worker():
    from app.dispatch.slot import WorkerProcess
    with pytest.raises(conftest.StartsAWorker, match="is a unit test and starts a worker"):
        WorkerProcess({}, None)


def test_every_collected_test_is_in_one_tier(request):
    """Run with the whole suite, this checks every test: unit tests use no fixture that starts workers."""
    for item in request.session.items:
        tiers = {"unit", "integration", "browser", "gpu"} & set(item.keywords)
        assert tiers, item.nodeid
        if "unit" in tiers:
            assert not conftest.WORKER_FIXTURES & set(item.fixturenames) and "browser" not in item.fixturenames, item.nodeid
