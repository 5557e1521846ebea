"""What a first visit costs: static files go gzip-compressed, the vendored libraries (versioned file
names) are cached for a year as immutable while the page's own files are revalidated, and the editor
never waits for plotly.js (4.8 MB): it is fetched for the first figure, not with the page; held back,
the page still edits and runs, and the diagram draws once it arrives. The time to a usable editor on a cold browser: benchmarks/page_load.py."""
import glob
import gzip
import os

import pytest

from tests.support import ROOT
from tests.support.browser import page_without_errors
from tests.test_browser import open_diagram, run_and_wait

SHOTS = "/tmp/shots"
[PLOTLY] = [os.path.basename(p) for p in glob.glob(os.path.join(ROOT, "static", "vendor", "plotly-*.min.js"))]
[CODEMIRROR] = [os.path.basename(p) for p in glob.glob(os.path.join(ROOT, "static", "vendor", "codemirror-*.bundle.js"))]


def static_file(name):
    with open(os.path.join(ROOT, "static", name), "rb") as f:
        return f.read()


@pytest.mark.parametrize("name", [f"vendor/{PLOTLY}", f"vendor/{CODEMIRROR}", "js/main.js", "js/run/trace-model.js",
                                  "css/playground.css"])
def test_static_files_go_gzipped_to_a_browser_that_accepts_it(client, name):
    response = client.get(f"/static/{name}", headers={"Accept-Encoding": "gzip, deflate, br"})
    assert response.status_code == 200
    assert response.headers["Content-Encoding"] == "gzip"
    assert "Accept-Encoding" in response.headers["Vary"]
    assert gzip.decompress(response.data) == static_file(name)
    assert len(response.data) < len(static_file(name)) / 2

    plain = client.get(f"/static/{name}")  # a client that asks for no encoding gets the file as it is
    assert "Content-Encoding" not in plain.headers and plain.data == static_file(name)


def test_versioned_vendor_files_are_immutable_and_the_pages_own_are_revalidated(client):
    vendor = client.get(f"/static/vendor/{PLOTLY}", headers={"Accept-Encoding": "gzip"})
    assert vendor.headers["Cache-Control"] == "public, max-age=31536000, immutable"
    assert "Expires" not in vendor.headers
    own = client.get("/static/js/main.js", headers={"Accept-Encoding": "gzip"})
    assert own.headers["Cache-Control"] == "no-cache"
    # Revalidating the compressed copy by its (weak) tag: nothing is sent again.
    again = client.get("/static/js/main.js", headers={"Accept-Encoding": "gzip", "If-None-Match": own.headers["ETag"]})
    assert again.status_code == 304 and again.data == b""
    in_a_folder = client.get("/static/js/run/trace-model.js", headers={"Accept-Encoding": "gzip"})
    assert in_a_folder.headers["Cache-Control"] == "no-cache" and in_a_folder.headers["Content-Encoding"] == "gzip"


def test_the_plotly_python_package_is_no_longer_needed():
    with open(os.path.join(ROOT, "requirements.txt")) as f:
        assert not any(line.lower().startswith("plotly") for line in f)
    with open(os.path.join(ROOT, "templates", "editor.html")) as f:
        assert f"vendor/{PLOTLY}" in f.read()


@pytest.mark.browser
def test_the_page_loads_without_plotly_and_fetches_it_for_the_first_figure(browser, live_server):
    asked = []
    with page_without_errors(browser, width=1280, height=720) as page:
        page.on("request", lambda request: PLOTLY in request.url and asked.append(request.url))
        page.goto(live_server + "/examples/vector_add", wait_until="load")
        page.wait_for_function("window.playground !== undefined")
        page.wait_for_timeout(500)
        assert asked == [] and page.evaluate("typeof window.Plotly") == "undefined"
        assert run_and_wait(page) == "ok"   # a run draws nothing: Results is text
        assert asked == []
        open_diagram(page)   # the first figure
        assert len(asked) == 1
        page.click("[data-tab=timings]")
        page.click("[data-tab=diagram]")
        assert len(asked) == 1   # fetched once


@pytest.mark.browser
def test_the_editor_is_usable_and_runs_while_plotly_is_still_on_its_way(browser, live_server):
    held = []
    with page_without_errors(browser, width=1280, height=720) as page:
        page.route(f"**/{PLOTLY}", lambda route: held.append(route))
        page.goto(live_server + "/examples/vector_add")
        page.wait_for_function("window.playground !== undefined")
        page.wait_for_selector(".cm-line:has-text('@triton.jit')")
        assert run_and_wait(page) == "ok"
        assert page.locator('#results [data-output="out"] .badge').inner_text()
        page.click("[data-tab=diagram]")
        page.wait_for_timeout(300)
        assert held and page.evaluate("typeof window.Plotly") == "undefined"
        assert page.locator(".diagram-grid-plot").count() == 0  # waits for plotly, drawing nothing half-made
        for route in held:
            route.continue_()
        open_diagram(page)
        page.screenshot(path=f"{SHOTS}/weight-diagram-after-plotly.png")
