"""One story per run, told alike in every pane, when a run stops at an out-of-bounds access
(1280x720): the stopped store wrote nothing (the caption says it was stopped, not that it stored),
the masked lanes are the loads', named so, the elements it never reached are blamed on the stop
and not on the grid, and a puzzle's figure counts them as missed for that reason: never as "extra"
elements past the end that no figure can draw."""
import pytest

from app.course import puzzles
from tests.support.browser import page_without_errors, set_source
from tests.support.kernels import VECTOR_ADD, vector_add_spec
from tests.test_browser import open_diagram, open_playground, run_and_wait
from tests.test_puzzles import graded_run

SHOTS = "/tmp/shots"
UNMASKED_STORE = VECTOR_ADD.replace("tl.store(out_ptr + offs, x + y, mask=mask)", "tl.store(out_ptr + offs, x + y)")
STORE_PAST_THE_END = ("tl.store(out_ptr + offsets, x + 10.0, mask=mask)", "tl.store(out_ptr + offsets, x + 10.0)")


def test_the_store_that_stopped_a_puzzle_run_wrote_nothing(app):
    puzzle = puzzles.builtin("constant_add")
    expected = graded_run(app, puzzle, puzzle["solution"])["trace"]
    result = graded_run(app, puzzle, puzzle["solution"].replace(*STORE_PAST_THE_END), expected)
    diff = result["puzzle"]["diff"]["out"]
    assert diff["extra"]["count"] == 0  # not elements 20..23, past the end of out
    assert diff["missed"] == {"count": 4, "runs": [[16, 4]]}  # the stopped program's real elements


@pytest.fixture
def page(browser):
    with page_without_errors(browser, width=1280, height=720) as page:
        yield page


@pytest.mark.browser
def test_an_out_of_bounds_store_is_one_story_in_results_and_diagram(page, live_server):
    open_playground(page, live_server + "/")
    page.evaluate("(spec) => window.playground.setSpec(spec)", vector_add_spec(source=UNMASKED_STORE, trace=True))
    assert run_and_wait(page) == "error"
    results = page.inner_text("#results")
    assert "OutOfBounds" in results
    stopped = ("128 elements of out were never written (98304..98431): the run stopped first, "
               "at the out-of-bounds store to out on line 12 of program (96, 0, 0).")
    assert stopped in results
    assert "Check that the grid covers" not in results  # the grid is not what went wrong
    page.screenshot(path=f"{SHOTS}/out-of-bounds-results-1280x720.png")

    open_diagram(page)
    diagram = page.inner_text("#diagram")
    caption = page.inner_text(".diagram-caption")
    assert "was stopped before storing out[98304..98431]" in caption
    assert "stores out[" not in caption
    assert "x, y: 896 lanes masked off" in caption  # the loads' lanes, not the store's
    assert stopped in diagram
    page.screenshot(path=f"{SHOTS}/out-of-bounds-diagram-1280x720.png")


@pytest.mark.browser
def test_a_puzzle_says_what_an_out_of_bounds_store_never_reached(page, live_server):
    puzzle = puzzles.builtin("constant_add")
    open_playground(page, live_server + "/puzzles/constant_add")
    set_source(page, puzzle["solution"].replace(*STORE_PAST_THE_END))
    run_and_wait(page)
    page.click('[data-tab="puzzle"]')
    page.wait_for_selector(".puzzle-marks")
    marks = page.inner_text(".puzzle-marks")
    assert "extra" not in marks
    assert "4 missed: never written, as the run stopped first, at the out-of-bounds store to out on line" in marks
    page.locator(".puzzle-figures").scroll_into_view_if_needed()
    page.screenshot(path=f"{SHOTS}/out-of-bounds-puzzle-1280x720.png")
