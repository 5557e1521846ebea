"""GET /metrics: Prometheus' text format, scraped after real runs of real workers (the counts and
histograms moved by what ran), and readable only from the addresses METRICS_ALLOW names."""
import secrets
import threading
import time

import pytest
from prometheus_client.parser import text_string_to_metric_families

from app.dispatch.interface import QueueFull
from sandbox.spec import normalize
from tests.support.apps import wait_until_busy, wait_until_ready
from tests.support.kernels import ENDLESS, vector_add_spec


def scrape(client, **environ):
    response = client.get("/metrics", environ_base=environ)
    assert response.status_code == 200, response.get_data(as_text=True)
    assert response.content_type.startswith("text/plain")
    return [sample for family in text_string_to_metric_families(response.get_data(as_text=True))
            for sample in family.samples]


def value(samples, name, **labels):
    found = [s.value for s in samples if s.name == name and all(s.labels.get(k) == v for k, v in labels.items())]
    return sum(found) if found else None


@pytest.mark.integration
def test_metrics_move_with_real_runs(make_app):
    app = make_app(WORKERS=1, PUZZLE_WARMUP=0, SHARED_KERNELS=0)
    client, pool = app.test_client(), app.extensions["dispatcher"]
    before = scrape(client)
    assert value(before, "playground_runs_total") is None  # no run yet: no series
    assert value(before, "playground_run_queue_wait_seconds_count", work="person") is None
    assert value(before, "playground_worker_state", slot="0", state="ready") == 1
    owner = secrets.token_hex(16)
    ok = pool.run(vector_add_spec(n=4096), owner)
    assert ok["status"] == "ok", ok
    # A run stopped while it runs: its worker is replaced.
    done = threading.Event()
    run_id = pool.submit(vector_add_spec(n=4096, source=ENDLESS), owner, client="c1",
                         listener=lambda _id, type, content: type == "result" and done.set())
    wait_until_busy(app)
    time.sleep(1.0)
    assert pool.stop_run(run_id, "c1")
    assert done.wait(30)
    wait_until_ready(app)  # the slot has replaced its worker
    after = scrape(client)
    assert value(after, "playground_runs_total", status="ok", phase="none", work="person") == 1
    assert value(after, "playground_runs_total", status="error", phase="stopped", work="person") == 1
    for name in ("playground_run_queue_wait_seconds", "playground_run_seconds", "playground_run_whole_seconds"):
        assert value(after, name + "_count", work="person") == 2, name
        assert value(after, name + "_bucket", work="person", le="+Inf") == 2, name
    # The stopped run ran a second at least: past the 0.5 s bucket, and in the worker's busy time.
    assert value(after, "playground_run_seconds_bucket", work="person", le="0.5") == 1
    assert value(after, "playground_run_seconds_sum", work="person") >= 1.0
    assert value(after, "playground_worker_runs_total", slot="0") == 2
    assert value(after, "playground_worker_restarts_total", slot="0") == 1
    assert value(after, "playground_worker_busy_seconds_total", slot="0") >= 1.0
    assert value(after, "playground_worker_failed_starts_total", slot="0") == 0
    assert value(after, "playground_queue_depth") == 0
    assert value(after, "playground_connections") == 0
    assert value(after, "playground_compile_ahead_total", outcome="queued") == 0


@pytest.mark.integration
def test_compiles_ahead_are_counted(make_app):
    app = make_app(WORKERS=1, PUZZLE_WARMUP=0, SHARED_KERNELS=0, COMPILE_INTERVAL_S=60.0)
    pool, owner = app.extensions["dispatcher"], secrets.token_hex(16)
    pool.compile_ahead(normalize(vector_add_spec(n=4096)), owner, client="c1")
    with pytest.raises(QueueFull, match="faster than"):
        pool.compile_ahead(normalize(vector_add_spec(n=8192)), owner, client="c1")
    ok = pool.run(vector_add_spec(n=4096), owner)
    assert ok["status"] == "ok"
    # The slot takes the compile before the run or, if the run was queued before it woke, just after it.
    deadline = time.monotonic() + 10
    while True:
        samples = scrape(app.test_client())
        taken, dropped = (value(samples, "playground_compile_ahead_total", outcome=o) for o in ("taken", "dropped"))
        if taken + dropped >= 1 or time.monotonic() > deadline:
            break
        time.sleep(0.05)
    assert taken + dropped == 1
    assert value(samples, "playground_compile_ahead_total", outcome="queued") == 1
    assert value(samples, "playground_compile_ahead_total", outcome="refused") == 1


def test_only_the_addresses_metrics_allow_names_may_read_them(make_app):
    app = make_app(wait=False, START_WORKERS=False, METRICS_ALLOW="127.0.0.1,::1,10.1.0.0/16")
    client = app.test_client()
    assert client.get("/metrics").status_code == 200  # the test client is 127.0.0.1
    for address in ("::1", "10.1.2.3", "::ffff:10.1.2.3"):
        assert client.get("/metrics", environ_base={"REMOTE_ADDR": address}).status_code == 200, address
    for address in ("10.2.0.1", "192.0.2.7", "2001:db8::1", ""):
        response = client.get("/metrics", environ_base={"REMOTE_ADDR": address})
        assert response.status_code == 403, address
        assert "METRICS_ALLOW" in response.get_json()["error"]["message"]
    # Behind a proxy that is not trusted, the forwarded address is not believed: the peer is.
    forwarded = client.get("/metrics", headers={"X-Forwarded-For": "192.0.2.7"})
    assert forwarded.status_code == 200


def test_the_default_allows_loopback_only_and_a_bad_entry_is_named(make_app):
    app = make_app(wait=False, START_WORKERS=False)
    client = app.test_client()
    assert client.get("/metrics").status_code == 200
    assert client.get("/metrics", environ_base={"REMOTE_ADDR": "192.0.2.7"}).status_code == 403
    with pytest.raises(ValueError, match="METRICS_ALLOW: 'ten.0.0.0/8'"):
        make_app(wait=False, START_WORKERS=False, METRICS_ALLOW="10.0.0.1,ten.0.0.0/8")


def test_two_apps_in_one_process_keep_their_own_counts(make_app):
    first = make_app(wait=False, START_WORKERS=False)
    second = make_app(wait=False, START_WORKERS=False)
    first.extensions["dispatcher"].metrics.compile("refused")
    assert value(scrape(first.test_client()), "playground_compile_ahead_total", outcome="refused") == 1
    assert value(scrape(second.test_client()), "playground_compile_ahead_total", outcome="refused") == 0
