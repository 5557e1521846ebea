CREATE TABLE IF NOT EXISTS snippet (
    id TEXT PRIMARY KEY,            -- shortest unique prefix (>= 8) of the content hash
    digest TEXT UNIQUE NOT NULL,    -- sha256 of the canonical JSON body
    body TEXT NOT NULL,             -- {"spec": ..., "ui": ...}
    created TEXT NOT NULL DEFAULT (datetime('now'))
);

CREATE TABLE IF NOT EXISTS puzzle (
    id TEXT PRIMARY KEY,            -- shortest unique prefix (>= 10) of the content hash; the puzzle is t-<id>
    digest TEXT UNIQUE NOT NULL,    -- sha256 of the body
    body TEXT NOT NULL,             -- {"title", "statement", "hints", "starter", "solution", "reference", ...}: server-only
    created TEXT NOT NULL DEFAULT (datetime('now'))
);

CREATE TABLE IF NOT EXISTS solution (
    digest TEXT PRIMARY KEY,        -- sha256 of the puzzle (app.puzzles.Solutions.digest)
    state TEXT NOT NULL,            -- running (claimed at `updated`), ok, failed (the solution's own), lost (the server's)
    trace TEXT,                     -- ok: the solution's trace of the first test, JSON, at most TRACE_MAX_BYTES
    detail TEXT,                    -- what failed, or why there is no trace
    updated REAL NOT NULL           -- unix time
);
