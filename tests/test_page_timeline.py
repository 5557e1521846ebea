"""The timeline in the Timings tab, drawn from a timeline recorded on a GPU (tests/data/timeline):
the SM lanes, a program's warps, a click on a region highlighting its lines, and the summary; in
script mode, the shown launch's, offered and drawn the same way."""
import json
import os
import time

import pytest

from sandbox import result as results
from tests.support.browser import page_without_errors
from tests.test_browser import open_playground, run_and_wait
from tests.test_page_script import pick_launch, script_page
from tests.test_script_timeline import PROGRAM

DATA = os.path.join(os.path.dirname(__file__), "data", "timeline", "layer_norm.json")
SHOTS = "/tmp/shots"


@pytest.fixture
def page(browser):
    with page_without_errors(browser, width=1280, height=900) as page:
        yield page


def recorded():
    with open(DATA) as f:
        made = json.load(f)
    result = {**results.new(made["device"]), "run_id": "recorded", "timings": made["timings"],
              "timeline": made["timeline"]}
    return made["spec"], result


def deliver(page, spec, result):
    """The recorded result arrives as a run's does (the page's hub), with the Timings tab shown;
    returns the ms the page took to draw it."""
    page.evaluate("(spec) => window.playground.setSpec(spec)", spec)
    page.click("[data-tab=timings]")
    return page.evaluate("""async (result) => {
        const hub = await import('/static/js/shared/hub.js');
        const start = performance.now();
        hub.emit('run-result', {run_id: 'recorded', result});
        return performance.now() - start; }""", result)


@pytest.mark.browser
def test_a_recorded_timeline_is_drawn_lanes_warps_and_summary(page, live_server):
    spec, result = recorded()
    timeline = result["timeline"]
    open_playground(page, live_server + "/examples/layer_norm")
    drawn_ms = deliver(page, spec, result)
    print(f"timeline of {len(timeline['bars'])} programs drawn in {drawn_ms:.1f} ms")
    assert page.get_attribute(".timeline-lanes", "data-drawn") == str(len(timeline["bars"]))
    assert page.locator(".timeline-program option").count() == len(timeline["programs"])
    slowest = max(timeline["programs"], key=lambda p: p["end_ns"] - p["start_ns"])
    assert f"SM {slowest['sm']}" in page.inner_text(".timeline-pick")
    assert page.locator(".timeline-warps .warp-label").count() == timeline["num_warps"]
    spans = sum(len(warp) for warp in slowest["warps"])
    assert page.locator(".timeline-warps rect.region").count() == spans
    overhead = page.inner_text(".timeline-overhead")
    assert "Instrumented launch 3.81 µs" in overhead and "uninstrumented" in overhead
    assert "globaltimer's 32 ns" in page.inner_text(".timeline-card")
    shares = page.locator(".timeline-shares tbody tr")
    assert shares.count() == 3 and "statistics" in shares.nth(1).inner_text()
    assert "Slowest program" in page.inner_text(".timeline-slowest")
    assert "132 of 132 SMs" in page.inner_text(".timeline-imbalance")
    os.makedirs(SHOTS, exist_ok=True)
    page.set_viewport_size({"width": 1280, "height": 2000})  # the whole card on screen
    page.locator(".timeline-card").screenshot(path=f"{SHOTS}/timeline.png")


@pytest.mark.browser
def test_a_click_on_a_region_highlights_its_lines_in_the_editor(page, live_server):
    spec, result = recorded()
    statistics = result["timeline"]["regions"][1]
    open_playground(page, live_server + "/examples/layer_norm")
    deliver(page, spec, result)
    page.locator('.timeline-warps rect.region[data-region="1"]').first.dispatch_event("click")
    first, last = statistics["lines"]
    page.wait_for_function(f"document.querySelectorAll('#editor .cm-linked-line').length === {last - first + 1}")
    highlighted = page.locator("#editor .cm-linked-line").all_inner_texts()
    assert highlighted[0].strip().startswith("mean = tl.sum") and highlighted[-1].strip().startswith("rstd =")
    assert page.locator('.timeline-warps rect.region.selected').count() > 0


@pytest.mark.browser
def test_a_click_on_a_bar_shows_that_programs_warps(page, live_server):
    spec, result = recorded()
    timeline = result["timeline"]
    open_playground(page, live_server + "/examples/layer_norm")
    deliver(page, spec, result)
    chosen = min(timeline["programs"], key=lambda p: p["end_ns"] - p["start_ns"])
    geometry = page.evaluate("""async ([bars, smCount, block]) => {  // the page's own layout of the lanes
        const model = await import('/static/js/run/timeline-model.js');
        const { slotOf, slots } = model.laneSlots(bars);
        return {...model.laneGeometry(smCount, slots), slot: slotOf.get(block),
                width: document.querySelector('.timeline-lanes').clientWidth}; }""",
                             [timeline["bars"], timeline["sm_count"], chosen["block"]])
    assert geometry["slots"] == 2  # two programs at once on each SM: each in a row of its lane
    x = 56 + (chosen["start_ns"] + chosen["end_ns"]) / 2 * (geometry["width"] - 56 - 8) / timeline["total_ns"]
    y = 6 + chosen["sm"] * geometry["lane"] + (geometry["slot"] + 0.5) * geometry["unit"]
    page.locator(".timeline-lanes").click(position={"x": x, "y": y})
    assert f"on SM {chosen['sm']}" in page.inner_text(".timeline-pick")
    picked = page.evaluate("() => { const s = document.querySelector('.timeline-program'); return s.options[s.selectedIndex].text; }")
    assert f"SM {chosen['sm']}" in picked and str(tuple(chosen["pid"][:1]))[:-2] in picked


