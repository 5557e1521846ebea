"""A worker: a warm process (torch and triton imported) that runs each job in a fresh child.

    python -m sandbox.worker        # speaks sandbox.protocol on stdin/stdout

For every run the worker forks a child ahead of need (the warm-up, CUDA init included, is off the
critical path), the child isolates itself (sandbox.isolation) and waits for its one job. The worker
relays the child's messages and output, enforces the wall-clock timeout and the output limit, and
turns a child that dies into a clear error. No state of one run reaches the next: each run's
process, scratch directory and Triton interpreter are new.
"""
import collections
import contextlib
import os
import select
import shutil
import signal
import sys
import tempfile
import time

# Fork-safety: let torch ask NVML, not the CUDA driver, whether there is a GPU, so this parent never
# initialises CUDA (a CUDA context does not survive fork).
os.environ.setdefault("PYTORCH_NVML_BASED_CUDA_CHECK", "1")

import torch  # noqa: E402  (warm imports: the reason this process exists)
import triton  # noqa: E402

from sandbox import isolation, pipeline, protocol  # noqa: E402
from sandbox.errors import RunError  # noqa: E402
from sandbox.kernel_cache import KernelCaches  # noqa: E402
from sandbox.spec import launch_key  # noqa: E402

SANDBOX_MODE = os.environ.get("SANDBOX", "auto")
MEMORY_MB = int(os.environ.get("RUN_MEMORY_MB") or 8192)
# Every run's scratch dir lives here, and a run sees only its own.
RUN_ROOT = os.environ.get("RUN_ROOT") or os.path.join(tempfile.gettempdir(), "playground-runs")
os.makedirs(RUN_ROOT, mode=0o711, exist_ok=True)
HAS_GPU = torch.cuda.is_available()
# This process's own Triton cache (the launcher utilities it builds before any fork). Runs compile
# into their scratch dirs, and their kernels are kept per owner (sandbox.kernel_cache).
TRITON_CACHE_DIR = os.environ.setdefault("TRITON_CACHE_DIR", os.path.join(tempfile.gettempdir(), "playground-worker-cache"))
os.makedirs(TRITON_CACHE_DIR, mode=0o700, exist_ok=True)
with contextlib.suppress(PermissionError):
    os.chmod(TRITON_CACHE_DIR, 0o700)
KERNEL_CACHES = KernelCaches(os.path.join(RUN_ROOT, "kernel-caches"))
# Directories a run process must not see: the other runs and owners' kernels, this process's
# cache, and the server's database.
HIDDEN = [RUN_ROOT, TRITON_CACHE_DIR, *filter(None, os.environ.get("RUN_HIDDEN_PATHS", "").split(os.pathsep))]
if not HAS_GPU:
    os.environ["TRITON_INTERPRET"] = "1"
    triton.knobs.runtime.interpret = True


def warm_compiler():
    """Do once, before any fork, the work every run process would otherwise repeat on its first
    compile or cache lookup: hashing Triton's own files for the cache key (~0.4 s), asking ptxas its
    version, importing the Gluon frontend the launcher loads lazily (~0.2 s). None of it touches CUDA."""
    from triton.runtime.cache import triton_key
    triton_key()
    with contextlib.suppress(Exception):  # no NVIDIA backend or no ptxas: nothing to warm
        from triton.backends.nvidia.compiler import get_ptxas_version
        get_ptxas_version(90)
    with contextlib.suppress(ImportError):
        import triton.experimental.gluon  # noqa: F401
    if HAS_GPU:  # load the launcher's C utilities (dlopen, no CUDA call): ~20 ms per process otherwise
        triton.runtime.driver.active.utils  # noqa: B018


warm_compiler()


# ---------------------------------------------------------------- the run process (child)

def warm_cuda():
    """CUDA init, and the first use of the torch kernels every run needs (random inputs, the poison
    fill, arithmetic, copies back to the host): CUDA loads each kernel's module lazily, ~5 ms apiece."""
    x = torch.randn(1024, device="cuda")
    torch.rand(1024, device="cuda").fill_(float("nan"))
    (x + x * x - x).clone().cpu()
    torch.cuda.synchronize()


def kernel_cache_of(scratch):
    return os.path.join(scratch, "triton-cache")


def child_main(job_r, msg_w, scratch):
    def send(msg):
        os.write(msg_w, protocol.encode(protocol.jsonable(msg)))

    applied = isolation.enter(SANDBOX_MODE, scratch, 0 if HAS_GPU else MEMORY_MB, HIDDEN)
    os.environ["TMPDIR"] = tempfile.tempdir = scratch  # ptxas, cuobjdump and user code write temp files here
    os.makedirs(kernel_cache_of(scratch))  # made here, so it belongs to whoever the run now is
    os.environ["TRITON_CACHE_DIR"] = kernel_cache_of(scratch)
    if HAS_GPU:
        warm_cuda()
    kind = "gpu" if HAS_GPU else "interpreter"
    send(protocol.message("ready", device=pipeline.device_info(kind), isolation=applied))
    with os.fdopen(job_r, "rb") as jobs:
        job = protocol.decode(jobs.readline(), protocol.SERVER_TYPES)
    if job is None:
        return
    run_id, content = job["run_id"], job["content"]
    os.chdir(scratch)

    def emit(type, payload):
        send(protocol.message(type, run_id, **payload))

    start = time.perf_counter()
    result = pipeline.run_spec(content["spec"], emit, scratch, content.get("limits"), content.get("checked_before", False))
    result["run_ms"] = (time.perf_counter() - start) * 1e3  # time inside the run process
    sys.stdout.flush()
    sys.stderr.flush()
    send(protocol.message("result", run_id, result=result))


