"""The whole playground in a real browser: the page served by the app, kernels run by real workers.

Each test does what a person would do (click Run, break the kernel, pick a program, share a link)
and checks what the page then shows.
"""
import json
import re
import sqlite3
import uuid
from contextlib import closing

import pytest

from tests.support.results_by_hand import (ATOMIC_RESULT, FIELD_ERRORS, GPU_RESULT, GPU_RESULT_NO_COMPUTE_PEAK, GPU_RESULT_NO_FLOPS,
                                LAUNCH_ERROR, OLD_SHAPE_ERROR, RACE_RESULT)
from tests.support.browser import new_page, page_without_errors

RUN_TIMEOUT_MS = 60_000

pytestmark = pytest.mark.browser


@pytest.fixture
def page(browser):
    with page_without_errors(browser) as page:
        yield page


# ---- what a person does ----------------------------------------------------------------------

def open_playground(page, url):
    page.goto(url)
    page.wait_for_function("window.playground !== undefined")


def run_and_wait(page, start=lambda page: page.click("#run-button")):
    start(page)
    page.wait_for_function("['ok', 'mismatch', 'error'].includes(document.querySelector('#status-line').dataset.state)",
                           timeout=RUN_TIMEOUT_MS)
    return page.get_attribute("#status-line", "data-state")


def badge_of(page, output):
    return page.inner_text(f'#results [data-output="{output}"] .badge')


def open_diagram(page):
    page.click("[data-tab=diagram]")
    page.wait_for_selector(".diagram-grid-plot .nsewdrag")


def click_program(page, index, count):
    """Clicks the index-th of `count` programs in a one-row program grid."""
    area = page.locator(".diagram-grid-plot .nsewdrag").bounding_box()
    page.mouse.click(area["x"] + area["width"] * (index + 0.5) / count, area["y"] + area["height"] / 2)


def selected_pid(page):
    return page.get_attribute("#diagram", "data-selected-pid")


def tensor_cells(page, tensor):
    """The [start, length] runs of cells the tensor's figure draws as the selected program's, and as masked lanes."""
    figure = page.locator(f'.diagram-tensor[data-tensor="{tensor}"]')
    return json.loads(figure.get_attribute("data-highlighted-cells")), json.loads(figure.get_attribute("data-masked-cells"))


def inject_result(page, result):
    """Shows `result` as if the server had sent it: results a CPU-only server cannot produce (GPU runs),
    and results of a given shape (tests/support/results_by_hand.py)."""
    page.evaluate("async (result) => { const { emit } = await import('/static/js/shared/hub.js'); emit('run-result', { run_id: null, result }); }",
                  result)


def editor_lines(page, selector):
    return page.eval_on_selector_all(f".cm-editor {selector}", "lines => lines.map(l => l.textContent)")


def visible_in(page, inner, outer):
    """Whether element `inner` lies inside the visible box of `outer` (both selectors)."""
    a, b = page.locator(inner).bounding_box(), page.locator(outer).bounding_box()
    return b["y"] <= a["y"] and a["y"] + a["height"] <= b["y"] + b["height"]


def overlap(a, b):
    return a["x"] < b["x"] + b["width"] and b["x"] < a["x"] + a["width"] and a["y"] < b["y"] + b["height"] and b["y"] < a["y"] + a["height"]


def share(page):
    page.click("#share-button")
    page.wait_for_function("document.querySelector('#share-url').value !== ''")
    return page.input_value("#share-url")


def share_from_elsewhere(page, live_server, example, ui):
    """A link saved by someone else: posted straight to the API, never through this browser's Share button."""
    spec = page.request.get(f"{live_server}/api/examples/{example}").json()["spec"]
    response = page.request.post(f"{live_server}/api/snippets", data={"spec": spec, "ui": ui})
    assert response.ok, response.text()
    return response.json()["url"]


def record_runs(page):
    """The payload of every Socket.IO `run` event the page sends, as it leaves the page (a WebSocket
    frame, or the body of a long-polling POST before the upgrade). Call before opening the page."""
    sent = []

    def packets(text):
        for packet in (text if isinstance(text, str) else text.decode(errors="replace")).split("\x1e"):
            match = re.match(r"42\d*(\[.*)", packet, re.S)  # engine.io message, socket.io event, ack id
            if match:
                name, *args = json.loads(match.group(1))
                if name == "run":
                    sent.append(args[0])

    page.on("websocket", lambda ws: ws.on("framesent", packets))
    page.on("request", lambda request: request.method == "POST" and "/socket.io/" in request.url
            and request.post_data and packets(request.post_data))
    return sent


# ---- tests -----------------------------------------------------------------------------------

