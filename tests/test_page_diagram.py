"""The Diagram tab says true things about the selected program, in a real browser at 1280x720
(traces written by hand, tests/support/results_by_hand.py): its counter gives the program id, a program whose
elements would be a sliver of a tall tensor is zoomed into view, and plotly's mode bar offers
nothing that sends data off-site. Then through the real server and one worker tracing at most
TRACE_MAX_PROGRAMS programs: an out-of-bounds run opens the diagram on the offending program with
its stray lanes drawn, and a program the sample left out is fetched with a click."""
import json

import pytest

from tests.support.results_by_hand import row_sum_2d_trace, vector_add_trace
from tests.support.harness_pages import harness_page, static_server
from tests.support.apps import running_app, served
from tests.support.browser import page_without_errors, set_source
from tests.support.kernels import VECTOR_ADD

pytestmark = pytest.mark.browser
SHOTS = "/tmp/shots"


@pytest.fixture(scope="module")
def harness():
    with static_server() as base, harness_page(base + "/harness.html") as (page, errors):
        page.set_viewport_size({"width": 1280, "height": 720})
        yield page, errors


@pytest.fixture
def page(harness):
    page, errors = harness
    errors.clear()
    yield page
    assert not errors, errors


def render(page, trace):
    page.evaluate("(trace) => window.renderTrace(trace, {})", trace)


def select(page, pid):
    page.evaluate("(pid) => window.selectProgram(pid)", pid)


def shown_rows(page, tensor):
    """[first row, row count] of the tensor's drawing."""
    return json.loads(page.locator(f'.diagram-tensor[data-tensor="{tensor}"]').get_attribute("data-rows"))


def counter(page):
    return page.inner_text(".diagram-pid-label")


def test_the_counter_gives_the_program_id_not_a_position(page):
    render(page, vector_add_trace(98432, 1024))
    assert counter(page) == "97 programs"
    select(page, [2, 0, 0])
    assert counter(page) == "pid 2 of 97 programs"  # was "3 / 97"
    select(page, [0, 0, 0])
    assert counter(page) == "pid 0 of 97 programs"


def test_the_counter_of_a_2d_grid_gives_both_axes(page):
    render(page, row_sum_2d_trace(8, 40, 2, 16))
    select(page, [1, 2, 0])
    assert counter(page) == "pid (1, 2) of 12 programs"


def test_a_program_that_would_be_a_sliver_is_zoomed_into_view(page):
    render(page, vector_add_trace(98432, 1024))
    assert shown_rows(page, "out") == [0, 97]  # 97 rows of 1024: about 4 px each
    select(page, [2, 0, 0])
    first, count = shown_rows(page, "out")
    assert first <= 2 < first + count and count <= 12
    outline = page.locator('.diagram-tensor[data-tensor="out"] .diagram-plot').bounding_box()
    assert outline["height"] / count >= 12  # its row is now a band one can see and point at
    page.locator('.diagram-tensor[data-tensor="out"]').scroll_into_view_if_needed()
    page.screenshot(path=f"{SHOTS}/diagram-zoomed-program-2.png")

    select(page, [96, 0, 0])  # the last program, its masked lanes past the end included
    first, count = shown_rows(page, "out")
    assert first + count == 97
    page.get_by_role("button", name="Show all").click()
    assert shown_rows(page, "out") == [0, 97]


def test_a_program_that_already_shows_is_not_zoomed(page):
    render(page, vector_add_trace(10, 4))
    select(page, [2, 0, 0])
    assert shown_rows(page, "out") == [0, 3]


def test_the_mode_bar_of_a_big_diagram_sends_nothing_off_site(page):
    render(page, vector_add_trace(98432, 1024))
    plot = page.locator('.diagram-tensor[data-tensor="out"] .diagram-plot')
    plot.scroll_into_view_if_needed()
    plot.hover()
    page.wait_for_selector('.diagram-tensor[data-tensor="out"] .modebar-btn')
    titles = page.eval_on_selector_all('.diagram-tensor[data-tensor="out"] .modebar-btn', "bs => bs.map(b => b.dataset.title)")
    assert titles and "Zoom" in titles
    assert not [t for t in titles if any(word in t.lower() for word in ("share", "cloud", "chart studio", "edit in"))], titles
    assert page.locator(".modebar a[href*='plot.ly'], .modebar a[href*='plotly.com']").count() == 0


# ---- through the real server ------------------------------------------------------------------

TRACE_MAX_PROGRAMS = 16  # of the default vector add's 97 programs
RUN_TIMEOUT_MS = 60_000


@pytest.fixture(scope="module")
def app(tmp_path_factory):
    with running_app(tmp_path_factory.mktemp("db"), WORKERS=1, TRACE_MAX_PROGRAMS=TRACE_MAX_PROGRAMS) as app:
        yield app


@pytest.fixture(scope="module")
def server(app):
    with served(app) as url:
        yield url


@pytest.fixture(scope="module")
def browser(harness):
    """The harness's chromium: one Playwright per module (a second would find the first's event loop)."""
    return harness[0].context.browser


