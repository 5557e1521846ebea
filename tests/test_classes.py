"""A class: its storage and API (create, the teacher link, join, progress, rename, remove, export)
and graded runs of its students counted from the grader's verdict, through real workers."""
import csv
import io
from urllib.parse import urlsplit

import pytest

from app.course import puzzles

CONSTANT_ADD = puzzles.builtin("constant_add")


def new_class(client, title="Kernels 101", chosen=("constant_add", "softmax")):
    made = client.post("/api/classes", json={"title": title, "puzzles": list(chosen)})
    assert made.status_code == 200, made.json
    return made.json


def joined(app, code, name):
    student = app.test_client()
    answer = student.post(f"/api/classes/{code}/join", json={"name": name})
    assert answer.status_code == 200, answer.json
    return student, answer.json["student"]["id"]


def graded(client, source, name="constant_add"):
    spec = client.get(f"/api/puzzles/{name}").json["spec"]
    result = client.post("/api/run", json={**spec, "source": source, "options": {**spec["options"], "ir": False}})
    assert result.status_code == 200, result.get_data(as_text=True)[:1000]
    return result.json


def progress_of(client, code):
    answer = client.get(f"/api/classes/{code}/progress")
    assert answer.status_code == 200, answer.json
    return {s["name"]: s["puzzles"] for s in answer.json["students"]}


@pytest.mark.parametrize("body, field, words", [
    ({"title": "", "puzzles": ["constant_add"]}, "title", "cannot be empty"),
    ({"title": "A", "puzzles": []}, "puzzles", "1 to 40"),
    ({"title": "A", "puzzles": ["no_such"]}, "puzzles[0].name", "no puzzle named 'no_such'"),
    ({"title": "A", "puzzles": ["constant_add", "constant_add"]}, "puzzles[1].name", "twice"),
    ({"title": "A", "puzzles": [{"name": "softmax", "due": "tomorrow"}]}, "puzzles[0].due", "a time"),
    ({"title": "A", "puzzles": ["softmax"], "secret": 1}, "secret", "unknown field"),
])
def test_a_class_that_cannot_be_made_is_refused_naming_its_field(client, body, field, words):
    answer = client.post("/api/classes", json=body)
    assert answer.status_code == 400 and answer.json["error"]["field"] == field
    assert words in answer.json["error"]["message"]


def test_the_teacher_and_only_the_teacher_sees_the_progress(app, client):
    made = new_class(client, chosen=[{"name": "softmax", "due": 1_900_000_000}, "constant_add"])
    code = made["code"]
    assert len(code) == 8 and made["teacher_url"].startswith("http")
    assert client.get(f"/api/classes/{code.lower()}/progress").status_code == 200  # the creator's session
    stranger = app.test_client()
    assert stranger.get(f"/api/classes/{code}/progress").status_code == 403
    assert stranger.get(f"/classes/{code}/teach/not-the-key").status_code == 403
    opened = stranger.get(urlsplit(made["teacher_url"]).path)
    assert opened.status_code == 302
    seen = stranger.get(f"/api/classes/{code}/progress").json
    assert [p["name"] for p in seen["puzzles"]] == ["softmax", "constant_add"]
    assert seen["puzzles"][0]["due"] == 1_900_000_000 and seen["puzzles"][1]["title"] == "Constant add"
    public = app.test_client().get(f"/api/classes/{code}").json
    assert public["title"] == "Kernels 101" and "students" not in public
    assert app.test_client().get("/api/classes/NOPE99").status_code == 404


