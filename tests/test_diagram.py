"""The block-assignment diagram in a real browser, on a standalone page (tests/support/diagram_harness.html).

Traces are written by hand (tests/support/results_by_hand.py), in the shape the run pipeline returns, so these
tests need no kernel run: they check what the learner sees for a given trace.
"""
import json

import pytest

from tests.support.results_by_hand import LOAD_X, LOAD_Y, STORE_OUT, out_of_bounds_trace, row_sum_2d_trace, vector_add_trace
from tests.support.harness_pages import harness_page, static_server

pytestmark = pytest.mark.browser
SHOTS = "/tmp/shots"


@pytest.fixture(scope="module")
def harness():
    """One browser page with the harness loaded (plotly takes seconds to load); tests render into it."""
    with static_server() as base, harness_page(base + "/harness.html") as (page, errors):
        yield page, errors


@pytest.fixture
def page(harness):
    page, errors = harness
    errors.clear()
    page.evaluate("window.selectedEvents = []")
    yield page
    assert not errors, errors


def render(page, trace, **options):
    return page.evaluate("([trace, options]) => window.renderTrace(trace, options)", [trace, options])


def figure_state(page, tensor):
    """What the tensor's figure says it highlights: runs of drawn cells, and elements per cell."""
    figure = page.locator(f'.diagram-tensor[data-tensor="{tensor}"]')
    return {"highlighted": json.loads(figure.get_attribute("data-highlighted-cells")),
            "masked": json.loads(figure.get_attribute("data-masked-cells")),
            "cell_elements": int(figure.get_attribute("data-cell-elements"))}


def cells_in_colour_of(page, tensor, cell):
    """Flat indices of the cells drawn in the same colour as `cell` in the tensor's heatmap."""
    return page.evaluate("""([tensor, cell]) => {
        const plot = document.querySelector(`.diagram-tensor[data-tensor="${tensor}"] .diagram-plot`);
        const z = plot.data[0].z.flatMap((row) => Array.from(row));
        return z.flatMap((value, i) => (value === z[cell] ? [i] : []));
    }""", [tensor, cell])


def hatched_cell_count(page, tensor):
    """How many cells the tensor's plot outlines as masked-off lanes."""
    return page.evaluate("""(tensor) => {
        const plot = document.querySelector(`.diagram-tensor[data-tensor="${tensor}"] .diagram-plot`);
        const outline = plot.data.find((trace) => trace.name === 'masked lanes');
        return outline ? outline.x.filter((x) => x === null).length : 0;
    }""", tensor)


def caption(page):
    return page.locator(".diagram-caption").inner_text()


# ---- tests -----------------------------------------------------------------------------------

def test_selecting_the_last_program_highlights_its_elements_and_its_masked_lanes(page):
    render(page, vector_add_trace(10, 4))
    page.evaluate("window.selectProgram([2, 0, 0])")

    for tensor in ("x", "y", "out"):
        assert figure_state(page, tensor) == {"highlighted": [[8, 2]], "masked": [[10, 2]], "cell_elements": 1}
    assert cells_in_colour_of(page, "out", 8) == [8, 9]
    assert hatched_cell_count(page, "out") == 2
    assert caption(page).startswith("program (2, 0, 0) loads x[8..9], y[8..9], stores out[8..9]; "
                                    "2 lanes masked off (offsets 10..11)")
    assert page.locator("#diagram").get_attribute("data-selected-pid") == "2,0,0"
    assert page.evaluate("window.selectedEvents.at(-1)") == {"pid": [2, 0, 0], "lines": [LOAD_X, LOAD_Y, STORE_OUT]}


def test_a_full_block_has_no_masked_lanes_and_show_all_clears_the_selection(page):
    render(page, vector_add_trace(10, 4))
    page.evaluate("window.selectProgram([0, 0, 0])")
    assert figure_state(page, "out")["highlighted"] == [[0, 4]]
    assert figure_state(page, "out")["masked"] == []
    assert "no lanes masked off" in caption(page)

    page.get_by_role("button", name="Show all").click()
    page.wait_for_function("document.querySelector('#diagram').dataset.selectedPid === ''")
    assert figure_state(page, "out")["highlighted"] == []
    assert page.evaluate("window.selectedEvents.at(-1)") == {"pid": None, "lines": []}


