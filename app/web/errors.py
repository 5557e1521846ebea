"""One error shape: JSON {"error": {phase, type, message, hint, line, pid, field}} for API clients
(every HTTP endpoint and the Socket.IO acks), the error page for browsers.

The body is a run's error (sandbox.errors.RunError, docs/result.md): a request refused before any
run is one of the same phases, `parse` (malformed, or naming nothing that exists), `limit` (a
limit refused it), `timeout` (it waited its bound), `sandbox` (the server's own failure).
"""
from flask import jsonify, render_template, request
from werkzeug.exceptions import HTTPException, default_exceptions

from sandbox.errors import RunError

# The phase of a refusal by its status; any other status is `parse`.
STATUS_PHASES = {413: "limit", 429: "limit", 503: "limit", 507: "limit", 500: "sandbox"}


def wants_json():
    return request.path.startswith("/api/") or request.path == "/healthz" or request.accept_mimetypes.best == "application/json"


def error_body(message, *, phase, type, hint=None, line=None, pid=None, field=None):
    """The one error body, as a run's result carries it."""
    return RunError(phase, message, type=type, hint=hint, line=line, pid=pid, field=field).to_dict()


def error_response(status, message, *, phase=None, type=None, field=None):
    """`phase` and `type` default to the status's (`type`: its HTTP name, `NotFound`)."""
    if wants_json():
        kind = type or ("PlaygroundBug" if status == 500 else default_exceptions[status].__name__)
        body = error_body(message, phase=phase or STATUS_PHASES.get(status, "parse"), type=kind, field=field)
        return jsonify({"error": body}), status
    return render_template("error.html", code=status, title=HTTP_TITLES.get(status, "Error"), message=message), status


def refused(status, e, phase=None):
    """The response to exception `e`: its message, its class as the type, its `field` if it has one."""
    return error_response(status, str(e), phase=phase, type=e.__class__.__name__, field=getattr(e, "field", None))


HTTP_TITLES = {400: "Bad request", 404: "Not found", 405: "Method not allowed", 413: "Too large",
               429: "Too many requests", 500: "Server error", 503: "Busy", 507: "Storage full"}


def init_app(app):
    @app.errorhandler(HTTPException)
    def http_error(e):
        return error_response(e.code, e.description)

    @app.errorhandler(RecursionError)
    def nested_too_deep(e):
        """Whatever walked a request recursed past Python's stack: the request's nesting, not a bug to
        report as one (sandbox.spec.check_size and parse_source refuse it first where they can)."""
        app.logger.warning("a request nested past Python's stack: %s", e)
        return error_response(400, "the request nests too deeply for the server to read", field="depth")

    @app.errorhandler(Exception)
    def unexpected(e):
        app.logger.exception("unhandled error")
        return error_response(500, "the server hit an unexpected error; it has been logged")