def test_run_on_the_default_page_shows_the_output_matches(page, live_server):
    open_playground(page, live_server + "/")
    assert "Press Run" in page.inner_text("#status-line")

    assert run_and_wait(page) == "ok"
    assert "outputs match" in page.inner_text("#status-line")
    assert badge_of(page, "out") == "ok"
    assert page.inner_text("#run-button .run-label") == "Run"


def test_ctrl_enter_in_the_editor_runs_the_kernel(page, live_server):
    open_playground(page, live_server + "/")
    source = page.evaluate("window.playground.getSpec().source")
    page.click(".cm-content")

    assert run_and_wait(page, lambda page: page.keyboard.press("Control+Enter")) == "ok"
    assert badge_of(page, "out") == "ok"
    assert page.evaluate("window.playground.getSpec().source") == source  # the key ran; it typed no newline


def test_a_syntax_error_is_shown_in_the_error_card_and_on_its_line(page, live_server):
    open_playground(page, live_server + "/examples/masked_tail")
    page.click(".cm-content")
    page.keyboard.press("Control+End")
    page.keyboard.type("x = 1 +")
    line = page.evaluate("(() => { const s = window.playground.editorView.state; return s.doc.lineAt(s.selection.main.head).number; })()")

    assert run_and_wait(page) == "error"
    assert page.text_content("#error-card .phase") == "parse error"
    assert page.text_content("#error-card .type") == "SyntaxError"
    assert page.text_content("#error-card .where") == f"line {line}"
    assert page.inner_text(".cm-error-gutter") == str(line)
    assert "x = 1 +" in page.inner_text(".cm-error-line")

    page.click("#error-card .link-button")  # "line N" puts the cursor on the broken line
    assert page.evaluate("(() => { const s = window.playground.editorView.state; return s.doc.lineAt(s.selection.main.head).number; })()") == line


def test_an_unmapped_argument_is_named_and_its_field_outlined_until_the_next_run(page, live_server):
    open_playground(page, live_server + "/examples/masked_tail")
    page.fill("input[data-param=n]", "")
    assert run_and_wait(page) == "error"
    assert "argument 'n'" in page.inner_text("#error-card")
    assert page.locator("input.error-field").count() == 1
    assert page.get_attribute("input.error-field", "data-param") == "n"
    page.fill("input[data-param=n]", "x.numel()")
    assert run_and_wait(page) == "ok"
    assert page.locator("input.error-field").count() == 0


def test_the_diagram_shows_the_last_programs_stored_and_masked_elements(page, live_server):
    open_playground(page, live_server + "/examples/masked_tail")
    assert run_and_wait(page) == "ok"
    open_diagram(page)

    click_program(page, 2, 3)
    page.wait_for_function("document.querySelector('#diagram').dataset.selectedPid === '2,0,0'")
    assert tensor_cells(page, "out") == ([[8, 2]], [[10, 2]])
    assert tensor_cells(page, "x") == ([[8, 2]], [[10, 2]])
    caption = page.inner_text(".diagram-caption")
    assert caption.startswith("program (2, 0, 0) loads x[8..9], y[8..9], stores out[8..9]")
    assert "2 lanes masked off (offsets 10..11)" in caption

    page.get_by_role("button", name="Prev").click()
    page.wait_for_function("document.querySelector('#diagram').dataset.selectedPid === '1,0,0'")
    assert tensor_cells(page, "out") == ([[4, 4]], [])


def test_a_shared_link_restores_an_edited_spec_without_a_run(browser, page, live_server):
    open_playground(page, live_server + "/examples/masked_tail")
    page.fill("#grid-input", "(3,)")
    page.fill("input[data-param=BLOCK_SIZE]", "8")
    page.fill("#inputs-table tr[data-input=x] .cell-shape input", "12")
    page.evaluate("""() => { const v = window.playground.editorView;
        v.dispatch({changes: {from: 0, insert: '# my notes\\n'}}); }""")
    page.wait_for_timeout(400)  # the launch form follows the source after a short pause
    spec = page.evaluate("window.playground.getSpec()")

    url = share(page)
    assert "/s/" in url
    assert page.evaluate("location.pathname") == url[url.index("/s/"):]

    other = new_page(browser)
    try:
        open_playground(other, url)
        assert other.evaluate("window.playground.getSpec()") == spec
        assert other.input_value("#grid-input") == "(3,)"
        assert other.input_value("input[data-param=BLOCK_SIZE]") == "8"
        assert other.input_value("#inputs-table tr[data-input=x] .cell-shape input") == "12"
        assert other.eval_on_selector_all("#inputs-table tr[data-input]", "rows => rows.map(r => r.dataset.input)") == ["x", "y", "out"]
        assert not other.errors, other.errors
    finally:
        other.context.close()


