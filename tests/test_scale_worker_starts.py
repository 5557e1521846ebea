"""Scale out (REDIS_URL) with a Celery worker whose sandbox worker cannot start, for real (its run root
is a file): it tries again ever less often, as a slot of the embedded pool does; the web process's
/healthz and /metrics say which worker and why; it takes no run meanwhile, so every run goes to the
healthy worker; and it comes back by itself once its sandbox worker can start. A real Redis, two
Celery workers as `make worker` starts them, a web process."""
import os
import shutil
import signal
import time
import urllib.request

import pytest
from prometheus_client.parser import text_string_to_metric_families

from app.dispatch.slot import restart_delay_s
from tests.test_scale import Client, Cluster, vector_add, wait_for

pytestmark = [pytest.mark.integration,
              pytest.mark.skipif(shutil.which("redis-server") is None, reason="needs redis-server (.ci/run installs it)")]


def heartbeat(web, worker):
    """The heartbeat of the Celery worker process `worker`, as the web process's /healthz lists it."""
    return next((w for w in web.health().get("workers", []) if w["host_pid"] == worker.proc.pid), None)


def metric_samples(web):
    with urllib.request.urlopen(web.url + "/metrics", timeout=10) as response:
        text = response.read().decode()
    return [sample for family in text_string_to_metric_families(text) for sample in family.samples]


def run_all_ok(web, count):
    """`count` runs pressed at once by one client; every one of them ends ok."""
    client = Client(web)
    try:
        run_ids = [client.submit(vector_add())["run_id"] for _ in range(count)]
        results = [client.result(run_id, 120) for run_id in run_ids]
    finally:
        client.close()
    assert [r["status"] for r in results] == ["ok"] * count, [r.get("error") for r in results]


def test_a_celery_worker_whose_sandbox_worker_cannot_start_backs_off_says_so_and_takes_no_run(tmp_path):
    cluster = Cluster(tmp_path, database_url="")  # the web process's SQLite file: no PostgreSQL needed
    blocked = tmp_path / "blocked-runs"
    blocked.write_text("")  # its run root is a file: `python -m sandbox.worker` exits before it is ready
    try:
        healthy = cluster.start_worker()
        web = cluster.start_web()  # healthy once its one worker is
        broken = cluster.start_worker(RUN_ROOT=str(blocked))
        wait_for(lambda: heartbeat(web, broken) is not None, 60, "the other worker's heartbeat")

        # It backs off by the embedded pool's rule: after n failed starts in a row, restart_delay_s(n).
        waits = {}  # failed starts in a row -> the longest wait for the next try seen
        def backing_off():
            beat = heartbeat(web, broken)
            if beat["state"] == "dead" and beat["next_start_s"] is not None:
                waits[beat["failed_starts"]] = max(waits.get(beat["failed_starts"], 0), beat["next_start_s"])
            return beat["failed_starts"] >= 4
        wait_for(backing_off, 120, "four failed starts")
        assert all(wait <= restart_delay_s(n) for n, wait in waits.items()), waits
        assert waits.get(3, 0) > restart_delay_s(2), waits  # it waits longer each time, not one try after another

        health = web.health()
        beat = heartbeat(web, broken)
        assert health["ok"] is False and beat["state"] in ("dead", "starting")
        assert beat["start_error"].startswith("FileExistsError: ") and "\n" not in beat["start_error"]
        problem, = health["problems"]
        assert problem.startswith(f"worker {beat['slot']} (no GPU) cannot start: FileExistsError: "), problem
        samples = metric_samples(web)
        at = {"slot": beat["slot"], "gpu": "none"}
        failed = [s.value for s in samples if s.name == "playground_worker_failed_starts_total" and s.labels == at]
        assert failed and failed[0] >= 4
        assert any(s.name == "playground_healthy" and s.value == 0 for s in samples)

        # It takes no run it cannot run: each goes to the healthy worker, and ends ok.
        run_all_ok(web, 4)
        wait_for(lambda: heartbeat(web, healthy)["runs"] == 4, 5, "the healthy worker's heartbeat to count them")
        assert heartbeat(web, broken)["runs"] == 0

        # Once its sandbox worker can start, it comes back by itself at its next try.
        blocked.unlink()
        wait_for(lambda: len(cluster.online(web)) == 2, 120, "the worker back once it can start")
        assert web.health()["ok"] is True

        # Its sandbox worker dies while idle and cannot start again: the run that reaches it is left for
        # the other worker, and it backs off again.
        os.rename(blocked, tmp_path / "runs-before")
        blocked.write_text("")
        os.kill(heartbeat(web, broken)["pid"], signal.SIGKILL)
        runs_before = heartbeat(web, healthy)["runs"]
        run_all_ok(web, 4)
        # It found its sandbox worker gone when a run reached it (nothing else looks while it is idle).
        wait_for(lambda: heartbeat(web, broken)["failed_starts"] >= 1, 60, "the worker to find its sandbox worker gone")
        wait_for(lambda: heartbeat(web, healthy)["runs"] == runs_before + 4, 5, "the healthy worker's heartbeat")
        assert heartbeat(web, broken)["runs"] == 0
        time.sleep(2)
        assert heartbeat(web, broken)["state"] in ("dead", "starting") and web.health()["ok"] is False
    finally:
        cluster.stop()