def test_clicking_a_program_in_the_grid_and_the_step_buttons_select_programs(page):
    render(page, vector_add_trace(10, 4))
    area = page.locator(".diagram-grid-plot .nsewdrag").bounding_box()
    page.mouse.click(area["x"] + area["width"] * 1.5 / 3, area["y"] + area["height"] / 2)
    page.wait_for_function("document.querySelector('#diagram').dataset.selectedPid === '1,0,0'")
    assert figure_state(page, "out")["highlighted"] == [[4, 4]]

    page.get_by_role("button", name="Next").click()
    page.wait_for_function("document.querySelector('#diagram').dataset.selectedPid === '2,0,0'")
    assert page.get_by_role("button", name="Next").is_disabled()
    page.get_by_role("button", name="Prev").click()
    page.wait_for_function("document.querySelector('#diagram').dataset.selectedPid === '1,0,0'")


def test_play_steps_through_the_programs(page):
    render(page, vector_add_trace(10, 4))
    page.get_by_role("button", name="Play").click()
    page.wait_for_function("document.querySelector('#diagram').dataset.selectedPid === '0,0,0'")
    page.wait_for_function("document.querySelector('#diagram').dataset.selectedPid === '1,0,0'", timeout=5000)


def test_a_selected_program_is_restored_on_render(page):
    render(page, vector_add_trace(10, 4), selectedPid=[1, 0, 0])
    assert page.locator("#diagram").get_attribute("data-selected-pid") == "1,0,0"
    assert figure_state(page, "x")["highlighted"] == [[4, 4]]


def test_unwritten_elements_are_counted_and_marked(page):
    render(page, vector_add_trace(10, 4, programs=2))
    assert "2 elements of out were never written (8..9)" in page.locator(".diagram-coverage").inner_text()
    crosses = page.evaluate("""() => {
        const plot = document.querySelector('.diagram-tensor[data-tensor="out"] .diagram-plot');
        return plot.data.filter((t) => t.type === 'scatter' && t.name !== 'masked lanes').map((t) => t.x.filter((x) => x === null).length);
    }""")
    assert crosses == [4]  # two strokes for each of the two elements


def test_a_complete_output_is_stated_as_written_exactly_once(page):
    render(page, vector_add_trace(10, 4))
    assert "Every element of out was written exactly once." in page.locator(".diagram-coverage").inner_text()


def test_a_2d_grid_shows_tiles_and_lanes_masked_into_the_next_row(page):
    render(page, row_sum_2d_trace(5, 20, 2, 8))
    grid = page.evaluate("document.querySelector('.diagram-grid-plot').data[0].z.map((row) => row.length)")
    assert grid == [3, 3, 3]  # program_id(0) across, program_id(1) down

    page.evaluate("window.selectProgram([0, 2, 0])")
    # Columns 16..19 of rows 0 and 1; the masked columns 20..23 land on the next row's first elements.
    assert figure_state(page, "a") == {"highlighted": [[16, 4], [36, 4]], "masked": [[20, 4], [40, 4]], "cell_elements": 1}
    assert "loads a[0..1, 16..19]" in caption(page)
    assert "updates out[0..1] with tl.atomic_add" in caption(page)
    # Three programs add into each row's total: atomics, counted as such, not a race.
    assert page.locator(".diagram-coverage").inner_text() == (
        "Every element of out was written; out[0..4] were updated atomically by 3 programs each (tl.atomic_add), "
        "which is not a race.")

    page.evaluate("window.selectProgram([2, 1, 0])")
    # Row 5 does not exist (M = 5): its lanes are masked and drawn past the end of a.
    assert figure_state(page, "a")["masked"] == [[108, 8]]
    assert page.locator('.diagram-tensor[data-tensor="a"] .diagram-note').inner_text().startswith("drawn past its end")


def test_a_sampled_trace_says_how_many_programs_it_shows(page):
    render(page, vector_add_trace(1 << 30, 1024, programs=3, grid=[1 << 20, 1, 1]))
    assert "Showing 3 of 1,048,576 programs" in page.locator(".diagram-summary").inner_text()
    page.evaluate("window.selectProgram([1, 0, 0])")
    assert "program (1, 0, 0) loads x[1024..2047]" in caption(page)


