"""The job dispatcher: the one owner of worker processes (how many, start, replace, timeouts).

The web process never imports torch or runs user code: it writes jobs to `python -m sandbox.worker`
processes and reads their messages (sandbox.protocol). Each worker slot is a thread that takes the
next job from one bounded queue, relays the worker's messages to the job's listener, and replaces
the worker when it dies or stops answering.

Nothing a request sends can stop a slot: whatever goes wrong while a slot handles a job becomes that
job's error result, and the slot goes on with the next job. The queue is fair: each owner may have
only QUEUE_PER_OWNER runs waiting and each client address QUEUE_PER_ADDRESS (a client that drops
its cookie is a new owner at each request, not a new address), a run that waited longer than
QUEUE_WAIT_S is dropped when its turn comes, and the waiting runs of a client that left are withdrawn.

What a worker sends is read as bounded lines (sandbox.protocol.Limits, the MESSAGE_MAX_* settings):
a line past them is never parsed; it costs the run in hand its result and the worker its life.
"""
import collections
import functools
import logging
import os
import queue
import select
import subprocess
import sys
import threading
import time

from app import owners
from app.gallery import list_examples, load_example
from sandbox import gpus, protocol, settings
from sandbox import result as results
from sandbox.errors import RunError
from sandbox.spec import compile_key, launch_key

log = logging.getLogger(__name__)
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
START_TIMEOUT_S = settings.value("WORKER_START_TIMEOUT_S")
GRACE_S = settings.value("RUN_GRACE_S")  # a worker enforces the run timeout itself; after this much more, we kill the worker
# A slot busy for longer than a run's timeout and grace plus this (the kill, the error result) is
# stuck: no path of Slot._run takes that long, so /healthz says the server is not ok.
STUCK_MARGIN_S = settings.value("STUCK_MARGIN_S")
# POST /api/run waits at most QUEUE_WAIT_S + RUN_TIMEOUT_S + GRACE_S + this: past it the run was
# lost (its slot stuck, or every worker failing to start), and the caller gets an error, not a hang.
WAIT_MARGIN_S = settings.value("WAIT_MARGIN_S")
STOP_POLL_S = 0.25  # how often a slot waiting on its run looks whether its client pressed Stop
COMPILE_STALE_S = 10  # a compile ahead no worker took by then is dropped: its person has typed on or run it
COMPILES_ANSWERED = 4096  # compile ids whose answer still has a client to go to
COMPILE_INTERVAL_S = 0.25  # an owner's compile requests, at most one per this (the page pauses 0.4 s)
# The server's variables a worker gets, by name (never by prefix: a credential shares its prefix with
# a setting, NVIDIA_API_KEY with NVIDIA_VISIBLE_DEVICES); a run gets fewer (sandbox.run_process).
WORKER_ENV = {"PATH", "HOME", "LANG", "LC_ALL", "LC_CTYPE", "TZ", "TMPDIR", "LD_LIBRARY_PATH", "CUDA_HOME",
              "CUDA_VISIBLE_DEVICES", "CUDA_DEVICE_ORDER", "TRITON_CACHE_DIR", "TRITON_PTXAS_PATH",
              "TRITON_CUOBJDUMP_PATH", "TRITON_NVDISASM_PATH", "TRITON_LIBCUDA_PATH", "OMP_NUM_THREADS"}


# A host without a GPU: two workers, so that a run rarely waits for the next warm run process.
CPU_WORKERS = 2


def worker_env(config, gpu=None):
    """`gpu`: the CUDA_VISIBLE_DEVICES of this worker (an index, in PCI bus order: nvidia-smi's)."""
    env = {k: v for k, v in os.environ.items() if k in WORKER_ENV}
    env.update({name: str(config[name]) for name in settings.WORKER_SETTINGS if config.get(name) is not None})
    # The project first, then wherever the server's Python finds its packages (PYTHONPATH is how a
    # host without an installed environment brings them; it names code, nothing secret).
    python_path = os.pathsep.join(filter(None, [ROOT, os.environ.get("PYTHONPATH")]))
    # Hidden from runs, wherever the jail would otherwise show them: the database's directory and
    # the instance folder (the generated SECRET_KEY).
    hidden = [os.path.dirname(os.path.abspath(config["DATABASE"] or "instance/x")), config.get("INSTANCE_PATH")]
    env.update({"RUN_HIDDEN_PATHS": os.pathsep.join(dict.fromkeys(os.path.abspath(p) for p in hidden if p)),
                "PYTHONPATH": python_path, "PYTHONUNBUFFERED": "1"})
    if gpu is not None:
        env.update({"CUDA_VISIBLE_DEVICES": gpu, "CUDA_DEVICE_ORDER": "PCI_BUS_ID"})
    return env


