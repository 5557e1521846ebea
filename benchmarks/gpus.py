"""Every GPU of a host at work: N people (Socket.IO clients, each its own owner) press Run at once on a
kernel whose run keeps a GPU busy ~2 s, against the real server (`python -m app.serve`), once with one
worker per GPU (WORKERS=0, the default) and once on one GPU (CUDA_VISIBLE_DEVICES=0).

    python -m benchmarks.gpus                  # N = 4, 3 rounds after a warm-up round
    python -m benchmarks.gpus --people 4 8 --rounds 5

Per setup and N: the median over the rounds of the wall time from the presses to the last result,
and the GPU indices the results name (each result's `device.index`). The gallery's warm-up is off
(SHARED_KERNELS=0) in both setups, so that only the people's runs use the GPUs.
"""
import argparse
import collections
import json
import os
import statistics
import threading
import time
import urllib.request

from benchmarks.client import Tab
from benchmarks.server import Server

# The gallery's vector add, after ~2 s of bf16 matrix products on the run's GPU (1,200 of 8192^3 at
# ~700 TFLOP/s on an H200): the run's own work, in its own process, as a person's heavy kernel is.
BUSY = """
import torch
_a = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16)
for _ in range({products}):
    _b = _a @ _a
torch.cuda.synchronize()
"""
CHECK_ONLY = {"check": True, "bench": False, "trace": False, "ir": False}
SETUPS = {"one worker per GPU (WORKERS=0)": {"WORKERS": 0},
          "one GPU (CUDA_VISIBLE_DEVICES=0)": {"CUDA_VISIBLE_DEVICES": "0"}}


def busy_spec(url, products):
    with urllib.request.urlopen(f"{url}/api/examples/vector_add") as r:
        spec = json.load(r)["spec"]
    spec["source"] += BUSY.format(products=products)
    spec["options"].update(CHECK_ONLY)
    return spec


def press_at_once(tabs, spec):
    """Every tab presses Run at the same moment: (seconds to the last result, the results)."""
    results, go = [None] * len(tabs), threading.Barrier(len(tabs) + 1)

    def press(i):
        go.wait()
        results[i] = tabs[i].run(spec)[1]

    threads = [threading.Thread(target=press, args=(i,)) for i in range(len(tabs))]
    for thread in threads:
        thread.start()
    go.wait()
    start = time.perf_counter()
    for thread in threads:
        thread.join()
    return time.perf_counter() - start, results


def measure(settings, people, rounds, products):
    """{N: (median wall s, every wall s, Counter of the GPU indices the results named, errors)}."""
    rows = {}
    with Server(SHARED_KERNELS=0, **settings) as server:
        spec = busy_spec(server.url, products)
        workers = server.health()["workers"]
        for n in people:
            tabs = [Tab(server.url) for _ in range(n)]
            press_at_once(tabs, spec)  # the warm-up round: every worker compiles the kernel once
            walls, gpus, errors = [], collections.Counter(), []
            for _ in range(rounds):
                wall, results = press_at_once(tabs, spec)
                walls.append(wall)
                for result in results:
                    gpus[result["device"]["index"]] += 1
                    if result["status"] != "ok":
                        errors.append(result["error"] and result["error"]["message"])
            for tab in tabs:
                tab.close()
            rows[n] = (statistics.median(walls), walls, gpus, errors)
    return len(workers), rows


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--people", type=int, nargs="+", default=[4])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--products", type=int, default=1200, help="8192^3 bf16 matrix products per run")
    args = parser.parse_args()
    import torch  # this process only names the machine; the server's web process never imports torch
    machine = f"{torch.cuda.device_count()}x {torch.cuda.get_device_name(0)}, {os.cpu_count()} cores"
    print(f"{machine}; each run ~{args.products} bf16 8192^3 products, check only; median of {args.rounds} rounds")
    print("setup | workers | N | median wall s | walls s | results by GPU index | errors")
    for name, settings in SETUPS.items():
        workers, rows = measure(settings, args.people, args.rounds, args.products)
        for n, (median, walls, gpus, errors) in rows.items():
            print(f"{name} | {workers} | {n} | {median:.2f} | {', '.join(f'{w:.2f}' for w in walls)} | "
                  f"{dict(sorted(gpus.items(), key=str))} | {len(errors)} {errors[:2]}", flush=True)


if __name__ == "__main__":
    main()
