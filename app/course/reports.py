"""What a class's teacher reads of its submissions (app.course.submissions): the progress of each
student per puzzle, the failures grouped by how they fail, the leaderboards, and the CSV export,
whose cells no spreadsheet evaluates."""
import csv
import io
import json
import re
import time
import unicodedata

from app.course import names
from app.course.submissions import ranked_time


def progress(db, found, roster):
    """Each student of `roster` with their state per puzzle: `not started`, `trying` (attempts, the
    last verdict, the test that fails) or `solved` (when, in how many tries); and the failures."""
    names = [p["name"] for p in found["puzzles"]]
    rows = db.execute("SELECT s.id AS student, m.puzzle, m.ok, m.failing, m.created, m.attempts FROM submission m "
                      "JOIN student s ON s.id = m.student_id WHERE s.class_code = ? AND s.removed = 0 "
                      "ORDER BY m.id", (found["code"],)).fetchall()
    cells = {}
    for row in rows:
        if row["puzzle"] not in names:
            continue
        cell = cells.setdefault((row["student"], row["puzzle"]), {"state": "trying", "attempts": 0, "last": None,
                                                                 "solved_at": None, "tries_to_solve": None})
        cell["attempts"] += row["attempts"]  # a row stands for the pruned ones before it too
        cell["last"] = {"ok": bool(row["ok"]), "failing": row["failing"], "at": row["created"]}
        if row["ok"] and cell["solved_at"] is None:
            cell.update(state="solved", solved_at=row["created"], tries_to_solve=cell["attempts"])
    empty = {"state": "not started", "attempts": 0, "last": None, "solved_at": None, "tries_to_solve": None}
    return {"students": [{"id": s["id"], "name": s["name"], "joined": s["joined"],
                          "puzzles": {name: cells.get((s["id"], name), empty) for name in names}}
                         for s in roster],
            "failures": failures(db, found, names)}


def failures(db, found, names):
    """Per puzzle, the students still failing it grouped by how their latest submission fails
    (failure_kind), the largest group first: its words, its students and one example's source."""
    latest = {}
    for row in db.execute("SELECT s.id AS student, s.name, m.puzzle, m.ok, m.verdict, m.source, m.created "
                          "FROM submission m JOIN student s ON s.id = m.student_id "
                          "WHERE s.class_code = ? AND s.removed = 0 ORDER BY m.id", (found["code"],)):
        solved = latest.get((row["student"], row["puzzle"]), {}).get("solved") or bool(row["ok"])
        latest[(row["student"], row["puzzle"])] = {**dict(row), "solved": solved}
    groups = {name: {} for name in names}
    for (student, puzzle), row in latest.items():
        if row["solved"] or puzzle not in groups:
            continue
        kind = failure_kind(json.loads(row["verdict"]))
        group = groups[puzzle].setdefault(kind, {"kind": kind, "students": [], "example": None})
        group["students"].append({"id": student, "name": row["name"]})
        group["example"] = group["example"] or {"student": row["name"], "source": row["source"], "at": row["created"]}
    return {name: sorted(({**g, "count": len(g["students"])} for g in found_groups.values()),
                         key=lambda g: (-g["count"], g["kind"]))
            for name, found_groups in groups.items()}


def failure_kind(verdict):
    """How a verdict fails, in words that are the same for every kernel failing the same way: the
    first failing test's error phase (out of bounds named as such) or wrong values, which elements
    of which output the grader's comparison with the solution found missed, extra or written twice,
    and whether only hidden sizes fail."""
    tests = verdict.get("tests") or []
    first = next((t for t in tests if not t.get("ok")), None)
    if first is None:
        return "passes"
    error = first.get("error")
    if error is None:
        what = "wrong values"
    elif "out of bounds" in (error.get("message") or "") or "valid offsets" in (error.get("message") or ""):
        what = "out of bounds"
    else:
        what = f"a {error.get('phase')} error"
    marks = [f"{kind} {output}" for output, found in sorted((verdict.get("diff") or {}).items())
             for kind in ("missed", "extra", "twice") if (found.get(kind) or {}).get("count")]
    only_hidden = all(t.get("ok") for t in tests if not str(t.get("label", "")).startswith("hidden test"))
    return what + (": " + ", ".join(marks) if marks else "") + ("; only on sizes not shown" if only_hidden else "")


