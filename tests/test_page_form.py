"""Starting from scratch at 1280x720: New kernel opens a blank kernel that runs; editing its
parameters makes the form propose a mapping for each (a pointer: an input of its name, one click
to add; a size: the first input's numel(); a block: a power of 2); every problem the form can see
is shown at once on its field before any run is sent; a dtype its init cannot make is caught in
the form in plain words."""
import pytest

from tests.support.browser import page_without_errors, set_source as replace_source
from tests.test_browser import open_playground, record_runs, run_and_wait

pytestmark = pytest.mark.browser
SHOTS = "/tmp/shots"

SCALE = '''import triton
import triton.language as tl


@triton.jit
def scale_kernel(inp_ptr, out_ptr, numel, BLOCK_SIZE: tl.constexpr):
    pid = tl.program_id(0)
    offsets = pid * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < numel
    v = tl.load(inp_ptr + offsets, mask=mask)
    tl.store(out_ptr + offsets, v * 2, mask=mask)
'''


@pytest.fixture
def page(browser):
    with page_without_errors(browser, width=1280, height=720, console=False) as page:
        yield page


def set_source(page, source):
    replace_source(page, source)
    page.wait_for_timeout(500)  # the form follows the source after a short pause


def arg(page, name):
    return page.input_value(f"input[data-param={name}]")


def problems(page):
    return page.eval_on_selector_all("#launch .field-problem", "ps => ps.map(p => p.textContent)")


def test_new_kernel_opens_a_blank_kernel_that_runs(page, live_server):
    open_playground(page, live_server + "/examples/masked_tail")
    page.click("#new-kernel")
    page.wait_for_function("location.pathname === '/new' && window.playground !== undefined")
    assert page.evaluate("window.playground.getSpec().kernel") == "my_kernel"
    assert "# your code here" in page.evaluate("window.playground.getSpec().source")
    assert run_and_wait(page) == "ok"


def test_from_scratch_the_form_proposes_a_mapping_and_shows_every_problem_at_once(page, live_server):
    sent = record_runs(page)
    open_playground(page, live_server + "/new")
    set_source(page, SCALE)

    assert arg(page, "inp_ptr") == "inp"              # a pointer: the input of its name, to add
    assert page.locator(".add-for-arg").inner_text() == "+ input inp"
    assert arg(page, "out_ptr") == "out"
    assert arg(page, "numel") == "x.numel()"          # a size: the first input's
    assert arg(page, "BLOCK_SIZE") == "1024"          # a block: a power of 2

    page.click("#run-button")
    page.wait_for_function("document.querySelector('#status-line').dataset.state === 'error'")
    found = problems(page)
    assert len(found) == 2, found                     # both at once, before any run
    assert any("argument 'inp_ptr' is 'inp', but nothing is named inp" in p for p in found)
    assert any(p.startswith("the grid uses n, which is neither an input nor an argument") for p in found)
    assert page.get_attribute("input[data-param=inp_ptr]", "aria-invalid") == "true"
    assert "error-field" in page.get_attribute("#grid-input", "class")
    assert sent == []
    page.screenshot(path=f"{SHOTS}/form-all-problems.png")

    page.click(".add-for-arg")                        # one click: the input inp
    assert page.locator("#inputs-table tr[data-input=inp]").count() == 1
    assert page.locator(".add-for-arg").count() == 0
    page.fill("#grid-input", "(triton.cdiv(numel, meta['BLOCK_SIZE']),)")
    page.fill("#inputs-table tr[data-input=out] .cell-ref input", "inp * 2")
    assert run_and_wait(page) == "ok"
    assert len(sent) == 1 and problems(page) == []


def test_a_dtype_its_init_cannot_make_is_caught_in_the_form_in_plain_words(page, live_server):
    sent = record_runs(page)
    open_playground(page, live_server + "/new")
    page.select_option("#inputs-table tr[data-input=x] .cell-dtype select", "int32")
    page.fill("#inputs-table tr[data-input=out] .cell-ref input", "y + 1")  # a stale reference
    page.click("#run-button")
    page.wait_for_function("document.querySelector('#status-line').dataset.state === 'error'")
    found = problems(page)
    assert found[0] == ("x: randn draws floating-point numbers, not int32: pick a float dtype "
                        "(float32, float16, bfloat16, float64), or the init randint for whole numbers")
    assert "the reference of out uses y, which is not an input" in found[1]
    assert page.get_attribute("#inputs-table tr[data-input=x] .cell-dtype select", "aria-invalid") == "true"
    assert "normal_kernel_cpu" not in page.inner_text("#results")   # torch's words never reach the reader
    assert sent == []
    page.screenshot(path=f"{SHOTS}/form-dtype-init.png")

    page.select_option("#inputs-table tr[data-input=x] .cell-init select", "randint")
    page.fill("#inputs-table tr[data-input=out] .cell-ref input", "x")
    page.select_option("#inputs-table tr[data-input=out] .cell-dtype select", "int32")
    assert run_and_wait(page) == "ok"
