"""Compile ahead: what a person types, compiled before they press Run.

The server sends `compile` (a sandbox.protocol.Job: spec, owner, provenance; the page asks ~400 ms
after the last keystroke). The worker compiles it in a run process of its own, jailed as any run, at
idle CPU priority (a run never waits for one), lent the owner's kernels and collecting what it
compiles back into them; it answers
`compiled` {result} (ok, or the compile's error at its line, for the editor to mark). The owner's
next run of the same spec (equal sandbox.spec.compile_key) finds everything built, and says so.

Bounded: one compile per owner (a newer request replaces it, and a run of another spec ends it: it
is stale), protocol.MAX_COMPILES_AHEAD at once per worker, a request that waited past STALE_S dropped. What
the compiles of one worker keep on the host's disk is bounded in rate too (COMPILE_KEEP_MB_PER_S,
after a burst of four times as much): a client compiling ahead as fast as it may cannot churn the kernel caches'
directory faster; a compile past it is answered as any, and its run compiles what was not kept.
Only the owner's own code is compiled ahead (sandbox.protocol.kept_for): nothing else's could be kept.

A script's program is never run to compile it. After a run of it, the worker replays the launches
kept of it (sandbox.worker.kept_launches) but the one shown, whole, as their selections would
(`request_launches`; no request of the server's, no answer to it), and keeps each one's result
(`shown`): a click on another launch shows that replay's result. A click that finds its launch's
replay under way, or due soon (KeptLaunches.due), follows that one (its parts as they are kept, then
its result) and ends the rest (one due later, its click replays sooner). Any other run of the
owner's ends it, keeping what it compiled by then.

On a GPU host a replay ahead launches kernels and times them, so it has the GPU to itself: one at a
time per worker (another owner's waits), and any run the worker takes ends it first (`before_job`):
a run's timing never shares its GPU with one, and a replay's never with a run. There each launch is
compiled first, then each replayed whole (sandbox.run.replay.replay_ahead), and a click follows
only a replay that has begun (`worth_following`).
"""
import collections
import contextlib
import copy
import hashlib
import json
import os
import select
import time

from sandbox import protocol, settings
from sandbox import result as results
from sandbox.errors import RunError
from sandbox.spec import FIELDS, SpecError, compile_key, normalize
from sandbox.worker.kernel_cache import WriteBudget

STALE_S = 10.0  # a request not started by then: the person has typed on, or run it
READY_S = 120  # a run process's warm-up (CUDA init on a loaded host)
READS_PER_STEP = 64  # messages or pieces of output taken from one compile before the worker looks elsewhere
FINISHED_KEPT = 1024  # owners whose last finished compile is remembered
LAUNCHES_AHEAD = 8  # a script's kept launches compiled after its run, at most
# What one worker's compiles ahead may write into the kernel caches: a person's compile keeps a few
# hundred KB (the gallery's kernels on the CPU host: 0.1-0.4 MB an entry).
KEEP_BYTES_PER_S = settings.value("COMPILE_KEEP_MB_PER_S") << 20
KEEP_BURST_S = 4  # the burst: this many seconds of the rate


class Request(collections.namedtuple("Request", "compile_id spec key came launches")):
    """A compile waiting for a run process: the request's id, the spec and its compile key, when it
    came (time.monotonic()), and for a script's kept launches their records (else None)."""


class Compile:
    """One compile under way: its run process, the request's id and the spec's compile key; for a
    script's kept launches, their records."""

    def __init__(self, run, compile_id, spec, key, deadline, launches=None):
        self.run, self.compile_id, self.spec, self.key, self.deadline = run, compile_id, spec, key, deadline
        self.launches = launches
        self.view = view_key(spec) if launches is not None else None  # what a click on one of them must show
        self.sent = False  # its job, once it is warm


def key_of(spec):
    """The spec's compile key; a job's spec may carry what the server adds beside it (its reference
    timings, a puzzle's tests), which is not the spec's."""
    try:
        return compile_key(normalize(copy.deepcopy({k: v for k, v in spec.items() if k in FIELDS})))
    except (SpecError, TypeError, ValueError, KeyError, AttributeError):
        return None  # a malformed spec: its compile says why, and no run finds it


