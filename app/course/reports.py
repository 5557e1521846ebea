"""What a class's teacher reads of its submissions (app.course.submissions): the progress of each
student per puzzle, the failures grouped by how they fail, the leaderboards, and the CSV export,
whose cells no spreadsheet evaluates."""
import csv
import io
import json
import re
import time
import unicodedata

from app.course import names, puzzles
from app.course.submissions import ranked_time


EMPTY = {"state": "not started", "attempts": 0, "first_at": None, "last": None, "solved_at": None,
         "tries_to_solve": None, "late": False}


def progress(db, found, roster):
    """Each student of `roster` with their state per puzzle (cells), and the failures."""
    return {"students": [{"id": s["id"], "name": s["name"], "joined": s["joined"], "puzzles": row}
                         for s, row in zip(roster, cells(db, found, [s["id"] for s in roster]))],
            "failures": failures(db, found, [p["name"] for p in found["puzzles"]])}


def cells(db, found, ids):
    """Per student of `ids`, {puzzle: its state}: `not started`, `trying` (attempts, the first run's
    time, the last verdict, the test that fails) or `solved` (when, in how many tries); `late` when
    the puzzle has a due time and it was solved after it, or is unsolved and last tried after it."""
    due = {p["name"]: p["due"] for p in found["puzzles"]}
    found_cells = {}
    for row in db.execute("SELECT s.id AS student, m.puzzle, m.ok, m.failing, m.created, m.attempts FROM submission m "
                          "JOIN student s ON s.id = m.student_id WHERE s.class_code = ? AND s.removed = 0 "
                          "ORDER BY m.id", (found["code"],)).fetchall():
        if row["puzzle"] not in due:
            continue
        cell = found_cells.setdefault((row["student"], row["puzzle"]), {**EMPTY, "state": "trying",
                                                                        "first_at": row["created"]})
        cell["attempts"] += row["attempts"]  # a row stands for the pruned ones before it too
        cell["last"] = {"ok": bool(row["ok"]), "failing": row["failing"], "at": row["created"]}
        if row["ok"] and cell["solved_at"] is None:
            cell.update(state="solved", solved_at=row["created"], tries_to_solve=cell["attempts"])
    for (_, puzzle), cell in found_cells.items():
        deadline = due[puzzle]
        cell["late"] = deadline is not None and (cell["solved_at"] or cell["last"]["at"]) > deadline
    return [{name: found_cells.get((student, name), EMPTY) for name in due} for student in ids]


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


MARK_WORDS = {"missed": "elements of {} left unwritten", "extra": "elements of {} written that the solution leaves",
              "twice": "elements of {} written twice"}


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
    marks = [words.format(output) for output, found in sorted((verdict.get("diff") or {}).items())
             for kind, words in MARK_WORDS.items() if (found.get(kind) or {}).get("count")]
    only_hidden = all(t.get("ok") for t in tests if not str(t.get("label", "")).startswith("hidden test"))
    return what + (": " + ", ".join(marks) if marks else "") + ("; only on sizes not shown" if only_hidden else "")


def leaderboard(db, found, puzzle, interpreted=lambda: False):
    """The class's correct kernels of `puzzle`, each student's fastest, ranked by the grader's GPU
    time: a kernel whose time's noise band (p20..p80) overlaps the one ranked before it shares its
    rank. Times of Triton's interpreter rank nothing (`ranked` false, `why` says so, before the first
    correct kernel too where the server's workers run the interpreter: `interpreted()`, asked only then).
    An entry is `late` where the puzzle has a due time and that kernel was submitted after it."""
    due = next((p["due"] for p in found["puzzles"] if p["name"] == puzzle), None)
    best = {}
    for row in db.execute("SELECT s.id, s.name, m.timing, m.created FROM submission m JOIN student s ON s.id = m.student_id "
                          "WHERE s.class_code = ? AND s.removed = 0 AND m.puzzle = ? AND m.ok = 1 ORDER BY m.id",
                          (found["code"], puzzle)):
        timing = json.loads(row["timing"]) if row["timing"] else None
        entry = {"student": row["name"], "at": row["created"], "timing": timing,
                 "late": due is not None and row["created"] > due}
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


CSV_STATES = {"solved": "solved", "trying": "not solved yet", "not started": "not started"}


def export_csv(db, found, roster):
    """One row per student of `roster` and puzzle of the class, in the dashboard's order, idle
    students too: for a teacher's spreadsheet."""
    out = io.StringIO()
    writer = csv.writer(out, quoting=csv.QUOTE_ALL)  # a separator inside a cell stays inside it
    writer.writerow(["student", "puzzle", "status", "graded runs", "first run (UTC)", "last run (UTC)",
                     "due (UTC)", "on time"])
    titles = public_titles(found)
    for student, row in zip(roster, cells(db, found, [s["id"] for s in roster])):
        for puzzle in found["puzzles"]:
            cell = row[puzzle["name"]]
            timely = "" if puzzle["due"] is None or cell["state"] == "not started" else ("late" if cell["late"] else "on time")
            writer.writerow([spreadsheet_safe(student["name"]), spreadsheet_safe(titles[puzzle["name"]]),
                             CSV_STATES[cell["state"]], cell["attempts"], utc(cell["first_at"]),
                             utc(cell["last"] and cell["last"]["at"]), utc(puzzle["due"]), timely])
    return out.getvalue()


def public_titles(found):
    return {p["name"]: (puzzles.find(p["name"]) or {}).get("title", p["name"]) for p in found["puzzles"]}


def utc(seconds):
    return "" if seconds is None else time.strftime("%Y-%m-%d %H:%M", time.gmtime(seconds))


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
