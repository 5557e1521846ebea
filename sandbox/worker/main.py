"""A worker: a warm process (torch and triton imported) that runs each job in a fresh, jailed process.

    python -m sandbox.worker        # speaks sandbox.protocol on stdin/stdout

For every run the worker forks a run process ahead of need (sandbox.worker.run_process: the jail and the
warm-up, CUDA init included, happen off the critical path), hands it its one job, relays its
messages and output, enforces the wall-clock timeout and the output limit, and turns a run process
that dies into a clear error. No state of one run reaches the next.
"""
import codecs
import collections
import contextlib
import functools
import os
import select
import sys
import tempfile
import time
import traceback

from sandbox import protocol, tritons
from sandbox import result as results
from sandbox.errors import RunError, StartError
from sandbox.jail import cgroups, isolation
from sandbox.spec import is_script
from sandbox.worker.checks_ahead import CheckedLaunches, ChecksAhead
from sandbox.worker.kept_launches import KeptLaunches
from sandbox.worker.script_runs import FOREIGN_REPLAY, ScriptRuns
from sandbox.worker.server_input import Preempted, ServerInput
from sandbox.worker.spares import READY_TIMEOUT_S, Spares
from sandbox.worker.verdicts import failed_grading, graded_result, grader_outcome_ok
from sandbox.worker.zygote import Zygote

AHEAD_WAIT_S = 10.0  # a run waits this long at most for its own spec's compile ahead to finish


def warm_compiler(has_gpu):
    """Do once, before any fork, the work every run process would otherwise repeat on its first
    compile or cache lookup: hashing Triton's own files for the cache key (~0.4 s), asking ptxas, nvdisasm
    and cuobjdump their versions (a process each; the last two on every run's path to its SASS),
    importing the Gluon frontend the launcher loads lazily (~0.2 s). None of it touches CUDA."""
    import triton
    from triton.runtime.cache import triton_key
    triton_key()
    with contextlib.suppress(Exception):  # no NVIDIA backend or no ptxas: nothing to warm
        from triton.backends.nvidia.compiler import get_ptxas_version
        get_ptxas_version(90)
    with contextlib.suppress(Exception):  # Triton keeps each tool's path and version (NvidiaTool.from_path)
        from sandbox.launch.ir import disassembly_tools
        disassembly_tools()
    with contextlib.suppress(ImportError):
        import triton.experimental.gluon  # noqa: F401
    with contextlib.suppress(ImportError):
        import pyseccomp  # noqa: F401  (loads libseccomp once, for every run's filter)
    if has_gpu:
        # The CUDA driver's launcher utilities (a C module Triton builds once, then dlopens), made the
        # active driver directly: choosing it the usual way asks torch for a GPU, which starts a thread.
        from triton.backends.nvidia.driver import CudaDriver
        triton.runtime.driver.set_active(CudaDriver())


# What a script's run process may not send: its program would speak for the server's checks.
SCRIPT_DROPS = ("sanitized", "timed")


def status_shape_ok(content):
    return isinstance(content.get("phase"), str) and isinstance(content.get("message"), str)


def part_shape_ok(content):
    """A part of the result (sandbox.result.PARTS) and nothing else beside it."""
    return set(content) == {"part", "content"} and not results.part_problems(content["part"], content["content"])


class PartsSent:
    """The parts of one run's result relayed so far: each at most once, and all together no more
    than the run's result may be (protocol.MAX_LINE_BYTES), since each is a section of it. A graded
    run's own check is never relayed: the grader's is its check."""

    def __init__(self, run_id=None, graded=False):
        self.run_id, self.names, self.bytes = run_id, set(), 0
        if graded:
            self.names.add("check")


