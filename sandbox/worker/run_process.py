"""A run process: forked by its worker ahead of need, jailed, warm, waiting for its one job.

    worker ── fork ──▶ run process (pid 1 of its own PID namespace, root for a moment)
                         builds the jail (sandbox.jail.isolation), then forks ──▶ user process
                         and stays its init                                   confined (own uid,
                                                                              seccomp, limits),
                                                                              warms CUDA, waits
                                                                              for the job, runs it

The user process holds exactly four descriptors: /dev/null as stdin, the output pipe as stdout and
stderr, the job pipe (fd 3) and its message pipe (fd 4). Nothing of the worker's reaches it.
"""
import contextlib
import fcntl
import itertools
import os
import resource
import select
import shutil
import signal
import sys
import tempfile
import time
import traceback
from dataclasses import dataclass, field

import triton

from sandbox import gpus, protocol, settings, tritons
from sandbox import result as results
from sandbox.errors import StartError, escaped
from sandbox.grading import grader, recheck
from sandbox.jail import cgroups, isolation
from sandbox.run import bench, pipeline
from sandbox.worker import shared_kernels
from sandbox.worker.cuda_warmup import warm_cuda

JOB_FD, MESSAGE_FD = 3, 4
# The environment a run gets, by name, nothing by prefix: what the C library, CUDA and Triton's tools
# read, with values the worker was given. The run sets TMPDIR, HOME and TRITON_CACHE_DIR itself.
RUN_ENVIRONMENT = ("PATH", "LANG", "LC_ALL", "LC_CTYPE", "TZ", "LD_LIBRARY_PATH", "CUDA_VISIBLE_DEVICES",
                   "CUDA_DEVICE_ORDER", "CUDA_HOME", "PYTORCH_NVML_BASED_CUDA_CHECK", "OPENBLAS_NUM_THREADS",
                   "TRITON_INTERPRET", "TRITON_PTXAS_PATH", "TRITON_CUOBJDUMP_PATH", "TRITON_NVDISASM_PATH",
                   "TRITON_LIBCUDA_PATH", "TRITON_DEFAULT_FP_FUSION")
READY_POLL_S = 1.0  # a ready message under way arrives whole well within this


@dataclass(frozen=True)
class Settings:
    """A worker's settings, read once from its environment, where the server's dispatcher puts them
    (app.dispatch.slot.worker_env; their defaults and meanings: sandbox.settings)."""
    mode: str
    run_root: str
    hidden: tuple  # directories no run may see: the runs, the workers' cache, the database
    has_gpu: bool
    can_mount: bool
    limits: isolation.Limits
    timeout_s: float
    output_limit: int
    trace_limits: dict
    devices: tuple = field(default=())
    shared_kernels: str = None  # the gallery's compiled kernels, lent read-only to every run (None: off)
    cuda_visible_devices: str = None  # the worker's GPUs as a run names them: by UUID (sandbox.gpus.by_uuid)
    script_steps_s: float = settings.default("SCRIPT_STEPS_S")  # a script's steps after its program
    kept_inputs_bytes: int = settings.default("SCRIPT_KEPT_INPUTS_MB") << 20  # a script run's launch inputs kept

    @classmethod
    def from_environment(cls, can_mount, has_gpu):
        env, value = os.environ, settings.value
        run_root = value("RUN_ROOT") or os.path.join(tempfile.gettempdir(), "playground-runs")
        hidden = (run_root, env["TRITON_CACHE_DIR"], *filter(None, env.get("RUN_HIDDEN_PATHS", "").split(os.pathsep)))
        trace_limits = {"max_programs": value("TRACE_MAX_PROGRAMS"), "max_bytes": value("TRACE_MAX_BYTES"),
                        "trace_budget_s": value("TRACE_BUDGET_S"), "gpu_tracer": value("GPU_TRACER") != 0,
                        "trace_on_cpu_first": value("TRACE_ON_CPU_FIRST")}
        shared = (tritons.kept_dir(run_root, "shared-kernels", triton.__version__)  # the Triton this worker imported
                  if value("SHARED_KERNELS") != 0 else None)
        visible = gpus.by_uuid(gpus.host_gpus(), env.get("CUDA_VISIBLE_DEVICES")) if has_gpu else None
        return cls(value("SANDBOX"), run_root, hidden, has_gpu, can_mount, isolation.Limits.from_settings(),
                   value("RUN_TIMEOUT_S"), value("OUTPUT_LIMIT_BYTES"), trace_limits,
                   tuple(isolation.gpu_devices()) if has_gpu else (), shared, visible, value("SCRIPT_STEPS_S"),
                   max(0, value("SCRIPT_KEPT_INPUTS_MB")) << 20)

    @property
    def jailed(self):
        return self.mode == "auto"

    @property
    def root_mountpoint(self):
        return os.path.join(self.run_root, ".root")


