"""Shared snippets: content-addressed run specs (+ UI state) in SQLite. `/s/<id>` reopens one."""
import hashlib
import json
import sqlite3

from app.db import get_db

MIN_ID_LENGTH = 8


class SnippetError(ValueError):
    pass


def canonical(spec, ui):
    """The text that is hashed: keys sorted, so equal content gets one id whatever its key order,
    except the inputs', whose order is content (later inputs may use earlier ones; it orders the
    random draws)."""
    ordered = {**spec, "inputs": list(spec.get("inputs", {}).items())}
    return json.dumps({"spec": ordered, "ui": ui or {}}, sort_keys=True, separators=(",", ":"))


def save(spec, ui, max_bytes):
    """Store a snippet; the same content always gets the same id. Returns the id."""
    body = json.dumps({"spec": spec, "ui": ui or {}})  # stored as given: input order matters
    if len(body.encode()) > max_bytes:
        raise SnippetError(f"the snippet is {len(body.encode()) // 1024} KB; the limit is {max_bytes // 1024} KB")
    digest = hashlib.sha256(canonical(spec, ui).encode()).hexdigest()
    db = get_db()
    for _ in range(5):  # concurrent savers of different content can race for one prefix
        row = db.execute("SELECT id FROM snippet WHERE digest = ?", (digest,)).fetchone()
        if row:
            return row["id"]
        snippet_id = shortest_free_prefix(db, digest)
        try:
            db.execute("INSERT INTO snippet (id, digest, body) VALUES (?, ?, ?)", (snippet_id, digest, body))
            return snippet_id
        except sqlite3.IntegrityError:
            continue
    raise SnippetError("could not store the snippet; try again")


def shortest_free_prefix(db, digest):
    for length in range(MIN_ID_LENGTH, len(digest) + 1):
        prefix = digest[:length]
        if db.execute("SELECT 1 FROM snippet WHERE id = ?", (prefix,)).fetchone() is None:
            return prefix
    return digest


def load(snippet_id):
    row = get_db().execute("SELECT body FROM snippet WHERE id = ?", (snippet_id,)).fetchone()
    return json.loads(row["body"]) if row else None
