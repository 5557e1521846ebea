"""A class: a teacher's list of puzzles, a code students join with a display name, and every graded
run of theirs on those puzzles, as the grader judged it.

A teacher creates one (`POST /api/classes`) and gets a code to share and a teacher link, a secret:
the session that created the class or opened that link is its teacher (the session cookie is
signed). A student joins with the code and a name (no account: their signed session cookie keeps
which student they are); from then on their graded runs of the class's puzzles are submissions.
What is stored of a run is the grader's verdict (`result.puzzle`, which nothing of the student's
process can set: sandbox.grading.grader) and the source it graded.
"""
import hashlib
import hmac
import json
import logging
import math
import re
import secrets
import time
import unicodedata
from dataclasses import dataclass
from urllib.parse import urlsplit, urlunsplit

from flask import Blueprint, Response, current_app, redirect, render_template, session, url_for

from app import db as database
from app import socketio
from app.course import names, puzzles, reports, submissions
from app.db import StorageFull, get_db
from app.web.clients import TooManyWrites, WriteLimiter, charge_write
from app.web.errors import error_response
from app.web.owners import current_address

bp = Blueprint("classes", __name__)
log = logging.getLogger(__name__)

CODE_LETTERS = "ABCDEFGHJKLMNPQRSTUVWXYZ23456789"  # no 0/O, 1/I: read aloud and typed from a slide
CODE_LENGTH = 8  # 40 bits; with failed look-ups throttled per address (CLASS_LOOKUPS_PER_MINUTE): see lookup()
MAX_TITLE = 120
MAX_NAME = 40
MAX_PUZZLES = 40
MAX_STUDENTS = 1000  # in one class
MAX_PUSH = 2000  # characters of a pushed hint
MAX_TEACHING = 16  # classes one session may teach at once (the cookie stays small)


class ClassError(ValueError):
    """A request about a class that cannot be done: `status` (400, 403, 404, 409, 429: with
    `retry_after` seconds) and the `field` at fault."""

    def __init__(self, message, status=400, field=None, retry_after=None):
        super().__init__(message)
        self.status, self.field, self.retry_after = status, field, retry_after


def too_many(message, wait_s):
    retry_after = max(1, math.ceil(wait_s))
    return ClassError(f"{message}; try again in {retry_after} s", 429, retry_after=retry_after)


@dataclass(frozen=True)
class Membership:
    """Whose graded run this is: a student of a class, as their session says."""
    code: str
    student: str


# ---------------------------------------------------------------- checking what a request gives

def text(value, field, limit):
    if not isinstance(value, str) or not value.strip():
        raise ClassError(f"{field} must be text and cannot be empty", field=field)
    value = " ".join(value.split())
    if len(value) > limit:
        raise ClassError(f"{field} is longer than {limit} characters", field=field)
    if any(unicodedata.category(c).startswith("C") for c in value):
        raise ClassError(f"{field} holds a control character", field=field)
    return value


def student_name(value, field="name"):
    """A student's name as kept (app.course.names), or a 400 saying why it cannot be one."""
    try:
        return names.display_name(value, field, MAX_NAME)
    except names.NameRefused as e:
        raise ClassError(str(e), field=field) from None


def pushed_link(value):
    """A pushed link as a browser reads it (backslashes are slashes, tabs and newlines vanish): an
    address of another site written whole (http(s)://host/...), or a path of this one (one `/`
    first). `//host`, `/\\host`, `https:host` and the like, which a browser takes to another site
    (or nowhere), are refused."""
    link = text(value, "link", MAX_TITLE * 4)
    read = re.sub(r"[\t\n\r]", "", link).replace("\\", "/")
    parsed = urlsplit(read)
    if parsed.scheme in ("http", "https") and parsed.netloc and read.split(":", 1)[1].startswith("//"):
        return urlunsplit(parsed)
    if read.startswith("/") and not read.startswith("//"):
        return read
    raise ClassError("link must be an address of another site written whole (https://host/...) or a path of "
                     "this one (/...); '//host' and '/\\host' lead to another site", field="link")