def test_a_shared_link_opens_on_the_same_picture_and_program(browser, page, live_server):
    open_playground(page, live_server + "/examples/masked_tail")
    assert run_and_wait(page) == "ok"
    open_diagram(page)
    click_program(page, 2, 3)
    page.wait_for_function("document.querySelector('#diagram').dataset.selectedPid === '2,0,0'")
    url = share(page)

    other = new_page(browser)
    try:
        open_playground(other, url)
        assert other.get_attribute("[data-tab].active", "data-tab") == "diagram"
        # The same picture after one click on the prompt's button (a link never runs on opening).
        other.get_by_role("button", name="Run this shared kernel").click()
        other.wait_for_selector(".diagram-grid-plot .nsewdrag", timeout=60000)
        assert selected_pid(other) == "2,0,0"
        assert tensor_cells(other, "out") == ([[8, 2]], [[10, 2]])
        assert not other.errors, other.errors
    finally:
        other.context.close()


def test_embed_mode_has_only_the_run_button_and_runs(page, live_server):
    open_playground(page, live_server + "/examples/masked_tail")
    snippet_url = share(page)

    open_playground(page, snippet_url + "?embed=1")
    for chrome in ("#example-select", "#share-button", "#export-button", "[data-tab=timings]", "[data-tab=ir]"):
        assert page.locator(chrome).count() == 0, chrome
    assert page.locator("#open-full").get_attribute("href") == snippet_url[snippet_url.index("/s/"):]
    assert page.locator("#run-button").is_visible()

    assert run_and_wait(page) == "ok"
    assert badge_of(page, "out") == "ok"


def test_embed_mode_in_a_narrow_lesson_column_stacks_editor_and_results(page, live_server):
    page.set_viewport_size({"width": 680, "height": 800})
    open_playground(page, live_server + "/examples/masked_tail?embed=1")
    widths = page.eval_on_selector_all(".column-left, .column-right", "cols => cols.map(c => c.getBoundingClientRect().width)")
    assert all(width > 600 for width in widths), widths
    assert run_and_wait(page) == "ok"


def test_an_unknown_snippet_gets_a_not_found_page_with_a_way_home(page, live_server):
    response = page.goto(live_server + "/s/doesnotexist")
    assert response.status == 404
    page.errors.clear()  # the browser logs the 404 itself as a console error
    assert page.inner_text("h1") == "Not found"
    assert "doesnotexist" in page.inner_text(".error-message")
    assert page.title() == "Not found · Triton Playground"

    page.get_by_role("link", name="Open the playground").click()
    page.wait_for_function("window.playground !== undefined")
    assert page.evaluate("location.pathname") == "/examples/vector_add"  # the address names the example shown


def test_the_page_opens_on_the_kernel_not_the_prose_above_it(page, live_server):
    open_playground(page, live_server + "/")
    page.wait_for_timeout(200)
    decorator = page.locator(".cm-line", has_text="@triton.jit")
    assert decorator.count() == 1 and visible_in(page, ".cm-line:has-text('@triton.jit')", ".cm-scroller")


def test_a_programs_source_lines_are_unmarked_by_an_edit_and_by_a_new_run(page, live_server):
    open_playground(page, live_server + "/examples/masked_tail")
    assert run_and_wait(page) == "ok"
    open_diagram(page)
    click_program(page, 2, 3)
    page.wait_for_function("document.querySelectorAll('.cm-program-line').length > 0")
    assert any("tl.store" in line for line in editor_lines(page, ".cm-program-line"))

    page.evaluate("window.playground.editorView.dispatch({changes: {from: 0, insert: '# edited\\n'}})")
    assert editor_lines(page, ".cm-program-line") == []  # the marks would sit one line off now

    click_program(page, 1, 3)
    page.wait_for_function("document.querySelectorAll('.cm-program-line').length > 0")
    page.click("[data-tab=results]")
    assert run_and_wait(page) == "ok"
    assert editor_lines(page, ".cm-program-line") == []


