"""Puzzles: a statement, a starter kernel with a gap, hints, and a hidden check.

A built-in puzzle is a literate file in `kernels/puzzles/` read without running it: a docstring (the
title, its underline, the statement), `# %% Starter` (the kernel the student starts from),
`# %% Solution` (the kernel that passes), then `# %% The puzzle` and `PUZZLE = {...}`, a pure
literal: `kernel`, `inputs`, `args`, `grid`, `reference` (hidden), `hints`, `tests` (each a dict of
the names the expressions use, e.g. `{"N": 20}`; the first is the one the page shows), optional
`hidden` (more tests, graded but never shown: their sizes are not on the page) and optional `options`
(tolerances: the puzzle's, whatever a submission's spec says). A teacher's puzzle (`t-<id>`) is the same thing made from a spec in the page
and kept in the database.

The reference, the solution and the hidden tests stay here: the page gets `public(puzzle)` and a
starter spec with no reference; a run that names the puzzle (`options.puzzle`) gets `grading` added,
which its worker hands to the grader alone (sandbox.grading.grader).

Every expression of a puzzle (inputs, arguments, grid, reference, as written and as each test makes
them) and its solution are parsed (`ast`) before a teacher's puzzle is stored: one that does not
parse is refused naming its field. A puzzle's solution runs once (app.course.solutions): when a teacher's
puzzle is saved, and for the built-ins at the server's start; its outcome, a failure included, is
kept in the database, and every graded run reads it there.
"""
import ast
import hashlib
import io
import json
import threading
import tokenize
from pathlib import Path

from app import db as database
from app import literate
from app.db import get_db
from sandbox.errors import Refused, unknown_fields
from sandbox.result import failure_text
from sandbox.spec import SpecError, normalize

PUZZLES_DIR = Path(__file__).resolve().parents[2] / "kernels" / "puzzles"
STARTER, SOLUTION = "Starter", "Solution"  # the sections of a puzzle's file; `# %% The puzzle` holds PUZZLE
TEACHER_PREFIX = "t-"
MAX_TESTS = 6
MAX_TEXT = 8000  # characters of a teacher's statement, of each hint


class PuzzleError(Refused, ValueError):
    """A puzzle definition that cannot be used (400); `field` names the part at fault."""


# ---- substituting a test's sizes into the expressions ----

def parse_expression(expr, field):
    """Refuse (PuzzleError naming `field`) an expression that is not one Python expression."""
    if not isinstance(expr, str):
        return
    try:
        ast.parse(expr.strip(), mode="eval")
    except (SyntaxError, ValueError, MemoryError, RecursionError) as e:
        where = f" (line {e.lineno}, column {e.offset})" if getattr(e, "lineno", None) else ""
        raise PuzzleError(f"{field} is not a Python expression: {getattr(e, 'msg', None) or e}{where}", field) from None


def parse_source(source, field):
    try:
        ast.parse(source)
    except (SyntaxError, ValueError, MemoryError, RecursionError) as e:
        where = f" (line {e.lineno})" if getattr(e, "lineno", None) else ""
        raise PuzzleError(f"{field} is not valid Python: {getattr(e, 'msg', None) or e}{where}", field) from None


def expressions(puzzle_or_test):
    """(field, expression) of every expression of a puzzle or of one of its tests."""
    for part in ("inputs", "args", "reference"):
        for name, expr in puzzle_or_test[part].items():
            yield f"{part}.{name}", expr
    yield "grid", puzzle_or_test["grid"]


def substitute(expr, names):
    """`expr` with each name of `names` (a Python identifier, not an attribute) replaced by its value:
    done on tokens, so `N` in `x.N`, `"N"` or `NUM` stays as it is. One pass over the text."""
    if not isinstance(expr, str):
        return expr
    pieces, written = [], 0  # the text between the names is kept as written
    for start, end, name in _names(expr):
        if name in names:
            pieces += [expr[written:start], repr(names[name])]
            written = end
    return "".join(pieces) + expr[written:] if pieces else expr


def _names(expr):
    """(start, end, name) of each name `expr` uses as a variable (not an attribute), in order."""
    line_starts = [0]
    for line in expr.splitlines(keepends=True):
        line_starts.append(line_starts[-1] + len(line))
    previous = None
    for token in tokenize.generate_tokens(io.StringIO(expr).readline):
        if token.type == tokenize.NAME and not (previous and previous.string == "."):
            start = line_starts[token.start[0] - 1] + token.start[1]
            yield start, start + len(token.string), token.string
        previous = token


def concrete(mapping, names):
    return {key: substitute(value, names) for key, value in mapping.items()}


def label(names):
    return ", ".join(f"{k}={v}" for k, v in names.items()) or "the spec's own launch"


# ---- reading built-in puzzles ----

def read(name, path):
    """A built-in puzzle from its literate file (app.literate)."""
    doc = literate.read(path)
    try:
        return define(name, title=doc.title, statement=doc.body, starter=doc.section(STARTER),
                      solution=doc.section(SOLUTION), **doc.literal("PUZZLE"))
    except literate.LiterateError as e:
        raise PuzzleError(str(e)) from None