def puzzle_list(value):
    """[{"name", "due"}] from a list of puzzle names or of {"name", "due"} (due: unix time or null)."""
    if not (isinstance(value, list) and 1 <= len(value) <= MAX_PUZZLES):
        raise ClassError(f"puzzles must be a list of 1 to {MAX_PUZZLES} puzzle names", field="puzzles")
    chosen = []
    for index, item in enumerate(value):
        field = f"puzzles[{index}]"
        entry = {"name": item, "due": None} if isinstance(item, str) else item
        if not (isinstance(entry, dict) and set(entry) <= {"name", "due"} and isinstance(entry.get("name"), str)):
            raise ClassError(f"{field} must be a puzzle's name or {{\"name\", \"due\"}}", field=field)
        due = entry.get("due")
        if due is not None and (isinstance(due, bool) or not isinstance(due, (int, float)) or not 0 < due < 1e11):
            raise ClassError(f"{field}.due must be a time (seconds since 1970) or null", field=f"{field}.due")
        if puzzles.find(entry["name"]) is None:
            raise ClassError(f"there is no puzzle named '{entry['name'][:80]}'", field=f"{field}.name")
        if any(c["name"] == entry["name"] for c in chosen):
            raise ClassError(f"the puzzle '{entry['name']}' is in the list twice", field=f"{field}.name")
        chosen.append({"name": entry["name"], "due": due})
    return chosen


def digest(key):
    return hashlib.sha256(key.encode()).hexdigest()


# ---------------------------------------------------------------- storage

def create(db, title, chosen, leaderboard=False):
    """A new class; returns (its code, the teacher link's key)."""
    key = secrets.token_urlsafe(24)
    for _ in range(20):
        code = "".join(secrets.choice(CODE_LETTERS) for _ in range(CODE_LENGTH))
        try:
            db.execute("INSERT INTO class (code, teacher_digest, title, puzzles, leaderboard, created) "
                       "VALUES (?, ?, ?, ?, ?, ?)", (code, digest(key), title, json.dumps(chosen), int(leaderboard), time.time()))
            return code, key
        except database.Conflict:
            continue  # the code is taken: another one
    raise ClassError("could not make a class code; try again", status=503)


def find(db, code):
    """The class of `code` ({"code", "title", "puzzles", "teacher_digest"}), or ClassError 404."""
    row = db.execute("SELECT code, title, puzzles, leaderboard, locked, teacher_digest FROM class WHERE code = ?",
                     (str(code).upper()[:16],)).fetchone()
    if row is None:
        raise ClassError(f"there is no class with the code '{str(code)[:16]}'", status=404)
    return {**dict(row), "puzzles": json.loads(row["puzzles"]), "leaderboard": bool(row["leaderboard"]),
            "locked": bool(row["locked"])}


def public(found):
    """What a student sees of a class: its title and its puzzles (their titles, in order, due times)."""
    return {"code": found["code"], "title": found["title"], "leaderboard": found["leaderboard"], "locked": found["locked"],
            "puzzles": [{"name": p["name"], "title": (puzzles.find(p["name"]) or {}).get("title", p["name"]),
                         "due": p["due"]} for p in found["puzzles"]]}


def students(db, code):
    return [dict(row) for row in db.execute(
        "SELECT id, name, joined, seat FROM student WHERE class_code = ? AND removed = 0 ORDER BY joined, id", (code,))]


def same_name(roster, name, but=None):
    """The student of `roster` whose name reads as `name` (app.course.names.skeleton), or None."""
    wanted = names.skeleton(name)
    return next((s for s in roster if s["id"] != but and names.skeleton(s["name"]) == wanted), None)


def join(db, code, name, seat=None, seats=None):
    """A new student of the class; returns their id. Refused: a class its teacher locked (403), a
    name that reads as another student's (409), a full class (409), and a join from a `seat`
    (a client address's digest) that holds `seats` of the class already (429)."""
    with db.transaction(lock=f"class {code}"):  # two joins at once cannot both take the last seat or a name
        if db.execute("SELECT locked FROM class WHERE code = ?", (code,)).fetchone()["locked"]:
            raise ClassError("this class is closed to new students: ask its teacher to open it", 403)
        roster = students(db, code)
        taken = same_name(roster, name)
        if taken is not None:
            raise ClassError(f"someone in this class is called '{taken['name']}' already, which reads the same as "
                             f"'{name}': choose another name", 409, "name")
        if len(roster) >= MAX_STUDENTS:
            raise ClassError(f"this class is full: it has {MAX_STUDENTS} students", 409, "name")
        if seat is not None and seats is not None and sum(s["seat"] == seat for s in roster) >= seats:
            raise ClassError(f"{seats} students of this class joined from this address already "
                             f"(CLASS_SEATS_PER_ADDRESS): ask the teacher", 429, retry_after=3600)
        student = secrets.token_hex(16)
        db.execute("INSERT INTO student (id, class_code, name, joined, seat) VALUES (?, ?, ?, ?, ?)",
                   (student, code, name, time.time(), seat))
    return student


