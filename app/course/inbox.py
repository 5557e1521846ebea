"""A class's student's inbox: what the teacher pushed to them, kept until they dismiss it. A push
is stored for each student it names and sent at once to their open pages (`class_message`); a page
opened later (the class's page, a puzzle, the editor) reads the inbox (`GET /api/inbox`), and a
message dismissed on one page leaves the student's other pages (`class_message_seen`).

The inbox also says which class this session's student is in, so that a puzzle's page can say
that a run counts for it."""
import time

from flask import Blueprint, current_app

from app.course.classes import ClassNotFound, find, in_class, membership, notifier, public, room
from app.db import check_room, get_db

bp = Blueprint("inbox", __name__)

KEPT_PER_STUDENT = 20  # a student's messages kept unread; a push past them drops their oldest


def deliver(db, code, to, text, link):
    """Keep the message for each student of `to` (ids of class `code`'s current students) and send
    it to their open pages."""
    check_room(db, (len(text.encode()) + len((link or "").encode()) + 64) * len(to), current_app.config)
    now, sent = time.time(), []
    with db.transaction(lock=f"class {code}"):
        for student in to:
            db.execute("INSERT INTO class_message (student_id, text, link, created) VALUES (?, ?, ?, ?)",
                       (student, text, link, now))
            kept = [row["id"] for row in db.execute(
                "SELECT id FROM class_message WHERE student_id = ? ORDER BY id DESC", (student,))]
            for old in kept[KEPT_PER_STUDENT:]:
                db.execute("DELETE FROM class_message WHERE id = ?", (old,))
            sent.append((student, kept[0]))
    for student, message in sent:
        notifier().emit("class_message", shown(code, {"id": message, "text": text, "link": link, "created": now}),
                        to=room("student", student))


def shown(code, row):
    """A kept message as a page receives it (`class_message`)."""
    return {"code": code, "id": row["id"], "text": row["text"], "link": row["link"], "at": row["created"]}


def messages(db, code, student):
    return [shown(code, row) for row in db.execute(
        "SELECT id, text, link, created FROM class_message WHERE student_id = ? ORDER BY id", (student,))]


@bp.get("/api/inbox")
def inbox():
    """This session's class and the messages its teacher pushed that it has not dismissed; for a
    session that is no class's student, `{"class": null, "messages": []}` (not a refusal: every
    page asks)."""
    member, db = membership(), get_db()
    if member is None or not in_class(db, member.code, member):
        return {"class": None, "messages": []}
    return {"class": public(find(db, member.code)), "messages": messages(db, member.code, member.student)}


def kept(message):
    """This session's student and the id of their message `message` (its id as the URL gives it), or 404."""
    member, db = membership(), get_db()
    found = None if member is None or not message.isdigit() else db.execute(
        "SELECT id, text, link, created FROM class_message WHERE id = ? AND student_id = ?",
        (int(message), member.student)).fetchone()
    if found is None:
        raise ClassNotFound("there is no such message in your inbox")
    return member, found


@bp.get("/api/inbox/<message>")
def one_message(message):
    member, found = kept(message)
    return shown(member.code, found)


@bp.delete("/api/inbox/<message>")
def dismiss(message):
    """The student read it: it leaves the inbox and their other open pages."""
    member, found = kept(message)
    get_db().execute("DELETE FROM class_message WHERE id = ?", (found["id"],))
    notifier().emit("class_message_seen", {"id": found["id"]}, to=room("student", member.student))
    return {"ok": True}
