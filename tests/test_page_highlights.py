"""The IR tab and the editor's highlights, at 1280x720: each IR stage opens at its start (SASS not
on its trailing NOPs, whatever the stage before was scrolled to), moving the cursor while the IR tab
is hidden makes CodeMirror log nothing, and the editor lights one "current" thing at a time: the
diagram's program, an IR line or a step, never two of them left over together."""
import pytest

from tests.support.browser import page_without_errors
from tests.test_browser import open_diagram, open_playground, run_and_wait

pytestmark = pytest.mark.browser
SHOTS = "/tmp/shots"


@pytest.fixture
def page(browser):
    # console=True: a CodeMirror warning is an error here too
    with page_without_errors(browser, width=1280, height=720) as page:
        page.on("console", lambda message: message.type == "warning" and page.errors.append(message.text))
        yield page


def lit(page):
    """Which of the editor's highlights are on: program lines (diagram), linked lines (IR or Step)."""
    return {"program": page.locator("#editor .cm-program-line").count(), "linked": page.locator("#editor .cm-linked-line").count()}


def test_each_ir_stage_opens_at_its_start(page, live_server):
    open_playground(page, live_server + "/examples/vector_add")
    for text in ("tl.store", "mask = offsets", "tl.program_id"):  # the cursor moves while the IR tab is hidden
        page.click(f'.cm-line:has-text("{text}")')
    assert run_and_wait(page) == "ok"
    page.click('.cm-line:has-text("tl.store")')
    page.click("[data-tab=ir]")
    page.wait_for_selector('.ir-stage[data-stage="sass"]:not([disabled])', timeout=60000)
    page.click('.ir-stage[data-stage="ptx"]')
    page.evaluate("document.querySelector('#ir .cm-scroller').scrollTop = 1e6")  # read PTX down to its end
    page.click('.ir-stage[data-stage="sass"]')
    page.wait_for_timeout(300)
    assert page.evaluate("document.querySelector('#ir .cm-scroller').scrollTop") == 0
    assert ".target" in page.inner_text("#ir .cm-content")[:200]  # its header, not its NOPs
    page.screenshot(path=f"{SHOTS}/ir-sass-opens-at-its-start-1280x720.png")


def test_one_current_highlight_at_a_time(page, live_server):
    open_playground(page, live_server + "/examples/vector_add")
    assert run_and_wait(page) == "ok"
    open_diagram(page)
    page.click(".diagram-controls button:has-text('Next')")
    assert lit(page)["program"] > 0 and lit(page)["linked"] == 0
    page.click("[data-tab=ir]")
    page.wait_for_selector("#ir .cm-content")
    assert lit(page) == {"program": 0, "linked": 0}  # the diagram's program is not what is on screen now
    page.click('#ir .cm-line:has-text("tt.load")')
    assert lit(page)["linked"] == 1 and lit(page)["program"] == 0
    page.click("[data-tab=step]")
    assert lit(page) == {"program": 0, "linked": 0}
    page.click("#step-button")
    page.wait_for_selector("#step-where", timeout=60000)
    page.click("#step-next")
    assert lit(page)["linked"] == 1 and lit(page)["program"] == 0
    page.screenshot(path=f"{SHOTS}/one-highlight-step-1280x720.png")


def test_reading_the_ir_on_a_phone_makes_codemirror_log_nothing(browser, live_server):
    with page_without_errors(browser, width=390, height=844, is_mobile=True, has_touch=True) as phone:
        phone.on("console", lambda message: message.type == "warning" and phone.errors.append(message.text))
        open_playground(phone, live_server + "/examples/matmul")
        phone.click("[data-tab=ir]")
        phone.click('.cm-line:has-text("tl.dot")')
        assert run_and_wait(phone) == "ok"
        phone.wait_for_selector('.ir-stage[data-stage="sass"]:not([disabled])', timeout=60000)
        for stage in ("ttgir", "ptx", "sass", "llir"):  # was: "Measure loop restarted more than 5 times"
            phone.click(f'.ir-stage[data-stage="{stage}"]')
            phone.wait_for_timeout(200)
            phone.click('#editor .cm-line:has-text("tl.load")')
            phone.wait_for_timeout(200)
        phone.click("[data-tab=results]")  # a run while the IR tab is hidden, the cursor moved
        phone.click('#editor .cm-line:has-text("tl.store")')
        assert run_and_wait(phone) == "ok"
        phone.click("[data-tab=ir]")
        phone.wait_for_timeout(500)
        phone.screenshot(path=f"{SHOTS}/ir-on-a-phone.png")
