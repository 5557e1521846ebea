"""Scale out (REDIS_URL, DATABASE_URL): a real Redis on a free port, a real PostgreSQL made from scratch
(tests/support/postgres.py), two web processes as `make run` starts them and two Celery workers as `make
worker` starts them (Triton's interpreter here). A client on either web process gets its results,
never another client's events; a worker killed mid-run costs that run an error result, exactly once,
and the next run works; a web process killed costs only its own clients; the owner's share of the
queue holds across web processes; no result is lost or given twice; a class made on one web process
counts the graded runs its students make through the other."""
import contextlib
import http.cookiejar
import json
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
import urllib.request

import pytest

from app.gallery import load_example
from benchmarks.server import ROOT, Server, free_port

socketio = pytest.importorskip("socketio")
pytestmark = [pytest.mark.integration,  # Redis, PostgreSQL, web processes and Celery workers
              pytest.mark.skipif(shutil.which("redis-server") is None, reason="needs redis-server (.ci/run installs it)")]

RUN_TIMEOUT_S = 15.0
SLEEPY = "\nimport time\ntime.sleep(60)\n"  # module level: the run sleeps past its timeout
SETTINGS = {"RUN_TIMEOUT_S": RUN_TIMEOUT_S, "SECRET_KEY": "one key for every web process"}


def vector_add(extra=""):
    spec = load_example("vector_add")["spec"]
    spec["inputs"] = {name: expression.replace("98432", "4096") for name, expression in spec["inputs"].items()}
    spec["options"].update({"bench": False, "trace": False, "ir": False})
    spec["source"] += extra
    return spec


def wait_for(condition, timeout_s, what):
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if condition():
            return
        time.sleep(0.1)
    raise AssertionError(f"timed out waiting for {what}")


class Process:
    """A child in its own process group (its own children go with it), output to a log."""

    def __init__(self, argv, env, log):
        self.proc = subprocess.Popen(argv, cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT,
                                     start_new_session=True)

    def stop(self):
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.proc.pid, signal.SIGKILL)
        self.proc.wait()


class Cluster:
    def __init__(self, root, database_url):
        self.root, self.port = root, free_port()
        self.url = f"redis://127.0.0.1:{self.port}/0"
        self.env = {**os.environ, **{k: str(v) for k, v in SETTINGS.items()}, "REDIS_URL": self.url,
                    "RUN_ROOT": str(root / "runs"), "DATABASE_URL": database_url}
        self.log = open(root / "cluster.log", "ab")
        self.redis = Process(["redis-server", "--port", str(self.port), "--bind", "127.0.0.1", "--save", "",
                              "--appendonly", "no"], self.env, self.log)
        self.workers, self.webs = [], []

    def start_worker(self, **env):
        """`make worker`, with `env` (CUDA_VISIBLE_DEVICES: its GPU) over the cluster's environment."""
        worker = Process([sys.executable, "-m", "app.dispatch.celery_worker"], {**self.env, **env}, self.log)
        self.workers.append(worker)
        return worker

    def start_web(self):
        web = Server(log=self.log, **{k: self.env[k] for k in ("REDIS_URL", "RUN_ROOT", "DATABASE_URL", *SETTINGS)})
        self.webs.append(web)
        return web.start()

    def online(self, web):
        return [w for w in web.health().get("workers", []) if w["state"] in ("ready", "busy")]

    def stop(self):
        for web in self.webs:
            web.stop()
        for process in [*self.workers, self.redis]:
            process.stop()
        self.log.close()


@pytest.fixture(scope="module")
def cluster(tmp_path_factory, postgres):
    cluster = Cluster(tmp_path_factory.mktemp("scale"), postgres.database("scale"))
    try:
        cluster.start_worker(), cluster.start_worker()
        a = cluster.start_web()
        wait_for(lambda: len(cluster.online(a)) == 2, 180, "two Celery workers online")
        cluster.start_web()
        yield cluster
    finally:
        cluster.stop()