def gpu_assignments(environ=os.environ):
    """The GPUs the workers are pinned to, round-robin by slot, each as its CUDA_VISIBLE_DEVICES: the
    host's GPUs (sandbox.gpus: found without CUDA, which the web process never loads), or those the
    server's own CUDA_VISIBLE_DEVICES names (an entry this host cannot place, a MIG instance, is
    passed on as it is). Empty on a host without a GPU."""
    host = gpus.host_gpus()
    visible = environ.get("CUDA_VISIBLE_DEVICES")
    if not host or visible is None:
        return [str(gpu.index) for gpu in host]
    entries = [entry.strip() for entry in visible.split(",") if entry.strip()]
    return [str(gpu.index) if (gpu := gpus.find(host, entry)) else entry for entry in entries]


class CheckedLaunches:
    """The launches that passed the bounds check, by (owner, sandbox.spec.launch_key), least recently
    used first out. On a GPU that check is a pass over the whole launch in the interpreter (~0.15 s
    for a vector add of 98k elements): re-running the same launch, as one does to time it again,
    skips it, whichever worker takes the run."""

    def __init__(self, capacity=4096):
        self.keys, self.capacity, self.lock = collections.OrderedDict(), capacity, threading.Lock()

    def __contains__(self, key):
        with self.lock:
            if key in self.keys:
                self.keys.move_to_end(key)
                return True
            return False

    def add(self, key):
        with self.lock:
            self.keys[key] = True
            self.keys.move_to_end(key)
            while len(self.keys) > self.capacity:
                self.keys.popitem(last=False)


class ReferenceTimes:
    """The reference timings a worker slot's runs measured, by owner and sandbox.pipeline's
    reference_key (the expressions, the inputs' shapes and dtypes, the device), least recently used
    first out: a run of the same reference on the same worker is not timed again (~0.1–1 s), and says
    so. Per owner: a time a run reports is only as true as that run's code, which is its owner's."""

    def __init__(self, per_owner=16, owners=256):
        self.times, self.per_owner, self.owners = collections.OrderedDict(), per_owner, owners

    def lent(self, owner):
        """{key: timing} of the owner's references (what a run process is given with its job)."""
        kept = self.times.get(owner)
        if kept is None:
            return {}
        self.times.move_to_end(owner)
        return dict(kept)

    def add(self, owner, key, timing):
        kept = self.times.setdefault(owner, collections.OrderedDict())
        kept[key] = timing
        kept.move_to_end(key)
        self.times.move_to_end(owner)
        while len(kept) > self.per_owner:
            kept.popitem(last=False)
        while len(self.times) > self.owners:
            self.times.popitem(last=False)


class QueueFull(Exception):
    """The queue holds QUEUE_LIMIT runs: the server as a whole is busy (503)."""


class OwnerQueueFull(QueueFull):
    """The owner already has QUEUE_PER_OWNER runs waiting (429): one tab cannot fill the queue."""


class AddressQueueFull(OwnerQueueFull):
    """The client's address already has QUEUE_PER_ADDRESS runs waiting (429): neither dropping the
    cookie nor opening more connections fills the queue."""


def message_limits(config):
    """The bounds of a worker's lines (sandbox.protocol.Limits), from the MESSAGE_MAX_* settings."""
    return protocol.Limits(**{field: config[name] for field, name in (
        ("max_bytes", "MESSAGE_MAX_BYTES"), ("max_depth", "MESSAGE_MAX_DEPTH"),
        ("max_elements", "MESSAGE_MAX_ELEMENTS")) if config.get(name)})


def owner_full_message(per_owner):
    return f"you already have {per_owner} runs waiting; wait for one to finish"


def address_full_message(per_address):
    return (f"{per_address} runs from your network address are already waiting (QUEUE_PER_ADDRESS); "
            f"wait for one to finish")


class RunLost(Exception):
    """POST /api/run waited its bound and got no result."""


def ordinal(n):
    suffix = "th" if 10 <= n % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")
    return f"{n}{suffix}"


