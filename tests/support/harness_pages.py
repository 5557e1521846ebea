"""Headless chromium and a static server for the front-end tests that need no app: the page's
modules are served from static/ beside the small harness pages here."""
import functools
import glob
import http.server
import os
import threading
from contextlib import contextmanager

from tests.support import ROOT
from tests.support.browser import CHROMIUM, CHROMIUM_ARGS, predicates_as_functions

PAGES = {"/harness.html": "diagram_harness.html", "/model.html": "model_harness.html"}


def plotly_js_path():
    """The vendored plotly.js, whatever its version."""
    [path] = glob.glob(os.path.join(ROOT, "static", "vendor", "plotly-*.min.js"))
    return path


class HarnessHandler(http.server.SimpleHTTPRequestHandler):
    """Serves /static from the project, the harness pages and the vendored plotly.js as /plotly.min.js."""

    def translate_path(self, path):
        path = path.split("?", 1)[0]
        if path == "/plotly.min.js":
            return plotly_js_path()
        if path in PAGES:
            return os.path.join(ROOT, "tests", "support", PAGES[path])
        if path.startswith("/static/"):
            return os.path.join(ROOT, path.lstrip("/"))
        return os.path.join(ROOT, "missing")

    def log_message(self, *args):
        pass


@contextmanager
def static_server():
    """Yields the base URL of a server of the harness pages and static/."""
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(HarnessHandler, directory=ROOT))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()


@contextmanager
def harness_page(url):
    """A headless chromium page on `url` once it sets window.harnessReady; yields (page, script errors)."""
    from playwright.sync_api import sync_playwright
    predicates_as_functions()  # a page of the app opened from this browser allows no eval either
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        page = browser.new_page(viewport={"width": 1440, "height": 900})
        errors = []
        page.on("pageerror", lambda error: errors.append(str(error)))
        page.on("console", lambda message: message.type in ("error", "assert") and errors.append(message.text))
        page.goto(url)
        page.wait_for_function("window.harnessReady === true")
        yield page, errors
        browser.close()
