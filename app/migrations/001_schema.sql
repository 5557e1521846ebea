-- Migration 1: the schema as it was before migrations were numbered (app.db.migrate). Each table
-- "IF NOT EXISTS": a database made before then has them already, and is marked at version 1.
CREATE TABLE IF NOT EXISTS snippet (
    id TEXT PRIMARY KEY,            -- shortest unique prefix (>= 8) of the content hash
    digest TEXT UNIQUE NOT NULL,    -- sha256 of the canonical JSON body
    body TEXT NOT NULL,             -- {"spec": ..., "ui": ...}
    created TEXT NOT NULL DEFAULT CURRENT_TIMESTAMP
);

CREATE TABLE IF NOT EXISTS puzzle (
    id TEXT PRIMARY KEY,            -- shortest unique prefix (>= 10) of the content hash; the puzzle is t-<id>
    digest TEXT UNIQUE NOT NULL,    -- sha256 of the body
    body TEXT NOT NULL,             -- {"title", "statement", "hints", "starter", "solution", "reference", ...}: server-only
    created TEXT NOT NULL DEFAULT CURRENT_TIMESTAMP
);

CREATE TABLE IF NOT EXISTS solution (
    digest TEXT PRIMARY KEY,        -- sha256 of the puzzle (app.course.puzzles.Solutions.digest)
    state TEXT NOT NULL,            -- running (claimed at `updated`), ok, failed (the solution's own), lost (the server's)
    trace TEXT,                     -- ok: the solution's trace of the first test, JSON, at most TRACE_MAX_BYTES
    detail TEXT,                    -- what failed, or why there is no trace
    updated DOUBLE PRECISION NOT NULL           -- unix time
);

CREATE TABLE IF NOT EXISTS class (
    code TEXT PRIMARY KEY,          -- what students type to join: 6 letters and digits, no look-alikes
    teacher_digest TEXT NOT NULL,   -- sha256 of the teacher link's key (the key itself is never stored)
    title TEXT NOT NULL,
    puzzles TEXT NOT NULL,          -- JSON [{"name", "due"}], in the class's order; due: unix time or null
    leaderboard INTEGER NOT NULL DEFAULT 0,  -- whether its students see a leaderboard per puzzle
    created DOUBLE PRECISION NOT NULL
);

CREATE TABLE IF NOT EXISTS student (
    id TEXT PRIMARY KEY,            -- random, kept in the student's signed session cookie
    class_code TEXT NOT NULL REFERENCES class (code),
    name TEXT NOT NULL,             -- the display name, unique in its class (case aside)
    joined DOUBLE PRECISION NOT NULL,
    removed INTEGER NOT NULL DEFAULT 0  -- removed by the teacher: their runs count no more
);
CREATE INDEX IF NOT EXISTS student_by_class ON student (class_code);

CREATE TABLE IF NOT EXISTS submission (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    student_id TEXT NOT NULL REFERENCES student (id),
    puzzle TEXT NOT NULL,
    ok INTEGER NOT NULL,            -- the grader's verdict (result.puzzle.ok)
    failing TEXT,                   -- the label of the first test that failed, or null
    verdict TEXT NOT NULL,          -- JSON: result.puzzle's tests and diff (the grader's)
    source TEXT NOT NULL,           -- the kernel's source, as submitted
    timing TEXT,                    -- JSON: the grader's time of a passing kernel (result.puzzle.timing), or null
    created DOUBLE PRECISION NOT NULL
);
CREATE INDEX IF NOT EXISTS submission_by_student ON submission (student_id, puzzle);
