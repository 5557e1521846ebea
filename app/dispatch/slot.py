"""A worker slot: one warm `python -m sandbox.worker` kept alive and fed jobs one at a time.

A slot writes each job to its worker and relays the worker's messages (sandbox.protocol) to the
job's listener; whatever goes wrong while it handles a job becomes that job's error result, and it
replaces the worker when it dies, stops answering or sends a line past the message limits
(sandbox.protocol.Limits, the MESSAGE_MAX_* settings: such a line is never parsed). A worker that
will not start is tried again after a backoff (restart_delay_s). The slot is given what it shares
with other slots (SlotShared); the embedded pool (app.dispatch.pool) and a Celery worker
(app.dispatch.celery_worker) each host slots.
"""
import dataclasses
import logging
import os
import queue
import select
import subprocess
import sys
import threading
import time
from typing import Callable

from app.dispatch.interface import longest_run_s
from app.dispatch.jobs import CompileRequest, stopped
from app.dispatch.kept import ReferenceTimes, SanitizedLaunches
from app.gallery import list_examples, load_example
from sandbox import gpus, protocol, settings, tritons
from sandbox.errors import RunError, StartError
from sandbox.spec import is_script, timing_key as spec_timing_key

log = logging.getLogger(__name__)
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
STOP_POLL_S = 0.25  # how often a slot waiting on its run looks whether its client pressed Stop
# The server's variables a worker gets, by name (never by prefix: a credential shares its prefix with
# a setting, NVIDIA_API_KEY with NVIDIA_VISIBLE_DEVICES); a run gets fewer (sandbox.worker.run_process).
WORKER_ENV = {"PATH", "HOME", "LANG", "LC_ALL", "LC_CTYPE", "TZ", "TMPDIR", "LD_LIBRARY_PATH", "CUDA_HOME",
              "CUDA_VISIBLE_DEVICES", "CUDA_DEVICE_ORDER", "TRITON_CACHE_DIR", "TRITON_PTXAS_PATH",
              "TRITON_CUOBJDUMP_PATH", "TRITON_NVDISASM_PATH", "TRITON_LIBCUDA_PATH", "OMP_NUM_THREADS",
              "TRITON_DEFAULT_FP_FUSION"}


def worker_env(config, gpu=None, triton_dir=None):
    """`gpu`: the CUDA_VISIBLE_DEVICES of this worker (an index, in PCI bus order: nvidia-smi's);
    `triton_dir`: where its Triton is installed (sandbox.tritons), None for the default."""
    env = {k: v for k, v in os.environ.items() if k in WORKER_ENV}
    env.update({name: str(config[name]) for name in settings.WORKER_SETTINGS if config.get(name) is not None})
    # The project, its own Triton's directory (its runs see it, read-only), then wherever the server's Python
    # finds its packages (PYTHONPATH is how a host without an installed environment brings them; code, nothing secret).
    python_path = os.pathsep.join(filter(None, [ROOT, triton_dir, os.environ.get("PYTHONPATH")]))
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


def message_limits(config):
    """The bounds of a worker's lines (sandbox.protocol.Limits), from the MESSAGE_MAX_* settings."""
    return protocol.Limits(**{field: config[name] for field, name in (
        ("max_bytes", "MESSAGE_MAX_BYTES"), ("max_depth", "MESSAGE_MAX_DEPTH"),
        ("max_elements", "MESSAGE_MAX_ELEMENTS")) if config.get(name)})

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
        self.sending = threading.Lock()  # a slot's thread and a preempting one write whole lines, one at a time
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
        with self.sending:
            self._send(line, deadline)

    def _send(self, line, deadline):
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


@dataclasses.dataclass
class SlotShared:
    """What a slot shares with the other slots of its host: the launches that passed the bounds check
    (a run may land on any worker), and the compiles ahead (app.dispatch.pool; a host that sends none
    keeps the defaults)."""
    sanitized: "SanitizedLaunches" = dataclasses.field(default_factory=lambda: SanitizedLaunches())
    on_compiled: Callable = lambda msg: None  # a worker's answer to a compile ahead
    compiled_ahead: Callable = lambda job: False  # did a compile ahead of this job's spec finish?
    compile_dropped: Callable = lambda request: None  # a compile ahead no worker will do
    compile_taken: Callable = lambda request: None  # a compile ahead handed to this host's worker
    start_failed: Callable = lambda slot: None  # a slot's worker would not start (its Triton's runs may have no worker)


