"""A class in three browsers at once, a teacher's and two students', none of them reloading: the
dashboard, the students' class pages and puzzle pages, and the CSV follow each join, push and run."""
import csv
import io
import os
import time

import pytest

from app.course import puzzles
from tests.support.browser import set_source

CONSTANT_ADD = puzzles.builtin("constant_add")
SHOTS = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "screenshots")


def student_page(browser, live_server, code, name):
    """A student's browser on the class's page, joined by typing the name and pressing Enter; what
    it logs as failing (console errors, answers of 400 and up) is in page.failures."""
    page = browser.new_context(viewport={"width": 1280, "height": 860}).new_page()
    page.failures = []
    page.on("console", lambda message: message.type == "error" and page.failures.append(message.text))
    page.on("response", lambda response: response.status >= 400 and page.failures.append(
        f"{response.status} {response.url}"))
    page.goto(f"{live_server}/classes/{code}")
    page.fill("#class-name", name)
    page.press("#class-name", "Enter")
    page.wait_for_selector("#class-joined")
    return page


def messages_readable(page, count):
    """`count` pushed messages on the page, each shown whole: none covers another."""
    page.wait_for_function(f"() => document.querySelectorAll('.class-message').length === {count}", timeout=10_000)
    return page.evaluate("""() => [...document.querySelectorAll('.class-message')].map((m) => {
        const box = m.getBoundingClientRect();
        const top = document.elementFromPoint(box.left + box.width / 2, box.top + box.height / 2);
        return {text: m.textContent, seen: m.contains(top), top: box.top, bottom: box.bottom}; })""")


def cell_text(page, student, puzzle):
    return page.evaluate("([s, p]) => { const row = document.querySelector(`#class-table tr[data-student=\"${s}\"]`);"
                         " const i = [...document.querySelectorAll('#class-table thead th')].findIndex((th) => th.dataset.puzzle === p);"
                         " return row && i > 0 ? row.children[i].textContent : null; }", [student, puzzle])


