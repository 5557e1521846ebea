"""Attacks on classes, each as a client would make it, through Flask's test client (and Socket.IO's)
against a real app: a roster filled by one client, names that read as another student's, formulas
reaching a spreadsheet through the export, a removed student who still sees and hears the class,
graded runs that grow the database without bound, the class's pages framed by any site, class
codes guessed, and pushed links that lead to another site."""
import contextlib
import csv
import io
import sqlite3
import threading
import unicodedata

import pytest

from app.course import puzzles
from tests.support.apps import running_app

CONSTANT_ADD = puzzles.builtin("constant_add")
FORMULA_STARTS = ("=", "+", "-", "@")


def client_at(app, address):
    """A new browser (no cookies) at `address`, as the proxy in front (TRUSTED_PROXY_HOPS=1) says."""
    client = app.test_client()
    client.environ_base["HTTP_X_FORWARDED_FOR"] = address
    return client


def new_class(teacher, chosen=("constant_add",), leaderboard=False):
    made = teacher.post("/api/classes", json={"title": "Kernels", "puzzles": list(chosen), "leaderboard": leaderboard})
    assert made.status_code == 200, made.json
    return made.json


def join(app, code, name, address="198.51.100.1", client=None):
    client = client or client_at(app, address)
    return client, client.post(f"/api/classes/{code}/join", json={"name": name})


def joined(app, code, name, address="198.51.100.1"):
    client, answer = join(app, code, name, address)
    assert answer.status_code == 200, answer.json
    return client, answer.json["student"]["id"]


def roster(teacher, code):
    answer = teacher.get(f"/api/classes/{code}/progress")
    assert answer.status_code == 200, answer.json
    return answer.json["students"]


@pytest.fixture
def quiet_app(make_app):
    """An app without workers, behind one trusted proxy (a request says its address)."""
    return make_app(wait=False, START_WORKERS=False, TRUSTED_PROXY_HOPS=1)


@pytest.fixture(scope="module")
def graded_app(tmp_path_factory):
    """An app with real workers that grade, behind one trusted proxy."""
    with running_app(tmp_path_factory.mktemp("hostile-classes"), WORKERS=2, TRUSTED_PROXY_HOPS=1) as app:
        yield app


def graded(client, source):
    spec = client.get("/api/puzzles/constant_add").json["spec"]
    answer = client.post("/api/run", json={**spec, "source": source, "options": {**spec["options"], "ir": False}})
    assert answer.status_code == 200, answer.get_data(as_text=True)[:1000]
    return answer.json


# ---------------------------------------------------------------- the roster

def test_one_client_cannot_fill_a_classs_roster(quiet_app, monkeypatch):
    """250 joins from one address, each a new browser, at a class of 200 seats: the address gets its
    CLASS_SEATS_PER_ADDRESS and no more (429 saying so, with Retry-After), the class's students from
    elsewhere still join, a browser in the class cannot join it twice, and its teacher can close it
    to newcomers and remove the flood's students, freeing their seats."""
    from app.course import classes
    monkeypatch.setattr(classes, "MAX_STUDENTS", 200)
    teacher = quiet_app.test_client()
    code = new_class(teacher)["code"]
    answers = [join(quiet_app, code, f"bot {i}", "203.0.113.66")[1] for i in range(250)]
    student, _ = joined(quiet_app, code, "Ada", "198.51.100.7")  # the class is not full for its students
    taken = [a for a in answers if a.status_code == 200]
    seats = quiet_app.config["CLASS_SEATS_PER_ADDRESS"]
    assert len(taken) <= seats, f"one address took {len(taken)} seats of the class"
    refused = [a for a in answers if a.status_code != 200]
    assert refused and all(a.status_code == 429 and int(a.headers["Retry-After"]) >= 1 for a in refused)
    assert {a.json["error"]["message"].split(" (")[0] for a in refused} <= {
        f"{seats} students of this class joined from this address already",
        f"this address joined classes {quiet_app.config['JOINS_PER_MINUTE']} times in the last minute"}
    again = student.post(f"/api/classes/{code}/join", json={"name": "Ada 2"})
    assert again.status_code == 409 and "already, as 'Ada'" in again.json["error"]["message"]
    assert teacher.patch(f"/api/classes/{code}", json={"locked": True}).json["locked"] is True
    closed = join(quiet_app, code, "Grace", "198.51.100.8")[1]
    assert closed.status_code == 403 and "closed to new students" in closed.json["error"]["message"]
    assert client_at(quiet_app, "198.51.100.8").get(f"/api/classes/{code}").json["locked"] is True
    assert teacher.patch(f"/api/classes/{code}", json={"locked": "yes"}).status_code == 400
    flood = [s["id"] for s in roster(teacher, code) if s["name"].startswith("bot")]
    for student_id in flood:
        assert teacher.delete(f"/api/classes/{code}/students/{student_id}").status_code == 200
    assert [s["name"] for s in roster(teacher, code)] == ["Ada"]
    teacher.patch(f"/api/classes/{code}", json={"locked": False})
    again = join(quiet_app, code, "bot again", "203.0.113.66")[1]  # seats freed; the minute's joins may not be yet
    assert again.status_code == 200 or "JOINS_PER_MINUTE" in again.json["error"]["message"], again.json