def test_the_error_card_says_phase_line_program_and_message_once_with_the_hint(page, live_server):
    open_playground(page, live_server + "/examples/masked_tail")
    page.fill("input[data-param=BLOCK_SIZE]", "3")
    assert run_and_wait(page) == "error"
    assert page.text_content("#error-card .phase") == "launch error"
    assert page.text_content("#error-card .type") == "ValueError"
    assert page.eval_on_selector_all("#error-card .where button", "buttons => buttons.map(b => b.textContent)") == [
        "line 35", "program (0, 0, 0)"]
    assert page.text_content("#error-card pre") == "arange's range must be a power of 2"  # no "ValueError: " again
    assert "triton.next_power_of_2" in page.text_content("#error-card .hint")

    page.fill("input[data-param=BLOCK_SIZE]", "4")
    page.evaluate("""() => { const v = window.playground.editorView, text = v.state.doc.toString();
        const load = 'tl.load(x_ptr + offsets, mask=mask)', at = text.indexOf(load);
        v.dispatch({changes: {from: at, to: at + load.length, insert: 'tl.load(x_ptr + offsets)'}}); }""")
    assert run_and_wait(page) == "error"
    assert page.text_content("#error-card .type") == "OutOfBounds"
    assert page.text_content("#error-card pre").startswith("program (2, 0, 0) loads x at offsets 10..11")  # no "line 37: "


def test_a_share_link_opens_beside_the_button_and_leaves_the_verdict_visible(page, live_server):
    open_playground(page, live_server + "/examples/masked_tail")
    assert run_and_wait(page) == "ok"
    share(page)
    assert page.locator("#share-popover").is_visible()
    assert not overlap(page.locator("#share-popover").bounding_box(), page.locator("#status-line .verdict").bounding_box())


def test_interpreter_timings_give_bytes_and_wall_clock_but_no_bandwidth(page, live_server):
    open_playground(page, live_server + "/examples/masked_tail")
    assert run_and_wait(page) == "ok"
    page.click("[data-tab=timings]")
    text = page.inner_text("#timings")
    assert "Interpreter wall-clock" in text and "120 B" in text and "from the trace" in text
    assert "GB/s" not in text
    assert page.locator("#timings .roofline, #timings .roofline-hint").count() == 0  # no bandwidth claims, no roofline


def test_the_ir_tab_says_it_was_compiled_without_a_gpu_and_names_kernel_py(page, live_server):
    open_playground(page, live_server + "/examples/masked_tail")
    assert run_and_wait(page) == "ok"
    page.click("[data-tab=ir]")
    assert "No GPU on this server" in page.inner_text(".ir-notes") and "sm90" in page.inner_text(".ir-notes")
    ir = page.inner_text(".ir-view .cm-content")
    assert 'loc("kernel.py":' in ir and "/tmp/" not in ir


def test_gpu_timings_show_the_autotune_table_ceilings_and_notes(page, live_server):
    open_playground(page, live_server + "/examples/matmul")
    inject_result(page, GPU_RESULT)
    page.click("[data-tab=timings]")
    rows = page.locator("table.autotune tbody tr")
    assert rows.count() == 3
    assert page.eval_on_selector_all("table.autotune tbody tr", "rows => rows.map(r => r.classList.contains('chosen'))") == [True, False, False]
    assert rows.nth(0).inner_text().split() == ["128", "8", "3", "231", "µs", "chosen"]
    text = page.inner_text("#timings")
    assert "15% of the measured copy bandwidth" in text and "measured copy bandwidth 2,950\u00a0GB/s" in text
    assert "60% of the peak" in text and "fp16/bf16 tensor core" in text
    assert "The autotuner timed each config" in page.inner_text("#timings .notes")


def test_a_run_without_a_trace_says_why_in_the_results_and_the_diagram(page, live_server):
    open_playground(page, live_server + "/examples/matmul")
    inject_result(page, GPU_RESULT)
    assert "The trace and bounds check stopped" in page.inner_text("#results .notes")
    page.click("[data-tab=diagram]")
    assert page.inner_text("#diagram") == "No diagram for this run: the trace and bounds check stopped after 10 s, at program 2048 of 65536"


def roofline(page):
    """The roofline's traces by name, as plotly holds them."""
    traces = page.evaluate("document.querySelector('.roofline-plot').data.map(t => ({name: t.name, x: t.x, y: t.y}))")
    return {trace["name"]: trace for trace in traces}


