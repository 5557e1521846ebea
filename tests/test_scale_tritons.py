"""Scale out (REDIS_URL) with two Triton versions: a Celery worker of the default and one of a second
version (WORKER_TRITON, as `WORKER_TRITON=3.7.1 make worker` starts it), a real Redis, a web process.
Each worker announces its version in its heartbeat; GET /api/spec lists what the live workers run; a
run naming a version goes to that version's worker (a queue of its own), one naming none to the
default's; a version no worker announces is refused."""
import json
import shutil
import urllib.error
import urllib.request

import pytest

from sandbox import tritons
from tests.support.tritons import require_extra
from tests.test_scale import Cluster, vector_add, wait_for

pytestmark = [pytest.mark.integration,
              pytest.mark.skipif(shutil.which("redis-server") is None, reason="needs redis-server (.ci/run installs it)")]


def post_run(web, spec):
    request = urllib.request.Request(web.url + "/api/run", data=json.dumps(spec).encode(),
                                     headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=120) as response:
            return response.status, json.load(response)
    except urllib.error.HTTPError as e:
        return e.code, json.load(e)


def versions_online(web):
    return sorted(w.get("triton") or "" for w in web.health().get("workers", []) if w["state"] in ("ready", "busy"))


def test_celery_workers_announce_their_version_and_runs_go_to_the_version_they_name(tmp_path):
    extra, default = require_extra(), tritons.default_version()
    cluster = Cluster(tmp_path, database_url="")  # the web process's SQLite file: no PostgreSQL needed
    try:
        cluster.start_worker()
        web = cluster.start_web()  # healthy once its one worker is
        cluster.start_worker(WORKER_TRITON=extra)
        wait_for(lambda: versions_online(web) == sorted([default, extra]), 180, "a worker of each version")
        with urllib.request.urlopen(web.url + "/api/spec", timeout=10) as response:
            listed = {v["version"]: v for v in json.load(response)["tritons"]}
        assert listed == {default: {"version": default, "released": tritons.RELEASED[default], "default": True, "live": True},
                          extra: {"version": extra, "released": tritons.RELEASED[extra], "default": False, "live": True}}
        for asked, ran in ((extra, extra), (None, default), (default, default), (extra, extra)):
            spec = vector_add()
            if asked:
                spec["options"]["triton"] = asked
            status, result = post_run(web, spec)
            assert status == 200 and result["status"] == "ok", result
            assert result["device"]["triton"] == ran
        status, body = post_run(web, {**vector_add(), "options": {"triton": "3.0.0"}})
        assert status == 400 and body["error"]["type"] == "TritonUnknown" and body["error"]["field"] == "options.triton"
        assert f"{extra}" in body["error"]["message"] and f"{default} (the default)" in body["error"]["message"]
    finally:
        cluster.stop()
