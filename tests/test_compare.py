"""A/B compare and the sweep: options.sweep in the spec and the run process (a row per
configuration, checked and timed, the fastest beyond the noise), and the Compare tab in a browser
(pin, change BLOCK_SIZE, see the differences; sweep and see the table)."""
import os

import pytest

from sandbox.run import sweep as sweeps
from sandbox.spec import SpecError, normalize
from tests.support.kernels import vector_add_spec

RUN_TIMEOUT_MS = 60_000
SHOTS = "/tmp/shots"


def timed(median, p20, p80, status="ok"):
    return {"config": {}, "status": status, "kernel_ms": {"median": median, "p20": p20, "p80": p80, "n": 20},
            "gbps": None, "error": None}


def test_sweep_is_checked_in_the_spec():
    spec = vector_add_spec()
    assert normalize({**spec, "options": {"sweep": {"BLOCK_SIZE": [256, 1024], "num_warps": [2, 4]}}})["options"]["sweep"]
    for sweep, field, words in [
        ({"num_warps": [3]}, "options.sweep.num_warps", "power of 2"),
        ({"num_stages": [0]}, "options.sweep.num_stages", "from 1 to 8"),
        ({"BLOCK_SIZE": []}, "options.sweep.BLOCK_SIZE", "non-empty list"),
        ({"BLOCK_SIZE": [1, 2, 3, 4, 5], "num_warps": [1, 2, 4, 8]}, "options.sweep", "20 configurations"),
        ([256], "options.sweep", "must map"),
    ]:
        with pytest.raises(SpecError, match=words) as raised:
            normalize({**spec, "options": {"sweep": sweep}})
        assert raised.value.field == field


def test_best_is_the_fastest_matching_row_and_says_if_it_is_beyond_the_noise():
    assert sweeps.best([timed(2.0, 1.9, 2.1), timed(1.0, 0.9, 1.1), timed(0.5, 0.4, 0.6, status="mismatch")]) == (1, True)
    assert sweeps.best([timed(1.02, 0.95, 1.1), timed(1.0, 0.97, 1.05)]) == (1, False)
    assert sweeps.best([{**timed(1.0, 1.0, 1.0), "kernel_ms": {"median": 1.0, "p20": 1.0, "p80": 1.0, "n": 1}}]) == (None, False)


def test_a_sweep_in_the_interpreter_checks_every_configuration():
    from sandbox.run.pipeline import run_spec
    spec = vector_add_spec(n=1000, block=256, device="interpreter")
    result = run_spec({**spec, "options": {**spec["options"], "sweep": {"BLOCK_SIZE": [128, 3], "num_warps": [2, 4]}}})
    assert result["status"] == "ok" and result["trace"]["grid"] == [4, 1, 1]  # the spec's own launch, traced
    sweep = result["sweep"]
    assert sweep["params"] == ["BLOCK_SIZE", "num_warps"] and sweep["interpreter"] and sweep["best"] is None
    assert [r["config"] for r in sweep["rows"]] == [{"BLOCK_SIZE": 128, "num_warps": 2}, {"BLOCK_SIZE": 128, "num_warps": 4},
                                                    {"BLOCK_SIZE": 3, "num_warps": 2}, {"BLOCK_SIZE": 3, "num_warps": 4}]
    assert [r["status"] for r in sweep["rows"]] == ["ok", "ok", "error", "error"]
    assert "power of 2" in sweep["rows"][2]["error"]["message"]


# ---- the Compare tab in a browser --------------------------------------------------------------

def shot(page, name):
    os.makedirs(SHOTS, exist_ok=True)
    page.screenshot(path=f"{SHOTS}/{name}.png", full_page=False)


def run_and_wait(page):
    page.evaluate("document.querySelector('#status-line').dataset.state = 'idle'")
    page.click("#run-button")
    page.wait_for_function("['ok', 'mismatch', 'error'].includes(document.querySelector('#status-line').dataset.state)",
                           timeout=RUN_TIMEOUT_MS)


