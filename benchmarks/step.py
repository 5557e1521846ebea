"""Step-through latency: how long the Step tab waits for one program of each gallery example.

    python -m benchmarks.step [--runs 5]

Starts the real server (as `make run` does, default settings) on a free port and, for each gallery
example, asks `POST /api/run` for its spec with options.step_pid (program 0, and the last program,
whose block is often the one with masked lanes), as the Step tab does, N times after a warm-up. Prints
per example: the end-to-end median and worst in milliseconds, the time inside the run process, the
steps recorded and the size of the answer. The target: the gallery's matmul within 1 s.
"""
import argparse
import json
import statistics
import time
import urllib.request

from benchmarks.server import Server


def post(url, body):
    request = urllib.request.Request(url, data=json.dumps(body).encode(), headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=120) as response:
        return response.read()


def get(url):
    with urllib.request.urlopen(url, timeout=30) as response:
        return json.load(response)


def measure(base, spec, pid, runs):
    spec = {**spec, "options": {**spec["options"], "step_pid": pid}}
    rows = []
    for i in range(runs + 1):  # one warm-up
        start = time.perf_counter()
        body = post(f"{base}/api/run", {"spec": spec})
        elapsed = (time.perf_counter() - start) * 1e3
        result = json.loads(body)
        if i:
            rows.append((elapsed, result["run_ms"], len(body)))
    steps = result["steps"]
    return rows, (len(steps["steps"]) if steps else 0), result["status"], steps["grid"] if steps else None


def last_program(base, spec):
    """The launch's grid, from a step of program 0, and its last program."""
    result = json.loads(post(f"{base}/api/run", {"spec": {**spec, "options": {**spec["options"], "step_pid": [0]}}}))
    grid = result["steps"]["grid"] if result["steps"] else [1, 1, 1]
    return [g - 1 for g in grid]


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    with Server() as server:
        device = server.health()["device"]
        print(f"step-through of one program, POST /api/run with options.step_pid, on {device['name']} "
              f"(triton {device['triton']}), {args.runs} runs after a warm-up, default settings, ms")
        print(f"{'example':16}{'program':>12}{'median':>9}{'worst':>9}{'in run':>9}{'steps':>7}{'KB':>7}  status")
        for example in get(f"{server.url}/api/examples"):
            spec = get(f"{server.url}/api/examples/{example['name']}")["spec"]
            for pid in ([0, 0, 0], last_program(server.url, spec)):
                rows, steps, status, _ = measure(server.url, spec, pid, args.runs)
                e2e = [r[0] for r in rows]
                print(f"{example['name']:16}{str(tuple(pid)):>12}{statistics.median(e2e):9.0f}{max(e2e):9.0f}"
                      f"{statistics.median(r[1] for r in rows):9.0f}{steps:7}{rows[-1][2] / 1024:7.1f}  {status}")


if __name__ == "__main__":
    main()
