"""How long the page takes to draw a timeline recorded on a GPU, in headless Chromium.

    python -m benchmarks.timeline --save DIR        # on a GPU host: records the timelines
    python -m benchmarks.timeline_draw DIR [--draws 10] [tests/data/timeline/layer_norm.json ...]

Starts the real server (`python -m app.serve`, default settings), opens the page in Debian's
Chromium (headless), and for each recorded timeline (spec, device, timings, timeline: the layout of
tests/data/timeline) hands the page the result as a run's arrives (the page's hub) with the Timings
tab shown, `--draws` times, each after a fresh load of the page. A draw is timed from the result's
arrival to the SM lanes drawn (`.timeline-lanes[data-drawn]`) and the next frame painted. Prints
median and p95 ms per timeline, with its programs and spans.
"""
import argparse
import json
import os
import statistics
import sys

from benchmarks.latency import percentile
from benchmarks.server import Server
from sandbox import result as results

CHROMIUM = "/usr/bin/chromium"
ARGS = ["--headless", "--no-sandbox", "--disable-gpu"]
DRAW = """async (result) => {
    const hub = await import('/static/js/shared/hub.js');
    const start = performance.now();
    hub.emit('run-result', {run_id: 'recorded', result});
    while (!document.querySelector('.timeline-lanes[data-drawn]')) {
        await new Promise((resolve) => setTimeout(resolve, 1));
    }
    await new Promise((resolve) => requestAnimationFrame(() => requestAnimationFrame(resolve)));
    return performance.now() - start; }"""


def as_result(made):
    """A run's whole result around a recorded timeline part."""
    return {**results.new(made["device"]), "run_id": "recorded", "timings": made["timings"], "timeline": made["timeline"]}


def draw_ms(page, url, made):
    page.goto(url)
    page.wait_for_function("() => window.playground !== undefined")
    page.evaluate("(spec) => window.playground.setSpec(spec)", made["spec"])
    page.click("[data-tab=timings]")
    return page.evaluate(DRAW, as_result(made))


def main():
    from playwright.sync_api import sync_playwright
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("paths", nargs="+", help="recorded timelines (.json), or directories of them")
    parser.add_argument("--draws", type=int, default=10)
    args = parser.parse_args()
    files = sorted(os.path.join(p, name) for p in args.paths if os.path.isdir(p) for name in os.listdir(p)
                   if name.endswith(".json")) + [p for p in args.paths if not os.path.isdir(p)]
    with open(os.devnull, "wb") as log, Server(log) as server, sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        page = browser.new_page(viewport={"width": 1280, "height": 900})
        print("| timeline | programs drawn (of) | spans | draw ms, median / p95 |")
        print("|---|---|---|---|")
        for path in files:
            with open(path) as f:
                made = json.load(f)
            timeline = made["timeline"]
            times = [draw_ms(page, server.url + "/", made) for _ in range(args.draws)]
            spans = sum(len(warp) for program in timeline["programs"] for warp in program["warps"])
            print(f"| {os.path.basename(path)} | {len(timeline['bars']):,} ({timeline['programs_total']:,}) | {spans:,} | "
                  f"{statistics.median(times):.0f} / {percentile(times, 0.95):.0f} |", flush=True)
        browser.close()


if __name__ == "__main__":
    sys.exit(main())
