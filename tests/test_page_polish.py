"""What the page's figures and words get right: the program grid's and Compare's row labels clear of
their axis title and of each other, Compare's maps in their programs' colours, the diagram's tooltip
gone once the keyboard moves the selection, a benchmark of one point ticked at it without SI milli
labels and its lines in the program's own styles, integer offsets in the Step tab as integers, error
text without literal backticks, a Stop titled "stopped"."""
import pytest

from tests.support.results_by_hand import error_result, result
from tests.support.browser import page_without_errors
from tests.test_browser import inject_result, open_diagram, open_playground, overlap, run_and_wait
from tests.test_page_script import script_page
from tests.test_script import BENCHMARKED
from tests.test_stepper import step_through

pytestmark = pytest.mark.browser
SHOTS = "screenshots"


@pytest.fixture
def page(browser):
    with page_without_errors(browser, width=1440, height=900) as page:
        yield page


def boxes(page, selector):
    return page.eval_on_selector_all(selector, """nodes => nodes.map(n => { const b = n.getBoundingClientRect();
        return {x: b.x, y: b.y, width: b.width, height: b.height, text: n.textContent}; })""")


def test_the_program_grid_keeps_its_row_labels_clear_of_its_axis_title(page, live_server):
    open_playground(page, live_server + "/examples/vector_add")
    page.fill('.arg-value[data-param="BLOCK_SIZE"]', "256")   # 385 programs: rows "0–31" … "352–383", "384"
    assert run_and_wait(page) == "ok"
    open_diagram(page)
    title = boxes(page, ".diagram-grid-plot .g-ytitle text")
    labels = boxes(page, ".diagram-grid-plot .yaxislayer-above .ytick text")
    assert title and len(labels) > 3 and any("–" in label["text"] for label in labels)
    assert not [label["text"] for label in labels if overlap(title[0], label)]
    page.locator(".diagram-grid-plot").screenshot(path=f"{SHOTS}/program-grid.png")
    page.screenshot(path=f"{SHOTS}/diagram.png")


def test_the_tooltip_goes_when_the_keyboard_moves_the_selection(page, live_server):
    open_playground(page, live_server + "/examples/vector_add")
    assert run_and_wait(page) == "ok"
    open_diagram(page)
    area = page.locator(".diagram-grid-plot .nsewdrag").bounding_box()
    cols = int(page.get_attribute("#diagram", "data-grid-cols") or 0) or None
    page.mouse.move(area["x"] + 4, area["y"] + 4)   # over program 0
    page.wait_for_selector(".diagram-tooltip:not([hidden])")
    assert "0" in page.inner_text(".diagram-tooltip")
    slider = page.locator('input[aria-label="Program"]')
    slider.focus()
    page.keyboard.press("End")   # the last program, 96, by the keyboard
    page.wait_for_function("document.querySelector('#diagram').dataset.selectedPid?.startsWith('96')")
    assert page.locator(".diagram-tooltip[hidden]").count() == 1, cols


def test_compares_maps_are_in_colour_with_their_labels_clear(page, live_server):
    open_playground(page, live_server + "/examples/vector_add")
    assert run_and_wait(page) == "ok"
    page.click("[data-tab=compare]")
    page.click("#pin-button")
    page.fill('.arg-value[data-param="BLOCK_SIZE"]', "512")
    page.wait_for_timeout(300)
    assert run_and_wait(page) in ("ok", "mismatch")
    page.click("[data-tab=compare]")
    plot = "#compare-coverage .js-plotly-plot"
    page.wait_for_selector(plot)
    maps = boxes(page, f"{plot} .heatmaplayer image")
    labels = boxes(page, f"{plot} .yaxislayer-above .ytick text")
    assert len(maps) == 2 and labels
    assert not [label["text"] for label in labels for m in maps if overlap(label, m)]   # none printed over a map
    # Each element in its program's colour: no grey gap between small cells.
    gaps = page.eval_on_selector(plot, "p => p.data.filter(t => t.type === 'heatmap').map(t => [t.xgap, t.ygap])")
    cell = page.eval_on_selector(plot, "p => p._fullLayout.xaxis._length / p.data[0].z[0].length")
    assert cell >= 8 or gaps == [[0, 0], [0, 0]], (cell, gaps)
    page.locator("#compare").screenshot(path=f"{SHOTS}/compare-form.png")


