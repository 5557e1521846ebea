"""A real app with its workers: waiting for them (ready, busy, warmed), a module's own app, and an
app served over real HTTP and Socket.IO."""
import contextlib
import threading
import time


def wait_until_ready(app, timeout_s=180):
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if all(w["state"] == "ready" for w in app.extensions["dispatcher"].health()["workers"]):
            return
        time.sleep(0.2)
    raise RuntimeError("workers did not start")


def first_worker_busy(app):
    return app.extensions["dispatcher"].health()["workers"][0]["state"] == "busy"


def wait_until_busy(app, timeout_s=20):
    """Until the first worker has taken a run."""
    deadline = time.monotonic() + timeout_s
    while not first_worker_busy(app):
        assert time.monotonic() < deadline, "the run never started"
        time.sleep(0.05)


@contextlib.contextmanager
def running_app(directory, wait=wait_until_ready, **config):
    """A real app (its workers ready: `wait(app)`) with its database in `directory`, stopped
    afterwards: for a module's own app (make_app is a test's)."""
    from app import create_app
    app = create_app({"TESTING": True, "DATABASE": str(directory / "t.sqlite"), **config})
    wait(app)
    yield app
    app.extensions["dispatcher"].stop()


def wait_until_warmed(app, timeout_s=300):
    """Until every worker's warm-up (the gallery compiled into the shared kernels) has finished;
    returns the workers' warm-up reports."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        reports = [w.get("shared_kernels") or {} for w in app.extensions["dispatcher"].health()["workers"]]
        if all(r.get("state") == "ready" for r in reports):
            return reports
        time.sleep(0.3)
    raise RuntimeError(f"the workers' warm-up did not finish: {reports}")


@contextlib.contextmanager
def served(app):
    """`app` over real HTTP and Socket.IO in a background thread; yields its base URL."""
    from werkzeug.serving import make_server
    server = make_server("127.0.0.1", 0, app, threaded=True)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_port}"
    finally:
        server.shutdown()
