"""Attacks that try to stall the one web process, or a worker's own loop, rather than break out of a
run: each sends what a client may send (a request, an event, a run's code) and asserts that the
attack is answered within a bound AND that `/healthz` answers quickly meanwhile (a web process
stalled by one request stalls every page and run of the server).

The requests go to the server as `make run` starts it (tests/support/hostile_targets.ProductionServer: gunicorn's
gevent worker, where one request that computes holds every connection); the compiles ahead go
through an app with real workers.
"""
import http.client
import json
import threading
import time

import pytest

from app import socketio
from sandbox import settings
from tests.support.kernels import VECTOR_ADD, vector_add_spec
from tests.support.hostile import JSON, from_address, wait_for
from tests.support.hostile_targets import ProductionServer, serving
from tests.test_runs import collect_until_result

pytestmark = pytest.mark.integration

HEALTH_BOUND_S = 1.5  # /healthz beside an attack: a quick answer on a loaded 2-core VM


class Healthz(threading.Thread):
    """Polls /healthz while an attack runs; `slowest` is its slowest answer."""

    def __init__(self, server):
        super().__init__(daemon=True)
        self.server, self.slowest, self.done, self.answers = server, 0.0, threading.Event(), 0

    def run(self):
        while not self.done.is_set():
            start = time.monotonic()
            status, _ = self.server.request("GET", "/healthz", timeout=120)
            self.slowest = max(self.slowest, time.monotonic() - start)
            self.answers += status == 200
            time.sleep(0.1)

    def __enter__(self):
        self.start()
        time.sleep(0.3)  # it has asked once before the attack
        return self

    def __exit__(self, *exc):
        self.done.set()
        self.join(130)


def attack(server, path, body):
    """(status, JSON answer, seconds) of one POST, with /healthz polled meanwhile (asserted quick)."""
    data = json.dumps(body).encode()
    with Healthz(server) as health:
        start = time.monotonic()
        status, answer = server.request("POST", path, data, {"Content-Type": JSON}, timeout=600)
        took = time.monotonic() - start
    assert health.answers > 0 and health.slowest < HEALTH_BOUND_S, (
        f"/healthz took {health.slowest:.1f} s beside {path}, which took {took:.1f} s")
    assert status != 500, answer[:500]
    return status, (json.loads(answer) if answer.startswith(b"{") else answer), took


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    yield from serving(ProductionServer(str(tmp_path_factory.mktemp("hostile-web"))))


def tensor_arg(name, shape, strides):
    return {"name": name, "kind": "tensor", "dtype": "float32", "shape": shape, "strides": strides}


def launch(*args):
    return {"kernel": "add_kernel", "grid": [1], "args": list(args)}


# ---------------------------------------------------------------- the launch form

def test_a_launch_form_of_many_dimensions_is_answered_at_once(server):
    many = 9_000  # shape and strides together under REQUEST_MAX_VALUES
    status, answer, took = attack(server, "/api/launch-form", {
        "source": VECTOR_ADD, "launch": launch(tensor_arg("x_ptr", [1] * many + [4], [3] * many + [2]))})
    assert status == 200 and "as_strided" in answer["spec"]["inputs"]["x"], answer
    assert took < 3, took
    status, answer, took = attack(server, "/api/launch-form", {
        "source": VECTOR_ADD, "launch": launch(tensor_arg("x_ptr", [2] * many, [1] * many))})
    assert status == 400 and answer["error"]["field"] == "launch.args.x_ptr.shape", answer
    assert "2**63" in answer["error"]["message"] and took < 3, took


def test_a_size_past_int64_is_refused_naming_the_argument(server):
    status, answer, _ = attack(server, "/api/launch-form", {
        "source": VECTOR_ADD, "launch": launch(tensor_arg("x_ptr", [10 ** 4000], [1]))})
    assert status == 400 and answer["error"]["field"] == "launch.args.x_ptr", answer


def test_a_body_of_too_many_values_is_refused_naming_the_limit(server):
    most = settings.default("REQUEST_MAX_VALUES")
    for path, body in (("/api/launch-form", {"source": VECTOR_ADD, "launch": launch(tensor_arg("x_ptr", [1] * most, [1] * most))}),
                       ("/api/run", {**vector_add_spec(), "grid": [0] * most}),
                       ("/api/puzzles", {"spec": vector_add_spec(), "tests": [{f"N{i}": i for i in range(most)}]})):
        status, answer, took = attack(server, path, body)
        assert status == 400 and answer["error"]["field"] == "size", (path, answer)
        assert "REQUEST_MAX_VALUES" in answer["error"]["message"] and took < 3, (path, took)


NESTED_SOURCES = {
    "unary_minus_5000_deep": "x = " + "-" * 5000 + "1\n",
    "sum_of_2000_terms": "x = " + "1 + " * 2000 + "1\n",  # parses, then nests past Python's stack when walked
    "list_of_lists_150_deep": "x = " + "[" * 150 + "]" * 150 + "\n",
    "calls_3000_deep": "x = " + "f(" * 3000 + ")" * 3000 + "\n",
}