def test_students_join_by_name_and_the_teacher_renames_and_removes(app, client):
    code = new_class(client)["code"]
    _, ada = joined(app, code, "Ada")
    taken = app.test_client().post(f"/api/classes/{code}/join", json={"name": "  ada "})
    assert taken.status_code == 409 and "Ada" not in taken.json["error"]["message"].split("'")[0]
    _, grace = joined(app, code, "Grace")
    assert list(progress_of(client, code)) == ["Ada", "Grace"]
    assert app.test_client().patch(f"/api/classes/{code}/students/{ada}", json={"name": "X"}).status_code == 403
    assert client.patch(f"/api/classes/{code}/students/{ada}", json={"name": "Grace"}).status_code == 409
    assert client.patch(f"/api/classes/{code}/students/{ada}", json={"name": "Ada L."}).status_code == 200
    row = client.get(f"/api/classes/{code}/students/{ada}").json
    assert row["name"] == "Ada L." and row["puzzles"]["constant_add"]["state"] == "not started"
    assert app.test_client().get(f"/api/classes/{code}/students/{ada}").status_code == 403
    assert client.delete(f"/api/classes/{code}/students/{grace}").status_code == 200
    assert list(progress_of(client, code)) == ["Ada L."]
    assert client.delete(f"/api/classes/{code}/students/{grace}").status_code == 404


def test_graded_runs_count_for_the_class_as_the_grader_judged_them(app, client):
    code = new_class(client)["code"]
    student, student_id = joined(app, code, "=cmd|' /C calc'!A0")
    outsider = app.test_client()
    cells = progress_of(client, code)["=cmd|' /C calc'!A0"]
    assert cells["constant_add"]["state"] == cells["softmax"]["state"] == "not started"
    wrong = graded(student, CONSTANT_ADD["starter"])
    assert not wrong["puzzle"]["ok"]
    cell = progress_of(client, code)["=cmd|' /C calc'!A0"]["constant_add"]
    assert cell["state"] == "trying" and cell["attempts"] == 1
    assert cell["last"] == {"ok": False, "failing": "N=20", "at": cell["last"]["at"]}
    assert graded(student, CONSTANT_ADD["solution"])["puzzle"]["ok"]
    assert graded(outsider, CONSTANT_ADD["solution"])["puzzle"]["ok"]  # not a student: counts nowhere
    assert graded(student, CONSTANT_ADD["solution"], "outer_sum")["puzzle"]["ok"] is False  # not the class's puzzle
    cell = progress_of(client, code)["=cmd|' /C calc'!A0"]["constant_add"]
    assert cell["state"] == "solved" and cell["tries_to_solve"] == 2 and cell["attempts"] == 2
    latest = client.get(f"/api/classes/{code}/students/{student_id}/latest/constant_add").json
    assert latest["ok"] and latest["source"] == CONSTANT_ADD["solution"] == latest["spec"]["source"]
    assert latest["spec"]["options"]["puzzle"] == "constant_add" and latest["spec"]["reference"] == {}
    assert app.test_client().get(f"/api/classes/{code}/students/{student_id}/latest/constant_add").status_code == 403
    exported = client.get(f"/api/classes/{code}/export.csv")
    assert exported.status_code == 200 and exported.mimetype == "text/csv"
    rows = list(csv.reader(io.StringIO(exported.get_data(as_text=True))))
    assert [r[:4] for r in rows[1:]] == [["'=cmd|' /C calc'!A0", "Constant add", "solved", "2"],
                                          ["'=cmd|' /C calc'!A0", "Fused softmax", "not started", "0"]]
    assert app.test_client().get(f"/api/classes/{code}/export.csv").status_code == 403


def test_a_graded_run_over_socketio_counts_too(make_app):
    from app import socketio
    app = make_app(WORKERS=1)  # its own: Socket.IO's test client takes over its server's sending
    client = app.test_client()
    code = new_class(client, chosen=["constant_add"])["code"]
    student, _ = joined(app, code, "Linus")
    spec = student.get("/api/puzzles/constant_add").json["spec"]
    dashboard = socketio.test_client(app, flask_test_client=client)
    assert dashboard.emit("watch_class", {"code": code}, callback=True) == {"watching": True}
    assert socketio.test_client(app, flask_test_client=student).emit("watch_class", {"code": code},
                                                                      callback=True) == {"watching": False}
    sio = socketio.test_client(app, flask_test_client=student)
    ack = sio.emit("run", {"spec": {**spec, "source": CONSTANT_ADD["solution"]}}, callback=True)
    assert "run_id" in ack, ack
    events = []
    for _ in range(600):
        events += sio.get_received()
        if any(e["name"] == "run_result" for e in events):
            break
        socketio.sleep(0.1)
    sio.disconnect()
    assert next(e for e in events if e["name"] == "run_result")["args"][0]["result"]["puzzle"]["ok"]
    assert progress_of(client, code)["Linus"]["constant_add"]["state"] == "solved"
    assert received(dashboard, "class_progress")[0]["args"][0] == {"code": code}  # the dashboard hears of it