def test_gpu_timings_draw_a_roofline_with_the_kernel_under_both_ceilings(page, live_server):
    open_playground(page, live_server + "/examples/matmul")
    inject_result(page, GPU_RESULT)
    assert page.locator(".roofline-plot.js-plotly-plot").count() == 0  # plotly waits until the tab is seen
    page.click("[data-tab=timings]")
    page.wait_for_selector(".roofline-plot .scatterlayer .point")

    assert page.evaluate("['xaxis', 'yaxis'].map(a => document.querySelector('.roofline-plot').layout[a].type)") == ["log", "log"]
    traces = roofline(page)
    memory = traces["memory roof: 2,950 GB/s (measured copy)"]
    compute = traces["compute roof: 990 TFLOP/s (fp16/bf16 tensor core, dense (datasheet))"]
    kernel = traces["this kernel"]
    intensity = 2 * 4096 ** 3 / 100663296  # FLOP per byte
    assert kernel["x"] == [pytest.approx(intensity)] and kernel["y"] == [595.0]
    assert [y / x for x, y in zip(memory["x"], memory["y"])] == [pytest.approx(2.95)] * 2  # TFLOP/s per FLOP/B
    ridge = 989.5 / 2.95
    assert memory["x"][1] == pytest.approx(ridge) and compute["x"][0] == pytest.approx(ridge)
    assert compute["y"] == [989.5, 989.5]
    legend = page.eval_on_selector_all(".roofline-plot .legendtext", "items => items.map(i => i.textContent)")
    assert legend == list(traces)
    assert "right of the ridge at 335 FLOP/B, so compute-bound; 60% of the roof" in page.inner_text(".roofline .caption")

    # A new result replaces the plot: the old one is purged, the new one has only the memory roof.
    page.evaluate("window.oldRoofline = document.querySelector('.roofline-plot')")
    inject_result(page, GPU_RESULT_NO_COMPUTE_PEAK)
    page.wait_for_selector(".roofline-plot .scatterlayer .point")
    assert page.evaluate("!window.oldRoofline.isConnected && window.oldRoofline.data === undefined")
    assert page.locator("#timings .js-plotly-plot").count() == 1
    assert list(roofline(page)) == ["memory roof: 2,950 GB/s (measured copy)", "this kernel"]


def test_gpu_timings_without_a_flop_count_say_how_to_get_the_roofline(page, live_server):
    open_playground(page, live_server + "/examples/matmul")
    inject_result(page, GPU_RESULT_NO_FLOPS)
    page.click("[data-tab=timings]")
    assert page.inner_text(".roofline-hint") == "No roofline without a FLOP count: set FLOPs in the Options row (e.g. 2 * M * N * K) and run again."
    assert page.locator("#timings .js-plotly-plot").count() == 0


def test_the_flop_count_goes_from_the_form_into_the_run_and_a_share_link(browser, page, live_server):
    open_playground(page, live_server + "/examples/matmul")
    assert page.input_value("#opt-flops") == "2 * M * N * K"  # the gallery's own
    page.fill("#opt-flops", "2 * M * N * K + M * N")
    assert page.evaluate("window.playground.getSpec().options.flops") == "2 * M * N * K + M * N"

    assert run_and_wait(page) == "ok"
    page.click("[data-tab=timings]")
    assert "3.16 MFLOP" in page.inner_text("#timings")  # the server evaluated it: 2·128·128·96 + 128·128

    spec = page.evaluate("window.playground.getSpec()")
    url = share(page)
    other = new_page(browser)
    try:
        open_playground(other, url)
        assert other.input_value("#opt-flops") == "2 * M * N * K + M * N"
        assert other.evaluate("window.playground.getSpec()") == spec
        assert not other.errors, other.errors
    finally:
        other.context.close()

    page.fill("#opt-flops", "3e6")
    assert page.evaluate("window.playground.getSpec().options.flops") == 3_000_000
    page.fill("#opt-flops", "")
    assert page.evaluate("window.playground.getSpec().options.flops") is None


def test_picking_sm80_in_the_ir_tab_runs_again_and_shows_sm80_ir(browser, page, live_server):
    open_playground(page, live_server + "/examples/masked_tail")
    assert run_and_wait(page) == "ok"
    page.click("[data-tab=ir]")
    assert page.input_value("select[aria-label='IR target']") == ""  # auto
    assert page.inner_text(".ir-compiled-for") == "compiled for sm90"
    page.evaluate("async () => { const { on } = await import('/static/js/shared/hub.js'); window.runs = 0; on('run-started', () => window.runs++); }")

    page.select_option("select[aria-label='IR target']", "sm80")
    page.wait_for_function("document.querySelector('.ir-compiled-for')?.textContent === 'compiled for sm80'", timeout=RUN_TIMEOUT_MS)
    assert page.evaluate("window.runs") == 1
    # the IR arrives as a part, a moment before the whole result that ends the run
    page.wait_for_function("() => document.querySelector('#status-line').dataset.state === 'ok'", timeout=RUN_TIMEOUT_MS)
    page.click(".ir-stage[data-stage=ptx]")
    assert ".target sm_80" in page.inner_text(".ir-view .cm-content")
    assert page.evaluate("window.playground.getSpec().options.arch") == "sm80"

    url = share(page)
    other = new_page(browser)
    try:
        open_playground(other, url)
        other.click("[data-tab=ir]")
        assert other.input_value("select[aria-label='IR target']") == "sm80"
        assert other.evaluate("window.playground.getSpec().options.arch") == "sm80"
        assert not other.errors, other.errors
    finally:
        other.context.close()


