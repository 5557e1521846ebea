"""The trace model (static/js/run/trace-model.js) and its words, as functions: small traces in, the
programs, owners, masked lanes, atomics and coverage verdicts out. Run in headless chromium on a
page that only imports the modules (tests/support/model_harness.html): no app, no plotly."""

import pytest

from tests.support.results_by_hand import atomic_sum_trace, out_of_bounds_trace, row_sum_2d_trace, vector_add_trace, without_coverage
from tests.support.harness_pages import harness_page, static_server

pytestmark = pytest.mark.browser


@pytest.fixture(scope="module")
def harness():
    with static_server() as base, harness_page(base + "/model.html") as (page, errors):
        yield page, errors


@pytest.fixture
def page(harness):
    page, errors = harness
    errors.clear()
    yield page
    assert not errors, errors


def model_of(page, trace):
    """What the model makes of `trace`, as JSON: programs, tensors and their coverage verdicts."""
    return page.evaluate("""(trace) => {
        const m = model.traceModel(trace);
        return {
            grid: m.grid, programsTotal: m.programsTotal, sampled: m.sampled,
            programs: m.programs.map((p) => ({ pid: p.pid, linear: p.linear, lines: model.sourceLines(p), regions: model.regionsOf(p) })),
            tensors: Object.fromEntries(m.tensors.map((t) => [t.name, {
                numel: t.numel, extent: t.extent, rowWidth: t.rowWidth, writes: t.writes, coverage: t.coverage }])),
        };
    }""", trace)


def verdicts_of(page, trace):
    """The coverage verdicts of `trace` with their sentences: {tensor: {...verdict, text, ok}}."""
    return page.evaluate("""(trace) => Object.fromEntries([...model.coverageVerdicts(trace)].map(
        ([name, verdict]) => [name, { ...verdict, sentence: words.coverageText(verdict) }]))""", trace)


def owners(page, trace, tensor, width=None):
    """Per drawn cell of `tensor` (single elements at this size): the index of the program that drew it
    and of the program with a masked-off lane there (-1: none)."""
    return page.evaluate("""([trace, name, width]) => {
        const m = model.traceModel(trace);
        const tensor = m.tensors.find((t) => t.name === name);
        const view = model.tensorView(tensor, width ?? tensor.rowWidth);
        return { owner: Array.from(view.owner), ghost: Array.from(view.ghostOwner), coverage: Array.from(view.coverage),
                 cols: view.layout.cellCols, elementsPerCell: view.layout.bx * view.layout.by };
    }""", [trace, tensor, width])


def region(program, kind, tensor):
    return next(r for r in program["regions"] if r["kind"] == kind and r["tensor"] == tensor)


# ---- vector add: n = 10, BLOCK 4 -------------------------------------------------------------

def test_vector_add_has_three_programs_and_the_last_stores_two_elements_with_two_lanes_masked(page):
    m = model_of(page, vector_add_trace(10, 4))
    assert m["grid"] == [3, 1, 1] and m["programsTotal"] == 3 and not m["sampled"]
    assert [p["pid"] for p in m["programs"]] == [[0, 0, 0], [1, 0, 0], [2, 0, 0]]
    last = m["programs"][2]
    assert region(last, "store", "out") == {"kind": "store", "op": "store", "atomic": None, "tensor": "out",
                                            "offsets": [[8, 2]], "masked": [[10, 2]], "strays": []}
    assert region(last, "load", "x")["offsets"] == [[8, 2]] and region(last, "load", "x")["masked"] == [[10, 2]]
    assert region(m["programs"][0], "store", "out")["masked"] == []
    assert last["lines"] == [14, 15, 17]
    # Drawn one block a row, and past the end where the masked lanes point.
    assert m["tensors"]["out"]["rowWidth"] == 4 and m["tensors"]["out"]["extent"] == 12


def test_vector_add_owners_per_element(page):
    cells = owners(page, vector_add_trace(10, 4), "out")
    assert cells["elementsPerCell"] == 1 and cells["cols"] == 4
    assert cells["owner"] == [0, 0, 0, 0, 1, 1, 1, 1, 2, 2, -1, -1]
    assert cells["ghost"] == [-1] * 10 + [2, 2]
    assert cells["coverage"] == [0] * 12


