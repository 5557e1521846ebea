"""Step through one program: sandbox.trace.stepper replays it alone in the interpreter, with its locals
after each line and each line's loads and stores, bounded; and the Step panel in a browser."""
import os

import pytest

from tests.support.kernels import vector_add_spec

RUN_TIMEOUT_MS = 60_000
SHOTS = "/tmp/shots"


def stepped(spec, pid):
    from sandbox.run.pipeline import run_spec
    return run_spec({**spec, "options": {**spec["options"], "device": "interpreter", "step_pid": pid}})


def value_of(steps, index):
    return steps["values"][index]


def test_the_last_program_of_a_masked_add_step_by_step():
    result = stepped(vector_add_spec(n=10, block=4), [2])
    assert result["status"] == "ok" and result["trace"] is None
    steps = result["steps"]
    assert steps["pid"] == [2, 0, 0] and steps["grid"] == [3, 1, 1] and steps["function"] == "add_kernel"
    assert [s["line"] for s in steps["steps"]] == [7, 8, 9, 10, 11, 12]
    by_line = {s["line"]: s for s in steps["steps"]}
    assert value_of(steps, by_line[7]["set"]["pid"])["values"] == [2]
    assert value_of(steps, by_line[8]["set"]["offs"])["values"] == [8, 9, 10, 11]
    assert value_of(steps, by_line[9]["set"]["mask"]) == {"shape": [4], "dtype": "int1", "kind": "mask",
                                                          "values": [True, True, False, False]}
    pointer = value_of(steps, steps["initial"]["out_ptr"])
    assert pointer["kind"] == "pointer" and pointer["tensor"] == "out" and pointer["values"] == [0]
    start, end = by_line[12]["accesses"]
    assert steps["accesses"][start:end] == [{"op": "store", "tensor": "out", "line": 12, "offsets": [[8, 2]],
                                             "masked": [[10, 2]]}]


def test_a_loop_shows_each_iteration_and_a_big_tile_is_summarised():
    from app import gallery
    spec = gallery.load_example("matmul")["spec"]
    result = stepped(spec, [1, 0])
    steps = result["steps"]
    assert result["status"] == "ok" and steps["pid"] == [1, 0, 0]
    lines = [s["line"] for s in steps["steps"]]
    loop_lines = {line for line in lines if lines.count(line) > 1}
    assert len(loop_lines) >= 3  # the K loop's body, once per iteration
    tiles = [v for v in steps["values"] if v["kind"] == "tile" and "summary" in v]
    assert tiles and all(len(v["values"]) == 16 * 16 and v["corner"] == [16, 16] for v in tiles)
    assert steps["truncated"] is False


def test_a_statement_over_two_lines_is_one_step_per_iteration():
    """Python reports `a = tl.load(...,\n mask=...)` as it moves between its two lines (48, 49, 48,
    49, ...): the replay makes it one step per iteration, at its first line, with both lines."""
    from app import gallery
    spec = gallery.load_example("matmul")["spec"]
    source = spec["source"].splitlines()
    load_a = next(i + 1 for i, text in enumerate(source) if text.strip().startswith("a = tl.load("))
    loop = next(i + 1 for i, text in enumerate(source) if text.strip().startswith("for k in range("))
    steps = stepped(spec, [1, 0])["steps"]["steps"]
    lines = [s["line"] for s in steps]
    assert load_a + 1 not in lines  # the mask's line is part of the load's step
    assert lines.count(load_a) == 3 == lines.count(load_a + 2)  # the K loop runs 3 times: 3 loads of a, of b
    assert all(a != b for a, b in zip(lines, lines[1:]))  # never the same statement twice in a row
    assert lines.count(loop) == 4  # the for's header: 3 iterations and the exit
    load = next(s for s in steps if s["line"] == load_a)
    assert load["end_line"] == load_a + 1 and load["accesses"][1] - load["accesses"][0] == 1  # one load of a


def test_statements_of_a_kernel_own_their_lines():
    import ast

    from sandbox.trace.stepper import statements
    function = ast.parse("def k(x):\n"
                         "    for i in range(0,\n"
                         "                   3):\n"
                         "        y = f(x,\n"
                         "              mask=m)\n"
                         "    return y\n").body[0]
    assert statements(function) == {2: (2, 3), 3: (2, 3), 4: (4, 5), 5: (4, 5), 6: (6, 6)}


def test_a_failing_program_stops_at_its_line_with_the_offending_offsets():
    source = vector_add_spec()["source"].replace("x = tl.load(x_ptr + offs, mask=mask)", "x = tl.load(x_ptr + offs)")
    result = stepped(vector_add_spec(n=10, block=4, source=source), [2])
    assert result["status"] == "error" and result["error"]["type"] == "OutOfBounds" and result["error"]["line"] == 10
    steps = result["steps"]
    assert steps["steps"][-1]["line"] == 10
    assert steps["accesses"][-1]["tensor"] == "x" and steps["accesses"][-1]["line"] == 10


def test_a_program_outside_the_grid_is_refused():
    result = stepped(vector_add_spec(n=10, block=4), [5])
    assert result["error"]["field"] == "options.step_pid" and "outside the grid (3, 1, 1)" in result["error"]["message"]
    from sandbox.spec import SpecError, normalize
    with pytest.raises(SpecError, match="options.step_pid"):
        normalize({**vector_add_spec(), "options": {"step_pid": [-1]}})


# ---- the Step tab in a browser -----------------------------------------------------------------

def shot(page, name):
    os.makedirs(SHOTS, exist_ok=True)
    page.screenshot(path=f"{SHOTS}/{name}.png")


