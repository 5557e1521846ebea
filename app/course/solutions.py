"""The outcome of each puzzle's solution (Solutions): run once per puzzle, kept in the database, read
by every graded run as the expected picture."""
import contextlib
import hashlib
import json
import logging
import threading
import time

from app import db as database
from app.course.puzzles import builtin, grading, starter_spec
from app.dispatch.interface import QueueFull, wait_bound_s
from app.owners import PUZZLE_SOLUTIONS

log = logging.getLogger(__name__)

SOLUTION_FORMAT = 2  # part of an outcome's key: a new format of the trace or grading solves every puzzle again
SOLUTION_WAIT_S = 15.0  # a graded run waits this long at most for its puzzle's solution run under way
RETRY_S = 600.0  # an outcome that says nothing of the solution (the server busy, its worker lost) is tried again after this
POLL_S = 0.1
# The phases of a run's error that are the server's doing, not the solution's.
SERVER_PHASES = ("sandbox", "stopped")
UPSERT_SOLUTION = ("INSERT INTO solution (digest, state, trace, detail, updated) VALUES (?, ?, ?, ?, ?) "
                   "ON CONFLICT (digest) DO UPDATE SET state = excluded.state, trace = excluded.trace, "
                   "detail = excluded.detail, updated = excluded.updated")


