"""Trying another meta-parameter value, at 1280x720: a changed constexpr re-runs once the typing
pauses (no Enter, no leaving the field), the result on screen is marked as no longer describing
the kernel the moment its inputs change, and typing a value then clicking Run sends one run, not
two."""
import pytest

from tests.support.browser import page_without_errors
from tests.test_browser import open_playground, run_and_wait

pytestmark = pytest.mark.browser
SHOTS = "/tmp/shots"
DONE = "['ok', 'mismatch', 'error'].includes(document.querySelector('#status-line').dataset.state)"


@pytest.fixture
def page(browser):
    with page_without_errors(browser, width=1280, height=720) as page:
        yield page


def count_runs(page):
    """window.runsSent: the runs the server acknowledged from now on."""
    page.evaluate("""async () => { const { on } = await import('/static/js/shared/hub.js');
        window.runsSent = 0; on('run-started', () => { window.runsSent += 1; }); }""")


def block_field(page):
    return page.locator('.arg-value[data-param="BLOCK_SIZE"]')


def test_a_changed_constexpr_reruns_when_typing_pauses_and_the_old_result_is_marked_at_once(page, live_server):
    open_playground(page, live_server + "/examples/vector_add")
    assert run_and_wait(page) == "ok"
    count_runs(page)
    block_field(page).select_text()
    page.keyboard.type("1")  # 1024 -> 1: the result below is no longer this launch's
    edited = page.evaluate("""() => [document.querySelector('#results').classList.contains('edited'),
        document.querySelector('#diagram').classList.contains('edited'), document.querySelector('#status-line').dataset.edited]""")
    page.keyboard.type("28")  # 128, still in the field, no Enter
    assert edited == [True, True, "true"]
    page.wait_for_function("window.runsSent === 1", timeout=10000)
    page.wait_for_function(DONE, timeout=60000)
    assert page.evaluate("window.playground.getSpec().args.BLOCK_SIZE") in (128, "128")
    assert page.get_attribute("#status-line", "data-edited") == "false"
    assert page.locator("#results.edited").count() == 0
    assert "97" not in page.inner_text("#status-line")  # 769 programs of 128 now, not 97 of 1024
    page.wait_for_timeout(1000)
    assert page.evaluate("window.runsSent") == 1
    page.screenshot(path=f"{SHOTS}/rerun-done-1280x720.png")
    block_field(page).select_text()
    page.keyboard.type("64")
    page.screenshot(path=f"{SHOTS}/rerun-edited-1280x720.png")


def test_typing_a_value_then_clicking_run_sends_one_run(page, live_server):
    open_playground(page, live_server + "/examples/vector_add")
    assert run_and_wait(page) == "ok"
    count_runs(page)
    block_field(page).fill("")
    block_field(page).type("256")
    page.click("#run-button")  # the field's change and the click: one run
    page.wait_for_function(DONE, timeout=60000)
    page.wait_for_timeout(1500)  # past the pause that would have started another
    assert page.evaluate("window.runsSent") == 1