def view_key(spec):
    """What a click's result depends on beside the launch it shows: the program and its other options."""
    try:
        spec = normalize(copy.deepcopy({k: v for k, v in spec.items() if k in FIELDS}))
    except (SpecError, TypeError, ValueError, KeyError, AttributeError):
        return None
    spec["options"].pop("launch", None)
    return hashlib.sha256(json.dumps(spec, sort_keys=True, default=str).encode()).hexdigest()


def launch_of(spec):
    options = spec.get("options") if isinstance(spec, dict) else None
    index = options.get("launch") if isinstance(options, dict) else None
    return index if type(index) is int else None


def error_fields(error):
    """What the editor shows of a compile's error (it came from the run process: taken field by field)."""
    if not isinstance(error, dict):
        return None
    text = lambda name: str(error[name])[:2000] if isinstance(error.get(name), str) else None  # noqa: E731
    line = error.get("line")
    return {"phase": text("phase") or "compile", "type": text("type"), "message": text("message") or "",
            "hint": text("hint"), "line": line if isinstance(line, int) and not isinstance(line, bool) else None}


class CompileAhead:
    """A worker's compiles ahead. The worker calls `request` for each `compile` message, `step` when
    it is idle (with the readable descriptors of `fds()`), and `before_run` before each job."""

    def __init__(self, settings, run_process, kernel_caches, send, kept_launches):
        """`run_process()`: a run process for a compile (sandbox.worker: a warm spare, if one can be spared)."""
        self.settings, self.run_process, self.kernel_caches, self.send = settings, run_process, kernel_caches, send
        self.kept_launches = kept_launches
        self.budget = WriteBudget(KEEP_BYTES_PER_S, KEEP_BURST_S * KEEP_BYTES_PER_S)  # all its compiles' share of the disk
        self.running = {}  # owner -> Compile
        self.waiting = collections.OrderedDict()  # owner -> Request
        self.finished = collections.OrderedDict()  # owner -> compile key of its last compile that finished ok
        self.others = lambda: 0  # the worker's other processes ahead (its check ahead), which share MAX_COMPILES_AHEAD

    # -- what the worker asks

    def request(self, msg):
        # Compiled into the owner's kernels: only the owner's own code (the server sends no other).
        try:
            job = protocol.Job.read(msg["content"])
        except protocol.JobError:
            return  # not one: a compile ahead is only ever worth doing, never owed
        owner, spec = protocol.kept_for(job.owner, job.provenance), job.spec
        if owner is None or not isinstance(spec, dict):
            return
        self.end(owner)  # a newer request: the older compile is stale
        self.waiting.pop(owner, None)
        self.waiting[owner] = Request(msg["run_id"], spec, key_of(spec), time.monotonic(), None)
        self.start_waiting()

    def request_launches(self, owner, spec, records):
        """Compile a script's kept launches (`records`, LAUNCHES_AHEAD at most) as their selections
        would: after the run of `spec` that listed them, while the person reads its result."""
        if records:
            self.end(owner)
            self.waiting.pop(owner, None)
            self.waiting[owner] = Request("kept-launches", spec, None, time.monotonic(), records[:LAUNCHES_AHEAD])
            self.start_waiting()

    def before_run(self, owner, spec, wait_s):
        """Before `owner`'s run of `spec`: wait (up to `wait_s`) for its compile of the same spec to
        finish, or end one of another spec (stale: it would only slow the run down). Returns whether a
        compile of this very spec finished into the owner's kernels."""
        key = key_of(spec)
        waiting = self.waiting.get(owner)
        if waiting is not None and (waiting.key != key or waiting.launches is not None):
            del self.waiting[owner]
        if self.showing(owner, spec):  # a click on a launch whose replay is under way follows it (follow_shown)
            return False
        under_way = self.running.get(owner)
        if under_way is not None and (under_way.launches is not None or under_way.key != key):
            self.end(owner)
        self.wait(lambda: owner not in self.running, wait_s)
        return key is not None and self.finished.get(owner) == key

    def before_job(self):
        """Before the worker starts a run process on a job (after `before_run` and `follow_shown`): on a
        GPU host, end the replays ahead under way. What they kept stays; a click on a launch they had
        not reached replays it itself."""
        if self.settings.has_gpu:
            for owner in self.replaying():
                self.end(owner)

    def wait(self, done, wait_s):
        deadline = time.monotonic() + wait_s
        while not done() and time.monotonic() < deadline:
            fds = self.fds()
            self.step(select.select(fds, [], [], max(0.0, min(deadline - time.monotonic(), self.poll_s() or 1)))[0])

    def showing(self, owner, spec):
        """Is the replay of the launch `spec` shows, of this very program, under way here now, or due soon
        (KeptLaunches.due)? (One due later is replayed sooner by its click.)"""
        under_way, index = self.running.get(owner), launch_of(spec)
        if under_way is None or under_way.launches is None or index is None:
            return False
        view = view_key(spec)
        return (under_way.view == view and self.kept_launches.due(owner, [r["index"] for r in under_way.launches], index)
                and self.worth_following(owner, view, index))

    def worth_following(self, owner, view, index):
        """On a GPU, where the replays ahead first compile every launch and a launch's replay is mostly
        compiling, a click follows its launch's replay once that has begun (a part kept); before, it replays
        the launch itself, finding the compiles made by then."""
        return not self.settings.has_gpu or bool(self.kept_launches.shown_parts(owner, view, index))

    def shown_result(self, owner, spec):
        """The result of the owner's click `spec` (a script's, with options.launch) as its launch's replay
        ahead made it, on any worker of the host, or None."""
        return self.kept_launches.shown(owner, view_key(spec), launch_of(spec))

    def follow_shown(self, owner, spec, wait_s, send_part):
        """The click's result as its launch's replay ahead makes it, here or on another worker of the
        host: each part handed to `send_part(part, content)` as it is kept, the result waited for while
        the replay goes on (up to `wait_s`), or None. The owner's other replays ahead here end then."""
        view, index, deadline, sent = view_key(spec), launch_of(spec), time.monotonic() + wait_s, set()
        while True:
            for part, content in self.kept_launches.shown_parts(owner, view, index):
                if part not in sent:
                    sent.add(part)
                    send_part(part, content)
            here = self.showing(owner, spec)
            elsewhere = (not here and self.kept_launches.showing_worker(owner, view, index) not in (None, os.getpid())
                         and self.worth_following(owner, view, index))
            if not (here or elsewhere) or time.monotonic() > deadline:
                break
            if here:
                self.step(select.select(self.fds(), [], [], 0.05)[0])
            else:
                time.sleep(0.05)
        under_way = self.running.get(owner)
        if under_way is not None and under_way.launches is not None:
            self.end(owner)  # the click's run comes first
        return self.shown_result(owner, spec)  # made, or not to be made: its replay is done with it

    def fds(self):
        return [fd for c in self.running.values() for fd in c.run.watched()]

    def poll_s(self):
        if not self.running:
            return None
        return max(0.0, min(c.deadline for c in self.running.values()) - time.monotonic())

    def step(self, readable):
        for owner, under_way in list(self.running.items()):
            run = under_way.run
            if time.monotonic() > under_way.deadline:
                self.answer(under_way, results.failed(RunError(
                    "timeout", f"compiling took longer than {self.settings.timeout_s:g} s; a run would time out too")))
                self.end(owner)
            elif not under_way.sent:
                if run.poll_ready():
                    self.give_job(owner, under_way)
                elif run.wait() is not None:
                    self.end(owner)
            elif any(fd in readable for fd in (run.msg_r, run.out_r)):
                self.read(owner, under_way)
        self.start_waiting()

    def stop(self):
        for owner in list(self.running):
            self.end(owner)

    # -- the compiles

    def start_waiting(self):
        for owner, request in list(self.waiting.items()):
            if len(self.running) + self.others() >= protocol.MAX_COMPILES_AHEAD:
                break
            if request.launches is not None and self.replaying_on_gpu():
                continue  # the GPU's one replay ahead at a time: its request waits (or goes stale)
            del self.waiting[owner]
            if time.monotonic() - request.came > STALE_S:
                continue
            run = self.run_process()
            run.owner, run.keep_kernels, run.collect_budget = owner, True, self.budget
            self.running[owner] = Compile(run, request.compile_id, request.spec, request.key,
                                          time.monotonic() + READY_S, request.launches)
            if run.poll_ready():  # a warm spare
                self.give_job(owner, self.running[owner])

    def replaying(self):
        """The owners whose kept launches are replayed ahead here now."""
        return [owner for owner, under_way in self.running.items() if under_way.launches is not None]

    def replaying_on_gpu(self):
        return self.settings.has_gpu and bool(self.replaying())

    def give_job(self, owner, under_way):
        from sandbox.worker.run_process import kernel_cache_of
        run = under_way.run
        if run.cgroup:  # a warm spare, made as a run's: from now on the CPU goes to runs first
            run.cgroup.make_idle()
        with contextlib.suppress(OSError):  # at worst it compiles what the owner has
            self.kernel_caches.lend(owner, kernel_cache_of(run.scratch.path), seen_as=run.ready.get("cache_dir"))
        launches = None
        if under_way.launches is not None:
            launches = {"launches": under_way.launches}
            try:
                for record in under_way.launches:
                    self.kept_launches.lend(owner, record, run.scratch.path)
            except OSError:  # dropped meanwhile (a newer program's run): nothing to compile
                return self.end(owner)
        try:
            run.send_job(protocol.Job(spec=under_way.spec, owner=owner, provenance=protocol.OWN,
                                      compile_ahead=True, replay=launches).message(under_way.compile_id))
        except OSError:
            return self.end(owner)
        if launches is not None:
            self.kept_launches.mark_showing(owner, under_way.view, [r["index"] for r in under_way.launches])
        under_way.sent, under_way.deadline = True, time.monotonic() + self.settings.timeout_s

    def read(self, owner, under_way):
        """Take what its run process sent (its output is dropped); answer and end it on its result."""
        run = under_way.run
        for _ in range(READS_PER_STEP):  # a flood of output holds the worker this many reads at most
            kind, data = run.poll_message()  # never waits: a line left unfinished waits for the next step
            if kind == "none":
                return None
            if kind == "eof":
                return self.end(owner)
            msg = protocol.decode(data, protocol.RUN_TYPES) if kind == "msg" else None
            if msg is not None and msg["type"] == "shown" and msg["run_id"] == under_way.compile_id:
                self.keep_shown(owner, under_way, msg["content"])
            if msg is not None and msg["type"] == "result" and msg["run_id"] == under_way.compile_id:
                result = msg["content"].get("result")
                if under_way.launches is not None:  # the worker's own: no one to answer
                    return self.end(owner)
                if isinstance(result, dict) and result.get("status") == "ok" and under_way.key is not None:
                    self.finished.pop(owner, None)
                    self.finished[owner] = under_way.key
                    while len(self.finished) > FINISHED_KEPT:
                        self.finished.popitem(last=False)
                self.end(owner, keep=True)  # collected before the answer: a run that follows it finds it all
                return self.answer(under_way, result if isinstance(result, dict) else {})

    def keep_shown(self, owner, under_way, content):
        """A launch's replay made ahead (the run process's word, as a click's replay would be): kept with
        the owner's launches if it is one of those asked for and has a result's shape."""
        index, result, part = content.get("launch"), content.get("result"), content.get("part")
        if under_way.launches is None or type(index) is not int or index not in {r["index"] for r in under_way.launches}:
            return
        if part in results.PARTS and part != "check" and not results.part_problems(part, content.get("content")):
            made = {"part": part, "content": content["content"]}  # a part as soon as it is ready, for a click under way
        elif isinstance(result, dict) and not results.problems_at_top(result):
            made = {"result": result}
        else:
            return
        with contextlib.suppress(OSError, ValueError):  # dropped meanwhile, or too big: its click replays it
            self.kept_launches.keep_shown(owner, under_way.spec, under_way.view, index, **made)

    def answer(self, under_way, result):
        """The server's answer: whether it compiled, and the error a run would meet (for the editor)."""
        if under_way.launches is not None:
            return  # the worker's own compile of a script's launches: the server asked for nothing
        error = result.get("error") if result.get("status") == "error" else None
        self.send(protocol.message("compiled", under_way.compile_id, ok=error is None, error=error_fields(error)))

    def end(self, owner, keep=False):
        """End the owner's compile; `keep`: it finished, collect what it compiled into the owner's kernels.
        A script's launches keep what they compiled by then, finished or not: each serves its selection."""
        under_way = self.running.pop(owner, None)
        if under_way is not None and under_way.launches is not None:
            self.kept_launches.unmark_showing(owner)
        if under_way is not None:
            under_way.run.keep_kernels = keep or under_way.launches is not None
            under_way.run.finish(self.kernel_caches)