@pytest.mark.browser
def test_pin_change_block_size_and_see_the_difference(browser, live_server):
    context = browser.new_context(viewport={"width": 1440, "height": 900})
    page = context.new_page()
    errors = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    page.goto(f"{live_server}/examples/vector_add")
    page.wait_for_function("window.playground !== undefined")
    page.evaluate("""() => { const spec = window.playground.getSpec();
        spec.inputs = {x: 'torch.randn(4000)', y: 'torch.randn(4000)', out: 'torch.empty(4000)'};
        window.playground.setSpec(spec); }""")
    run_and_wait(page)
    page.click('[data-tab="compare"]')
    assert page.is_disabled("#pin-button") is False
    page.click("#pin-button")
    assert "BLOCK_SIZE=1024" in page.inner_text("#pinned-label")
    # A new BLOCK_SIZE in the launch form runs again by itself.
    page.evaluate("document.querySelector('#status-line').dataset.state = 'idle'")
    page.fill('#args-list input[data-param="BLOCK_SIZE"]', "512")
    page.press('#args-list input[data-param="BLOCK_SIZE"]', "Enter")
    page.wait_for_function("['ok', 'mismatch', 'error'].includes(document.querySelector('#status-line').dataset.state)",
                           timeout=RUN_TIMEOUT_MS)
    page.click('[data-tab="compare"]')
    page.wait_for_selector("#compare-time")
    shot(page, "compare-top")
    assert "unmeasured" == page.get_attribute("#compare-time .verdict", "data-verdict")  # the interpreter's clock
    assert "interpreter" in page.inner_text("#compare-time")
    page.wait_for_selector('#compare-coverage .puzzle-plot[data-output="out"] .main-svg')
    assert "Both runs write the same elements" in page.inner_text("#compare-coverage")
    page.click('.compare-stages [data-stage="ttir"]')
    diff = page.inner_text("#compare-ir-diff")
    assert "- " in diff and "+ " in diff and "1024" in diff and "512" in diff
    shot(page, "compare-diff")
    # The sweep: one run, a row per combination.
    page.fill('.sweep-field input[data-param="BLOCK_SIZE"]', "256, 512, 3")
    page.fill('.sweep-field input[data-param="num_warps"]', "4")
    page.click("#sweep-button")
    page.wait_for_selector("#sweep-result", timeout=RUN_TIMEOUT_MS)
    rows = page.locator(".sweep-table tbody tr")
    assert rows.count() == 3
    assert "✓ matches" in rows.nth(0).inner_text() and "power of 2" in rows.nth(2).inner_text()
    assert "interpreter checks each configuration" in page.inner_text("#sweep-verdict")
    page.locator("#sweep-result").scroll_into_view_if_needed()
    shot(page, "compare-sweep")
    assert page.input_value('.sweep-field input[data-param="BLOCK_SIZE"]') == "256, 512, 3"  # kept as typed
    assert page.evaluate("window.playground.getSpec().options.sweep") is None  # the next run is a plain run
    context.close()
    assert not errors, errors


@pytest.mark.browser
def test_the_compare_model_calls_a_change_within_the_noise_noise(browser, live_server):
    page = browser.new_page()
    page.goto(f"{live_server}/puzzles")
    found = page.evaluate("""async () => {
        const m = await import("/static/js/run/compare-model.js");
        const t = (median, spread) => ({median, p20: median * (1 - spread), p80: median * (1 + spread), n: 100});
        const diff = m.unifiedDiff("a\\nb\\nc\\nd\\ne\\nf\\ng\\nh\\ni", "a\\nb\\nc\\nd\\nE\\nf\\ng\\nh\\ni\\nj", 1);
        return {
            small: m.timeChange(t(1.0, 0.03), t(1.01, 0.03)),
            slower: m.timeChange(t(1.0, 0.03), t(1.10, 0.02)),
            faster: m.timeChange(t(1.0, 0.01), t(0.90, 0.01)),
            one: m.timeChange({median: 1, p20: 1, p80: 1, n: 1}, {median: 2, p20: 2, p80: 2, n: 1}).verdict,
            hunks: diff.hunks.map((h) => [h.header, h.lines.map((l) => l.kind + l.text)]),
            counts: [diff.added, diff.removed],
            same: m.unifiedDiff("x\\ny", "x\\ny").hunks.length,
            resources: m.resourceRows({n_regs: 26, n_spills: 0}, {n_regs: 20, n_spills: 2, shared_bytes: 0}).map((r) => r.delta),
        };
    }""")
    assert found["small"]["verdict"] == "noise" and abs(found["small"]["noise"] - 0.03) < 1e-9
    assert found["slower"]["verdict"] == "slower" and abs(found["slower"]["change"] - 0.10) < 1e-9
    assert found["faster"]["verdict"] == "faster"
    assert found["one"] == "unmeasured"
    assert found["hunks"] == [["@@ -4,3 +4,3 @@", [" d", "-e", "+E", " f"]], ["@@ -9,1 +9,2 @@", [" i", "+j"]]]
    assert found["counts"] == [2, 1] and found["same"] == 0
    assert found["resources"] == [-6, 2, None]
    page.close()


