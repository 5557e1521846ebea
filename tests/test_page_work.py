"""The page a student keeps using, in a real browser at 1280x720: work is never lost (a draft per
address, offered back; a question before anything replaces edits; the history of this browser's
runs; Fork on a shared link), Tab never edits what the reader cannot see, and an example's lesson
is shown as prose beside its kernel."""
import pytest

from tests.support.browser import page_without_errors
from tests.test_browser import open_playground, record_runs, run_and_wait, share, share_from_elsewhere

pytestmark = pytest.mark.browser
SHOTS = "/tmp/shots"


@pytest.fixture
def page(browser):
    with page_without_errors(browser, width=1280, height=720) as page:
        yield page


def source(page):
    return page.evaluate("window.playground.getSpec().source")


def type_at_end(page, text):
    page.evaluate("""(text) => { const v = window.playground.editorView;
        v.dispatch({changes: {from: v.state.doc.length, insert: text}}); }""", text)
    page.wait_for_timeout(900)  # the draft is saved a moment after the last keystroke


def pick_example(page, name):
    page.select_option("#example-select", name)


def answer_dialogs(page, accept):
    """Answers every confirm() of the page (`answers["accept"]` may change later); returns its record."""
    answers = {"accept": accept, "asked": []}

    def answer(dialog):
        answers["asked"].append(dialog.message)
        dialog.accept() if answers["accept"] else dialog.dismiss()
    page.on("dialog", answer)
    return answers


def focused_in_editor(page):
    return page.evaluate("document.activeElement?.classList.contains('cm-content') === true")


# ---- 1. work is never lost ----------------------------------------------------------------------

def test_edits_survive_a_reload_and_are_offered_back_with_restore_or_discard(page, live_server):
    open_playground(page, live_server + "/examples/masked_tail")
    assert page.locator(".draft-offer").count() == 0
    original = source(page)
    type_at_end(page, "\n# my own note\n")

    page.reload()
    page.wait_for_function("window.playground !== undefined")
    offer = page.locator(".draft-offer")
    assert offer.is_visible() and "Unsaved edits" in offer.inner_text()
    assert source(page) == original  # nothing is replaced before the reader chooses
    page.screenshot(path=f"{SHOTS}/work-restore-offer.png")
    page.get_by_role("button", name="Restore").click()
    assert source(page).endswith("# my own note\n")
    assert page.locator(".draft-offer").count() == 0

    page.reload()  # restored edits are still edits: saved again, offered again
    page.wait_for_function("window.playground !== undefined")
    page.get_by_role("button", name="Discard").click()
    page.reload()
    page.wait_for_function("window.playground !== undefined")
    assert page.locator(".draft-offer").count() == 0
    assert source(page) == original


def test_choosing_an_example_asks_before_replacing_edits_and_back_finds_them(page, live_server):
    open_playground(page, live_server + "/examples/masked_tail")
    type_at_end(page, "\n# keep me\n")

    answers = answer_dialogs(page, accept=False)
    pick_example(page, "row_sum")
    page.wait_for_timeout(300)
    assert len(answers["asked"]) == 1 and "Replace your edits" in answers["asked"][0]
    assert source(page).endswith("# keep me\n")
    assert page.input_value("#example-select") == "masked_tail"  # the picker still names what is shown

    answers["accept"] = True
    pick_example(page, "row_sum")
    page.wait_for_function("location.pathname === '/examples/row_sum'")
    assert page.evaluate("window.playground.getSpec().kernel") == "row_sum_kernel"

    page.go_back()
    page.wait_for_function("location.pathname === '/examples/masked_tail' && window.playground !== undefined")
    page.get_by_role("button", name="Restore").click()
    assert source(page).endswith("# keep me\n")


def test_an_unedited_page_is_replaced_without_a_question(page, live_server):
    open_playground(page, live_server + "/examples/masked_tail")
    answers = answer_dialogs(page, accept=False)
    pick_example(page, "row_sum")
    page.wait_for_function("location.pathname === '/examples/row_sum'")
    assert answers["asked"] == []


def test_edits_after_share_are_kept_under_the_link_not_dropped_by_a_reload(page, live_server):
    open_playground(page, live_server + "/examples/masked_tail")
    url = share(page)
    assert "/s/" in url
    type_at_end(page, "\n# after sharing\n")
    page.goto(url)
    page.wait_for_function("window.playground !== undefined")
    page.get_by_role("button", name="Restore").click()
    assert source(page).endswith("# after sharing\n")


def test_the_history_brings_back_an_earlier_run_with_its_verdict(page, live_server):
    open_playground(page, live_server + "/examples/masked_tail")
    page.fill("input[data-param=BLOCK_SIZE]", "8")
    assert run_and_wait(page) == "ok"
    ran = page.evaluate("window.playground.getSpec()")

    answer_dialogs(page, accept=True)  # the run's edits are kept in the history: replace them
    pick_example(page, "row_sum")
    page.wait_for_function("location.pathname === '/examples/row_sum'")
    page.click("#history-button")
    entry = page.locator(".history-entry").first
    assert entry.is_visible()
    assert "ok" in entry.inner_text() and "/examples/masked_tail" in entry.inner_text()
    page.screenshot(path=f"{SHOTS}/work-history.png")
    entry.click()
    assert page.evaluate("window.playground.getSpec()") == ran
    assert page.input_value("input[data-param=BLOCK_SIZE]") == "8"