def last_line(text):
    """What a traceback says last: the exception and its message ("RuntimeError: No CUDA GPUs are available")."""
    return next((line.strip() for line in reversed(text.splitlines()) if line.strip()), "")[:500]


def kernel_cache_of(scratch):
    return os.path.join(scratch, "triton-cache")


class RunProcess:
    """The worker's handle on one run process: its pipes, scratch dir, cgroup and uid."""

    live = set()  # pids of the worker's children that are no strays: its zygote, the runs not yet finished
    serials = itertools.count()

    def __init__(self, settings, zygote, warming=False, cuda=True):
        """Forked by `zygote` (sandbox.worker.zygote), never by the worker: it inherits no job. `warming`: the
        worker's own work, at idle CPU priority; `cuda=False`: a check in the interpreter, no CUDA init (~1 s)."""
        self.settings, self.warming = settings, warming
        self.uid = isolation.run_uid(os.getpid(), next(RunProcess.serials))
        path = tempfile.mkdtemp(prefix=f"run-{os.getpid()}-", dir=settings.run_root)
        self.scratch = isolation.Scratch(path, self.uid, settings.limits, settings.can_mount and settings.jailed)
        self.cgroup = cgroups.RunCgroup.create(os.path.basename(path), settings.limits) if settings.jailed else None
        if warming and self.cgroup:
            self.cgroup.make_idle()
        request = {"worker": os.getpid(), "uid": self.uid, "scratch": path, "capped": self.scratch.capped,
                   "cgroup": [self.cgroup.paths, self.cgroup.kind] if self.cgroup else None,
                   "warming": warming, "cuda": cuda, "pid_namespace": settings.jailed}
        try:
            self.pid, (self.job_w, self.msg_r, self.out_r) = zygote.spawn(request)
        except BaseException:
            self.scratch.remove()
            if self.cgroup:
                self.cgroup.remove()
            raise
        RunProcess.live.add(self.pid)
        self.fds = {self.job_w, self.msg_r, self.out_r}
        self.lines, self.printing = b"", True  # what it sent not read yet; whether its output is open
        self.status = self.ready = None  # its wait status, once it has ended; its ready message
        self.owner = None  # whose kernel cache it was lent, to collect back
        self.keep_kernels = True  # collect what it compiled into the owner's cache
        self.collect_budget = self.reservation = None  # a compile ahead's kernel_cache.WriteBudget; the owner's lock

    # -- inside the run process (forked by the zygote: see sandbox.worker.zygote)

    @staticmethod
    def serve_request(settings, request, pipes, pid_namespace):
        """The run process's life, from what the zygote was asked: never returns."""
        try:
            isolation.die_with_parent()  # with the worker, which has adopted this process
            isolation.set_process_name("run")
            if os.getppid() != request["worker"] and not pid_namespace:  # the worker died meanwhile
                os._exit(70)
            keep_only_run_descriptors(*pipes)
            scratch = isolation.Scratch.existing(request["scratch"], request["capped"])
            cgroup = cgroups.RunCgroup(*request["cgroup"]) if request["cgroup"] else None
            jail_and_serve(settings, request["uid"], scratch, cgroup, request["warming"], request["cuda"])
        except BaseException:
            traceback.print_exc()
        finally:
            os._exit(70)

    # -- in the worker

    def next_message(self, deadline, listener=None, beside=None):
        """Block until the run sends a message, prints, or dies. Returns ("msg"|"out"|"eof"|"timeout", data).
        `listener`: (a descriptor, its reader), read whenever readable meanwhile (sandbox.worker.server_input);
        `beside`: the worker's work that goes on meanwhile (its `fds`, `poll_s` and `step`: its checks ahead)."""
        listened = [listener[0]] if listener else []
        while True:
            if b"\n" in self.lines:
                return self._line()
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return "timeout", None
            others, poll_s = (beside.fds(), beside.poll_s()) if beside else ([], None)
            wait_s = remaining if poll_s is None else min(remaining, poll_s)
            ready = select.select(self.watched() + listened + others, [], [], wait_s)[0]
            found = self._take(ready)
            if found is not None:
                return found
            if listened and listened[0] in ready:
                listener[1]()
            if beside:
                beside.step(ready)

    def poll_message(self):
        """next_message without waiting: ("none", None) while the run has sent no whole line and
        printed nothing, however long it leaves a line unfinished."""
        while b"\n" not in self.lines:
            ready = select.select(self.watched(), [], [], 0)[0]
            found = self._take(ready) if ready else None
            if found is not None:
                return found
            if self.msg_r not in ready:
                return "none", None
        return self._line()

    def watched(self):
        """The descriptors to wait on: its messages, and its output until the run closes it (a closed
        pipe is always readable: waited on, it would make every wait a busy loop)."""
        return [self.msg_r, self.out_r] if self.printing else [self.msg_r]

    def _line(self):
        line, self.lines = self.lines.split(b"\n", 1)
        return "msg", line

    def _take(self, ready):
        """Read what `ready` says is there: ("out", data), ("eof", None), or None (a part of a line, kept)."""
        if self.out_r in ready:
            data = self.read_output()
            if data:
                return "out", data
        if self.msg_r in ready:
            data = os.read(self.msg_r, 1 << 20)
            if not data:
                return "eof", None
            self.lines += data
            if len(self.lines) > protocol.MAX_LINE_BYTES:
                return "eof", None
        return None

    def read_output(self, budget=65536, linger_s=0.02):
        """Read what the run printed, lingering briefly so a print loop becomes one message."""
        data = os.read(self.out_r, budget)
        self.printing = bool(data)
        while data and len(data) < budget and select.select([self.out_r], [], [], linger_s)[0]:
            more = os.read(self.out_r, budget - len(data))
            if not more:
                break
            data += more
        return data

    def wait_ready(self, timeout_s):
        deadline = time.monotonic() + timeout_s
        kind, line = self.next_message(deadline)
        printed = b""
        while kind == "out" and len(printed) < 1 << 16:  # it failed and says why
            printed += line
            kind, line = self.next_message(deadline)
        msg = protocol.decode(line, ("ready",)) if kind == "msg" else None
        if msg is None:
            text = printed.decode(errors="replace")
            sys.stderr.write(text)  # its traceback, for the server's log
            silent = f"it was not warm within {timeout_s:g} s" if kind == "timeout" else "it ended"
            raise StartError(f"a run process failed to warm up: {last_line(text) or silent}")
        self.ready = msg["content"]
        return self.ready

    def poll_ready(self):
        """Is it warm? Reads its ready message if it has come, without waiting for one."""
        if self.ready is None and select.select(self.watched(), [], [], 0)[0]:
            with contextlib.suppress(RuntimeError):
                self.wait_ready(READY_POLL_S)
        return self.ready is not None

    def send_job(self, job):
        try:
            os.write(self.job_w, protocol.encode(job))
        finally:
            self._close(self.job_w)

    def _close(self, fd):
        if fd in self.fds:
            os.close(fd)
            self.fds.discard(fd)

    def wait(self, grace_s=0.0):
        """The run process's wait status if it has ended or ends within `grace_s`, else None."""
        deadline = time.monotonic() + grace_s
        while self.status is None:
            pid, status = os.waitpid(self.pid, os.WNOHANG)
            if pid:
                self.status = status
            elif time.monotonic() >= deadline:
                break
            else:
                time.sleep(0.002)
        return self.status

    def hold_kernel_cache(self, kernel_caches):
        """Take the owner's lock until finish() collects what this run compiled."""
        if self.owner and self.keep_kernels:
            self.reservation = kernel_caches.reserve(self.owner)

    def kill(self):
        """End it now, its whole namespace with it; finish() reaps it."""
        if self.status is None:  # not reaped: its pid is still its own
            with contextlib.suppress(ProcessLookupError):
                os.kill(self.pid, signal.SIGKILL)

    def finish(self, kernel_caches, grace_s=0.0, publish=None, collect=None):
        """Kill if still running after `grace_s` (the whole namespace goes with it), reap, collect
        what it compiled (into its owner's cache, or with `publish(cache_dir)` for a warm-up run),
        and with `collect(scratch_dir)` what else is kept of it, remove its scratch dir and cgroup.
        Returns (wait status, whether it ran out of memory)."""
        status = self.wait(grace_s)
        if status is None:
            self.kill()
            _, status = os.waitpid(self.pid, 0)
        RunProcess.live.discard(self.pid)
        kill_strays(keep=RunProcess.live)
        for fd in list(self.fds):
            self._close(fd)
        if self.owner and self.keep_kernels:  # nothing of the run runs any more: its files can be read
            with contextlib.suppress(OSError):
                kernel_caches.collect(self.owner, kernel_cache_of(self.scratch.path), self.reservation,
                                      self.collect_budget)
        if publish is not None:
            with contextlib.suppress(OSError):
                publish(kernel_cache_of(self.scratch.path))
        if collect is not None:
            with contextlib.suppress(OSError):
                collect(self.scratch.path)
        self.scratch.remove()
        out_of_memory = bool(self.cgroup and self.cgroup.out_of_memory())
        if self.cgroup:
            self.cgroup.remove()
        return status, out_of_memory


