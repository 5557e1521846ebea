"""One error shape: JSON {"error": {"message", ...}} for API clients, the error page for browsers."""
from flask import jsonify, render_template, request
from werkzeug.exceptions import HTTPException


def wants_json():
    return request.path.startswith("/api/") or request.path == "/healthz" or request.accept_mimetypes.best == "application/json"


def error_response(status, message, **extra):
    if wants_json():
        return jsonify({"error": {"message": message, **extra}}), status
    return render_template("error.html", code=status, title=HTTP_TITLES.get(status, "Error"), message=message), status


HTTP_TITLES = {400: "Bad request", 404: "Not found", 413: "Too large", 429: "Too many requests", 500: "Server error",
               503: "Busy", 507: "Storage full"}


def init_app(app):
    @app.errorhandler(HTTPException)
    def http_error(e):
        return error_response(e.code, e.description)

    @app.errorhandler(Exception)
    def unexpected(e):
        app.logger.exception("unhandled error")
        return error_response(500, "the server hit an unexpected error; it has been logged")
