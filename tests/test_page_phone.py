"""The page on a phone (390x844, touch): the top bar wraps instead of overflowing, the example
picker shows its name, and Run stays on screen and is what a tap on it hits, before and after
scrolling down to the results."""
import pytest

from tests.support.browser import page_without_errors
from tests.test_browser import open_playground

pytestmark = pytest.mark.browser
SHOTS = "/tmp/shots"


@pytest.fixture
def phone(browser):
    with page_without_errors(browser, width=390, height=844, console=False, is_mobile=True, has_touch=True,
                             device_scale_factor=2) as page:
        yield page


def hit_at_centre(page, selector):
    """The id of the element a tap at the centre of `selector` lands on (or of its nearest ancestor with one)."""
    return page.evaluate("""(selector) => {
        const box = document.querySelector(selector).getBoundingClientRect();
        return document.elementFromPoint(box.x + box.width / 2, box.y + box.height / 2).closest('[id]').id;
    }""", selector)


def inside_viewport(page, selector):
    box = page.locator(selector).bounding_box()
    return box["x"] >= 0 and box["x"] + box["width"] <= 390 and box["y"] >= 0 and box["y"] + box["height"] <= 844


def test_the_top_bar_fits_a_phone_and_run_is_what_a_tap_hits(phone, live_server):
    open_playground(phone, live_server + "/examples/vector_add")
    assert phone.evaluate("document.documentElement.scrollWidth") <= 390  # nothing sticks out sideways
    for control in ("#run-button", "#example-select", "#share-button", "#export-button", "#history-button"):
        assert inside_viewport(phone, control), control
    assert phone.locator("#example-select").bounding_box()["width"] >= 150  # a name, not a bare chevron
    assert hit_at_centre(phone, "#run-button") == "run-button"
    phone.screenshot(path=f"{SHOTS}/phone-390x844-top.png")

    phone.tap("#run-button")
    phone.wait_for_function("['ok', 'mismatch', 'error'].includes(document.querySelector('#status-line').dataset.state)",
                            timeout=60000)
    assert phone.get_attribute("#status-line", "data-state") == "ok"

    phone.locator("#results").scroll_into_view_if_needed()  # down at the results, Run is still there
    assert phone.evaluate("window.scrollY") > 400
    assert inside_viewport(phone, "#run-button") and hit_at_centre(phone, "#run-button") == "run-button"
    phone.screenshot(path=f"{SHOTS}/phone-390x844-results.png")


def rows_of_the_top_bar(page):
    return page.evaluate("""() => new Set([...document.querySelectorAll('.topbar > *')].filter(e => e.offsetParent)
        .map(e => Math.round(e.getBoundingClientRect().top / 20))).size""")


def cut_selects(page):
    """The launch form's selects whose chosen option's text is wider than the select shows."""
    return page.evaluate("""() => {
        const context = document.createElement('canvas').getContext('2d');
        return [...document.querySelectorAll('#launch select')].filter(s => s.offsetParent).filter(s => {
            const style = getComputedStyle(s);
            context.font = `${style.fontSize} ${style.fontFamily}`;
            const text = s.selectedOptions[0]?.textContent || '';
            return context.measureText(text).width > s.clientWidth - parseFloat(style.paddingLeft) - 14;  // the arrow
        }).map(s => s.selectedOptions[0].textContent);
    }""")


def test_a_puzzle_on_a_phone_opens_at_the_top_and_run_shows_its_verdict(phone, live_server):
    open_playground(phone, live_server + "/puzzles/constant_add")
    phone.wait_for_selector(".puzzle-statement")
    phone.wait_for_timeout(300)
    assert phone.evaluate("window.scrollY") == 0  # not scrolled down to the kernel, under the top bar
    assert rows_of_the_top_bar(phone) == 2
    statement, form = phone.locator(".puzzle-statement").bounding_box(), phone.locator("#launch").bounding_box()
    assert statement["y"] < form["y"]  # the statement before the form
    assert cut_selects(phone) == []  # "float32" and "randn", not "floa" and "rand"
    phone.screenshot(path=f"{SHOTS}/phone-puzzle-open.png")

    phone.tap("#run-button")
    phone.wait_for_selector("#puzzle-verdict", timeout=60000)
    phone.wait_for_timeout(300)
    verdict, bar = phone.locator("#puzzle-verdict").bounding_box(), phone.locator(".topbar").bounding_box()
    assert bar["y"] + bar["height"] <= verdict["y"] and verdict["y"] + verdict["height"] <= 844  # in view, not under the bar
    phone.screenshot(path=f"{SHOTS}/phone-puzzle-verdict.png")
    phone.evaluate("document.querySelector('#inputs-table').scrollIntoView({block: 'center'})")
    phone.screenshot(path=f"{SHOTS}/phone-puzzle-form.png")


def test_the_share_popover_fits_a_phone(phone, live_server):
    """The link, its embed row and the form that describes it all stay within the screen."""
    open_playground(phone, live_server + "/examples/vector_add")
    phone.click("#share-button")
    phone.wait_for_selector("#share-embed-row:not([hidden])")
    assert inside_viewport(phone, "#share-popover")
    phone.click("#share-describe")
    phone.wait_for_selector("#share-about:not([hidden])")
    assert inside_viewport(phone, "#share-popover") and inside_viewport(phone, "#share-about")
    assert phone.evaluate("document.documentElement.scrollWidth") <= 390
    phone.screenshot(path=f"{SHOTS}/phone-390x844-share.png")