def jail_and_serve(settings, uid, scratch, cgroup, warming, cuda):
    """Pid 1 of the run, root for a moment: build the jail, fork the user process, be its init."""
    steps, path = [], scratch.path
    if cgroup:
        cgroup.join()
        steps.append(cgroup.kind)
    if settings.jailed:
        jail_steps, path = isolation.enter_namespaces(settings.root_mountpoint, path, uid, settings.devices,
                                                      settings.hidden, settings.shared_kernels)
        steps += jail_steps
    if scratch.capped:
        steps.append(f"scratch capped at {settings.limits.scratch_mb} MB")
    user = os.fork()
    if user == 0:
        isolation.die_with_parent()
        user_process(settings, uid, cgroup, path, steps, warming, cuda)
        os._exit(0)
    for fd in (0, 1, 2, JOB_FD, MESSAGE_FD):
        os.close(fd)
    isolation.serve_as_init(user)


def keep_only_run_descriptors(job_r, msg_w, out_w):
    """In a new run process: stdin /dev/null, stdout and stderr the output pipe, the job pipe as fd 3,
    the message pipe as fd 4, and nothing else (no other run's pipes, not the worker's channel to
    the server: a forged line there would pass for the worker's own)."""
    high = [fcntl.fcntl(fd, fcntl.F_DUPFD, 64) for fd in (job_r, msg_w, out_w)]
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.dup2(high[2], 1)
    os.dup2(high[2], 2)
    os.dup2(high[0], JOB_FD)
    os.dup2(high[1], MESSAGE_FD)
    os.closerange(MESSAGE_FD + 1, resource.getrlimit(resource.RLIMIT_NOFILE)[0])
    sys.stdout.reconfigure(line_buffering=True)