class Slot:
    """A worker slot: keeps one worker alive and feeds it jobs, one at a time. `gpu`: the
    CUDA_VISIBLE_DEVICES of its worker (None on a host without a GPU); `triton`: the Triton version
    its worker runs and where it is installed (sandbox.tritons.server_versions; None: the default)."""

    def __init__(self, index, config, shared, gpu=None, triton=None):
        self.index, self.config, self.shared, self.gpu = index, config, shared, gpu
        self.triton, self.triton_dir = triton or (tritons.default_version(), None)
        self.state, self.worker, self.ready, self.runs, self.restarts = "starting", None, None, 0, 0
        self.failed_starts = 0  # worker starts that failed in a row: the next waits longer (restart_delay_s)
        self.start_failures = 0  # every failed start, for the operator's count (GET /metrics)
        self.busy_total_s = 0.0  # time spent on jobs finished: its worker's (its GPU's) busy time
        self.start_error = None  # why the last of them failed, in a line; None once a worker started
        self.next_start_at = None  # when a dead slot tries again (monotonic)
        self.busy_since = None  # monotonic time it took its current job
        self.job = None  # the job it runs now
        self.jobs = None  # the queue it serves (a preempted run of the server's own goes back there)
        self.preempted = None  # the run id of the server's own work it was asked to give up
        self.preemptions = 0
        self.references = ReferenceTimes()  # its worker's runs' reference timings

    def busy_s(self):
        since = self.busy_since
        return None if since is None else round(time.monotonic() - since, 1)

    def busy_total(self):
        """Seconds spent on jobs, the one under way included."""
        since = self.busy_since
        return self.busy_total_s + (time.monotonic() - since if since is not None else 0.0)

    def stuck(self):
        """Busy past a run's timeout, its grace and STUCK_MARGIN_S (the kill and the error result take
        less): no path of Slot._run takes that long, so /healthz says the server is not ok."""
        busy_s, config = self.busy_s(), self.config
        script = self.job is not None and is_script(self.job.spec)
        return busy_s is not None and busy_s > longest_run_s(config, script) + config["RUN_GRACE_S"] + config["STUCK_MARGIN_S"]

    def info(self):
        worker = self.worker
        return {"slot": self.index, "state": self.state, "pid": worker.proc.pid if worker else None,
                "runs": self.runs, "restarts": self.restarts, "failed_starts": self.failed_starts,
                "busy_s": self.busy_s(), "stuck": self.stuck(), "gpu": self.gpu,
                "device": self.ready and self.ready["device"], "shared_kernels": worker and worker.warming,
                "start_error": self.start_error, "next_start_s": self.next_start_s(),
                "start_failures": self.start_failures, "busy_total_s": round(self.busy_total(), 3),
                "preemptions": self.preemptions, "triton": self.triton}

    def next_start_s(self):
        """Seconds until a dead slot tries to start a worker again; None while it is not dead."""
        at = self.next_start_at
        return None if self.state != "dead" or at is None else round(max(0.0, at - time.monotonic()), 1)

    def _start_worker(self):
        self.state = "starting"
        tritons.check_installed(self.triton, self.triton_dir, StartError)
        self.worker = WorkerProcess(worker_env(self.config, self.gpu, self.triton_dir), message_limits(self.config),
                                    self.shared.on_compiled)
        msg = self.worker.next(self.config["WORKER_START_TIMEOUT_S"])
        if not isinstance(msg, dict) or msg["type"] != "ready" or msg["content"].get("triton") != self.triton:
            self.worker.kill()
            raise StartError(start_failure(msg, self.worker.proc.returncode, self.config["WORKER_START_TIMEOUT_S"],
                                           self.triton, self.triton_dir))
        self.ready = msg["content"]
        if self.config["SHARED_KERNELS"]:
            self._send_gallery()
        self.state = "ready"

    def _send_gallery(self):
        """The gallery's specs as shipped, for the worker to compile into the kernels every owner is
        lent (sandbox.warming); read from kernels/ here, never from a request."""
        specs = [example["spec"] for example in map(load_example, (e["name"] for e in list_examples())) if example]
        try:
            self.worker.send(protocol.encode(protocol.message("warm", specs=specs)), time.monotonic() + self.config["RUN_GRACE_S"])
        except (OSError, TimeoutError):
            log.warning("worker slot %s did not take the gallery to warm", self.index)

    def serve(self, jobs, stopping):
        """Take jobs from the queue `jobs` until it closes or `stopping` is set (the pool's thread)."""
        self.jobs = jobs
        while self.keep_worker(stopping):
            job = jobs.get(self.triton)
            if job is None:
                break
            self.handle(job)

    def keep_worker(self, stopping):
        """Wait until this slot has a warm worker, trying a worker that will not start again after
        restart_delay_s; False once `stopping` is set. A slot takes a job only when this is True: a
        job never waits on a worker that cannot start while another slot could run it."""
        while not stopping.is_set():
            if self.ensure_worker():
                return True
            stopping.wait(restart_delay_s(self.failed_starts))
        return False

    def has_worker(self):
        """A worker started and not dead (it may have died since its last job: ensure_worker restarts it)."""
        return self.worker is not None and self.worker.proc.poll() is None

    def ensure_worker(self):
        """A warm worker, started (or restarted) if need be; False if it would not start."""
        try:
            if not self.has_worker():
                self._start_worker()
            self.failed_starts, self.start_error = 0, None
            return True
        except Exception as e:
            self.failed_starts += 1
            self.start_failures += 1
            self.start_error = str(e) if isinstance(e, StartError) else f"{type(e).__name__}: {e}"
            delay_s = restart_delay_s(self.failed_starts)
            self.next_start_at = time.monotonic() + delay_s
            log.error("worker slot %s (%s) could not start a worker: %s (%s in a row; next try in %g s)", self.index,
                      f"GPU {self.gpu}" if self.gpu is not None else "no GPU", self.start_error,
                      self.failed_starts, delay_s, exc_info=not isinstance(e, StartError))
            self.worker, self.state = None, "dead"
            self.shared.start_failed(self)
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
        if not self.has_worker():  # replaced just now, or it died while idle (nothing watches an idle one)
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
            self.busy_total_s = self.busy_total()
            self.state, self.busy_since, self.job = "ready", None, None

    def idle(self):
        """Warm and waiting for a job: a person's run queued now starts here at once."""
        return self.state == "ready" and self.job is None

    def preempt(self):
        """Give up the server's own work under way for a person's run: its worker ends it at once
        and answers `preempted`, and the run goes back to the queue. False if it runs none."""
        job, worker = self.job, self.worker
        if job is None or not job.server_work or worker is None or self.preempted == job.run_id:
            return False
        self.preempted = job.run_id
        try:
            worker.send(protocol.encode(protocol.message("preempt", job.run_id)), time.monotonic() + self.config["RUN_GRACE_S"])
        except (OSError, TimeoutError):
            return False  # a worker gone: the slot finds out and replaces it
        return True

    def hand_over(self, request):
        if request.stale(self.config["COMPILE_STALE_S"]) or self.worker is None or self.worker.broken:
            return self.shared.compile_dropped(request)
        try:
            self.worker.send(protocol.encode(request.message()), time.monotonic() + self.config["RUN_GRACE_S"])
        except (OSError, TimeoutError, ValueError, TypeError):
            return self.shared.compile_dropped(request)
        self.shared.compile_taken(request)

    def _too_old(self, job):
        """Drop a job that waited longer than QUEUE_WAIT_S: its user has likely given up or run it
        again, and running it now would only make every run behind it wait longer."""
        wait_s = self.config["QUEUE_WAIT_S"]
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
        timeout_s = self.config["RUN_TIMEOUT_S"]
        job.notify("status", {"phase": "starting", "message": f"running on worker {self.index}"})
        try:  # encoded before anything is written: a job that cannot be encoded leaves the worker as it was
            # The reference timing this worker kept for the owner's runs of this reference (none for code
            # that is not the owner's own), in the job beside the spec.
            timing_key = spec_timing_key(job.spec)
            line = protocol.encode(protocol.Job.of_run(
                job.spec, owner=job.owner, provenance=job.provenance,
                sanitized_before=job.launch in self.shared.sanitized, compiled_ahead=self.shared.compiled_ahead(job),
                reference_times=self.references.lent(job.store, timing_key), yields=job.server_work).message(job.run_id))
        except (ValueError, TypeError) as e:
            job.fail(RunError("sandbox", f"the run could not be sent to a worker ({e}); nothing ran"))
            return
        deadline = time.monotonic() + longest_run_s(self.config, is_script(job.spec)) + self.config["RUN_GRACE_S"]
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
            if msg["type"] == "sanitized":
                if job.launch is not None:
                    self.shared.sanitized.add(job.launch)
                continue
            if msg["type"] == "timed":
                self.references.add(job.store, timing_key, msg["content"]["key"], msg["content"]["reference_ms"])
                continue
            if msg["type"] == "preempted":
                if self.preempted == job.run_id:
                    self.preempted = None  # taken again, it may be preempted again
                    self.preemptions += 1
                    return self.jobs.requeue(job)
                return self._beyond(job, "a preemption the server never asked for")
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


