"""The course: the puzzles' pages and API. What leaves here is app.course.puzzles.public(...) and starter
specs; the reference and the solution never do."""
from flask import Blueprint, abort, current_app, render_template, url_for

from app.course import puzzles
from app.web.clients import charge_write
from app.web.editor import render_editor
from app.web.errors import error_response, refused
from app.web.owners import current_address, current_owner

bp = Blueprint("course", __name__)


def solutions():
    return current_app.extensions["puzzle_solutions"]


def graded(spec):
    """The run hook (app.web.api, app.web.events): a spec naming a puzzle gets its hidden check."""
    return puzzles.graded(spec, solutions())


@bp.get("/puzzles")
def course():
    return render_template("course.html", puzzles=puzzles.list_builtins())


@bp.get("/puzzles/<name>")
def puzzle_page(name):
    found = puzzles.find(name)
    if found is None:
        abort(404, f"there is no puzzle named '{name}'")
    # The page learns the puzzle from the spec's options.puzzle (static/js/puzzle.js asks the API).
    return render_editor(puzzles.starter_spec(found), title=f"Puzzle: {found.get('title') or name}")


@bp.get("/api/puzzles")
def list_puzzles():
    return {"puzzles": puzzles.list_builtins()}


@bp.get("/api/puzzles/<name>")
def get_puzzle(name):
    found = puzzles.find(name)
    if found is None:
        return error_response(404, f"there is no puzzle named '{name}'")
    return {**puzzles.public(found), "spec": puzzles.starter_spec(found)}


@bp.post("/api/puzzles")
def make_puzzle():
    """A teacher's puzzle from the page's spec: its source is the solution, its reference the hidden
    check. Checked first (its solution and its starter run on every test, as the teacher's runs),
    then stored (a new one charged to the client's writes) with its solution's outcome: graded runs
    find it ready."""
    from app.web.api import dispatcher, json_body

    def run(spec):
        return dispatcher().run(spec, current_owner(), from_link=True, address=current_address())
    try:
        puzzle = puzzles.from_spec(json_body())
        solved = puzzles.check_draft(puzzle, run)
        name = puzzles.save(puzzle, charge=charge_write)
    except puzzles.PuzzleError as e:  # the rest (a malformed spec, a full queue, ...): app.web.api's handlers
        return refused(400, e)
    solutions().keep(puzzles.find(name), solved)
    return {"name": name, "url": url_for("course.puzzle_page", name=name, _external=True)}
