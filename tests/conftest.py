"""Fixtures: a real app with real workers (one for the session, or made to measure with make_app),
its test client, a live server, a shared headless chromium, and the checks every test gets. The one
skip mechanism is the markers: `gpu` tests skip without a GPU, `browser` tests without chromium.

The tiers (pytest.ini): a test is `unit` (make test-unit, the inner loop) unless it is `browser`,
`gpu` or `integration`; it is `integration` when it uses a fixture that starts workers or a server,
or its module says so (it starts them itself, or runs a corpus). A unit test that starts a worker
or opens a network connection fails, saying so."""
import os
import socket

import pytest

# The servers the tests start (in this process and as subprocesses) solve the built-in puzzles only
# when a test asks (PUZZLE_WARMUP=1): in the background they would take worker time from the runs
# the tests time and count.
os.environ.setdefault("PUZZLE_WARMUP", "0")

from tests.support import has_gpu
from tests.support.apps import running_app, served, wait_until_ready
from tests.support.browser import CHROMIUM, CHROMIUM_ARGS
from tests.support.kernels import vector_add_spec


WORKER_FIXTURES = {"app", "client", "make_app", "live_server"}  # each starts real workers
SERVER_FIXTURES = {"postgres"}  # each starts a server


def pytest_collection_modifyitems(config, items):
    gpu, chromium = has_gpu(), os.path.exists(CHROMIUM)
    skips = {"gpu": (not gpu, "needs a CUDA GPU"), "cpu_only": (gpu, "checks the answer of a host without a GPU"),
             "browser": (not chromium, f"needs {CHROMIUM}")}
    unmarked = [item.nodeid for item in items if "browser" in getattr(item, "fixturenames", ()) and "browser" not in item.keywords]
    if unmarked:
        raise pytest.UsageError(f"tests that drive chromium need @pytest.mark.browser: {unmarked}")
    for item in items:
        for marker, (skip, reason) in skips.items():
            if skip and marker in item.keywords:
                item.add_marker(pytest.mark.skip(reason=reason))
        if (WORKER_FIXTURES | SERVER_FIXTURES) & set(getattr(item, "fixturenames", ())):
            item.add_marker(pytest.mark.integration)
        if not {"browser", "gpu", "integration"} & set(item.keywords):
            item.add_marker(pytest.mark.unit)


class StartsAWorker(AssertionError):
    pass


@pytest.fixture(autouse=True)
def unit_tier(request, monkeypatch):
    """A unit test starts no worker and reaches no network: the tier's promise, kept by failing."""
    if request.node.get_closest_marker("unit") is None:
        yield
        return
    from app.dispatch import slot as dispatcher

    def no_worker(*args, **kwargs):
        raise StartsAWorker(f"{request.node.nodeid} is a unit test and starts a worker: mark it integration")

    def no_network(sock, address, *rest):
        if sock.family in (socket.AF_INET, socket.AF_INET6):
            raise StartsAWorker(f"{request.node.nodeid} is a unit test and connects to {address}: mark it integration")
        return real_connect(sock, address, *rest)

    real_connect = socket.socket.connect
    monkeypatch.setattr(dispatcher.WorkerProcess, "__init__", no_worker)
    monkeypatch.setattr(socket.socket, "connect", no_network)
    yield


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


@pytest.fixture
def make_app(tmp_path):
    """make_app(**config) -> an app with real workers and its own database and run root, ready;
    stopped after the test."""
    from app import create_app
    made = []

    def make(wait=True, **config):
        app = create_app({"TESTING": True, "DATABASE": str(tmp_path / f"db{len(made)}.sqlite"),
                          "RUN_ROOT": str(tmp_path / f"runs{len(made)}"), **config})
        made.append(app)
        if wait and app.extensions.get("dispatcher") is not None:
            wait_until_ready(app)
        return app

    yield make
    for app in made:
        if app.extensions.get("dispatcher") is not None:
            app.extensions["dispatcher"].stop()


@pytest.fixture(scope="session")
def postgres():
    """A real PostgreSQL server for the session (tests/support/postgres.py); its database(name) makes a new one."""
    from tests.support.postgres import PostgresServer, binaries
    if binaries() is None:
        pytest.skip("needs PostgreSQL (Debian's postgresql; .ci/run installs it)")
    server = PostgresServer().start()
    yield server
    server.stop()


@pytest.fixture(scope="module")
def browser():
    """One headless chromium per test module; each test opens its own context. Not one for the whole
    session: Playwright's sync API keeps an event loop running while it is open, which other modules'
    own browsers and asyncio clients must not find."""
    from playwright.sync_api import sync_playwright

    from tests.support.browser import predicates_as_functions
    predicates_as_functions()  # the pages' CSP allows no eval
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield browser
        browser.close()


@pytest.fixture(scope="session")
def app(tmp_path_factory):
    """One real app for the whole session: a real worker pool (interpreter on CPU), a temp database."""
    from app import socketio
    with running_app(tmp_path_factory.mktemp("db"), WORKERS=2, RUN_TIMEOUT_S=20.0) as app:
        app.socketio_server = socketio.server  # see live_server_socketio
        yield app


@pytest.fixture
def client(app):
    return app.test_client()


@pytest.fixture
def spec():
    return vector_add_spec(n=4096)


@pytest.fixture(autouse=True)
def live_server_socketio(request):
    """A test of the live server talks to the session app's Socket.IO server. The module's `socketio`
    object handles and emits through the server of the app made last, and a module may make its own
    app (test_dispatch) after the session's."""
    if "live_server" in request.fixturenames:
        from app import socketio
        server = socketio.server = request.getfixturevalue("app").socketio_server
        # Flask-SocketIO's test client replaces these on the server it is used with, and the
        # replacements drop every packet for a client that is not a test client (a browser's)
        for name in ("_send_packet", "_send_eio_packet"):
            server.__dict__.pop(name, None)
    yield


@pytest.fixture(scope="session")
def live_server(app):
    """The session app served over real HTTP and Socket.IO in a background thread; yields its base URL."""
    with served(app) as url:
        yield url