def test_a_million_element_trace_renders_quickly_and_is_binned(page):
    trace = vector_add_trace(1 << 20, 1024)
    render_ms = render(page, trace)
    assert figure_state(page, "out")["cell_elements"] == 16
    assert "each cell = 16 elements" in page.locator('.diagram-tensor[data-tensor="out"] .diagram-note').inner_text()
    select_ms = page.evaluate("""async () => {
        const started = performance.now();
        await window.selectProgram([5, 0, 0]);
        return performance.now() - started;
    }""")
    print(f"\n1M elements, 1024 programs: render {render_ms:.0f} ms, select a program {select_ms:.0f} ms")
    assert render_ms < 5000
    # One row of 1,024 would be a sliver: the selection zooms to rows 1..9, single elements again,
    # program 5 the fifth row of the window.
    assert figure_state(page, "out") == {"highlighted": [[4096, 1024]], "masked": [], "cell_elements": 1}


def test_zooming_into_a_binned_tensor_draws_single_elements_again(page):
    render(page, vector_add_trace(1 << 20, 1024))
    page.evaluate("window.selectProgram([5, 0, 0])")
    page.evaluate("""() => Plotly.relayout(document.querySelector('.diagram-tensor[data-tensor="out"] .diagram-plot'),
                                           {'xaxis.range': [-0.5, 15.5], 'yaxis.range': [7.5, 3.5]})""")
    page.wait_for_function("""document.querySelector('.diagram-tensor[data-tensor="out"]').dataset.rows === '[4,4]'""")
    # Rows 4..7, columns 0..15: program 5 owns the second row of the window.
    assert figure_state(page, "out") == {"highlighted": [[16, 16]], "masked": [], "cell_elements": 1}
    first_label = page.evaluate("""document.querySelector('.diagram-tensor[data-tensor="out"] .diagram-plot').data[0].text[0][0]""")
    assert first_label == "4096"
    assert "zoomed in" in page.locator('.diagram-tensor[data-tensor="out"] .diagram-note').inner_text()


def test_the_row_width_control_refolds_1d_tensors(page):
    render(page, vector_add_trace(10, 4))
    page.evaluate("window.selectProgram([2, 0, 0])")
    page.locator(".diagram-width").fill("5")
    page.locator(".diagram-width").dispatch_event("change")
    page.wait_for_function("""document.querySelector('.diagram-tensor[data-tensor="out"] .diagram-plot').data[0].z[0].length === 5""")
    rows = page.evaluate("""document.querySelector('.diagram-tensor[data-tensor="out"] .diagram-plot').data[0].z.length""")
    assert rows == 3  # offsets 0..11 (the masked lanes too) in rows of 5
    assert figure_state(page, "out") == {"highlighted": [[8, 2]], "masked": [[10, 2]], "cell_elements": 1}