def keep_only_run_environment():
    """Unset every variable but RUN_ENVIRONMENT's (in the C library's environment too)."""
    for name in list(os.environ):
        if name not in RUN_ENVIRONMENT:
            del os.environ[name]


def lend_shared_kernels(settings, steps):
    """Let Triton find the gallery's compiled kernels, where this process cannot write them."""
    if not settings.shared_kernels:
        return
    seen = isolation.SHARED_AT if "minimal read-only root" in steps else settings.shared_kernels
    if shared_kernels.cannot_write(seen):
        shared_kernels.use_in_this_process(seen)


def user_process(settings, uid, cgroup, scratch, steps, warming=False, cuda=True):
    """The process that runs user code: confined, warm, then one job."""
    keep_only_run_environment()
    signal.signal(signal.SIGINT, signal.default_int_handler)  # the run's error, even where `make run &` ignores it
    if settings.cuda_visible_devices is not None:  # its GPU by UUID: the jail's /dev holds no other to count
        os.environ["CUDA_VISIBLE_DEVICES"] = settings.cuda_visible_devices
    if warming:  # the CPU goes to runs first: a warm-up never delays one
        os.sched_setscheduler(0, os.SCHED_IDLE, os.sched_param(0))
    cgroup_kind = cgroup.kind if cgroup else ""
    memory_rlimit = 0 if settings.has_gpu or "memory" in cgroup_kind else settings.limits.memory_mb
    tasks_rlimit = 0 if "pids" in cgroup_kind else settings.limits.tasks
    if "cpu" not in cgroup_kind and settings.jailed and os.getuid() == 0:
        # No CPU share: fewer tasks of its own uid, so fewer processes to spin every core with.
        tasks_rlimit = min(tasks_rlimit or settings.limits.tasks, settings.limits.tasks_without_cpu_share)
        steps = steps + [f"no CPU cgroup: at most {tasks_rlimit} tasks"]
    if settings.jailed:
        python_reachable = "minimal read-only root" in steps or all(
            isolation.readable_by_others(p) for p in (sys.base_prefix, sys.prefix))
        steps = steps + isolation.confine(uid, settings.limits, memory_rlimit, tasks_rlimit, python_reachable)
    else:
        steps = steps + [isolation.set_limits(settings.limits, memory_rlimit, tasks_rlimit)]
    os.environ["TMPDIR"] = os.environ["HOME"] = tempfile.tempdir = scratch  # ptxas, cuobjdump and user code write here
    os.makedirs(kernel_cache_of(scratch))  # made here, so it belongs to whoever the run now is
    os.environ["TRITON_CACHE_DIR"] = kernel_cache_of(scratch)
    lend_shared_kernels(settings, steps)

    def send(msg):
        os.write(MESSAGE_FD, protocol.encode(msg, nan_to_null=True))

    kind = "gpu" if settings.has_gpu and cuda else "interpreter"
    if kind == "gpu":
        warm_cuda()
    send(protocol.message("ready", device=pipeline.device_info(kind), isolation=steps, cache_dir=kernel_cache_of(scratch)))
    with os.fdopen(JOB_FD, "rb") as jobs:
        job = protocol.decode(jobs.readline(), protocol.SERVER_TYPES)
    if job is None:
        return
    run_id, job = job["run_id"], protocol.Job.read(job["content"])  # its worker's own message
    bench.lend_peak_gbps(job.peak_gbps)
    os.chdir(scratch)
    try:
        serve_job(settings, run_id, job, scratch, send, kind)
    except (Exception, KeyboardInterrupt, SystemExit) as e:  # the playground's fault, a SIGINT, an exit: said
        send(protocol.message("result", run_id, result=results.failed(escaped(e))))