@pytest.fixture
def playground(browser, server):
    with page_without_errors(browser, width=1280, height=720) as page:
        page.goto(server + "/")
        page.wait_for_function("window.playground !== undefined")
        yield page


def run(page):
    page.click("#run-button")
    page.wait_for_function("['ok', 'mismatch', 'error'].includes(document.querySelector('#status-line').dataset.state)",
                           timeout=RUN_TIMEOUT_MS)
    return page.get_attribute("#status-line", "data-state")


def open_diagram(page):
    page.click("[data-tab=diagram]")
    page.wait_for_selector(".diagram-grid-plot .nsewdrag")


def test_an_out_of_bounds_run_opens_the_diagram_on_its_program_with_the_stray_lanes_drawn(playground):
    page = playground
    set_source(page, VECTOR_ADD.replace("x = tl.load(x_ptr + offs, mask=mask)", "x = tl.load(x_ptr + offs)"))
    assert run(page) == "error"
    assert page.text_content("#error-card .type") == "OutOfBounds"
    open_diagram(page)
    assert page.get_attribute("#diagram", "data-selected-pid") == "96,0,0"  # without clicking the card's program
    x = page.locator('.diagram-tensor[data-tensor="x"]')
    first, count = json.loads(x.get_attribute("data-rows"))
    assert first <= 96 < first + count
    # x has 98,432 elements: program 96's lanes 128..1023 lie past its end, in the error's colour.
    assert json.loads(x.get_attribute("data-stray-cells")) == [[(96 - first) * 1024 + 128, 896]]
    assert x.locator(".diagram-stray-note").inner_text() == "Out of bounds: 896 lanes past the end of x (offsets 98432..99327)."
    assert page.locator(".diagram-legend-stray").inner_text() == "out of bounds (an active lane outside its tensor)"
    assert "out of bounds: 896 lanes past the end of x" in page.inner_text(".diagram-caption")

    plot = x.locator(".diagram-plot .nsewdrag")
    plot.scroll_into_view_if_needed()
    box = plot.bounding_box()
    page.mouse.move(box["x"] + box["width"] * (136.5 / 1024), box["y"] + box["height"] * (96 - first + 0.5) / count)
    page.wait_for_selector(".diagram-tooltip:not([hidden])")
    head, *lines = page.inner_text(".diagram-tooltip").splitlines()
    element = int(head.removeprefix("x[").removesuffix("]"))
    assert abs(element - 98440) <= 1  # the element under the pointer, give or take a pixel
    assert lines == [f"{element - 98432} past the end of x (98,432 elements)",
                     "program (96, 0, 0) loads it on line 10: out of bounds, the run's error"]
    page.screenshot(path=f"{SHOTS}/page-out-of-bounds.png")


def test_clicking_a_program_the_sample_left_out_fetches_it_from_the_run_that_made_the_trace(playground):
    page = playground
    assert run(page) == "ok"
    open_diagram(page)
    assert "Showing 14 of 97 programs (the first 5, every 20th" in page.inner_text(".diagram-summary")
    # The first program the sample left out: an untouched cell of the program grid (16 programs a row, 7 rows).
    pid = page.evaluate("""() => document.querySelector('.diagram-grid-plot').data[0].z.flatMap((row) => Array.from(row))
                               .findIndex((value, cell) => value === 0 && cell < 97)""")
    assert pid > 0
    ran = page.evaluate("window.playground.getSpec().source")
    set_source(page, ran + "# an edit after the run\n")
    asked = []
    page.on("request", lambda request: request.url.endswith("/api/run") and asked.append(request.post_data_json["spec"]))
    area = page.locator(".diagram-grid-plot .nsewdrag").bounding_box()
    page.mouse.click(area["x"] + area["width"] * (pid % 16 + 0.5) / 16, area["y"] + area["height"] * (pid // 16 + 0.5) / 7)
    page.wait_for_function(f"document.querySelector('#diagram').dataset.selectedPid === '{pid},0,0'", timeout=RUN_TIMEOUT_MS)
    spec, = asked
    assert spec["source"] == ran  # the run's own kernel, not the edited one
    assert {k: spec["options"][k] for k in ("trace_pid", "check", "bench", "ir", "trace")} == {
        "trace_pid": [pid, 0, 0], "check": False, "bench": False, "ir": False, "trace": True}
    caption = page.inner_text(".diagram-caption")
    start = pid * 1024
    assert caption.startswith(f"program ({pid}, 0, 0) loads x[{start}..{start + 1023}], y[{start}..{start + 1023}], "
                              f"stores out[{start}..{start + 1023}]")
    assert "Showing 15 of 97 programs (the first 5, every 20th in between and the last 5, and 1 program fetched on request)" in page.inner_text(".diagram-summary")
    assert json.loads(page.locator('.diagram-tensor[data-tensor="out"]').get_attribute("data-highlighted-cells"))
    page.screenshot(path=f"{SHOTS}/page-fetched-program.png")

    # It stays in the trace: another tab and back draws it again.
    page.click("[data-tab=results]")
    open_diagram(page)
    assert page.get_attribute("#diagram", "data-selected-pid") == f"{pid},0,0"