def test_failures_are_grouped_by_how_they_fail(app, client):
    code = new_class(client, chosen=["constant_add"])["code"]
    nothing = [joined(app, code, name)[0] for name in ("Ann", "Bob")]
    unmasked, _ = joined(app, code, "Cy")
    sizes, _ = joined(app, code, "Dee")
    for student in nothing:
        graded(student, CONSTANT_ADD["starter"])
    graded(unmasked, CONSTANT_ADD["solution"].replace(", mask=mask)", ")"))
    graded(sizes, CONSTANT_ADD["solution"].replace("tl.store(out_ptr + offsets, x + 10.0, mask=mask)",
                                                   "if n < 400:\n        tl.store(out_ptr + offsets, x + 10.0, mask=mask)"))
    groups = client.get(f"/api/classes/{code}/progress").json["failures"]["constant_add"]
    assert [(g["kind"], g["count"]) for g in groups] == [
        ("wrong values: elements of out left unwritten", 2), ("out of bounds: elements of out left unwritten", 1),
        ("wrong values; only on sizes not shown", 1)]
    assert sorted(s["name"] for s in groups[0]["students"]) == ["Ann", "Bob"]
    assert groups[0]["example"]["source"] == CONSTANT_ADD["starter"]
    graded(unmasked, CONSTANT_ADD["solution"])  # solved: no longer in a group
    assert [g["kind"] for g in client.get(f"/api/classes/{code}/progress").json["failures"]["constant_add"]] == [
        "wrong values: elements of out left unwritten", "wrong values; only on sizes not shown"]


def received(sio, name, timeout_s=5):
    from app import socketio
    for _ in range(int(timeout_s * 10)):
        found = [e for e in sio.get_received() if e["name"] == name]
        if found:
            return found
        socketio.sleep(0.1)
    return []


def test_the_teacher_pushes_a_hint_to_the_class_or_to_some_students(make_app):
    from app import socketio
    app = make_app(wait=False, START_WORKERS=False)
    teacher = app.test_client()
    code = new_class(teacher, chosen=["constant_add"])["code"]
    (ann, ann_id), (bob, _) = joined(app, code, "Ann"), joined(app, code, "Bob")
    other_class = new_class(app.test_client(), chosen=["softmax"])["code"]
    elsewhere, _ = joined(app, other_class, "Cy")
    pages = {name: socketio.test_client(app, flask_test_client=c) for name, c in
             (("ann", ann), ("bob", bob), ("elsewhere", elsewhere), ("stranger", app.test_client()))}
    sent = teacher.post(f"/api/classes/{code}/push", json={"text": "Mask the tail: offsets < n", "link": "/puzzles"})
    assert sent.status_code == 200 and sent.json == {"sent_to": 2}
    for name in ("ann", "bob"):
        message = received(pages[name], "class_message")
        assert message and {k: message[0]["args"][0][k] for k in ("code", "text", "link")} == {
            "code": code, "text": "Mask the tail: offsets < n", "link": "/puzzles"}
    assert not received(pages["elsewhere"], "class_message", 0.5) and not received(pages["stranger"], "class_message", 0.5)
    assert teacher.post(f"/api/classes/{code}/push", json={"text": "Only Ann", "students": [ann_id]}).json == {"sent_to": 1}
    assert received(pages["ann"], "class_message") and not received(pages["bob"], "class_message", 0.5)
    assert ann.post(f"/api/classes/{code}/push", json={"text": "fake"}).status_code == 403
    bad = teacher.post(f"/api/classes/{code}/push", json={"text": "x", "link": "javascript:alert(1)"})
    assert bad.status_code == 400 and bad.json["error"]["field"] == "link"
    for page in pages.values():
        page.disconnect()


