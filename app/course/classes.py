"""A class: a teacher's list of puzzles, a code students join with a display name, and every graded
run of theirs on those puzzles, as the grader judged it.

A teacher creates one (`POST /api/classes`) and gets a code to share and a teacher link, a secret:
the session that created the class or opened that link is its teacher (the session cookie is
signed). A student joins with the code and a name (no account: their signed session cookie keeps
which student they are); from then on their graded runs of the class's puzzles are submissions.
What is stored of a run is the grader's verdict (`result.puzzle`, which nothing of the student's
process can set: sandbox.grading.grader) and the source it graded.

Here: what a class is (its checks, its storage, who teaches it and who is in it, its kept graded
runs) and its hooks into the web side; its routes are app.course.class_api.
"""
import hashlib
import json
import logging
import re
import secrets
import time
import unicodedata
from dataclasses import dataclass
from urllib.parse import urlsplit, urlunsplit

from flask import current_app, session

from app import db as database
from app.course import names, puzzles, submissions
from app.db import StorageFull, get_db
from app.fairness import RateLimited
from sandbox.errors import Refused

log = logging.getLogger(__name__)

CODE_LETTERS = "ABCDEFGHJKLMNPQRSTUVWXYZ23456789"  # no 0/O, 1/I: read aloud and typed from a slide
CODE_LENGTH = 8  # 40 bits; with failed look-ups throttled per address (CLASS_LOOKUPS_PER_MINUTE): see lookup()
MAX_TITLE = 120
MAX_NAME = 40
MAX_PUZZLES = 40
MAX_STUDENTS = 1000  # in one class
MAX_PUSH = 2000  # characters of a pushed hint
MAX_TEACHING = 16  # classes one session may teach at once (the cookie stays small)


class ClassError(Refused, ValueError):
    """A request about a class that cannot be done as asked (400), naming the `field` at fault."""


class ClassForbidden(ClassError):
    """Only the class's teacher (or its students) may do this, or the class is closed to it (403)."""

    status = 403


class ClassNotFound(ClassError):
    """No such class, or nothing of that name in it (404)."""

    status = 404


class ClassConflict(ClassError):
    """It clashes with what the class holds: a name taken, a full class, a browser in it already (409)."""

    status = 409


class NoClassCode(ClassError):
    """No free class code was found (503): try again."""

    status, phase = 503, "limit"


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
    raise NoClassCode("could not make a class code; try again")


def find(db, code):
    """The class of `code` ({"code", "title", "puzzles", "teacher_digest"}), or ClassError 404."""
    row = db.execute("SELECT code, title, puzzles, leaderboard, locked, teacher_digest FROM class WHERE code = ?",
                     (str(code).upper()[:16],)).fetchone()
    if row is None:
        raise ClassNotFound(f"there is no class with the code '{str(code)[:16]}'")
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
            raise ClassForbidden("this class is closed to new students: ask its teacher to open it")
        roster = students(db, code)
        taken = same_name(roster, name)
        if taken is not None:
            raise ClassConflict(f"someone in this class is called '{taken['name']}' already, which reads the same as "
                                f"'{name}': choose another name", "name")
        if len(roster) >= MAX_STUDENTS:
            raise ClassConflict(f"this class is full: it has {MAX_STUDENTS} students", "name")
        if seat is not None and seats is not None and sum(s["seat"] == seat for s in roster) >= seats:
            raise RateLimited(f"{seats} students of this class joined from this address already "
                              f"(CLASS_SEATS_PER_ADDRESS): ask the teacher", 3600)
        student = secrets.token_hex(16)
        db.execute("INSERT INTO student (id, class_code, name, joined, seat) VALUES (?, ?, ?, ?, ?)",
                   (student, code, name, time.time(), seat))
    return student


def rename(db, code, student, name):
    taken = same_name(students(db, code), name, but=student)
    if taken is not None:
        raise ClassConflict(f"someone in this class is called '{taken['name']}' already, which reads the same", "name")
    if db.execute("UPDATE student SET name = ? WHERE id = ? AND class_code = ? AND removed = 0",
                  (name, student, code)).rowcount == 0:
        raise ClassNotFound("there is no such student in this class")


def remove(db, code, student):
    """The student is out of the class at once: their session counts for it no more (membership is
    read from the database at each request), nothing is pushed to them, and their pages leave the
    class's Socket.IO room."""
    if db.execute("UPDATE student SET removed = 1 WHERE id = ? AND class_code = ? AND removed = 0",
                  (student, code)).rowcount == 0:
        raise ClassNotFound("there is no such student in this class")
    db.execute("DELETE FROM class_message WHERE student_id = ?", (student,))
    notifier().close_room(room("student", student))


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
    """The Socket.IO room of a class's teachers (`teachers`, by code), of one student's pages
    (`student`, by id) or of all its students' pages (`students`, by code). A push to the class goes
    to each current student's room: a removed student's is no longer among them, whatever their
    pages joined. The class-wide room hears only that the class changed (`class_progress` {code}),
    which its pages then ask of the API, where a removed student is refused."""
    return f"class-{kind}:{key}"


def changed(code, notify=None, students=True):
    """The class's dashboards (and its students' pages) read it again: a join, a kept submission, an edit."""
    notify = notify or notifier()
    notify.emit("class_progress", {"code": code}, to=room("teachers", code))
    if students:
        notify.emit("class_progress", {"code": code}, to=room("students", code))


def notifier():
    """What the class sends its pages and dashboards through (the web side's Socket.IO, lent at start:
    app.web.hooks)."""
    return current_app.extensions["hooks"].notifier


def recorder(member, spec):
    """record(result) for a graded run of a class's student: where the database is, the class's
    bounds and the notifier are read now, in the request; the result comes later, on another thread.
    A run its bounds leave no room for says so in the result's notes."""
    where, quota, notify = database.target(current_app.config), submissions.Quota.of(current_app.config), notifier()

    def keep(result):
        try:
            kept = submissions.record(where, member, spec["options"]["puzzle"], spec["source"], result, quota)
        except (submissions.NotKept, StorageFull) as e:
            result.setdefault("notes", []).append(str(e) if isinstance(e, submissions.NotKept) else submissions.STORAGE_FULL)
            return
        except database.DatabaseError:  # the run's result still reaches its student
            log.exception("a submission of class %s could not be kept", member.code)
            return
        if kept:  # the dashboards and the leaderboards read the progress again
            changed(member.code, notify)
    return keep


# ---------------------------------------------------------------- hooks into the web side (app.course.init_app)

def keeper(spec):
    """For a graded run of a class's student: keep(result), keeping the grader's verdict; else None."""
    member = counted(spec)
    return None if member is None else recorder(member, spec)


def student_rooms():
    """A class's student's page hears what the teacher pushes while the student is in the class: a
    removed one's cookie names a student no push goes to."""
    member = membership()
    if member is None or not in_class(get_db(), member.code, member):
        return []
    return [room("student", member.student), room("students", member.code)]


def watch_class(data):
    """A teacher's dashboard: `class_progress` {code} each time a submission of the class is kept.
    Ack {"watching": true}, or false for a session that does not teach the class."""
    code = data.get("code") if isinstance(data, dict) else None
    if not (isinstance(code, str) and teaching(code)):
        return {"watching": False}
    notifier().join(room("teachers", code))
    return {"watching": True}


