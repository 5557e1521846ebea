"""A Celery worker for scale-out (REDIS_URL): it takes one run at a time from the Redis broker and runs
it on the same warm sandbox worker as the embedded pool (an app.dispatch.slot.Slot: `python -m
sandbox.worker`, a fresh jailed process per run), and sends the run's events (status, stdout, each part
of the result as it is ready, the result) straight to its client's room through Flask-SocketIO's
Redis message queue, in the order the run made them.

    make worker     # python -m app.dispatch.celery_worker: celery -A app.dispatch.celery_worker worker -P solo -c 1 ...

One worker per GPU: the worker takes the first GPU its CUDA_VISIBLE_DEVICES names (or the host's
first), as one slot of the embedded pool would. The solo pool runs the task in the worker's main
thread, which waits on the sandbox worker's pipe; a second thread beats the heartbeat the web
processes watch (app.dispatch.runstate). This process is plain Python, never gevent's.

A worker takes runs only while its sandbox worker is warm, as a slot of the embedded pool does
(Slot.keep_worker: a sandbox worker that will not start is tried again after 1 s, then ever less
often, up to a minute). It does not consume from the broker until its first sandbox worker is ready,
brings it back after each run before taking the next, and a run that reaches it after its sandbox
worker died while idle goes back to the broker for another worker. Its
heartbeat says all along that it is dead, why, and when it tries again: the web processes' /healthz
and /metrics report it.
"""
import functools
import logging
import os
import socket
import sys
import threading
import uuid

import redis
import socketio
from celery import signals

from app.config import from_environment
from app.dispatch.interface import deliver
from app.dispatch.jobs import Job, triton_asked
from app.dispatch.remote import QUEUE, TASK, make_celery, queue_for
from app.dispatch.runstate import HEARTBEAT_S, SOCKETIO_CHANNEL, RunState
from app.dispatch.slot import Slot, SlotShared, gpu_assignments
from sandbox import tritons

log = logging.getLogger(__name__)


class Environment:
    """The broker, from this process's settings when Celery first needs it (never at import)."""

    @property
    def broker_url(self):
        return from_environment()["REDIS_URL"] or "redis://"


celery = make_celery(None)
celery.config_from_object(Environment())