def test_the_leaderboard_on_this_host(app, client):
    """In the interpreter correct kernels are listed, not ranked, and the answer says why; on a GPU
    (test_the_leaderboard_ranks_gpu_times) by the grader's time."""
    code = new_class(client, chosen=["constant_add"])["code"]
    assert client.get(f"/api/classes/{code}/leaderboard/constant_add").status_code == 404  # none chosen
    code = client.post("/api/classes", json={"title": "Race", "puzzles": ["constant_add"], "leaderboard": True}).json["code"]
    student, _ = joined(app, code, "Ann")
    empty = student.get(f"/api/classes/{code}/leaderboard/constant_add").json
    device = app.extensions["dispatcher"].health()["device"]
    assert empty["entries"] == [] and (("interpreter" in empty["why"]) if device["kind"] == "interpreter"
                                       else empty["why"] is None)  # said before the first correct kernel
    result = graded(student, CONSTANT_ADD["solution"])
    board = student.get(f"/api/classes/{code}/leaderboard/constant_add").json
    assert [e["student"] for e in board["entries"]] == ["Ann"]
    if result["device"]["kind"] == "interpreter":
        assert board["ranked"] is False and "interpreter" in board["why"] and board["entries"][0]["rank"] is None
    assert app.test_client().get(f"/api/classes/{code}/leaderboard/constant_add").status_code == 403
    assert client.get(f"/api/classes/{code}/leaderboard/softmax").status_code == 404


def test_times_within_each_others_noise_share_a_rank(tmp_path):
    """The ranking, from kept submissions whose GPU timings are given (the grader's are tested above)."""
    from app.course import classes, reports, submissions
    from app.db import connect, init_db
    path = str(tmp_path / "board.sqlite")
    init_db(path)
    db = connect(path)
    code, _ = classes.create(db, "Race", [{"name": "constant_add", "due": None}], leaderboard=True)
    times = {"Ann": (1.00, 0.98, 1.02), "Bob": (1.01, 0.99, 1.03), "Cy": (1.50, 1.45, 1.55), "Dee": None}
    for name, band in times.items():
        member = classes.Membership(code, classes.join(db, code, name))
        timing = band and {"device": "gpu", "ranked": True, "kernel_ms": dict(zip(("median", "p20", "p80"), band))}
        verdict = {"name": "constant_add", "ok": True, "tests": [], "diff": None, "timing": timing}
        assert submissions.record(path, member, "constant_add", "source", {"puzzle": verdict},
                                  submissions.Quota(1 << 20, 1 << 20, 0))
    board = reports.leaderboard(db, classes.find(db, code), "constant_add")
    assert board["ranked"] and board["why"] is None
    assert [(e["student"], e["rank"]) for e in board["entries"]] == [("Ann", 1), ("Bob", 1), ("Cy", 3), ("Dee", None)]