def step_through(page, pid):
    for axis, value in enumerate(pid):
        page.fill(f'.step-pid[aria-label="program id, axis {axis}"]', str(value))
    page.click("#step-button")
    page.wait_for_selector("#step-where, #step .error-card", timeout=RUN_TIMEOUT_MS)


@pytest.mark.browser
def test_step_through_a_program_of_matmul(browser, live_server):
    context = browser.new_context(viewport={"width": 1440, "height": 900})
    page = context.new_page()
    errors = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    page.goto(f"{live_server}/examples/matmul")
    page.wait_for_function("window.playground !== undefined")
    page.click('[data-tab="step"]')
    step_through(page, [1, 0, 0])
    where = page.inner_text("#step-where")
    assert where.startswith("step 1 of ")
    total = int(where.split(" of ")[1].split(" ")[0])
    assert int(page.get_attribute("#step", "data-replay-ms")) < 5000
    # Walk to the second visit of the K loop's dot line: the slider is the iteration control.
    source = page.evaluate("window.playground.getSpec().source").splitlines()
    dot_line = next(i + 1 for i, text in enumerate(source) if "tl.dot(" in text)
    for _ in range(total):
        if f"line {dot_line} · visit 2" in page.inner_text("#step-where"):
            break
        page.click("#step-next")
    assert f"line {dot_line} · visit 2 of" in page.inner_text("#step-where")
    acc = page.locator('#step-locals tr[data-name="acc"]')
    assert "tile fp32" in acc.inner_text() and "min" in acc.inner_text()
    assert page.locator('#step-locals tr.changed[data-name="acc"]').count() == 1
    highlighted = page.evaluate("document.querySelector('.cm-activeLine, .cm-linked-line') !== null")
    assert highlighted
    shot(page, "step-matmul")
    # Back to the first line with a load: its access is listed with the tensor and elements.
    page.fill("#step-slider", "0")
    page.dispatch_event("#step-slider", "input")
    assert "step 1 of" in page.inner_text("#step-where")
    context.close()
    assert not errors, errors


@pytest.mark.browser
def test_step_through_walks_a_two_line_load_once_per_iteration(browser, live_server):
    """1280 x 720: the matmul's `a = tl.load(...,\n mask=...)` is one step per K iteration, "visit 1
    of 3", and the editor marks both of its lines."""
    context = browser.new_context(viewport={"width": 1280, "height": 720})
    page = context.new_page()
    page.goto(f"{live_server}/examples/matmul")
    page.wait_for_function("window.playground !== undefined")
    source = page.evaluate("window.playground.getSpec().source").splitlines()
    load_a = next(i + 1 for i, text in enumerate(source) if text.strip().startswith("a = tl.load("))
    page.click('[data-tab="step"]')
    step_through(page, [1, 0, 0])
    seen = []
    while not page.is_disabled("#step-next"):
        where = page.inner_text("#step-where")
        if f"lines {load_a}–{load_a + 1}" in where:
            seen.append(where.split(" · ", 2)[2])
            if len(seen) == 1:
                marked = page.evaluate("[...document.querySelectorAll('.cm-linked-line')].length")
                assert marked == 2
                assert page.inner_text("#step-accesses").count("loads a") == 1
                shot(page, "step-two-line-load")
        page.click("#step-next")
    assert seen == ["visit 1 of 3", "visit 2 of 3", "visit 3 of 3"]
    context.close()


@pytest.mark.browser
def test_step_through_a_failing_program_stops_at_its_line(browser, live_server):
    context = browser.new_context(viewport={"width": 1440, "height": 900})
    page = context.new_page()
    page.goto(f"{live_server}/examples/vector_add")
    page.wait_for_function("window.playground !== undefined")
    page.evaluate("""() => { const spec = window.playground.getSpec();
        spec.source = spec.source.replace('x = tl.load(x_ptr + offsets, mask=mask)', 'x = tl.load(x_ptr + offsets)');
        window.playground.setSpec(spec); }""")
    page.click('[data-tab="step"]')
    step_through(page, [96, 0, 0])
    assert "out of bounds" in page.inner_text("#step").lower() or "OutOfBounds" in page.inner_text("#step")
    where = page.inner_text("#step-where")
    total = where.split(" of ")[1].split(" ")[0]
    assert where.startswith(f"step {total} of {total}")  # it opens on the failing line
    assert "loads x" in page.inner_text("#step-accesses")
    shot(page, "step-error")
    context.close()


@pytest.mark.browser
def test_step_through_the_program_selected_in_the_diagram(browser, live_server):
    context = browser.new_context(viewport={"width": 1440, "height": 900})
    page = context.new_page()
    page.goto(f"{live_server}/examples/masked_tail")
    page.wait_for_function("window.playground !== undefined")
    page.click("#run-button")
    page.wait_for_function("['ok', 'mismatch', 'error'].includes(document.querySelector('#status-line').dataset.state)",
                           timeout=RUN_TIMEOUT_MS)
    state = page.evaluate("document.querySelector('#status-line').dataset.state")
    assert state == "ok", page.inner_text("#status-line") + page.inner_text("#results")
    page.click("[data-tab=diagram]")
    page.wait_for_selector(".diagram-grid-plot .nsewdrag", timeout=RUN_TIMEOUT_MS)
    page.fill(".diagram-slider", "2")
    page.dispatch_event(".diagram-slider", "input")
    page.click('.diagram-controls button:has-text("Step through")')
    page.wait_for_selector("#step-where", timeout=RUN_TIMEOUT_MS)
    assert page.is_visible("#step") and "Program (2, 0, 0)" in page.inner_text("#step")
    context.close()