class Worker(ScriptRuns, Spares):
    def __init__(self, channel, settings, kernel_caches, shared=None):
        from sandbox.worker.ahead import CompileAhead
        from sandbox.worker.run_process import RunProcess
        from sandbox.worker.warming import Warming
        # Forked now, before this worker holds any job: every run process descends from it.
        self.zygote = Zygote(functools.partial(RunProcess.serve_request, settings))
        RunProcess.live.add(self.zygote.pid)
        self.new_run_process = lambda warming=False, cuda=True: RunProcess(settings, self.zygote, warming, cuda)  # noqa: E731
        self.channel, self.settings, self.kernel_caches = channel, settings, kernel_caches
        self.kept_launches = KeptLaunches(os.path.join(settings.run_root, "kept-launches"), settings.kept_inputs_bytes)
        kernel_caches.on_drop.append(self.kept_launches.drop)
        self.rechecked = collections.OrderedDict()
        self.warming = Warming(shared, settings, self.new_run_process, kernel_caches,
                               lambda status: self.send(protocol.message("warming", **status)))
        self.ahead = CompileAhead(settings, self.run_process_for_compile, kernel_caches, self.send,
                                  self.kept_launches)
        self.checks_ahead = ChecksAhead(lambda: self.new_run_process(warming=True, cuda=False),
                                        CheckedLaunches(os.path.join(settings.run_root, "checked-launches")), kernel_caches,
                                        room=lambda: len(self.ahead.running) < protocol.MAX_COMPILES_AHEAD)
        self.ahead.others = lambda: int(self.checks_ahead.under_way is not None)
        self.device = None
        # Warm run processes waiting for a job. A GPU one takes ~0.25 s to warm (CUDA init), longer
        # than a person takes to press Run again: with two, the next run finds one warm.
        self.spare_count = 2
        self.spares = collections.deque()
        self.parts = PartsSent()  # of the run being relayed
        self.finished = None  # a script's result as its program ended (its line, when), before its steps
        self.step = None  # the status of the step under way, for a step cut short to name
        self.input = ServerInput()
        self.taken = []  # the run processes the job under way took
        self.ended = []  # a preempted run's, killed and not reaped yet
        self.ended_at = None  # when the last of them was killed
        self.yielding = False  # the job under way is the server's own (protocol.Job.yields)

    def send(self, msg):
        self.send_line(protocol.encode(msg, nan_to_null=True))

    def send_line(self, line):
        self.channel.write(line)
        self.channel.flush()

    def start(self):
        """Fork the spare run processes and wait until the first is warm; returns its ready message."""
        self.spares.extend(self.new_run_process() for _ in range(self.spare_count))
        ready = self.spares[0].wait_ready(READY_TIMEOUT_S)
        self.device = {"kind": ready["device"]["kind"], "name": ready["device"]["name"]}
        return ready

    def serve(self, stdin_fd=0):
        """Take the server's messages until it closes our input; the warm-up goes on between jobs."""
        self.input = ServerInput(stdin_fd)
        while True:
            while (line := self.input.next_line()) is not None:  # a run's wait may read more (`preempt`)
                self.handle(line)
            if not self.input.open:
                break
            background = (self.warming, self.ahead, self.checks_ahead)
            waits = [s for s in (*(work.poll_s() for work in background), self.catch_up_s()) if s is not None]
            readable = select.select([stdin_fd, *(fd for work in background for fd in work.fds())], [], [],
                                     min(waits) if waits else None)[0]
            if stdin_fd in readable:
                self.input.read()
            elif self.catch_up_s() == 0:
                self.catch_up()
            for work in background:
                work.step(readable)
        for work in (self.warming, self.ahead, self.checks_ahead):
            work.stop()

    def handle(self, line):
        msg = protocol.decode(line, protocol.SERVER_TYPES)
        if msg is None:
            return
        if msg["type"] == "preempt":  # of a run that has ended, or of the next (it may overtake its job)
            self.input.preempt_later(msg["run_id"])
            return
        if msg["type"] == "warm":
            self.warming.begin(msg["content"].get("specs"), self.device)
        elif msg["type"] == "compile":
            self.ahead.request(msg)
        else:
            self.run(msg)

    def start_job(self, job, store, run_id=None):
        """Hand the job to the warm run process with the compiled kernels of `store`, into which
        what it compiles is collected after it (None: none lent, none kept), and a replay's launch
        inputs (sandbox.run.replay)."""
        from sandbox.worker.run_process import kernel_cache_of
        run = self.take_warm_run_process(run_id)
        run.owner = store
        if store is not None:
            with contextlib.suppress(OSError):  # at worst the run compiles again
                self.kernel_caches.lend(store, kernel_cache_of(run.scratch.path), seen_as=run.ready.get("cache_dir"))
        if job.replay is not None:
            with contextlib.suppress(OSError):  # dropped meanwhile: the replay says its inputs do not fit their record
                self.kept_launches.lend(store, job.replay["launch"], run.scratch.path)
        try:
            run.send_job(job.message(run_id))
        except OSError:
            pass  # it died meanwhile: the relay below reports it
        return run

    def relay(self, run_id, line, charged, output_limit, script=False, launched=None):
        """One line from the run's message pipe: checked for shape, charged to the output limit
        (except the result and its parts, bounded as the result is), relayed. Returns (the result
        line, error, charged): a result or a part is passed on as the run encoded it (a trace is up
        to megabytes: never encoded twice). A script's run sends its status, parts and result only:
        what the server keeps for later runs (a launch that passed the bounds check, a reference's
        time) is never its program's word. `launched(record)`: a launch its program is making, for
        the server to check meanwhile (the program's own code only)."""
        msg = protocol.decode(line, protocol.RUN_TYPES)
        content = msg["content"] if msg is not None and msg["run_id"] == run_id else None
        if script and msg is not None and msg["type"] in SCRIPT_DROPS:
            content = None
        if msg is not None and msg["type"] == "result" and content is not None:
            if isinstance(content.get("result"), dict) and not results.problems_at_top(content["result"]):
                return line + b"\n", None, charged
            return None, RunError("sandbox", "the run process sent a malformed result"), charged
        if script and msg is not None and msg["type"] == "finished" and content is not None and self.finished is None:
            if isinstance(content.get("result"), dict) and not results.problems_at_top(content["result"]):
                self.finished = (line, time.monotonic())  # kept, should a step after the program run long
                return None, None, charged
        if msg is not None and msg["type"] == "partial" and content is not None and part_shape_ok(content):
            if self.parts.run_id != run_id:
                self.parts = PartsSent(run_id)
            if content["part"] not in self.parts.names:
                return None, self.relay_part(content["part"], line), charged
        charged += len(line)  # anything else it writes there counts as output; a line not of this run, or a part
        # already sent or malformed, is dropped
        if charged > output_limit:
            return None, RunError("limit", f"the run printed more than {output_limit // 1024} KB; it was stopped"), charged
        if content is None:
            return None, None, charged
        if msg["type"] == "sanitized":
            self.send(protocol.message("sanitized", run_id))
        elif msg["type"] == "launched" and launched is not None and isinstance(content.get("launch"), dict):
            launched(content["launch"])
        elif msg["type"] == "timed" and results.timed_ok(content):
            self.send(protocol.message("timed", run_id, key=content["key"], reference_ms=content["reference_ms"]))
        elif status_shape_ok(content):
            self.step = content["message"][:1000]
            self.send(protocol.message("status", run_id, phase=content["phase"], message=self.step))
        return None, None, charged

    def relay_part(self, part, line):
        """Pass on a part of the result as the run encoded it; the error of a run whose parts
        outgrow what its whole result may be, else None."""
        self.parts.bytes += len(line)
        if self.parts.bytes > protocol.MAX_LINE_BYTES:
            return RunError("limit", f"the run's result grew past {protocol.MAX_LINE_BYTES // (1 << 20)} MB; it was stopped")
        self.parts.names.add(part)
        self.send_line(line + b"\n")
        return None

    def run(self, msg):
        """Run one job and send its result; `preempted` instead if the server asks for its worker back."""
        self.taken = []  # the run processes this job took: its run's, its checker's
        try:
            self.run_job(msg)
        except Preempted:
            return self.set_aside(msg["run_id"])
        self.catch_up()

    def run_job(self, msg):
        from sandbox.worker.run_process import describe_exit
        run_id = msg["run_id"]
        try:
            job = protocol.Job.read(msg["content"])
        except protocol.JobError as e:
            self.send(protocol.message("result", run_id, result=results.failed(RunError(
                "sandbox", f"the worker was sent a job it cannot read ({e}); nothing ran"))))
            return
        self.yielding = job.yields
        timeout_s, output_limit = self.settings.timeout_s, self.settings.output_limit
        # What is kept for the owner's later runs, if this is the owner's own code (else None: nothing).
        store = protocol.kept_for(job.owner, job.provenance)
        # A graded run: the puzzle's tests (the server's) go to the grader, never to the student's process.
        grading = job.grading
        script = isinstance(job.spec, dict) and is_script(job.spec)
        self.parts = PartsSent(run_id, graded=grading is not None or script)  # a script has no check
        sanitized = job.sanitized_before
        with contextlib.suppress(KeyError, TypeError, AttributeError):  # a malformed spec: the run says so
            sanitized = sanitized or self.warming.sanitized(job.spec)
        # A person's run of a gallery example as shipped is lent the reference timing of its warm-up.
        references = {**self.warming.reference_times(job.spec), **job.reference_times}
        deadline = time.monotonic() + timeout_s  # waiting for its compile ahead is part of the run's time
        # Its compile ahead, if under way here, ends first; the server says if one ended on another worker.
        done_here = store is not None and self.ahead.before_run(store, job.spec, AHEAD_WAIT_S)
        job = job.replace(grading=None, sanitized_before=sanitized, reference_times=references,
                          peak_gbps=self.warming.peak_gbps,
                          compiled_ahead=store is not None and (done_here or job.compiled_ahead))
        job, listing = self.replay_or_run(run_id, job, store) if script else (job, None)
        if listing is not None and (shown := self.ahead.follow_shown(store, job.spec, AHEAD_WAIT_S,
                                                                      functools.partial(self.send_part, run_id))):
            return self.show_replayed_ahead(run_id, job.spec, listing, shown)
        launched = (self.checks_as_launched(store, job.spec["source"]) if script and store is not None
                    and listing is None and isinstance(job.spec.get("source"), str) else None)
        self.ahead.before_job()  # on a GPU, a replay ahead's launches never share it with a run's
        run = self.start_job(job, store, run_id)
        decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        charged = 0  # bytes of output and status messages: both count against the output limit
        result = error = None
        died = False
        self.finished = self.step = None
        while result is None and error is None and not died:
            if self.finished is not None:  # the program has ended: its steps have a bound of their own
                deadline = self.finished[1] + self.settings.script_steps_s
            kind, data = run.next_message(deadline, self.input.listener(run_id), self.checks_ahead)
            if kind == "out":
                charged += len(data)
                if charged > output_limit:
                    error = RunError("limit", f"the run printed more than {output_limit // 1024} KB; it was stopped")
                else:
                    self.send(protocol.message("stdout", run_id, text=decoder.decode(data)))
            elif kind == "msg":
                result, error, charged = self.relay(run_id, data, charged, output_limit, script, launched)
            elif kind == "timeout" and self.finished is not None:
                result = self.steps_cut_short(run_id)
            elif kind == "timeout" and run.cgroup and run.cgroup.reached_memory_limit():
                error = RunError("limit", f"the run used all of its {self.settings.limits.memory_mb} MB of memory "
                                          f"(all its processes together) and stalled; it was stopped after {timeout_s:g} s")
            elif kind == "timeout":
                error = RunError("timeout", f"the run took longer than {timeout_s:g} s and was stopped. "
                                            f"Look for an endless loop (a while loop whose condition never changes, "
                                            f"or a huge grid).")
            else:
                died = True
        if not died and error is None and run.cgroup and run.cgroup.out_of_memory():
            error = RunError("limit", f"a process of the run used more than the run's {self.settings.limits.memory_mb} MB "
                                      f"of memory (all its processes together) and was killed")
        if died:
            status, out_of_memory = run.finish(self.kernel_caches, grace_s=2.0)  # its init reports how it ended
            if out_of_memory:
                error = RunError("limit", f"the run used more than {self.settings.limits.memory_mb} MB of memory "
                                          f"(all its processes together) and was stopped")
            else:
                error = RunError("sandbox", f"the run's process {describe_exit(status)}. The server is fine; "
                                            f"only this run was lost.")
        if not died:  # collected below, after the reply: the owner's next run waits for it
            run.hold_kernel_cache(self.kernel_caches)
        if grading is not None and error is None:
            run.finish(self.kernel_caches)  # nothing of the student's runs while the grader does
            result, error = self.grade(run_id, result, grading, job.spec, deadline)
        if script and error is None:
            msg = protocol.decode(result.rstrip(b"\n"), protocol.RUN_TYPES)  # its shape was checked as it came (relay)
            replay = FOREIGN_REPLAY if store is None else None

            def collect(scratch):  # the launch inputs of a program's run (a replay's were kept already)
                nonlocal replay
                replay = self.kept_launches.collect(store, scratch, job.spec, msg["content"]["result"])

            # nothing of the program runs while the server checks its launch
            run.finish(self.kernel_caches, collect=collect if store is not None and listing is None else None)
            result = self.checked_script(run_id, msg, job.spec, listing, replay)
        if error is not None:
            self.send(protocol.message("result", run_id, result=results.failed(error)))
        else:
            self.send_line(result)
        if script and error is None and store is not None and listing is None:
            self.compile_kept_launches(store, job.spec, msg["content"]["result"])
        # After the reply, off the critical path: fork the next run process, whose warm-up (CUDA init
        # ~0.25 s) then happens while the user reads the result (forked during the run, its CUDA init
        # slowed the run's own first launch by ~0.1 s), then reap this one (a CUDA context's teardown
        # takes a while).
        self.spares.append(self.new_run_process())
        if not died and grading is None and not (script and error is None):
            run.finish(self.kernel_caches)

    def grade(self, run_id, line, grading, spec, deadline):
        """The graded result: the student's run (`line`) with the verdict of a grader, a fresh run
        process given the source as the server sent it (`spec`, this worker's own copy: the kept
        text, never anything the student's run said) and the puzzle's tests. Returns (the result
        line, None) or (None, the error of a grader that timed out)."""
        msg = protocol.decode(line.rstrip(b"\n"), protocol.RUN_TYPES)
        shown = msg["content"]["result"]  # its shape was checked as it came (relay)
        options = spec.get("options") or {}
        job = {"puzzle": grading["puzzle"], "tests": grading["tests"], "expected": grading.get("expected"),
               "source": spec.get("source"), "kernel": spec.get("kernel"),
               "launch": {"num_warps": options.get("num_warps", 4), "num_stages": options.get("num_stages", 3)}}
        outcome, error = self.run_grader(run_id, job, deadline)
        if error is not None and error.phase == "timeout":
            return None, error
        if error is not None:
            outcome = failed_grading(grading, error)
        return protocol.encode(protocol.message("result", run_id, result=graded_result(
            shown, outcome, grading.get("expected"))), nan_to_null=True), None

    def run_grader(self, run_id, job, deadline):
        """(the grader's verdict, None) or (None, why there is none)."""
        outcome, error = self.run_checker(run_id, "grade", job, grader_outcome_ok, deadline)
        if error is not None and error.phase == "timeout":
            error.message = (f"grading took the run past {self.settings.timeout_s:g} s and was stopped. "
                             f"Look for an endless loop, or a launch far bigger than the puzzle's tests.")
        return outcome, error

    def run_checker(self, run_id, kind, job, shape_ok, deadline):
        """(the outcome, None) or (None, why there is none) of a fresh run process given `job` as its
        `kind` ("grade", "recheck"): a check made where no user code has run. What it prints is
        dropped; its status messages are relayed."""
        from sandbox.worker.run_process import describe_exit
        checker = self.take_warm_run_process(run_id)
        checker.owner = None  # lent no kernels, keeps none
        outcome = error = None
        try:
            checker.send_job(protocol.Job(**{kind: job}).message(run_id))
        except OSError:
            pass  # it died meanwhile: the loop below says so
        while outcome is None and error is None:
            kind_of, data = checker.next_message(deadline, self.input.listener(run_id))
            if kind_of == "msg":
                msg = protocol.decode(data, protocol.RUN_TYPES)
                content = msg["content"] if msg is not None and msg["run_id"] == run_id else {}
                if msg is not None and msg["type"] == "result" and shape_ok(content):
                    outcome = content[kind]
                elif msg is not None and msg["type"] == "status" and status_shape_ok(content):
                    self.send(protocol.message("status", run_id, phase=content["phase"], message=content["message"][:1000]))
            elif kind_of == "timeout":
                error = RunError("timeout", "it took longer than the time left to it and was stopped")
            elif kind_of == "eof":
                status, _ = checker.finish(self.kernel_caches, grace_s=2.0)
                error = RunError("launch", f"the checking process {describe_exit(status)} while running the kernel")
        checker.finish(self.kernel_caches)
        self.spares.append(self.new_run_process())
        return outcome, error