class WorkerHost:
    """One slot (its warm sandbox worker) taking runs from the broker, and its heartbeat. No compile
    ahead comes here (CeleryDispatcher): the slot shares only its own bounds-check memory."""

    def __init__(self, config):
        self.config = config
        self.id = uuid.uuid4().hex[:12]  # this process, not its host: a restarted worker is another one
        self.state = RunState(redis.Redis.from_url(config["REDIS_URL"]))
        queue = socketio.RedisManager(config["REDIS_URL"], channel=SOCKETIO_CHANNEL, write_only=True)
        self.emit = lambda event, data, to: queue.emit(event, data, namespace="/", to=to)  # noqa: E731
        assigned = gpu_assignments()
        self.slot = Slot(f"{socket.gethostname()}/{os.getpid()}", config, SlotShared(), assigned[0] if assigned else None,
                         worker_triton(config))
        self.run_id, self.job = None, None  # the run it runs now
        self.stopping = threading.Event()  # the heartbeat's end: once the run under way is done
        self.shutting_down = threading.Event()  # asked to stop: no more waiting for a sandbox worker
        self.heart = threading.Thread(target=self._beat, name="heartbeat", daemon=True)

    def start(self):
        """Before Celery consumes: the heartbeat, then a warm sandbox worker (however long that takes)."""
        self.heart.start()
        self.slot.keep_worker(self.shutting_down)

    def stop(self):
        self.stopping.set()
        self.state.gone(self.id)
        if self.slot.worker:
            self.slot.worker.stop()

    def info(self):
        ready = self.slot.ready or {}
        return {**self.slot.info(), "worker": self.id, "host": socket.gethostname(), "host_pid": os.getpid(),
                "gpu": self.slot.gpu, "run_id": self.run_id, "isolation": ready.get("isolation"),
                "triton_default": self.slot.triton_dir is None}

    def _beat(self):
        while not self.stopping.is_set():
            try:
                self.state.beat(self.id, self.info())
                job = self.job
                if job is not None and self.state.stop_requested(job.run_id):
                    job.stop_requested.set()  # its client pressed Stop: the slot ends the run
            except redis.RedisError:
                log.exception("heartbeat failed")
            self.stopping.wait(HEARTBEAT_S)

    def handle(self, message):
        """One run, if no one took it before (a message delivered again, a run withdrawn or given up)
        and this worker can run it; then a warm sandbox worker again before the next message."""
        if not self.slot.has_worker():
            return self.leave(message)
        if not self.state.take(message["run_id"], message["owner"], self.id, message.get("address")):
            return
        listener = functools.partial(self.listener, message["client"], message.get("reply_to"))
        job = Job.arrived(message, listener, self.state.now() - message["queued_at"])
        self.run_id, self.job = job.run_id, job
        try:
            self.slot.handle(job)
        finally:
            self.run_id, self.job = None, None
        self.slot.keep_worker(self.shutting_down)

    def leave(self, message):
        """The sandbox worker died while idle: the run goes back to the broker's queue at once for
        another worker (behind the runs queued since: a message taken cannot be put back at the
        head), and this worker takes no other message until its sandbox worker starts again."""
        if self.state.taken_by(message["run_id"]) is None:
            celery.send_task(TASK, args=[message], task_id=message["run_id"],
                             queue=queue_for(triton_asked(message["spec"])))  # its version's queue
        self.slot.keep_worker(self.shutting_down)

    def listener(self, client, reply_to, run_id, type, content):
        """A run's event to its client (a part too: its web process needs nothing of it); the
        result once: to the web process that asked for it (`reply_to`: it keeps a class's verdict,
        then delivers it), or to the POST /api/run that waits for it."""
        if type == "result":
            if not self.state.finish(run_id):
                return  # the web process gave it a result already (it thought this worker lost)
            if reply_to is not None:
                return self.state.send_result(reply_to, run_id, content["result"])
            if client is None:
                return self.state.reply(run_id, content["result"])  # POST /api/run waits on it
        deliver(self.emit, client, run_id, type, content)


host = None


@signals.worker_init.connect
def start_host(**_):
    global host
    host = WorkerHost(from_environment())
    host.start()


@signals.worker_shutting_down.connect
def host_shutting_down(**_):
    if host is not None:
        host.shutting_down.set()


@signals.worker_shutdown.connect
def stop_host(**_):
    if host is not None:
        host.stop()


@celery.task(name=TASK)
def run(message):
    host.handle(message)


# One run at a time (-c 1), in the main thread (-P solo: no pool process to lose mid-run), holding no
# second message (--prefetch-multiplier 1, with acks late: app.dispatch.remote). No mingle, gossip
# or event heartbeat: workers need not know each other, and the web processes watch this worker's
# own heartbeat (app.dispatch.runstate).
COMMAND = ["-m", "celery", "-A", "app.dispatch.celery_worker", "worker", "-P", "solo", "-c", "1", "--prefetch-multiplier", "1",
           "--without-mingle", "--without-gossip", "--without-heartbeat", "--loglevel", "INFO"]


def worker_triton(config):
    """(the Triton version this worker runs, where it is installed: None for its environment's own)."""
    version = config["WORKER_TRITON"]
    if version is None or version == tritons.default_version():
        return tritons.default_version(), None
    return version, tritons.directory(version, config)


def queues(config):
    """The broker's queues this worker takes runs from: its version's, and, running its host's
    default, the runs that name no version (app.dispatch.remote.queue_for)."""
    version, directory = worker_triton(config)
    return [queue_for(version)] + ([QUEUE] if directory is None else [])


def main():
    config = from_environment()
    if not config["REDIS_URL"]:
        raise SystemExit("a Celery worker needs REDIS_URL, the Redis its web processes use")
    if config["WORKER_TRITON"] is not None and not tritons.VERSION.match(config["WORKER_TRITON"]):
        raise SystemExit(f"WORKER_TRITON: {config['WORKER_TRITON']!r} is not a Triton release such as 3.8.0")
    os.execv(sys.executable, [sys.executable, *COMMAND, "-Q", ",".join(queues(config))])


if __name__ == "__main__":
    main()