def serve_job(settings, run_id, job, scratch, send, kind):
    """One job, in the user process; its result `send`s the run's last message."""
    def emit(type, payload):
        send(protocol.message(type, run_id, **payload))

    if job.recheck is not None:  # the server's check of a script's launch (sandbox.grading.recheck): no program runs
        send(protocol.message("result", run_id, recheck=recheck.recheck(job.recheck, scratch,
                                                                        settings.trace_limits)))
        return
    if job.grade is not None:  # this process is a grader (sandbox.grading.grader): it runs no module
        outcome = grader.grade(job.grade, emit, scratch, settings.trace_limits, kind)
        send(protocol.message("result", run_id, grade=outcome))
        return
    start = time.perf_counter()
    if job.compile_ahead:
        with contextlib.suppress(OSError):  # a warm spare took it: from now on the CPU goes to runs first
            os.sched_setscheduler(0, os.SCHED_IDLE, os.sched_param(0))
        result = pipeline.compile_spec(job.spec, emit, scratch, settings.trace_limits, job.replay)
    else:
        limits = run_limits(settings.trace_limits, job)
        if protocol.kept_for(job.owner, job.provenance) is not None:  # what its worker would keep of it
            limits = {**limits, "kept_inputs_bytes": settings.kept_inputs_bytes}
        result = pipeline.run_spec(job.spec, emit, scratch, limits, job.sanitized_before,
                                   job.compiled_ahead, job.reference_times, job.replay)
    result["run_ms"] = (time.perf_counter() - start) * 1e3  # time inside the run process
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):  # the code may have closed or replaced it: its result still goes
            stream.flush()
    send(protocol.message("result", run_id, result=result))


