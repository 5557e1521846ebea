"""Compare, at 1280x720, as an engineer tries BLOCK_M 32 -> 16 on the matmul: the IR diff shows what
the change made, not the renumbering of MLIR's location ids (`loc(#loc22)`) and values (`%a_11`), and "who writes what"
says which rows of a big tensor its figure shows."""
import pytest

from tests.support.browser import page_without_errors
from tests.test_browser import open_playground, run_and_wait

pytestmark = pytest.mark.browser
SHOTS = "/tmp/shots"


@pytest.fixture
def page(browser):
    with page_without_errors(browser, width=1280, height=720) as page:
        yield page


def test_location_ids_are_not_a_difference(page, live_server):
    open_playground(page, live_server + "/examples/matmul")
    found = page.evaluate("""async () => { const m = await import('/static/js/run/compare-model.js');
        const renumbered = m.unifiedDiff('%x_1 = arith.addi %3, %c32_i32 : i32 loc(#loc3)\\n#loc3 = loc("k.py":4:1)',
                                         '%x_4 = arith.addi %7, %c32_i32 : i32 loc(#loc9)\\n#loc9 = loc("k.py":4:1)', 3, m.withoutRenumbering);
        const changed = m.unifiedDiff('%x_2 = arith.constant 32 : i32 loc(#loc3)', '%x_5 = arith.constant 16 : i32 loc(#loc9)', 3, m.withoutRenumbering);
        return [renumbered.hunks.length, changed.removed, changed.added, changed.hunks[0].lines[1].text]; }""")
    assert found == [0, 1, 1, "%x_5 = arith.constant 16 : i32 loc(#loc9)"]  # shown as written


def test_block_m_32_to_16_diffs_the_ir_by_what_changed(page, live_server):
    open_playground(page, live_server + "/examples/matmul")
    assert run_and_wait(page) == "ok"
    page.click('[data-tab="compare"]')
    page.click("#pin-button")
    field = page.locator('#args-list input[data-param="BLOCK_M"]')
    field.fill("16")
    field.press("Enter")
    page.wait_for_function("document.querySelector('#status-line').dataset.state === 'running'", timeout=10000)
    page.wait_for_function("['ok', 'mismatch', 'error'].includes(document.querySelector('#status-line').dataset.state)",
                           timeout=60000)
    page.click('[data-tab="compare"]')
    page.click('.compare-stages [data-stage="ttgir"]')
    diff = page.locator("#compare-ir-diff .diff-line.add, #compare-ir-diff .diff-line.del").all_inner_texts()
    counts = page.inner_text("#compare-ir-diff >> xpath=preceding-sibling::p[1]")
    removed = int(counts.split(" line(s) removed")[0])
    assert 0 < removed < 100, counts  # was 219 removed, 229 added: mostly renumbered #loc ids and values
    assert any("16" in line for line in diff)
    page.locator("#compare-ir-diff").scroll_into_view_if_needed()
    page.screenshot(path=f"{SHOTS}/compare-ir-diff-1280x720.png")
    shown = page.inner_text('#compare-coverage .compare-figure:has([data-output="c"]) h4')
    assert "rows 0–31 of 128 shown" in shown  # c is 128 x 128; the figure draws its first 4,096 elements
    page.locator("#compare-coverage").scroll_into_view_if_needed()
    page.screenshot(path=f"{SHOTS}/compare-who-writes-1280x720.png")