# ---------------------------------------------------------------- names

ADA_LOOK_ALIKES = [
    "\u0410da",          # a Cyrillic capital A
    "Ada\u3164",         # a Hangul filler after it
    "Ada\u2800",         # a blank Braille pattern
    "A\u034fda",         # a combining grapheme joiner, which shows nothing
    "Ad\u0430",          # a Cyrillic small a
    "\uff21\uff44\uff41",  # full-width letters
    "\U0001d400\U0001d41d\U0001d41a",  # mathematical bold
    "Ada\u0301",          # a combining accent
    "Ada\ufe0f",          # a variation selector
    "ADA ",
]


@pytest.mark.parametrize("name", ADA_LOOK_ALIKES, ids=[n.encode("unicode_escape").decode() for n in ADA_LOOK_ALIKES])
def test_a_name_that_reads_as_another_students_is_refused(quiet_app, name):
    teacher = quiet_app.test_client()
    code = new_class(teacher)["code"]
    joined(quiet_app, code, "Ada")
    answer = join(quiet_app, code, name, "198.51.100.2")[1]
    assert answer.status_code in (400, 409), f"{name!r} joined beside 'Ada': {answer.json}"
    assert answer.json["error"]["field"] == "name"
    assert "Ada" in answer.json["error"]["message"] or "one alphabet" in answer.json["error"]["message"]
    assert [s["name"] for s in roster(teacher, code)] == ["Ada"]


@pytest.mark.parametrize("name, words", [
    ("\u3164", "no letter or digit that can be seen"),
    ("\u2800\u2800", "no letter or digit that can be seen"),
    ("\u115f\u1160", "no letter or digit that can be seen"),
    ("\u200b\u200d", "no letter or digit that can be seen"),
    ("\u0301\u0301", "no letter or digit that can be seen"),
    ("\u0301Ann", "starts with an accent"),
    ("A" + "\u0336" * 6 + "nn", "stacks more than 2 accents"),
    ("Ann\ue000", "cannot be shown"),
    ("P\u0430ul", "mixes letters of Cyrillic and Latin"),
])
def test_an_invisible_or_unreadable_name_is_refused(quiet_app, name, words):
    code = new_class(quiet_app.test_client())["code"]
    answer = join(quiet_app, code, name)[1]
    assert answer.status_code == 400 and words in answer.json["error"]["message"], answer.json


def test_whole_script_look_alikes_and_renames_are_refused_and_real_names_are_kept(quiet_app):
    teacher = quiet_app.test_client()
    code = new_class(teacher)["code"]
    joined(quiet_app, code, "Cope")
    assert join(quiet_app, code, "\u0421\u043e\u0440\u0435", "198.51.100.3")[1].status_code == 409  # all Cyrillic
    kept = {name: joined(quiet_app, code, name, f"198.51.100.{10 + i}")[1]
            for i, name in enumerate(["Nguyễn Văn An", "田中 Taro", "Иван", "Zoë", "O'Brien"])}
    _, bob = joined(quiet_app, code, "Bob", "198.51.100.30")
    renamed = teacher.patch(f"/api/classes/{code}/students/{bob}", json={"name": "C\u043epe"})
    assert renamed.status_code == 400  # mixed scripts
    renamed = teacher.patch(f"/api/classes/{code}/students/{bob}", json={"name": "Zoe"})
    assert renamed.status_code == 409 and "Zoë" in renamed.json["error"]["message"]
    names = [s["name"] for s in roster(teacher, code)]
    assert all(unicodedata.is_normalized("NFKC", n) for n in names) and set(kept) <= set(names)


# ---------------------------------------------------------------- the export