def test_fork_makes_a_shared_link_an_editable_copy_that_keeps_its_edits(browser, page, live_server):
    url = share_from_elsewhere(page, live_server, "masked_tail", {})
    sent = record_runs(page)
    open_playground(page, url)
    assert page.get_by_role("button", name="Run this shared kernel").is_visible()

    page.get_by_role("button", name="Fork").click()
    snippet_id = url.rsplit("/", 1)[1]
    assert page.evaluate("location.pathname") == f"/fork/{snippet_id}"
    assert page.locator("#link-prompt").count() == 0
    assert page.locator("#fork-button").count() == 0
    page.screenshot(path=f"{SHOTS}/work-forked.png")

    type_at_end(page, "\n# my fork\n")
    assert run_and_wait(page) == "ok"
    assert sent[-1].get("from_link") is True  # a fork of someone else's code is still their code

    page.reload()
    page.wait_for_function("window.playground !== undefined")
    assert page.locator("#link-prompt").count() == 0
    page.get_by_role("button", name="Restore").click()
    assert source(page).endswith("# my fork\n")
    page.goto(url)  # the link itself is untouched
    page.wait_for_function("window.playground !== undefined")
    assert not source(page).endswith("# my fork\n")


def test_a_fork_of_an_unknown_snippet_is_not_found(page, live_server):
    response = page.goto(live_server + "/fork/doesnotexist")
    assert response.status == 404
    page.errors.clear()  # the browser logs the 404 itself


# ---- 2. Tab -------------------------------------------------------------------------------------

def test_tab_moves_through_the_editor_without_typing_in_it(page, live_server):
    open_playground(page, live_server + "/examples/vector_add")
    before = source(page)
    page.focus("#example-select")
    for _ in range(12):
        page.keyboard.press("Tab")
        if focused_in_editor(page):
            break
    assert focused_in_editor(page)
    page.keyboard.press("Tab")
    assert not focused_in_editor(page)  # Tab moved on
    assert source(page) == before
    assert "Tab moves the focus on" in page.inner_text("#tab-hint")


def test_tab_indents_once_opted_in_on_the_line_in_view_and_escape_then_tab_leaves(page, live_server):
    open_playground(page, live_server + "/examples/vector_add")
    page.check("#tab-indents")
    assert "Esc then Tab" in page.inner_text("#tab-hint")
    page.focus(".cm-content")  # the cursor waits on the kernel's first line, in view
    cursor_line = page.evaluate("(() => { const s = window.playground.editorView.state; return s.doc.lineAt(s.selection.main.head).text; })()")
    assert cursor_line.startswith("@triton.jit")
    page.keyboard.press("Tab")
    assert "\n    @triton.jit" in source(page)
    assert page.locator(".cm-activeLine", has_text="@triton.jit").is_visible()
    page.screenshot(path=f"{SHOTS}/tab-indent.png")

    edited = source(page)
    page.keyboard.press("Escape")
    page.keyboard.press("Tab")
    assert not focused_in_editor(page)
    assert source(page) == edited

    page.reload()  # the choice is remembered by this browser
    page.wait_for_function("window.playground !== undefined")
    assert page.is_checked("#tab-indents")


def test_the_editor_has_an_accessible_name(page, live_server):
    open_playground(page, live_server + "/")
    assert page.get_by_role("textbox", name="Kernel source (Python)").count() == 1


# ---- 4. the lesson -----------------------------------------------------------------------------

def test_an_example_opens_on_its_lesson_as_prose_with_the_kernel_in_view(page, live_server):
    open_playground(page, live_server + "/examples/vector_add")
    assert page.get_attribute("[data-tab].active", "data-tab") == "lesson"
    lesson = page.locator(".lesson")
    assert page.inner_text(".lesson-title") == "Vector add: one program per block"
    assert '"""' not in lesson.inner_text() and "=====" not in lesson.inner_text()
    assert page.locator(".lesson code", has_text="tl.program_id(0)").count() == 1
    assert page.locator(".lesson-try").is_visible() and page.locator(".lesson-try").inner_text().startswith("Try:")
    box, view = page.locator(".lesson-try").bounding_box(), page.viewport_size
    assert box["y"] + box["height"] <= view["height"]  # "what to try" in view without scrolling
    decorator = page.locator(".cm-line", has_text="@triton.jit").bounding_box()
    scroller = page.locator(".cm-scroller").bounding_box()
    assert scroller["y"] <= decorator["y"] and decorator["y"] + decorator["height"] <= scroller["y"] + scroller["height"]
    page.screenshot(path=f"{SHOTS}/lesson-1280x720.png")

    assert run_and_wait(page) == "ok"  # a run shows its results
    assert page.get_attribute("[data-tab].active", "data-tab") == "results"
    page.click("[data-tab=lesson]")
    assert page.locator(".lesson-title").is_visible()


