"""What the hostile corpus attacks: the app with real workers (through Flask's test client), a real
gunicorn server, the server as `make run` starts it, and the host sockets a run tries to reach; the
harness that gives each case its context and cleans up after it; the fixtures a test module of the
corpus imports (each module-scoped: one app or server per module); and the scenario's frame (the
server alive and the next normal run working afterwards)."""
import contextlib
import glob
import http.client
import json
import os
import secrets
import signal
import socket
import subprocess
import sys

import pytest

from tests.support import ROOT
from tests.support.apps import wait_until_ready, wait_until_warmed
from tests.support.hostile import (CREDENTIAL, JSON, SECRET, check, children_of, cmdline, free_port, host_disk,
                                   hostile_spec, processes_carrying, remove_host_path, result_summary, wait_for)
from tests.support.kernels import vector_add_spec

RUN_TIMEOUT_S = 20.0
RUN_MEMORY_MB = 4096  # the memory bomb goes over it without pressing on the host


# ---------------------------------------------------------------- targets: the app, a gunicorn server

class AppTarget:
    """The module's app with real workers, through Flask's test client."""

    def __init__(self, app):
        self.app, self.client = app, app.test_client()

    def new_client(self):
        return self.app.test_client()  # another browser: another owner

    def run(self, spec, client=None):
        response = (client or self.client).post("/api/run", json=spec)
        assert response.status_code == 200, response.get_data(as_text=True)[:2000]
        return response.get_json()

    def workers(self):
        return self.app.extensions["dispatcher"].health()["workers"]

    def worker_pids(self):
        return [w["pid"] for w in self.workers() if w.get("pid")]

    def survival_problems(self):
        problems = []
        response = self.client.get("/healthz")
        if response.status_code != 200 or not (response.get_json() or {}).get("ok"):
            problems.append(f"/healthz after the attack: {response.status_code} {response.get_data(as_text=True)[:500]}")
        result = self.run(vector_add_spec(n=1024, block=256))
        if result.get("status") != "ok":
            problems.append(f"the next normal run failed: {result_summary(result)}")
        return problems


class GunicornServer:
    """`gunicorn -w 1 --threads 8 'app:create_app()'` on a free port, its database, runs and HOME (so
    its control socket, ~/.gunicorn/gunicorn.ctl) in a temp dir. Restarted when an attack took it down."""

    def __init__(self, root):
        self.root, self.proc, self.port = root, None, None
        self.home = os.path.join(root, "home")
        self.database = os.path.join(root, "db", "server.sqlite")
        self.run_root = os.path.join(root, "runs")
        for directory in (self.home, os.path.dirname(self.database)):
            os.makedirs(directory, exist_ok=True)
        self.log = open(os.path.join(root, "gunicorn.log"), "ab")

    @property
    def ctl_socket(self):
        return os.path.join(self.home, ".gunicorn", "gunicorn.ctl")

    @property
    def master_pid(self):
        return self.proc.pid

    def worker_pids(self):
        web = self.web_pid()
        return [p for p in children_of(web) if "sandbox.worker" in cmdline(p)] if web else []

    def web_pid(self):
        kids = [p for p in children_of(self.proc.pid) if "gunicorn" in cmdline(p)]
        return kids[0] if kids else None

    settings = {"TRUSTED_PROXY_HOPS": "1"}  # a proxy in front says who the client is and whether it came over https

    @property
    def url(self):
        return f"http://127.0.0.1:{self.port}"

    def health(self):
        try:
            status, body = self.request("GET", "/healthz", timeout=10)
            return json.loads(body)
        except (OSError, ValueError, http.client.HTTPException):
            return {}

    def command(self):
        gunicorn = os.path.join(ROOT, ".venv", "bin", "gunicorn")
        command = [gunicorn] if os.path.exists(gunicorn) else [sys.executable, "-m", "gunicorn"]
        return command + ["-w", "1", "--threads", "8", "-b", f"127.0.0.1:{self.port}", "app:create_app()"]

    def start(self):
        self.port = free_port()
        env = {k: v for k, v in os.environ.items() if k != "XDG_RUNTIME_DIR"}
        env.update({"DATABASE": self.database, "RUN_ROOT": self.run_root, "HOME": self.home, "SECRET_KEY": SECRET,
                    "WORKERS": "1", "RUN_TIMEOUT_S": str(RUN_TIMEOUT_S), "HOST": "127.0.0.1", "PORT": str(self.port),
                    **self.settings})
        self.proc = subprocess.Popen(self.command(), cwd=ROOT, env=env, stdout=self.log, stderr=subprocess.STDOUT,
                                     start_new_session=True)
        if not wait_for(lambda: self.healthy() or self.proc.poll() is not None, 180, 0.3) or not self.healthy():
            self.stop()
            raise RuntimeError("the gunicorn server did not become healthy (see gunicorn.log in the test's temp dir)")

    def ensure(self):
        """A server to attack: this one if healthy (waiting a while for a respawned web process), else a new one."""
        if self.proc is not None and self.proc.poll() is None and wait_for(self.healthy, 60, 0.3):
            return
        self.stop()
        self.start()

    def stop(self):
        if self.proc is not None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.proc.pid, signal.SIGKILL)  # the server's whole process group, workers included
            self.proc.wait()
            self.proc = None

    def request(self, method, path, body=None, headers=None, timeout=90):
        connection = http.client.HTTPConnection("127.0.0.1", self.port, timeout=timeout)
        try:
            connection.request(method, path, body=body, headers=headers or {})
            response = connection.getresponse()
            return response.status, response.read()
        finally:
            connection.close()

    def healthy(self):
        try:
            status, body = self.request("GET", "/healthz", timeout=5)
            return status == 200 and json.loads(body)["ok"]
        except (OSError, ValueError, KeyError, http.client.HTTPException):
            return False

    def run(self, spec, client=None):
        try:
            status, body = self.request("POST", "/api/run", json.dumps(spec).encode(), {"Content-Type": JSON})
        except (OSError, http.client.HTTPException) as e:
            raise AssertionError(f"the server dropped the run's request: {e!r}") from None
        assert status == 200, body[:2000]
        return json.loads(body)

    def survival_problems(self):
        problems = []
        try:
            status, body = self.request("GET", "/healthz", timeout=10)
            if status != 200 or not json.loads(body).get("ok"):
                problems.append(f"/healthz after the attack: {status} {body[:500]!r}")
        except (OSError, http.client.HTTPException, ValueError) as e:
            return [f"the server no longer answers /healthz: {e!r}"]
        try:
            result = self.run(vector_add_spec(n=1024, block=256))
        except AssertionError as e:
            return problems + [f"the next normal run failed: {e}"]
        if result.get("status") != "ok":
            problems.append(f"the next normal run failed: {result_summary(result)}")
        return problems


