"""The job dispatcher: the one owner of worker processes (how many, start, replace, timeouts).

The web process never imports torch or runs user code: it writes jobs to `python -m sandbox.worker`
processes and reads their messages (sandbox.protocol). Each worker slot is a thread that takes the
next job from one bounded queue, relays the worker's messages to the job's listener, and replaces
the worker when it dies or stops answering.
"""
import hashlib
import logging
import os
import queue
import subprocess
import sys
import threading
import time

from sandbox import protocol
from sandbox.errors import RunError

log = logging.getLogger(__name__)
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
START_TIMEOUT_S = 180
GRACE_S = 10  # a worker enforces the run timeout itself; after this much more, we kill the worker
WORKER_ENV = {"PATH", "HOME", "LANG", "TZ", "TMPDIR", "LD_LIBRARY_PATH"}
WORKER_ENV_PREFIXES = ("LC_", "TRITON_", "CUDA_", "NVIDIA_", "PYTORCH_", "TORCH_", "OMP_", "MKL_")


class QueueFull(Exception):
    pass


class Job:
    def __init__(self, spec, listener, owner):
        self.run_id = protocol.new_id()
        self.spec = spec
        # Runs of one owner share compiled kernels; a worker sees a digest, never the session's id.
        self.owner = hashlib.sha256(owner.encode()).hexdigest()[:32]
        self.listener = listener  # listener(run_id, type, content), called from a worker slot's thread

    def notify(self, type, content):
        if type == "result":
            content["result"]["run_id"] = self.run_id
        self.listener(self.run_id, type, content)


class WorkerProcess:
    """One `python -m sandbox.worker` and a thread that reads its messages into a queue."""

    def __init__(self, env):
        self.proc = subprocess.Popen([sys.executable, "-m", "sandbox.worker"], cwd=ROOT, env=env,
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE)
        self.messages = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self):
        for line in iter(lambda: self.proc.stdout.readline(protocol.MAX_LINE_BYTES), b""):
            msg = protocol.decode(line)
            if msg is not None:
                self.messages.put(msg)
        self.messages.put(None)  # end of stream: the worker died

    def next(self, timeout):
        try:
            return self.messages.get(timeout=max(timeout, 0))
        except queue.Empty:
            return "timeout"

    def send(self, msg):
        self.proc.stdin.write(protocol.encode(msg))
        self.proc.stdin.flush()

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
    """A worker slot: keeps one worker alive and feeds it jobs, one at a time."""

    def __init__(self, index, dispatcher):
        self.index, self.dispatcher = index, dispatcher
        self.state, self.worker, self.ready, self.runs, self.restarts = "starting", None, None, 0, 0
        self.thread = threading.Thread(target=self._loop, name=f"worker-slot-{index}", daemon=True)

    def info(self):
        return {"slot": self.index, "state": self.state, "pid": self.worker.proc.pid if self.worker else None,
                "runs": self.runs, "restarts": self.restarts}

    def _start_worker(self):
        self.state = "starting"
        self.worker = WorkerProcess(self.dispatcher.worker_env())
        msg = self.worker.next(START_TIMEOUT_S)
        if not isinstance(msg, dict) or msg["type"] != "ready":
            self.worker.kill()
            raise RuntimeError("worker failed to start")
        self.ready = msg["content"]
        self.state = "ready"

    def _loop(self):
        while not self.dispatcher.stopping.is_set():
            try:
                if self.worker is None or self.worker.proc.poll() is not None:
                    self._start_worker()
            except Exception:
                log.exception("worker slot %d could not start a worker", self.index)
                self.worker, self.state = None, "dead"
                time.sleep(2)
                continue
            job = self.dispatcher.jobs.get()
            if job is None:
                break
            self.state = "busy"
            self._run(job)
            self.runs += 1
            self.state = "ready"

    def _run(self, job):
        timeout_s = self.dispatcher.config["RUN_TIMEOUT_S"]
        job.notify("status", {"phase": "starting", "message": f"running on worker {self.index}"})
        try:
            self.worker.send(protocol.message("job", job.run_id, spec=job.spec, owner=job.owner, timeout_s=timeout_s,
                                              output_limit=self.dispatcher.config["OUTPUT_LIMIT_BYTES"],
                                              limits=self.dispatcher.trace_limits()))
        except OSError:
            msg = None
        else:
            msg = "pending"
        deadline = time.monotonic() + timeout_s + GRACE_S
        while msg is not None:
            msg = self.worker.next(deadline - time.monotonic())
            if msg == "timeout":
                self._replace_worker()
                job.notify("result", {"result": RunError("timeout", f"the run took longer than {timeout_s:g} s and its worker stopped answering; it was replaced").result()})
                return
            if msg is None or msg["run_id"] != job.run_id:
                continue  # not this job's message: a stale or forged line is dropped
            job.notify(msg["type"], msg["content"])
            if msg["type"] == "result":
                return
        self._replace_worker()
        job.notify("result", {"result": RunError("sandbox", "the worker process died during the run; it was replaced and the queue goes on").result()})

    def _replace_worker(self):
        self.restarts += 1
        self.worker.kill()
        self.worker = None