def main():
    # Before any thread exists (importing torch starts one): a mount namespace of the worker's own.
    can_mount = isolation.prepare_worker()
    # The protocol keeps the real stdout; anything else printed in this process goes to stderr.
    channel = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)
    worker = None
    try:
        worker = Worker(channel, *prepare(can_mount))
        ready = worker.start()
    except Exception as e:  # the server reports why (its /healthz) and tries again later
        traceback.print_exc()
        why = str(e) if isinstance(e, StartError) else f"{type(e).__name__}: {e}"
        channel.write(protocol.encode(protocol.message("unstarted", error=why[:1000])))
        channel.flush()
        if worker is not None:
            worker.zygote.stop()
        sys.exit(1)
    import triton  # imported already (prepare): from its directory where the worker runs an added version
    worker.send(protocol.message("ready", device=ready["device"], isolation=ready["isolation"], pid=os.getpid(),
                                 triton=triton.__version__))
    worker.serve()
    for run in [*worker.ended, *worker.spares]:  # stdin closed: the server stopped this worker
        run.finish(worker.kernel_caches)
    worker.zygote.stop()


def prepare(can_mount):
    """This process made warm, its directories made and swept: a Worker's settings, kernel caches and
    shared kernels."""
    # Fork-safety: torch asks NVML, not the CUDA driver, whether there is a GPU, so this process
    # never initialises CUDA (a CUDA context does not survive fork); and numpy's OpenBLAS starts no
    # thread pool (a thread per core, from the import on): this process stays single-threaded, so no
    # lock can be held by another thread when it forks a run process (a test checks it).
    os.environ.setdefault("PYTORCH_NVML_BASED_CUDA_CHECK", "1")
    os.environ["OPENBLAS_NUM_THREADS"] = "1"
    # This process's own Triton cache (the launcher utilities it builds before any fork), hidden
    # from runs: they compile into their scratch dirs, and their kernels are kept per owner.
    # One per Triton version: a worker of another version never loads what this one built.
    cache = os.environ.setdefault("TRITON_CACHE_DIR", os.path.join(tempfile.gettempdir(),
                                                                   f"playground-worker-cache-{tritons.default_version()}"))
    os.makedirs(cache, mode=0o700, exist_ok=True)
    with contextlib.suppress(PermissionError):
        os.chmod(cache, 0o700)
    import torch  # noqa: F401  (the warm import: the reason this process exists)
    import triton
    from sandbox.worker.kernel_cache import KernelCaches
    from sandbox.worker.run_process import Settings, sweep_scratch_dirs
    from sandbox.worker.shared_kernels import SharedKernels

    # Not torch.cuda.is_available(): even NVML's answer starts a thread in this process.
    settings = Settings.from_environment(can_mount, isolation.has_gpu())
    if not settings.has_gpu:
        os.environ["TRITON_INTERPRET"] = "1"
        triton.knobs.runtime.interpret = True
    os.makedirs(settings.run_root, mode=0o711, exist_ok=True)
    os.makedirs(settings.root_mountpoint, mode=0o755, exist_ok=True)
    warm_compiler(settings.has_gpu)
    sweep_scratch_dirs(settings.run_root)
    cgroups.sweep_cgroups(lambda pid: not os.path.exists(f"/proc/{pid}"))
    shared = SharedKernels(settings.shared_kernels) if settings.shared_kernels else None
    return settings, KernelCaches(tritons.kept_dir(settings.run_root, "kernel-caches", triton.__version__)), shared