def test_a_leaderboard_entry_submitted_after_the_due_time_is_late(tmp_path):
    """Each entry is one kernel: late where it was submitted after the puzzle's due time, whatever
    the student's other kernels; with no due time, none is."""
    import json
    import time
    from app.course import classes, reports, submissions
    from app.db import connect, init_db
    path = str(tmp_path / "board.sqlite")
    init_db(path)
    db = connect(path)
    code, _ = classes.create(db, "Race", [{"name": "constant_add", "due": None}], leaderboard=True)
    verdict = {"name": "constant_add", "ok": True, "tests": [], "diff": None, "timing": None}

    def submit(name):
        member = classes.Membership(code, classes.join(db, code, name))
        assert submissions.record(path, member, "constant_add", "source", {"puzzle": verdict},
                                  submissions.Quota(1 << 20, 1 << 20, 0))

    submit("Ann")
    due = time.time()
    time.sleep(0.05)
    submit("Bob")
    assert [e["late"] for e in reports.leaderboard(db, classes.find(db, code), "constant_add")["entries"]] == [False, False]
    db.execute("UPDATE class SET puzzles = ? WHERE code = ?", (json.dumps([{"name": "constant_add", "due": due}]), code))
    board = reports.leaderboard(db, classes.find(db, code), "constant_add")
    assert [(e["student"], e["late"]) for e in board["entries"]] == [("Ann", False), ("Bob", True)]


@pytest.mark.gpu
def test_the_leaderboard_ranks_gpu_times(app, client):
    code = client.post("/api/classes", json={"title": "Race", "puzzles": ["constant_add"], "leaderboard": True}).json["code"]
    for name in ("Ann", "Bob"):
        student, _ = joined(app, code, name)
        assert graded(student, CONSTANT_ADD["solution"])["puzzle"]["timing"]["ranked"]
    board = client.get(f"/api/classes/{code}/leaderboard/constant_add").json
    assert board["ranked"] and all(e["rank"] in (1, 2) for e in board["entries"])
    assert all(e["timing"]["kernel_ms"]["p20"] <= e["timing"]["kernel_ms"]["median"] for e in board["entries"])


@pytest.mark.browser
def test_a_class_in_the_browser(browser, live_server):
    """A teacher makes a class and opens its dashboard; three students join in their own browsers;
    one solves the puzzle, two fail it the same way: the dashboard follows within a second, groups
    the two, and a hint the teacher pushes to them appears on their pages."""
    import time

    from tests.support.browser import set_source
    shots = "/tmp/shots"
    teacher = browser.new_context(viewport={"width": 1280, "height": 860})
    made = teacher.request.post(f"{live_server}/api/classes", data={"title": "GPU class", "puzzles": ["constant_add"],
                                                                     "leaderboard": True})
    assert made.ok, made.text()
    code = made.json()["code"]
    dashboard = teacher.new_page()
    dashboard.goto(made.json()["teacher_url"])
    dashboard.wait_for_selector("#class-table")
    students = {}
    for name in ("Ann", "Bob", "Cy"):
        context = browser.new_context(viewport={"width": 1280, "height": 860})
        page = context.new_page()
        page.goto(f"{live_server}/classes/{code}")
        page.fill("#class-name", name)
        page.click("#class-join")
        page.wait_for_selector("#class-joined")
        page.goto(f"{live_server}/puzzles/constant_add")
        page.wait_for_selector(".puzzle-statement")
        students[name] = (context, page)
    dashboard.wait_for_selector('#class-table tr[data-student="Cy"]')  # joins are live
    dashboard.click("#class-edit summary")  # an edit under way outlives the table's live updates
    dashboard.fill("#class-edit-title", "GPU class, week 2")
    for name, source in (("Ann", CONSTANT_ADD["solution"]), ("Bob", CONSTANT_ADD["starter"]), ("Cy", CONSTANT_ADD["starter"])):
        page = students[name][1]
        set_source(page, source)
        page.evaluate("document.querySelector('#puzzle-verdict')?.remove()")
        page.click("#run-button")
        page.wait_for_selector("#puzzle-verdict", timeout=60_000)
        seen = time.monotonic()
        want = "solved" if name == "Ann" else "trying"
        dashboard.wait_for_function(f"() => document.querySelector('#class-table tr[data-student=\"{name}\"] .class-cell')"
                                    f"?.classList.contains('{want}')", timeout=5000)
        assert time.monotonic() - seen < 1.0, f"the dashboard took {time.monotonic() - seen:.2f} s to show {name}'s run"
    assert dashboard.input_value("#class-edit-title") == "GPU class, week 2"
    dashboard.click("#class-edit summary")
    group = dashboard.wait_for_selector('.class-groups[data-puzzle="constant_add"] .class-group')
    assert "2 students" in group.inner_text() and "Bob" in group.inner_text() and "Cy" in group.inner_text()
    dashboard.wait_for_function("() => document.querySelector('.class-board li')?.textContent.includes('Ann')")
    board = dashboard.inner_text('.class-board[data-puzzle="constant_add"]')
    ranked = teacher.request.get(f"{live_server}/api/classes/{code}/leaderboard/constant_add").json()
    assert ("#1 Ann" in board) if ranked["ranked"] else (  # on a CPU host: why not ranked, said once above the boards
        ranked["why"] in dashboard.inner_text("#class-boards") and ranked["why"] not in board)
    dashboard.click('#class-table tr[data-student="Bob"] .class-cell')
    assert "add 10, store the result" in dashboard.wait_for_selector("#class-latest .class-source").inner_text()
    dashboard.screenshot(path=f"{shots}/class-dashboard.png", full_page=True)
    group.query_selector(".class-push-text").fill("Store the sums: tl.store(out_ptr + offsets, x + 10.0, mask=mask)")
    group.query_selector("button").click()
    for name in ("Bob", "Cy"):
        banner = students[name][1].wait_for_selector(".class-message", timeout=5000)
        assert "tl.store" in banner.inner_text()
    students["Bob"][1].screenshot(path=f"{shots}/class-pushed-hint.png")
    dashboard.once("dialog", lambda dialog: dialog.accept())  # Remove asks first
    dashboard.click('#class-table tr[data-student="Cy"] .class-remove')
    dashboard.wait_for_function("() => !document.querySelector('#class-table tr[data-student=\"Cy\"]')")
    assert students["Ann"][1].query_selector(".class-message") is None
    for context, _ in students.values():
        context.close()
    teacher.close()


