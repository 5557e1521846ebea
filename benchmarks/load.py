"""A classroom at once: N students, each a Socket.IO client that runs the gallery's vector add 5 times
with 1–3 s of thinking before each run, against the real server as `make run` starts it
(`python -m app.serve`: gunicorn, one gevent web process, default settings), a fresh one per N.

    python -m benchmarks.load                     # N = 50, 200, 1000
    python -m benchmarks.load --students 300 --runs 5 --polling 0.1 --full

The students arrive over ARRIVE_S seconds; one in ten uses long-polling, the rest a websocket (as
browsers fall back). A run is check only (python -m benchmarks.latency's variant: ~0.15 s in the
interpreter); `--full` sends the example as the page does (trace, timings and IR: ~3.5 s). All the
clients are python-socketio's asyncio client in this one process, so a thousand fit on two cores
beside the server. Per N it prints:

  connected   students whose connection opened (any the server closed before their last run are
              counted below the table)
  completed   runs whose result came back ok (or a mismatch: the run ran)
  refused     runs the server refused in the ack: the queue was full (QUEUE_LIMIT) or the student's
              share of it (QUEUE_PER_OWNER); a person would press Run again
  too busy    runs that waited past QUEUE_WAIT_S and came back as that error, without running
  lost        runs acknowledged but with no result within QUEUE_WAIT_S + RUN_TIMEOUT_S + 15 s, or
              whose connection dropped meanwhile; should be 0
  errors      runs that came back with any other error (none expected of this kernel)
  misrouted   run events a student received for a run id that is not its own; must be 0
  p50 / p95   seconds from pressing Run to the result, completed runs
  queue       the deepest place in line a run_status `queued` message gave
  /healthz    the slowest of the /healthz requests sent once a second meanwhile, ms
  web RSS     the web process's peak resident memory; threads: its most threads at once
"""
import argparse
import asyncio
import collections
import json
import os
import random
import resource
import statistics
import threading
import time
import urllib.request

import socketio

from app.config import from_environment
from benchmarks.server import Server

RUNS, THINK_S, ARRIVE_S, POLLING = 5, (1.0, 3.0), 10.0, 0.1
CHECK_ONLY = {"check": True, "bench": False, "trace": False, "ir": False}


class Tally:
    def __init__(self):
        self.connected = self.asked = self.completed = self.refused = self.too_busy = self.failed = 0
        self.lost = self.misrouted = self.deepest = 0
        self.latencies, self.dropped = [], collections.Counter()  # connections the client did not close, by why


def percentile(values, q):
    values = sorted(values)
    return values[min(len(values) - 1, int(round(q * (len(values) - 1))))] if values else float("nan")


async def student(index, url, spec, args, tally, wait_bound_s):
    rng = random.Random(index)
    await asyncio.sleep(rng.uniform(0, args.arrive_s))
    client = socketio.AsyncClient(reconnection=False)
    heard, results, arrived = [], {}, asyncio.Event()

    @client.on("*")
    async def any_event(event, data):
        if isinstance(data, dict) and "run_id" in data:
            heard.append(data["run_id"])
        if event == "run_status" and data.get("phase") == "queued":
            tally.deepest = max(tally.deepest, data.get("position", 0))
        if event == "run_result":
            results[data["run_id"]] = (time.perf_counter(), data["result"])
            arrived.set()

    @client.event
    async def disconnect(reason=None):
        if reason != client.reason.CLIENT_DISCONNECT:
            tally.dropped[f"{transport}: {reason}"] += 1

    transport = "polling" if rng.random() < args.polling else "websocket"
    try:
        await client.connect(url, transports=[transport], wait_timeout=60)
    except (socketio.exceptions.ConnectionError, asyncio.TimeoutError):
        return
    tally.connected += 1
    mine = set()
    for _ in range(args.runs):
        await asyncio.sleep(rng.uniform(*THINK_S))
        if not client.connected:
            break
        tally.asked += 1
        start = time.perf_counter()
        try:
            ack = await client.call("run", {"spec": spec}, timeout=60)
        except (socketio.exceptions.TimeoutError, socketio.exceptions.BadNamespaceError):
            tally.lost += 1
            continue
        if "error" in ack:
            tally.refused += 1
            continue
        mine.add(ack["run_id"])
        deadline = time.monotonic() + wait_bound_s
        while ack["run_id"] not in results and client.connected and time.monotonic() < deadline:
            arrived.clear()
            try:
                await asyncio.wait_for(arrived.wait(), 1.0)
            except asyncio.TimeoutError:
                pass
        if ack["run_id"] not in results:
            tally.lost += 1
            continue
        end, result = results[ack["run_id"]]
        if result["status"] in ("ok", "mismatch"):
            tally.completed += 1
            tally.latencies.append(end - start)
        elif result["error"]["phase"] == "limit":
            tally.too_busy += 1
        else:
            tally.failed += 1
    tally.misrouted += sum(1 for run_id in heard if run_id not in mine)
    if client.connected:
        await client.disconnect()


