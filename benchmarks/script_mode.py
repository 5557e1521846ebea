"""Paste a whole program → Run → click a launch: what a person waits for in script mode, this build
beside another checkout's in one run.

    python -m benchmarks.script_mode [--runs 6] [--other PATH] [--programs linear_gelu.py,...]

Starts this checkout's real server (`python -m app.serve`, default settings, a RUN_ROOT of its own)
and, with `--other`, the same for the checkout at PATH, waits for their warm-ups, then for each
program of tests/scripts/ (kernels, their wrappers, a check against torch, a perf_report benchmark)
plays, on each server in alternation, what a person does with a program they pasted, over
Socket.IO with the page's options (check, trace, bench and IR on) and `--think-s` between a result
and the next Run:

  first     a new owner (a new connection: nothing of theirs compiled) pastes the program, Run
  select    the same owner clicks the last launch listed (`options.launch`), which the first Run
            did not show
  back      then clicks the launch the first Run showed, to see it again
  again     Run again, unchanged (the default launch shown)

Prints median and p95 in ms of the first part (the diagram: the `trace` part, docs/events.md; a
result with no trace part has its whole result as its first part) and of the whole result, and
each selection's whole result as a share of the first Run's (the medians'; a selection replays
its launch alone where the server kept its inputs, else runs the program whole again).
"""
import argparse
import itertools
import statistics
import pathlib
import time

from benchmarks.client import Tab
from benchmarks.edit_loop import cell, side_by_side
from benchmarks.server import ROOT

PROGRAMS = sorted(p.name for p in (pathlib.Path(ROOT) / "tests" / "scripts").glob("*.py"))
OPTIONS = {"check": True, "trace": True, "bench": True, "ir": True}
CASES = ("first", "select", "back", "again")


def spec(source, **options):
    return {"version": 1, "mode": "script", "source": source, "options": {**OPTIONS, **options}}


def sample(tab, run_spec):
    """(trace part ms, whole result ms, status, the result) of one run on `tab`."""
    whole, result = tab.run(run_spec)
    return tab.parts.get("trace", whole), whole, result["status"], result


def person(build, source, think_s):
    """One person's visit: {case: (first part ms, whole ms, status)}."""
    tab = Tab(build.server.url)
    try:
        rows = {}
        *rows["first"], result = sample(tab, spec(source))
        launches = result.get("launches") or {"list": []}
        time.sleep(think_s)
        *rows["select"], _ = sample(tab, spec(source, launch=max(0, len(launches["list"]) - 1)))
        time.sleep(think_s)
        *rows["back"], _ = sample(tab, spec(source, launch=launches.get("selected") or 0))
        time.sleep(think_s)
        *rows["again"], _ = sample(tab, spec(source))
        time.sleep(think_s)
        return rows
    finally:
        tab.close()


def share(rows, first_rows):
    """A case's median whole result as a share of the first Run's."""
    whole = lambda rows: statistics.median(row[1] for row in rows)  # noqa: E731
    return f"{whole(rows) / whole(first_rows):.2f}x" if rows and first_rows else "n/a"


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=6, help="people per program and build")
    parser.add_argument("--other", default=None, help="another checkout, run side by side")
    parser.add_argument("--programs", default=",".join(PROGRAMS), help="comma-separated, of: " + ", ".join(PROGRAMS))
    parser.add_argument("--think-s", type=float, default=2.0)
    parser.add_argument("--log-dir", default=None)
    args = parser.parse_args()
    say = lambda text: print(text, flush=True)  # noqa: E731
    with side_by_side(args.other, args.log_dir, "script-mode-") as (roots, builds, logs):
        device = builds[0].server.health()["device"]
        say(f"Script mode on {device['name']} (triton {device['triton']}, torch {device['torch']}), {args.runs} people "
            f"per program and build, {args.think_s:g} s think, page-default options; logs in {logs}")
        say("ms, median / p95: first part (the diagram) | whole result")
        say("| program | case | " + " | ".join(f"{b.name} ({roots[b.name]})" for b in builds) + " |")
        say("|---|---|" + "---|" * len(builds))
        for name in args.programs.split(","):
            source = (pathlib.Path(ROOT) / "tests" / "scripts" / name).read_text()
            rows = {(b.name, case): [] for b in builds for case in CASES}
            for _, build in itertools.product(range(args.runs), builds):  # alternating: the same conditions
                for case, row in person(build, source, args.think_s).items():
                    rows[build.name, case].append(row)
            for case in CASES:
                say(f"| {name} | {case} | " + " | ".join(cell(rows[b.name, case]) for b in builds) + " |")
            for case in ("select", "back"):
                say(f"| {name} | {case} / first | " + " | ".join(share(rows[b.name, case], rows[b.name, "first"])
                                                           for b in builds) + " |")

if __name__ == "__main__":
    main()