def test_a_3d_grid_shows_one_z_slice_at_a_time_and_follows_the_selected_program(page):
    trace = vector_add_trace(16, 4)  # four programs, drawn as a (2, 1, 2) grid
    for index, program in enumerate(trace["programs"]):
        program["pid"] = [index % 2, 0, index // 2]
    trace["grid"] = [2, 1, 2]
    render(page, trace)
    outlined = "document.querySelector('.diagram-grid-plot').layout.shapes.length"
    page.evaluate("window.selectProgram([1, 0, 1])")
    assert page.locator(".diagram-field", has_text="grid z").inner_text().strip().endswith("1")
    assert page.evaluate(outlined) == 1
    assert figure_state(page, "out")["highlighted"] == [[12, 4]]

    page.locator(".diagram-field input[type=range]").fill("0")  # the other slice: the selected program is not in it
    page.wait_for_function(f"{outlined} === 0")
    assert page.locator(".diagram-field", has_text="grid z").inner_text().strip().endswith("0")


# ---- an out-of-bounds error, and programs fetched on request ----------------------------------

def test_the_lanes_of_an_out_of_bounds_load_are_drawn_past_the_end_in_the_errors_colour(page):
    render(page, out_of_bounds_trace(98432, 1024), selectedPid=[96, 0, 0])
    assert page.locator("#diagram").get_attribute("data-selected-pid") == "96,0,0"
    x = page.locator('.diagram-tensor[data-tensor="x"]')
    # Zoomed to program 96's row: its 128 elements of x, then its 896 stray lanes past x's end.
    first, count = json.loads(x.get_attribute("data-rows"))
    assert first <= 96 < first + count
    assert json.loads(x.get_attribute("data-stray-cells")) == [[(96 - first) * 1024 + 128, 896]]
    assert figure_state(page, "x")["highlighted"] == [[(96 - first) * 1024, 128]]
    assert page.locator(".diagram-legend", has_text="out of bounds").count() == 1
    assert x.locator(".diagram-stray-note").inner_text() == "Out of bounds: 896 lanes past the end of x (offsets 98432..99327)."
    assert "out of bounds: 896 lanes past the end of x" in caption(page)
    assert "The run stopped at program (96, 0, 0): its load on line 14" in page.locator(".diagram-summary").inner_text()
    assert page.locator('.diagram-tensor[data-tensor="y"]').get_attribute("data-stray-cells") == "[]"
    x.scroll_into_view_if_needed()
    page.screenshot(path=f"{SHOTS}/diagram-out-of-bounds.png", full_page=True)

    # Every program shown: the stray lanes keep the error's colour, two to a cell at this size.
    page.get_by_role("button", name="Show all").click()
    page.wait_for_function("document.querySelector('#diagram').dataset.selectedPid === ''")
    assert json.loads(x.get_attribute("data-stray-cells")) == [[96 * 512 + 64, 448]]
    assert figure_state(page, "x")["cell_elements"] == 2


def test_a_trace_without_stray_lanes_has_no_out_of_bounds_legend(page):
    render(page, vector_add_trace(10, 4))
    assert page.locator(".diagram-legend", has_text="out of bounds").count() == 0
    assert page.locator(".diagram-stray-note").count() == 0


def click_grid_cell(page, col, row, cols, rows):
    area = page.locator(".diagram-grid-plot .nsewdrag").bounding_box()
    page.mouse.click(area["x"] + area["width"] * (col + 0.5) / cols, area["y"] + area["height"] * (row + 0.5) / rows)


SAMPLED = vector_add_trace(160, 4, programs=3, grid=[40, 1, 1])  # programs 0..2 of 40, the grid folded 16 a row


def test_clicking_an_untraced_program_fetches_it_and_draws_it_selected(page):
    page.evaluate("""(trace) => window.renderTrace(trace, { fetchProgram: async (pid) => {
        await new Promise((resolve) => setTimeout(resolve, 300));
        const offsets = [[pid[0] * 4, 4]];
        return { pid, accesses: [{ op: "load", tensor: "x", line: 14, offsets, masked: [] },
                                 { op: "store", tensor: "out", line: 17, offsets, masked: [] }] };
    } })""", SAMPLED)
    click_grid_cell(page, 4, 1, 16, 3)  # program 20
    page.wait_for_function("document.querySelector('#diagram').dataset.fetching === '20,0,0'")
    assert caption(page) == "fetching program (20, 0, 0)…"
    page.wait_for_function("document.querySelector('#diagram').dataset.selectedPid === '20,0,0'")
    first, _ = json.loads(page.locator('.diagram-tensor[data-tensor="out"]').get_attribute("data-rows"))
    assert figure_state(page, "out")["highlighted"] == [[(20 - first) * 4, 4]]  # its row, zoomed into view
    assert caption(page).startswith("program (20, 0, 0) loads x[80..83], stores out[80..83]")
    assert "Showing 4 of 40 programs" in page.locator(".diagram-summary").inner_text()
    assert page.evaluate("window.extendedTraces.at(-1).programs.map((p) => p.pid[0])") == [0, 1, 2, 20]


def test_a_program_that_could_not_be_fetched_says_why_and_the_diagram_still_works(page):
    page.evaluate("""(trace) => window.renderTrace(trace, { fetchProgram: async () => {
        throw new Error("the server is busy");
    } })""", SAMPLED)
    click_grid_cell(page, 4, 1, 16, 3)
    page.wait_for_function("!document.querySelector('#diagram').dataset.fetching")
    assert caption(page) == "Could not fetch program (20, 0, 0): the server is busy"
    assert page.locator(".diagram-caption").get_attribute("class") == "diagram-caption diagram-caption-error"
    page.get_by_role("button", name="Next").click()
    page.wait_for_function("document.querySelector('#diagram').dataset.selectedPid === '0,0,0'")
    assert caption(page).startswith("program (0, 0, 0) loads")
