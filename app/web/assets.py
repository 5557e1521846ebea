"""Static files as a browser should get them. Text files (scripts, styles) go gzip-compressed to a
browser that accepts it, each file compressed once and kept while it is unchanged (plotly.js: 4.8 MB
becomes 1.4 MB). The vendored libraries, whose file names carry their version
(`vendor/plotly-4.1.1.min.js`), are cached for a year as immutable: a new version is a new name.
The page's own files keep Flask's default, revalidated on each visit, as their names stay the same
when they change."""
import gzip
import os
import re
import threading

from flask import request
from werkzeug.security import safe_join

COMPRESSIBLE = {"text/javascript", "application/javascript", "text/css", "application/json", "image/svg+xml"}
MIN_BYTES = 1024  # below this, gzip's header outweighs what it saves
VERSIONED = re.compile(r"^vendor/[\w.-]+-\d+(\.\d+)+(\.[a-z]+)+$")
IMMUTABLE = "public, max-age=31536000, immutable"


class CompressedFiles:
    """Each file's gzip body, made once and kept while the file's size and mtime stay the same."""

    def __init__(self):
        self.kept = {}
        self.lock = threading.Lock()

    def body(self, path):
        stat = os.stat(path)
        key = (stat.st_mtime_ns, stat.st_size)
        with self.lock:
            kept = self.kept.get(path)
            if kept is None or kept[0] != key:
                with open(path, "rb") as f:
                    kept = self.kept[path] = (key, gzip.compress(f.read(), compresslevel=9, mtime=0))
            return kept[1]


def accepts_gzip():
    return request.accept_encodings["gzip"] > 0


def prepare(response, static_folder, files):
    """The static view's response, compressed and given its cache lifetime."""
    filename = (request.view_args or {}).get("filename", "")
    if response.status_code not in (200, 304):
        return response
    if VERSIONED.match(filename):
        response.headers["Cache-Control"] = IMMUTABLE
        response.headers.pop("Expires", None)
    if response.mimetype in COMPRESSIBLE:
        response.vary.add("Accept-Encoding")
    if response.status_code != 200 or response.mimetype not in COMPRESSIBLE or not accepts_gzip():
        return response
    path = safe_join(static_folder, filename)
    if path is None or os.path.getsize(path) < MIN_BYTES:
        return response
    etag, _ = response.get_etag()
    unsent = response.response
    response.direct_passthrough = False
    response.set_data(files.body(path))
    if hasattr(unsent, "close"):
        unsent.close()  # the file send_file opened
    response.headers["Content-Encoding"] = "gzip"
    response.headers.pop("Accept-Ranges", None)  # ranges are of the file itself, not of this body
    if etag:  # the same file in another encoding: a weak tag, which If-None-Match still matches
        response.set_etag(etag, weak=True)
    return response


def init_app(app):
    files = CompressedFiles()

    def compress(response):
        if request.endpoint == "static":
            return prepare(response, app.static_folder, files)
        return response

    app.after_request(compress)