@pytest.mark.browser
def test_a_class_live_in_three_browsers(browser, live_server):
    os.makedirs(SHOTS, exist_ok=True)
    teacher = browser.new_context(viewport={"width": 1280, "height": 860})
    past = time.time() - 3600
    made = teacher.request.post(f"{live_server}/api/classes", data={
        "title": "Kernels 101", "leaderboard": True,
        "puzzles": [{"name": "constant_add", "due": past}, {"name": "softmax", "due": time.time() + 7 * 86400}]})
    assert made.ok, made.text()
    code = made.json()["code"]
    dashboard = teacher.new_page()
    dialogs = []
    dashboard.on("dialog", lambda dialog: (dialogs.append(dialog.message), dialog.dismiss()))
    dashboard.goto(made.json()["teacher_url"])
    dashboard.wait_for_selector("#class-table")
    assert "was due" in dashboard.inner_text('#class-table th[data-puzzle="constant_add"] .class-due.past')
    assert dashboard.query_selector('#class-table th[data-puzzle="softmax"] .class-due.past') is None

    ann = student_page(browser, live_server, code, "Ann")
    bob = student_page(browser, live_server, code, "Bob")
    dashboard.wait_for_selector('#class-table tr[data-student="Bob"]', timeout=5000)  # joins are live
    assert dashboard.query_selector('#class-table tr[data-student="Ann"]') is not None
    assert "No student has joined yet" not in dashboard.inner_text("#class-body")
    assert "was due" in bob.inner_text('.course-item[data-puzzle="constant_add"]')

    # Two hints pushed to the class: on both students' class pages, each readable.
    for hint in ("Mask the tail: offsets < n", "Add 10.0, then store with the same mask"):
        dashboard.fill(".class-push-text", hint)
        dashboard.press(".class-push-text", "Enter")
        dashboard.wait_for_function("() => document.querySelector('form.class-push .class-push-note').textContent === 'sent to 2'")
        dashboard.evaluate("() => { document.querySelector('form.class-push .class-push-note').textContent = ''; }")
    for page in (ann, bob):
        shown = messages_readable(page, 2)
        assert "Mask the tail" in shown[0]["text"] and "same mask" in shown[1]["text"]
        assert all(m["seen"] for m in shown) and shown[0]["bottom"] <= shown[1]["top"], shown
    bob.screenshot(path=f"{SHOTS}/class-student-two-hints.png", full_page=True)

    # Ann opens the puzzle: the hints are there too, and the page says her runs count for the class.
    ann.goto(f"{live_server}/puzzles/constant_add")
    ann.wait_for_selector(".puzzle-statement")
    assert "Kernels 101" in ann.wait_for_selector("#puzzle-class").inner_text()
    messages_readable(ann, 2)
    ann.click('.class-message:has-text("Mask the tail") button')  # read: gone from her inbox
    messages_readable(ann, 1)
    set_source(ann, CONSTANT_ADD["solution"])
    ann.click("#run-button")
    ann.wait_for_selector("#puzzle-verdict.ok", timeout=60_000)

    # Her solve reaches the dashboard (marked late: the puzzle was due an hour ago) and Bob's leaderboard.
    dashboard.wait_for_function("() => document.querySelector('#class-table tr[data-student=\"Ann\"] .class-cell.solved.late')",
                                timeout=5000)
    assert "late" in cell_text(dashboard, "Ann", "constant_add")
    bob.wait_for_function("() => document.querySelector('.class-board[data-puzzle=\"constant_add\"]')?.textContent.includes('Ann')",
                          timeout=5000)
    board = teacher.request.get(f"{live_server}/api/classes/{code}/leaderboard/constant_add").json()
    assert len(bob.query_selector_all(".class-board-why")) == (1 if board["why"] else 0)  # said once, not per puzzle
    # Her kernel came after the due time: late on the leaderboards too, Bob's and the teacher's.
    entry = bob.locator('.class-board[data-puzzle="constant_add"] li', has_text="Ann")
    assert entry.locator(".class-late").inner_text() == "late"
    dashboard.wait_for_selector('.class-board[data-puzzle="constant_add"] li.late .class-late', timeout=5000)
    bob.locator("#class-boards").screenshot(path=f"{SHOTS}/class-leaderboard-late.png")
    # Bob's own failing run, by his browser's session: his class page marks it, late, as it lands.
    spec = bob.context.request.get(f"{live_server}/api/puzzles/constant_add").json()["spec"]
    assert bob.context.request.post(f"{live_server}/api/run", data={**spec, "source": CONSTANT_ADD["starter"]}).ok
    own = bob.wait_for_selector('.course-item[data-puzzle="constant_add"] .class-own', timeout=5000)
    assert "trying (1)" in own.inner_text() and "late" in own.inner_text()
    assert bob.query_selector('.course-item[data-puzzle="softmax"] .class-own') is None
    messages_readable(bob, 2)  # Bob read nothing yet
    assert bob.failures == [], bob.failures  # no 403 of a teacher's API, nothing else failing

    # The dashboard by keyboard: Tab from Ann's roster buttons reaches her cell, Enter shows her kernel.
    dashboard.wait_for_selector('#class-table tr[data-student="Bob"] .class-cell.trying')
    dashboard.focus('#class-table tr[data-student="Ann"] .class-remove')
    dashboard.keyboard.press("Tab")
    assert dashboard.evaluate("() => document.activeElement.closest('td')?.classList.contains('solved')")
    dashboard.keyboard.press("Enter")
    assert "x + 10.0" in dashboard.wait_for_selector("#class-latest .class-source").inner_text()
    dashboard.screenshot(path=f"{SHOTS}/class-dashboard.png", full_page=True)

    # The CSV: a row per student and puzzle, idle ones too, puzzles by title, on time or late.
    exported = teacher.request.get(f"{live_server}/api/classes/{code}/export.csv")
    rows = list(csv.DictReader(io.StringIO(exported.text())))
    table = {(r["student"], r["puzzle"]): r for r in rows}
    assert len(rows) == 4 and set(table) == {(s, p) for s in ("Ann", "Bob") for p in ("Constant add", "Fused softmax")}
    assert (table["Ann", "Constant add"]["status"], table["Ann", "Constant add"]["on time"]) == ("solved", "late")
    assert table["Ann", "Constant add"]["graded runs"] == "1" and table["Ann", "Constant add"]["first run (UTC)"]
    assert (table["Bob", "Constant add"]["status"], table["Bob", "Constant add"]["on time"]) == ("not solved yet", "late")
    assert (table["Bob", "Fused softmax"]["status"], table["Bob", "Fused softmax"]["graded runs"]) == ("not started", "0")

    # Rename in place, no prompt; the student's page knows the new name at once.
    dashboard.click('#class-table tr[data-student="Bob"] .class-rename')
    dashboard.fill(".class-rename-name", "Bobby")
    dashboard.press(".class-rename-name", "Enter")
    dashboard.wait_for_selector('#class-table tr[data-student="Bobby"]', timeout=5000)
    bob.wait_for_function("() => document.querySelector('#class-joined').textContent.includes('Bobby')", timeout=5000)

    # Start over on the solved puzzle asks first: the editor shows the kernel that passed.
    ann.goto(f"{live_server}/puzzles/constant_add")
    ann.wait_for_selector(".puzzle-statement")
    asked = []
    ann.once("dialog", lambda dialog: (asked.append(dialog.message), dialog.dismiss()))
    ann.click("#puzzle-start-over")
    ann.wait_for_timeout(300)
    assert asked and "solved" in asked[0]
    assert "x + 10.0" in ann.evaluate("() => window.playground.editorView.state.doc.toString()")
    assert dialogs == []
    for page in (ann, bob):
        page.context.close()
    teacher.close()