def start_failure(msg, returncode, timeout_s, triton=None, triton_dir=None):
    """Why a worker sent `msg` (WorkerProcess.next's answer) instead of its ready message (or a ready
    message from another Triton than `triton`, installed in `triton_dir`), in a line."""
    if isinstance(msg, dict) and msg["type"] == "ready":
        return tritons.imported_another(triton, triton_dir, msg["content"].get("triton"))
    if isinstance(msg, dict) and msg["type"] == "unstarted" and isinstance(msg["content"].get("error"), str):
        return msg["content"]["error"][:1000]
    if msg is None:
        return f"the worker exited (status {returncode}) before it was ready; its log says why"
    if msg == "timeout":
        return f"the worker was not ready within {timeout_s:g} s (WORKER_START_TIMEOUT_S)"
    if isinstance(msg, tuple):
        return f"the worker sent {msg[1]} before it was ready"
    return f"the worker sent {msg['type']!r} before it was ready"


RESTART_FIRST_S, RESTART_MAX_S = 1.0, 60.0


def restart_delay_s(failed_starts):
    """How long a slot waits before starting a worker again after `failed_starts` failures in a row:
    doubling from RESTART_FIRST_S up to RESTART_MAX_S, so a host that cannot start workers (a broken
    driver, a full disk) is not kept busy starting them, yet recovers by itself once it can."""
    return min(RESTART_MAX_S, RESTART_FIRST_S * 2 ** max(0, failed_starts - 1))
