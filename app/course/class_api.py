"""A class's routes: the JSON API of a class (its teacher's and its students') and its pages, on
the model of app.course.classes. A refusal is raised (sandbox.errors.Refused) and answered by the
web side's one handler."""
import hashlib
import hmac
import json
import secrets

from flask import Blueprint, Response, current_app, redirect, render_template, session, url_for

from app.body import json_body
from app.course import inbox, puzzles, reports
from app.course.classes import (MAX_PUSH, MAX_TITLE, ClassConflict, ClassError, ClassForbidden, ClassNotFound, changed,
                                create, digest, find, in_class, join, public, puzzle_list, pushed_link, remove, rename,
                                start_teaching, student_name, student_of, students, teaching, text)
from app.db import check_room, get_db
from app.fairness import RateLimited, WriteLimiter, charge_write
from app.owners import current_address
from sandbox.errors import unknown_fields

bp = Blueprint("classes", __name__)


def body(allowed):
    """The request's JSON object, holding only the fields `allowed`."""
    found = json_body()
    if not isinstance(found, dict):
        raise ClassError("the body must be a JSON object")
    unknown_fields(found, allowed, "in the body", ClassError)
    return found


def lookup(code):
    """The class of `code` for a request: a look-up of a code that names no class is one of its
    address's CLASS_LOOKUPS_PER_MINUTE, and past them every look-up from there is refused (429), so
    that codes cannot be guessed (40 bits: 1,000 classes among 2^40 codes, at 20 guesses a minute
    from an address, take a century to meet)."""
    limiter, address = current_app.extensions["class_lookups"], current_address()
    wait_s = limiter.due(address)
    if wait_s > 0:
        raise RateLimited("this address looked up too many class codes that do not exist (CLASS_LOOKUPS_PER_MINUTE)", wait_s)
    try:
        return find(get_db(), code)
    except ClassNotFound:
        limiter.take(address)
        raise


def seat():
    """The request's address as a student row keeps it: a digest keyed with the server's secret."""
    return hmac.new(current_app.secret_key.encode(), current_address().encode(), hashlib.sha256).hexdigest()[:32]


def teacher_of(code):
    found = lookup(code)
    if not teaching(found["code"]):
        raise ClassForbidden("only the class's teacher sees this: open the teacher link of the class")
    return found


@bp.record_once
def limits(state):
    config = state.app.config
    state.app.extensions["class_lookups"] = WriteLimiter(config["CLASS_LOOKUPS_PER_MINUTE"])
    state.app.extensions["class_joins"] = WriteLimiter(config["JOINS_PER_MINUTE"])


@bp.post("/api/classes")
def create_class():
    found = body(("title", "puzzles", "leaderboard"))
    title, chosen = text(found.get("title"), "title", MAX_TITLE), puzzle_list(found.get("puzzles"))
    if not isinstance(found.get("leaderboard", False), bool):
        raise ClassError("leaderboard must be true or false", field="leaderboard")
    charge_write(len(title) + len(json.dumps(chosen)))
    code, key = create(get_db(), title, chosen, found.get("leaderboard", False))
    start_teaching(code)
    return {"code": code, "teacher_url": url_for("classes.teacher_link", code=code, key=key, _external=True),
            "join_url": url_for("classes.class_page", code=code, _external=True)}


@bp.get("/classes/new")
def new_class_page():
    """The form that makes a class (static/js/teach/class-new.js, through POST /api/classes)."""
    return render_template("class-new.html")


@bp.get("/classes/<code>/teach/<key>")
def teacher_link(code, key):
    found = lookup(code)
    if not secrets.compare_digest(digest(key), found["teacher_digest"]):
        raise ClassForbidden("this teacher link is not the class's")
    start_teaching(found["code"])
    return redirect(url_for("classes.class_page", code=found["code"]))