def test_the_teacher_reorders_dates_and_changes_the_puzzles(app, client):
    code = new_class(client)["code"]
    edited = client.patch(f"/api/classes/{code}", json={"title": "Kernels 102", "puzzles": [
        {"name": "softmax", "due": 1_900_000_000}, "constant_add", "matmul"], "leaderboard": True})
    assert edited.status_code == 200, edited.json
    assert edited.json["title"] == "Kernels 102" and edited.json["leaderboard"] is True
    assert [(p["name"], p["due"]) for p in edited.json["puzzles"]] == [
        ("softmax", 1_900_000_000), ("constant_add", None), ("matmul", None)]
    assert app.test_client().patch(f"/api/classes/{code}", json={"title": "Mine now"}).status_code == 403
    refused = client.patch(f"/api/classes/{code}", json={"puzzles": ["no_such"]})
    assert refused.status_code == 400 and refused.json["error"]["field"] == "puzzles[0].name"
    assert app.test_client().get(f"/api/classes/{code}").json["title"] == "Kernels 102"


def test_a_class_is_full_at_its_roster_bound(tmp_path, monkeypatch):
    from app.course import classes
    from app.db import connect, init_db
    path = str(tmp_path / "full.sqlite")
    init_db(path)
    db = connect(path)
    monkeypatch.setattr(classes, "MAX_STUDENTS", 2)
    code, _ = classes.create(db, "Small", [{"name": "constant_add", "due": None}])
    classes.join(db, code, "Ann")
    classes.join(db, code, "Bob")
    with pytest.raises(classes.ClassError, match="full") as raised:
        classes.join(db, code, "Cy")
    assert raised.value.status == 409


