"""The web server as `make run` starts it (app.serve: gunicorn, one gevent worker process): a
classroom of Socket.IO connections at once, websocket and long-polling, each a greenlet and not a
thread; pages, /healthz and the API answer meanwhile; every run's events reach its requester only;
a client that never reads holds up no one; the sandbox's workers stay plain, single-threaded Python."""
import asyncio
import concurrent.futures
import json
import socket
import time
import urllib.request

import pytest

from app.gallery import load_example
from benchmarks.server import Server

pytestmark = pytest.mark.integration  # starts the server as make run does

socketio = pytest.importorskip("socketio")
pytest.importorskip("aiohttp")  # python-socketio's asyncio client: a thousand clients in one thread

CONNECTIONS, POLLING_EVERY = 1000, 5  # every 5th client on long-polling, the rest on websocket
RUNNERS = 10


def vector_add(n=4096, extra=""):
    """The gallery's vector add on n elements, check only; `extra` appended to its source."""
    spec = load_example("vector_add")["spec"]
    spec["inputs"] = {name: expression.replace("98432", str(n)) for name, expression in spec["inputs"].items()}
    spec["options"].update({"bench": False, "trace": False, "ir": False})
    spec["source"] += extra
    return spec


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    root = tmp_path_factory.mktemp("serve")
    with open(root / "server.log", "wb") as log, \
            Server(log=log, WORKERS=1, RUN_TIMEOUT_S=20, DATABASE=root / "db.sqlite", RUN_ROOT=root / "runs") as server:
        yield server


def run_async(coroutine):
    """asyncio.run in a thread of its own: the session's browser (Playwright's sync API) keeps an event
    loop marked running in the main thread."""
    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        return pool.submit(asyncio.run, coroutine).result()


def fetch_s(url):
    """Seconds to GET `url` in full (a 200)."""
    start = time.perf_counter()
    with urllib.request.urlopen(url, timeout=30) as r:
        assert r.status == 200
        r.read()
    return time.perf_counter() - start


def maps(pid):
    with open(f"/proc/{pid}/maps") as f:
        return f.read()


def thread_count(pid):
    with open(f"/proc/{pid}/status") as f:
        return int(f.read().split("Threads:")[1].split()[0])


class Student:
    """One Socket.IO client that records every run event it receives and the run ids it was given."""

    def __init__(self, transport):
        self.client, self.transport = socketio.AsyncClient(reconnection=False), transport
        self.mine, self.events, self.results = set(), [], {}
        self.client.on("*", self.heard)

    async def heard(self, event, data):
        self.events.append((event, data))
        if event == "run_result":
            self.results[data["run_id"]] = data["result"]

    async def run(self, spec, timeout_s=120):
        ack = await self.client.call("run", {"spec": spec}, timeout=30)
        run_id = ack["run_id"]
        self.mine.add(run_id)
        deadline = time.monotonic() + timeout_s
        while run_id not in self.results and time.monotonic() < deadline:
            await asyncio.sleep(0.05)
        return self.results[run_id]

    def strangers(self):
        return [data["run_id"] for event, data in self.events
                if event.startswith("run_") and data.get("run_id") not in self.mine]


async def classroom(server):
    students = [Student("polling" if i % POLLING_EVERY == 0 else "websocket") for i in range(CONNECTIONS)]
    gate = asyncio.Semaphore(50)  # a classroom arriving over some seconds, not one SYN flood

    async def connect(student):  # waiting 20 s for the namespace, as the page's client does (not Python's 1 s)
        async with gate:
            await student.client.connect(server.url, transports=[student.transport], wait_timeout=20)

    start = time.perf_counter()
    await asyncio.gather(*(connect(s) for s in students))
    connect_s = time.perf_counter() - start
    loop = asyncio.get_running_loop()
    # Meanwhile, from outside the event loop: a page, /healthz and the API, each answered at once.
    answers = {path: await loop.run_in_executor(None, fetch_s, server.url + path)
               for path in ("/healthz", "/", "/api/examples", "/api/spec")}
    threads = thread_count(server.web_pid())
    runners = students[:RUNNERS]  # websocket and polling ones both
    results = await asyncio.gather(*(s.run(vector_add()) for s in runners))
    still_connected = sum(s.client.connected for s in students)
    strangers = [s.strangers() for s in students]
    await asyncio.gather(*(s.client.disconnect() for s in students))
    return connect_s, answers, threads, results, still_connected, strangers, runners


def test_a_classroom_of_connections_and_the_server_still_answers(server):
    connect_s, answers, threads, results, still_connected, strangers, runners = run_async(classroom(server))
    assert connect_s < 120
    assert all(seconds < 2 for seconds in answers.values()), answers
    # A thousand idle connections, and the web process has the threads it had: none per connection.
    assert threads < 20, threads
    assert [r["status"] for r in results] == ["ok"] * len(runners)
    assert {s.transport for s in runners} == {"websocket", "polling"}
    assert still_connected == CONNECTIONS
    assert all(found == [] for found in strangers), "a client received another client's run events"
    health = server.health()
    assert health["ok"] and health["queued"] == 0


def test_the_web_process_is_gevents_and_the_workers_are_plain_single_threaded_python(server):
    assert "gevent" in maps(server.web_pid())
    for worker in server.health()["workers"]:
        assert "gevent" not in maps(worker["pid"]) and "greenlet" not in maps(worker["pid"])
        assert thread_count(worker["pid"]) == 1


def never_reading_client(server, spec, runs):
    """A websocket that asks for `runs` runs printing ~1 MB each and never reads a byte of the answers
    (a receive buffer of 4 KB): the server's writes to it stall as soon as the buffers fill."""
    websocket = pytest.importorskip("websocket")
    ws = websocket.create_connection(f"ws://127.0.0.1:{server.port}/socket.io/?EIO=4&transport=websocket",
                                     sockopt=[(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)])
    ws.recv()  # Engine.IO's open packet; from here on it never reads
    ws.send("40")  # Socket.IO connect
    for _ in range(runs):
        ws.send("42" + json.dumps(["run", {"spec": spec}]))
    return ws


async def a_run_meanwhile(server):
    student = Student("websocket")
    await student.client.connect(server.url, transports=["websocket"], wait_timeout=20)
    start = time.perf_counter()
    result = await student.run(vector_add(), timeout_s=60)
    elapsed = time.perf_counter() - start
    await student.client.disconnect()
    return result, elapsed


def test_a_client_that_never_reads_holds_up_no_one(server):
    loud = vector_add(extra="\nfor _ in range(900):\n    print('x' * 1000)\n")
    runs_before = server.health()["workers"][0]["runs"]
    ws = never_reading_client(server, loud, runs=4)
    try:
        deadline = time.monotonic() + 30
        while server.health()["queued"] == 0 and server.health()["workers"][0]["runs"] == runs_before:
            assert time.monotonic() < deadline, "the silent client's runs never reached the queue"
            time.sleep(0.05)
        # Its runs (one worker) go first: their ~7 MB of events stall in its socket, and the run
        # queued behind them still comes back, the pages still answer.
        result, elapsed = run_async(a_run_meanwhile(server))
        assert result["status"] == "ok" and elapsed < 50
        assert fetch_s(server.url + "/healthz") < 2
        health = server.health()
        assert health["queued"] == 0 and health["workers"][0]["runs"] == runs_before + 5
    finally:
        ws.sock.close()