@pytest.mark.browser
def test_the_sweep_counts_its_combinations_and_runs_what_it_prefills(browser, live_server):
    """1280 x 720, matmul: the prefilled sweep fits the limit and runs as it is; a sweep over the
    limit is said as it is typed, and its button is off; a launch form with a problem keeps the
    sweep from running and the last result on screen."""
    context = browser.new_context(viewport={"width": 1280, "height": 720})
    page = context.new_page()
    errors = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    page.goto(f"{live_server}/examples/matmul")
    page.wait_for_function("window.playground !== undefined")
    run_and_wait(page)
    verdict = page.inner_text("#status-line .verdict")
    assert verdict == "✓ outputs match"
    page.click('[data-tab="compare"]')
    field = lambda name: f'.sweep-field input[data-param="{name}"]'  # noqa: E731
    values = {name: page.input_value(field(name)) for name in ("BLOCK_M", "BLOCK_N", "BLOCK_K", "num_warps")}
    assert values == {"BLOCK_M": "16, 32, 64", "BLOCK_N": "32, 64", "BLOCK_K": "32", "num_warps": "4, 8"}
    assert page.inner_text("#sweep-note").startswith("12 combinations (at most 16)")
    assert page.inner_text("#sweep-button") == "Run sweep (12)" and page.is_enabled("#sweep-button")
    # Typed over the limit: said at once, the button off.
    page.fill(field("BLOCK_K"), "16, 32, 64")
    assert page.inner_text("#sweep-note") == "36 combinations: a sweep runs at most 16. Remove some values."
    assert page.is_disabled("#sweep-button")
    page.locator(".sweep-form").scroll_into_view_if_needed()
    shot(page, "sweep-over-the-limit")
    page.fill(field("num_warps"), "4, 3")
    assert page.inner_text("#sweep-note") == "num_warps: 3 is not one of 1, 2, 4, 8, 16, 32" and page.is_disabled("#sweep-button")
    page.fill(field("num_warps"), "4, 8")
    page.fill(field("BLOCK_K"), "32")
    assert page.is_enabled("#sweep-button")
    # The launch form's problem: on its field, the sweep not run, the last result kept.
    page.fill('#args-list input[data-param="a_ptr"]', "q")
    page.click("#sweep-button")
    assert page.inner_text("#sweep-note").startswith("Not run: the launch form has a problem")
    assert page.locator("#launch .field-problem").count() >= 1
    assert page.inner_text("#status-line .verdict") == verdict
    assert page.evaluate("document.querySelector('#status-line').dataset.state") == "ok"
    shot(page, "sweep-form-problem")
    page.fill('#args-list input[data-param="a_ptr"]', "a")
    # As prefilled: it runs, a row per combination, each checked.
    page.evaluate("document.querySelector('#status-line').dataset.state = 'idle'")
    page.click("#sweep-button")
    page.wait_for_selector("#sweep-result", timeout=RUN_TIMEOUT_MS)
    rows = page.locator(".sweep-table tbody tr")
    assert rows.count() == 12 and page.locator('.sweep-table tbody tr:has-text("✓ matches")').count() == 12
    page.locator("#sweep-result").scroll_into_view_if_needed()
    shot(page, "sweep-matmul")
    context.close()
    assert not errors, errors