def test_a_student_back_on_the_class_page_is_known_and_a_teacher_previewing_joins_nobody(app, client):
    code = new_class(client)["code"]
    assert client.get(f"/api/classes/{code}").json["you"] is None  # the teacher is no student of it
    assert client.get(f"/api/classes/{code}").json["teaching"] is True
    student, student_id = joined(app, code, "Ann")
    you = student.get(f"/api/classes/{code}").json["you"]
    assert (you["id"], you["name"], you["puzzles"]["softmax"]["state"]) == (student_id, "Ann", "not started")
    assert student.get(f"/api/classes/{code}").json["teaching"] is False
    assert student.get(f"/api/classes/{new_class(app.test_client())['code']}").json["you"] is None  # another class
    preview = client.get(f"/classes/{code}?preview")
    assert preview.status_code == 200 and code in preview.get_data(as_text=True)
    assert list(progress_of(client, code)) == ["Ann"]
    client.delete(f"/api/classes/{code}/students/{student_id}")
    assert student.get(f"/api/classes/{code}").json["you"] is None  # removed


def test_an_edit_is_checked_before_the_class_is_looked_up(app, client):
    code = new_class(client)["code"]
    for where in (code, "NOPE99"):
        answer = app.test_client().patch(f"/api/classes/{where}", json={"title": "x", "order": [1]})
        assert answer.status_code == 400 and answer.json["error"]["field"] == "order"
    assert app.test_client().patch("/api/classes/NOPE99", json={"title": "x"}).status_code == 404


@pytest.mark.browser
def test_the_teacher_edits_the_class_and_previews_it_as_a_student(browser, live_server):
    """The dashboard's form: a puzzle added from the list, moved first, given a due time, saved (the
    table's columns follow); one that does not exist is refused under its row. The preview is the
    students' page, with its join form, and joining there adds nobody."""
    shots = "/tmp/shots"
    teacher = browser.new_context(viewport={"width": 1280, "height": 900})
    made = teacher.request.post(f"{live_server}/api/classes", data={"title": "Kernels 101", "puzzles": ["constant_add"],
                                                                     "leaderboard": True})
    code = made.json()["code"]
    dashboard = teacher.new_page()
    dashboard.goto(made.json()["teacher_url"])
    dashboard.wait_for_selector("#class-table")
    dashboard.click("#class-edit summary")
    dashboard.select_option("#class-edit-add", "softmax")
    dashboard.click("#class-edit-add-button")
    dashboard.click('.class-edit-row[data-puzzle="softmax"] .class-edit-up')
    assert dashboard.eval_on_selector_all(".class-edit-row", "rows => rows.map((r) => r.dataset.puzzle)") == ["softmax", "constant_add"]
    dashboard.fill('.class-edit-row[data-puzzle="softmax"] input[type="datetime-local"]', "2031-03-01T09:30")
    dashboard.fill("#class-edit-title", "Kernels 102")
    dashboard.click("#class-edit-save")
    dashboard.wait_for_function("() => document.querySelector('#class-edit-note').textContent.startsWith('Saved')")
    dashboard.wait_for_function("() => document.querySelectorAll('#class-table thead th').length === 3")
    headers = dashboard.eval_on_selector_all("#class-table thead th", "cells => cells.map((c) => c.textContent)")
    assert headers[1].startswith("Fused softmax") and "due" in headers[1] and headers[2] == "Constant add"
    assert dashboard.inner_text("h1").startswith("Kernels 102")
    public = teacher.request.get(f"{live_server}/api/classes/{code}").json()
    assert [p["name"] for p in public["puzzles"]] == ["softmax", "constant_add"] and public["title"] == "Kernels 102"
    due = dashboard.evaluate("() => Math.round(new Date('2031-03-01T09:30').getTime() / 1000)")
    assert public["puzzles"][0]["due"] == due
    dashboard.screenshot(path=f"{shots}/class-edit.png", full_page=True)

    dashboard.fill("#class-edit-own", "/puzzles/t-nosuchpuzzle")
    dashboard.click("#class-edit-add-button")
    dashboard.click("#class-edit-save")
    problem = dashboard.wait_for_selector('.class-edit-row[data-puzzle="t-nosuchpuzzle"] .class-edit-problem')
    assert "no puzzle named 't-nosuchpuzzle'" in problem.inner_text()
    assert len(teacher.request.get(f"{live_server}/api/classes/{code}").json()["puzzles"]) == 2  # nothing saved

    dashboard.click("#class-preview-link")
    dashboard.wait_for_selector("#class-preview")
    assert "Join the class" in dashboard.inner_text("#class-body")
    titles = dashboard.eval_on_selector_all(".course-title", "items => items.map((i) => i.textContent)")
    assert titles == ["Fused softmax", "Constant add"] and "due" in dashboard.inner_text(".course-item")
    dashboard.fill("#class-name", "Teacher as Ann")
    dashboard.click("#class-join")
    dashboard.wait_for_selector("#class-joined")
    dashboard.wait_for_selector(".class-board")  # the leaderboards a student sees
    dashboard.screenshot(path=f"{shots}/class-preview.png", full_page=True)
    assert teacher.request.get(f"{live_server}/api/classes/{code}/progress").json()["students"] == []
    dashboard.click("#class-preview a")
    dashboard.wait_for_selector("#class-table")
    assert "No student has joined yet" in dashboard.inner_text("#class-body")

    student = browser.new_context().new_page()  # a student who joined and comes back is still in
    student.goto(f"{live_server}/classes/{code}")
    student.fill("#class-name", "Ann")
    student.click("#class-join")
    student.wait_for_selector("#class-joined")
    student.reload()
    assert "You are in, Ann" in student.wait_for_selector("#class-joined").inner_text()
    student.goto(f"{live_server}/classes/{code}?preview")  # the preview is the teacher's alone
    assert "You are in, Ann" in student.wait_for_selector("#class-joined").inner_text()
    assert student.query_selector("#class-preview") is None
    student.context.close()
    teacher.close()


