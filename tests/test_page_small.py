"""The small things a first visit trips on, at 1280x720: a puzzle's page is titled by its puzzle,
the address names the example on screen, a 1-D launch grid drawn in rows says it is one line of
programs, three-digit element numbers fit their cells and the hatching keeps clear of them, an
error met on the Diagram tab leads to the error card, and a puzzle's Export .py prints what the
kernel wrote. (Step's ranges in the diagram's words: tests/test_page_step.py.)"""
import re

import pytest

from app.course import puzzles
from app.web.export import export_script
from tests.support.browser import page_without_errors, set_source
from tests.support.kernels import vector_add_spec
from tests.test_browser import open_diagram, open_playground, run_and_wait
from tests.test_export import run_script

SHOTS = "/tmp/shots"


@pytest.fixture
def page(browser):
    with page_without_errors(browser, width=1280, height=720) as page:
        yield page


@pytest.mark.browser
def test_a_puzzle_page_is_titled_by_its_puzzle(page, live_server):
    open_playground(page, live_server + "/puzzles/constant_add")
    assert page.title() == "Puzzle: Constant add · Triton Playground"


@pytest.mark.browser
def test_the_address_names_the_example_on_screen(page, live_server):
    open_playground(page, live_server + "/")
    assert page.evaluate("location.pathname") == "/examples/vector_add"
    page.select_option("#example-select", "matmul")
    page.wait_for_function("location.pathname === '/examples/matmul'")
    page.go_back()  # back to the first example's address, which opens it again
    page.wait_for_function("location.pathname === '/examples/vector_add' && window.playground !== undefined")
    assert page.input_value("#example-select") == "vector_add"


@pytest.mark.browser
def test_a_one_dimensional_grid_reads_as_one_line_of_programs(page, live_server):
    open_playground(page, live_server + "/examples/vector_add")  # 97 programs, drawn 16 a row
    assert run_and_wait(page) == "ok"
    open_diagram(page)
    figure = page.locator(".diagram-grid-plot")
    texts = figure.evaluate("(figure) => [...figure.querySelectorAll('.ytick text, .ytitle')].map((t) => t.textContent)")
    assert texts[-1] == "1-D grid, 16 a row"
    ticks = texts[:-1]
    assert ticks[:2] == ["0–15", "16–31"] and ticks[-1] == "96"  # which programs each row holds
    page.screenshot(path=f"{SHOTS}/grid-1d-1280x720.png")


@pytest.mark.browser
def test_three_digit_element_numbers_fit_their_cells_and_the_hatching_keeps_off_them(page, live_server):
    open_playground(page, live_server + "/examples/masked_tail")
    spec = vector_add_spec(n=150, block=16, trace=True)
    page.evaluate("(spec) => window.playground.setSpec(spec)", spec)
    assert run_and_wait(page) == "ok"
    open_diagram(page)
    page.click(".diagram-controls button:has-text('Prev')")  # the last program: lanes 150..159 masked off
    plot = page.locator('.diagram-tensor[data-tensor="x"] .js-plotly-plot')
    plot.scroll_into_view_if_needed()
    found = plot.evaluate("""(plot) => {
        const [cells, , hatch] = plot.data;
        const cellPx = plot._fullLayout.xaxis._length / (plot._fullLayout.xaxis.range[1] - plot._fullLayout.xaxis.range[0]);
        const longest = Math.max(...cells.text.flat().map((t) => t.length));
        const mids = [];
        for (let i = 0; i + 1 < hatch.x.length; i += 3) mids.push([(hatch.x[i] + hatch.x[i + 1]) / 2, (hatch.y[i] + hatch.y[i + 1]) / 2]);
        return { fontPx: cells.textfont.size, cellPx, longest, mids };
    }""")
    assert found["longest"] == 3
    assert found["fontPx"] * 0.62 * 3 <= found["cellPx"] - 6  # "150" fits its cell
    assert found["mids"] and all(abs(x - round(x)) + abs(y - round(y)) > 0.2 for x, y in found["mids"])  # no line through a number
    page.screenshot(path=f"{SHOTS}/element-numbers-under-hatching-1280x720.png")


@pytest.mark.browser
def test_an_error_on_the_diagram_tab_leads_to_the_error_card(page, live_server):
    open_playground(page, live_server + "/examples/vector_add")
    page.click("[data-tab=diagram]")
    set_source(page, page.evaluate("window.playground.getSpec().source").replace("x + y", "x + undefined_name"))
    assert run_and_wait(page) == "error"
    message = page.inner_text("#diagram")
    assert re.search(r"No diagram: the run stopped with an? \w+ error on line \d+", message), message
    page.screenshot(path=f"{SHOTS}/diagram-error-points-to-the-card-1280x720.png")
    page.click("#diagram-show-error")
    assert page.get_attribute("[data-tab].active", "data-tab") == "results"
    assert page.locator("#error-card").is_visible()


@pytest.mark.integration  # runs the exported script in its own Python
def test_a_puzzles_export_prints_what_the_kernel_wrote(tmp_path):
    puzzle = puzzles.builtin("constant_add")
    spec = {**puzzles.starter_spec(puzzle), "source": puzzle["solution"]}
    script = export_script(spec)
    assert '# The puzzle "constant_add": its check runs on the server' in script
    done = run_script(script, tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    lines = done.stdout.splitlines()
    assert lines[0].startswith("add_ten: grid (3, 1, 1)")  # as a run's trace gives it
    assert "out: the kernel wrote 20 of 20 elements" in lines
    assert "tensor([" in done.stdout
