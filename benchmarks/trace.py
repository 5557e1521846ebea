"""What seeing the grid costs: tracing overhead, trace size, and the diagram's render time.

    python -m benchmarks.trace [--rounds 5] [--n 1048576]
    python -m benchmarks.trace --result case3-gpu.json   # draw a saved result's trace only

Vector add (BLOCK 1024) in Triton's interpreter, interleaved rounds in one process: a plain launch,
a launch with only the bounds sanitizer, and a fully traced launch. Then the traced result is drawn
by the page's diagram module in headless Chromium (skipped without /usr/bin/chromium). With
--result, only the drawing, of a result saved elsewhere (benchmarks.gpu_trace --out writes the GPU
tracer's 2^24-element launch).
"""
import argparse
import functools
import http.server
import json
import os
import statistics
import tempfile
import threading
import time

import torch
import triton

from app.gallery import load_example
from sandbox.launch.kernel import load_module, write_source
from sandbox.trace.interpreter import Tracer
from sandbox.trace.patches import interpreter_hygiene

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CHROMIUM = "/usr/bin/chromium"
SOURCE = load_example("vector_add")["spec"]["source"]  # the gallery's vector add


def launcher(n, block):
    path = os.path.join(tempfile.mkdtemp(), "kernel.py")
    write_source(SOURCE, path)
    kernel = load_module(path, True).add_kernel
    tensors = {"x": torch.randn(n), "y": torch.randn(n), "out": torch.empty(n)}
    grid = (triton.cdiv(n, block), 1, 1)

    def launch(mode):
        args = dict(x_ptr=tensors["x"], y_ptr=tensors["y"], out_ptr=tensors["out"], n=n, BLOCK_SIZE=block)
        start = time.perf_counter()
        if mode == "plain":
            with interpreter_hygiene():
                kernel[grid](**args)
            trace = None
        else:
            tracer = Tracer(tensors, path, record=(mode == "traced"))
            with tracer:
                kernel[grid](**args)
            trace = tracer.result(grid) if mode == "traced" else None
        return (time.perf_counter() - start) * 1e3, trace

    return launch


def render_in_chromium(trace):
    from playwright.sync_api import sync_playwright

    from tests.support.harness_pages import plotly_js_path
    plotly_js = plotly_js_path()

    class Handler(http.server.SimpleHTTPRequestHandler):
        def translate_path(self, path):
            return plotly_js if path.startswith("/plotly.min.js") else super().translate_path(path)

        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(Handler, directory=ROOT))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=CHROMIUM, args=[
                "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                "--disable-component-update", "--disable-sync"])
            page = browser.new_page(viewport={"width": 1440, "height": 900})
            page.goto(f"http://127.0.0.1:{server.server_port}/tests/support/diagram_harness.html")
            page.wait_for_function("window.harnessReady === true")
            times = [page.evaluate("(t) => window.renderTrace(t)", trace) for _ in range(3)]
            browser.close()
        return times
    finally:
        server.shutdown()


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--n", type=int, default=1 << 20)
    parser.add_argument("--block", type=int, default=1024)
    parser.add_argument("--result", help="a saved result (JSON): time the drawing of its trace only")
    args = parser.parse_args()
    if args.result:
        with open(args.result) as f:
            trace = json.load(f)["trace"]
        renders = render_in_chromium(trace)
        print(f"{trace['programs_total']} programs ({trace['programs_traced']} traced, {trace['tracer']} tracer), "
              f"trace JSON {len(json.dumps(trace)) / 1e6:.2f} MB: diagram render in Chromium, median "
              f"{statistics.median(renders):.0f} ms, min {min(renders):.0f} ms ({len(renders)} renders)")
        return
    launch = launcher(args.n, args.block)
    launch("traced")  # warm-up: the interpreter rewrites the kernel once
    times = {"plain": [], "sanitizer": [], "traced": []}
    trace = None
    for _ in range(args.rounds):
        for mode in times:
            ms, result = launch(mode)
            times[mode].append(ms)
            trace = result or trace
    plain = statistics.median(times["plain"])
    print(f"vector add, n={args.n}, BLOCK={args.block}: {args.n // args.block} programs, "
          f"{args.rounds} interleaved rounds, Triton interpreter ({triton.__version__})")
    print(f"{'':34}{'median ms':>10}{'min ms':>10}{'overhead':>10}")
    for mode, label in (("plain", "plain interpreter launch"), ("sanitizer", "bounds sanitizer only"),
                        ("traced", "full trace (sanitizer + record)")):
        median = statistics.median(times[mode])
        print(f"{label:34}{median:10.0f}{min(times[mode]):10.0f}{(median / plain - 1) * 100:9.0f}%")
    print(f"{'trace JSON size':34}{len(json.dumps(trace)) / 1e3:10.0f} KB")
    if os.path.exists(CHROMIUM):
        renders = render_in_chromium(trace)
        print(f"{'diagram render in Chromium':34}{statistics.median(renders):10.0f}{min(renders):10.0f}")


if __name__ == "__main__":
    main()
