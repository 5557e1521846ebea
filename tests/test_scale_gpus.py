"""Scale out on a host with several GPUs, as docs/scale-out.md says to: one Celery worker per GPU
(`CUDA_VISIBLE_DEVICES=<i> make worker`), a real Redis, a web process. Two runs at once land on
different GPUs through the real jail, each seeing only its own GPU."""
import shutil

import pytest

from tests.test_gpus import SEEING, cuda_devices
from tests.test_scale import Client, Cluster, vector_add, wait_for

pytestmark = [pytest.mark.gpu, pytest.mark.integration,
              pytest.mark.skipif(shutil.which("redis-server") is None, reason="needs redis-server (.ci/run installs it)")]


@pytest.mark.skipif(cuda_devices() < 2, reason="needs two GPUs")
def test_one_celery_worker_per_gpu_and_runs_land_on_every_gpu(tmp_path):
    cluster = Cluster(tmp_path, database_url="")  # the web process's SQLite file: no PostgreSQL needed here
    try:
        for gpu in ("0", "1"):
            cluster.start_worker(CUDA_VISIBLE_DEVICES=gpu)
        web = cluster.start_web()
        wait_for(lambda: len(cluster.online(web)) == 2, 180, "a Celery worker per GPU online")
        health = web.health()
        assert health["ok"] and sorted(w["gpu"] for w in health["workers"]) == ["0", "1"]
        assert sorted(w["device"]["index"] for w in health["workers"]) == [0, 1]
        client = Client(web)
        spec = vector_add(SEEING)
        run_ids = [client.submit(spec)["run_id"] for _ in range(2)]
        results = [client.result(run_id, timeout_s=120) for run_id in run_ids]
        client.close()
    finally:
        cluster.stop()
    assert [r["status"] for r in results] == ["ok", "ok"], [r["error"] for r in results]
    assert sorted(r["device"]["index"] for r in results) == [0, 1]
    for result in results:
        line = next(line for line in result["stdout"].splitlines() if line.startswith("sees"))
        assert line.startswith("sees 1 ") and line.count("'nvidia") == 1, line  # one GPU, one GPU node