@pytest.mark.parametrize("tail", NESTED_SOURCES.values(), ids=NESTED_SOURCES.keys())
def test_a_deeply_nested_source_is_a_clear_400_never_a_500(server, tail):
    status, answer, _ = attack(server, "/api/launch-form", {"source": VECTOR_ADD + tail, "launch": launch()})
    assert status in (200, 400), answer
    if status == 400:
        assert answer["error"]["field"] == "source" and "PlaygroundBug" != answer["error"]["type"], answer
    status, answer, _ = attack(server, "/api/export", vector_add_spec(source=VECTOR_ADD + tail))
    assert status in (200, 400), answer  # an export of a source Python cannot read is the script as written


# ---------------------------------------------------------------- a teacher's puzzle

def test_a_puzzle_of_thousands_of_test_names_is_answered_at_once(server):
    spec = vector_add_spec(n=1024)
    names = {f"N{i}": i for i in range(9_000)}
    spec["inputs"]["x"] = "torch.randn(min([1024, " + ", ".join(names) + "]))"
    body = {"spec": spec, "title": "t", "statement": "s", "starter": VECTOR_ADD,
            "tests": [{**names, "UNUSED": 1}]}
    status, answer, took = attack(server, "/api/puzzles", body)
    assert status == 400 and answer["error"]["field"] == "tests" and "UNUSED" in answer["error"]["message"], answer
    assert took < 3, took


# ---------------------------------------------------------------- what the server trusts and holds

class NoProxyServer(ProductionServer):
    settings = {"TRUSTED_PROXY_HOPS": "0"}


@pytest.fixture
def no_proxy_server(tmp_path):
    yield from serving(NoProxyServer(str(tmp_path)))


def test_with_no_trusted_proxy_no_forwarded_header_is_believed(no_proxy_server):
    """TRUSTED_PROXY_HOPS=0: a client on loopback saying `X-Forwarded-Proto: https` is still a plain
    http client: its session cookie is not Secure."""
    connection = http.client.HTTPConnection("127.0.0.1", no_proxy_server.port, timeout=30)
    try:
        connection.request("GET", "/", headers={"X-Forwarded-Proto": "https", "X-Forwarded-For": "192.0.2.7"})
        response = connection.getresponse()
        cookie = response.getheader("Set-Cookie") or ""
    finally:
        connection.close()
    assert response.status == 200 and "session=" in cookie, (response.status, cookie)
    assert "Secure" not in cookie, cookie


def test_the_runs_memory_limits_fit_the_hosts_memory(server):
    """Every run at once at its limit fits in the host's memory: /healthz says the limit each run
    has, and why it is less than RUN_MEMORY_MB where the host is too small for it."""
    from app.dispatch import memory
    report = json.loads(server.request("GET", "/healthz")[1])["run_memory"]
    assert report["limit_mb"] * report["runs_at_once"] <= report["host_mb"], report
    assert report["host_mb"] == memory.host_memory_mb() and report["runs_at_once"] == 1 * memory.RUNS_PER_WORKER
    small = memory.run_memory(8192, 2, host_mb=16384)
    assert small["limit_mb"] * small["runs_at_once"] <= 16384 and "RUN_MEMORY_MB" in small["note"], small
    roomy = memory.run_memory(8192, 2, host_mb=2 * 1024 * 1024)
    assert roomy["limit_mb"] == 8192 and roomy["note"] is None, roomy


def test_an_autotuner_of_200000_configs_makes_a_small_result(server):
    """The result lists 64 of an autotuner's configs (the chosen one among them) and says how many
    there are: what a run makes the web process hold does not grow with what the program defines."""
    source = VECTOR_ADD.replace("@triton.jit", "@triton.autotune(configs=[triton.Config({'BLOCK_SIZE': 256}, num_warps=4)\n"
                                "                               for _ in range(200_000)], key=['n'])\n@triton.jit")
    spec = vector_add_spec(n=1024, source=source, trace=False)
    del spec["args"]["BLOCK_SIZE"]
    status, result, took = attack(server, "/api/run", spec)
    assert status == 200 and result["status"] == "ok", result.get("error")
    table = result["timings"]["autotune"]
    assert len(table) == 64 and any(row["chosen"] for row in table), len(table)
    assert any("200,000 configs" in note for note in result["timings"]["notes"]), result["timings"]["notes"]
    assert len(json.dumps(result)) < 1 << 20


# ---------------------------------------------------------------- Socket.IO handshakes

