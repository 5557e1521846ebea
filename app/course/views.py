"""The course: the puzzles' pages and API. What leaves here is app.course.puzzles.public(...) and starter
specs; the reference and the solution never do."""
from flask import Blueprint, abort, current_app, render_template, url_for

from app.body import json_body
from app.course import puzzles
from app.fairness import charge_write
from app.owners import current_address, current_owner

bp = Blueprint("course", __name__)


def solutions():
    return current_app.extensions["puzzle_solutions"]


def graded(spec):
    """The run hook (registered in app.web.hooks): a spec naming a puzzle gets its hidden check."""
    return puzzles.graded(spec, solutions())


def found_or_404(name):
    found = puzzles.find(name)
    if found is None:
        abort(404, f"there is no puzzle named '{name}'")
    return found


@bp.get("/puzzles")
def course():
    return render_template("course.html", puzzles=puzzles.list_builtins())


@bp.get("/puzzles/<name>")
def puzzle_page(name):
    found = found_or_404(name)
    # The page learns the puzzle from the spec's options.puzzle (static/js/teach/puzzle.js asks the API);
    # the page is the editor, which the web side lends (app.web.hooks).
    return current_app.extensions["hooks"].render_editor(puzzles.starter_spec(found),
                                                         title=f"Puzzle: {found.get('title') or name}")


@bp.get("/api/puzzles")
def list_puzzles():
    return {"puzzles": puzzles.list_builtins()}


@bp.get("/api/puzzles/<name>")
def get_puzzle(name):
    found = found_or_404(name)
    return {**puzzles.public(found), "spec": puzzles.starter_spec(found)}


@bp.post("/api/puzzles")
def make_puzzle():
    """A teacher's puzzle from the page's spec: its source is the solution, its reference the hidden
    check. Checked first (its solution and its starter run on every test, as the teacher's runs),
    then stored (a new one charged to the client's writes) with its solution's outcome: graded runs
    find it ready."""
    def run(spec):
        return current_app.extensions["dispatcher"].run(spec, current_owner(), from_link=True, address=current_address())
    puzzle = puzzles.from_spec(json_body())
    solved = puzzles.check_draft(puzzle, run)
    name = puzzles.save(puzzle, charge=charge_write)
    solutions().keep(puzzles.find(name), solved)
    return {"name": name, "url": url_for("course.puzzle_page", name=name, _external=True)}