class Client:
    """A Socket.IO client (websocket) that keeps every run event it hears, by run id."""

    def __init__(self, web, cookie=None):
        self.sio = socketio.Client(reconnection=False)
        self.events, self.mine, self.lock = [], set(), threading.Lock()
        self.sio.on("*", self.heard)
        self.sio.connect(web.url, transports=["websocket"], headers={"Cookie": cookie} if cookie else {},
                         wait_timeout=20)

    def heard(self, event, data):
        with self.lock:
            self.events.append((event, data))

    def submit(self, spec):
        ack = self.sio.call("run", {"spec": spec}, timeout=30)
        if "run_id" in ack:
            self.mine.add(ack["run_id"])
        return ack

    def results(self, run_id):
        with self.lock:
            return [d["result"] for e, d in self.events if e == "run_result" and d["run_id"] == run_id]

    def statuses(self, run_id):
        with self.lock:
            return [d["phase"] for e, d in self.events if e == "run_status" and d["run_id"] == run_id]

    def result(self, run_id, timeout_s=60):
        wait_for(lambda: self.results(run_id), timeout_s, f"the result of run {run_id}")
        return self.results(run_id)[0]

    def strangers(self):
        with self.lock:
            return [d.get("run_id") for e, d in self.events if e.startswith("run_") and d.get("run_id") not in self.mine]

    def close(self):
        self.sio.disconnect()


def test_healthz_lists_the_workers_online_and_the_queue(cluster):
    health = cluster.webs[0].health()
    assert health["ok"] and health["queued"] == 0
    assert len({w["worker"] for w in health["workers"]}) == 2
    assert all(w["device"]["kind"] == "interpreter" for w in health["workers"])


def test_a_client_on_web_process_a_gets_its_result(cluster):
    client = Client(cluster.webs[0])
    try:
        run_id = client.submit(vector_add())["run_id"]
        assert client.result(run_id)["status"] == "ok"
        phases = client.statuses(run_id)
        assert phases[0] == "queued" and "starting" in phases
    finally:
        client.close()


