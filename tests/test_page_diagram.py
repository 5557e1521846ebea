"""The Diagram tab says true things about the selected program, in a real browser at 1280x720
(traces written by hand, tests/fake_results.py): its counter gives the program id, a program whose
elements would be a sliver of a tall tensor is zoomed into view, and plotly's mode bar offers
nothing that sends data off-site."""
import json

import pytest

from tests.fake_results import row_sum_2d_trace, vector_add_trace
from tests.frontend_harness import harness_page, static_server

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