class Solutions:
    """The outcome of each puzzle's solution: its run (a graded run of the solution on the first test,
    in a run process like any other, as the server's own work: app.owners.PUZZLE_SOLUTIONS, which
    waits in the queue under its own per-owner cap and is never lent or keeps compiled kernels) and
    its trace, which every graded run carries as `expected`.

    Run once per puzzle (its content, SOLUTION_FORMAT): when a teacher's puzzle is saved, for the
    built-ins at the start (warm_up), else at its first graded run. The outcome is kept in the
    database (table `solution`), never in this process: `ok` with the trace (none beyond
    TRACE_MAX_BYTES), `failed` (the solution's own error or mismatch: graded runs go without the
    picture, and it is not run again), or `lost` (the server's doing: tried again after RETRY_S).
    A run under way is a `running` row: whoever claims it runs it, every other request (of any web
    process sharing the database) waits for its outcome; a claim older than a run's bound is stale.
    A full queue (or the server's share of it) claims nothing: the next graded run tries again."""

    def __init__(self, config, dispatcher):
        self.database, self.dispatcher = database.target(config), dispatcher
        self.trace_max_bytes = config["TRACE_MAX_BYTES"]
        self.max_bytes = database.max_bytes(config)  # DATABASE_MAX_MB: a trace that does not fit is not kept
        self.claim_s = wait_bound_s(config)
        self.warming = None  # the warm-up's progress: {"state", "solved", "of"}

    @staticmethod
    def digest(puzzle):
        return hashlib.sha256(json.dumps([SOLUTION_FORMAT, puzzle], sort_keys=True).encode()).hexdigest()

    def _connect(self):
        return contextlib.closing(database.connect(self.database))

    def _row(self, digest, conn=None):
        if conn is None:
            with self._connect() as conn:
                return self._row(digest, conn)
        row = conn.execute("SELECT state, trace, detail, updated FROM solution WHERE digest = ?", (digest,)).fetchone()
        return dict(row) if row is not None else None

    def _due(self, row):
        """May `row` be claimed: none, a stale claim, a lost run whose wait is over."""
        age = time.time() - row["updated"] if row else None
        return (row is None or (row["state"] == "running" and age > self.claim_s)
                or (row["state"] == "lost" and age > RETRY_S))

    def _claim(self, digest):
        try:
            with self._connect() as conn, conn.transaction(lock=f"solution {digest}"):
                row = conn.execute("SELECT state, updated FROM solution WHERE digest = ?", (digest,)).fetchone()
                if not self._due(dict(row) if row else None):
                    return False
                conn.execute(UPSERT_SOLUTION, (digest, "running", None, None, time.time()))
                return True
        except database.DatabaseError:
            log.exception("could not claim the solution run %s", digest[:12])
            return False

    def _store(self, digest, state, trace=None, detail=None):
        try:
            with contextlib.closing(database.connect(self.database, self.max_bytes)) as conn:
                if state is None:
                    conn.execute("DELETE FROM solution WHERE digest = ? AND state = 'running'", (digest,))
                    return
                if trace is not None and self.max_bytes and conn.size_bytes() + len(trace) > self.max_bytes:
                    trace, detail = None, "its trace was not kept: the database is at DATABASE_MAX_MB"
                conn.execute(UPSERT_SOLUTION, (digest, state, trace, detail, time.time()))
        except (database.DatabaseError, database.StorageFull):
            log.exception("could not keep the outcome of the solution run %s", digest[:12])

    def _run(self, puzzle, digest):
        spec = {**starter_spec(puzzle), "source": puzzle["solution"]}
        try:
            # A teacher's solution is a stranger's code, like a shared link's: from_link.
            result = self.dispatcher.run({**spec, "grading": grading(puzzle, None)}, PUZZLE_SOLUTIONS, from_link=True)
        except QueueFull as e:  # never ran: no outcome; the next graded run may claim it again
            log.warning("the solution of puzzle %s waits for room in the queue: %s", puzzle["name"], e)
            return self._store(digest, None)
        except Exception as e:  # a lost run
            log.exception("the solution of puzzle %s could not be run", puzzle["name"])
            return self._store(digest, "lost", detail=str(e)[:1000])
        self._keep(digest, puzzle, result)

    def _keep(self, digest, puzzle, result):
        status, error = result.get("status"), result.get("error") or {}
        if status == "ok":
            trace = json.dumps(result.get("trace"), separators=(",", ":")) if result.get("trace") else None
            if trace is not None and len(trace) > self.trace_max_bytes:
                log.warning("the solution of puzzle %s has a trace of %d bytes, over TRACE_MAX_BYTES: not kept",
                            puzzle["name"], len(trace))
                return self._store(digest, "ok", None, f"its trace is over TRACE_MAX_BYTES ({len(trace)} bytes)")
            return self._store(digest, "ok", trace)
        detail = f"{status}: {error.get('phase')}: {error.get('message')}" if error else str(status)
        too_busy = error.get("phase") == "limit" and "too busy" in (error.get("message") or "")
        lost = error.get("phase") in SERVER_PHASES or too_busy
        if not lost:
            log.warning("the solution of puzzle %s fails its own check (%s): graded runs go without the picture",
                        puzzle["name"], detail[:300])
        self._store(digest, "lost" if lost else "failed", None, detail[:1000])

    def keep(self, puzzle, result):
        """Keep `result`, a graded run of the puzzle's solution made elsewhere (check_draft), as its outcome."""
        self._keep(self.digest(puzzle), puzzle, result)

    def outcome(self, puzzle, wait_s=0.0):
        """The solution's outcome ({"state", "trace", "detail", "updated"}), after starting its run if
        none is stored or under way, and waiting up to `wait_s` for one under way; None if none yet."""
        digest = self.digest(puzzle)
        deadline = time.monotonic() + wait_s
        row = self._row(digest)
        if self._due(row) and self._claim(digest):  # one try per call: a full queue is not asked again here
            threading.Thread(target=self._run, args=(puzzle, digest), daemon=True,
                             name=f"solution-{puzzle['name']}").start()
            row = {"state": "running"}
        if row is not None and row["state"] == "running" and time.monotonic() < deadline:
            with self._connect() as conn:  # one connection for the wait (a PostgreSQL one is a server process)
                while row is not None and row["state"] == "running" and time.monotonic() < deadline:
                    time.sleep(POLL_S)
                    row = self._row(digest, conn)
        return row if row is not None and row["state"] != "running" else None

    def expected(self, puzzle, wait_s=SOLUTION_WAIT_S):
        """The solution's trace of the first test, for a graded run; None without one (its run failed,
        is under way, or could not start): the run is graded all the same, without the picture."""
        row = self.outcome(puzzle, wait_s)
        return json.loads(row["trace"]) if row and row["state"] == "ok" and row["trace"] else None

    def warm_up(self, names, idle_s=0.5):
        """Solve the named built-in puzzles whose outcome is not stored, one at a time, each once the
        queue is empty and a worker free: a student's run never waits behind more than one."""
        self.warming = {"state": "waiting", "solved": 0, "of": len(names)}

        def idle():
            health = self.dispatcher.health()
            return health.get("queued") == 0 and any(w.get("state") == "ready" for w in health.get("workers", []))

        def work():
            stopping = getattr(self.dispatcher, "stopping", None)
            for name in names:
                puzzle = builtin(name)
                while puzzle is not None and self._row(self.digest(puzzle)) is None:
                    if stopping is not None and stopping.is_set():
                        return
                    if idle():
                        self.warming["state"] = "solving"
                        self.outcome(puzzle, self.claim_s)
                        break
                    time.sleep(idle_s)
                self.warming["solved"] += 1
            self.warming["state"] = "ready"

        threading.Thread(target=work, daemon=True, name="puzzle-warm-up").start()

    def health(self):
        return self.warming