def test_vector_add_writes_every_element_once_with_the_servers_coverage_or_without(page):
    for trace in (vector_add_trace(10, 4), without_coverage(vector_add_trace(10, 4))):
        out = verdicts_of(page, trace)["out"]
        assert (out["unwritten"], out["multi"], out["atomic"], out["ok"]) == (0, 0, None, True)
        assert out["sentence"] == {"ok": True, "text": "Every element of out was written exactly once."}
    assert set(verdicts_of(page, vector_add_trace(10, 4))) == {"out"}  # inputs get no verdict


def test_too_few_programs_leave_the_tail_unwritten(page):
    for trace in (vector_add_trace(10, 4, programs=2), without_coverage(vector_add_trace(10, 4, programs=2))):
        out = verdicts_of(page, trace)["out"]
        assert (out["unwritten"], out["unwrittenRuns"], out["ok"]) == (2, [[8, 2]], False)
        assert out["sentence"]["text"] == "2 elements of out were never written (8..9)."
    assert owners(page, vector_add_trace(10, 4, programs=2), "out")["coverage"] == [0] * 8 + [1, 1, 0, 0]  # 3 rows of 4


# ---- atomics and races -----------------------------------------------------------------------

def test_ten_programs_adding_atomically_into_one_element_is_not_a_race(page):
    for trace in (atomic_sum_trace(), without_coverage(atomic_sum_trace())):
        out = verdicts_of(page, trace)["out"]
        assert (out["unwritten"], out["multi"], out["ok"]) == (0, 0, True)
        assert out["atomic"] == {"elements": 1, "runs": [[0, 1]], "fewest": 10, "most": 10, "kinds": ["atomic_add"], "complete": True}
        text = out["sentence"]["text"]
        assert text == "Every element of out was written; out[0] was updated atomically by 10 programs (tl.atomic_add), which is not a race."
        assert "more than" not in text and "exactly once" not in text


def test_a_second_row_of_programs_storing_the_same_elements_is_a_race(page):
    trace = vector_add_trace(10, 4, rows=2)  # grid (cdiv(n, BLOCK), 2): both rows store every element
    assert model_of(page, trace)["grid"] == [3, 2, 1]
    for t in (trace, without_coverage(trace)):
        out = verdicts_of(page, t)["out"]
        assert (out["unwritten"], out["multi"], out["multiRuns"], out["atomic"], out["ok"]) == (0, 10, [[0, 10]], None, False)
        assert out["sentence"] == {"ok": False, "text": "10 elements of out were stored by more than one program "
                                                        "(the last store wins, in no fixed order)."}
    assert owners(page, trace, "out")["coverage"] == [2] * 10 + [0, 0]
    assert owners(page, trace, "out")["owner"][:10] == [0, 0, 0, 0, 1, 1, 1, 1, 2, 2]  # the first row's programs


def test_row_sums_add_atomically_three_programs_per_row(page):
    out = verdicts_of(page, row_sum_2d_trace(5, 20, 2, 8))["out"]
    assert out["ok"] and out["atomic"]["fewest"] == out["atomic"]["most"] == 3 and out["atomic"]["elements"] == 5
    assert out["sentence"]["text"] == ("Every element of out was written; out[0..4] were updated atomically by 3 programs each "
                                       "(tl.atomic_add), which is not a race.")


def test_a_sampled_trace_takes_coverage_from_the_server_only(page):
    sampled = vector_add_trace(1 << 30, 1024, programs=3, grid=[1 << 20, 1, 1])
    assert model_of(page, sampled)["sampled"]
    assert verdicts_of(page, sampled)["out"]["ok"]
    assert verdicts_of(page, without_coverage(sampled)) == {}  # three programs of a million cannot tell


def test_the_verdicts_of_one_trace_are_computed_once(page):
    assert page.evaluate("""(trace) => model.coverageVerdicts(trace) === model.coverageVerdicts(trace)
        && model.traceModel(trace).tensors[0].coverage === model.coverageVerdicts(trace).get('out')""", vector_add_trace(10, 4))