HOSTILE_NAMES = ["x;=HYPERLINK(\"http://evil.example\")", "\uff1d1+1", "\ufe62cmd|' /C calc'!A0",
                 " @SUM(A1)", "a|=cmd", "b,-2+3", "c ;\u3000+1"]


def cells_a_spreadsheet_may_read(text):
    """Every cell of `text` as spreadsheets may split it: at each separator, honouring quotes or not."""
    for separator in (",", ";", "\t", "|"):
        for row in csv.reader(io.StringIO(text), delimiter=separator):
            yield from row
        for line in text.splitlines():
            yield from line.split(separator)


def formula(cell):
    visible = next((c for c in cell if not (c.isspace() or unicodedata.category(c) == "Cf")), "")
    return unicodedata.normalize("NFKC", visible)[:1] in FORMULA_STARTS


def test_no_cell_of_the_export_is_a_formula_whatever_the_separator_or_width(graded_app):
    teacher = graded_app.test_client()
    code = new_class(teacher)["code"]
    for index, name in enumerate(HOSTILE_NAMES):
        student, _ = joined(graded_app, code, name, f"198.51.101.{index}")
        assert graded(student, CONSTANT_ADD["starter"])["puzzle"] is not None
    with contextlib.closing(sqlite3.connect(graded_app.config["DATABASE"])) as db, db:  # a name kept before names were folded
        db.execute("UPDATE student SET name = ? WHERE class_code = ? AND name = ?", ("\uff1d1+1", code, "=1+1"))
    exported = teacher.get(f"/api/classes/{code}/export.csv").get_data(as_text=True)
    read = [c for c in cells_a_spreadsheet_may_read(exported) if c]
    assert not [c for c in read if formula(c)], exported
    rows = list(csv.reader(io.StringIO(exported)))
    assert len(rows) == 1 + len(HOSTILE_NAMES) and rows[1][0].lstrip("'").startswith("x;")  # the names still read


# ---------------------------------------------------------------- removal

def received(sio, name, timeout_s):
    from app import socketio
    found = []
    for _ in range(int(timeout_s * 10)):
        found += [e for e in sio.get_received() if e["name"] == name]
        if found:
            break
        socketio.sleep(0.1)
    return found


def test_a_removed_student_loses_the_class_at_once(quiet_app):
    """Removed while their page is open: the student no longer reads the class's leaderboards, hears
    no push (to the class, on the page open before or one opened after), is no one in the class,
    and cannot join it again from the same browser."""
    from app import socketio
    teacher = quiet_app.test_client()
    code = new_class(teacher, leaderboard=True)["code"]
    student, student_id = joined(quiet_app, code, "Mallory")
    stays, _ = joined(quiet_app, code, "Ann", "198.51.100.40")
    assert student.get(f"/api/classes/{code}/leaderboard/constant_add").status_code == 200
    page = socketio.test_client(quiet_app, flask_test_client=student)
    other = socketio.test_client(quiet_app, flask_test_client=stays)
    assert teacher.delete(f"/api/classes/{code}/students/{student_id}").status_code == 200
    later = socketio.test_client(quiet_app, flask_test_client=student)
    sent = teacher.post(f"/api/classes/{code}/push", json={"text": "the answer is 42"})
    assert sent.json == {"sent_to": 1}
    assert received(other, "class_message", 5), "a student still in the class heard nothing"
    assert not received(page, "class_message", 1) and not received(later, "class_message", 0.5)
    board = student.get(f"/api/classes/{code}/leaderboard/constant_add")
    assert board.status_code == 403, board.json
    assert student.get(f"/api/classes/{code}").json["you"] is None
    back = student.post(f"/api/classes/{code}/join", json={"name": "Mallory again"})
    assert back.status_code == 403 and "removed you" in back.json["error"]["message"]
    for sio in (page, other, later):
        sio.disconnect()


# ---------------------------------------------------------------- submissions

PADDING = "\n# " + "p" * 120_000 + "\n"  # a source near MAX_SOURCE_BYTES


def kept_submissions(app, code):
    with contextlib.closing(sqlite3.connect(app.config["DATABASE"])) as db:
        return db.execute("SELECT count(*), COALESCE(SUM(LENGTH(m.source) + LENGTH(m.verdict)), 0) FROM submission m "
                          "JOIN student s ON s.id = m.student_id WHERE s.class_code = ?", (code,)).fetchone()


