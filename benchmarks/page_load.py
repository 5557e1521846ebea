"""How soon the page is usable in a cold browser over loopback: a new chromium each time (nothing
cached), `/examples/vector_add` from the real server (`python -m app.serve`, default settings),
timed from the navigation's start until the editor shows the kernel and the page's script is up
(`window.playground`), and until plotly.js, which the diagram draws with, has arrived too.

    python -m benchmarks.page_load [--rounds 5]

The first page is asked the moment the server answers /healthz (its workers still starting); the
rest of the rounds after the workers are ready."""
import argparse
import statistics
import time

from benchmarks.server import Server
from tests.support.browser import CHROMIUM, CHROMIUM_ARGS

READY = "() => window.playground && document.querySelector('.cm-line') ? performance.now() : false"
PLOTTING = "() => window.Plotly ? performance.now() : false"
BYTES = """() => performance.getEntriesByType('navigation').concat(performance.getEntriesByType('resource'))
                 .reduce((sum, entry) => sum + entry.transferSize, 0)"""


def cold_load(playwright, url):
    """(ms to a usable editor, ms to plotly.js, bytes over the wire) of one page in a new browser."""
    browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
    try:
        page = browser.new_page(viewport={"width": 1280, "height": 720})
        page.goto(url, wait_until="commit")
        editor_ms = page.wait_for_function(READY, timeout=30000).json_value()
        plotly_ms = page.wait_for_function(PLOTTING, timeout=30000).json_value()
        return editor_ms, plotly_ms, page.evaluate(BYTES)
    finally:
        browser.close()


def wait_ready(server, timeout_s=180):
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        workers = server.health().get("workers") or []
        if workers and all(w.get("state") == "ready" for w in workers):
            return
        time.sleep(0.3)


def main():
    from playwright.sync_api import sync_playwright
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rounds", type=int, default=5, help="cold loads after the workers are ready")
    args = parser.parse_args()
    with Server() as server, sync_playwright() as playwright:
        url = server.url + "/examples/vector_add"
        first = cold_load(playwright, url)
        wait_ready(server)
        rounds = [cold_load(playwright, url) for _ in range(args.rounds)]
    print("cold browser, loopback: ms from navigation to a usable editor / to plotly.js loaded, kB transferred")
    print(f"first page after the server started: {first[0]:.0f} / {first[1]:.0f} ms, {first[2] / 1024:.0f} kB")
    editor, plotting = sorted(r[0] for r in rounds), sorted(r[1] for r in rounds)
    print(f"{args.rounds} pages after: editor median {statistics.median(editor):.0f} ms (worst {editor[-1]:.0f}), "
          f"plotly.js median {statistics.median(plotting):.0f} ms (worst {plotting[-1]:.0f}), "
          f"{rounds[-1][2] / 1024:.0f} kB")


if __name__ == "__main__":
    main()