@bp.get("/classes/<code>")
def class_page(code):
    """The class's page: its dashboard for its teacher, the join form for anyone else (static/js/teach/class.js)."""
    found = lookup(code)
    return render_template("class.html", code=found["code"], title=found["title"])


@bp.get("/api/classes/<code>")
def get_class(code):
    """The class as its students see it, with `you` (this session's student in it: id, name, their
    state per puzzle as the dashboard shows it; or null) and `teaching` (whether this session is its
    teacher)."""
    found = lookup(code)
    you = student_of(get_db(), found["code"])
    if you is not None and not you["removed"]:
        you = {"id": you["id"], "name": you["name"], "puzzles": reports.cells(get_db(), found, [you["id"]])[0]}
    else:
        you = None
    return {**public(found), "you": you, "teaching": teaching(found["code"])}


@bp.post("/api/classes/<code>/join")
def join_class(code):
    """A student joins. Bounded: a session is one student of a class (joining again is refused, and
    a student the teacher removed stays out), an address makes JOINS_PER_MINUTE joins and holds
    CLASS_SEATS_PER_ADDRESS students of a class, a locked class takes nobody, and a name must read
    as no other student's (app.course.names)."""
    found = body(("name",))  # the body is checked before the class is looked up: a bad request is a 400 wherever it goes
    name = student_name(found.get("name"))
    found_class = lookup(code)
    already = student_of(get_db(), found_class["code"])
    if already is not None and already["removed"]:
        raise ClassForbidden("the class's teacher removed you from this class")
    if already is not None:
        raise ClassConflict(f"this browser is in the class already, as '{already['name']}'", "name")
    wait_s = current_app.extensions["class_joins"].take(current_address())
    if wait_s > 0:
        raise RateLimited(f"this address joined classes {current_app.config['JOINS_PER_MINUTE']} times in the last "
                       f"minute (JOINS_PER_MINUTE)", wait_s)
    check_room(get_db(), len(name.encode()) + 100, current_app.config)
    student = join(get_db(), found_class["code"], name, seat(), current_app.config["CLASS_SEATS_PER_ADDRESS"])
    session["student"] = {"class": found_class["code"], "id": student}
    changed(found_class["code"], students=False)  # the dashboard's roster, live
    return {"student": {"id": student, "name": name}, "class": public(found_class)}


def dashboard(found):
    """The class as its students see it, with every student's progress and the failures (app.course.reports)."""
    return {**public(found), **reports.progress(get_db(), found, students(get_db(), found["code"]))}


@bp.get("/api/classes/<code>/progress")
def class_progress(code):
    return dashboard(teacher_of(code))


@bp.patch("/api/classes/<code>")
def edit_class(code):
    """The teacher changes the class's title, or its puzzles (their order, due times, which ones),
    whether it has leaderboards, whether it is locked (closed to new students): submissions of a
    puzzle taken out are kept, and count again if it comes back."""
    found = body(("title", "puzzles", "leaderboard", "locked"))
    found_class = teacher_of(code)
    title = text(found["title"], "title", MAX_TITLE) if "title" in found else found_class["title"]
    chosen = puzzle_list(found["puzzles"]) if "puzzles" in found else found_class["puzzles"]
    switches = {name: found.get(name, found_class[name]) for name in ("leaderboard", "locked")}
    for name, value in switches.items():
        if not isinstance(value, bool):
            raise ClassError(f"{name} must be true or false", field=name)
    get_db().execute("UPDATE class SET title = ?, puzzles = ?, leaderboard = ?, locked = ? WHERE code = ?",
                     (title, json.dumps(chosen), int(switches["leaderboard"]), int(switches["locked"]), found_class["code"]))
    changed(found_class["code"])
    return public(find(get_db(), found_class["code"]))


@bp.get("/api/classes/<code>/students/<student>")
def get_student(code, student):
    """One student's row of the progress, for the class's teacher."""
    found = next((s for s in dashboard(teacher_of(code))["students"] if s["id"] == student), None)
    if found is None:
        raise ClassNotFound("there is no such student in this class")
    return found


