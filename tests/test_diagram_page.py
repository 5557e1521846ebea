"""The block-assignment diagram in a real browser, on a standalone page (tests/diagram_harness.html).

Traces are written by hand here, in the shape the run pipeline returns, so these tests need no
kernel run: they check what the learner sees for a given trace.
"""
import functools
import http.server
import json
import os
import threading

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync"]

pytestmark = [pytest.mark.browser,
              pytest.mark.skipif(not os.path.exists(CHROMIUM), reason="needs /usr/bin/chromium")]

# Source lines of the accesses in the traces below, as a vector-add kernel would have them.
LOAD_X, LOAD_Y, STORE_OUT = 14, 15, 17


# ---- traces ----------------------------------------------------------------------------------

def runs_of(offsets):
    """[start, length] runs of a sorted list of offsets."""
    runs = []
    for offset in offsets:
        if runs and runs[-1][0] + runs[-1][1] == offset:
            runs[-1][1] += 1
        else:
            runs.append([offset, 1])
    return runs


def coverage_of(numel, stored_runs, atomic_runs=()):
    """Unwritten and multiply-stored elements, swept over run boundaries (no per-element lists).
    As in the tracer, atomics write an element without ever making it a conflict."""
    edges = {0: [0, 0], numel: [0, 0]}  # offset -> change in [stores, atomics] covering it
    for kind, runs in enumerate((stored_runs, atomic_runs)):
        for start, length in runs:
            edges.setdefault(start, [0, 0])[kind] += 1
            edges.setdefault(start + length, [0, 0])[kind] -= 1
    unwritten, multi, stores, atomics = [], [], 0, 0
    points = sorted(edges)
    for here, following in zip(points, points[1:]):
        stores, atomics = stores + edges[here][0], atomics + edges[here][1]
        if here >= numel:
            break
        piece = [here, min(following, numel) - here]
        if stores == 0 and atomics == 0:
            unwritten.append(piece)
        elif stores > 1:
            multi.append(piece)
    return {"numel": numel, "unwritten": sum(n for _, n in unwritten), "multiply_written": sum(n for _, n in multi),
            "unwritten_runs": unwritten, "multi_runs": multi}


