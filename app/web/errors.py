"""One error shape: JSON {"error": {phase, type, message, hint, line, pid, field, launch}} for API
clients (every HTTP endpoint and the Socket.IO acks), the error page for browsers.

The body is a run's error (sandbox.errors.RunError, docs/result.md): a request refused before any
run is one of the same phases, `parse` (malformed, or naming nothing that exists), `limit` (a
limit refused it), `timeout` (it waited its bound), `sandbox` (the server's own failure).

One handler, error_of(), for all three: a refusal (sandbox.errors.Refused, whose class says its
status, phase and type, wherever it is raised), an HTTP error of werkzeug's (its status's phase, its
name as the type: `NotFound`), a request nested past Python's stack (400, the refusal of
sandbox.spec.too_deep, which check_size and parse_source raise first where they can) and anything
else (500, `PlaygroundBug`, logged).
"""
import functools
import logging

from flask import jsonify, render_template, request
from werkzeug.exceptions import HTTPException

from sandbox.errors import Refused, RunError
from sandbox.spec import SpecError

log = logging.getLogger(__name__)

# The phase of an HTTP error by its status; any other status is `parse`.
STATUS_PHASES = {413: "limit", 429: "limit", 503: "limit", 507: "limit", 500: "sandbox"}
UNEXPECTED = "the server hit an unexpected error; it has been logged"
HTTP_TITLES = {400: "Bad request", 403: "Forbidden", 404: "Not found", 405: "Method not allowed", 409: "Conflict",
               413: "Too large", 429: "Too many requests", 500: "Server error", 503: "Busy", 507: "Storage full"}


def wants_json():
    return (request.path.startswith("/api/") or request.path in ("/healthz", "/metrics")
            or request.accept_mimetypes.best == "application/json")


def error_of(e):
    """(status, RunError, headers) of exception `e`; anything not a refusal or an HTTP error is logged."""
    if isinstance(e, Refused):
        headers = {"Retry-After": str(e.retry_after)} if e.retry_after is not None else {}
        return e.status, e.error(), headers
    if isinstance(e, RecursionError):  # whatever walked a request recursed past the stack: its nesting, no bug
        log.warning("a request nested past Python's stack: %s", e)
        return error_of(SpecError("the request nests too deeply for the server to read", "depth"))
    if isinstance(e, HTTPException) and e.code:
        return e.code, RunError(STATUS_PHASES.get(e.code, "parse"), e.description, type=type(e).__name__), {}
    log.error("unhandled error", exc_info=e)
    return 500, RunError("sandbox", UNEXPECTED, type="PlaygroundBug"), {}


def respond(e):
    """The HTTP answer to `e`: the error body for an API client, the error page for a browser."""
    status, error, headers = error_of(e)
    if wants_json():
        return jsonify({"error": error.to_dict()}), status, headers
    page = render_template("error.html", code=status, title=HTTP_TITLES.get(status, "Error"), message=error.message)
    return page, status, headers


def acked(handler):
    """A Socket.IO event handler whose refusal (or failure) is its ack: {"error": the one body}."""
    @functools.wraps(handler)
    def answer(*args):
        try:
            return handler(*args)
        except Exception as e:  # noqa: BLE001 -- every failure answers with the one body
            return {"error": error_of(e)[1].to_dict()}
    return answer


def init_app(app):
    app.register_error_handler(Exception, respond)  # HTTPException and Refused among them