class ProductionServer(GunicornServer):
    """The server as `make run` starts it (`python -m app.serve`: gunicorn's gevent worker, a greenlet
    per connection), with small per-address limits: for attacks of many connections."""

    settings = {"TRUSTED_PROXY_HOPS": "1", "CONNECTIONS_PER_ADDRESS": "20", "QUEUE_PER_ADDRESS": "6"}

    def command(self):
        return [sys.executable, "-m", "app.serve"]


class Listeners:
    """Host sockets an attack tries to reach: TCP and UDP on 127.0.0.1, an abstract unix socket."""

    def __init__(self):
        self.tcp = socket.socket()
        self.tcp.bind(("127.0.0.1", 0))
        self.tcp.listen(16)
        self.udp = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.udp.bind(("127.0.0.1", 0))
        self.abstract_name = "hostile-" + secrets.token_hex(8)
        self.abstract = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.abstract.bind("\0" + self.abstract_name)
        self.abstract.listen(16)
        for s in (self.tcp, self.udp, self.abstract):
            s.setblocking(False)

    def context(self):
        return {"tcp_port": self.tcp.getsockname()[1], "udp_port": self.udp.getsockname()[1],
                "abstract": self.abstract_name}

    def reached(self):
        """What reached the host's sockets (drained, so one case's leak is reported once)."""
        reached = []
        for name, s, take in (("tcp", self.tcp, lambda s: s.accept()[0].close()),
                              ("udp", self.udp, lambda s: s.recv(4096)),
                              ("abstract unix", self.abstract, lambda s: s.accept()[0].close())):
            with contextlib.suppress(BlockingIOError):
                while True:
                    take(s)
                    reached.append(name)
        return reached

    def close(self):
        for s in (self.tcp, self.udp, self.abstract):
            s.close()


