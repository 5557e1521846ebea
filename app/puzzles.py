"""Puzzles: a statement, a starter kernel with a gap, hints, and a hidden check.

A built-in puzzle is a literate file in `kernels/puzzles/` read without running it: a docstring (the
title, its underline, the statement), `# %% Starter` (the kernel the student starts from),
`# %% Solution` (the kernel that passes), then `# %% The puzzle` and `PUZZLE = {...}`, a pure
literal: `kernel`, `inputs`, `args`, `grid`, `reference` (hidden), `hints`, `tests` (each a dict of
the names the expressions use, e.g. `{"N": 20}`; the first is the one the page shows) and optional
`options` (tolerances). A teacher's puzzle (`t-<id>`) is the same thing made from a spec in the page
and kept in the database.

The reference and the solution stay here: the page gets `public(puzzle)` and a starter spec with no
reference; a run that names the puzzle (`options.puzzle`) gets `grading` added (sandbox.puzzles).
"""
import ast
import hashlib
import io
import json
import logging
import re
import threading
import tokenize
from pathlib import Path

from app.db import get_db
from sandbox.spec import SpecError, normalize

log = logging.getLogger(__name__)
PUZZLES_DIR = Path(__file__).resolve().parent.parent / "kernels" / "puzzles"
_FILE_NAME = re.compile(r"^\d+_([a-z][a-z0-9_]*)\.py$")
STARTER, SOLUTION, PUZZLE = "# %% Starter", "# %% Solution", "# %% The puzzle"
TEACHER_PREFIX = "t-"
MAX_TESTS = 6
MAX_TEXT = 8000  # characters of a teacher's statement, of each hint


class PuzzleError(ValueError):
    """A puzzle definition that cannot be used; `field` names the part at fault."""

    def __init__(self, message, field=None):
        super().__init__(message)
        self.field = field


# ---- substituting a test's sizes into the expressions ----

def substitute(expr, names):
    """`expr` with each name of `names` (a Python identifier, not an attribute) replaced by its value:
    done on tokens, so `N` in `x.N`, `"N"` or `NUM` stays as it is."""
    if not isinstance(expr, str):
        return expr
    line_starts = [0]
    for line in expr.splitlines(keepends=True):
        line_starts.append(line_starts[-1] + len(line))
    spans, previous = [], None  # (start, end, replacement), in order; the text between is kept as written
    for token in tokenize.generate_tokens(io.StringIO(expr).readline):
        if token.type == tokenize.NAME and token.string in names and not (previous and previous.string == "."):
            start = line_starts[token.start[0] - 1] + token.start[1]
            spans.append((start, start + len(token.string), repr(names[token.string])))
        previous = token
    for start, end, text in reversed(spans):
        expr = expr[:start] + text + expr[end:]
    return expr


def concrete(mapping, names):
    return {key: substitute(value, names) for key, value in mapping.items()}


def label(names):
    return ", ".join(f"{k}={v}" for k, v in names.items()) or "the spec's own launch"


# ---- reading built-in puzzles ----

def _files():
    files = {}
    for path in sorted(PUZZLES_DIR.glob("*.py")):
        match = _FILE_NAME.match(path.name)
        if match:
            files[match.group(1)] = path
    return files


def _title_and_statement(docstring):
    lines = (docstring or "").strip().splitlines()
    title = lines[0].strip() if lines else ""
    body = lines[2:] if len(lines) > 1 and set(lines[1].strip()) <= set("=-~") else lines[1:]
    return title, "\n".join(body).strip()


def _section(text, start, end, path):
    head, marker, rest = text.partition("\n" + start + "\n")
    if not marker:
        raise PuzzleError(f"{path.name} has no '{start}' line")
    return rest.partition("\n" + end + "\n")[0].strip() + "\n" if end else rest


def read(name, path):
    text = path.read_text()
    tree = ast.parse(text, filename=str(path))
    literal = next((node.value for node in tree.body if isinstance(node, ast.Assign)
                    and [getattr(t, "id", None) for t in node.targets] == ["PUZZLE"]), None)
    if literal is None:
        raise PuzzleError(f"{path.name} has no `PUZZLE = {{...}}`")
    title, statement = _title_and_statement(ast.get_docstring(tree))
    return define(name, title=title, statement=statement, starter=_section(text, STARTER, SOLUTION, path),
                  solution=_section(text, SOLUTION, PUZZLE, path), **ast.literal_eval(literal))


def define(name, *, title, statement, starter, solution, kernel, inputs, args, grid, reference, hints=(),
           tests=({},), options=None):
    """One puzzle, checked: every test's spec (starter and solution alike) must normalize."""
    puzzle = {"name": name, "title": title, "statement": statement, "hints": list(hints), "starter": starter,
              "solution": solution, "kernel": kernel, "inputs": inputs, "args": args, "grid": grid,
              "reference": reference, "tests": [dict(t) for t in tests] or [{}], "options": dict(options or {})}
    if not reference:
        raise PuzzleError("a puzzle needs a reference: the expected value of at least one output", "reference")
    if len(puzzle["tests"]) > MAX_TESTS:
        raise PuzzleError(f"a puzzle has at most {MAX_TESTS} tests", "tests")
    for names in puzzle["tests"]:
        if not (isinstance(names, dict) and all(isinstance(k, str) and k.isidentifier() and isinstance(v, (int, float))
                                                and not isinstance(v, bool) for k, v in names.items())):
            raise PuzzleError("each test maps names to numbers, such as {\"N\": 20}", "tests")
    for test in tests_of(puzzle):
        normalize({"source": solution, **{k: test[k] for k in ("kernel", "inputs", "args", "grid", "reference")},
                   "options": test["options"]})
    return puzzle


