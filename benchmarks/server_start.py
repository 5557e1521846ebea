"""A person at a server that has just started: Run pressed the moment `/healthz` is ok, then again
every 2 s for 60 s, while the server's own warm-up is under way.

    python -m benchmarks.server_start [--seconds 60] [--every 2] [--repeat 1] [--workers 0] [--log-dir DIR]

Each repeat starts a NEW real server as `make run` starts it (`python -m app.serve`, default
settings: the puzzles' solutions warm up, PUZZLE_WARMUP=1, and the gallery, SHARED_KERNELS=1;
`--workers 1` is a one-GPU host's count on a host without one), with
its own new RUN_ROOT and database, so that nothing is compiled, solved or warm. The moment
`/healthz` answers ok, one person (one Socket.IO client, as the page is) runs the gallery's vector
add as the page loads it (`/api/examples/vector_add`, its options as shipped: check, trace, bench
and IR on). The presses keep a clock: one every `--every` s from the first for `--seconds` s; a
press that comes due while the run before is still under way is made the moment its result arrives
(one person, one run at a time).

Per run, in ms from the press (the `run` event sent):
  queue wait       to the run's `run_status` of phase `starting`, which a worker slot sends the
                   moment it takes the run from the queue (app/dispatch/slot.py; the server's
                   `playground_run_queue_wait_seconds` counts the same interval from its side)
  to run process   to the first `run_status` after that (`compiling`, ...): the worker has handed
                   the run to its warm run process, which has begun it
  first part       to the first `run_partial` (the verdict or the diagram)
  whole            to the `run_result`
A run counts as "during warm-up" when it was pressed before `/healthz` (polled every 0.5 s) showed
both warm-ups done (`puzzle_solutions.state` "ready", no worker's `shared_kernels.state` "warming").
Prints a row per server, then over all of them, those during the warm-up and those after it (median
/ p95), with the preemptions the server made for the person (`/healthz`) and the host's load
average; each run's row, its phases included, goes to the log dir.
"""
import argparse
import json
import os
import shutil
import statistics
import tempfile
import threading
import time
import urllib.request

from benchmarks.client import Tab
from benchmarks.latency import percentile
from benchmarks.server import Server

HEALTH_POLL_S = 0.5
SERVER_PHASES = ("queued", "starting")  # what the server says before the worker has the run


class WarmUpWatch:
    """Polls `/healthz` in a thread: when each of the server's own warm-ups finished, and the
    preemptions its slots made for people's runs."""

    def __init__(self, server):
        self.server, self.started = server, time.monotonic()
        self.puzzles_done = self.gallery_done = None  # seconds after `started`
        self.preemptions, self.stopping = 0, threading.Event()
        self.thread = threading.Thread(target=self._poll, daemon=True)
        self.thread.start()

    def _poll(self):
        while not self.stopping.wait(HEALTH_POLL_S):
            health, at = self.server.health(), time.monotonic() - self.started
            workers = health.get("workers") or []
            if not workers:
                continue
            self.preemptions = sum(w.get("preemptions") or 0 for w in workers)
            if self.puzzles_done is None and (health.get("puzzle_solutions") or {}).get("state") in ("ready", None):
                self.puzzles_done = at
            gallery = [w["shared_kernels"] for w in workers if w.get("shared_kernels")]
            if self.gallery_done is None and all(g.get("state") != "warming" for g in gallery):
                self.gallery_done = at

    def under_way(self, at):
        """Whether the warm-up was still under way `at` seconds after `started`."""
        return any(done is None or at < done for done in (self.puzzles_done, self.gallery_done))

    def stop(self):
        self.stopping.set()
        self.thread.join()


def page_spec(url):
    with urllib.request.urlopen(f"{url}/api/examples/vector_add") as r:
        return json.load(r)["spec"]


def person(tab, spec, seconds, every, watch):
    """Presses Run on the clock for `seconds`; one row per run."""
    rows, start = [], time.monotonic()
    for k in range(int(seconds / every) + 1):
        time.sleep(max(0.0, start + k * every - time.monotonic()))
        at = time.monotonic() - watch.started
        whole, result = tab.run(spec)
        phases, parts = dict(tab.phases), dict(tab.parts)
        in_worker = [ms for phase, ms in phases.items() if phase not in SERVER_PHASES]
        rows.append({"at_s": round(at, 2), "during_warm_up": watch.under_way(at), "status": result["status"],
                     "queue_ms": phases.get("starting"), "run_process_ms": min(in_worker, default=None),
                     "first_part_ms": min(parts.values(), default=None), "whole_ms": whole, "phases": phases})
    return rows


