import os
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)


def has_gpu():
    try:
        import torch
        return torch.cuda.is_available()
    except ImportError:
        return False


def pytest_collection_modifyitems(config, items):
    skip_gpu = pytest.mark.skip(reason="needs a CUDA GPU")
    skip_browser = pytest.mark.skip(reason="needs /usr/bin/chromium")
    gpu, chromium = has_gpu(), os.path.exists("/usr/bin/chromium")
    for item in items:
        if "gpu" in item.keywords and not gpu:
            item.add_marker(skip_gpu)
        if "browser" in item.keywords and not chromium:
            item.add_marker(skip_browser)


@pytest.fixture(autouse=True)
def results_conform(monkeypatch):
    """Every result that leaves the server during a test conforms to the result's one definition
    (sandbox.result); a test that meets one that does not fails."""
    from sandbox import result as results
    delivered, found = results.delivered, []

    def checked(result, run_id, stdout):
        result = delivered(result, run_id, stdout)
        found.extend(results.problems(result))
        return result

    monkeypatch.setattr(results, "delivered", checked)
    yield
    assert found == [], f"a result departs from sandbox.result: {found}"


@pytest.fixture(scope="session")
def app(tmp_path_factory):
    """One real app for the whole session: a real worker pool (interpreter on CPU), a temp database."""
    from app import create_app
    app = create_app({"TESTING": True, "DATABASE": str(tmp_path_factory.mktemp("db") / "test.sqlite"),
                      "WORKERS": 2, "RUN_TIMEOUT_S": 20.0})
    wait_until_ready(app)
    yield app
    app.extensions["dispatcher"].stop()


def wait_until_ready(app, timeout_s=180):
    import time
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if all(w["state"] == "ready" for w in app.extensions["dispatcher"].health()["workers"]):
            return
        time.sleep(0.2)
    raise RuntimeError("workers did not start")


@pytest.fixture
def client(app):
    return app.test_client()


VECTOR_ADD = '''import triton
import triton.language as tl


@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK_SIZE: tl.constexpr):
    pid = tl.program_id(axis=0)
    offs = pid * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    y = tl.load(y_ptr + offs, mask=mask)
    tl.store(out_ptr + offs, x + y, mask=mask)
'''


def vector_add_spec(n=98432, block=1024, source=VECTOR_ADD, **options):
    return {
        "version": 1, "source": source, "kernel": "add_kernel",
        "inputs": {"x": f"torch.randn({n})", "y": f"torch.randn({n})", "out": f"torch.empty({n})"},
        "args": {"x_ptr": "x", "y_ptr": "y", "out_ptr": "out", "n": "x.numel()", "BLOCK_SIZE": block},
        "grid": "(triton.cdiv(n, meta['BLOCK_SIZE']),)",
        "reference": {"out": "x + y"},
        "options": {"ir": False, **options},
    }


@pytest.fixture
def spec():
    return vector_add_spec(n=4096)


@pytest.fixture(scope="session")
def live_server(app):
    """The session app served over real HTTP and Socket.IO in a background thread; yields its base URL."""
    import threading
    from werkzeug.serving import make_server
    server = make_server("127.0.0.1", 0, app, threaded=True)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_port}"
    server.shutdown()