def builtin_names():
    return list(_files())


_builtins_lock = threading.Lock()
_builtins = {}


def builtin(name):
    """A built-in puzzle by name, or None (read once per file version)."""
    path = _files().get(name)
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


def from_spec(body):
    """A teacher's puzzle from a request body: {spec (its source is the solution, its reference the
    hidden check), title, statement, hints, starter, tests}."""
    if not isinstance(body, dict):
        raise PuzzleError("the body must be a JSON object with spec, title, statement, hints and starter")
    spec = normalize(body.get("spec"))
    hints = body.get("hints") or []
    if not (isinstance(hints, list) and len(hints) <= 10):
        raise PuzzleError("hints must be a list of at most 10 texts", "hints")
    options = {k: spec["options"][k] for k in ("atol", "rtol") if spec["options"][k] is not None}
    return define("draft", title=_text(body.get("title"), "title", True), statement=_text(body.get("statement"), "statement", True),
                  hints=[_text(h, "hints", True) for h in hints], starter=_text(body.get("starter"), "starter", True) + "\n",
                  solution=spec["source"], kernel=spec["kernel"], inputs=spec["inputs"], args=spec["args"],
                  grid=spec["grid"], reference=spec["reference"], tests=body.get("tests") or [{}], options=options)


def save(puzzle):
    """Store a teacher's puzzle; the same content gets the same id. Returns its name, `t-<id>`."""
    stored = {k: v for k, v in puzzle.items() if k != "name"}
    body = json.dumps(stored, sort_keys=True)
    digest = hashlib.sha256(body.encode()).hexdigest()
    db = get_db()
    for length in range(10, len(digest) + 1):
        row = db.execute("SELECT digest FROM puzzle WHERE id = ?", (digest[:length],)).fetchone()
        if row is None:
            db.execute("INSERT OR IGNORE INTO puzzle (id, digest, body) VALUES (?, ?, ?)", (digest[:length], digest, body))
            return TEACHER_PREFIX + digest[:length]
        if row["digest"] == digest:
            return TEACHER_PREFIX + digest[:length]
    raise PuzzleError("could not store the puzzle; try again")


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
    """Each test as a launch: the expressions with the test's names substituted, the hidden reference."""
    return [{"label": label(names), "kernel": puzzle["kernel"], "inputs": concrete(puzzle["inputs"], names),
             "args": concrete(puzzle["args"], names), "grid": substitute(puzzle["grid"], names),
             "reference": concrete(puzzle["reference"], names), "options": dict(puzzle["options"])}
            for names in puzzle["tests"]]


def public(puzzle):
    """What the page may see: never the reference or the solution."""
    return {"name": puzzle["name"], "title": puzzle["title"], "statement": puzzle["statement"],
            "hints": puzzle["hints"], "tests": [label(names) for names in puzzle["tests"]],
            "outputs": list(puzzle["reference"])}


def starter_spec(puzzle):
    """The spec the page opens: the starter launched as the first test, with no reference."""
    first = tests_of(puzzle)[0]
    return normalize({"source": puzzle["starter"], "kernel": first["kernel"], "inputs": first["inputs"],
                      "args": first["args"], "grid": first["grid"], "reference": {},
                      "options": {"puzzle": puzzle["name"]}})


class Solutions:
    """The solution's trace of each puzzle's first test, run once per puzzle (as a graded run of the
    solution, in a run process like any other) and kept: every graded run carries it as `expected`."""

    def __init__(self):
        self.traces, self.lock = {}, threading.Lock()

    def expected(self, puzzle, dispatcher):
        key = hashlib.sha256(json.dumps(puzzle, sort_keys=True).encode()).hexdigest()
        with self.lock:
            if key in self.traces:
                return self.traces[key]
        spec = {**starter_spec(puzzle), "source": puzzle["solution"]}
        try:
            # An owner of its own per puzzle, and none of its compiled kernels kept: a teacher's solution
            # is a stranger's code, like a shared link's.
            result = dispatcher.run({**spec, "grading": grading(puzzle, None)}, f"puzzle-solution:{puzzle['name']}",
                                    from_link=True)
        except Exception:  # a full queue, a lost run: the student's run is still graded, without the picture
            log.exception("the solution of puzzle %s could not be run", puzzle["name"])
            return None
        trace = result["trace"] if result["status"] == "ok" else None
        with self.lock:
            if result["status"] == "ok":  # a failure (a busy server, a broken teacher's puzzle) is tried again
                self.traces[key] = trace
        return trace


def grading(puzzle, expected):
    return {"puzzle": puzzle["name"], "tests": tests_of(puzzle), "expected": expected}


def graded(spec, dispatcher, solutions):
    """A normalized spec that names a puzzle, with its hidden check added; any other spec as it is.
    Raises SpecError for a puzzle that does not exist."""
    name = spec["options"]["puzzle"]
    if name is None or spec["options"]["step_pid"] is not None:  # stepping through a program checks nothing
        return spec
    puzzle = find(name)
    if puzzle is None:
        raise SpecError(f"there is no puzzle named '{name}'", "options.puzzle")
    return {**spec, "grading": grading(puzzle, solutions.expected(puzzle, dispatcher))}