def test_write_counts_count_each_program_once_per_element(page):
    pieces = page.evaluate("model.writeCounts(8, [[[0, 4], [2, 4]], [[4, 2]]], [[[6, 1]], [[6, 1]]])")
    # program 0 stores 0..5 (its runs overlap), program 1 stores 4..5; two programs update 6 atomically
    assert pieces == [[0, 4, 1, 0], [4, 2, 2, 0], [6, 1, 0, 2], [7, 1, 0, 0]]


# ---- an out-of-bounds error: its stray lanes ---------------------------------------------------

def strays_of(page, trace, tensor="x", hover=None):
    """What the model and its words make of `tensor`'s stray lanes: its drawing (cells of single
    elements), the cells in the error's colour, the selected last program's caption, the summary,
    the card's line, and the tooltip of cell `hover`."""
    return page.evaluate("""([trace, name, hover]) => {
        const m = model.traceModel(trace);
        const tensor = m.tensors.find((t) => t.name === name);
        const view = model.tensorView(tensor, tensor.rowWidth);
        const last = m.programs.length - 1;
        const classes = Array.from(model.tensorClasses(view, model.selectionMarks(view, null), null, m.programs));
        return {
            extent: tensor.extent, notDrawn: tensor.straysNotDrawn, strays: tensor.strays,
            strayCells: model.cellRuns(model.strayCells(view)), owner: Array.from(view.owner),
            strayClass: classes.map((value, c) => value === model.CLASS_COUNT - 1 ? c : -1).filter((c) => c >= 0),
            region: model.regionsOf(m.programs[last]).find((r) => r.tensor === name),
            caption: words.programCaption(m.programs[last], m.tensors),
            summary: words.summaryText(m), note: words.strayNote(tensor), tensorNote: words.tensorNote(view),
            hover: hover === null ? null : words.tensorHoverLines(view, hover, m.programs),
            hatched: model.hatchedCells(view, model.selectionMarks(view, null), null),
        };
    }""", [trace, tensor, hover])


def test_the_lanes_an_out_of_bounds_load_reached_are_drawn_past_the_end_in_the_errors_colour(page):
    x = strays_of(page, out_of_bounds_trace(10, 4), hover=11)
    assert x["strays"] == [[10, 2]] and x["extent"] == 12 and x["notDrawn"] == 0
    # Elements 8 and 9 are program 2's own; 10 and 11 lie past x's end: the error, not the program.
    assert x["owner"] == [0, 0, 0, 0, 1, 1, 1, 1, 2, 2, -1, -1]
    assert x["strayCells"] == [[10, 2]] and x["strayClass"] == [10, 11] and x["hatched"] == []
    assert (x["region"]["offsets"], x["region"]["strays"]) == ([[8, 2]], [[10, 2]])
    # The load that went out of bounds stopped the run: it did not happen.
    assert x["caption"] == ("program (2, 0, 0) was stopped before loading x[8..9]; no lanes masked off; "
                            "out of bounds: 2 lanes past the end of x (offsets 10..11) · source line 14")
    assert x["summary"].endswith("The run stopped at program (2, 0, 0): its load on line 14 reaches "
                                 "2 lanes past the end of x (offsets 10..11).")
    assert x["note"] == "Out of bounds: 2 lanes past the end of x (offsets 10..11)."
    assert "drawn past its end (10 elements) where its stray lanes point" in x["tensorNote"]
    assert x["hover"] == ["x[11]", "1 past the end of x (10 elements)",
                          "program (2, 0, 0) loads it on line 14: out of bounds, the run's error"]


