"""Warm end-to-end latency over Socket.IO next to the in-worker run time, and a worker's cold start.

    make bench            # or: python -m benchmarks.latency [--runs 20]

Starts the real server (gunicorn, as `make run` does, default settings: two workers) on a free
port and, as one person would from one tab, runs vector add (n=98432, check only) N times over a
websocket with a think time between runs (0.3, 1 and 2 s), and prints a table in milliseconds. On a
GPU a check-only run bounds-checks its launch in the interpreter first, and the server remembers the
launches that passed: re-running the same spec skips the pass, whichever worker takes it. One
variant makes every run a new launch (a new seed) to show what the pass costs; another turns it off
(options.sanitize).
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import time
import urllib.request

from benchmarks.client import Tab
from benchmarks.server import Server
from sandbox import protocol

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CHECK_ONLY = {"check": True, "bench": False, "trace": False, "ir": False}
# name: (options, a new launch each run, seconds a person reads the result before the next run)
VARIANTS = {"same spec again, 0.3 s think": (CHECK_ONLY, False, 0.3),
            "same spec again, 1 s think": (CHECK_ONLY, False, 1.0),
            "same spec again, 2 s think": (CHECK_ONLY, False, 2.0),
            "new seed each run, 1 s think": (CHECK_ONLY, True, 1.0),
            "no bounds check, 1 s think": ({**CHECK_ONLY, "sanitize": False}, False, 1.0)}


def percentile(values, q):
    values = sorted(values)
    return values[min(len(values) - 1, int(round(q * (len(values) - 1))))]


def cold_start():
    """Seconds from launching `python -m sandbox.worker` to its ready message (its first run process warm)."""
    from app.config import from_environment
    from app.dispatch.slot import worker_env
    env = worker_env(from_environment())  # the worker's settings, as the server passes them
    start = time.perf_counter()
    proc = subprocess.Popen([sys.executable, "-m", "sandbox.worker"], cwd=ROOT, stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, env=env)
    protocol.decode(proc.stdout.readline())
    elapsed = time.perf_counter() - start
    proc.kill()
    proc.wait()
    return elapsed * 1e3


def measure(port, runs, options, new_launch, pause_s):
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/api/examples/vector_add") as r:
        spec = json.load(r)["spec"]
    spec["options"].update(options)
    tab = Tab(f"http://127.0.0.1:{port}")
    rows = []
    for i in range(runs + 2):  # two warm-up runs
        if new_launch:
            spec["options"]["seed"] = 1000 + i
        end_to_end, result = tab.run(spec)
        assert result["status"] == "ok", result["error"]
        if i >= 2:
            rows.append((end_to_end, result["run_ms"]))
        time.sleep(pause_s)
    tab.close()
    return rows


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=20)
    args = parser.parse_args()
    cold_ms = cold_start()
    with Server() as server:  # the default settings, as a user meets them
        device = server.health()["device"]
        rows = {name: measure(server.port, args.runs, *variant) for name, variant in VARIANTS.items()}
    print(f"vector add n=98432 on {device['name']} (triton {device['triton']}), {args.runs} warm runs "
          f"over one Socket.IO connection, default settings, ms")
    print(f"{'':32}{'end to end':>22}{'in run process':>16}{'server + transport':>22}")
    print(f"{'':32}{'median':>11}{'p95':>11}{'median':>16}{'median':>11}{'p95':>11}")
    for name, pairs in rows.items():
        e2e, inside = [r[0] for r in pairs], [r[1] for r in pairs]
        overhead = [a - b for a, b in pairs]
        print(f"{name:32}{statistics.median(e2e):11.1f}{percentile(e2e, 0.95):11.1f}"
              f"{statistics.median(inside):16.1f}{statistics.median(overhead):11.1f}{percentile(overhead, 0.95):11.1f}")
    print(f"worker cold start (python -m sandbox.worker to its first warm run process): {cold_ms:.0f} ms")


if __name__ == "__main__":
    main()
