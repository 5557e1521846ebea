"""Accessibility of the page at 1280x720: every visible text meets WCAG AA contrast on what it is
drawn on (4.5:1; 3:1 for large text) in each tab; the accessibility tree names the editor, the
tabs, the splitters and the program chips; tabs move with the arrow keys and control their panels;
splitters move with the keyboard; an input's controls are named after it, and follow a rename."""
import pytest

from tests.support.browser import page_without_errors
from tests.test_browser import open_diagram, open_playground, run_and_wait

pytestmark = pytest.mark.browser
SHOTS = "/tmp/shots"

# Contrast of each visible text element against its composed background (its ancestors' colours
# laid over the page's), with opacity. Plots (drawn text in SVG) and disabled controls are left out.
LOW_CONTRAST = """() => {
  const parse = (c) => { const m = c.match(/rgba?\\(([^)]+)\\)/); if (!m) return null;
    const p = m[1].split(/[ ,\\/]+/).filter(Boolean).map(Number); return { r: p[0], g: p[1], b: p[2], a: p.length > 3 ? p[3] : 1 }; };
  const lin = (v) => { v /= 255; return v <= 0.03928 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4; };
  const lum = (c) => 0.2126 * lin(c.r) + 0.7152 * lin(c.g) + 0.0722 * lin(c.b);
  const over = (top, bottom) => ({ r: top.r * top.a + bottom.r * (1 - top.a), g: top.g * top.a + bottom.g * (1 - top.a),
                                   b: top.b * top.a + bottom.b * (1 - top.a), a: 1 });
  const page = parse(getComputedStyle(document.body).backgroundColor);
  const background = (el) => {
    const layers = [];
    for (let e = el; e; e = e.parentElement) {
      const c = parse(getComputedStyle(e).backgroundColor);
      if (c && c.a > 0) { layers.push(c); if (c.a >= 1) break; }
    }
    return layers.reverse().reduce((bg, c) => over(c, bg), page);
  };
  const low = [], seen = new Set();
  const walker = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
  while (walker.nextNode()) {
    const el = walker.currentNode.parentElement;
    if (!walker.currentNode.textContent.trim() || !el || seen.has(el)) continue;
    seen.add(el);
    if (el.closest("svg, .js-plotly-plot, :disabled, [aria-hidden=true]")) continue;
    const box = el.getBoundingClientRect(), style = getComputedStyle(el);
    if (!box.width || !box.height || style.visibility === "hidden") continue;
    let opacity = 1;
    for (let e = el; e; e = e.parentElement) opacity *= Number(getComputedStyle(e).opacity);
    const fg = parse(style.color), bg = background(el);
    const [a, b] = [lum(over({ ...fg, a: fg.a * opacity }, bg)), lum(bg)].sort((x, y) => y - x);
    const ratio = (a + 0.05) / (b + 0.05), size = parseFloat(style.fontSize);
    const need = size >= 24 || (Number(style.fontWeight) >= 700 && size >= 18.66) ? 3 : 4.5;
    if (ratio < need) low.push(`${walker.currentNode.textContent.trim().slice(0, 30)!r} ${ratio.toFixed(2)}:1 (${el.tagName}.${el.className})`);
  }
  return low;
}""".replace("!r}", "}")


@pytest.fixture
def page(browser):
    with page_without_errors(browser, width=1280, height=720, console=False) as page:
        yield page


def test_every_text_meets_wcag_aa_contrast_in_each_tab(page, live_server):
    open_playground(page, live_server + "/examples/vector_add")
    assert page.evaluate(LOW_CONTRAST) == [], "lesson"
    assert run_and_wait(page) == "ok"
    assert page.evaluate(LOW_CONTRAST) == [], "results"
    for tab in ("diagram", "timings", "ir"):
        page.click(f"[data-tab={tab}]")
        page.wait_for_timeout(600)
        assert page.evaluate(LOW_CONTRAST) == [], tab
    page.fill("input[data-param=BLOCK_SIZE]", "")
    assert run_and_wait(page) == "error"
    assert page.evaluate(LOW_CONTRAST) == [], "a form error"
    page.screenshot(path=f"{SHOTS}/a11y-contrast-form-error.png")


def test_the_accessibility_tree_names_the_editor_tabs_splitters_and_program_chips(page, live_server):
    open_playground(page, live_server + "/examples/masked_tail")
    assert run_and_wait(page) == "ok"
    open_diagram(page)
    tree = page.locator("body").aria_snapshot()
    assert 'textbox "Kernel source (Python)"' in tree
    assert 'tablist "Output"' in tree and 'tab "Diagram" [selected]' in tree
    assert 'separator "Source column width (%)"' in tree and 'separator "Launch form height (%)"' in tree
    for pid in (0, 1, 2):
        assert f'button "program ({pid}, 0, 0)"' in tree
    page.get_by_role("button", name="program (2, 0, 0)", exact=True).press("Enter")  # a chip is a button: keys work
    page.wait_for_function("document.querySelector('#diagram').dataset.selectedPid === '2,0,0'")


def test_tabs_control_their_panels_and_move_with_the_arrow_keys(page, live_server):
    open_playground(page, live_server + "/examples/masked_tail")
    for tab in page.locator("[role=tab]:not([hidden])").all():
        panel = tab.get_attribute("aria-controls")
        assert page.locator(f"#{panel}[role=tabpanel]").count() == 1, panel
    assert page.locator("[role=tab][tabindex='0']").count() == 1  # one tab stop for the list
    page.focus("[data-tab=lesson]")
    page.keyboard.press("ArrowRight")
    assert page.evaluate("document.activeElement.dataset.tab") == "results"
    assert page.get_attribute("[data-tab=results]", "aria-selected") == "true"
    assert page.locator("#panel-results").is_visible()
    page.keyboard.press("ArrowLeft")
    page.keyboard.press("ArrowLeft")  # wraps round to the last tab
    assert page.evaluate("document.activeElement.dataset.tab") == page.evaluate(
        "[...document.querySelectorAll('[data-tab]')].filter(t => !t.hidden).at(-1).dataset.tab")


def test_splitters_move_with_the_keyboard(page, live_server):
    open_playground(page, live_server + "/examples/masked_tail")
    left = page.locator("#column-left").bounding_box()["width"]
    page.focus("#split-cols")
    for _ in range(5):
        page.keyboard.press("ArrowLeft")
    assert page.locator("#column-left").bounding_box()["width"] < left - 100
    assert int(page.get_attribute("#split-cols", "aria-valuenow")) < 50
    launch = page.locator("#launch").bounding_box()["height"]
    page.focus("#split-rows")
    page.keyboard.press("ArrowUp")
    page.keyboard.press("ArrowUp")
    assert page.locator("#launch").bounding_box()["height"] > launch
    page.screenshot(path=f"{SHOTS}/a11y-splitters-moved.png")


def test_an_inputs_controls_are_named_after_it_and_follow_a_rename(page, live_server):
    open_playground(page, live_server + "/examples/masked_tail")
    assert page.get_by_role("textbox", name="shape of x").count() == 1
    page.get_by_role("textbox", name="name of input x").fill("a")
    assert page.get_by_role("textbox", name="shape of a").count() == 1
    assert page.get_by_role("combobox", name="dtype of a").count() == 1
    assert page.get_by_role("button", name="Remove input a").count() == 1
    assert page.get_by_role("textbox", name="shape of x").count() == 0