def test_stray_lanes_far_past_the_end_are_still_drawn_and_those_before_the_start_are_counted(page):
    far = strays_of(page, out_of_bounds_trace(10, 4, stray_start=100_000))
    assert far["strays"] == [[100_000, 2]] and far["extent"] == 100_002 and far["notDrawn"] == 0
    assert far["tensorNote"].startswith("1-D, drawn in rows of 4 elements")  # folded as before, binned

    many = out_of_bounds_trace(10, 4)
    many["programs"][-1]["accesses"][0]["out_of_bounds"] = [[1_000_000, 10_000]]
    x = strays_of(page, many)
    assert x["extent"] == 1_000_000 + 4096 and x["notDrawn"] == 10_000 - 4096  # the first 4,096 are in reach
    assert x["note"] == ("Out of bounds: 10,000 lanes past the end of x (offsets 1000000..1009999) "
                         "(5,904 of them not drawn: before its start or far past its end).")

    before = out_of_bounds_trace(10, 4)
    before["programs"][-1]["accesses"][0]["out_of_bounds"] = [[-3, 3]]
    x = strays_of(page, before)
    assert x["notDrawn"] == 3 and x["strayCells"] == []
    assert x["note"].startswith("Out of bounds: 3 lanes before the start of x (offsets -3..-1)")


def test_a_fetched_program_joins_the_trace_in_launch_order(page):
    sampled = vector_add_trace(1 << 30, 1024, programs=3, grid=[1 << 20, 1, 1])
    fetched = {"pid": [7, 0, 0], "accesses": [{"op": "load", "tensor": "x", "line": 14, "offsets": [[7168, 1024]], "masked": []}]}
    merged = page.evaluate("""([trace, program]) => {
        const once = model.withProgram(trace, program);
        const twice = model.withProgram(once, program);
        const m = model.traceModel(once);
        return { pids: once.programs.map((p) => p.pid[0]), again: twice.programs.length, fetched: [once.fetched, twice.fetched],
                 index: model.indexOfPid(m, [7, 0, 0]), summary: words.summaryText(m), untouched: trace.programs.length };
    }""", [sampled, fetched])
    assert merged["pids"] == [0, 1, 2, 7] and merged["again"] == 4 and merged["untouched"] == 3
    assert merged["fetched"] == [1, 1] and merged["index"] == 3
    assert "Showing 4 of 1,048,576 programs (a sample, and 1 program fetched on request)" in merged["summary"]


# ---- the program grid and the words ----------------------------------------------------------

def test_a_2d_grid_has_a_cell_per_program_and_outlines_the_selected_one(page):
    grid = page.evaluate("""(trace) => {
        const m = model.traceModel(trace);
        const g = model.gridCells(m, 0, model.indexOfPid(m, [1, 1, 0]));
        return { cols: g.layout.cellCols, rows: g.layout.cellRows, cellProgram: Array.from(g.cellProgram),
                 selected: g.selectedCells, pid: model.pidOfGridCell(m, g, 4), twoD: g.twoD };
    }""", vector_add_trace(10, 4, rows=2))
    assert (grid["cols"], grid["rows"], grid["twoD"]) == (3, 2, True)
    assert grid["cellProgram"] == [0, 1, 2, 3, 4, 5]
    assert grid["selected"] == [4] and grid["pid"] == [1, 1, 0]


def test_the_caption_says_what_a_program_did(page):
    caption = page.evaluate("""(trace) => { const m = model.traceModel(trace);
        return words.programCaption(m.programs[2], m.tensors); }""", vector_add_trace(10, 4))
    assert caption == ("program (2, 0, 0) loads x[8..9], y[8..9], stores out[8..9]; 2 lanes masked off (offsets 10..11)"
                       " · source lines 14, 15, 17")


def test_the_formatting_of_every_pane(page):
    assert page.evaluate("""[format.formatPid([2, 0, 0]), format.formatPid(3), format.formatCount(1048576), format.formatCount(null),
        format.formatMs(0.0149), format.formatMs(231), format.formatMs(2400), format.formatElapsed(840), format.formatElapsed(3140),
        format.formatBytes(120), format.formatBytes(100663296), format.formatRate(2950, 'GB/s'), format.formatRate(0.5321, 'TFLOP/s'),
        format.formatNumber(1.3e-6), format.formatNumber(0.25), format.formatOrdinal(3), format.formatOrdinal(12), format.plural(1, 'lane')]""") == [
        "(2, 0, 0)", "3", "1,048,576", "–", "14.9 µs", "231 ms", "2.40 s", "840 ms", "3.1 s", "120 B", "101 MB",
        "2,950 GB/s", "0.532 TFLOP/s", "1.30e-6", "0.250", "3rd", "12th", "1 lane"]