@pytest.mark.browser
@pytest.mark.cpu_only
def test_without_a_timeline_the_tab_offers_one_click_that_runs_with_the_option(page, live_server):
    open_playground(page, live_server + "/examples/vector_add")
    page.click("[data-tab=timings]")
    assert not page.is_checked("#opt-timeline")
    page.click(".timeline-record")
    page.wait_for_function("document.querySelector('#status-line').dataset.state !== 'idle'")
    assert page.is_checked("#opt-timeline")
    assert page.evaluate("window.playground.getSpec().options.timeline") is True
    page.wait_for_function("['ok', 'mismatch', 'error'].includes(document.querySelector('#status-line').dataset.state)",
                           timeout=60_000)
    page.wait_for_selector(".timeline-refused")  # this host has no GPU: the run says so, and shows no timeline
    assert "a timeline needs a GPU" in page.inner_text(".timeline-refused")


@pytest.mark.browser
def test_in_script_mode_the_tab_offers_the_shown_launchs_timeline(page, live_server):
    open_playground(page, live_server + "/examples/vector_add")
    page.click("[data-tab=timings]")
    page.check("input[name=run-mode][value=script]")
    page.wait_for_selector(".timeline-script")
    assert "the launch shown is timed" in page.inner_text(".timeline-script")
    assert page.inner_text(".timeline-record") == "Record the shown launch's timeline"
    assert page.is_visible("#script-timeline") and not page.is_checked("#script-timeline")
    page.check("input[name=run-mode][value=form]")
    page.wait_for_selector(".timeline-record")
    assert page.locator(".timeline-script").count() == 0 and page.inner_text(".timeline-record") == "Record a timeline"


@pytest.mark.browser
@pytest.mark.cpu_only
def test_in_script_mode_one_click_runs_the_program_with_the_option_and_a_cpu_host_says_why_not(page, live_server):
    script_page(page, live_server, PROGRAM)
    page.click("[data-tab=timings]")
    page.click(".timeline-record")
    page.wait_for_function("document.querySelector('#status-line').dataset.state !== 'idle'")
    assert page.is_checked("#script-timeline") and not page.is_checked("#opt-timeline")  # the script's own option
    spec = page.evaluate("window.playground.getSpec()")
    assert spec["mode"] == "script" and spec["options"]["timeline"] is True
    assert run_and_wait(page, lambda page: None) == "ok"
    page.wait_for_selector(".timeline-refused")
    assert "a timeline needs a GPU" in page.inner_text(".timeline-refused")
    # Another launch selected: replayed alone with the option on, and the same word.
    pick_launch(page, 1)
    assert page.evaluate("window.playground.getSpec().options")["timeline"] is True
    page.wait_for_selector(".timeline-refused")
    assert "a timeline needs a GPU" in page.inner_text(".timeline-refused")


@pytest.mark.browser
def test_in_script_mode_a_recorded_timeline_is_drawn_as_a_form_runs_and_a_region_links_the_program(page, live_server):
    """A script's result with the timeline of its shown launch (the recorded one, its kernel's source
    as a program's): drawn as in a form run, and a click on a region highlights the program's lines."""
    spec, result = recorded()
    timeline = result["timeline"]
    program = spec["source"] + "\n# the program's own statements would launch it here\n"
    script = {"version": 1, "mode": "script", "source": program, "options": {"timeline": True}}
    launch = {"index": 0, "kernel": spec["kernel"], "line": None, "grid": timeline["grid"], "args": [],
              "num_warps": timeline["num_warps"], "num_stages": 3, "config": None, "ms": 0.01, "bounds": "ok"}
    result = {**result, "launches": {"total": 1, "selected": 0, "list": [launch], "program_ms": 900.0,
                                     "replay": {"kept": [0], "why": None, "replayed": False}}}
    open_playground(page, live_server + "/examples/layer_norm")
    deliver(page, script, result)
    assert page.is_checked("#script-timeline")  # the script's own option, as its spec says
    assert page.evaluate("window.playground.getSpec()")["options"]["timeline"] is True
    assert page.get_attribute(".timeline-lanes", "data-drawn") == str(len(timeline["bars"]))
    assert page.locator(".timeline-warps .warp-label").count() == timeline["num_warps"]
    page.locator('.timeline-warps rect.region[data-region="1"]').first.dispatch_event("click")
    first, last = timeline["regions"][1]["lines"]
    page.wait_for_function(f"document.querySelectorAll('#editor .cm-linked-line').length === {last - first + 1}")
    assert page.locator("#editor .cm-linked-line").first.inner_text().strip().startswith("mean = tl.sum")
    os.makedirs(SHOTS, exist_ok=True)
    page.screenshot(path=f"{SHOTS}/script-timeline.png")
