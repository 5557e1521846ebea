"""A new browser's first run of each gallery example, with the shared kernels on and off side by side.

    python -m benchmarks.first_run [--owners 3] [--log-dir DIR]

Starts two real servers as `make run` starts them (default settings, each its own RUN_ROOT, so that
nothing compiled before helps): one with SHARED_KERNELS=1, one with SHARED_KERNELS=0. Right after
they are healthy (the first worker warm, its warm-up under way on the first) a new student runs
the vector add on each: a warm-up must not delay a run. Once the warm-up has finished, for each
example in turn and on each server, `--owners` new students (a new Socket.IO connection is a new
owner: nothing of theirs is compiled) run it once as shipped, check only, then as the page runs it
(every option on: trace, timing, IR), the students `--think-s` apart (default 1 s; 0: back to back,
where a GPU worker's next run process may still be starting CUDA). Prints a table of median
end-to-end times (pressing Run to the result) in ms, and the time in the run process (`result.run_ms`).
"""
import argparse
import json
import os
import statistics
import tempfile
import threading
import time
import urllib.request

import socketio

from benchmarks.server import Server

CHECK_ONLY = {"check": True, "bench": False, "trace": False, "ir": False}
WARM_UP_TIMEOUT_S = 900


def examples(url):
    with urllib.request.urlopen(f"{url}/api/examples") as r:
        names = [e["name"] for e in json.load(r)]
    specs = {}
    for name in names:
        with urllib.request.urlopen(f"{url}/api/examples/{name}") as r:
            specs[name] = json.load(r)["spec"]
    return specs


def first_run(url, spec, options=None):
    """One new owner's first run: (end to end ms, run_ms, result)."""
    spec = {**spec, "options": {**spec["options"], **(options or {})}}
    client = socketio.Client()
    done, box = threading.Event(), {}
    client.on("run_result", lambda data: (box.__setitem__("result", data["result"]), done.set()))
    client.connect(url, transports=["websocket"], wait_timeout=20)
    try:
        start = time.perf_counter()
        ack = client.call("run", {"spec": spec}, timeout=60)
        if "run_id" not in (ack or {}):
            raise RuntimeError(f"the run was refused: {ack}")
        if not done.wait(300):
            raise RuntimeError("no result within 300 s")
        elapsed = (time.perf_counter() - start) * 1e3
    finally:
        client.disconnect()
    result = box["result"]
    return elapsed, result.get("run_ms") or 0.0, result


def wait_warmed(server, timeout_s=WARM_UP_TIMEOUT_S):
    """Seconds until every worker's warm-up has finished."""
    start = time.monotonic()
    while time.monotonic() - start < timeout_s:
        reports = [w.get("shared_kernels") or {} for w in server.health().get("workers", [])]
        if reports and all(r.get("state") == "ready" for r in reports):
            return time.monotonic() - start, reports
        time.sleep(0.5)
    raise RuntimeError(f"the warm-up did not finish within {timeout_s} s")


def median_of(url, spec, options, owners, think_s):
    rows = []
    for _ in range(owners):
        time.sleep(think_s)
        rows.append(first_run(url, spec, options))
    statuses = {r[2]["status"] for r in rows}
    return statistics.median(r[0] for r in rows), statistics.median(r[1] for r in rows), statuses


def row(cells):
    shown = []
    for variant in ("check", "page"):
        for on in (1, 0):
            e2e, inside, statuses = cells[(on, variant)]
            flag = "" if statuses <= {"ok", "mismatch"} else f" {sorted(statuses)}"
            shown.append(f"{e2e:.0f} ({inside:.0f}){flag}")
    return " | ".join(shown)


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--owners", type=int, default=3, help="new students per example, server and variant")
    parser.add_argument("--think-s", type=float, default=1.0, help="seconds between one student's run and the next's")
    parser.add_argument("--log-dir", default=None, help="where the servers' logs go (default: a temp dir)")
    args = parser.parse_args()
    logs = args.log_dir or tempfile.mkdtemp(prefix="first-run-")
    os.makedirs(logs, exist_ok=True)
    roots = {on: tempfile.mkdtemp(prefix=f"first-run-{'on' if on else 'off'}-") for on in (1, 0)}
    servers = {on: Server(open(os.path.join(logs, f"server-shared-{'on' if on else 'off'}.log"), "ab"),
                          SHARED_KERNELS=on, RUN_ROOT=roots[on]) for on in (1, 0)}
    say = lambda text: print(text, flush=True)  # noqa: E731  (rows as they come: a cut-off run keeps them)
    try:
        started = time.monotonic()
        for server in servers.values():
            server.start()
        healthy_s = time.monotonic() - started
        device = servers[1].health()["device"]
        specs = examples(servers[1].url)
        say(f"A new student's first run of each gallery example, {args.owners} students each, {args.think_s:g} s apart, on {device['name']} "
            f"(triton {device['triton']}), shared kernels on and off; server logs in {logs}")
        # While the first server's workers still warm: a run must not wait for it.
        during = {on: first_run(servers[on].url, specs["vector_add"], CHECK_ONLY) for on in (1, 0)}
        still_warming = [w.get("shared_kernels") for w in servers[1].health()["workers"]]
        say(f"servers healthy after {healthy_s:.1f} s; vector add, check only, a new student while the warm-up was "
            f"under way ({still_warming}): shared on {during[1][0]:.0f} ms ({during[1][1]:.0f} in the run process), "
            f"off {during[0][0]:.0f} ms ({during[0][1]:.0f})")
        warm_s, reports = wait_warmed(servers[1])
        say(f"the warm-up finished {warm_s:.1f} s after that: {reports}")
        say("median ms end to end (in the run process)")
        say("| example | check only, shared on | check only, off | as the page runs it, on | as the page runs it, off |")
        say("|---|---|---|---|---|")
        for name, spec in specs.items():
            cells = {(on, variant): median_of(servers[on].url, spec, options, args.owners, args.think_s)
                     for variant, options in (("check", CHECK_ONLY), ("page", None)) for on in (1, 0)}
            say(f"| {name} | {row(cells)} |")
    finally:
        for server in servers.values():
            server.stop()


if __name__ == "__main__":
    main()