@pytest.mark.browser
def test_the_new_class_form_adds_what_is_chosen_and_says_what_is_missing(browser, live_server):
    page = browser.new_context(viewport={"width": 1280, "height": 900}).new_page()
    page.goto(f"{live_server}/classes/new")
    page.wait_for_selector("#class-new[open]")
    page.fill("#class-edit-title", "Kernels 101")
    page.click("#class-edit-save")  # nothing chosen yet: said as a problem, in words of the form
    note = page.wait_for_selector("#class-edit-note.class-edit-problem")
    assert "Choose at least one puzzle" in note.inner_text()
    assert page.evaluate("() => getComputedStyle(document.querySelector('#class-edit-note')).color") != \
        page.evaluate("() => getComputedStyle(document.querySelector('.course-summary')).color")
    page.select_option("#class-edit-add", "outer_sum")  # chosen is added
    page.wait_for_selector('.class-edit-row[data-puzzle="outer_sum"]')
    assert page.inner_text("#class-edit-note") == ""
    due = '.class-edit-row[data-puzzle="outer_sum"] input[type="datetime-local"]'
    page.fill(due, "2020-03-01T09:00")  # a due time already past is flagged as it is typed
    page.wait_for_selector('.class-edit-row[data-puzzle="outer_sum"] .class-edit-past:not([hidden])')
    page.fill(due, "2099-03-01T09:00")
    page.wait_for_selector('.class-edit-row[data-puzzle="outer_sum"] .class-edit-past[hidden]', state="attached")
    page.fill("#class-edit-own", "/puzzles/constant_add")
    page.press("#class-edit-own", "Enter")
    page.wait_for_selector('.class-edit-row[data-puzzle="constant_add"]')
    page.click("#class-edit-save")
    code = page.wait_for_selector("#class-made-code").inner_text()
    made = page.context.request.get(f"{live_server}/api/classes/{code}").json()
    assert [p["name"] for p in made["puzzles"]] == ["outer_sum", "constant_add"]
    page.context.close()


@pytest.mark.browser
def test_the_dashboard_fits_a_phone(browser, live_server):
    teacher = browser.new_context(viewport={"width": 390, "height": 800}, is_mobile=True, has_touch=True)
    made = teacher.request.post(f"{live_server}/api/classes", data={
        "title": "Phones", "puzzles": ["constant_add", "softmax", "outer_sum", "matmul"]})
    code = made.json()["code"]
    for name in ("Ann Longname-Example", "Bob"):
        student = browser.new_context()
        assert student.request.post(f"{live_server}/api/classes/{code}/join", data={"name": name}).ok
        student.close()
    page = teacher.new_page()
    page.goto(made.json()["teacher_url"])
    page.wait_for_selector("#class-table")
    assert page.evaluate("() => document.documentElement.scrollWidth") <= 390
    teacher.close()
