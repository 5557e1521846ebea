"""Content-addressed ids, built once (app.db.store_by_content) for snippets and teachers' puzzles:
the shortest free prefix of the content's hash, the same content always its first id, and a prefix
taken by another saver between the look and the insert never handed out as this content's id."""
import contextlib
import hashlib

import pytest

from app import db as database


@pytest.fixture
def conn(tmp_path):
    path = str(tmp_path / "ids.sqlite")
    database.init_db(path)
    with contextlib.closing(database.connect(path)) as conn:
        yield conn


def digest_of(text):
    return hashlib.sha256(text.encode()).hexdigest()


def twin(digest, length):
    """Another content's digest that shares `digest`'s first `length` characters."""
    return digest[:length] + ("0" if digest[length] != "0" else "1") + digest[length + 1:]


@pytest.mark.parametrize("table", ["snippet", "puzzle"])
def test_the_same_content_gets_the_same_shortest_id(conn, table):
    digest = digest_of("one")
    first = database.store_by_content(conn, table, digest, "{}")
    assert first == digest[:database.CONTENT_TABLES[table]]
    assert database.store_by_content(conn, table, digest, "{}") == first


@pytest.mark.parametrize("table", ["snippet", "puzzle"])
def test_a_prefix_taken_by_other_content_makes_the_id_one_longer(conn, table):
    shortest = database.CONTENT_TABLES[table]
    digest = digest_of("mine")
    other = twin(digest, shortest + 3)  # shares the first shortest+3 characters
    assert database.store_by_content(conn, table, other, "{}") == other[:shortest]
    assert database.store_by_content(conn, table, digest, "{}") == digest[:shortest + 1]


class Racing:
    """A connection on which another saver stores `rival` just before this saver's first insert."""

    def __init__(self, conn, table, rival):
        self.conn, self.table, self.rival, self.raced = conn, table, rival, False

    def execute(self, sql, params=()):
        if sql.startswith("INSERT") and not self.raced:
            self.raced = True
            self.conn.execute(f"INSERT INTO {self.table} (id, digest, body) VALUES (?, ?, ?)", self.rival)
        return self.conn.execute(sql, params)


@pytest.mark.parametrize("table", ["snippet", "puzzle"])
def test_a_prefix_lost_to_a_concurrent_saver_is_never_handed_out(conn, table):
    shortest = database.CONTENT_TABLES[table]
    digest = digest_of("mine")
    rival = twin(digest, shortest + 2)
    saved = database.store_by_content(Racing(conn, table, (rival[:shortest], rival, '{"rival": 1}')), table, digest, "{}")
    assert saved == digest[:shortest + 1]
    assert conn.execute(f"SELECT digest FROM {table} WHERE id = ?", (saved,)).fetchone()["digest"] == digest


def test_a_write_is_charged_once_and_only_for_new_content(conn):
    charges = []
    digest = digest_of("charged")
    database.store_by_content(conn, "puzzle", digest, "{}", charge=charges.append)
    database.store_by_content(conn, "puzzle", digest, "{}", charge=charges.append)
    assert charges == [2]
