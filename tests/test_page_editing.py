"""Typing in the editor as a person types: Enter indents by the file's own indentation (Python's four
spaces, or what the loaded file uses), Undo stops at the kernel that was loaded (an example, one picked
after it, a puzzle), and long lines wrap on request."""
import pytest

from tests.support.browser import page_without_errors
from tests.test_browser import open_playground

pytestmark = pytest.mark.browser

TWO_SPACES = '''import triton
import triton.language as tl


@triton.jit
def copy_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
  offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
  tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=offs < n), mask=offs < n)
'''


@pytest.fixture
def page(browser):
    with page_without_errors(browser, width=1440, height=900) as page:
        yield page


def source(page):
    return page.evaluate("window.playground.getSpec().source")


def line_of(page, number):
    return page.evaluate(f"window.playground.editorView.state.doc.line({number}).text")


def cursor_line(page):
    return page.evaluate("(() => { const s = window.playground.editorView.state; return s.doc.lineAt(s.selection.main.head).number; })()")


def go_to_end_of(page, text):
    """Clicks into the editor, then moves the cursor to the end of the line holding `text` (with the keyboard)."""
    page.click(".cm-content")
    page.keyboard.press("Control+Home")
    number = page.evaluate("(t) => window.playground.editorView.state.doc.toString().split('\\n').findIndex(l => l.includes(t)) + 1", text)
    assert number > 0, text
    for _ in range(number - 1):
        page.keyboard.press("ArrowDown")
    page.keyboard.press("End")
    assert cursor_line(page) == number
    return number


def test_enter_in_a_kernel_body_indents_by_four_spaces(page, live_server):
    open_playground(page, live_server + "/examples/vector_add")
    number = go_to_end_of(page, "mask = offsets < n")
    page.keyboard.press("Enter")
    page.keyboard.type("for i in range(2):")
    page.keyboard.press("Enter")
    page.keyboard.type("x = x + 1")
    assert line_of(page, number + 1) == "    for i in range(2):"
    assert line_of(page, number + 2) == "        x = x + 1"   # one level more: four spaces, as the file has


def test_a_new_function_typed_from_scratch_indents_by_four(page, live_server):
    open_playground(page, live_server + "/examples/vector_add")
    page.click(".cm-content")
    page.keyboard.press("Control+End")
    page.keyboard.press("Enter")
    page.keyboard.type("def helper(x):")
    page.keyboard.press("Enter")
    page.keyboard.type("return x")
    assert source(page).rstrip().endswith("def helper(x):\n    return x")


def test_enter_follows_a_file_indented_by_two(page, live_server):
    open_playground(page, live_server + "/examples/vector_add")
    page.evaluate("(source) => window.playground.setSpec({...window.playground.getSpec(), source, kernel: 'copy_kernel'})", TWO_SPACES)
    number = go_to_end_of(page, "offs = tl.program_id(0)")
    page.keyboard.press("Enter")
    page.keyboard.type("if n > 0:")
    page.keyboard.press("Enter")
    page.keyboard.type("n = n")
    assert line_of(page, number + 1) == "  if n > 0:"
    assert line_of(page, number + 2) == "    n = n"


def test_undo_stops_at_the_loaded_kernel(page, live_server):
    open_playground(page, live_server + "/examples/vector_add")
    loaded = source(page)
    go_to_end_of(page, "mask = offsets < n")
    page.keyboard.type("  # mine")
    page.keyboard.press("Control+z")
    page.keyboard.press("Control+z")   # one more than there were edits
    page.keyboard.press("Control+z")
    assert source(page) == loaded
    assert page.input_value("#example-select") == "vector_add"


def test_undo_does_not_bring_back_the_kernel_picked_before(page, live_server):
    open_playground(page, live_server + "/examples/vector_add")
    page.select_option("#example-select", "row_sum")
    page.wait_for_function("window.playground.getSpec().source.includes('row_sum')")
    picked = source(page)
    page.click(".cm-content")
    for _ in range(3):
        page.keyboard.press("Control+z")
    assert source(page) == picked
    page.keyboard.press("Control+Shift+z")   # nor redo to anything
    assert source(page) == picked


def test_long_lines_wrap_on_request_and_the_choice_is_kept(page, live_server):
    open_playground(page, live_server + "/examples/vector_add")
    go_to_end_of(page, "mask = offsets < n")
    page.keyboard.type("  # " + "a long comment " * 30)
    scroller = "document.querySelector('.cm-scroller')"
    assert page.evaluate(f"{scroller}.scrollWidth > {scroller}.clientWidth")   # no wrap: it scrolls sideways
    page.check("#wrap-lines")
    assert page.evaluate(f"{scroller}.scrollWidth <= {scroller}.clientWidth")
    page.reload()
    page.wait_for_function("window.playground !== undefined")
    assert page.is_checked("#wrap-lines")
    assert page.evaluate("document.querySelector('.cm-content').classList.contains('cm-lineWrapping')")