def test_abandoned_handshakes_do_not_lock_an_address_out(server):
    """An address fills its CONNECTIONS_PER_ADDRESS with long-polling handshakes, one GET each and
    nothing after: a real client of the address connects within seconds, not after every abandoned
    one has timed out (the ping interval and timeout, ~45 s)."""
    import socketio as socketio_client
    address = "203.0.113.77"
    per_address = int(server.settings["CONNECTIONS_PER_ADDRESS"])
    for _ in range(per_address):
        status, body = server.request("GET", "/socket.io/?EIO=4&transport=polling", headers=from_address(address))
        assert status == 200 and b"sid" in body, body[:200]
    status, _ = server.request("GET", "/socket.io/?EIO=4&transport=polling", headers=from_address(address))
    assert status == 401  # the address is at its limit

    def connects():
        client = socketio_client.Client(reconnection=False)
        try:
            client.connect(server.url, transports=["websocket"], headers=from_address(address), wait_timeout=10)
        except socketio_client.exceptions.ConnectionError:
            return False
        client.disconnect()
        return True

    start = time.monotonic()
    with Healthz(server) as health:
        assert wait_for(connects, 20, 0.5), "the address is locked out by its abandoned handshakes"
    assert time.monotonic() - start < 15 and health.slowest < HEALTH_BOUND_S, (time.monotonic() - start, health.slowest)


# ---------------------------------------------------------------- compile ahead: a worker's own loop

@pytest.fixture(scope="module")
def workers_app(tmp_path_factory):
    """Two real workers, as the server's default on a host without a GPU."""
    from tests.support.apps import running_app
    with running_app(tmp_path_factory.mktemp("hostile-web-app"), WORKERS=2, RUN_TIMEOUT_S=20.0) as app:
        yield app


def compile_of(client, source):
    return client.emit("compile", {"spec": vector_add_spec(n=4096, source=source)}, callback=True)["compile_id"]


def timed_run(client, spec):
    """(seconds from the request to the result, the result)."""
    start = time.monotonic()
    events = collect_until_result(client, client.emit("run", {"spec": spec}, callback=True)["run_id"])
    result = events[-1]["args"][0]["result"]
    assert result["status"] == "ok", result["error"]
    return time.monotonic() - start, result


def end_compiles(clients):
    """A newer compile of each client's replaces its endless one on the worker."""
    time.sleep(settings.default("COMPILE_INTERVAL_S"))
    for i, client in enumerate(clients):
        compile_of(client, VECTOR_ADD + f"# done {i} {time.time()}\n")


WORKER_STALLS = {
    # half a message line, then nothing: the worker reads on when the line is whole
    "half_a_message_line": VECTOR_ADD + '\nimport os, time\nos.write(4, b\'{"type": "status", "run_id": "x", "cont\')\n'
                                        'time.sleep(60)\n',
    # output without end: the worker takes a bounded share of it at each step
    "endless_output": VECTOR_ADD + '\nimport os\nwhile True:\n    os.write(1, b"x" * 65536)\n',
}


@pytest.mark.parametrize("attack_source", WORKER_STALLS.values(), ids=WORKER_STALLS.keys())
def test_a_compile_ahead_cannot_hold_its_worker(workers_app, attack_source):
    """A compile ahead's code writes to its worker what a run may: the worker serves every other
    run and compile meanwhile."""
    bystander = socketio.test_client(workers_app)
    spec = vector_add_spec(n=4096)
    timed_run(bystander, spec)  # warm
    alone = min(timed_run(bystander, spec)[0] for _ in range(2))
    attackers = [socketio.test_client(workers_app) for _ in range(4)]
    for i, attacker in enumerate(attackers):  # every worker's compiles at once
        compile_of(attacker, attack_source + f"# {i} {time.time()}\n")
    try:
        time.sleep(2)  # the compiles have started and written their half line
        beside = [timed_run(bystander, spec)[0] for _ in range(3)]
    finally:
        end_compiles(attackers)
    assert max(beside) < 2 * alone + 1.5, (alone, beside)


def test_a_spinning_compile_ahead_takes_no_cpu_from_a_run(workers_app):
    """Four compiles ahead spin (two per worker, as many as run at once): a bystander's run is about
    as fast as beside an idle server, their CPU being idle as a cgroup and not only as processes."""
    bystander = socketio.test_client(workers_app)
    spec = vector_add_spec(n=98432, block=256, trace=False, ir=False)  # a few seconds of the interpreter's CPU
    timed_run(bystander, spec)  # warm
    alone = min(timed_run(bystander, spec)[1]["run_ms"] for _ in range(2))
    spinners = [socketio.test_client(workers_app) for _ in range(4)]
    for i, spinner in enumerate(spinners):
        compile_of(spinner, VECTOR_ADD + f"\n# {i} {time.time()}\nwhile True:\n    pass\n")
    try:
        time.sleep(3)  # they spin
        beside = min(timed_run(bystander, spec)[1]["run_ms"] for _ in range(2))
    finally:
        end_compiles(spinners)
    assert beside < 1.6 * alone, (alone, beside)