def test_a_benchmark_of_one_point_ticks_at_it_without_milli_labels(page, live_server):
    open_playground(page, live_server + "/examples/vector_add")
    chart = {"name": "vector-add-performance", "x": "size", "y": "GB/s", "x_log": True, "y_log": False,
             "lines": ["Triton", "Torch"], "styles": None, "points": [[4096, [0.04, 0.0095]]], "points_total": 16}
    inject_result(page, result(benchmarks=[chart]))
    page.click("[data-tab=timings]")
    plot = ".benchmark-chart .js-plotly-plot"
    page.wait_for_selector(f"{plot} .xtick text")
    xs = [label["text"] for label in boxes(page, f"{plot} .xtick text")]
    ys = [label["text"] for label in boxes(page, f"{plot} .ytick text")]
    assert xs == ["4,096"], xs   # the point's size, not 4095.8 … 4096.2
    assert ys and not [y for y in ys if y.endswith("m") or "µ" in y], ys   # 0.04, not "40m"
    assert ys[0] == "0", ys   # from zero


def test_a_benchmark_plot_draws_the_programs_line_styles(page, live_server):
    """A script whose perf_report Benchmark gives `styles` (matplotlib's colours and line styles): the
    plot draws each line in its colour and dash, as matplotlib would; the single point ticked at it."""
    script_page(page, live_server, BENCHMARKED)
    assert run_and_wait(page) == "ok"
    page.click("[data-tab=timings]")
    plot = ".benchmark-chart[data-benchmark='sizes'] .js-plotly-plot"
    page.wait_for_selector(f"{plot} .scatterlayer .trace")
    drawn = page.eval_on_selector_all(f"{plot} .scatterlayer .trace .point", """points => points.map(p =>
        getComputedStyle(p).fill)""")
    assert drawn[:1] == ["rgb(255, 127, 14)"], drawn  # "tab:orange": the one point that is a number
    legend = page.eval_on_selector_all(f"{plot} .legend .traces .js-line", """lines => lines.map(l =>
        [getComputedStyle(l).stroke, l.style.strokeDasharray || "none"])""")
    assert legend[0] == ["rgb(255, 127, 14)", "none"], legend
    assert legend[1][0] == "rgb(0, 128, 0)" and legend[1][1] != "none", legend  # "green", "--"
    assert [t["text"] for t in boxes(page, f"{plot} .xtick text")] == ["64"]
    ys = [t["text"] for t in boxes(page, f"{plot} .ytick text")]
    assert ys[0] == "0" and len(ys) >= 3, ys  # one value, shown from zero: not a zoomed window around it
    page.locator(".benchmark-chart").screenshot(path=f"{SHOTS}/benchmark-styles.png")


def test_error_text_shows_code_not_backticks_and_a_stop_is_stopped(page, live_server):
    open_playground(page, live_server + "/examples/vector_add")
    inject_result(page, error_result("compile", "`offs` is not defined", type="NameError",
                                     hint="Define `offs` before `tl.load` uses it."))
    card = page.locator("#results .error-card")
    assert "`" not in card.inner_text()
    assert card.locator("pre code").all_inner_texts() == ["offs"]
    assert card.locator(".hint code").all_inner_texts() == ["offs", "tl.load"]
    inject_result(page, error_result("stopped", "Stopped: you pressed Stop."))
    assert page.text_content("#results .error-card .phase") == "stopped"
    assert "stopped error" not in page.inner_text("#status-line")
    inject_result(page, error_result("timeout", "The run took longer than 30 s."))
    assert page.text_content("#results .error-card .phase") == "timed out"


def test_the_step_tab_shows_integer_offsets_as_integers(page, live_server):
    open_playground(page, live_server + "/examples/vector_add")
    page.click('[data-tab="step"]')
    step_through(page, [96, 0, 0])
    for _ in range(10):
        if page.locator('#step-locals tr.changed[data-name="offsets"]').count():
            break
        page.click("#step-next")
    text = page.inner_text('#step-locals tr[data-name="offsets"]')
    assert "98,304" in text and "99,327" in text and "e+" not in text, text