def test_a_new_meta_parameter_value_reruns_at_once(page, live_server):
    open_playground(page, live_server + "/examples/masked_tail")
    assert run_and_wait(page) == "ok"
    assert "3 programs" in page.inner_text("#status-line")
    page.evaluate("""() => {
        window.runsSeen = 0;
        new MutationObserver(() => { if (document.querySelector('#status-line').dataset.state === 'running') window.runsSeen++; })
            .observe(document.querySelector('#status-line'), { attributes: true });
    }""")

    page.fill('input[data-param="BLOCK_SIZE"]', "8")
    page.press('input[data-param="BLOCK_SIZE"]', "Enter")  # no Run click: the change runs
    page.wait_for_function("document.querySelector('#status-line').innerText.includes('2 programs')", timeout=RUN_TIMEOUT_MS)
    assert page.get_attribute("#status-line", "data-state") == "ok"

    page.select_option("#opt-num_warps", "2")
    page.wait_for_function("window.runsSeen >= 2 && document.querySelector('#status-line').dataset.state === 'ok'",
                           timeout=RUN_TIMEOUT_MS)
    assert page.evaluate("window.playground.getSpec().options.num_warps") == 2


# ---- shared links: someone else's code runs only when asked, and apart from ours ----------------

def test_a_shared_link_runs_nothing_until_its_button_then_shows_the_result_and_the_diagram(browser, page, live_server):
    url = share_from_elsewhere(page, live_server, "masked_tail", {"pane": "diagram", "pid": [2, 0, 0]})
    victim = new_page(browser)
    runs = record_runs(victim)
    try:
        open_playground(victim, url)
        assert victim.get_attribute("[data-tab].active", "data-tab") == "diagram"  # the tab it was shared on
        prompt = victim.locator("#link-prompt")
        assert prompt.is_visible() and "someone else wrote, in a sandbox" in prompt.inner_text()
        button = victim.get_by_role("button", name="Run this shared kernel")
        assert button.is_visible()
        assert "def add_kernel" in victim.evaluate("window.playground.getSpec().source")  # the kernel is there to read
        assert victim.input_value("#grid-input")  # and its launch

        victim.wait_for_timeout(2000)
        assert runs == []
        assert victim.get_attribute("#status-line", "data-state") == "idle"
        assert victim.locator(".diagram-grid-plot").count() == 0

        button.click()
        victim.wait_for_function("document.querySelector('#status-line').dataset.state === 'ok'", timeout=RUN_TIMEOUT_MS)
        assert victim.locator("#link-prompt").count() == 0
        victim.wait_for_selector(".diagram-grid-plot .nsewdrag", timeout=RUN_TIMEOUT_MS)
        assert selected_pid(victim) == "2,0,0"  # the program it was shared with
        assert tensor_cells(victim, "out") == ([[8, 2]], [[10, 2]])
        victim.click("[data-tab=results]")
        assert badge_of(victim, "out") == "ok"
        assert len(runs) == 1 and runs[0]["from_link"] is True
        assert not victim.errors, victim.errors
    finally:
        victim.context.close()


def test_runs_of_someone_elses_link_say_from_link_even_after_its_kernel_is_edited(browser, page, live_server):
    url = share_from_elsewhere(page, live_server, "masked_tail", {"pane": "results", "pid": None})
    victim = new_page(browser)
    runs = record_runs(victim)
    try:
        open_playground(victim, url)
        assert victim.get_attribute("[data-tab].active", "data-tab") == "results"
        victim.wait_for_timeout(500)
        assert runs == []

        assert run_and_wait(victim) == "ok"  # the top bar's Run is a choice to run it too
        assert victim.locator("#link-prompt").count() == 0
        assert run_and_wait(victim) == "ok"
        assert [run.get("from_link") for run in runs] == [True, True]

        victim.click(".cm-content")
        victim.keyboard.press("Control+End")
        victim.keyboard.type("\n# my change\n")
        assert run_and_wait(victim) == "ok"  # its inputs, arguments and grid are still the link's code
        assert runs[2]["from_link"] is True and "# my change" in runs[2]["spec"]["source"]
        assert not victim.errors, victim.errors
    finally:
        victim.context.close()


