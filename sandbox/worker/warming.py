"""A worker's warm-up: the gallery's kernels, compiled by the worker for every owner.

The server sends the gallery's specs as it ships them (a `warm` message, once, after `ready`). One
worker of a host at a time (the lock of sandbox.worker.shared_kernels) runs each spec in a run process of
its own, jailed as any run and at idle CPU priority, with the spec's own compile options: the launch
compiles exactly the entries (kernel, launcher library) a user's run of that example looks up, the
IR pass those of the IR tab, and on a GPU the bounds check on CPU copies proves the launch in bounds.
After each, the worker publishes what it compiled into the shared kernels. Runs never wait for any
of it: the worker takes a job whenever one comes (sandbox.worker's loop), and a warm-up run goes on
in its own process meanwhile; an entry is usable the moment it is published.

In the interpreter (a host without a GPU) a launch compiles nothing, so what is shared there is the
IR compile (for sm90) that a run's IR tab needs.

On a GPU the warm-up also times each example's reference, as a run does, and keeps the timing under
the example's launch and reference (`reference_times`): a person's run of the example unchanged (a
new student's first run) is lent it and times only the kernel. A PyTorch reference's time depends
on nothing the person can change without changing those keys, and the warm-up runs the server's
own specs in run processes of their own, so its word is the server's. So is the device's copy
bandwidth its runs measure (`peak_gbps`, the highest of theirs: another run's traffic only lowers
it), which every later job is lent: a run then spends none of its ~30 ms measuring it again.
"""
import time

import triton

from sandbox import protocol
from sandbox import result as results
from sandbox.spec import SpecError, launch_key, normalize, timing_key
from sandbox.worker.ahead import READS_PER_STEP

# What a warm-up run does of each example: the launch, the check (on a GPU the bounds check first),
# the IR compile, and the trace as the example ships it: on a GPU that is the GPU tracer's
# instrumented build, which a page-default run of the example compiles too, so a new student's first
# run finds it built. The timing on a GPU only (its reference's is kept); the interpreter's clock
# says nothing of speed.
WARM_OPTIONS = {"check": True, "ir": True, "sanitize": True}
LOCK_POLL_S = 1.0  # another worker of the host warms: look again this often


def example_key(spec):
    """Where an example's reference timing is kept: its launch and its reference, from the spec as
    the server sends it (None without a reference, or for a malformed spec)."""
    try:
        spec = normalize(spec)
        reference = timing_key(spec)
        return reference and f"{launch_key(spec)}-{reference}"
    except (SpecError, KeyError, TypeError, ValueError, AttributeError):
        return None