@bp.patch("/api/classes/<code>/students/<student>")
def rename_student(code, student):
    found_class = teacher_of(code)
    found = body(("name",))
    rename(get_db(), found_class["code"], student, student_name(found.get("name")))
    changed(found_class["code"])
    return {"ok": True}


@bp.delete("/api/classes/<code>/students/<student>")
def remove_student(code, student):
    found_class = teacher_of(code)
    remove(get_db(), found_class["code"], student)
    changed(found_class["code"])
    return {"ok": True}


@bp.post("/api/classes/<code>/push")
def push(code):
    """A hint or a link from the teacher to the class's students, or to some: `{"text", "link"?,
    "students"?: [ids]}`, kept in each one's inbox until they dismiss it (app.course.inbox) and
    shown at once on their open pages. Returns how many students it was sent to."""
    found = body(("text", "link", "students"))
    found_class = teacher_of(code)
    message = {"code": found_class["code"], "text": text(found.get("text"), "text", MAX_PUSH),
               "link": None if found.get("link") is None else pushed_link(found["link"])}
    roster = {s["id"] for s in students(get_db(), found_class["code"])}
    chosen = found.get("students")
    if chosen is not None and not (isinstance(chosen, list) and all(isinstance(s, str) and s in roster for s in chosen)):
        raise ClassError("students must be a list of ids of the class's students", field="students")
    to = sorted(roster if chosen is None else set(chosen))
    inbox.deliver(get_db(), found_class["code"], to, message["text"], message["link"])
    return {"sent_to": len(to)}


@bp.get("/api/classes/<code>/students/<student>/latest/<puzzle>")
def latest_submission(code, student, puzzle):
    """A student's latest kernel of a puzzle, for the class's teacher: its source and the grader's
    verdict, and the puzzle's spec with that source (to run in the editor, for its diagram)."""
    found = teacher_of(code)
    row = get_db().execute("SELECT m.source, m.ok, m.verdict, m.created FROM submission m JOIN student s "
                           "ON s.id = m.student_id WHERE s.class_code = ? AND s.id = ? AND m.puzzle = ? "
                           "ORDER BY m.id DESC LIMIT 1", (found["code"], student, puzzle)).fetchone()
    if row is None:
        raise ClassNotFound("this student has no kernel of this puzzle yet")
    spec = {**puzzles.starter_spec(puzzles.find(puzzle)), "source": row["source"]}
    return {"source": row["source"], "ok": bool(row["ok"]), "at": row["created"], "verdict": json.loads(row["verdict"]),
            "spec": spec}


@bp.get("/api/classes/<code>/leaderboard/<puzzle>")
def class_leaderboard(code, puzzle):
    """For the class's teacher and students, where the class has a leaderboard."""
    found = lookup(code)
    if not (teaching(found["code"]) or in_class(get_db(), found["code"])):
        raise ClassForbidden("only the class's teacher and students see its leaderboard")
    if not found["leaderboard"]:
        raise ClassNotFound("this class has no leaderboard (its teacher chose none)")
    if puzzle not in [p["name"] for p in found["puzzles"]]:
        raise ClassNotFound(f"the class has no puzzle named '{puzzle[:80]}'")
    def interpreted():  # the workers' device, from /healthz's body (with REDIS_URL: read from Redis)
        return (current_app.extensions["dispatcher"].health().get("device") or {}).get("kind") == "interpreter"
    return reports.leaderboard(get_db(), found, puzzle, interpreted)


@bp.get("/api/classes/<code>/export.csv")
def export_class(code):
    found = teacher_of(code)
    return Response(reports.export_csv(get_db(), found, students(get_db(), found["code"])), mimetype="text/csv",
                    headers={"Content-Disposition": f"attachment; filename=class-{found['code']}.csv"})

