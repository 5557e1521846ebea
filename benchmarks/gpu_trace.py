"""The GPU tracer against the interpreter's pass, through the real server, on a GPU host.

    python -m benchmarks.gpu_trace [--runs 20] [--out DIR]

Two servers as `make run` starts them, one with GPU_TRACER=1 (the default) and one with
GPU_TRACER=0 (the trace and bounds check from Triton's interpreter on CPU copies), measured in
alternation from an outside client over Socket.IO (benchmarks.client) with 1 s between runs:
- vector add n=98,432, a new seed each run (so the bounds check runs every time), check on, trace off;
- vector add n=2^24, trace on;
- matmul 4096 x 4096 x 4096 fp16 with 128 x 128 x 64 tiles, trace on.
Prints one table; with --out, writes each case's last result as JSON (the diagram's render
benchmark reads the 2^24 one).
"""
import argparse
import json
import os
import statistics
import time
import urllib.request

from benchmarks.client import Tab
from benchmarks.edit_loop import matmul_4096
from benchmarks.server import Server


def example(server, name):
    with urllib.request.urlopen(f"{server.url}/api/examples/{name}") as r:
        return json.load(r)["spec"]


def cases(server):
    small = example(server, "vector_add")
    small["options"].update({"trace": False, "bench": False, "ir": False})
    big = example(server, "vector_add")
    big["inputs"] = {k: v.replace("98432", str(1 << 24)) for k, v in big["inputs"].items()}
    big["options"].update({"bench": False, "ir": False})
    matmul = matmul_4096(example(server, "matmul"))  # the gallery's kernel at a GPU's size
    matmul["reference"] = {}
    matmul["options"].update({"bench": False, "ir": False})
    return [("vector add n=98,432, new seed, bounds check", small, True),
            ("vector add n=2^24, trace on", big, False),
            ("matmul 4096^3 fp16, trace on", matmul, False)]


def summary(result):
    trace = result.get("trace") or {}
    covered = ", ".join(f"{k}: {v['unwritten']} unwritten" for k, v in (trace.get("coverage") or {}).items())
    return (f"{result['status']}; tracer {trace.get('tracer', '-')}, programs traced "
            f"{trace.get('programs_traced', 0)}/{trace.get('programs_total', 0)}; {covered or 'no coverage'}; "
            f"notes: {' | '.join(n[:80] for n in result['notes']) or '-'}")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--big-runs", type=int, default=3)
    parser.add_argument("--out", default=None)
    args = parser.parse_args()
    servers = {"GPU tracer": Server(GPU_TRACER=1), "interpreter pass": Server(GPU_TRACER=0)}
    for server in servers.values():
        server.start()
    try:
        clients = {name: Tab(server.url) for name, server in servers.items()}
        specs = cases(next(iter(servers.values())))
        print(f"| launch | {' | '.join(f'{name}: median (p95) ms' for name in servers)} |")
        print("|---|" + "---|" * len(servers))
        details = []
        for label, spec, new_seed in specs:
            runs = args.runs if new_seed else args.big_runs
            times = {name: [] for name in servers}
            for i in range(runs + 1):  # the first run of each compiles: not counted
                for name, client in clients.items():
                    if new_seed:
                        spec["options"]["seed"] = 1000 + i
                    elapsed, result = client.run(spec)
                    if i:
                        times[name].append(elapsed)
                    if i == runs:
                        details.append(f"{label}, {name}: {summary(result)}")
                        if args.out:
                            path = os.path.join(args.out, f"case{len(details)}-{name.split()[0].lower()}.json")
                            with open(path, "w") as f:
                                json.dump(result, f)
                    time.sleep(1.0)
            cells = []
            for name in servers:
                values = sorted(times[name])
                p95 = values[min(len(values) - 1, int(0.95 * len(values)))]
                cells.append(f"{statistics.median(values):.1f} ({p95:.1f})")
            print(f"| {label} | {' | '.join(cells)} |", flush=True)
        print()
        for line in details:
            print("-", line)
    finally:
        for server in servers.values():
            server.stop()


if __name__ == "__main__":
    main()
