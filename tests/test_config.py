import os

from app.config import SETTINGS
from tests.support import ROOT


def test_every_setting_is_documented():
    with open(os.path.join(ROOT, "docs", "configuration.md")) as f:
        documented = f.read()
    missing = [s.name for s in SETTINGS if f"`{s.name}`" not in documented]
    assert not missing, f"settings missing from docs/configuration.md: {missing}"


def test_settings_come_from_the_environment(monkeypatch):
    from app import create_app
    monkeypatch.setenv("RUN_TIMEOUT_S", "7.5")
    monkeypatch.setenv("WORKERS", "3")
    app = create_app({"START_WORKERS": False, "DATABASE": ":memory:"})
    assert app.config["RUN_TIMEOUT_S"] == 7.5 and app.config["WORKERS"] == 3


def test_the_documents_say_which_settings_the_workers_need():
    with open(os.path.join(ROOT, "docs", "configuration.md")) as f:
        rows = [line.split(" | ") for line in f if line.startswith("| `")]
    marked = {cells[0][3:-1]: cells[2].strip() == "yes" for cells in rows if len(cells) >= 4}
    assert {s.name: marked.get(s.name) for s in SETTINGS} == {s.name: s.worker for s in SETTINGS}


def test_a_worker_reads_back_every_worker_setting_its_server_sets(monkeypatch, tmp_path):
    """The server's values reach the workers (app.dispatch.slot.worker_env), which read them with the
    same definitions: each worker setting set to something other than its default comes back whole."""
    from app.dispatch.slot import worker_env
    from sandbox.jail import isolation
    from sandbox import protocol, settings
    changed = {s.name: (str(tmp_path) if s.default is None else "none" if isinstance(s.default, str)
                        else type(s.default)(s.default * 2 + 1)) for s in SETTINGS if s.worker}
    env = worker_env({**settings.from_environment({}), **changed, "DATABASE": str(tmp_path / "db")})
    assert {name: settings.value(name, env) for name in changed} == changed
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    limits = isolation.Limits.from_settings()
    assert {name: getattr(limits, field) for field, name in isolation.LIMIT_SETTINGS.items()} == \
        {name: changed[name] for name in isolation.LIMIT_SETTINGS.values()}
    assert protocol.Limits.from_environment().max_depth == changed["MESSAGE_MAX_DEPTH"]


def test_the_sandbox_defaults_are_the_settings_defaults(monkeypatch):
    from sandbox.jail import isolation
    from sandbox import protocol, settings
    from sandbox.trace import record as trace
    for name in settings.WORKER_SETTINGS:
        monkeypatch.delenv(name, raising=False)
    assert isolation.Limits.from_settings() == isolation.Limits()
    assert protocol.Limits.from_environment() == protocol.Limits()
    assert trace.LIMITS == {"max_programs": settings.default("TRACE_MAX_PROGRAMS"),
                            "max_bytes": settings.default("TRACE_MAX_BYTES")}


def test_no_module_of_app_reads_a_setting_when_it_is_imported():
    """The app's settings are its config, read once when the app is made and passed down, so that a
    test's config (or a deployment's) holds everywhere: nothing that runs at import (a module's
    constants, a class's body) reads the environment or a setting."""
    import ast
    import pathlib
    reads = {"value", "from_environment", "getenv", "environ", "default"}

    def run_at_import(node):
        """The nodes of `node` that run when the module is imported: not those in a function's body."""
        yield node
        for child in ast.iter_child_nodes(node):
            if not isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
                yield from run_at_import(child)

    found = []
    for path in sorted(pathlib.Path(ROOT, "app").rglob("*.py")):
        for node in run_at_import(ast.parse(path.read_text())):
            name = node.attr if isinstance(node, ast.Attribute) else node.id if isinstance(node, ast.Name) else None
            if name in reads:
                found.append(f"{path.relative_to(ROOT)}:{node.lineno} {name}")
    assert found == []


def test_the_dispatch_clocks_are_the_apps_config():
    from app import create_app
    from app.dispatch.interface import wait_bound_s
    app = create_app({"START_WORKERS": False, "DATABASE": ":memory:", "RUN_GRACE_S": 1.0, "WAIT_MARGIN_S": 2.0,
                      "QUEUE_WAIT_S": 3.0, "RUN_TIMEOUT_S": 4.0, "STUCK_MARGIN_S": 0.5})
    assert wait_bound_s(app.config) == 10.0
    slot = app.extensions["dispatcher"].slots[0]
    slot.state, slot.busy_since = "busy", __import__("time").monotonic() - 5.6
    assert slot.stuck()  # 4 + 1 + 0.5 s: the app's margins, not the defaults (10 s and 15 s)


def test_a_requests_bound_is_the_apps_config():
    """REQUEST_MAX_VALUES as the app's config says, over HTTP and Socket.IO alike, not the
    environment's (which a test's config could not override)."""
    from app import create_app, socketio
    app = create_app({"START_WORKERS": False, "DATABASE": ":memory:", "REQUEST_MAX_VALUES": 40})
    body = {"spec": {"source": "x", "kernel": "k", "inputs": {f"x{i}": "1" for i in range(50)}}}
    error = app.test_client().post("/api/snippets", json=body).get_json()["error"]
    assert "REQUEST_MAX_VALUES" in error["message"] and error["field"] == "size", error
    ack = socketio.test_client(app).emit("run", body, callback=True)
    assert "REQUEST_MAX_VALUES" in ack["error"]["message"], ack