def rename(db, code, student, name):
    taken = same_name(students(db, code), name, but=student)
    if taken is not None:
        raise ClassError(f"someone in this class is called '{taken['name']}' already, which reads the same", 409, "name")
    if db.execute("UPDATE student SET name = ? WHERE id = ? AND class_code = ? AND removed = 0",
                  (name, student, code)).rowcount == 0:
        raise ClassError("there is no such student in this class", 404)


def remove(db, code, student):
    """The student is out of the class at once: their session counts for it no more (membership is
    read from the database at each request), nothing is pushed to them, and their pages leave the
    class's Socket.IO room."""
    if db.execute("UPDATE student SET removed = 1 WHERE id = ? AND class_code = ? AND removed = 0",
                  (student, code)).rowcount == 0:
        raise ClassError("there is no such student in this class", 404)
    socketio.close_room(room("student", student))


# ---------------------------------------------------------------- sessions: who teaches, who is a student

def teaching(code):
    return code in session.get("teaching", [])


def start_teaching(code):
    session["teaching"] = ([c for c in session.get("teaching", []) if c != code] + [code])[-MAX_TEACHING:]


def membership():
    """This session's student as its cookie says, or None: the cookie outlives a removal, so what it
    may do is asked of student_of(), which reads the database."""
    found = session.get("student")
    if isinstance(found, dict) and isinstance(found.get("class"), str) and isinstance(found.get("id"), str):
        return Membership(found["class"], found["id"])
    return None


def student_of(db, code, member=None):
    """This session's student of class `code` ({"id", "name", "removed"}), or None."""
    member = member or membership()
    if member is None or member.code != code:
        return None
    row = db.execute("SELECT id, name, removed FROM student WHERE id = ? AND class_code = ?",
                     (member.student, code)).fetchone()
    return None if row is None else {**dict(row), "removed": bool(row["removed"])}


def in_class(db, code, member=None):
    """Whether this session is a student of class `code` now (not removed)."""
    found = student_of(db, code, member)
    return found is not None and not found["removed"]


def counted(spec):
    """The membership a graded run of `spec` counts for, or None (no puzzle, no class)."""
    return membership() if spec["options"]["puzzle"] is not None and "grading" in spec else None


def room(kind, key):
    """The Socket.IO room of a class's teachers (`teachers`, by code) or of one student's pages
    (`student`, by id). A push to the class goes to each current student's room: a removed student's
    is no longer among them, whatever their pages joined."""
    return f"class-{kind}:{key}"


def recorder(member, spec):
    """record(result) for a graded run of a class's student: where the database is and the class's
    bounds are read now, in the request; the result comes later, on another thread. A run its
    bounds leave no room for says so in the result's notes."""
    where, quota = database.target(current_app.config), submissions.Quota.of(current_app.config)

    def keep(result):
        try:
            kept = submissions.record(where, member, spec["options"]["puzzle"], spec["source"], result, quota)
        except (submissions.NotKept, StorageFull) as e:
            result.setdefault("notes", []).append(str(e) if isinstance(e, submissions.NotKept) else submissions.STORAGE_FULL)
            return
        except database.DatabaseError:  # the run's result still reaches its student
            log.exception("a submission of class %s could not be kept", member.code)
            return
        if kept:  # the dashboards read the progress again
            socketio.emit("class_progress", {"code": member.code}, to=room("teachers", member.code))
    return keep


# ---------------------------------------------------------------- the API

def body():
    from app.web.api import json_body
    found = json_body()
    if not isinstance(found, dict):
        raise ClassError("the body must be a JSON object")
    return found


def only_fields(found, allowed):
    unknown = sorted(str(key) for key in found if key not in allowed)
    if unknown:
        raise ClassError(f"unknown field {str(unknown[0])[:40]!r}: the body has only {', '.join(allowed)}",
                         field=str(unknown[0])[:40])