def test_a_link_saved_in_this_browser_is_its_own_and_the_gallery_runs_as_before(page, live_server):
    runs = record_runs(page)
    open_playground(page, live_server + "/examples/masked_tail")
    assert page.locator("#link-prompt").count() == 0
    assert run_and_wait(page) == "ok"
    open_diagram(page)
    page.evaluate("window.playground.editorView.dispatch({changes: {from: 0, insert: '# mine\\n'}})")
    url = share(page)

    open_playground(page, url)  # the same browser: the link is ours
    assert "You saved this link from this browser" in page.inner_text("#link-prompt")
    page.wait_for_timeout(500)
    assert len(runs) == 1  # still not run on opening
    page.get_by_role("button", name="Run this shared kernel").click()
    page.wait_for_selector(".diagram-grid-plot .nsewdrag", timeout=RUN_TIMEOUT_MS)
    assert len(runs) == 2 and not any("from_link" in run for run in runs)


def test_saving_someone_elses_unedited_link_again_does_not_make_it_ours(browser, page, live_server):
    url = share_from_elsewhere(page, live_server, "masked_tail", {"pane": "ir", "pid": None})
    open_playground(page, url)
    assert share(page).endswith(url[url.index("/s/"):])  # the same content: the same link
    runs = record_runs(page)
    open_playground(page, url)
    assert "someone else wrote" in page.inner_text("#link-prompt")
    page.get_by_role("button", name="Run this shared kernel").click()
    page.wait_for_function("document.querySelector('.ir-compiled-for')", timeout=RUN_TIMEOUT_MS)
    assert runs[0]["from_link"] is True


def test_a_snippet_with_a_bad_ui_in_the_database_opens_on_results_without_an_error(app, page, live_server):
    spec = page.request.get(f"{live_server}/api/examples/masked_tail").json()["spec"]
    snippet_id = uuid.uuid4().hex[:12]
    body = {"spec": spec, "ui": {"pane": '"]) x', "pid": [-1, "a"], "theme": "dark"}}  # saved before the UI schema
    with closing(sqlite3.connect(app.config["DATABASE"], isolation_level=None)) as db:
        db.execute("INSERT INTO snippet (id, digest, body) VALUES (?, ?, ?)", (snippet_id, uuid.uuid4().hex, json.dumps(body)))

    open_playground(page, f"{live_server}/s/{snippet_id}")
    assert page.get_attribute("[data-tab].active", "data-tab") == "results"
    assert page.get_attribute("[data-panel].active", "data-panel") == "results"
    assert page.get_by_role("button", name="Run this shared kernel").is_visible()
    assert page.evaluate("window.playground.getSpec().source") == spec["source"]

    # The page checks the UI state again itself: a bad pane or pid is ignored, not thrown on.
    page.evaluate("""(spec) => window.playground.setSpec(spec, { pane: '"]) x', pid: [-1, 'a'] })""", spec)
    assert page.get_attribute("[data-tab].active", "data-tab") == "results"
    page.evaluate("(spec) => window.playground.setSpec(spec, 'diagram')", spec)
    assert page.get_attribute("[data-tab].active", "data-tab") == "results"
    assert not page.errors, page.errors


# ---- errors as fields, one verdict per tensor, options from the server's schema ------------------

def test_an_errors_message_hint_line_and_program_are_shown_from_its_fields(page, live_server):
    open_playground(page, live_server + "/examples/masked_tail")
    inject_result(page, LAUNCH_ERROR)
    error = LAUNCH_ERROR["error"]
    assert page.text_content("#error-card .phase") == "launch error"
    assert page.text_content("#error-card .type") == "ValueError"
    assert page.text_content("#error-card pre") == error["message"]
    assert page.text_content("#error-card .hint") == error["hint"]
    assert page.eval_on_selector_all("#error-card .where button", "buttons => buttons.map(b => b.textContent)") == [
        "line 35", "program (0, 0, 0)"]
    assert page.inner_text(".cm-error-gutter") == "35"  # the editor marks the error's line
    assert page.get_attribute("#status-line", "data-state") == "error"


def test_an_errors_field_outlines_its_control_in_the_launch_form_until_the_next_run(page, live_server):
    controls = {"args.n": "input[data-param=n]", "inputs.x": "#inputs-table tr[data-input=x] .cell-shape input",
                "grid": "#grid-input", "reference.out": "#inputs-table tr[data-input=out] .cell-ref input",
                "options.num_warps": "#opt-num_warps", "kernel": "#kernel-select"}
    assert set(controls) == set(FIELD_ERRORS)
    open_playground(page, live_server + "/examples/masked_tail")
    for field, selector in controls.items():
        inject_result(page, FIELD_ERRORS[field])
        assert page.locator(".error-field").count() == 1, field
        assert page.locator(selector).evaluate("e => e.classList.contains('error-field')"), field
    page.evaluate("async () => { const { emit } = await import('/static/js/shared/hub.js'); emit('run-started', { run_id: 'next' }); }")
    assert page.locator(".error-field").count() == 0


