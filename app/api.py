"""JSON API: run, examples, snippets, export, health."""
import json

from flask import Blueprint, Response, current_app, jsonify, request, url_for

from app import gallery, share
from app.course import graded
from app.dispatcher import OwnerQueueFull, QueueFull, RunLost
from app.errors import error_response
from app.export import export_script
from app.owners import current_owner
from sandbox.spec import SpecError, check_finite, normalize, schema

bp = Blueprint("api", __name__)


def dispatcher():
    return current_app.extensions["dispatcher"]


@bp.errorhandler(SpecError)
def bad_spec(e):
    return error_response(400, str(e), phase="parse")


def json_body():
    """The request's JSON object, or None. Strict: JSON has no NaN or Infinity, but Python's parser
    (and so request.get_json) accepts them; one is refused here with a SpecError naming its field."""
    if not request.is_json:
        return None
    try:
        body = json.loads(request.get_data(cache=True))
    except (ValueError, RecursionError):
        return None
    if not isinstance(body, dict):
        return None
    check_finite(body)
    return body


def spec_from(body):
    """The run spec of a request body: the body itself, or its "spec" member."""
    spec = body.get("spec", body) if body else None
    return normalize(spec)


@bp.post("/api/run")
def run():
    try:
        body = json_body()
        spec = spec_from(body)
        # from_link: the source is someone else's shared link, unedited (the worker neither lends this
        # run its owner's compiled kernels nor keeps what it compiles). A bare-spec body carries it
        # beside the spec's fields: it is the request's, not the spec's.
        spec.pop("from_link", None)
        spec = graded(spec)  # a spec naming a puzzle gets its hidden check
        return jsonify(dispatcher().run(spec, current_owner(), from_link=bool(body.get("from_link"))))
    except SpecError as e:
        return error_response(400, str(e), phase="parse")
    except OwnerQueueFull as e:
        return error_response(429, str(e))
    except (QueueFull, RunLost) as e:
        return error_response(503, str(e))


@bp.get("/api/spec")
def spec_schema():
    """Each option's default and allowed values: what a client needs to build a valid run spec."""
    return jsonify(schema())


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
        spec = spec_from(body)
        snippet_id = share.save(spec, body.get("ui"), current_app.config["MAX_SNIPPET_BYTES"])
    except share.UiError as e:
        return error_response(400, str(e), field=e.field)
    except share.SnippetTooLarge as e:
        return error_response(413, str(e))
    except (SpecError, share.SnippetError) as e:
        return error_response(413 if "limit" in str(e) else 400, str(e))
    return jsonify({"id": snippet_id, "url": url_for("editor.snippet", snippet_id=snippet_id, _external=True)})


@bp.get("/api/snippets/<snippet_id>")
def get_snippet(snippet_id):
    found = share.load(snippet_id)
    if found is None:
        return error_response(404, f"there is no snippet '{snippet_id}'")
    return jsonify({"id": snippet_id, **found})


@bp.post("/api/export")
def export():
    try:
        spec = spec_from(json_body())
    except SpecError as e:
        return error_response(400, str(e))
    return Response(export_script(spec), mimetype="text/x-python",
                    headers={"Content-Disposition": f'attachment; filename="{spec["kernel"]}.py"'})


@bp.get("/healthz")
def healthz():
    health = dispatcher().health()
    return jsonify(health), 200 if health["ok"] else 503
