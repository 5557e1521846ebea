"""SQLite for shared snippets: one connection per request, WAL so readers never wait on writers."""
import os
import sqlite3

from flask import current_app, g


def connect(path):
    conn = sqlite3.connect(path, timeout=30, isolation_level=None)
    conn.row_factory = sqlite3.Row
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute("PRAGMA busy_timeout=30000")
    return conn


def get_db():
    if "db" not in g:
        g.db = connect(current_app.config["DATABASE"])
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