def test_an_error_without_a_hint_or_a_field_is_shown_as_it_comes(page, live_server):
    open_playground(page, live_server + "/examples/masked_tail")
    inject_result(page, OLD_SHAPE_ERROR)
    assert page.text_content("#error-card pre") == OLD_SHAPE_ERROR["error"]["message"]
    assert page.locator("#error-card .hint").count() == 0
    assert page.locator(".error-field").count() == 0


def coverage_verdicts(page):
    """The Results tab's coverage notes and the Diagram tab's coverage verdicts, as text."""
    results = page.eval_on_selector_all("#results .coverage-notes li", "items => items.map(i => i.textContent)")
    page.click("[data-tab=diagram]")
    page.wait_for_selector(".diagram-grid-plot .nsewdrag")
    diagram = page.eval_on_selector_all(".diagram-coverage li", "items => items.map(i => [i.className, i.textContent])")
    return results, diagram


def test_stores_of_two_programs_to_every_element_are_the_same_race_in_results_and_diagram(page, live_server):
    open_playground(page, live_server + "/examples/masked_tail")
    inject_result(page, RACE_RESULT)  # a (cdiv(n, BLOCK), 2) grid: each element of out stored by 2 programs
    assert page.inner_text("#status-line .verdict") == "✓ outputs match"  # the values agree; the stores still race
    results, diagram = coverage_verdicts(page)
    race = "10 elements of out were stored by more than one program (the last store wins, in no fixed order)."
    assert diagram == [["diagram-warn", race]]
    assert results == [race]


def test_programs_adding_atomically_into_one_element_are_no_race_in_either_pane(page, live_server):
    open_playground(page, live_server + "/examples/atomic_sum")
    inject_result(page, ATOMIC_RESULT)
    results, diagram = coverage_verdicts(page)
    assert results == []  # nothing to warn about
    assert diagram == [["diagram-ok", "Every element of out was written; out[0] was updated atomically by 10 programs "
                                      "(tl.atomic_add), which is not a race."]]
    assert "more than one" not in page.inner_text("#diagram")


def select_options(page, selector):
    return page.eval_on_selector_all(f"{selector} option", "options => options.map(o => [o.value, o.textContent, o.selected])")


def patch_initial_state(page, patch):
    """Changes the page's initial state as the parser puts it in the page (before main.js reads it)."""
    page.add_init_script(f"""new MutationObserver((records, observer) => {{
        const state = document.getElementById("initial-state");
        try {{ state.textContent = JSON.stringify({{ ...JSON.parse(state.textContent), ...{json.dumps(patch)} }}); }} catch {{ return; }}
        observer.disconnect();
    }}).observe(document, {{ childList: true, subtree: true }});""")


def test_the_launch_forms_options_follow_the_servers_spec_schema(page, live_server):
    schema = page.request.get(f"{live_server}/api/spec").json()
    open_playground(page, live_server + "/")
    warps = schema["options"]["num_warps"]
    assert select_options(page, "#opt-num_warps") == [[str(w), str(w), w == warps["default"]] for w in warps["choices"]]
    stages = schema["options"]["num_stages"]
    assert [int(value) for value, _, _ in select_options(page, "#opt-num_stages")] == list(range(stages["min"], stages["max"] + 1))
    assert [label for _, label, _ in select_options(page, "#opt-device")] == ["auto", "GPU", "interpreter"]

    # Another schema, as a server might serve it: the form offers its choices and defaults.
    served = schema["options"]
    other = {**schema, "options": {**served,
                                   "num_warps": {**served["num_warps"], "default": 8, "choices": [2, 4, 8]},
                                   "num_stages": {**served["num_stages"], "default": 2, "min": 1, "max": 4},
                                   "device": {**served["device"], "default": "interpreter", "choices": ["auto", "interpreter"]},
                                   "bench": {**served["bench"], "default": False}}}
    spec = page.request.get(f"{live_server}/api/examples/masked_tail").json()["spec"]
    spec["options"] = {}  # a spec that leaves every option to its default

    patch_initial_state(page, {"spec_schema": other, "spec": spec})
    open_playground(page, live_server + "/examples/masked_tail")
    assert select_options(page, "#opt-num_warps") == [["2", "2", False], ["4", "4", False], ["8", "8", True]]
    assert select_options(page, "#opt-num_stages") == [[str(s), str(s), s == 2] for s in range(1, 5)]
    assert select_options(page, "#opt-device") == [["auto", "auto", False], ["interpreter", "interpreter", True]]
    assert not page.is_checked("#opt-bench") and page.is_checked("#opt-check")
    options = page.evaluate("window.playground.getSpec().options")
    assert (options["num_warps"], options["num_stages"], options["device"], options["bench"]) == (8, 2, "interpreter", False)

