"""The real server, started as `make run` starts it (`python -m app.serve`: gunicorn, one gevent worker
process) on a free port, for the benchmarks and the tests that need the real thing."""
import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def children_of(pid):
    try:
        with open(f"/proc/{pid}/task/{pid}/children") as f:
            return [int(p) for p in f.read().split()]
    except OSError:
        return []


# Every client of a benchmark connects from this host's one address, standing for many people at
# as many addresses: the per-address limits would count them as one. And the one-time solving of
# the built-in puzzles (kept in the database, which a benchmark makes new) is not what is measured.
BENCHMARK_SETTINGS = {"CONNECTIONS_PER_ADDRESS": 1_000_000, "QUEUE_PER_ADDRESS": 1_000_000,
                      "WRITES_PER_MINUTE": 1_000_000, "PUZZLE_WARMUP": 0}


class Server:
    """`python -m app.serve` with `settings` (environment variables) added to this process's
    environment (over BENCHMARK_SETTINGS); its own process group, so that stopping it takes its
    workers along."""

    def __init__(self, log=None, root=ROOT, **settings):
        """`root`: the checkout to serve (another one's server, to compare two builds side by side)."""
        self.root = root
        self.port = int(settings.pop("PORT", 0)) or free_port()
        settings = {**BENCHMARK_SETTINGS, **settings}
        self.env = {**os.environ, **{k: str(v) for k, v in settings.items()}, "PORT": str(self.port)}
        self.log, self.proc = log, None

    @property
    def url(self):
        return f"http://127.0.0.1:{self.port}"

    def start(self, timeout_s=180):
        self.proc = subprocess.Popen([sys.executable, "-m", "app.serve"], cwd=self.root, env=self.env,
                                     stdout=self.log or subprocess.DEVNULL, stderr=subprocess.STDOUT,
                                     start_new_session=True)
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline and self.proc.poll() is None:
            if self.health().get("ok"):
                return self
            time.sleep(0.3)
        self.stop()
        raise RuntimeError(f"the server on port {self.port} did not become healthy")

    def health(self, timeout_s=5):
        try:
            with urllib.request.urlopen(f"{self.url}/healthz", timeout=timeout_s) as r:
                return json.load(r)
        except urllib.error.HTTPError as e:
            return json.load(e)
        except (OSError, ValueError):
            return {}

    def web_pid(self):
        """The gunicorn worker process: the one web process."""
        kids = children_of(self.proc.pid)
        return kids[0] if kids else None

    def stop(self):
        if self.proc is None:
            return
        self.proc.send_signal(signal.SIGINT)  # gunicorn's quick shutdown; its workers see their input close
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            pass
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.proc.pid, signal.SIGKILL)  # whatever is left of the group: workers, run processes
        self.proc.wait()
        self.proc = None

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()
