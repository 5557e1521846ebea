"""Embeds, in a 700x600 iframe of another site's lesson page: the embed fits its frame (no scroll,
Run and "Open in Playground" in view), runs there, shows only the panes asked for (?panes=), can be
read-only (?readonly=1), works on /examples/<name>, offers no control it cannot honour (Step
through), and the Share popover gives the iframe to copy."""
import html

import pytest

from tests.support.browser import page_without_errors
from tests.test_browser import open_playground, share

pytestmark = pytest.mark.browser
SHOTS = "/tmp/shots"


@pytest.fixture
def page(browser):
    with page_without_errors(browser, width=900, height=760, console=False) as page:
        yield page


def lesson_page(page, live_server, iframe_html):
    """Opens a page of another site that holds `iframe_html`; returns the embed's frame once it is ready.
    The lesson's site is `localhost`, the playground's `127.0.0.1`: cross-site, as on a course's page.
    (The lesson is written into a page of the `localhost` origin: chromium lets a page it fetched from
    loopback frame a loopback address, not one a test made up.)"""
    page.goto(live_server.replace("127.0.0.1", "localhost") + "/healthz")
    page.set_content(f"<!doctype html><body style='margin:20px;background:#fff'><h1>Week 3: masks</h1>{iframe_html}</body>")
    page.wait_for_function("document.querySelector('iframe').contentWindow !== null")
    page.wait_for_timeout(200)
    frame = page.frames[1]
    frame.wait_for_function("window.playground !== undefined")
    return frame


def iframe(src):
    return f'<iframe src="{src}" width="700" height="600" style="border:1px solid #999"></iframe>'


def in_frame(page, frame, selector):
    """Whether `selector` of the embed lies wholly inside the iframe's box on the host page."""
    box, outer = frame.locator(selector).bounding_box(), page.locator("iframe").bounding_box()
    return (box is not None and outer["x"] <= box["x"] and box["x"] + box["width"] <= outer["x"] + outer["width"]
            and outer["y"] <= box["y"] and box["y"] + box["height"] <= outer["y"] + outer["height"])


def run_in(frame):
    frame.click("#run-button")
    frame.wait_for_function("['ok', 'mismatch', 'error'].includes(document.querySelector('#status-line').dataset.state)",
                            timeout=60000)
    return frame.get_attribute("#status-line", "data-state")


def test_an_example_embed_fits_its_700x600_frame_and_runs(page, live_server):
    frame = lesson_page(page, live_server, iframe(f"{live_server}/examples/masked_tail?embed=1"))
    page.wait_for_timeout(300)
    assert frame.evaluate("window.scrollY") == 0
    assert frame.evaluate("document.documentElement.scrollHeight") <= 600
    for control in ("#run-button", "#open-full", ".cm-editor", "[data-tab=results]"):
        assert in_frame(page, frame, control), control
    line, outer = frame.locator(".cm-line:has-text('@triton.jit')").bounding_box(), page.locator("iframe").bounding_box()
    assert outer["y"] <= line["y"] <= outer["y"] + 300  # the kernel in view, not the prose above it
    assert frame.get_attribute("#open-full", "href") == "/examples/masked_tail"

    assert run_in(frame) == "ok"
    frame.click("[data-tab=diagram]")
    frame.wait_for_selector(".diagram-grid-plot .nsewdrag")
    assert frame.evaluate("window.scrollY") == 0
    # No button that leads nowhere: an embed has no Step tab to step through a program in.
    assert frame.locator('.diagram-controls button:has-text("Step through")').count() == 0
    assert frame.locator(".diagram-controls button").all_inner_texts()[:3] == ["‹ Prev", "▶ Play", "Next ›"]
    page.screenshot(path=f"{SHOTS}/embed-700x600-diagram.png")


def test_panes_diagram_shows_the_diagram_alone_and_readonly_keeps_the_source(page, live_server):
    frame = lesson_page(page, live_server, iframe(f"{live_server}/examples/masked_tail?embed=1&panes=diagram"))
    assert frame.eval_on_selector_all("[data-tab]", "tabs => tabs.filter(t => !t.hidden).map(t => t.dataset.tab)") == ["diagram"]
    assert frame.locator(".cm-editor").is_hidden()
    assert frame.get_attribute("[data-tab].active", "data-tab") == "diagram"
    assert run_in(frame) == "ok"
    frame.wait_for_selector(".diagram-grid-plot .nsewdrag")
    assert in_frame(page, frame, ".diagram-grid-plot")
    page.screenshot(path=f"{SHOTS}/embed-panes-diagram.png")

    frame = lesson_page(page, live_server, iframe(f"{live_server}/examples/masked_tail?embed=1&readonly=1&panes=editor,results"))
    source = frame.evaluate("window.playground.getSpec().source")
    frame.click(".cm-content")
    frame.locator(".cm-content").press("End")
    frame.locator(".cm-content").type("x = 1")
    assert frame.evaluate("window.playground.getSpec().source") == source
    assert frame.eval_on_selector_all("[data-tab]", "tabs => tabs.filter(t => !t.hidden).map(t => t.dataset.tab)") == ["results"]
    assert run_in(frame) == "ok"  # read-only, not inert: it still runs


def test_an_unknown_pane_is_a_400_naming_it(page, live_server):
    response = page.request.get(f"{live_server}/examples/masked_tail?embed=1&panes=diagram,timings")
    assert response.status == 400
    assert "'timings' is not one of them" in html.unescape(response.text())


def test_the_share_popover_gives_an_iframe_that_embeds_the_link(page, live_server):
    page.set_viewport_size({"width": 1280, "height": 720})
    open_playground(page, live_server + "/examples/masked_tail")
    url = share(page)
    snippet = page.input_value("#share-embed")
    assert snippet.startswith(f'<iframe src="{url}?embed=1" width="700" height="600"')
    assert page.locator("#share-embed").is_visible()
    page.screenshot(path=f"{SHOTS}/share-embed-snippet.png")

    frame = lesson_page(page, live_server, snippet)
    assert frame.evaluate("location.pathname") == url[url.index("/s/"):]
    assert in_frame(page, frame, "#run-button") and in_frame(page, frame, "#open-full")
    assert frame.evaluate("document.documentElement.scrollHeight") <= 600