class Job:
    def __init__(self, spec, listener, owner, client=None, from_link=False, address=None):
        self.run_id = protocol.new_id()
        self.spec = spec
        # Runs of one owner share compiled kernels; a worker sees a digest, never the session's id
        # (app.owners.key: the server's own work has keys no session's digest can be).
        self.owner = owners.key(owner)
        self.listener = listener  # listener(run_id, type, content), called from a worker slot's thread
        self.client = client  # the Socket.IO sid that asked, whose leaving withdraws the run
        self.address = address  # the client's address (app.owners.address_key); None: the server's own work
        # from_link: its source is someone else's shared link, unedited: the worker neither lends it
        # its owner's compiled kernels nor keeps what it compiles. A graded run is one always: a
        # puzzle's expressions (a teacher's, for a teacher's puzzle) run in it (the page's launch in
        # the student's run process, the hidden tests in the grader's).
        self.from_link = bool(from_link) or "grading" in spec
        self.queued_at = time.monotonic()
        self.finished = False  # its one result was given
        self.stdout = []  # what the run printed, as relayed: the result carries it whole
        self.stop_requested = threading.Event()  # its client pressed Stop: the slot running it ends it
        # Notifications reach the listener one at a time and in order: the slot's "starting" never
        # overtakes submit's "queued", though a free slot may take the job before submit returns.
        self.notifying = threading.RLock()

    @property
    def launch(self):
        """What decides where its launch reads and writes, for the bounds-check memory (None for a
        spec that cannot be encoded: it never reaches a worker)."""
        try:
            return self.owner, launch_key(self.spec)
        except (TypeError, ValueError, KeyError):
            return None

    def waited_s(self):
        return time.monotonic() - self.queued_at

    def notify(self, type, content):
        """Tell the listener; a listener that raises is logged, and the run and its slot go on."""
        with self.notifying:
            if self.finished:
                return  # nothing of a run follows its one result (a part of a stopped run still on its way)
            if type == "stdout":
                self.stdout.append(content.get("text", ""))
            if type == "result":
                results.delivered(content["result"], self.run_id, "".join(self.stdout))
                self.finished = True
            try:
                self.listener(self.run_id, type, content)
            except Exception:
                log.exception("the listener of run %s failed on its %s", self.run_id, type)

    def fail(self, error):
        """End the job with `error` (a RunError) unless it already has its result."""
        self.notify("result", {"result": results.failed(error)})

    def may_stop(self, client):
        """Only the client that asked for a run can stop it."""
        return client is not None and self.client == client

    def message(self):
        """The job as it travels to a worker host of another process (app.celery_worker): JSON."""
        return {"run_id": self.run_id, "spec": self.spec, "owner": self.owner, "client": self.client,
                "from_link": self.from_link, "address": self.address}

    @classmethod
    def arrived(cls, message, listener, waited_s):
        """A job another process sent (Job.message) after it waited `waited_s` in the queue."""
        job = cls(message["spec"], listener, "", message["client"], message["from_link"], message.get("address"))
        job.run_id, job.owner = message["run_id"], message["owner"]  # the owner is a digest already
        job.queued_at = time.monotonic() - waited_s
        return job


class CompileRequest:
    """A compile ahead (sandbox.ahead): what a client's page sends while its person types. It waits
    behind every run, the newest of an owner replacing an older one, and goes to an idle worker,
    which answers `compiled` to the client whenever it is done."""

    def __init__(self, spec, owner, client, address=None):
        self.compile_id = protocol.new_id()
        self.spec, self.owner, self.client, self.address = spec, owners.key(owner), client, address
        self.queued_at = time.monotonic()

    def stale(self):
        return time.monotonic() - self.queued_at > COMPILE_STALE_S

    def message(self):
        return protocol.message("compile", self.compile_id, spec=self.spec, owner=self.owner)


def stopped(started):
    """The error of a run its client stopped, before (started=False) or while it ran."""
    if not started:
        return RunError("stopped", "you stopped this run before it started; nothing ran", type="Stopped")
    return RunError("stopped", "you stopped this run while it ran; its worker was replaced, and nothing of the run "
                               "is kept", type="Stopped")