class Dispatcher:
    def __init__(self, config):
        self.config = config
        self.jobs = queue.Queue(maxsize=config["QUEUE_LIMIT"])
        self.stopping = threading.Event()
        self.slots = [Slot(i, self) for i in range(config["WORKERS"])]
        self.started_at = time.time()

    def start(self):
        for slot in self.slots:
            slot.thread.start()
        return self

    def worker_env(self):
        """What workers (and so user code) see of the environment: what Python, CUDA and Triton need,
        never the server's secrets (SECRET_KEY, credentials)."""
        env = {k: v for k, v in os.environ.items() if k in WORKER_ENV or k.startswith(WORKER_ENV_PREFIXES)}
        env.update({"SANDBOX": self.config["SANDBOX"], "RUN_MEMORY_MB": str(self.config["RUN_MEMORY_MB"]),
                    "RUN_HIDDEN_PATHS": os.path.dirname(os.path.abspath(self.config["DATABASE"])),
                    "PYTHONPATH": ROOT, "PYTHONUNBUFFERED": "1"})
        if self.config["RUN_ROOT"]:
            env["RUN_ROOT"] = self.config["RUN_ROOT"]
        return env

    def trace_limits(self):
        return {"max_programs": self.config["TRACE_MAX_PROGRAMS"], "max_bytes": self.config["TRACE_MAX_BYTES"],
                "trace_budget_s": self.config["TRACE_BUDGET_S"]}

    def submit(self, spec, listener, owner):
        """Queue a run of `owner` (who may reuse its own compiled kernels); returns its run_id.
        listener(run_id, type, content) gets status, stdout and result."""
        job = Job(spec, listener, owner)
        try:
            self.jobs.put_nowait(job)
        except queue.Full:
            raise QueueFull(f"the server is busy ({self.jobs.qsize()} runs waiting); try again in a moment") from None
        job.notify("status", {"phase": "queued", "message": f"queued ({self.jobs.qsize()} waiting)"})
        return job.run_id

    def run(self, spec, owner):
        """Blocking run, for POST /api/run."""
        done, box = threading.Event(), {}

        def listener(_run_id, type, content):
            if type == "result":
                box["result"] = content["result"]
                done.set()

        self.submit(spec, listener, owner)
        done.wait()
        return box["result"]

    def health(self):
        ready = next((s.ready for s in self.slots if s.ready), None)
        return {"ok": any(s.state in ("ready", "busy") for s in self.slots),
                "workers": [s.info() for s in self.slots], "queued": self.jobs.qsize(),
                "device": ready and ready["device"], "isolation": ready and ready["isolation"]}

    def stop(self):
        self.stopping.set()
        for _ in self.slots:
            try:
                self.jobs.put_nowait(None)
            except queue.Full:
                pass
        for slot in self.slots:
            if slot.worker:
                slot.worker.stop()