def test_the_lesson_follows_the_source_and_goes_when_there_is_no_docstring(page, live_server):
    open_playground(page, live_server + "/examples/vector_add")
    page.evaluate("""() => { const v = window.playground.editorView, text = v.state.doc.toString();
        const end = text.indexOf('\"\"\"', 3) + 3;
        v.dispatch({changes: {from: 0, to: end, insert: '\"\"\"\\nMy kernel\\n=========\\n\\nIt adds *two* vectors.\\n\"\"\"'}}); }""")
    page.wait_for_function("document.querySelector('.lesson-title')?.textContent === 'My kernel'")
    assert page.inner_text(".lesson em") == "two"
    page.evaluate("""() => { const v = window.playground.editorView, text = v.state.doc.toString();
        v.dispatch({changes: {from: 0, to: text.indexOf('\"\"\"', 3) + 3, insert: ''}}); }""")
    page.wait_for_function("document.querySelector('[data-tab=lesson]').hidden")


# ---- 11. the picker and the title name what is shown ---------------------------------------------

def test_the_title_names_the_example_and_the_picker_lets_go_once_its_kernel_is_replaced(page, live_server):
    open_playground(page, live_server + "/examples/masked_tail")
    assert page.title() == "Masks: the last block hangs over the edge · Triton Playground"
    assert page.input_value("#example-select") == "masked_tail"
    page.evaluate("""() => { const v = window.playground.editorView;
        v.dispatch({changes: {from: 0, to: v.state.doc.length,
                              insert: 'import triton\\n\\n@triton.jit\\ndef mine(x_ptr):\\n    pass\\n'}}); }""")
    page.wait_for_function("document.querySelector('#example-select').value === ''")
    assert page.title() == "Triton Playground"

    page.goto(live_server + "/new")
    assert page.title() == "New kernel · Triton Playground"


def test_a_link_keeps_the_diagrams_row_width_and_the_ir_stage(browser, page, live_server):
    open_playground(page, live_server + "/examples/vector_add")
    assert run_and_wait(page) == "ok"
    page.click("[data-tab=diagram]")
    page.wait_for_selector(".diagram-width")
    page.fill(".diagram-width", "512")
    page.press(".diagram-width", "Enter")
    page.click("[data-tab=ir]")
    page.click(".ir-stage[data-stage=ptx]")
    url = share(page)

    other = browser.new_context(viewport={"width": 1280, "height": 720}).new_page()
    try:
        other.goto(url)
        other.wait_for_function("window.playground !== undefined")
        other.get_by_role("button", name="Run this shared kernel").click()
        other.wait_for_selector(".ir-stage.active", timeout=60000)
        assert other.get_attribute(".ir-stage.active", "data-stage") == "ptx"
        other.click("[data-tab=diagram]")
        other.wait_for_selector(".diagram-width")
        assert other.input_value(".diagram-width") == "512"
        assert "rows of 512 elements" in other.inner_text('.diagram-tensor[data-tensor="out"] .diagram-note')
    finally:
        other.context.close()

    spec = page.evaluate("window.playground.getSpec()")
    refused = page.request.post(f"{live_server}/api/snippets", data={"spec": spec, "ui": {"row_width": 0}})
    assert refused.status == 400 and refused.json()["error"]["field"] == "ui.row_width"


def test_a_link_can_carry_a_title_and_a_description(browser, page, live_server):
    open_playground(page, live_server + "/examples/masked_tail")
    first = share(page)
    page.get_by_role("button", name="Describe…").click()
    page.fill("#share-title", "Week 3: the masked tail")
    page.fill("#share-description", "Run it, then pick program 2 in the diagram.\nWhich lanes are hatched?")
    page.get_by_role("button", name="Update link").click()
    page.wait_for_function("(first) => { const v = document.querySelector('#share-url').value; return v && v !== first; }", arg=first)
    url = page.input_value("#share-url")
    page.screenshot(path=f"{SHOTS}/share-title-description.png")

    other = browser.new_context(viewport={"width": 1280, "height": 720}).new_page()
    try:
        other.goto(url)
        other.wait_for_function("window.playground !== undefined")
        assert other.title() == "Week 3: the masked tail · Triton Playground"
        assert other.inner_text(".link-prompt-title").startswith("Week 3: the masked tail")
        assert other.inner_text(".link-prompt-description") == "Run it, then pick program 2 in the diagram.\nWhich lanes are hatched?"
        other.screenshot(path=f"{SHOTS}/link-with-title.png")
    finally:
        other.context.close()

    spec = page.evaluate("window.playground.getSpec()")
    refused = page.request.post(f"{live_server}/api/snippets", data={"spec": spec, "ui": {"title": "x" * 121}})
    assert refused.status == 400 and refused.json()["error"]["field"] == "ui.title"