class JobQueue:
    """The runs waiting for a worker, oldest first, bounded in all, per owner and per client address.
    A waiting run can be withdrawn (its client left, its HTTP caller gave up) so that no worker time
    is spent on it."""

    def __init__(self, limit, per_owner, per_address=None):
        self.limit, self.per_owner, self.per_address = limit, per_owner, per_address
        self.waiting = collections.deque()
        self.compiles = collections.OrderedDict()  # owner -> its newest CompileRequest, taken after every run
        self.changed = threading.Condition()
        self.closed = False

    def __len__(self):
        return len(self.waiting)

    def put(self, job):
        """Queue `job`; returns its place in line (1: the next to start)."""
        with self.changed:
            if sum(1 for j in self.waiting if j.owner == job.owner) >= self.per_owner:
                raise OwnerQueueFull(owner_full_message(self.per_owner))
            if (job.address is not None and self.per_address
                    and sum(1 for j in self.waiting if j.address == job.address) >= self.per_address):
                raise AddressQueueFull(address_full_message(self.per_address))
            if len(self.waiting) >= self.limit:
                raise QueueFull(f"the server is busy ({len(self.waiting)} runs waiting); try again in a moment")
            self.waiting.append(job)
            self.changed.notify()
            return len(self.waiting)

    def put_compile(self, request):
        """Queue a compile ahead in place of its owner's waiting one, if any."""
        with self.changed:
            self.compiles.pop(request.owner, None)
            if (request.address is not None and self.per_address
                    and sum(1 for r in self.compiles.values() if r.address == request.address) >= self.per_address):
                raise AddressQueueFull(address_full_message(self.per_address))
            if len(self.compiles) >= self.limit:
                raise QueueFull(f"the server is busy ({len(self.compiles)} compiles waiting); your run will compile")
            self.compiles[request.owner] = request
            self.changed.notify()

    def get(self):
        """The oldest waiting job, once there is one, else the oldest compile ahead: runs come first;
        None once the queue is closed."""
        with self.changed:
            while not self.waiting and not self.compiles and not self.closed:
                self.changed.wait()
            if self.closed:
                return None
            return self.waiting.popleft() if self.waiting else self.compiles.popitem(last=False)[1]

    def withdraw(self, which):
        """Take the waiting jobs for which which(job) is true out of the queue; returns them."""
        with self.changed:
            gone = [job for job in self.waiting if which(job)]
            for job in gone:
                self.waiting.remove(job)
            return gone

    def withdraw_compiles(self, client):
        with self.changed:
            for owner in [owner for owner, request in self.compiles.items() if request.client == client]:
                del self.compiles[owner]

    def close(self):
        with self.changed:
            self.closed = True
            self.changed.notify_all()


class WorkerProcess:
    """One `python -m sandbox.worker` and a thread that reads its messages into a queue: each a
    decoded message, None (it died), or ("beyond", why) for a line past the message limits."""

    def __init__(self, env, limits=None, on_compiled=None):
        self.on_compiled = on_compiled or (lambda msg: None)  # its `compiled` answers, whenever they come
        self.proc = subprocess.Popen([sys.executable, "-m", "sandbox.worker"], cwd=ROOT, env=env,
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE)
        self.limits = limits or protocol.LIMITS
        self.broken = None  # why it may not take another job: it sent a line past the limits
        self.messages = queue.Queue()
        self.warming = None  # its warm-up's last progress report (sandbox.warming), whenever it comes
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self):
        # One byte more than a line may have: a longer one is seen to be too long, never parsed.
        for line in iter(lambda: self.proc.stdout.readline(self.limits.max_bytes + 1), b""):
            beyond = protocol.over_limits(line, self.limits)
            if beyond is not None:
                self.broken = beyond
                self.messages.put(("beyond", beyond))
                continue
            msg = protocol.decode(line, limits=self.limits)
            if msg is not None and msg["type"] == "warming":
                self.warming = msg["content"]
            elif msg is not None and msg["type"] == "compiled":
                self.on_compiled(msg)
            elif msg is not None:
                self.messages.put(msg)
        self.messages.put(None)  # end of stream: the worker died

    def next(self, timeout):
        try:
            return self.messages.get(timeout=max(timeout, 0))
        except queue.Empty:
            return "timeout"

    def send(self, line, deadline):
        """Write one encoded message, by `deadline` (monotonic): a worker that stops reading its
        input must not hold its slot in a blocking write. Raises TimeoutError or OSError."""
        fd = self.proc.stdin.fileno()
        writable = select.poll()
        writable.register(fd, select.POLLOUT)
        view = memoryview(line)
        while view:
            if not writable.poll(max(deadline - time.monotonic(), 0) * 1000):
                raise TimeoutError("the worker stopped reading its jobs")
            # A pipe that polls writable has room for PIPE_BUF bytes at least: this write never blocks
            # (on a pipe whose reader is gone it raises BrokenPipeError, an OSError).
            view = view[os.write(fd, view[:select.PIPE_BUF]):]

    def kill(self):
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()

    def stop(self, grace_s=3):
        """Close its input so it cleans up and exits; kill it if it does not."""
        try:
            self.proc.stdin.close()
            self.proc.wait(grace_s)
        except (OSError, subprocess.TimeoutExpired):
            self.kill()


