"""What the Step tab shows of a program's values and accesses, at 1280x720: every cell of a tile
in view at its own width (none cut, none stretched), the lanes a masked load without `other` left
without a value marked as such (not a 0, which would teach that a mask reads zeros), and the
accesses in the diagram's words (`a[32..63, 0..31]`, not a list of flat offsets)."""
import pytest

from tests.support.browser import page_without_errors
from tests.support.kernels import vector_add_spec
from tests.test_browser import open_playground
from tests.test_stepper import step_through, stepped

SHOTS = "/tmp/shots"


def test_a_masked_load_without_other_leaves_its_masked_lanes_unset():
    result = stepped(vector_add_spec(n=1000, block=256), [3])
    steps = result["steps"]
    x = steps["values"][next(s for s in steps["steps"] if "x" in s["set"])["set"]["x"]]
    assert x["unset"] == list(range(1000 - 768, 256))  # lanes 232..255: offsets 1000..1023
    offs = steps["values"][next(s for s in steps["steps"] if "offs" in s["set"])["set"]["offs"]]
    assert "unset" not in offs  # computed, not loaded
    # A big tile: its summary counts only the lanes that hold a value.
    big = stepped(vector_add_spec(n=1000, block=1024), [0])["steps"]
    x = big["values"][next(s for s in big["steps"] if "x" in s["set"])["set"]["x"]]
    assert x["summary"]["unset"] == 24 and "unset" not in x  # its first 256 lanes all hold one


@pytest.fixture
def page(browser):
    with page_without_errors(browser, width=1280, height=720) as page:
        yield page


def step_to(page, name):
    """Next until the step that sets local `name`; returns its row."""
    for _ in range(60):
        if page.locator(f'#step-locals tr.changed[data-name="{name}"]').count():
            return page.locator(f'#step-locals tr[data-name="{name}"]')
        page.click("#step-next")
    raise AssertionError(f"no step sets {name}")


def cell_boxes(row):
    return row.evaluate("""row => [...row.querySelectorAll('.step-tile tr')].map(tr => [...tr.querySelectorAll('td')]
        .map(td => { const box = td.getBoundingClientRect(); return [box.left, box.right]; }))""")


@pytest.mark.browser
def test_tiles_show_every_cell_at_its_own_width(page, live_server):
    open_playground(page, live_server + "/examples/matmul")
    page.click('[data-tab="step"]')
    step_through(page, [1, 2, 0])
    ks = step_to(page, "ks")  # 32 lanes: two rows of 16
    rows = cell_boxes(ks)
    assert [len(r) for r in rows] == [16, 16]
    scroller = ks.locator(".step-tile-scroll").bounding_box()
    assert all(right <= scroller["x"] + scroller["width"] + 0.5 for r in rows for _, right in r)  # the 16th column in view
    widths = [right - left for r in rows for left, right in r]
    assert max(widths) - min(widths) < 2
    for _ in range(10):  # to the first load of a: a rectangle, in the diagram's words
        if "loads a" in page.inner_text("#step"):
            break
        page.click("#step-next")
    assert "loads a[32..63, 0..31]" in page.inner_text("#step-accesses")
    ks.scroll_into_view_if_needed()
    page.screenshot(path=f"{SHOTS}/step-tiles-1280x720.png")

    page.evaluate("(spec) => window.playground.setSpec(spec)", vector_add_spec(n=10, block=4))
    page.click('[data-tab="step"]')
    step_through(page, [2, 0, 0])
    [offs] = cell_boxes(step_to(page, "offs"))  # 4 lanes: the last no wider than the others
    widths = [right - left for left, right in offs]
    assert len(widths) == 4 and max(widths) - min(widths) < 2


@pytest.mark.browser
def test_masked_off_lanes_of_a_load_without_other_are_marked_not_zero(page, live_server):
    open_playground(page, live_server + "/examples/vector_add")
    page.evaluate("(spec) => window.playground.setSpec(spec)", vector_add_spec(n=1000, block=256))
    page.click('[data-tab="step"]')
    step_through(page, [3, 0, 0])
    x = step_to(page, "x")
    unset = x.locator("td.unset")
    assert unset.count() == 24
    assert set(unset.all_inner_texts()) == {"?"}
    assert "masked off" in unset.first.get_attribute("title")
    assert "hold no value" in x.inner_text()
    assert "masked-off lanes pointed at x[1000..1023]" in page.inner_text("#step-accesses")
    unset.last.scroll_into_view_if_needed()
    page.screenshot(path=f"{SHOTS}/step-unset-lanes-1280x720.png")
