"""Warm end-to-end latency over Socket.IO next to the in-worker run time, and a worker's cold start.

    make bench            # or: python -m benchmarks.latency [--runs 20]

Starts the real server (gunicorn, as `make run` does) on a free port, runs vector add
(n=98432, check only) N times over a websocket, and prints a table in milliseconds.
"""
import argparse
import json
import os
import socket
import statistics
import subprocess
import sys
import threading
import time
import urllib.request

import socketio

from sandbox import protocol

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SPEC_OPTIONS = {"check": True, "bench": False, "trace": False, "ir": False}


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def percentile(values, q):
    values = sorted(values)
    return values[min(len(values) - 1, int(round(q * (len(values) - 1))))]


def cold_start():
    """Seconds from launching `python -m sandbox.worker` to its ready message (its first run process warm)."""
    start = time.perf_counter()
    proc = subprocess.Popen([sys.executable, "-m", "sandbox.worker"], cwd=ROOT, stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, env={**os.environ, "PYTHONPATH": ROOT})
    protocol.decode(proc.stdout.readline())
    elapsed = time.perf_counter() - start
    proc.kill()
    proc.wait()
    return elapsed * 1e3


def start_server(port):
    env = {**os.environ, "PORT": str(port), "WORKERS": "1"}
    server = subprocess.Popen([os.path.join(os.path.dirname(sys.executable), "gunicorn"), "-w", "1",
                               "--threads", "8", "-b", f"127.0.0.1:{port}", "app:create_app()"],
                              cwd=ROOT, env=env, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 180
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz") as r:
                if json.load(r)["ok"]:
                    return server
        except OSError:
            time.sleep(0.3)
    server.kill()
    raise SystemExit("server did not become healthy")


def measure(port, runs):
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/api/examples/vector_add") as r:
        spec = json.load(r)["spec"]
    spec["options"].update(SPEC_OPTIONS)
    client = socketio.Client()
    done, box = threading.Event(), {}
    client.on("run_result", lambda data: (box.__setitem__("result", data["result"]), done.set()))
    client.connect(f"http://127.0.0.1:{port}", transports=["websocket"])
    rows = []
    for i in range(runs + 2):  # two warm-up runs
        done.clear()
        start = time.perf_counter()
        client.call("run", {"spec": spec})
        done.wait(120)
        end_to_end = (time.perf_counter() - start) * 1e3
        assert box["result"]["status"] == "ok", box["result"]["error"]
        if i >= 2:
            rows.append((end_to_end, box["result"]["run_ms"]))
    client.disconnect()
    return rows


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=20)
    args = parser.parse_args()
    cold_ms = cold_start()
    port = free_port()
    server = start_server(port)
    try:
        rows = measure(port, args.runs)
    finally:
        server.terminate()
        server.wait()
    e2e = [r[0] for r in rows]
    inside = [r[1] for r in rows]
    overhead = [a - b for a, b in rows]
    print(f"vector add n=98432, check only, {args.runs} warm runs over Socket.IO (ms)")
    print(f"{'':28}{'median':>10}{'p95':>10}")
    for name, values in (("end to end (Socket.IO)", e2e), ("inside the run process", inside),
                         ("server + transport + fork", overhead)):
        print(f"{name:28}{statistics.median(values):10.1f}{percentile(values, 0.95):10.1f}")
    print(f"{'worker cold start':28}{cold_ms:10.0f}")


if __name__ == "__main__":
    main()