class Harness:
    """One target and what a case needs around it: a fresh context (markers, pids, paths), a victim
    process to aim at, the host sockets, and the clean-up of whatever an attack may leave."""

    def __init__(self, target, database, run_root, listeners):
        self.target, self.database, self.run_root, self.listeners = target, database, run_root, listeners

    def context(self, **extra):
        marker = "hostile-" + secrets.token_hex(6)
        scratch = sorted(glob.glob(os.path.join(self.run_root, "run-*")))
        context = {"marker": marker, "number": str(secrets.randbelow(10 ** 9)).zfill(9), "test_pid": os.getpid(),
                   "worker_pids": self.target.worker_pids(), "checkout": ROOT, "database": self.database,
                   "run_root": self.run_root, "scratch_dirs": scratch, "secret": SECRET, "credential": CREDENTIAL,
                   "disk": host_disk(),
                   **self.listeners.context()}
        if isinstance(self.target, GunicornServer):
            context.update(port=self.target.port, master_pid=self.target.master_pid,
                           server_pid=self.target.web_pid(), ctl_socket=self.target.ctl_socket)
        context.update(extra)
        return context

    def clean(self, context, victim=None):
        if victim is not None:
            victim.kill()
            victim.wait()
        for pid in processes_carrying(context["marker"], "29." + context["number"]):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        for path in (f"/dev/{context['marker']}", f"/etc/{context['marker']}", f"/usr/{context['marker']}",
                     os.path.join(ROOT, "sandbox", context["marker"] + ".py"),
                     f"/sys/fs/cgroup/pids/{context['marker']}", f"/sys/fs/cgroup/{context['marker']}",
                     *glob.glob(f"/dev/shm/{context['marker']}*")):
            if os.path.lexists(path):
                remove_host_path(path)

    def attack(self, attack, expect):
        victim = subprocess.Popen(["sleep", "300"], start_new_session=True)
        context = self.context(victim_pid=victim.pid)
        try:
            result = self.target.run(hostile_spec(attack, context))
            problems = []
            try:
                check(result, expect, context, self.target)
            except AssertionError as e:
                problems.append(str(e))
            reached = self.listeners.reached()
            if reached:
                problems.append(f"the run reached the host's sockets: {reached}")
            assert not problems, "\n".join(problems)
        finally:
            self.clean(context, victim)


# ---------------------------------------------------------------- fixtures

@pytest.fixture(scope="module")
def listeners():
    found = Listeners()
    yield found
    found.close()


@pytest.fixture(scope="module")
def hostile(tmp_path_factory, listeners):
    """One app with two real workers, its own database and run root; SECRET_KEY set in the server's
    environment, for a run to look for."""
    from app import create_app
    root = tmp_path_factory.mktemp("hostile-app")
    database, run_root = str(root / "db" / "app.sqlite"), str(root / "runs")
    os.makedirs(os.path.dirname(database))
    before = os.environ.get("SECRET_KEY")
    os.environ["SECRET_KEY"] = SECRET
    os.environ["NVIDIA_API_KEY"] = CREDENTIAL
    # Behind one proxy (TRUSTED_PROXY_HOPS=1): a case says which address a request comes from.
    app = create_app({"TESTING": True, "DATABASE": database, "RUN_ROOT": run_root, "WORKERS": 2,
                      "RUN_TIMEOUT_S": RUN_TIMEOUT_S, "RUN_MEMORY_MB": RUN_MEMORY_MB, "TRUSTED_PROXY_HOPS": 1,
                      "QUEUE_PER_ADDRESS": 6})
    try:
        wait_until_ready(app)
        wait_until_warmed(app)  # the shared kernels (an attack's target), and runs in a steady state
        yield Harness(AppTarget(app), database, run_root, listeners)
    finally:
        app.extensions["dispatcher"].stop()
        os.environ.pop("NVIDIA_API_KEY", None)
        if before is None:
            os.environ.pop("SECRET_KEY", None)
        else:
            os.environ["SECRET_KEY"] = before


def serving(server):
    """A server subprocess for a module's tests, stopped after them."""
    server.start()
    yield server
    server.stop()
    server.log.close()


def harness_of(server, listeners):
    server.ensure()  # restarted if an attack took it down
    return Harness(server, server.database, server.run_root, listeners)


@pytest.fixture(scope="module")
def gunicorn_server(tmp_path_factory):
    yield from serving(GunicornServer(str(tmp_path_factory.mktemp("hostile-server"))))


@pytest.fixture
def served(gunicorn_server, listeners):
    return harness_of(gunicorn_server, listeners)


@pytest.fixture(scope="module")
def production_server(tmp_path_factory):
    yield from serving(ProductionServer(str(tmp_path_factory.mktemp("hostile-production"))))


@pytest.fixture
def production(production_server, listeners):
    return harness_of(production_server, listeners)


def survives(harness, scenario):
    """Run an attack of more than one step: its own problems and the target's survival, at once."""
    problems = []
    try:
        scenario(harness)
    except AssertionError as e:
        problems.append(str(e))
    problems += harness.target.survival_problems()
    assert not problems, "\n".join(problems)