class Warming:
    """The state of one worker's warm-up; the worker calls `begin` once, then `step` whenever it is
    idle (with the descriptors of `fds()` that are readable)."""

    def __init__(self, shared, settings, new_run_process, kernel_caches, report):
        self.shared, self.settings, self.kernel_caches = shared, settings, kernel_caches
        self.new_run_process, self.report = new_run_process, report
        self.state, self.pending, self.total = "off" if shared is None else "idle", [], 0
        self.verified = set()  # launch keys of the gallery's launches that passed the bounds check
        self.references = {}  # example_key -> {the run's reference key: its timing}
        self.peak_gbps = None  # the device's copy bandwidth, the highest a warm-up run measured
        self.published, self.failed = [], []
        self.run = self.spec = self.deadline = None
        self.digest = None

    # -- what the worker asks

    def sanitized(self, spec):
        """Did this worker's warm-up bounds-check this exact launch? (`spec` as a job carries it, the
        defaults it leaves out included: normalized before its launch is keyed.)"""
        try:
            return launch_key(normalize(spec)) in self.verified
        except SpecError:
            return False

    def reference_times(self, spec):
        """The reference timing the warm-up measured for this very example ({} for any other spec):
        what a job of `spec` is lent, beside its owner's (sandbox.protocol.Job.reference_times)."""
        return dict(self.references.get(example_key(spec)) or {}) if self.references else {}

    def fds(self):
        return self.run.watched() if self.run is not None else []

    def poll_s(self):
        """How long the worker may block waiting for a job before calling `step` again."""
        if self.state == "waiting":
            return LOCK_POLL_S
        if self.run is not None:
            return max(0.0, self.deadline - time.monotonic())
        return None

    def status(self):
        return {"state": self.state, "examples": self.total, "warmed": self.total - len(self.pending) - (self.run is not None),
                "failed": len(self.failed), "entries": len(self.shared.entries()) if self.shared else 0}

    # -- the warm-up

    def begin(self, specs, device):
        """Warm these specs (the gallery's, from the server), unless a worker of this host did already."""
        if self.shared is None or self.state != "idle" or not isinstance(specs, list):
            return
        self.pending = [s for s in specs if isinstance(s, dict)]
        self.total = len(self.pending)
        self.digest = self.shared.digest(triton.__version__, device, self.pending)
        self.state = "waiting"
        self.step([])

    def step(self, readable):
        if self.state == "waiting":
            self._take_lock_or_adopt()
        elif self.run is not None:
            self._follow(readable)
        if self.state == "warming" and self.run is None:
            self._start_next()

    def _take_lock_or_adopt(self):
        done = self.shared.marker(self.digest)
        if done is None and not self.shared.try_lock():
            return  # another worker of this host warms these: wait for its marker
        done = done or self.shared.marker(self.digest)  # it may have finished just now
        if done is not None:
            self.shared.unlock()
            self.verified = set(done["launches"])
            kept = done.get("references") if isinstance(done.get("references"), dict) else {}
            self.references = {key: times for key, times in kept.items()
                               if isinstance(times, dict) and all(results.timed_ok({"key": k, "reference_ms": t})
                                                                  for k, t in times.items())}
            self.peak_gbps = done.get("peak_gbps") if results.positive_number(done.get("peak_gbps")) else None
            self.pending = []
            self._finished()
            return
        self.shared.sweep(triton.__version__)
        self.state = "warming"
        self.report(self.status())

    def _start_next(self):
        if not self.pending:
            self.shared.finish(self.digest, triton.__version__, self.published, self.verified, self.references,
                               self.peak_gbps)
            self._finished()
            return
        self.spec = self.pending.pop(0)
        self.run = self.new_run_process(warming=True)
        self.deadline = time.monotonic() + 120 + self.settings.timeout_s  # its warm-up, then the job

    def _follow(self, readable):
        """Read what the warm-up run has sent; give it its job once it is warm; end it on its result,
        its death or its deadline."""
        run, ended = self.run, False
        if time.monotonic() > self.deadline:
            ended = True
        elif run.ready is None:
            if run.poll_ready():
                options = {**self.spec["options"], **WARM_OPTIONS, "bench": self.settings.has_gpu}
                run.send_job(protocol.Job(spec={**self.spec, "options": options})
                             .message("warm-" + protocol.new_id()))
                self.deadline = time.monotonic() + self.settings.timeout_s
            elif run.wait() is not None:
                ended = True
        elif any(fd in readable for fd in (run.msg_r, run.out_r)):
            ended = self._read(run)
        if ended:
            self._end(run)

    def _read(self, run):
        """Take what is there (output is dropped); True once the run has sent its result or died."""
        for _ in range(READS_PER_STEP):
            kind, data = run.poll_message()  # never waits: a line left unfinished waits for the next step
            if kind == "none":
                return False
            if kind == "eof":
                return True
            msg = protocol.decode(data, protocol.RUN_TYPES) if kind == "msg" else None
            if msg is None:
                continue
            if msg["type"] == "sanitized":
                self.verified.add(launch_key(self.spec))
            elif msg["type"] == "timed" and results.timed_ok(msg["content"]) and (example := example_key(self.spec)):
                self.references[example] = {msg["content"]["key"]: msg["content"]["reference_ms"]}
            elif msg["type"] == "result":
                result = msg["content"].get("result") or {}
                if result.get("status") == "error":
                    self.failed.append(self.spec.get("kernel"))
                self._keep_peak(result)
                return True
        return False

    def _keep_peak(self, result):
        peak = (result.get("timings") or {}).get("peak_gbps")
        if results.positive_number(peak):
            self.peak_gbps = max(peak, self.peak_gbps or 0)

    def _end(self, run):
        run.finish(self.kernel_caches, publish=lambda cache: self.published.extend(self.shared.publish(cache)))
        self.run = None
        self.report(self.status())

    def _finished(self):
        self.state = "ready"
        self.report(self.status())

    def stop(self):
        if self.run is not None:
            self.run.finish(self.kernel_caches)
            self.run = None
        if self.shared is not None:
            self.shared.unlock()