def test_an_api_run_answers_through_the_cluster(cluster):
    request = urllib.request.Request(cluster.webs[1].url + "/api/run", json.dumps(vector_add()).encode(),
                                     {"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=120) as response:
        result = json.load(response)
    assert result["status"] == "ok" and result["run_id"]


def test_clients_on_both_web_processes_get_every_result_once_and_only_their_own(cluster):
    clients = [Client(cluster.webs[i % 2]) for i in range(6)]
    try:
        run_ids = {client: [client.submit(vector_add())["run_id"] for _ in range(3)] for client in clients}
        for client, ids in run_ids.items():
            for run_id in ids:
                assert client.result(run_id)["status"] == "ok"
        time.sleep(1)  # a duplicate would come soon after
        for client, ids in run_ids.items():
            assert all(len(client.results(run_id)) == 1 for run_id in ids)
            assert client.strangers() == []
    finally:
        for client in clients:
            client.close()


class Session:
    """One browser's cookies, over plain HTTP to one web process."""

    def __init__(self, web):
        self.web, self.jar = web, http.cookiejar.CookieJar()
        self.opener = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(self.jar))

    def call(self, method, path, body=None):
        request = urllib.request.Request(self.web.url + path, None if body is None else json.dumps(body).encode(),
                                         {"Content-Type": "application/json"}, method=method)
        with self.opener.open(request, timeout=30) as response:
            return json.load(response)

    def cookie(self):
        return "; ".join(f"{c.name}={c.value}" for c in self.jar)


def test_a_class_made_on_one_web_process_counts_the_runs_its_students_make_through_the_other(cluster):
    """Web processes A and B on one PostgreSQL and one Redis: the teacher makes the class on A and
    watches it there; the students join on B and run over Socket.IO there, on the Celery workers.
    Each verdict is kept before its student sees the result, and the dashboard on A hears of it."""
    from app.course.puzzles import builtin
    a, b = cluster.webs
    puzzle = builtin("constant_add")
    teacher = Session(a)
    code = teacher.call("POST", "/api/classes", {"title": "Two hosts", "puzzles": ["constant_add"]})["code"]
    dashboard = Client(a, teacher.cookie())
    pages = {}
    try:
        assert dashboard.sio.call("watch_class", {"code": code}, timeout=10) == {"watching": True}
        for name, source in (("Ann", puzzle["solution"]), ("Bob", puzzle["starter"])):
            student = Session(b)
            student.call("POST", f"/api/classes/{code}/join", {"name": name})
            spec = student.call("GET", "/api/puzzles/constant_add")["spec"]
            pages[name] = Client(b, student.cookie())
            run_id = pages[name].submit({**spec, "source": source, "options": {**spec["options"], "ir": False}})["run_id"]
            result = pages[name].result(run_id, 120)
            assert result["puzzle"]["ok"] is (name == "Ann"), result.get("error")
            state = teacher.call("GET", f"/api/classes/{code}/progress")["students"][-1]
            assert state["name"] == name  # kept before the result reached the page: no wait here
            assert state["puzzles"]["constant_add"]["state"] == ("solved" if name == "Ann" else "trying")
            assert state["puzzles"]["constant_add"]["attempts"] == 1
        heard = lambda: [d for e, d in dashboard.events if e == "class_progress"]  # noqa: E731
        wait_for(lambda: len(heard()) == 4, 10, "the dashboard on A to hear of both joins and both submissions")
        assert all(d == {"code": code} for d in heard())
        time.sleep(1)  # a duplicate would come soon after
        assert len(heard()) == 4
        for page in pages.values():
            assert all(len(page.results(run_id)) == 1 for run_id in page.mine) and page.strangers() == []
        assert teacher.call("GET", f"/api/classes/{code}/students/{state['id']}/latest/constant_add")["source"] == \
            puzzle["starter"]
        # A student who closes the page once the run has started: the run finishes, and counts.
        student = Session(b)
        student.call("POST", f"/api/classes/{code}/join", {"name": "Cy"})
        leaving = Client(b, student.cookie())
        run_id = leaving.submit({**spec, "source": puzzle["solution"], "options": {**spec["options"], "ir": False}})["run_id"]
        wait_for(lambda: "starting" in leaving.statuses(run_id), 60, "Cy's run to start")
        leaving.close()
        cy = lambda: next(s for s in teacher.call("GET", f"/api/classes/{code}/progress")["students"]  # noqa: E731
                          if s["name"] == "Cy")["puzzles"]["constant_add"]["state"]
        wait_for(lambda: cy() == "solved", 60, "the run of a student who left to count")
    finally:
        dashboard.close()
        for page in pages.values():
            page.close()


def test_the_owners_share_of_the_queue_holds_across_web_processes(cluster):
    a, b = cluster.webs
    jar = http.cookiejar.CookieJar()
    urllib.request.build_opener(urllib.request.HTTPCookieProcessor(jar)).open(a.url + "/").read()
    cookie = "; ".join(f"{c.name}={c.value}" for c in jar)
    occupiers = [Client(a), Client(b)]  # both workers busy, so that the owner's runs wait
    alice = [Client(a, cookie), Client(b, cookie)]  # one browser, two tabs, on two web processes
    try:
        for occupier in occupiers:
            occupier.submit(vector_add(SLEEPY))
        wait_for(lambda: all(w["state"] == "busy" for w in cluster.online(a)), 30, "both workers busy")
        acks = [alice[i % 2].submit(vector_add()) for i in range(5)]
        assert all("run_id" in ack for ack in acks[:4])
        assert {k: acks[4]["error"][k] for k in ("phase", "message")} == {
        "phase": "limit", "message": "you already have 4 runs waiting; wait for one to finish"}
        assert a.health()["queued"] == 4 and b.health()["queued"] == 4
        for tab in alice:
            tab.close()  # its waiting runs are withdrawn
        wait_for(lambda: a.health()["queued"] == 0, 10, "the owner's runs withdrawn")
        for occupier in occupiers:
            assert occupier.result(next(iter(occupier.mine)), RUN_TIMEOUT_S + 30)["error"]["phase"] == "timeout"
        wait_for(lambda: all(w["state"] == "ready" for w in cluster.online(a)), 30, "idle workers")
        runs = sum(w["runs"] for w in cluster.online(a))
        time.sleep(2)
        assert sum(w["runs"] for w in cluster.online(a)) == runs  # none of alice's withdrawn runs ran
    finally:
        for client in occupiers:
            client.close()


def test_an_addresss_share_of_the_queue_is_counted_in_redis(cluster):
    """QUEUE_PER_ADDRESS across web processes: each owner new (no cookie), one address; the server's
    own work (no address) is not counted; a run taken frees its address's place."""
    import redis
    from app.dispatch.runstate import WITHDRAWN, RunState
    state = RunState(redis.Redis.from_url(cluster.url))
    stale_before = state.now() - 3600
    ids = [f"address-test-{i}" for i in range(5)]
    try:
        places = [state.enqueue(run_id, f"owner-{run_id}", 64, 4, stale_before, "203.0.113.9", 3) for run_id in ids[:4]]
        assert all(p > 0 for p in places[:3]) and places[3] == -3, places
        assert state.enqueue(ids[4], "server-puzzle-solutions", 64, 4, stale_before, None, 3) > 0
        assert state.take(ids[0], f"owner-{ids[0]}", WITHDRAWN, "203.0.113.9")
        assert state.enqueue(ids[3], f"owner-{ids[3]}", 64, 4, stale_before, "203.0.113.9", 3) > 0
    finally:
        for run_id in ids:
            owner = "server-puzzle-solutions" if run_id == ids[4] else f"owner-{run_id}"
            state.take(run_id, owner, WITHDRAWN, None if run_id == ids[4] else "203.0.113.9")
    assert cluster.webs[0].health()["queued"] == 0


def test_a_worker_killed_mid_run_costs_that_run_an_error_once_and_the_next_run_works(cluster):
    client = Client(cluster.webs[1])
    try:
        run_id = client.submit(vector_add(SLEEPY))["run_id"]
        wait_for(lambda: "starting" in client.statuses(run_id), 30, "the run to start")
        busy = lambda: [w for w in cluster.online(cluster.webs[1]) if w["run_id"] == run_id]  # noqa: E731
        wait_for(busy, 5, "the busy worker's heartbeat")
        killed_at = time.monotonic()
        os.kill(busy()[0]["host_pid"], signal.SIGKILL)  # the Celery worker, mid-run
        result = client.result(run_id, RUN_TIMEOUT_S + 15)
        assert time.monotonic() - killed_at < RUN_TIMEOUT_S + 5
        assert result["status"] == "error" and result["error"]["phase"] == "sandbox"
        assert "was lost" in result["error"]["message"] and "not retried" in result["error"]["message"]
        next_id = client.submit(vector_add())["run_id"]
        assert client.result(next_id)["status"] == "ok"
        time.sleep(3)
        assert len(client.results(run_id)) == 1 and len(client.results(next_id)) == 1
    finally:
        client.close()
        cluster.start_worker()  # two workers again for what follows
        wait_for(lambda: len(cluster.online(cluster.webs[1])) == 2, 180, "a second worker again")


def test_stop_ends_a_run_on_a_celery_worker_and_only_its_client_can_stop_it(cluster):
    client, stranger = Client(cluster.webs[0]), Client(cluster.webs[0])
    try:
        run_id = client.submit(vector_add(SLEEPY))["run_id"]
        wait_for(lambda: "starting" in client.statuses(run_id), 30, "the run to start")
        wait_for(lambda: [w for w in cluster.online(cluster.webs[0]) if w["run_id"] == run_id], 5, "the busy worker's heartbeat")
        assert stranger.sio.call("stop", {"run_id": run_id}, timeout=10) == {"stopped": False}
        pressed = time.monotonic()
        assert client.sio.call("stop", {"run_id": run_id}, timeout=10) == {"stopped": True}
        result = client.result(run_id, 10)
        assert time.monotonic() - pressed < 5  # the worker's next heartbeat, not the 15 s limit
        assert result["status"] == "error" and result["error"]["phase"] == "stopped"
        wait_for(lambda: len(cluster.online(cluster.webs[0])) == 2 and
                 all(w["state"] == "ready" for w in cluster.online(cluster.webs[0])), 120, "both workers ready again")
        next_id = client.submit(vector_add())["run_id"]
        assert client.result(next_id)["status"] == "ok"
        assert len(client.results(run_id)) == 1
    finally:
        client.close()
        stranger.close()


def test_killing_web_process_a_does_not_disturb_a_client_on_b(cluster):
    a, b = cluster.webs
    on_a, on_b = Client(a), Client(b)
    try:
        run_id = on_b.submit(vector_add(extra="\nimport time\ntime.sleep(2)\n"))["run_id"]
        os.killpg(a.proc.pid, signal.SIGKILL)  # web process A and its master, mid-run of B's client
        assert on_b.result(run_id)["status"] == "ok"
        wait_for(lambda: not on_a.sio.connected, 30, "A's client to notice")
        assert on_b.sio.connected
        after = on_b.submit(vector_add())["run_id"]
        assert on_b.result(after)["status"] == "ok"
        assert on_b.strangers() == [] and len(on_b.results(run_id)) == 1
    finally:
        on_b.close()


def test_a_worker_and_so_a_run_never_sees_redis_url_or_database_url(monkeypatch):
    from app.config import from_environment
    from app.dispatch.slot import worker_env
    monkeypatch.setenv("REDIS_URL", "redis://:the-password@redis-host:6379/0")
    monkeypatch.setenv("DATABASE_URL", "postgresql://playground:the-db-password@db-host/playground")
    env = worker_env(from_environment(), gpu="0")
    assert "REDIS_URL" not in env and "DATABASE_URL" not in env
    assert not any("the-password" in value or "the-db-password" in value for value in env.values())
