"""The Celery dispatch, the web side (REDIS_URL set): runs go to Celery workers on any host
(app.dispatch.celery_worker, `make worker`) through a Redis broker, and each run's events go from its worker
straight to its client's room through Flask-SocketIO's Redis message queue, whichever web process
holds that client. The same seam as the embedded pool (app.dispatch.interface.Dispatcher): submit, withdraw_client,
run, health, start, stop.

What stays with the web process that took a run: the queue's bounds (QUEUE_LIMIT, QUEUE_PER_OWNER,
QUEUE_PER_ADDRESS, counted in Redis across web processes: app.dispatch.runstate), the run's "queued" status, and a watch over
its runs: a run whose worker was lost (its heartbeat stopped: killed, its host gone) gets an error
result within HEARTBEAT_TTL_S, and one that waited past QUEUE_WAIT_S (no worker took it) gets the
"too busy" error, each exactly once (app.dispatch.runstate: whoever finishes a run first gives its result).

A run submitted with a listener (a class's student's graded run: app.web.events.keeping) has its
result come back here instead of going straight to its client: the worker pushes it to this
process's inbox in Redis, and the listener keeps the verdict and then delivers the result, as the
embedded pool's listener does.
"""
import logging
import threading
import time
import uuid
from dataclasses import dataclass, field

import redis
from celery import Celery

from app.dispatch.interface import (AddressQueueFull, OwnerQueueFull, QueueFull, RunLost, health_of, longest_run_s,
                                    route_triton, wait_bound_s)
from app.dispatch.jobs import Job, address_full_message, ordinal, owner_full_message, stopped
from app.dispatch.runstate import REPLY_KEEP_S, WITHDRAWN, RunState
from sandbox import result as results
from sandbox import tritons
from sandbox.errors import RunError
from sandbox.spec import is_script

log = logging.getLogger(__name__)
TASK, QUEUE = "playground.run", "playground-runs"
WATCH_S = 1.0


def queue_for(triton):
    """The broker's queue of the runs naming Triton `triton`: each worker takes those of its version,
    and a worker of its host's default also those naming none (QUEUE)."""
    return QUEUE if triton is None else f"{QUEUE}@{triton}"


def make_celery(redis_url):
    """The Celery app of both sides: the web processes send runs, the workers take them."""
    celery = Celery("playground", broker=redis_url)
    celery.conf.update(
        task_default_queue=QUEUE, task_serializer="json", accept_content=["json"],
        task_ignore_result=True,  # a result goes to its client's room or its waiting request, never to a backend
        # A worker takes a run only when it is free: acknowledged late, with a prefetch of one, the
        # worker holds no second message while it runs one, so a run waits in the broker's queue for
        # the first free worker instead of behind another run on a busy one.
        task_acks_late=True, worker_prefetch_multiplier=1,
        # A run whose worker died is not given to another worker: the run may be what killed it (a
        # hostile kernel), and its client already has its error result from the web process's watch.
        # With the solo pool no pool process can be lost anyway; the unacknowledged message comes
        # back after the visibility timeout, and the worker that gets it finds the run taken.
        task_reject_on_worker_lost=False,
        broker_transport_options={"visibility_timeout": 3600},
        broker_connection_retry_on_startup=True, worker_send_task_events=False)
    return celery


@dataclass
class Waiting:
    """A run this web process took, until it has its result."""
    job: Job
    since: float = field(default_factory=time.monotonic)
    started: float = None  # when this process first saw a worker take it
    finished: float = None  # when this process first saw it finished (a listener's result may be on its way)