def one_server(index, args, logs):
    root = tempfile.mkdtemp(prefix="server-start-")
    log = open(os.path.join(logs, f"server-{index}.log"), "ab")
    server = Server(log, WORKERS=args.workers, PUZZLE_WARMUP=1, SHARED_KERNELS=1, RUN_ROOT=os.path.join(root, "runs"),
                    DATABASE=os.path.join(root, "playground.sqlite"))
    try:
        server.start()  # returns the moment /healthz is ok
        watch = WarmUpWatch(server)
        spec = page_spec(server.url)
        tab = Tab(server.url)
        load = [os.getloadavg()[0]]
        try:
            rows = person(tab, spec, args.seconds, args.every, watch)
        finally:
            tab.close()
            watch.stop()
        load.append(os.getloadavg()[0])
        device = server.health().get("device") or {}
    finally:
        server.stop()
        shutil.rmtree(root, ignore_errors=True)  # its kernels and database: the next server starts new
    with open(os.path.join(logs, f"runs-{index}.json"), "w") as f:
        json.dump({"device": device, "warm_up_done_s": [watch.puzzles_done, watch.gallery_done], "load": load,
                   "rows": rows}, f, indent=1)
    return device, watch, rows, load


def cell(rows, key):
    values = [r[key] for r in rows if r[key] is not None]
    if not values:
        return "—"
    return f"{statistics.median(values):.0f} / {percentile(values, 0.95):.0f}"


def line(name, rows, warm_up="", preemptions="", load=""):
    statuses = sorted({r["status"] for r in rows} - {"ok"})
    flag = f" ({', '.join(statuses)} among them)" if statuses else ""
    during = sum(r["during_warm_up"] for r in rows)
    return (f"| {name} | {load} | {len(rows)}{flag} | {during} | {warm_up} | {preemptions} | **{cell(rows, 'queue_ms')}** | "
            f"{cell(rows, 'run_process_ms')} | {cell(rows, 'first_part_ms')} | {cell(rows, 'whole_ms')} |")


def seconds(value):
    return "not within the runs" if value is None else f"{value:.1f} s"


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seconds", type=float, default=60.0, help="how long the person keeps pressing Run")
    parser.add_argument("--every", type=float, default=2.0, help="seconds from one press to the next")
    parser.add_argument("--repeat", type=int, default=1, help="new servers, one after the other")
    parser.add_argument("--workers", type=int, default=0, help="WORKERS (default 0, the server's default: one per GPU, "
                        "2 without one; 1 is a one-GPU host's count)")
    parser.add_argument("--log-dir", default=None, help="where the servers' logs and each run's row go (default: a temp dir)")
    args = parser.parse_args()
    logs = args.log_dir or tempfile.mkdtemp(prefix="server-start-")
    os.makedirs(logs, exist_ok=True)
    say = lambda text: print(text, flush=True)  # noqa: E731  (rows as they come: a cut-off run keeps them)
    every_row, lines = [], []
    for index in range(args.repeat):
        device, watch, rows, load = one_server(index, args, logs)
        every_row += rows
        lines.append(line(f"server {index + 1}", rows, f"{seconds(watch.puzzles_done)}, {seconds(watch.gallery_done)}",
                          str(watch.preemptions), " → ".join(f"{value:.1f}" for value in load)))
        if index == 0:
            say(f"A new server on {device.get('name')} (triton {device.get('triton')}), WORKERS={args.workers}; Run pressed the moment "
                f"/healthz was ok, then every {args.every:g} s for {args.seconds:g} s; the vector add as the page "
                f"loads it; logs and each run's row in {logs}")
            say("| server | host load | runs | during warm-up | warm-up done after (puzzles, gallery) | preemptions | "
                "queue wait | to run process | first part | whole |")
            say("|---|---|---|---|---|---|---|---|---|---|")
        say(lines[-1])
    if args.repeat > 1:
        say(line("all", every_row))
    for name, during in (("all, during the warm-up", True), ("all, after it", False)):
        rows = [r for r in every_row if r["during_warm_up"] == during]
        if rows:
            say(line(name, rows))
    say("median / p95 ms from the press; the warm-up's times from /healthz ok; the host's load average (1 min) "
        "as the person began and ended")


if __name__ == "__main__":
    main()