def lookup(code):
    """The class of `code` for a request: a look-up of a code that names no class is one of its
    address's CLASS_LOOKUPS_PER_MINUTE, and past them every look-up from there is refused (429), so
    that codes cannot be guessed (40 bits: 1,000 classes among 2^40 codes, at 20 guesses a minute
    from an address, take a century to meet)."""
    limiter, address = current_app.extensions["class_lookups"], current_address()
    wait_s = limiter.due(address)
    if wait_s > 0:
        raise too_many("this address looked up too many class codes that do not exist (CLASS_LOOKUPS_PER_MINUTE)", wait_s)
    try:
        return find(get_db(), code)
    except ClassError:
        limiter.take(address)
        raise


def seat():
    """The request's address as a student row keeps it: a digest keyed with the server's secret."""
    return hmac.new(current_app.secret_key.encode(), current_address().encode(), hashlib.sha256).hexdigest()[:32]


def teacher_of(code):
    found = lookup(code)
    if not teaching(found["code"]):
        raise ClassError("only the class's teacher sees this: open the teacher link of the class", 403)
    return found


@bp.record_once
def limits(state):
    config = state.app.config
    state.app.extensions["class_lookups"] = WriteLimiter(config["CLASS_LOOKUPS_PER_MINUTE"])
    state.app.extensions["class_joins"] = WriteLimiter(config["JOINS_PER_MINUTE"])


@bp.errorhandler(ClassError)
def class_error(e):
    response, status = error_response(e.status, str(e), **({"field": e.field} if e.field else {}))
    if e.retry_after is not None:
        response.headers["Retry-After"] = str(e.retry_after)
    return response, status


@bp.errorhandler(TooManyWrites)
def too_many_writes(e):
    response, status = error_response(429, str(e))
    response.headers["Retry-After"] = str(e.retry_after)
    return response, status


@bp.errorhandler(StorageFull)
def storage_full(e):
    return error_response(507, str(e))


@bp.post("/api/classes")
def create_class():
    found = body()
    only_fields(found, ("title", "puzzles", "leaderboard"))
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
    """The form that makes a class (static/js/class-new.js, through POST /api/classes)."""
    return render_template("class-new.html")


@bp.get("/classes/<code>/teach/<key>")
def teacher_link(code, key):
    found = lookup(code)
    if not secrets.compare_digest(digest(key), found["teacher_digest"]):
        raise ClassError("this teacher link is not the class's", 403)
    start_teaching(found["code"])
    return redirect(url_for("classes.class_page", code=found["code"]))


@bp.get("/classes/<code>")
def class_page(code):
    """The class's page: its dashboard for its teacher, the join form for anyone else (static/js/class.js)."""
    found = lookup(code)
    return render_template("class.html", code=found["code"], title=found["title"])


@bp.get("/api/classes/<code>")
def get_class(code):
    """The class as its students see it, with `you` (this session's student in it: id, name; or null)
    and `teaching` (whether this session is its teacher)."""
    found = lookup(code)
    you = student_of(get_db(), found["code"])
    return {**public(found), "you": None if you is None or you["removed"] else {"id": you["id"], "name": you["name"]},
            "teaching": teaching(found["code"])}


@bp.post("/api/classes/<code>/join")
def join_class(code):
    """A student joins. Bounded: a session is one student of a class (joining again is refused, and
    a student the teacher removed stays out), an address makes JOINS_PER_MINUTE joins and holds
    CLASS_SEATS_PER_ADDRESS students of a class, a locked class takes nobody, and a name must read
    as no other student's (app.course.names)."""
    found = body()  # the body is checked before the class is looked up: a bad request is a 400 wherever it goes
    only_fields(found, ("name",))
    name = student_name(found.get("name"))
    found_class = lookup(code)
    already = student_of(get_db(), found_class["code"])
    if already is not None and already["removed"]:
        raise ClassError("the class's teacher removed you from this class", 403)
    if already is not None:
        raise ClassError(f"this browser is in the class already, as '{already['name']}'", 409, "name")
    wait_s = current_app.extensions["class_joins"].take(current_address())
    if wait_s > 0:
        raise too_many(f"this address joined classes {current_app.config['JOINS_PER_MINUTE']} times in the last "
                       f"minute (JOINS_PER_MINUTE)", wait_s)
    database.check_room(get_db(), len(name.encode()) + 100, current_app.config)
    student = join(get_db(), found_class["code"], name, seat(), current_app.config["CLASS_SEATS_PER_ADDRESS"])
    session["student"] = {"class": found_class["code"], "id": student}
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
    found = body()
    only_fields(found, ("title", "puzzles", "leaderboard", "locked"))
    found_class = teacher_of(code)
    title = text(found["title"], "title", MAX_TITLE) if "title" in found else found_class["title"]
    chosen = puzzle_list(found["puzzles"]) if "puzzles" in found else found_class["puzzles"]
    switches = {name: found.get(name, found_class[name]) for name in ("leaderboard", "locked")}
    for name, value in switches.items():
        if not isinstance(value, bool):
            raise ClassError(f"{name} must be true or false", field=name)
    get_db().execute("UPDATE class SET title = ?, puzzles = ?, leaderboard = ?, locked = ? WHERE code = ?",
                     (title, json.dumps(chosen), int(switches["leaderboard"]), int(switches["locked"]), found_class["code"]))
    socketio.emit("class_progress", {"code": found_class["code"]}, to=room("teachers", found_class["code"]))
    return public(find(get_db(), found_class["code"]))