class Slot:
    """A worker slot: keeps one worker alive and feeds it jobs, one at a time. `gpu`: the
    CUDA_VISIBLE_DEVICES of its worker (None on a host without a GPU)."""

    def __init__(self, index, dispatcher, gpu=None):
        self.index, self.dispatcher, self.gpu = index, dispatcher, gpu
        self.state, self.worker, self.ready, self.runs, self.restarts = "starting", None, None, 0, 0
        self.failed_starts = 0  # worker starts that failed in a row: the next waits longer (restart_delay_s)
        self.busy_since = None  # monotonic time it took its current job
        self.job = None  # the job it runs now
        self.references = ReferenceTimes()  # its worker's runs' reference timings
        self.thread = threading.Thread(target=self._loop, name=f"worker-slot-{index}", daemon=True)

    def busy_s(self):
        since = self.busy_since
        return None if since is None else round(time.monotonic() - since, 1)

    def stuck(self):
        busy_s = self.busy_s()
        return busy_s is not None and busy_s > self.dispatcher.config["RUN_TIMEOUT_S"] + GRACE_S + STUCK_MARGIN_S

    def info(self):
        worker = self.worker
        return {"slot": self.index, "state": self.state, "pid": worker.proc.pid if worker else None,
                "runs": self.runs, "restarts": self.restarts, "failed_starts": self.failed_starts,
                "busy_s": self.busy_s(), "stuck": self.stuck(),
                "device": self.ready and self.ready["device"], "shared_kernels": worker and worker.warming}

    def _start_worker(self):
        self.state = "starting"
        self.worker = WorkerProcess(self.dispatcher.worker_env(self.gpu), message_limits(self.dispatcher.config),
                                    self.dispatcher.compiled)
        msg = self.worker.next(START_TIMEOUT_S)
        if not isinstance(msg, dict) or msg["type"] != "ready":
            self.worker.kill()
            raise RuntimeError("worker failed to start")
        self.ready = msg["content"]
        if self.dispatcher.config["SHARED_KERNELS"]:
            self._send_gallery()
        self.state = "ready"

    def _send_gallery(self):
        """The gallery's specs as shipped, for the worker to compile into the kernels every owner is
        lent (sandbox.warming); read from kernels/ here, never from a request."""
        specs = [example["spec"] for example in map(load_example, (e["name"] for e in list_examples())) if example]
        try:
            self.worker.send(protocol.encode(protocol.message("warm", specs=specs)), time.monotonic() + GRACE_S)
        except (OSError, TimeoutError):
            log.warning("worker slot %s did not take the gallery to warm", self.index)

    def _loop(self):
        while not self.dispatcher.stopping.is_set():
            if not self.ensure_worker():
                self.dispatcher.stopping.wait(restart_delay_s(self.failed_starts))
                continue
            job = self.dispatcher.jobs.get()
            if job is None:
                break
            self.handle(job)

    def ensure_worker(self):
        """A warm worker, started (or restarted) if need be; False if it would not start."""
        try:
            if self.worker is None or self.worker.proc.poll() is not None:
                self._start_worker()
            self.failed_starts = 0
            return True
        except Exception:
            self.failed_starts += 1
            log.exception("worker slot %s could not start a worker (%s in a row; next try in %g s)", self.index,
                          self.failed_starts, restart_delay_s(self.failed_starts))
            self.worker, self.state = None, "dead"
            return False

    def handle(self, job):
        """Run `job` on this slot's worker; whatever happens, the job gets its one result. A compile
        ahead is handed over, and the worker does it beside the runs that follow."""
        if isinstance(job, CompileRequest):
            return self.hand_over(job)
        if self._too_old(job):
            return
        if self.worker is not None and self.worker.broken:  # it sent a line past the limits while idle
            log.warning("worker slot %s replaces its worker, which sent %s", self.index, self.worker.broken)
            self._replace_worker()
            self.ensure_worker()
        if self.worker is None:
            return job.fail(RunError("sandbox", "no worker could be started for this run; try again"))
        self.state, self.busy_since, self.job = "busy", time.monotonic(), job
        try:
            self._run(job)
        except Exception:
            self._recover(job)
        finally:
            self.runs += 1
            self.state, self.busy_since, self.job = "ready", None, None

    def hand_over(self, request):
        if request.stale() or self.worker is None or self.worker.broken:
            return self.dispatcher.compile_dropped(request)
        try:
            self.worker.send(protocol.encode(request.message()), time.monotonic() + GRACE_S)
        except (OSError, TimeoutError, ValueError, TypeError):
            self.dispatcher.compile_dropped(request)

    def _too_old(self, job):
        """Drop a job that waited longer than QUEUE_WAIT_S: its user has likely given up or run it
        again, and running it now would only make every run behind it wait longer."""
        wait_s = self.dispatcher.config["QUEUE_WAIT_S"]
        if job.waited_s() <= wait_s:
            return False
        job.fail(RunError("limit", f"the server was too busy to start this run within {wait_s:g} s; try again"))
        return True

    def _recover(self, job):
        """Whatever went wrong while handling `job` (a worker pipe, a malformed message) costs that job
        only: its worker, in an unknown state, is replaced and the slot takes the next job."""
        log.exception("worker slot %s failed while handling run %s", self.index, job.run_id)
        if self.worker is not None:
            try:
                self._replace_worker()
            except Exception:  # the slot must go on: the next turn of its loop starts a worker
                log.exception("worker slot %s could not kill its worker", self.index)
                self.worker = None
        job.fail(RunError("sandbox", "the server lost this run's worker; it was replaced and the queue goes on"))

    def _run(self, job):
        timeout_s = self.dispatcher.config["RUN_TIMEOUT_S"]
        job.notify("status", {"phase": "starting", "message": f"running on worker {self.index}"})
        try:  # encoded before anything is written: a job that cannot be encoded leaves the worker as it was
            # Beside the spec, as a graded run's tests are: the reference timings this worker kept for the owner.
            spec = {**job.spec, "reference_times": self.references.lent(job.owner)} if isinstance(job.spec, dict) else job.spec
            line = protocol.encode(protocol.message("job", job.run_id, spec=spec, owner=job.owner,
                                                    from_link=job.from_link,
                                                    checked_before=job.launch in self.dispatcher.checked,
                                                    compiled_ahead=self.dispatcher.found_compiled(job)))
        except (ValueError, TypeError) as e:
            job.fail(RunError("sandbox", f"the run could not be sent to a worker ({e}); nothing ran"))
            return
        deadline = time.monotonic() + timeout_s + GRACE_S
        try:
            self.worker.send(line, deadline)
        except TimeoutError:
            return self._unanswered(job, timeout_s)
        except OSError:
            return self._died(job)
        while True:
            msg = self.worker.next(min(STOP_POLL_S, deadline - time.monotonic()))
            if job.stop_requested.is_set():
                return self._stopped(job)
            if msg == "timeout":
                if time.monotonic() < deadline:
                    continue
                return self._unanswered(job, timeout_s)
            if msg is None:
                return self._died(job)
            if isinstance(msg, tuple):  # ("beyond", why): a line past the message limits, never parsed
                return self._beyond(job, msg[1])
            if msg.get("run_id") != job.run_id:
                continue  # not this job's message: a stale or forged line is dropped
            if msg["type"] == "checked":
                self.dispatcher.checked.add(job.launch)
                continue
            if msg["type"] == "timed":
                self.references.add(job.owner, msg["content"]["key"], msg["content"]["reference_ms"])
                continue
            job.notify(msg["type"], msg["content"])
            if msg["type"] == "result":
                return

    def _unanswered(self, job, timeout_s):
        self._replace_worker()
        job.fail(RunError("timeout", f"the run took longer than {timeout_s:g} s and its worker stopped answering; it was replaced"))

    def _stopped(self, job):
        # The worker is in the middle of the run: killing it is the one way to end the run now
        # (as a timeout does); the client gets its result at once, the slot a fresh worker.
        job.fail(stopped(started=True))
        self._replace_worker()

    def _beyond(self, job, why):
        self._replace_worker()
        job.fail(RunError("limit", f"the worker sent {why}, more than the server reads; nothing of it was read, "
                                   f"the worker was replaced and only this run was lost"))

    def _died(self, job):
        self._replace_worker()
        job.fail(RunError("sandbox", "the worker process died during the run; it was replaced and the queue goes on"))

    def _replace_worker(self):
        self.restarts += 1
        self.worker.kill()
        self.worker = None


