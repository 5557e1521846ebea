"""Compare in script mode: a pinned launch is compared with the same launch of the next run (its
selection kept across an edit and a re-run), or the tab says plainly that two runs show different
launches and offers the same one; the labels name launches, never `undefined`; a run with no edit is
not "changed since this run"."""
import pytest

from tests.support.browser import page_without_errors, set_source
from tests.test_browser import run_and_wait
from tests.test_page_script import launch_rows, pick_launch, script_page

pytestmark = pytest.mark.browser
SHOTS = "screenshots"
# A vector add and its wrapper, called for two sizes: two launches of add_kernel, grids (97) and (4).
VECTOR_ADD = """import torch
import triton
import triton.language as tl


@triton.jit
def add_kernel(x_ptr, y_ptr, output_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    pid = tl.program_id(axis=0)
    offsets = pid * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    x = tl.load(x_ptr + offsets, mask=mask)
    y = tl.load(y_ptr + offsets, mask=mask)
    tl.store(output_ptr + offsets, x + y, mask=mask)


def add(x, y):
    output = torch.empty_like(x)
    n_elements = output.numel()
    grid = lambda meta: (triton.cdiv(n_elements, meta['BLOCK_SIZE']),)
    add_kernel[grid](x, y, output, n_elements, BLOCK_SIZE=1024)
    return output


torch.manual_seed(0)
x, y = torch.rand(98432), torch.rand(98432)
assert (add(x, y) == x + y).all()
assert (add(x[:4096], y[:4096]) == x[:4096] + y[:4096]).all()
"""


def script_page_without_bench(page, url):
    """Script mode with the program above, timing off: the interpreter's clock is no speed to compare."""
    script_page(page, url, VECTOR_ADD)
    page.uncheck("#script-bench")


@pytest.fixture
def page(browser):
    with page_without_errors(browser, width=1440, height=900) as page:
        yield page


def selected_launch(page):
    return page.evaluate("document.querySelector('#launches-table tbody tr.selected')?.dataset.index ?? null")


def compare_text(page):
    page.click("[data-tab=compare]")
    return page.inner_text("#compare")


def test_a_pinned_launch_is_compared_with_the_same_launch_after_an_edit(page, live_server):
    script_page_without_bench(page, live_server)
    assert run_and_wait(page) == "ok"
    pick_launch(page, 1)
    page.click("[data-tab=compare]")
    page.click("#pin-button")
    set_source(page, VECTOR_ADD.replace("BLOCK_SIZE=1024", "BLOCK_SIZE=512"))   # the edit to compare
    page.wait_for_timeout(400)   # the editor's text settles (source-changed)
    assert run_and_wait(page) == "ok"
    assert selected_launch(page) == "1"   # the launch asked for again, not the program's default
    assert page.evaluate("window.playground.getSpec().options.launch") == 1
    text = compare_text(page)
    assert "Pinned: launch 1 (add_kernel, grid (4))" in text
    assert "This run: launch 1 (add_kernel, grid (8))" in text   # the same launch: 4096 elements, blocks of 512
    assert "different launches" not in text and "undefined" not in text
    assert page.is_visible("#compare-coverage"), text
    page.wait_for_selector("#compare-coverage .js-plotly-plot")
    page.screenshot(path=f"{SHOTS}/compare-script-same-launch.png", full_page=True)


def test_runs_that_show_different_launches_say_so_and_offer_the_same_one(page, live_server):
    script_page_without_bench(page, live_server)
    assert run_and_wait(page) == "ok"
    pick_launch(page, 1)
    page.click("[data-tab=compare]")
    page.click("#pin-button")
    pick_launch(page, 0)
    text = compare_text(page)
    assert ("Not compared: these runs show different launches. The pinned run shows launch 1 (add_kernel, grid (4)); "
            "this run shows launch 0 (add_kernel, grid (97))") in text
    assert page.locator("#compare-resources, #compare-coverage, #compare-ir-diff, #compare-ir-same").count() == 0   # no false before and after
    page.screenshot(path=f"{SHOTS}/compare-script-different-launches.png", full_page=True)
    page.click("#compare-same-launch")
    page.wait_for_function("document.querySelector('#launches-table tbody tr.selected')?.dataset.index === '1'", timeout=60000)
    page.wait_for_function("document.querySelector('#status-line').dataset.state === 'ok'", timeout=60000)
    text = compare_text(page)
    assert "different launches" not in text and "This run: launch 1 (add_kernel, grid (4))" in text


def test_a_script_run_with_no_edit_is_not_changed_since_its_run(page, live_server):
    script_page_without_bench(page, live_server)
    page.wait_for_timeout(400)
    for _ in range(2):
        assert run_and_wait(page) == "ok"
        page.wait_for_timeout(400)   # past the editor's and the form's own events
        assert page.get_attribute("#status-line", "data-edited") == "false"
        assert page.locator("#results.edited").count() == 0
    assert [row["selected"] for row in launch_rows(page)] == [True, False]


def test_the_sweep_in_script_mode_says_what_it_runs_not_undefined(page, live_server):
    script_page_without_bench(page, live_server)
    text = compare_text(page)
    assert "undefined" not in text
    assert "make a form run of a launch" in page.inner_text("#sweep-script")
