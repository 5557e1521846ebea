"""A class's submissions: each graded run of a student of the class, as the grader judged it, kept
within bounds.

Bounds: at most KEPT_PER_PUZZLE rows per student and puzzle, STUDENT_SUBMISSIONS_MB per student and
CLASS_SUBMISSIONS_MB per class, and the database's DATABASE_MAX_MB. Past a bound the oldest
superseded rows go first: every row but a student's latest, first solving and fastest solving one
of a puzzle (what the dashboard, the failure groups and the leaderboards read). A row pruned hands
its count of graded runs (`attempts`) to the next row of its student and puzzle, so the progress's
attempts and tries-to-solve stay true. A run that does not fit even then is not kept, and its
result says so (NotKept).
"""
import json
import time
from contextlib import closing
from dataclasses import dataclass

from app import db as database

KEPT_PER_PUZZLE = 10
STORAGE_FULL = "This graded run was not kept for your class: the server's storage is full (DATABASE_MAX_MB)."


class NotKept(Exception):
    """A graded run the class's bounds leave no room for: the message is the student's note."""


@dataclass(frozen=True)
class Quota:
    student_bytes: int
    class_bytes: int
    database_bytes: int  # 0: none

    @classmethod
    def of(cls, config):
        return cls(config["STUDENT_SUBMISSIONS_MB"] << 20, config["CLASS_SUBMISSIONS_MB"] << 20,
                   database.max_bytes(config))


def record(where, membership, puzzle, source, result, quota):
    """Keep a graded run of a student of a class (from the thread that delivers its result: its own
    connection). Nothing is kept of a run the grader did not judge, of a removed student, or of a
    puzzle the class does not have (False); NotKept where it does not fit."""
    verdict = result.get("puzzle")
    if not isinstance(verdict, dict) or verdict.get("name") != puzzle:
        return False
    failing = next((t.get("label") for t in verdict.get("tests") or [] if not t.get("ok")), None)
    timing = verdict.get("timing") if verdict.get("ok") and isinstance(verdict.get("timing"), dict) else None
    kept_verdict = json.dumps({"tests": verdict.get("tests"), "diff": verdict.get("diff")})
    kept_timing = None if timing is None else json.dumps(timing)
    size = len(source.encode()) + len(kept_verdict.encode()) + len((kept_timing or "").encode())
    with closing(database.connect(where, quota.database_bytes)) as conn, conn.transaction(lock=f"class {membership.code}"):
        row = conn.execute("SELECT c.puzzles FROM student s JOIN class c ON c.code = s.class_code "
                           "WHERE s.id = ? AND s.class_code = ? AND s.removed = 0",
                           (membership.student, membership.code)).fetchone()
        if row is None or puzzle not in [p["name"] for p in json.loads(row["puzzles"])]:
            return False
        make_room(conn, "m.student_id = ?", membership.student, size, quota.student_bytes,
                  "your kept kernels are at the bound per student (STUDENT_SUBMISSIONS_MB)")
        make_room(conn, "s.class_code = ?", membership.code, size, quota.class_bytes,
                  "the class's kept kernels are at its bound (CLASS_SUBMISSIONS_MB)")
        if quota.database_bytes and conn.size_bytes() + size > quota.database_bytes:
            raise NotKept(STORAGE_FULL)
        conn.execute("INSERT INTO submission (student_id, puzzle, ok, failing, verdict, source, timing, created, "
                     "attempts, size) VALUES (?, ?, ?, ?, ?, ?, ?, ?, 1, ?)",
                     (membership.student, puzzle, int(bool(verdict.get("ok"))), failing, kept_verdict, source,
                      kept_timing, time.time(), size))
        rows = kept_rows(conn, "m.student_id = ? AND m.puzzle = ?", (membership.student, puzzle))
        prune(conn, rows, len(rows) - KEPT_PER_PUZZLE, lambda pruned: pruned)
    return True


def kept_rows(conn, where, params):
    return [dict(r) for r in conn.execute(
        "SELECT m.id, m.student_id, m.puzzle, m.ok, m.timing, m.size, m.attempts FROM submission m "
        f"JOIN student s ON s.id = m.student_id WHERE {where} ORDER BY m.id", params)]


def make_room(conn, where, key, size, bound, why):
    """Prune the oldest superseded rows of a student or a class (`where`) until `size` more bytes
    fit in `bound`; NotKept if they never do."""
    used = conn.execute(f"SELECT COALESCE(SUM(m.size), 0) AS used FROM submission m JOIN student s ON s.id = m.student_id "
                        f"WHERE {where}", (key,)).fetchone()["used"]
    if used + size <= bound:
        return
    freed = prune(conn, kept_rows(conn, where, (key,)), None, lambda pruned: used + size - pruned <= bound)
    if used - freed + size > bound:
        raise NotKept(f"This graded run was not kept for your class: {why}; its latest, first solving and fastest "
                      f"kernels of each puzzle are kept. Ask your teacher.")


def prune(conn, rows, count, enough):
    """Delete the oldest superseded of `rows` (ordered by id): `count` of them, or (count None) until
    enough(bytes freed) is true; each hands its attempts to the next row of its student and puzzle.
    Returns the bytes freed."""
    keep = keepers(rows)
    freed, done = 0, 0
    for index, row in enumerate(rows):
        if (count is not None and done >= count) or (count is None and enough(freed)):
            break
        if row["id"] in keep:
            continue
        following = next(r for r in rows[index + 1:] if (r["student_id"], r["puzzle"]) == (row["student_id"], row["puzzle"]))
        following["attempts"] += row["attempts"]
        conn.execute("UPDATE submission SET attempts = ? WHERE id = ?", (following["attempts"], following["id"]))
        conn.execute("DELETE FROM submission WHERE id = ?", (row["id"],))
        freed, done = freed + row["size"], done + 1
    return freed


def keepers(rows):
    """The ids no bound prunes: per student and puzzle its latest row, its first passing one and its
    fastest passing one (by the grader's ranked time)."""
    latest, first, fastest = {}, {}, {}
    for row in rows:
        pair = (row["student_id"], row["puzzle"])
        latest[pair] = row
        if row["ok"]:
            first.setdefault(pair, row)
            speed = ranked_time(json.loads(row["timing"])) if row["timing"] else None
            if speed is not None and (pair not in fastest or speed < fastest[pair][0]):
                fastest[pair] = (speed, row)
    return {r["id"] for r in latest.values()} | {r["id"] for r in first.values()} | {r["id"] for _, r in fastest.values()}


def ranked_time(timing):
    """The median GPU time of a timing the grader marked as one to rank by, else None."""
    if not (isinstance(timing, dict) and timing.get("ranked") and isinstance(timing.get("kernel_ms"), dict)):
        return None
    return timing["kernel_ms"].get("median")