class Dispatcher:
    """The embedded dispatch: a pool of warm workers in this process's slots, one bounded, fair queue.

    The one seam between the web side and the runs, which app.celery_dispatch.CeleryDispatcher
    (REDIS_URL: Celery workers on other hosts) implements too:
      submit(spec, owner, client, from_link, address) -> run_id: the run's events (run_status,
          run_stdout, run_partial, run_result) go to the Socket.IO client `client` (its room), from
          wherever the run runs, in the order its worker sent them; `owner` is a session's owner id
          or an app.owners.ServerWork, `address` the client's address key (None for the server's own work)
      withdraw_client(client): the client left; its waiting runs never start
      stop_run(run_id, client) -> bool: the client pressed Stop: a waiting run never starts, a
          running one is ended (its worker replaced); either way its result says it was stopped.
          False: no run of that client with that id is waiting or running
      run(spec, owner, from_link, address) -> the result: blocking, bounded (POST /api/run)
      health() -> /healthz's body;  start(), stop()
    QueueFull, OwnerQueueFull or AddressQueueFull: the queue, or the owner's or the address's share
    of it, is full.
    """

    def __init__(self, config, deliver=None):
        self.config = config
        self.deliver = deliver  # deliver(client, run_id, type, content): app.events.deliver's emit
        self.jobs = JobQueue(config["QUEUE_LIMIT"], config["QUEUE_PER_OWNER"], config.get("QUEUE_PER_ADDRESS"))
        self.checked = CheckedLaunches()  # shared by every worker: a run may land on any of them
        self.compile_clients = collections.OrderedDict()  # compile_id -> (the client to answer, owner, compile key)
        self.compiled_ahead = collections.OrderedDict()  # owner -> the compile key of its last compile ahead done
        self.compile_asked = collections.OrderedDict()  # owner -> when it last asked to compile (monotonic)
        self.compiling = threading.Lock()
        self.stopping = threading.Event()
        # One warm worker per GPU by default, each pinned to its GPU; WORKERS of them, round-robin.
        assigned = gpu_assignments()
        count = config["WORKERS"] or len(assigned) or CPU_WORKERS
        self.slots = [Slot(i, self, assigned[i % len(assigned)] if assigned else None) for i in range(count)]
        self.started_at = time.time()

    def start(self):
        for slot in self.slots:
            slot.thread.start()
        return self

    def worker_env(self, gpu=None):
        """What workers (and so user code) see of the environment: what Python, CUDA and Triton need,
        the worker's GPU and settings (read once when it starts: jobs carry only the job); never the
        server's secrets (SECRET_KEY, credentials)."""
        return worker_env(self.config, gpu)

    def submit(self, spec, owner, client=None, from_link=False, listener=None, address=None):
        """Queue a run of `owner` (who may reuse its own compiled kernels); returns its run_id. Its
        status, stdout, parts and result go to the Socket.IO client `client`, whose leaving withdraws the
        run while it waits, or, in this process only, to listener(run_id, type, content)."""
        if listener is None:
            listener = functools.partial(self.deliver, client) if self.deliver else (lambda *_: None)
        job = Job(spec, listener, owner, client, from_link, address)
        with job.notifying:  # a free slot may take the job at once: its "starting" waits for this "queued"
            place = self.jobs.put(job)
            job.notify("status", {"phase": "queued", "message": f"queued: {ordinal(place)} in line", "position": place})
        return job.run_id

    def withdraw_client(self, client):
        """Drop the waiting runs and compiles of a client that left (a run already running finishes);
        returns how many runs."""
        self.jobs.withdraw_compiles(client)
        return len(self.jobs.withdraw(lambda job: job.client is not None and job.client == client))

    def compile_ahead(self, spec, owner, client, address=None):
        """Queue a compile ahead of `owner`'s next run (sandbox.ahead), after every waiting run, in place
        of the owner's waiting one; returns its compile_id. Its answer goes to `client` as `compiled`."""
        request = CompileRequest(spec, owner, client, address)
        with self.compiling:
            last = self.compile_asked.pop(request.owner, None)
            self.compile_asked[request.owner] = request.queued_at
            while len(self.compile_asked) > COMPILES_ANSWERED:
                self.compile_asked.popitem(last=False)
            if last is not None and request.queued_at - last < COMPILE_INTERVAL_S:
                # The page asks once its person pauses; faster, each compile would end the one before
                # on its worker, and starting run processes for nothing costs the host's CPU.
                raise QueueFull(f"compile requests come faster than one per {COMPILE_INTERVAL_S:g} s; "
                                f"this one was dropped (Run compiles what it needs)")
            self.compile_clients[request.compile_id] = (client, request.owner, compile_key(spec))
            while len(self.compile_clients) > COMPILES_ANSWERED:
                self.compile_clients.popitem(last=False)
        self.jobs.put_compile(request)
        return request.compile_id

    def compiled(self, msg):
        """A worker's answer to a compile ahead: to the client that asked (once; a forged id reaches no one)."""
        content = msg["content"]
        with self.compiling:
            client, owner, key = self.compile_clients.pop(msg.get("run_id"), (None, None, None))
            if content.get("ok") is True and owner is not None:
                self.compiled_ahead.pop(owner, None)
                self.compiled_ahead[owner] = key
                while len(self.compiled_ahead) > COMPILES_ANSWERED:
                    self.compiled_ahead.popitem(last=False)
        if client is not None and self.deliver is not None:
            self.deliver(client, msg["run_id"], "compiled", {"ok": content.get("ok") is True,
                                                             "error": content.get("error")})

    def found_compiled(self, job):
        """Did a compile ahead of this very spec finish into its owner's kernels (on any worker)?"""
        try:
            key = compile_key(job.spec)
        except (TypeError, ValueError, KeyError):
            return False
        with self.compiling:
            return self.compiled_ahead.get(job.owner) == key

    def compile_dropped(self, request):
        with self.compiling:
            self.compile_clients.pop(request.compile_id, None)

    def stop_run(self, run_id, client):
        for job in self.jobs.withdraw(lambda job: job.run_id == run_id and job.may_stop(client)):
            job.fail(stopped(started=False))
            return True
        for slot in self.slots:
            job = slot.job
            if job is not None and job.run_id == run_id and job.may_stop(client):
                job.stop_requested.set()
                return True
        return False

    def wait_bound_s(self):
        return wait_bound_s(self.config)

    def run(self, spec, owner, from_link=False, address=None):
        """Blocking run, for POST /api/run. The wait is bounded: a run that waited in the queue past
        QUEUE_WAIT_S gets its error result from the slot that drops it; past wait_bound_s the run is
        lost (RunLost), and if it is still waiting it is withdrawn so that no worker spends time on it."""
        done, box = threading.Event(), {}

        def listener(_run_id, type, content):
            if type == "result":
                box["result"] = content["result"]
                done.set()

        run_id = self.submit(spec, owner, from_link=from_link, listener=listener, address=address)
        bound_s = self.wait_bound_s()
        if not done.wait(bound_s):
            self.jobs.withdraw(lambda job: job.run_id == run_id)
            raise RunLost(f"the server could not finish this run within {bound_s:g} s; try again")
        return box["result"]

    def health(self):
        return health_of([s.info() for s in self.slots], next((s.ready for s in self.slots if s.ready), None),
                         len(self.jobs))

    def stop(self):
        self.stopping.set()
        self.jobs.close()
        for slot in self.slots:
            if slot.worker:
                slot.worker.stop()


RESTART_FIRST_S, RESTART_MAX_S = 1.0, 60.0


def restart_delay_s(failed_starts):
    """How long a slot waits before starting a worker again after `failed_starts` failures in a row:
    doubling from RESTART_FIRST_S up to RESTART_MAX_S, so a host that cannot start workers (a broken
    driver, a full disk) is not kept busy starting them, yet recovers by itself once it can."""
    return min(RESTART_MAX_S, RESTART_FIRST_S * 2 ** max(0, failed_starts - 1))


def wait_bound_s(config):
    """How long POST /api/run waits for its result at most."""
    return config["QUEUE_WAIT_S"] + config["RUN_TIMEOUT_S"] + GRACE_S + WAIT_MARGIN_S


def health_of(workers, ready, queued):
    """/healthz's body: ok while a worker is warm and none is stuck."""
    ok = any(w["state"] in ("ready", "busy") for w in workers) and not any(w["stuck"] for w in workers)
    return {"ok": ok, "workers": workers, "queued": queued,
            "device": ready and ready["device"], "isolation": ready and ready["isolation"]}