class CeleryDispatcher:
    def __init__(self, config, deliver):
        self.config, self.deliver = config, deliver
        self.redis = redis.Redis.from_url(config["REDIS_URL"])
        self.state = RunState(self.redis)
        self.celery = make_celery(config["REDIS_URL"])
        self.runs, self.lock = {}, threading.Lock()  # run_id: Waiting
        self.stopping = threading.Event()
        self.watch = threading.Thread(target=self._watch, name="run-watch", daemon=True)
        self.inbox = self.state.inbox(uuid.uuid4().hex)  # the results of this process's runs with a listener
        self.collector = threading.Thread(target=self._collect, name="run-results", daemon=True)

    def start(self):
        self.watch.start()
        self.collector.start()
        return self

    def stop(self):
        self.stopping.set()

    def submit(self, spec, owner, client=None, from_link=False, address=None, listener=None):
        """Queue a run; its events go from its worker to the Socket.IO client `client`, but for its
        result, which goes to listener(run_id, "result", content) in this process where one is given."""
        job = Job(spec, listener, owner, client, from_link, address)
        self.route(job.triton)
        try:
            # Runs older than a run can wait and run are gone from the line (their web process died).
            stale_before = self.state.now() - wait_bound_s(self.config, script=True)
            place = self.state.enqueue(job.run_id, job.owner, self.config["QUEUE_LIMIT"],
                                       self.config["QUEUE_PER_OWNER"], stale_before, address,
                                       self.config.get("QUEUE_PER_ADDRESS") or 0)
        except redis.RedisError as e:
            log.error("the queue in Redis is out of reach: %s", e)
            raise QueueFull("the server cannot reach its queue; try again in a moment") from None
        if place == -1:
            raise OwnerQueueFull(owner_full_message(self.config["QUEUE_PER_OWNER"]))
        if place == -3:
            raise AddressQueueFull(address_full_message(self.config["QUEUE_PER_ADDRESS"]))
        if place == -2:
            raise QueueFull(f"the server is busy ({self.config['QUEUE_LIMIT']} runs waiting); try again in a moment")
        with self.lock:
            self.runs[job.run_id] = Waiting(job)
        # Published before the task is sent: a worker's "starting" can only follow it.
        self.deliver(client, job.run_id, "status",
                     {"phase": "queued", "message": f"queued: {ordinal(place)} in line", "position": place})
        try:
            reply_to = {"reply_to": self.inbox} if listener is not None else {}
            self.celery.send_task(TASK, args=[{**job.message(), "queued_at": self.state.now(), **reply_to}],
                                  task_id=job.run_id, queue=queue_for(job.triton))
        except Exception as e:  # the broker is down, or the spec cannot be encoded: nothing ran
            log.exception("run %s could not be sent to a worker", job.run_id)
            if self.state.take(job.run_id, job.owner, WITHDRAWN, job.address):
                self._fail(job.run_id, RunError("sandbox", f"the run could not be sent to a worker ({e}); nothing ran"))
        return job.run_id

    def withdraw_client(self, client):
        with self.lock:
            mine = [w.job for w in self.runs.values() if w.job.client is not None and w.job.client == client]
        try:
            gone = [job for job in mine if self.state.take(job.run_id, job.owner, WITHDRAWN, job.address)]
        except redis.RedisError:  # they run for no one, and their results go nowhere
            log.exception("the runs of a client that left could not be withdrawn")
            gone = []
        with self.lock:
            for job in mine:  # its running runs finish on their workers; only a listener still waits for them
                if job in gone or job.listener is None:
                    self.runs.pop(job.run_id, None)
        return len(gone)

    def compile_ahead(self, spec, owner, client, address=None, from_link=False):
        """None: with workers on other hosts a run compiles what it needs; compiling ahead (sandbox.worker.ahead)
        is the embedded pool's, whose workers share the host's kernel caches with the runs that follow."""
        return None

    def stop_run(self, run_id, client):
        """A run no worker took yet is withdrawn and answered here; a running one is marked in Redis,
        where its worker's heartbeat finds the mark and ends it (app.dispatch.celery_worker)."""
        with self.lock:
            waiting = self.runs.get(run_id)
        if waiting is None or not waiting.job.may_stop(client):
            return False
        if self.state.take(run_id, waiting.job.owner, WITHDRAWN, waiting.job.address):
            self._fail(run_id, stopped(started=False))
        else:
            self.state.request_stop(run_id)
        return True

    def run(self, spec, owner, from_link=False, address=None):
        run_id = self.submit(spec, owner, from_link=from_link, address=address)
        bound_s = wait_bound_s(self.config, is_script(spec))
        try:
            result = self.state.wait_reply(run_id, bound_s)
        except redis.RedisError as e:
            raise RunLost(f"the server lost this run's queue ({e}); try again") from None
        if result is None:
            waiting = self.runs.get(run_id)
            if waiting is not None:
                self.state.take(run_id, waiting.job.owner, WITHDRAWN, waiting.job.address)
            raise RunLost(f"the server could not finish this run within {bound_s:g} s; try again")
        return result

    def route(self, asked):
        """Refuse a run naming a Triton version no live worker announces (its heartbeat: app.dispatch.
        celery_worker); a run naming none waits for a worker of its host's default, as before."""
        if asked is None:
            return None
        try:
            workers = self.state.workers()
        except redis.RedisError as e:
            raise QueueFull(f"the server cannot reach its queue ({e}); try again in a moment") from None
        default = next((w["triton"] for w in workers if w.get("triton_default")), None)
        return route_triton(asked, default, {w["triton"]: None for w in workers if w.get("triton")})

    def tritons(self):
        try:
            workers = self.state.workers()
        except redis.RedisError:
            return []
        default = next((w["triton"] for w in workers if w.get("triton_default")), tritons.default_version())
        versions = dict.fromkeys(w["triton"] for w in workers if w.get("triton"))
        return [{**tritons.describe(version, default), "live": True} for version in versions]

    def health(self):
        try:
            workers, queued = self.state.workers(), self.state.queued()
        except redis.RedisError as e:
            return {"ok": False, "problems": [f"Redis at REDIS_URL: {e}"], "workers": [], "queued": None,
                    "device": None, "isolation": None, "error": f"Redis at REDIS_URL: {e}"}
        stuck_s = longest_run_s(self.config, script=True) + self.config["RUN_GRACE_S"] + self.config["STUCK_MARGIN_S"]
        for worker in workers:  # its own clock decides busy_s; stuck is decided here, as embedded
            worker["stuck"] = worker["busy_s"] is not None and worker["busy_s"] > stuck_s
        ready = next((w for w in workers if w.get("device")), None)
        return health_of(workers, ready, queued)

    # --- the watch over this process's runs -------------------------------------------------------

    def _watch(self):
        while not self.stopping.wait(WATCH_S):
            try:
                self._check()
            except Exception:  # Redis away for a moment: look again next time
                log.exception("the watch over runs failed")

    def _check(self):
        with self.lock:
            waiting = list(self.runs.values())
        if not waiting:
            return
        online = {w["worker"] for w in self.state.workers()}
        wait_s = self.config["QUEUE_WAIT_S"]
        for run in waiting:
            run_id, now = run.job.run_id, time.monotonic()
            run_s = longest_run_s(self.config, is_script(run.job.spec)) + self.config["RUN_GRACE_S"]
            by = self.state.taken_by(run_id)
            if self.state.finished(run_id) or by == WITHDRAWN:
                run.finished = run.finished or now
                # A listener's result comes through the inbox: left to the collector, unless it never comes.
                if run.job.listener is None or by == WITHDRAWN or now - run.finished > REPLY_KEEP_S:
                    with self.lock:
                        self.runs.pop(run_id, None)
            elif by is None and now - run.since > wait_s + self.config["WAIT_MARGIN_S"]:
                if self.state.take(run_id, run.job.owner, WITHDRAWN, run.job.address):  # no worker took it in time
                    self._fail(run_id, RunError("limit", f"the server was too busy to start this run within {wait_s:g} s; try again"))
            elif by is not None:
                run.started = run.started or now
                if by not in online or now - run.started > run_s + self.config["STUCK_MARGIN_S"]:
                    self._fail(run_id, RunError("sandbox", "the worker running this run was lost (its process or "
                                                           "host died); the run was not retried. Only this run was lost."))

    def _fail(self, run_id, error):
        with self.lock:
            waiting = self.runs.pop(run_id, None)
        if waiting is None or not self.state.finish(run_id):
            return
        result = results.delivered(results.failed(error), run_id, "")
        if waiting.job.listener is not None:
            self._tell(waiting.job, result)
        elif waiting.job.client is None:
            self.state.reply(run_id, result)
        else:
            self.deliver(waiting.job.client, run_id, "result", {"result": result})

    def _collect(self):
        """The results workers push to this process's inbox, each to its run's listener."""
        while not self.stopping.is_set():
            try:
                found = self.state.next_result(self.inbox, WATCH_S)
            except redis.RedisError:  # Redis away for a moment: look again
                log.exception("the results of this process's runs could not be read")
                self.stopping.wait(WATCH_S)
                continue
            if found is None:
                continue
            run_id, result = found
            with self.lock:
                waiting = self.runs.pop(run_id, None)
            if waiting is not None:
                self._tell(waiting.job, result)

    @staticmethod
    def _tell(job, result):
        try:
            job.listener(job.run_id, "result", {"result": result})
        except Exception:
            log.exception("the listener of run %s failed on its result", job.run_id)