class Child:
    """A forked run process, warm and waiting for its job."""

    parent_fds = set()  # this process's ends of every live child's pipes: no other child may hold them
    live = set()  # pids of the run processes not yet finished

    def __init__(self):
        self.scratch = tempfile.mkdtemp(prefix=f"run-{os.getpid()}-", dir=RUN_ROOT)
        job_r, self.job_w = os.pipe()
        self.msg_r, msg_w = os.pipe()
        self.out_r, out_w = os.pipe()
        self.pid = os.fork()
        if self.pid == 0:
            code = 0
            try:
                # Another run's pipes must not leak into this one: its output and result are private.
                for fd in (self.job_w, self.msg_r, self.out_r, 0, *Child.parent_fds):
                    os.close(fd)
                os.dup2(out_w, 1)
                os.dup2(out_w, 2)
                sys.stdout.reconfigure(line_buffering=True)
                child_main(job_r, msg_w, self.scratch)
            except BaseException:
                import traceback
                traceback.print_exc()
                code = 70
            finally:
                os._exit(code)
        for fd in (job_r, msg_w, out_w):
            os.close(fd)
        Child.live.add(self.pid)
        Child.parent_fds.update((self.job_w, self.msg_r, self.out_r))
        self.lines = b""
        self.ready = None
        self.owner = None  # whose kernel cache it was lent, to collect back
        self.reservation = None

    def next_message(self, deadline):
        """Block until the child sends a message, prints, or dies. Returns ("msg"|"out"|"eof"|"timeout", data)."""
        while True:
            if b"\n" in self.lines:
                line, self.lines = self.lines.split(b"\n", 1)
                return "msg", line
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return "timeout", None
            ready, _, _ = select.select([self.msg_r, self.out_r], [], [], remaining)
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

    def read_output(self, budget=65536, linger_s=0.02):
        """Read what the child printed, lingering briefly so a print loop becomes one message."""
        data = os.read(self.out_r, budget)
        while data and len(data) < budget and select.select([self.out_r], [], [], linger_s)[0]:
            more = os.read(self.out_r, budget - len(data))
            if not more:
                break
            data += more
        return data

    def wait_ready(self, timeout_s):
        kind, line = self.next_message(time.monotonic() + timeout_s)
        msg = protocol.decode(line) if kind == "msg" else None
        if msg is None or msg["type"] != "ready":
            raise RuntimeError(f"run process failed to start ({kind})")
        self.ready = msg["content"]
        return self.ready

    def send_job(self, job):
        os.write(self.job_w, protocol.encode(job))
        os.close(self.job_w)
        Child.parent_fds.discard(self.job_w)

    def hold_kernel_cache(self):
        """Take the owner's lock until finish() collects what this run compiled."""
        self.reservation = KERNEL_CACHES.reserve(self.owner)
        if self.reservation is not None:
            Child.parent_fds.add(self.reservation)  # a run process forked meanwhile must not hold it

    def finish(self):
        """Kill if still running, reap, and remove the scratch directory. Returns the wait status."""
        try:
            os.kill(self.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        _, status = os.waitpid(self.pid, 0)
        Child.live.discard(self.pid)
        kill_strays(keep=Child.live)
        for fd in (self.msg_r, self.out_r):
            os.close(fd)
            Child.parent_fds.discard(fd)
        if self.owner:  # nothing of the run runs any more: what it compiled can be looked at
            with contextlib.suppress(OSError):
                KERNEL_CACHES.collect(self.owner, kernel_cache_of(self.scratch), self.reservation)
            Child.parent_fds.discard(self.reservation)
        shutil.rmtree(self.scratch, ignore_errors=True)
        return status


def become_subreaper():
    """Processes a run leaves behind (forked, however detached: setsid, double fork) become this
    worker's children when the run process dies, so kill_strays can find them."""
    isolation.libc.prctl(isolation.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)


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
    """Kill and reap every child but the run processes in `keep`: what a finished run left running."""
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
    if os.WIFSIGNALED(status):
        sig = signal.Signals(os.WTERMSIG(status)).name
        return f"was killed by signal {sig}" + (" (a crash: an out-of-bounds access or a bug in native code)" if sig in ("SIGSEGV", "SIGBUS", "SIGABRT") else "")
    return f"exited with status {os.WEXITSTATUS(status)} before reporting a result"


# ---------------------------------------------------------------- the worker (parent)

class CheckedLaunches:
    """The launch keys that passed the bounds check in this worker, least recently used first out.
    On a GPU that check is a pass over the whole launch in the interpreter (~0.15 s for a vector add
    of 98k elements): re-running the same launch, as one does to time it again, skips it."""

    def __init__(self, capacity=1024):
        self.keys, self.capacity = collections.OrderedDict(), capacity

    def __contains__(self, key):
        if key in self.keys:
            self.keys.move_to_end(key)
            return True
        return False

    def add(self, key):
        self.keys[key] = True
        self.keys.move_to_end(key)
        while len(self.keys) > self.capacity:
            self.keys.popitem(last=False)


class Worker:
    def __init__(self, channel):
        self.channel = channel
        self.next_child = None
        self.checked = CheckedLaunches()

    def send(self, msg):
        self.channel.write(protocol.encode(protocol.jsonable(msg)))
        self.channel.flush()

    def start(self):
        """Fork the first run process and wait until it is warm; returns its ready message."""
        self.next_child = Child()
        return self.next_child.wait_ready(120)

    def start_job(self, job, owner):
        """Hand the job to the warm run process (waiting for its warm-up only if runs come back to
        back), with its owner's compiled kernels."""
        child = self.next_child
        if child.ready is None:
            child.wait_ready(120)
        child.owner = owner
        with contextlib.suppress(OSError):  # at worst the run compiles again
            KERNEL_CACHES.lend(owner, kernel_cache_of(child.scratch))
        child.send_job(job)
        return child

    def run(self, job):
        run_id, content = job["run_id"], job["content"]
        timeout_s = float(content.get("timeout_s") or 30)
        output_limit = int(content.get("output_limit") or 1 << 20)
        owner = content.get("owner")
        key = (owner, launch_key(content["spec"]))  # the server sends normalized specs only
        content["checked_before"] = key in self.checked
        child = self.start_job(job, owner)
        deadline = time.monotonic() + timeout_s
        output = bytearray()
        result = error = None
        died = False
        while result is None and error is None and not died:
            kind, data = child.next_message(deadline)
            if kind == "out":
                if len(output) + len(data) > output_limit:
                    error = RunError("limit", f"the run printed more than {output_limit // 1024} KB; it was stopped")
                    break
                output += data
                self.send(protocol.message("stdout", run_id, text=data.decode(errors="replace")))
            elif kind == "msg":
                msg = protocol.decode(data, protocol.RUN_TYPES)
                if msg is None:
                    error = RunError("sandbox", "the run process sent a malformed message")
                elif msg["type"] == "checked":
                    self.checked.add(key)
                elif msg["type"] == "status":
                    self.send(protocol.message("status", run_id, **msg["content"]))
                elif isinstance(msg["content"].get("result"), dict):
                    result = msg["content"]["result"]
                else:
                    error = RunError("sandbox", "the run process sent a malformed result")
            elif kind == "timeout":
                error = RunError("timeout", f"the run took longer than {timeout_s:g} s and was stopped. "
                                            f"Look for an endless loop (a while loop whose condition never changes, "
                                            f"or a huge grid).")
            else:
                died = True
        if died:
            error = RunError("sandbox", f"the run's process {describe_exit(child.finish())}. The server is "
                                        f"fine; only this run was lost.")
        if error is not None:
            result = error.result()
        result["stdout"] = output.decode(errors="replace")
        if not died:  # collected below, after the reply: the owner's next run waits for it
            child.hold_kernel_cache()
        self.send(protocol.message("result", run_id, result=result))
        # After the reply, off the critical path: fork the next run process, whose warm-up (CUDA init
        # ~0.25 s) then happens while the user reads the result (forked during the run, its CUDA init
        # slowed the run's own first launch by ~0.1 s), then reap this one (a CUDA context's teardown
        # takes a while).
        self.next_child = Child()
        if not died:
            child.finish()


def sweep_scratch_dirs():
    """Remove the scratch dirs a killed worker left behind (they are named after their worker's pid)."""
    for name in os.listdir(RUN_ROOT):
        pid = name.split("-")[1] if name.startswith("run-") and name.count("-") >= 2 else ""
        if pid.isdigit() and not os.path.exists(f"/proc/{pid}"):
            shutil.rmtree(os.path.join(RUN_ROOT, name), ignore_errors=True)


def main():
    become_subreaper()
    sweep_scratch_dirs()
    # The protocol keeps the real stdout; anything else printed in this process goes to stderr.
    channel = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)
    worker = Worker(channel)
    ready = worker.start()
    worker.send(protocol.message("ready", device=ready["device"], isolation=ready["isolation"], pid=os.getpid()))
    for line in sys.stdin.buffer:
        job = protocol.decode(line, protocol.SERVER_TYPES)
        if job is None:
            continue
        worker.run(job)
    worker.next_child.finish()  # stdin closed: the server stopped this worker


if __name__ == "__main__":
    main()
