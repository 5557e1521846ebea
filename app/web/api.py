"""JSON API: run, examples, snippets, export, health. A refusal raised anywhere (sandbox.errors.Refused)
is answered by the one handler (app.web.errors)."""
from flask import Blueprint, Response, abort, current_app, jsonify, url_for

from app import gallery
from app.body import json_body
from app.fairness import charge_write
from app.web import runs, share
from app.web.hooks import hooks
from app.web.export import export_script
from sandbox.errors import unknown_fields
from sandbox.launch_form import form_of
from sandbox.spec import SpecError, normalize

bp = Blueprint("api", __name__)


def spec_from(body, beside=()):
    """The run spec of a request body: its "spec" member, whose other members must be among `beside`
    (the request's own fields, such as "from_link"), or else the body itself, a bare spec, beside
    whose fields only `beside` may stand. Anything else is refused (SpecError), naming it."""
    if not body:
        return normalize(None)
    if "spec" not in body:
        return normalize({k: v for k, v in body.items() if k not in beside})
    unknown_fields(body, ("spec", *beside), "beside the spec", SpecError)
    return normalize(body["spec"])


@bp.post("/api/run")
def run():
    body = json_body()
    # from_link: the page shows someone else's code (a shared link's); with the spec, it decides whose
    # code the run is (app.dispatch.jobs.provenance). A bare-spec body carries it beside the spec's
    # fields: it is the request's, not the spec's.
    spec = spec_from(body, beside=("from_link",))
    return jsonify(runs.submit(spec, bool(body.get("from_link"))))


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
        abort(404, f"there is no example named '{name}'")
    return jsonify(found)


@bp.post("/api/snippets")
def save_snippet():
    body = json_body()
    spec = spec_from(body, beside=("ui",))
    snippet_id = share.save(spec, body.get("ui"), current_app.config["MAX_SNIPPET_BYTES"], charge=charge_write)
    return jsonify({"id": snippet_id, "url": url_for("editor.snippet", snippet_id=snippet_id, _external=True)})


@bp.get("/api/snippets/<snippet_id>")
def get_snippet(snippet_id):
    found = share.load(snippet_id)
    if found is None:
        abort(404, f"there is no snippet '{snippet_id}'")
    return jsonify({"id": snippet_id, **found})


@bp.post("/api/launch-form")
def launch_form():
    """A launch of a script's result (body: {"source", "launch": a record of result.launches.list,
    "seed"?}) as a form run's spec, to edit, share and export as any other, and notes saying which
    inputs hold the program's values and which do not (and why)."""
    body = json_body() or {}
    unknown_fields(body, ("source", "launch", "seed"), "in the body", SpecError)
    if not isinstance(body.get("source"), str):
        raise SpecError("'source' must be the program's source", "source")
    seed = body.get("seed", 0)
    if type(seed) is not int:
        raise SpecError("'seed' must be an integer", "seed")
    spec, notes = form_of(body["source"], body.get("launch"), seed)
    return jsonify({"spec": spec, "notes": notes})


@bp.post("/api/export")
def export():
    spec = spec_from(json_body())
    return Response(export_script(spec), mimetype="text/x-python",
                    headers={"Content-Disposition": f'attachment; filename="{spec.get("kernel", "program")}.py"'})


@bp.get("/healthz")
def healthz():
    health = runs.dispatcher().health()
    health.update({name: report() for name, report in hooks().health.items()})
    return jsonify(health), 200 if health["ok"] else 503