def vector_add_trace(n, block, programs=None, grid=None):
    """out = x + y, one program per block of `block` elements, lanes at offsets >= n masked off."""
    count = -(-n // block) if programs is None else programs
    traced = []
    for pid in range(count):
        start = pid * block
        active = [[start, max(0, min(block, n - start))]]
        masked = [[max(start, n), start + block - max(start, n)]] if start + block > n else []
        active = [r for r in active if r[1] > 0]
        traced.append({"pid": [pid, 0, 0], "accesses": [
            {"op": "load", "tensor": "x", "line": LOAD_X, "offsets": active, "masked": masked},
            {"op": "load", "tensor": "y", "line": LOAD_Y, "offsets": active, "masked": masked},
            {"op": "store", "tensor": "out", "line": STORE_OUT, "offsets": active, "masked": masked}]})
    grid = grid or [count, 1, 1]
    total = grid[0] * grid[1] * grid[2]
    written = [[0, min(n, total * block)]]  # coverage spans the whole launch, sampled or not
    return {"grid": grid, "programs_total": total, "programs_traced": len(traced), "sampled": total > len(traced),
            "tensors": {"x": {"shape": [n], "dtype": "float32", "role": "input"},
                        "y": {"shape": [n], "dtype": "float32", "role": "input"},
                        "out": {"shape": [n], "dtype": "float32", "role": "output"}},
            "programs": traced, "coverage": {"out": coverage_of(n, written)}}


def row_sum_2d_trace(m, n, block_m, block_n):
    """out[r] += a[r, cols of the tile].sum() on a (cdiv(m, block_m), cdiv(n, block_n)) grid."""
    gx, gy = -(-m // block_m), -(-n // block_n)
    traced, written = [], []
    for py in range(gy):
        for px in range(gx):
            rows = range(px * block_m, px * block_m + block_m)
            cols = range(py * block_n, py * block_n + block_n)
            active = [r * n + c for r in rows for c in cols if r < m and c < n]
            masked = [r * n + c for r in rows for c in cols if not (r < m and c < n)]
            out_active = runs_of([r for r in rows if r < m])
            out_masked = runs_of([r for r in rows if r >= m])
            written += out_active
            traced.append({"pid": [px, py, 0], "accesses": [
                {"op": "load", "tensor": "a", "line": 30, "offsets": runs_of(active), "masked": runs_of(masked)},
                {"op": "atomic", "atomic": "add", "tensor": "out", "line": 32,
                 "offsets": out_active, "masked": out_masked}]})
    return {"grid": [gx, gy, 1], "programs_total": gx * gy, "programs_traced": gx * gy, "sampled": False,
            "tensors": {"a": {"shape": [m, n], "dtype": "float32", "role": "input"},
                        "out": {"shape": [m], "dtype": "float32", "role": "output"}},
            "programs": traced, "coverage": {"out": coverage_of(m, [], written)}}


# ---- a static server and a browser -----------------------------------------------------------

def plotly_js_path():
    import plotly
    return os.path.join(os.path.dirname(plotly.__file__), "package_data", "plotly.min.js")


class HarnessHandler(http.server.SimpleHTTPRequestHandler):
    """Serves /static from the project, the harness page and plotly.min.js from the plotly package."""

    def translate_path(self, path):
        path = path.split("?", 1)[0]
        if path == "/plotly.min.js":
            return plotly_js_path()
        if path == "/harness.html":
            return os.path.join(ROOT, "tests", "diagram_harness.html")
        if path.startswith("/static/"):
            return os.path.join(ROOT, path.lstrip("/"))
        return os.path.join(ROOT, "missing")

    def log_message(self, *args):
        pass


@pytest.fixture(scope="module")
def harness_url():
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(HarnessHandler, directory=ROOT))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/harness.html"
    server.shutdown()


@pytest.fixture(scope="module")
def harness(harness_url):
    """One browser page with the harness loaded (plotly takes seconds to load); tests render into it."""
    from playwright.sync_api import sync_playwright
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        page = browser.new_page(viewport={"width": 1440, "height": 900})
        errors = []
        page.on("pageerror", lambda error: errors.append(str(error)))
        page.goto(harness_url)
        page.wait_for_function("window.harnessReady === true")
        yield page, errors
        browser.close()


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
    assert "Every element of out was written exactly once." in page.locator(".diagram-coverage").inner_text()

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
    select_ms = page.evaluate("""async () => {
        const started = performance.now();
        await window.selectProgram([5, 0, 0]);
        return performance.now() - started;
    }""")
    print(f"\n1M elements, 1024 programs: render {render_ms:.0f} ms, select a program {select_ms:.0f} ms")
    assert render_ms < 5000
    out = figure_state(page, "out")
    assert out["cell_elements"] == 16
    assert out["highlighted"] == [[256, 256]]  # program 5 is row 5: the second row of 4 x 4 cells
    assert "each cell = 16 elements" in page.locator('.diagram-tensor[data-tensor="out"] .diagram-note').inner_text()


def test_zooming_into_a_binned_tensor_draws_single_elements_again(page):
    render(page, vector_add_trace(1 << 20, 1024))
    page.evaluate("window.selectProgram([5, 0, 0])")
    page.evaluate("""() => Plotly.relayout(document.querySelector('.diagram-tensor[data-tensor="out"] .diagram-plot'),
                                           {'xaxis.range': [-0.5, 15.5], 'yaxis.range': [7.5, 3.5]})""")
    page.wait_for_function("""document.querySelector('.diagram-tensor[data-tensor="out"]').dataset.cellElements === '1'""")
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
