"""The course: the puzzles' pages and API. What leaves here is app.puzzles.public(...) and starter
specs; the reference and the solution never do."""
from flask import Blueprint, abort, current_app, render_template, url_for

from app import puzzles
from app.clients import TooManyWrites, charge_write
from app.db import StorageFull
from app.editor import render_editor
from app.errors import error_response
from sandbox.spec import SpecError

bp = Blueprint("course", __name__)


def solutions():
    return current_app.extensions["puzzle_solutions"]


def graded(spec):
    """The run hook (app.api, app.events): a spec naming a puzzle gets its hidden check."""
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
    return render_editor(puzzles.starter_spec(found))


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
    check. Stored (a new one charged to the client's writes), then its solution's run is started:
    graded runs find its outcome ready."""
    from app.api import json_body
    try:
        name = puzzles.save(puzzles.from_spec(json_body()), charge=charge_write)
    except puzzles.PuzzleError as e:
        return error_response(400, str(e), field=e.field)
    except SpecError as e:
        return error_response(400, str(e), field=e.field)
    except TooManyWrites as e:
        response, status = error_response(429, str(e))
        response.headers["Retry-After"] = str(e.retry_after)
        return response, status
    except StorageFull as e:
        return error_response(507, str(e))
    solutions().outcome(puzzles.find(name))  # starts its run if its outcome is not known
    return {"name": name, "url": url_for("course.puzzle_page", name=name, _external=True)}
