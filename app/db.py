"""SQLite for shared snippets, teachers' puzzles and puzzle solutions' outcomes: one connection per
request, WAL so readers never wait on writers.

Bounded: a write that would take the database past DATABASE_MAX_MB is refused (StorageFull, a 507
that says so) before it is made, and SQLite's own max_page_count stops any write past it anyway.
"""
import os
import sqlite3

from flask import current_app, g


class StorageFull(Exception):
    """The database is at DATABASE_MAX_MB: nothing new is stored."""

    def __init__(self, max_mb):
        super().__init__(f"the server's storage for shared snippets and puzzles is full (DATABASE_MAX_MB = "
                         f"{max_mb} MB); nothing was saved. Links saved before still open.")


def connect(path, max_bytes=None):
    conn = sqlite3.connect(path, timeout=30, isolation_level=None)
    conn.row_factory = sqlite3.Row
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute("PRAGMA busy_timeout=30000")
    if max_bytes:
        page_size = conn.execute("PRAGMA page_size").fetchone()[0]
        # Never below what the file holds already: SQLite would refuse every write, a delete included.
        pages = max(max_bytes // page_size, conn.execute("PRAGMA page_count").fetchone()[0])
        conn.execute(f"PRAGMA max_page_count = {int(pages)}")
    return conn


def size_bytes(db):
    page_size = db.execute("PRAGMA page_size").fetchone()[0]
    pages = db.execute("PRAGMA page_count").fetchone()[0] - db.execute("PRAGMA freelist_count").fetchone()[0]
    return pages * page_size


def max_bytes(config):
    return (config.get("DATABASE_MAX_MB") or 0) * 1024 * 1024


def check_room(db, adding, config):
    """Refuse (StorageFull) a write of `adding` bytes that would take the database past DATABASE_MAX_MB."""
    limit = max_bytes(config)
    if limit and size_bytes(db) + adding > limit:
        raise StorageFull(config["DATABASE_MAX_MB"])


def insert(db, sql, params):
    """An INSERT; SQLite's own "full" (max_page_count) becomes StorageFull."""
    try:
        return db.execute(sql, params)
    except sqlite3.OperationalError as e:
        if "full" in str(e):
            raise StorageFull(current_app.config.get("DATABASE_MAX_MB")) from None
        raise


# Tables whose rows are content-addressed: {table: the shortest id a row may get}.
CONTENT_TABLES = {"snippet": 8, "puzzle": 10}


def store_by_content(db, table, digest, body, charge=None):
    """Store `body` under the shortest free prefix of its content hash `digest` (at least
    CONTENT_TABLES[table] characters, as Compiler Explorer's share ids), and return that id: the
    same content always gets the id it was first given. `charge(nbytes)` is called once before a
    new row is written (it may refuse). Another saver may take the prefix between the look and the
    insert: the insert then fails (the id is the key) and the loop looks again. None if five tries
    lost such races."""
    shortest, charged = CONTENT_TABLES[table], False
    for _ in range(5):
        row = db.execute(f"SELECT id FROM {table} WHERE digest = ?", (digest,)).fetchone()
        if row:
            return row["id"]
        if charge is not None and not charged:
            charge(len(body.encode()))
            charged = True
        free = next((digest[:n] for n in range(shortest, len(digest) + 1)
                     if db.execute(f"SELECT 1 FROM {table} WHERE id = ?", (digest[:n],)).fetchone() is None), digest)
        try:
            insert(db, f"INSERT INTO {table} (id, digest, body) VALUES (?, ?, ?)", (free, digest, body))
            return free
        except sqlite3.IntegrityError:
            continue
    return None


def get_db():
    if "db" not in g:
        g.db = connect(current_app.config["DATABASE"], max_bytes(current_app.config))
    return g.db


def close_db(_exc=None):
    db = g.pop("db", None)
    if db is not None:
        db.close()


def init_db(path):
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    with open(os.path.join(os.path.dirname(__file__), "schema.sql")) as f, connect(path) as conn:
        conn.executescript(f.read())


def init_app(app):
    init_db(app.config["DATABASE"])
    app.teardown_appcontext(close_db)
