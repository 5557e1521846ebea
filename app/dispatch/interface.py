"""The one seam between the web side and the runs: the Dispatcher protocol, which the embedded pool
(app.dispatch.pool.Pool) and the Celery dispatch (app.dispatch.remote.CeleryDispatcher, REDIS_URL)
both implement, and what both answer with."""
from typing import Protocol

from sandbox.errors import Refused
from sandbox.protocol import RECHECK_BUDGET_S


class Dispatcher(Protocol):
    """Where the web side sends runs. A run's events (run_status, run_stdout, run_partial,
    run_result) go to the Socket.IO client `client` (its room), from wherever the run runs, in the
    order its worker sent them; `owner` is a session's owner id or an app.owners.ServerWork,
    `address` the client's address key (None for the server's own work)."""

    def start(self): ...

    def stop(self): ...

    def submit(self, spec, owner, client=None, from_link=False, address=None, listener=None) -> str:
        """Queue a run; its run_id. QueueFull, OwnerQueueFull or AddressQueueFull: the queue, or the
        owner's or the address's share of it, is full. `listener(run_id, type, content)`, in this
        process, gets its result (the embedded pool's: every event) and delivers it to `client`
        itself (a class's graded run: app.web.runs.submit). `from_link`: the page says the code is
        someone else's; whose code it is is decided from it and the spec (app.dispatch.jobs.provenance)."""

    def withdraw_client(self, client) -> int:
        """The client left: its waiting runs never start; how many there were."""

    def compile_ahead(self, spec, owner, client, address=None, from_link=False) -> str | None:
        """Queue a compile ahead of the owner's next run (sandbox.worker.ahead); its compile_id, whose
        answer goes to `client` as `compiled`; None where this dispatch compiles at run time only, and
        for code that is not the owner's own (app.dispatch.jobs.provenance)."""

    def stop_run(self, run_id, client) -> bool:
        """The client pressed Stop: a waiting run never starts, a running one is ended (its worker
        replaced); either way its result says it was stopped. False: no run of that client with that
        id is waiting or running."""

    def run(self, spec, owner, from_link=False, address=None) -> dict:
        """The run's result, blocking at most wait_bound_s (POST /api/run); RunLost past it."""

    def health(self) -> dict:
        """/healthz's body (health_of)."""

    def tritons(self) -> list:
        """The Triton versions this dispatch runs (sandbox.tritons.describe), each with `live`: whether
        a worker of it is live now."""


EVENT_NAMES = {"status": "run_status", "stdout": "run_stdout", "partial": "run_partial", "result": "run_result",
               "compiled": "compile_result"}


def deliver(emit, client, run_id, type, content):
    """One event of a run (or a compile ahead's answer, with its compile_id) to its client's own room,
    so another tab never sees it: `emit` is the web process's Socket.IO server, or, on a Celery
    worker, the message queue's (app.dispatch.celery_worker)."""
    if client is not None:
        emit(EVENT_NAMES[type], {"compile_id" if type == "compiled" else "run_id": run_id, **content}, to=client)


class QueueFull(Refused):
    """The queue holds QUEUE_LIMIT runs: the server as a whole is busy (503)."""

    status, phase = 503, "limit"


class OwnerQueueFull(QueueFull):
    """The owner already has QUEUE_PER_OWNER runs waiting (429): one tab cannot fill the queue."""

    status = 429


class AddressQueueFull(OwnerQueueFull):
    """The client's address already has QUEUE_PER_ADDRESS runs waiting (429): neither dropping the
    cookie nor opening more connections fills the queue."""


class TritonUnknown(Refused):
    """The spec names a Triton version this server does not run (400, options.triton)."""


class TritonUnavailable(Refused):
    """The spec's Triton version has no live worker now (503): each of its workers failed to start."""

    status, phase = 503, "sandbox"


def route_triton(asked, default, workers):
    """The Triton version that runs a spec naming `asked` (None: the default): `workers` maps each
    version the server runs to why none of its workers is live (None while one is). Refuses a
    version the server does not run and one with no live worker, naming the versions it has."""
    version = asked or default
    have = ", ".join(f"{v}{' (the default)' if v == default else ''}" for v in workers) or "none"
    if version not in workers:
        raise TritonUnknown(f"this server does not run Triton {version}; it runs {have} (GET /api/spec lists them)",
                            "options.triton")
    if workers[version] is not None:
        raise TritonUnavailable(f"no worker of Triton {version} is running now ({workers[version]}); "
                                f"this server runs {have}", "options.triton")
    return version


class RunLost(Refused):
    """POST /api/run waited its bound and got no result."""

    status, phase = 503, "timeout"


def longest_run_s(config, script):
    """The longest a run may hold its worker: its own time (a script's program's), and for a script
    the page's steps after its program (SCRIPT_STEPS_S) and the server's check of its shown launch."""
    return config["RUN_TIMEOUT_S"] + (config["SCRIPT_STEPS_S"] + RECHECK_BUDGET_S if script else 0.0)


def wait_bound_s(config, script=False):
    """How long POST /api/run waits for its result at most: past it the run was lost (its slot stuck,
    or every worker failing to start), and the caller gets an error, not a hang."""
    return config["QUEUE_WAIT_S"] + longest_run_s(config, script) + config["RUN_GRACE_S"] + config["WAIT_MARGIN_S"]


def health_of(workers, ready, queued):
    """/healthz's body: ok while a worker is warm, none is stuck and none is failing to start (dead, or
    trying again after a failed start: `problems` says which, on which GPU, and why)."""
    problems = [worker_problem(w) for w in workers if w["stuck"] or failing_to_start(w)]
    ok = any(w["state"] in ("ready", "busy") for w in workers) and not problems
    return {"ok": ok, "problems": problems, "workers": workers, "queued": queued,
            "device": ready and ready["device"], "isolation": ready and ready["isolation"]}


def failing_to_start(worker):
    """Dead, or starting again after a failed start: its retry is no sign of health."""
    return worker["state"] == "dead" or (worker["state"] == "starting" and worker["failed_starts"] > 0)


def worker_problem(worker):
    """A stuck or dead worker slot, in a line."""
    gpu = worker.get("gpu")
    where = f"worker {worker['slot']} ({'GPU ' + gpu if gpu is not None else 'no GPU'})"
    if worker["stuck"]:
        return f"{where} has been busy with one run for {worker['busy_s']:g} s"
    retry = worker.get("next_start_s")
    return (f"{where} cannot start: {worker.get('start_error') or 'no reason given'} "
            f"({worker['failed_starts']} failed starts in a row"
            + (f"; next try in {retry:g} s)" if retry is not None else ")"))