@pytest.mark.browser
def test_a_teacher_makes_a_class_from_the_page(browser, live_server):
    """From the course's page to a class: a refusal said, the puzzles picked and dated, the class
    made with its code and teacher link, and its dashboard one click away."""
    shots = "/tmp/shots"
    teacher = browser.new_context(viewport={"width": 1280, "height": 900})
    page = teacher.new_page()
    page.goto(f"{live_server}/puzzles")
    page.click("#course-new-class")
    page.wait_for_selector("#class-new[open]")
    page.fill("#class-edit-title", "Kernels 101")
    page.click("#class-edit-save")  # no puzzle yet
    page.wait_for_function("() => document.querySelector('#class-edit-note').textContent.includes('at least one puzzle')")
    for name in ("constant_add", "outer_sum"):
        page.select_option("#class-edit-add", name)
        page.click("#class-edit-add-button")
    assert page.inner_text("#class-edit-note") == ""  # the refusal was of the list before
    page.fill('.class-edit-row[data-puzzle="outer_sum"] input[type="datetime-local"]', "2031-03-08T09:00")
    page.check("#class-edit-leaderboard")
    page.screenshot(path=f"{shots}/class-new.png", full_page=True)
    page.click("#class-edit-save")
    code = page.wait_for_selector("#class-made-code").inner_text()
    page.screenshot(path=f"{shots}/class-made.png", full_page=True)
    teacher_url = page.get_attribute("#class-made-open", "href")
    assert f"/classes/{code}/teach/" in teacher_url and teacher_url in page.inner_text("#class-made")
    made = teacher.request.get(f"{live_server}/api/classes/{code}").json()
    assert made["title"] == "Kernels 101" and made["leaderboard"] and made["teaching"]
    assert [p["name"] for p in made["puzzles"]] == ["constant_add", "outer_sum"] and made["puzzles"][1]["due"]
    page.click("#class-made-open")
    page.wait_for_selector("#class-table")
    assert page.url == f"{live_server}/classes/{code}"
    other = browser.new_context().new_page()  # the teacher link opens the dashboard in another browser
    other.goto(teacher_url)
    other.wait_for_selector("#class-table")
    other.context.close()
    teacher.close()