def run_limits(limits, job):
    """A job's trace limits. The server's own runs (no owner: the gallery's warm-up) build what people's
    later runs find compiled, the GPU tracer's instrumented builds among it: none is traced on the CPU first."""
    return limits if job.owner is not None else {**limits, "trace_on_cpu_first": 0}


# ---------------------------------------------------------------- what runs leave behind


def children():
    """Pids of this process's children (from /proc: a stray's pid is known to no one here)."""
    me, found = os.getpid(), []
    for name in os.listdir("/proc"):
        try:
            with open(f"/proc/{name}/stat") as f:
                ppid = int(f.read().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            continue
        if ppid == me:
            found.append(int(name))
    return found


def kill_strays(keep):
    """Kill and reap every child but the run processes in `keep`: what a finished run left running
    where it had no PID namespace to take it along (the worker is the subreaper of its runs)."""
    for _ in range(100):  # a stray may fork while it is being killed; its children come back here
        strays = [pid for pid in children() if pid not in keep]
        if not strays:
            return
        for pid in strays:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        for pid in strays:
            with contextlib.suppress(ChildProcessError):
                os.waitpid(pid, 0)


def describe_exit(status):
    """Words for how a run process ended; it reports its user process's death by signal N as 128 + N."""
    code = os.waitstatus_to_exitcode(status)
    signum = -code if code < 0 else code - 128 if 128 < code <= 128 + 64 else None
    if signum is not None:
        try:
            sig = signal.Signals(signum).name
        except ValueError:
            sig = f"signal {signum}"
        crash = " (a crash: an out-of-bounds access or a bug in native code)" if sig in ("SIGSEGV", "SIGBUS", "SIGABRT") else ""
        return f"was killed by signal {sig}{crash}"
    return f"exited with status {code} before reporting a result"


def sweep_scratch_dirs(run_root):
    """Remove the scratch dirs a killed worker left behind (they are named after their worker's pid)."""
    for name in os.listdir(run_root):
        pid = name.split("-")[1] if name.startswith("run-") and name.count("-") >= 2 else ""
        if pid.isdigit() and not os.path.exists(f"/proc/{pid}"):
            shutil.rmtree(os.path.join(run_root, name), ignore_errors=True)
