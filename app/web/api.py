"""JSON API: run, examples, snippets, export, health."""
import json

from flask import Blueprint, Response, current_app, jsonify, request, url_for

from app.course import classes
from app.course.views import graded
from app.db import StorageFull
from app.dispatch.interface import OwnerQueueFull, QueueFull, RunLost
from app.web import gallery, share
from app.web.clients import TooManyWrites, charge_write
from app.web.errors import error_response, refused
from app.web.export import export_script
from app.web.owners import current_address, current_owner
from sandbox.launch_form import form_of
from sandbox.spec import SpecError, check_finite, check_size, normalize, too_deep

bp = Blueprint("api", __name__)


def dispatcher():
    return current_app.extensions["dispatcher"]


# What a request may be refused for, wherever it is raised (this blueprint's routes and the course's):
# one answer each, app-wide.
@bp.app_errorhandler(SpecError)
def bad_spec(e):
    return refused(400, e)


@bp.app_errorhandler(TooManyWrites)
def too_many_writes(e):
    response, status = refused(429, e)
    response.headers["Retry-After"] = str(e.retry_after)
    return response, status


@bp.app_errorhandler(StorageFull)
def storage_full(e):
    return refused(507, e)


@bp.app_errorhandler(QueueFull)
def queue_full(e):
    """The whole queue (503), or this owner's or this address's share of it (429, OwnerQueueFull)."""
    return refused(429 if isinstance(e, OwnerQueueFull) else 503, e)


@bp.app_errorhandler(RunLost)
def run_lost(e):
    return refused(503, e, phase="timeout")


def json_body():
    """The request's JSON object, or None. Strict: JSON has no NaN or Infinity, but Python's parser
    (and so request.get_json) accepts them; one is refused here with a SpecError naming its field.
    A body nested deeper than sandbox.spec.MAX_DEPTH, or of more than REQUEST_MAX_VALUES values, is
    refused (SpecError) before anything walks it."""
    if not request.is_json:
        return None
    try:
        body = json.loads(request.get_data(cache=True))
    except RecursionError:  # nested deeper than Python's own parser goes
        raise too_deep("the request body") from None
    except ValueError:
        return None
    check_size(body, "the request body")
    if not isinstance(body, dict):
        return None
    check_finite(body)
    return body


def spec_from(body, beside=()):
    """The run spec of a request body: its "spec" member, whose other members must be among `beside`
    (the request's own fields, such as "from_link"), or else the body itself, a bare spec, beside
    whose fields only `beside` may stand. Anything else is refused (SpecError), naming it."""
    if not body:
        return normalize(None)
    if "spec" not in body:
        return normalize({k: v for k, v in body.items() if k not in beside})
    unknown = [key for key in body if key != "spec" and key not in beside]
    if unknown:
        raise SpecError(f"unknown field{'s' if len(unknown) > 1 else ''} beside the spec: "
                        f"{', '.join(repr(str(k)[:40]) for k in unknown[:5])}; the body has only "
                        f"{', '.join(('spec', *beside))}", str(unknown[0])[:40])
    return normalize(body["spec"])


@bp.post("/api/run")
def run():
    body = json_body()
    # from_link: the page shows someone else's code (a shared link's); with the spec, it decides whose
    # code the run is (app.dispatch.jobs.provenance). A bare-spec body carries it beside the spec's
    # fields: it is the request's, not the spec's.
    spec = spec_from(body, beside=("from_link",))
    spec = graded(spec)  # a spec naming a puzzle gets its hidden check
    member = classes.counted(spec)  # a class's student: the grader's verdict is kept
    result = dispatcher().run(spec, current_owner(), from_link=bool(body.get("from_link")),
                              address=current_address())
    if member is not None:
        classes.recorder(member, spec)(result)
    return jsonify(result)


@bp.get("/api/spec")
def spec_schema():
    """Each option's default and allowed values: what a client needs to build a valid run spec
    (and, as `ui`, a shared link's UI state)."""
    return jsonify(share.schema())


@bp.get("/api/examples")
def examples():
    return jsonify(gallery.list_examples())


@bp.get("/api/examples/<name>")
def example(name):
    found = gallery.load_example(name)
    if found is None:
        return error_response(404, f"there is no example named '{name}'")
    return jsonify(found)


@bp.post("/api/snippets")
def save_snippet():
    body = json_body()
    try:
        spec = spec_from(body, beside=("ui",))
        snippet_id = share.save(spec, body.get("ui"), current_app.config["MAX_SNIPPET_BYTES"], charge=charge_write)
    except share.SnippetTooLarge as e:
        return refused(413, e)
    except (share.SnippetError, SpecError) as e:  # UiError among them, with its field
        return refused(400, e)
    return jsonify({"id": snippet_id, "url": url_for("editor.snippet", snippet_id=snippet_id, _external=True)})


@bp.get("/api/snippets/<snippet_id>")
def get_snippet(snippet_id):
    found = share.load(snippet_id)
    if found is None:
        return error_response(404, f"there is no snippet '{snippet_id}'")
    return jsonify({"id": snippet_id, **found})


@bp.post("/api/launch-form")
def launch_form():
    """A launch of a script's result (body: {"source", "launch": a record of result.launches.list,
    "seed"?}) as a form run's spec, to edit, share and export as any other, and notes saying which
    inputs hold the program's values and which do not (and why)."""
    body = json_body() or {}
    try:
        unknown = sorted(set(body) - {"source", "launch", "seed"})
        if unknown:
            raise SpecError(f"unknown field {unknown[0]!r}: the body has only source, launch and seed", unknown[0][:40])
        if not isinstance(body.get("source"), str):
            raise SpecError("'source' must be the program's source", "source")
        seed = body.get("seed", 0)
        if type(seed) is not int:
            raise SpecError("'seed' must be an integer", "seed")
        spec, notes = form_of(body["source"], body.get("launch"), seed)
        return jsonify({"spec": spec, "notes": notes})
    except SpecError as e:
        return refused(400, e, phase="parse")


@bp.post("/api/export")
def export():
    try:
        spec = spec_from(json_body())
    except SpecError as e:
        return refused(400, e)
    return Response(export_script(spec), mimetype="text/x-python",
                    headers={"Content-Disposition": f'attachment; filename="{spec.get("kernel", "program")}.py"'})


@bp.get("/healthz")
def healthz():
    health = dispatcher().health()
    solutions = current_app.extensions.get("puzzle_solutions")
    health["puzzle_solutions"] = solutions.health() if solutions is not None else None
    return jsonify(health), 200 if health["ok"] else 503