def copied(test):
    return dict(test) if isinstance(test, dict) else test  # anything else is refused below, naming its field


def define(name, *, title, statement, starter, solution, kernel, inputs, args, grid, reference, hints=(),
           tests=({},), hidden=(), options=None):
    """One puzzle, checked: every test's spec (starter and solution alike) must normalize."""
    puzzle = {"name": name, "title": title, "statement": statement, "hints": list(hints), "starter": starter,
              "solution": solution, "kernel": kernel, "inputs": inputs, "args": args, "grid": grid,
              "reference": reference, "tests": [copied(t) for t in tests] or [{}],
              "hidden": [copied(t) for t in hidden], "options": dict(options or {})}
    if not reference:
        raise PuzzleError("a puzzle needs a reference: the expected value of at least one output", "reference")
    if len(puzzle["tests"]) + len(puzzle["hidden"]) > MAX_TESTS:
        raise PuzzleError(f"a puzzle has at most {MAX_TESTS} tests, hidden ones included", "tests")
    for field in ("tests", "hidden"):
        for names in puzzle[field]:
            if not (isinstance(names, dict) and all(isinstance(k, str) and k.isidentifier() and isinstance(v, (int, float))
                                                    and not isinstance(v, bool) for k, v in names.items())):
                raise PuzzleError("each test maps names to numbers, such as {\"N\": 20}", field)
    # Parsed before anything else reads them: the tests' substitution tokenizes them.
    for field, expr in expressions(puzzle):
        parse_expression(expr, field)
    parse_source(solution, "source")
    parse_source(starter, "starter")
    _check_test_names(puzzle)
    for test in tests_of(puzzle):
        for field, expr in expressions(test):
            parse_expression(expr, f"{field} (the test {test['label']})")
        normalize({"source": solution, **{k: test[k] for k in ("kernel", "inputs", "args", "grid", "reference")},
                   "options": test["options"]})
    return puzzle


def _check_test_names(puzzle):
    """Each name a test gives must change the launch: one that no expression uses would make every
    test the same launch, passing or failing together. The expressions are read once, whatever the
    number of names."""
    used = {name for _, expr in expressions(puzzle) if isinstance(expr, str) for _, _, name in _names(expr)}
    for names in puzzle["tests"]:
        for name in names:
            if name not in used:
                raise PuzzleError(f"the test sizes give {name}, but no input, argument, grid or reference uses it, "
                                  f"so every test would run the same launch: write {name} where a size goes "
                                  f"(torch.randn({name}) instead of a number)", "tests")


def builtin_names():
    return list(literate.files(PUZZLES_DIR))


_builtins_lock = threading.Lock()
_builtins = {}


def builtin(name):
    """A built-in puzzle by name, or None (checked once per file version)."""
    path = literate.files(PUZZLES_DIR).get(name)
    if path is None:
        return None
    key = (name, path.stat().st_mtime_ns)
    with _builtins_lock:
        if key not in _builtins:
            _builtins[key] = read(name, path)
        return _builtins[key]


def list_builtins():
    return [public(builtin(name)) for name in builtin_names()]


# ---- teachers' puzzles ----

def _text(value, field, required=False):
    if value is None and not required:
        return ""
    if not isinstance(value, str) or (required and not value.strip()):
        raise PuzzleError(f"{field} must be text" + (" and cannot be empty" if required else ""), field)
    if len(value) > MAX_TEXT:
        raise PuzzleError(f"{field} is longer than {MAX_TEXT} characters", field)
    return value.strip()


BODY_FIELDS = ("spec", "title", "statement", "hints", "starter", "tests", "hidden")


def from_spec(body):
    """A teacher's puzzle from a request body: {spec (its source is the solution, its reference the
    hidden check), title, statement, hints, starter, tests, hidden (tests graded but not shown)}."""
    if not isinstance(body, dict):
        raise PuzzleError("the body must be a JSON object with spec, title, statement, hints and starter")
    unknown_fields(body, BODY_FIELDS, "in the puzzle", PuzzleError)
    spec = normalize(body.get("spec"))
    for field in ("tests", "hidden"):
        if not isinstance(body.get(field) or [], list):
            raise PuzzleError(f"{field} must be a list of tests, such as [{{\"N\": 1000}}]", field)
    hints = body.get("hints") or []
    if not (isinstance(hints, list) and len(hints) <= 10):
        raise PuzzleError("hints must be a list of at most 10 texts", "hints")
    options = {k: spec["options"][k] for k in ("atol", "rtol") if spec["options"][k] is not None}
    return define("draft", title=_text(body.get("title"), "title", True), statement=_text(body.get("statement"), "statement", True),
                  hints=[_text(h, "hints", True) for h in hints], starter=_text(body.get("starter"), "starter", True) + "\n",
                  solution=spec["source"], kernel=spec["kernel"], inputs=spec["inputs"], args=spec["args"],
                  grid=spec["grid"], reference=spec["reference"], tests=body.get("tests") or [{}],
                  hidden=body.get("hidden") or [], options=options)