def test_graded_runs_of_one_client_are_kept_within_the_quota(graded_app):
    """Fourteen graded runs of 120 KB sources from one student (1.7 MB before any bound): the class
    keeps at most STUDENT_SUBMISSIONS_MB of them (1 MB here), the oldest superseded ones pruned,
    while the dashboard still counts every attempt and shows the latest; once the class's bound or
    the database's leaves no room, a run is not kept and its result says so."""
    app = graded_app
    config = dict(app.config)
    app.config.update(STUDENT_SUBMISSIONS_MB=1, CLASS_SUBMISSIONS_MB=1)
    try:
        teacher = app.test_client()
        code = new_class(teacher)["code"]
        student, _ = joined(app, code, "Flood", "198.51.102.1")
        results = []

        def runs(count):
            for _ in range(count):
                results.append(graded(student, CONSTANT_ADD["starter"] + PADDING))
        threads = [threading.Thread(target=runs, args=(7,)) for _ in range(2)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(600)
        assert len(results) == 14 and all(r["puzzle"] and not r["puzzle"]["ok"] for r in results)
        assert not [r["notes"] for r in results if any("not kept" in n for n in r["notes"])]  # pruning made room
        rows, size = kept_submissions(app, code)
        assert size <= 1 << 20 and rows <= 10, f"{rows} submissions of {size} bytes kept"
        cell = roster(teacher, code)[0]["puzzles"]["constant_add"]
        assert cell["attempts"] == 14 and cell["state"] == "trying"
        solved = graded(student, CONSTANT_ADD["solution"] + PADDING)
        assert solved["puzzle"]["ok"] and not solved["notes"]
        cell = roster(teacher, code)[0]["puzzles"]["constant_add"]
        assert cell["state"] == "solved" and cell["tries_to_solve"] == 15
        app.config["CLASS_SUBMISSIONS_MB"] = 0
        refused = graded(student, CONSTANT_ADD["starter"] + PADDING)
        assert any("not kept for your class" in n and "CLASS_SUBMISSIONS_MB" in n for n in refused["notes"]), refused["notes"]
        app.config.update(CLASS_SUBMISSIONS_MB=1, DATABASE_MAX_MB=1)
        full = graded(student, CONSTANT_ADD["starter"] + PADDING)
        assert any("DATABASE_MAX_MB" in n for n in full["notes"]), full["notes"]
        assert roster(teacher, code)[0]["puzzles"]["constant_add"]["attempts"] == 15  # neither was kept
    finally:
        app.config.update({k: config.get(k) for k in ("STUDENT_SUBMISSIONS_MB", "CLASS_SUBMISSIONS_MB", "DATABASE_MAX_MB")})


# ---------------------------------------------------------------- frames

def frame_ancestors(response):
    policy = dict(part.strip().split(" ", 1) for part in response.headers["Content-Security-Policy"].split(";"))
    return policy["frame-ancestors"]


def test_only_the_pages_meant_to_be_embedded_can_be_framed_by_other_sites(make_app):
    app = make_app(wait=False, START_WORKERS=False, FRAME_ANCESTORS="https://lessons.example.edu")
    teacher = app.test_client()
    made = new_class(teacher)
    key_path = made["teacher_url"].split("://", 1)[1].split("/", 1)[1]
    snippet = teacher.post("/api/snippets", json={"spec": teacher.get("/api/examples/vector_add").json["spec"], "ui": {}})
    assert snippet.status_code == 200, snippet.json
    never = [f"/classes/{made['code']}", "/classes/new", "/puzzles", "/puzzles/constant_add",
             f"/fork/{snippet.json['id']}", "/no/such/page"]
    for path in never:
        response = teacher.get(f"{path}?embed=1")
        assert frame_ancestors(response) == "'self'" and response.headers["X-Frame-Options"] == "SAMEORIGIN", \
            f"{path}?embed=1: {response.headers['Content-Security-Policy']}"
    assert teacher.get(f"/{key_path}?embed=1").status_code == 302  # the teacher link leads to the class's page
    for path in ["/", "/new", "/examples/vector_add", f"/s/{snippet.json['id']}"]:
        response = teacher.get(f"{path}?embed=1")
        assert frame_ancestors(response) == "https://lessons.example.edu" and "X-Frame-Options" not in response.headers, path
        assert frame_ancestors(teacher.get(path)) == "'self'"


# ---------------------------------------------------------------- codes and links

def test_class_codes_cannot_be_guessed(quiet_app):
    """Codes are 8 letters of 32 (40 bits), and an address that looked up CLASS_LOOKUPS_PER_MINUTE
    codes naming no class is refused every look-up for a while, a real code's too (no oracle);
    another address is not."""
    from app.course import classes
    teacher = quiet_app.test_client()
    code = new_class(teacher)["code"]
    guesser = client_at(quiet_app, "203.0.113.99")
    answers = [guesser.get(f"/api/classes/{guess}") for guess in
               [f"ZZZZZ{i:03d}".replace("0", "A").replace("1", "B") for i in range(40)]]
    refused = guesser.get(f"/api/classes/{code}")
    assert refused.status_code == 429 and int(refused.headers["Retry-After"]) >= 1
    assert sum(a.status_code == 404 for a in answers) <= quiet_app.config["CLASS_LOOKUPS_PER_MINUTE"]
    assert "CLASS_LOOKUPS_PER_MINUTE" in refused.json["error"]["message"]
    assert guesser.post(f"/api/classes/{code}/join", json={"name": "Eve"}).status_code == 429
    assert client_at(quiet_app, "198.51.100.50").get(f"/api/classes/{code}").status_code == 200
    assert len(code) == 8 and set(code) <= set(classes.CODE_LETTERS)


@pytest.mark.parametrize("link", ["//evil.example/x", "/\\evil.example/x", "/\\/evil.example", "\\\\evil.example",
                                  "https:///evil.example",
                                  "https:evil.example", "javascript:alert(1)", "http://", "data:text/html,hi"])
def test_a_pushed_link_to_another_site_passing_as_this_ones_is_refused(quiet_app, link):
    teacher = quiet_app.test_client()
    code = new_class(teacher)["code"]
    answer = teacher.post(f"/api/classes/{code}/push", json={"text": "look", "link": link})
    assert answer.status_code == 400 and answer.json["error"]["field"] == "link", answer.json


def test_pushed_links_of_this_site_and_of_others_written_whole_are_sent(quiet_app):
    teacher = quiet_app.test_client()
    code = new_class(teacher)["code"]
    for link in ("/puzzles/constant_add", "https://docs.example.org/triton?x=1#y", "HTTPS://Docs.Example.org/"):
        assert teacher.post(f"/api/classes/{code}/push", json={"text": "look", "link": link}).status_code == 200


@pytest.mark.browser
def test_the_dashboard_locks_the_class_and_a_pushed_link_names_its_site(browser, live_server):
    """On the pages: a link the teacher pushes to another site shows its host and opens in a new tab
    without this page as its opener; the dashboard's switch closes the class, and a newcomer's Join
    says so."""
    from tests.support.browser import page_without_errors
    teacher = browser.new_context()
    made = teacher.request.post(f"{live_server}/api/classes", data={"title": "Locked", "puzzles": ["constant_add"]}).json()
    dashboard = teacher.new_page()
    dashboard.goto(made["teacher_url"])
    dashboard.wait_for_selector("#class-table")
    with page_without_errors(browser, console=False) as student:  # the class page asks for the dashboard first: a 403
        student.goto(f"{live_server}/classes/{made['code']}")
        student.fill("#class-name", "Ann")
        student.click("#class-join")
        student.wait_for_selector("#class-joined")
        student.goto(f"{live_server}/puzzles/constant_add")
        student.wait_for_selector(".puzzle-statement")
        student.wait_for_function("() => window.playground !== undefined")
        push = dashboard.locator(".class-push", has=dashboard.locator(".class-push-text")).first  # to the class
        push.locator(".class-push-text").fill("https://docs.example.org/triton")
        push.locator("button").click()
        dashboard.wait_for_function("() => [...document.querySelectorAll('.class-push-note')].some((n) => n.textContent === 'sent to 1')")
        link = student.wait_for_selector(".class-message-link", timeout=10_000)
        assert "docs.example.org" in link.inner_text() and link.get_attribute("target") == "_blank"
        assert "noopener" in link.get_attribute("rel")
    dashboard.check("#class-locked")
    dashboard.wait_for_function("() => document.querySelector('#class-locked')?.checked")
    assert teacher.request.get(f"{live_server}/api/classes/{made['code']}").json()["locked"] is True
    with page_without_errors(browser, console=False) as newcomer:  # the refused join's 403 is logged by the browser
        newcomer.goto(f"{live_server}/classes/{made['code']}")
        newcomer.fill("#class-name", "Bob")
        newcomer.click("#class-join")
        newcomer.wait_for_function("() => document.querySelector('#class-join-note').textContent.includes('closed to new students')")
    teacher.close()
