"""The database, the same tests on both: SQLite (the default, DATABASE) and a real PostgreSQL
(DATABASE_URL, a server made from scratch: tests/support/postgres.py). Migrations applied once, in order,
idempotent at a restart and once when web processes start together; snippets and teachers' puzzles
by content; a class from its creation to its CSV; a solution's outcome claimed once and kept."""
import csv
import io
import os
import threading
import time
import uuid
from contextlib import closing

import pytest

from app import create_app
from app.course import classes, puzzles, submissions
from app import db as database
from tests.support.kernels import vector_add_spec

ONE_PUZZLE = [{"name": "constant_add", "due": None}]


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.integration)])
def where(request, tmp_path):
    """A new, empty database of either kind: an SQLite file's path or a postgresql:// URL."""
    if request.param == "sqlite":
        return str(tmp_path / "playground.sqlite")
    return request.getfixturevalue("postgres").database(f"t_{uuid.uuid4().hex[:12]}")


def app_on(where, tmp_path):
    """The web app on that database, with no workers (nothing here runs a kernel)."""
    url = where if database.is_postgres(where) else None
    return create_app({"TESTING": True, "START_WORKERS": False, "DATABASE_URL": url,
                       "DATABASE": str(tmp_path / "unused.sqlite") if url else where,
                       "INSTANCE_PATH": str(tmp_path / "instance")})


@pytest.fixture
def web(where, tmp_path):
    return app_on(where, tmp_path)


@pytest.fixture
def db(where):
    database.init_db(where)
    with closing(database.connect(where)) as conn:
        yield conn


def versions(where):
    with closing(database.connect(where)) as conn:
        return [row["version"] for row in conn.execute("SELECT version FROM schema_version ORDER BY version")]


def test_the_migrations_are_applied_once_and_a_restart_applies_none(where, tmp_path):
    every = [version for version, _ in database.migrations()]
    assert every[0] == 1 and database.init_db(where) == every
    assert versions(where) == every
    web = app_on(where, tmp_path)  # a web process starting on it: nothing left to apply
    assert versions(where) == every and database.init_db(where) == []
    assert web.test_client().get("/api/classes/NOPE99").status_code == 404  # the tables are there