class Watch:
    """Samples the web process (resident memory, threads) and /healthz's answer time, once a second."""

    def __init__(self, server):
        self.server, self.stop = server, threading.Event()
        self.rss_mb = self.threads = 0
        self.healthz_ms = []
        self.thread = threading.Thread(target=self.loop, daemon=True)

    def loop(self):
        pid = self.server.web_pid()
        while not self.stop.wait(1.0):
            with open(f"/proc/{pid}/status") as f:
                status = dict(line.split(":", 1) for line in f if ":" in line)
            self.rss_mb = max(self.rss_mb, int(status["VmRSS"].split()[0]) / 1024)
            self.threads = max(self.threads, int(status["Threads"]))
            start = time.perf_counter()
            self.server.health(timeout_s=30)
            self.healthz_ms.append((time.perf_counter() - start) * 1e3)


def measure(n, args):
    log = open(args.server_log, "ab") if args.server_log else None
    with Server(log=log) as server:
        config = server.health()
        with urllib.request.urlopen(f"{server.url}/api/examples/vector_add") as r:
            spec = json.load(r)["spec"]
        if not args.full:
            spec["options"].update(CHECK_ONLY)
        settings = from_environment()  # the server's: it has this process's environment
        wait_bound_s = settings["QUEUE_WAIT_S"] + settings["RUN_TIMEOUT_S"] + 15
        tally, watch = Tally(), Watch(server)
        watch.thread.start()
        start = time.perf_counter()

        async def classroom():
            # aiohttp's note on the sockets a polling client leaves to the collector: not the server's doing
            asyncio.get_running_loop().set_exception_handler(
                lambda loop, context: None if context["message"].startswith("Unclosed") else
                loop.default_exception_handler(context))
            await asyncio.gather(*(student(i, server.url, spec, args, tally, wait_bound_s) for i in range(n)))

        asyncio.run(classroom())
        tally.seconds = time.perf_counter() - start
        watch.stop.set()
        watch.thread.join()
    return config, tally, watch


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--students", type=int, nargs="+", default=[50, 200, 1000])
    parser.add_argument("--runs", type=int, default=RUNS)
    parser.add_argument("--arrive-s", type=float, default=ARRIVE_S)
    parser.add_argument("--polling", type=float, default=POLLING, help="share of students on long-polling")
    parser.add_argument("--full", action="store_true", help="the example's own options (trace, timings, IR)")
    parser.add_argument("--server-log", help="append the server's output to this file")
    args = parser.parse_args()
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)  # a descriptor or two per client
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    rows = []
    for n in args.students:
        config, tally, watch = measure(n, args)
        rows.append((n, tally, watch))
        print(f"  N={n}: {tally.completed} completed in {tally.seconds:.0f} s", flush=True)
    device, workers = config["device"], len(config["workers"])
    print(f"\nvector add ({'full' if args.full else 'check only'}) on {device['name']}, {workers} workers, "
          f"{os.cpu_count()} cores; each student {args.runs} runs, {THINK_S[0]:g}–{THINK_S[1]:g} s think, "
          f"{args.polling:.0%} on long-polling, arriving over {args.arrive_s:g} s")
    header = ("students", "connected", "asked", "completed", "refused", "too busy", "lost", "errors", "misrouted",
              "p50 s", "p95 s", "queue", "/healthz max ms", "web RSS MB", "threads", "took s")
    print(" | ".join(header))
    for n, t, w in rows:
        cells = (n, t.connected, t.asked, t.completed, t.refused, t.too_busy, t.lost, t.failed, t.misrouted,
                 f"{statistics.median(t.latencies) if t.latencies else float('nan'):.2f}",
                 f"{percentile(t.latencies, 0.95):.2f}", t.deepest, f"{max(w.healthz_ms, default=0):.0f}",
                 f"{w.rss_mb:.0f}", w.threads, f"{t.seconds:.0f}")
        print(" | ".join(str(c) for c in cells))
    for n, t, _ in rows:
        if t.dropped:
            print(f"N={n}: connections closed before the student's last run: {dict(t.dropped)}")


if __name__ == "__main__":
    main()