def leaderboard(db, found, puzzle, interpreted=lambda: False):
    """The class's correct kernels of `puzzle`, each student's fastest, ranked by the grader's GPU
    time: a kernel whose time's noise band (p20..p80) overlaps the one ranked before it shares its
    rank. Times of Triton's interpreter rank nothing (`ranked` false, `why` says so, before the first
    correct kernel too where the server's workers run the interpreter: `interpreted()`, asked only then)."""
    best = {}
    for row in db.execute("SELECT s.id, s.name, m.timing, m.created FROM submission m JOIN student s ON s.id = m.student_id "
                          "WHERE s.class_code = ? AND s.removed = 0 AND m.puzzle = ? AND m.ok = 1 ORDER BY m.id",
                          (found["code"], puzzle)):
        timing = json.loads(row["timing"]) if row["timing"] else None
        entry = {"student": row["name"], "at": row["created"], "timing": timing}
        kept = best.get(row["id"])
        if kept is None or (ranked_time(timing) or float("inf")) < (ranked_time(kept["timing"]) or float("inf")):
            best[row["id"]] = entry
    timed = sorted((e for e in best.values() if ranked_time(e["timing"]) is not None),
                   key=lambda e: ranked_time(e["timing"]))
    untimed = sorted((e for e in best.values() if ranked_time(e["timing"]) is None), key=lambda e: e["at"])
    rank, previous = 0, None
    for index, entry in enumerate(timed):
        summary = entry["timing"]["kernel_ms"]
        if previous is None or summary.get("p20", summary["median"]) > previous.get("p80", previous["median"]):
            rank = index + 1  # beyond the noise of the one before: a rank of its own
        entry["rank"], previous = rank, summary
    for entry in untimed:
        entry["rank"] = None
    why = None if timed or not (untimed or interpreted()) else (
        "This server runs kernels in Triton's interpreter, whose times say nothing of a GPU's: correct "
        "kernels are listed by when they passed, not ranked by time.")
    return {"puzzle": puzzle, "ranked": bool(timed), "why": why, "entries": timed + untimed}


def export_csv(db, found):
    """Every submission of the class, one row each: for a teacher's spreadsheet."""
    out = io.StringIO()
    writer = csv.writer(out, quoting=csv.QUOTE_ALL)  # a separator inside a cell stays inside it
    writer.writerow(["student", "puzzle", "ok", "failing test", "kernel ms", "time (UTC)", "graded runs"])
    for row in db.execute("SELECT s.name, m.puzzle, m.ok, m.failing, m.timing, m.created, m.attempts FROM submission m "
                          "JOIN student s ON s.id = m.student_id WHERE s.class_code = ? AND s.removed = 0 "
                          "ORDER BY m.id", (found["code"],)):
        kernel_ms = json.loads(row["timing"])["kernel_ms"]["median"] if row["timing"] else None
        writer.writerow([spreadsheet_safe(row["name"]), spreadsheet_safe(row["puzzle"]), "yes" if row["ok"] else "no",
                         spreadsheet_safe(row["failing"] or ""), "" if kernel_ms is None else f"{kernel_ms:.6g}",
                         time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(row["created"])), row["attempts"]])
    return out.getvalue()


FORMULA_STARTS = ("=", "+", "-", "@")
CELL_BREAKS = re.compile(r"([,;\t|\r\n])")  # where some spreadsheet splits a line into cells, whatever the file says


def spreadsheet_safe(value):
    """Text as cells a spreadsheet shows and never evaluates, whichever separator it splits the line
    at: every piece that could begin a cell (the text's start, and after each character some
    spreadsheet splits at) and begins a formula gets a `'` before it."""
    pieces = CELL_BREAKS.split(str(value))
    return "".join("'" + piece if index % 2 == 0 and starts_formula(piece) else piece
                   for index, piece in enumerate(pieces))


def starts_formula(piece):
    """Whether a cell of `piece` is a formula: its first character that is not a space or invisible,
    in any width (full-width ＝, small ﹢ ...: NFKC), is one that starts a formula."""
    visible = next((c for c in piece if not (c.isspace() or names.invisible(c))), "")
    return unicodedata.normalize("NFKC", visible)[:1] in FORMULA_STARTS