def failure(test):
    """Why one test of a graded run failed, in words (sandbox.grading.verdict summary)."""
    if test["error"]:
        line = f" at line {test['error']['line']}" if test["error"].get("line") else ""
        return f"{test['error']['phase']} error{line}: {test['error']['message']}"
    return failure_text(test)


def check_draft(puzzle, run):
    """Run a puzzle's solution and its starter on every test, as a student's run is graded
    (`run(spec) -> result`: in a run process, sandbox.grading.verdict); refuse (PuzzleError naming the
    field) a solution that fails a test or a starter that passes them all. Returns the solution's
    graded result (its trace is the expected picture)."""
    def graded_run(source):
        spec = starter_spec(puzzle)
        spec = {**spec, "source": source, "options": {**spec["options"], "bench": False, "ir": False}}
        result = run({**spec, "grading": grading(puzzle, None)})
        if not result.get("puzzle"):  # it never reached the tests (the server refused or lost it)
            error = result.get("error") or {}
            raise PuzzleError(f"the puzzle could not be checked: {error.get('message', 'the run failed')}")
        return result

    solved = graded_run(puzzle["solution"])
    failed = next((t for t in solved["puzzle"]["tests"] if not t["ok"]), None)
    if failed is not None:
        raise PuzzleError(f"the solution (the kernel in the editor) fails the test {failed['label']}: "
                          f"{failure(failed)}", "solution")
    started = graded_run(puzzle["starter"])
    if started["puzzle"]["ok"]:
        raise PuzzleError("the starter passes every test as it is: a student would have nothing to do. "
                          "Take out what the statement asks them to write", "starter")
    return solved


def save(puzzle, charge=None):
    """Store a teacher's puzzle; the same content gets the same id. Returns its name, `t-<id>`.
    `charge(nbytes)` is called before a new row is written (it may refuse: a rate or the database's
    size); saving a puzzle that is stored already costs nothing."""
    stored = {k: v for k, v in puzzle.items() if k != "name"}
    body = json.dumps(stored, sort_keys=True)
    digest = hashlib.sha256(body.encode()).hexdigest()
    puzzle_id = database.store_by_content(get_db(), "puzzle", digest, body, charge)
    if puzzle_id is None:
        raise PuzzleError("could not store the puzzle; try again")
    return TEACHER_PREFIX + puzzle_id


def find(name):
    """A puzzle by name: built-in, or a teacher's `t-<id>`; None if there is none."""
    if not isinstance(name, str):
        return None
    if name.startswith(TEACHER_PREFIX):
        row = get_db().execute("SELECT body FROM puzzle WHERE id = ?", (name[len(TEACHER_PREFIX):],)).fetchone()
        return {"name": name, **json.loads(row["body"])} if row else None
    return builtin(name) if name.isidentifier() else None


# ---- what the page gets, and what a run gets ----

def tests_of(puzzle):
    """Each test as a launch: the expressions with the test's names substituted, the hidden reference;
    the shown tests first, then the hidden ones (labelled without their sizes)."""
    shown = [(label(names), False, names) for names in puzzle["tests"]]
    hidden = [(f"hidden test {i + 1}", True, names) for i, names in enumerate(puzzle.get("hidden", ()))]
    return [{"label": text, "hidden": secret, "kernel": puzzle["kernel"], "inputs": concrete(puzzle["inputs"], names),
             "args": concrete(puzzle["args"], names), "grid": substitute(puzzle["grid"], names),
             "reference": concrete(puzzle["reference"], names), "options": dict(puzzle["options"])}
            for text, secret, names in shown + hidden]


def public(puzzle):
    """What the page may see: never the reference or the solution."""
    return {"name": puzzle["name"], "title": puzzle["title"], "statement": puzzle["statement"],
            "hints": puzzle["hints"], "tests": [label(names) for names in puzzle["tests"]],
            "hidden_tests": len(puzzle.get("hidden", ())),
            "outputs": list(puzzle["reference"])}


def starter_spec(puzzle):
    """The spec the page opens: the starter launched as the first test, with no reference."""
    first = tests_of(puzzle)[0]
    return normalize({"source": puzzle["starter"], "kernel": first["kernel"], "inputs": first["inputs"],
                      "args": first["args"], "grid": first["grid"], "reference": {},
                      "options": {"puzzle": puzzle["name"]}})


def grading(puzzle, expected):
    return {"puzzle": puzzle["name"], "tests": tests_of(puzzle), "expected": expected}


def graded(spec, solutions):
    """A normalized spec that names a puzzle, with its hidden check added; any other spec as it is.
    Raises SpecError for a puzzle that does not exist. Any spec naming a puzzle, graded or stepped
    through, is someone else's code to its runs (app.dispatch.jobs.provenance): the puzzle's
    expressions run in it."""
    name = spec["options"]["puzzle"]
    if name is None or spec["options"]["step_pid"] is not None:  # stepping through a program checks nothing
        return spec
    puzzle = find(name)
    if puzzle is None:
        raise SpecError(f"there is no puzzle named '{name}'", "options.puzzle")
    return {**spec, "grading": grading(puzzle, solutions.expected(puzzle))}