@bp.get("/api/classes/<code>/students/<student>")
def get_student(code, student):
    """One student's row of the progress, for the class's teacher."""
    found = next((s for s in dashboard(teacher_of(code))["students"] if s["id"] == student), None)
    if found is None:
        raise ClassError("there is no such student in this class", 404)
    return found


@bp.patch("/api/classes/<code>/students/<student>")
def rename_student(code, student):
    found_class = teacher_of(code)
    found = body()
    only_fields(found, ("name",))
    rename(get_db(), found_class["code"], student, student_name(found.get("name")))
    return {"ok": True}


@bp.delete("/api/classes/<code>/students/<student>")
def remove_student(code, student):
    remove(get_db(), teacher_of(code)["code"], student)
    return {"ok": True}


@bp.post("/api/classes/<code>/push")
def push(code):
    """A hint or a link from the teacher to every open page of the class's students, or to some:
    `{"text", "link"?, "students"?: [ids]}`. Returns how many students it was sent to."""
    found = body()
    only_fields(found, ("text", "link", "students"))
    found_class = teacher_of(code)
    message = {"code": found_class["code"], "text": text(found.get("text"), "text", MAX_PUSH),
               "link": None if found.get("link") is None else pushed_link(found["link"])}
    roster = {s["id"] for s in students(get_db(), found_class["code"])}
    chosen = found.get("students")
    if chosen is not None and not (isinstance(chosen, list) and all(isinstance(s, str) and s in roster for s in chosen)):
        raise ClassError("students must be a list of ids of the class's students", field="students")
    to = sorted(roster if chosen is None else set(chosen))
    if to:  # to the current students' own rooms only (an empty list would be everyone)
        socketio.emit("class_message", message, to=[room("student", student) for student in to])
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
        raise ClassError("this student has no kernel of this puzzle yet", 404)
    spec = {**puzzles.starter_spec(puzzles.find(puzzle)), "source": row["source"]}
    return {"source": row["source"], "ok": bool(row["ok"]), "at": row["created"], "verdict": json.loads(row["verdict"]),
            "spec": spec}


@bp.get("/api/classes/<code>/leaderboard/<puzzle>")
def class_leaderboard(code, puzzle):
    """For the class's teacher and students, where the class has a leaderboard."""
    found = lookup(code)
    if not (teaching(found["code"]) or in_class(get_db(), found["code"])):
        raise ClassError("only the class's teacher and students see its leaderboard", 403)
    if not found["leaderboard"]:
        raise ClassError("this class has no leaderboard (its teacher chose none)", 404)
    if puzzle not in [p["name"] for p in found["puzzles"]]:
        raise ClassError(f"the class has no puzzle named '{puzzle[:80]}'", 404)
    def interpreted():  # the workers' device, from /healthz's body (with REDIS_URL: read from Redis)
        return (current_app.extensions["dispatcher"].health().get("device") or {}).get("kind") == "interpreter"
    return reports.leaderboard(get_db(), found, puzzle, interpreted)


@bp.get("/api/classes/<code>/export.csv")
def export_class(code):
    found = teacher_of(code)
    return Response(reports.export_csv(get_db(), found), mimetype="text/csv",
                    headers={"Content-Disposition": f"attachment; filename=class-{found['code']}.csv"})