def test_web_processes_starting_at_once_apply_each_migration_once(where):
    applied, errors = [], []
    start = threading.Barrier(4)

    def starting():
        start.wait()
        try:
            applied.extend(database.init_db(where))
        except Exception as e:  # noqa: BLE001 - the test reports it
            errors.append(repr(e))

    threads = [threading.Thread(target=starting) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    # each once, whichever process applied it (one may skip what another applied and apply the next first)
    assert errors == [] and sorted(applied) == [version for version, _ in database.migrations()]


def test_later_migrations_apply_in_order_and_a_failing_one_leaves_nothing(where, tmp_path, monkeypatch):
    """Migrations 2 and 3 beside the real 1: a database at 1 gets 2 alone; 3 fails on its second
    statement, and its transaction takes its first back."""
    migrations = tmp_path / "migrations"
    migrations.mkdir()
    (migrations / "001_schema.sql").write_text(database.migrations()[0][1])
    monkeypatch.setattr(database, "MIGRATIONS_DIR", migrations)
    database.init_db(where)
    (migrations / "002_notes.sql").write_text("-- a table whose key counts up\n"
                                              "CREATE TABLE note (id INTEGER PRIMARY KEY AUTOINCREMENT, body TEXT NOT NULL);\n")
    assert database.init_db(where) == [2] and versions(where) == [1, 2]
    with closing(database.connect(where)) as conn:
        conn.execute("INSERT INTO note (body) VALUES (?)", ("a",))
        conn.execute("INSERT INTO note (body) VALUES (?)", ("b",))
        assert [row["id"] for row in conn.execute("SELECT id FROM note ORDER BY id")] == [1, 2]
    (migrations / "003_broken.sql").write_text("CREATE TABLE half (id INTEGER);\nCREATE TABLE note (id INTEGER);\n")
    with pytest.raises(database.DatabaseError):
        database.init_db(where)
    assert versions(where) == [1, 2]
    with closing(database.connect(where)) as conn, pytest.raises(database.DatabaseError):
        conn.execute("SELECT * FROM half")


def test_a_database_made_before_migrations_is_marked_at_version_1(tmp_path):
    """An SQLite file with the tables and no schema_version (as the server made it before): its rows
    stay, and migration 1 changes nothing but the mark."""
    path = str(tmp_path / "old.sqlite")
    with closing(database.connect(path)) as conn:
        for statement in database.statements(database.migrations()[0][1]):
            conn.execute(statement)
        conn.execute("INSERT INTO snippet (id, digest, body) VALUES ('abcdefgh', 'abcdefgh00', '{}')")
    assert database.init_db(path)[0] == 1
    with closing(database.connect(path)) as conn:
        assert conn.execute("SELECT id FROM snippet").fetchone()["id"] == "abcdefgh"


def test_snippets_are_stored_by_content_and_load_back(web):
    client = web.test_client()
    spec = vector_add_spec(n=123)
    first = client.post("/api/snippets", json={"spec": spec, "ui": {"pane": "diagram", "pid": [2, 0, 0]}}).json
    again = client.post("/api/snippets", json={"spec": spec, "ui": {"pid": [2, 0, 0], "pane": "diagram"}}).json
    other = client.post("/api/snippets", json={"spec": vector_add_spec(n=124)}).json
    assert first["id"] == again["id"] != other["id"] and len(first["id"]) == 8
    loaded = client.get(f"/api/snippets/{first['id']}").json
    assert loaded["spec"]["inputs"] == spec["inputs"] and loaded["ui"] == {"pane": "diagram", "pid": [2, 0, 0]}
    assert client.get("/api/snippets/deadbeef00").status_code == 404


def test_a_prefix_taken_by_other_content_makes_the_id_one_longer(db):
    digest = "ab" * 32
    twin = digest[:11] + "0" + digest[12:]  # shares the first 11 characters
    assert database.store_by_content(db, "puzzle", twin, "{}") == twin[:10]
    assert database.store_by_content(db, "puzzle", digest, "{}") == digest[:11]
    assert database.store_by_content(db, "puzzle", digest, "{}") == digest[:11]


def test_a_teachers_puzzle_is_saved_by_content_and_found(web):
    body = {"title": "Add one", "statement": "Add one.", "hints": [], "starter": "s", "solution": "t"}
    with web.app_context():
        name = puzzles.save({"name": "ignored", **body})
        assert name.startswith("t-") and puzzles.save(body) == name
        assert puzzles.find(name) == {"name": name, **body}
        assert puzzles.find("t-0000000000") is None


def test_a_class_from_creation_to_its_csv(web, where):
    teacher = web.test_client()
    made = teacher.post("/api/classes", json={"title": "Kernels 101", "puzzles": ["constant_add", "softmax"]})
    assert made.status_code == 200, made.json
    code = made.json["code"]
    students = {}
    for name in ("Ada", "Grace", "Linus"):
        joined = web.test_client().post(f"/api/classes/{code}/join", json={"name": name})
        assert joined.status_code == 200, joined.json
        students[name] = joined.json["student"]["id"]
    taken = web.test_client().post(f"/api/classes/{code}/join", json={"name": " ada "})
    assert taken.status_code == 409
    assert teacher.patch(f"/api/classes/{code}/students/{students['Ada']}", json={"name": "Grace"}).status_code == 409
    assert teacher.patch(f"/api/classes/{code}/students/{students['Ada']}", json={"name": "Ada L."}).status_code == 200
    assert teacher.delete(f"/api/classes/{code}/students/{students['Linus']}").status_code == 200
    assert teacher.delete(f"/api/classes/{code}/students/{students['Linus']}").status_code == 404
    failing = {"name": "constant_add", "ok": False, "tests": [{"label": "N=20", "ok": False}], "diff": None}
    passing = {"name": "constant_add", "ok": True, "tests": [{"label": "N=20", "ok": True}], "diff": None,
               "timing": {"ranked": False, "kernel_ms": {"median": 0.25}}}
    ada, quota = classes.Membership(code, students["Ada"]), submissions.Quota(1 << 20, 1 << 20, 0)
    assert submissions.record(where, ada, "constant_add", "wrong", {"puzzle": failing}, quota)
    assert submissions.record(where, ada, "constant_add", "right", {"puzzle": passing}, quota)
    assert not submissions.record(where, classes.Membership(code, students["Linus"]), "constant_add", "x",
                                  {"puzzle": passing}, quota)
    assert not submissions.record(where, ada, "outer_sum", "x", {"puzzle": {**passing, "name": "outer_sum"}}, quota)
    progress = teacher.get(f"/api/classes/{code}/progress").json
    rows = {s["name"]: s["puzzles"] for s in progress["students"]}
    assert list(rows) == ["Ada L.", "Grace"]
    assert rows["Ada L."]["constant_add"]["state"] == "solved" and rows["Ada L."]["constant_add"]["tries_to_solve"] == 2
    assert rows["Grace"]["constant_add"]["state"] == "not started"
    latest = teacher.get(f"/api/classes/{code}/students/{students['Ada']}/latest/constant_add").json
    assert latest["source"] == "right" and latest["ok"] is True
    edited = teacher.patch(f"/api/classes/{code}", json={"title": "Kernels 102", "leaderboard": True}).json
    assert edited["title"] == "Kernels 102" and edited["leaderboard"] is True
    exported = teacher.get(f"/api/classes/{code}/export.csv")
    assert exported.status_code == 200
    rows = list(csv.reader(io.StringIO(exported.get_data(as_text=True))))
    assert [r[:4] for r in rows[1:]] == [["Ada L.", "Constant add", "solved", "2"], ["Ada L.", "Fused softmax", "not started", "0"],
                                          ["Grace", "Constant add", "not started", "0"], ["Grace", "Fused softmax", "not started", "0"]]
    assert web.test_client().get(f"/api/classes/{code}/export.csv").status_code == 403


def test_a_class_code_taken_is_a_conflict_and_another_code_is_drawn(db, monkeypatch):
    drawn = iter("AAAAAAAA" "AAAAAAAA" "BBBBBBBB")
    monkeypatch.setattr(classes.secrets, "choice", lambda letters: next(drawn))
    first, _ = classes.create(db, "One", ONE_PUZZLE)
    second, _ = classes.create(db, "Two", ONE_PUZZLE)
    assert (first, second) == ("AAAAAAAA", "BBBBBBBB")
    with pytest.raises(database.Conflict):
        db.execute("INSERT INTO class (code, teacher_digest, title, puzzles, created) VALUES (?, ?, ?, ?, ?)",
                   ("AAAAAAAA", "x", "x", "[]", 0.0))


def test_a_solutions_outcome_is_claimed_once_and_kept(web, where):
    solutions = web.extensions["puzzle_solutions"]
    digest = "f" * 64
    claims = [solutions._claim(digest) for _ in range(3)]
    assert claims == [True, False, False]
    solutions._store(digest, "ok", trace='{"programs": []}')
    assert {k: v for k, v in solutions._row(digest).items() if k != "updated"} == {
        "state": "ok", "trace": '{"programs": []}', "detail": None}
    solutions._store(digest, "failed", detail="it fails")
    assert solutions._row(digest)["state"] == "failed" and solutions._row(digest)["trace"] is None


def test_times_keep_their_fractions_of_a_second(db):
    """Unix times are double precision on both (PostgreSQL's REAL would round them to minutes)."""
    code, _ = classes.create(db, "Clock", ONE_PUZZLE)
    before = time.time()
    student = classes.join(db, code, "Ann")
    joined = db.execute("SELECT joined FROM student WHERE id = ?", (student,)).fetchone()["joined"]
    assert before <= joined <= time.time()


def test_the_databases_size_is_measured_and_bounded(db):
    before = db.size_bytes()
    body = os.urandom(150_000).hex()  # 300 KB that no compression takes below 150
    db.execute("INSERT INTO snippet (id, digest, body) VALUES (?, ?, ?)", ("a" * 8, "a" * 64, body))
    assert db.size_bytes() >= before + 150_000
    database.check_room(db, 0, {"DATABASE_MAX_MB": 1})
    with pytest.raises(database.StorageFull, match=r"DATABASE_MAX_MB = 1 MB"):
        database.check_room(db, 1024 * 1024, {"DATABASE_MAX_MB": 1})


def test_a_database_url_that_is_not_postgresqls_is_refused_naming_the_setting(tmp_path):
    with pytest.raises(ValueError, match="DATABASE_URL must be a PostgreSQL URL") as refused:
        create_app({"TESTING": True, "START_WORKERS": False, "DATABASE_URL": "mysql://user:secret@db-host/playground",
                    "INSTANCE_PATH": str(tmp_path / "instance")})
    assert "secret" not in str(refused.value)
