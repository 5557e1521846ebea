"""The server's checks of a script's launches, made while its program runs and its person reads.

A click on another launch of a script shows it with the server's own check of that launch
(sandbox.grading.recheck): a fresh run process, where none of the program runs, launches the kernel
in the interpreter with the bounds check, on inputs made from the launch's record. For a big launch
that is seconds. As a program of its owner's own runs, its worker makes those checks of the launches
it makes (each said, `launched`, as the program is about to make it), and after the run of the kept
launches not checked yet, one after the other, each in a run process of the checker's kind at idle
CPU priority (on a host of few cores it takes what the program leaves idle: the interpreter runs
one thread), and keeps each verdict on the host's disk under its source and record
(CheckedLaunches): the click, on whichever worker of the host it lands, finds it made, or waits for
the one under way. A verdict depends on nothing else (the inputs are made from the record, from its
seed), so it is the host's, as a worker's own memory of checks is.
"""
import collections
import contextlib
import hashlib
import json
import os
import select
import time

from sandbox import protocol
from sandbox.protocol import RECHECK_BUDGET_S
from sandbox.worker.verdicts import recheck_ok

KEPT = 1024  # verdicts kept on the host, the least recently made dropped first
WAITING = 16  # checks waiting on one worker: a newer program's run replaces its owner's
OUTCOME = ("ms", "bounds")  # a record's fields the program's launch filled in: not what the check depends on


def check_key(source, launch):
    """The check's identity: the program and its launch as recorded before it ran."""
    if isinstance(launch, dict):
        launch = {k: v for k, v in launch.items() if k not in OUTCOME}
    return hashlib.sha256(json.dumps([source, launch], sort_keys=True, default=str).encode()).hexdigest()


class CheckedLaunches:
    """The host's verdicts, one file each under its check key, and which worker makes which now."""

    def __init__(self, root):
        self.root = root
        os.makedirs(root, mode=0o700, exist_ok=True)

    def path(self, key, kind="json"):
        return os.path.join(self.root, f"{key}.{kind}")

    def get(self, key):
        with contextlib.suppress(OSError, ValueError):
            with open(self.path(key)) as f:
                return json.load(f)
        return None

    def keep(self, key, verdict):
        partial = self.path(key, f"partial-{os.getpid()}")
        with open(partial, "w") as f:
            json.dump(verdict, f)
        os.rename(partial, self.path(key))
        kept = sorted((entry for entry in os.scandir(self.root) if entry.name.endswith(".json")),
                      key=lambda entry: entry.stat().st_mtime)
        for entry in kept[:max(0, len(kept) - KEPT)]:
            with contextlib.suppress(OSError):
                os.unlink(entry.path)

    def mark(self, key, making):
        """Say (or stop saying) that this worker makes the check `key` now."""
        with contextlib.suppress(OSError):
            if making:
                with open(self.path(key, "making"), "w") as f:
                    f.write(str(os.getpid()))
            else:
                os.unlink(self.path(key, "making"))

    def maker(self, key):
        """The pid of the live worker making the check `key` now, or None."""
        try:
            with open(self.path(key, "making")) as f:
                pid = int(f.read())
            os.kill(pid, 0)  # a worker that died left it
        except (OSError, ValueError):
            return None
        return pid


class Check:
    def __init__(self, key, job, run):
        self.key, self.job, self.run = key, job, run
        self.sent, self.deadline = False, time.monotonic() + RECHECK_BUDGET_S + 120  # its warm-up, then its budget


class ChecksAhead:
    """A worker's checks ahead. The worker calls `request` as a program runs and after its run, `step`
    when idle or waiting on a run (with the readable descriptors of `fds()`), and `verdict` when a
    click needs one."""

    def __init__(self, new_run_process, checked, kernel_caches, room):
        """`room()`: whether another process ahead fits beside the worker's compiles ahead
        (sandbox.protocol.MAX_COMPILES_AHEAD, which counts both)."""
        self.new_run_process, self.checked, self.kernel_caches, self.room = new_run_process, checked, kernel_caches, room
        self.waiting = collections.OrderedDict()  # check key -> (owner, the recheck job)
        self.under_way = None  # a Check

    def request(self, owner, source, records, replacing=True):
        """Check the launches `records` of the program `source`, in their order, those not checked yet;
        `replacing`: in place of the owner's checks waiting (a newer program's), else after them."""
        for key in [key for key, (whose, _) in self.waiting.items() if whose == owner and replacing]:
            del self.waiting[key]
        for record in records:
            key = check_key(source, record)
            if self.checked.get(key) is None and (self.under_way is None or self.under_way.key != key):
                self.waiting[key] = (owner, {"source": source, "launch": record})
        while len(self.waiting) > WAITING:
            self.waiting.popitem(last=False)
        self.start_next()

    def start_next(self):
        if self.under_way is None and self.waiting and self.room():
            key, (_, job) = self.waiting.popitem(last=False)
            self.under_way = Check(key, job, self.new_run_process())
            self.checked.mark(key, True)

    def fds(self):
        return self.under_way.run.watched() if self.under_way is not None else []

    def poll_s(self):
        return max(0.0, self.under_way.deadline - time.monotonic()) if self.under_way is not None else None

    def step(self, readable):
        check = self.under_way
        if check is None:
            return self.start_next()  # a compile ahead may have made room
        if time.monotonic() > check.deadline or (not check.sent and check.run.wait() is not None):
            return self.end()
        if not check.sent:
            if check.run.poll_ready():
                with contextlib.suppress(OSError):
                    check.run.send_job(protocol.Job(recheck=check.job).message("check-ahead"))
                check.sent, check.deadline = True, time.monotonic() + RECHECK_BUDGET_S
            return
        if not any(fd in readable for fd in check.run.watched()):
            return
        for _ in range(64):  # a flood of output holds the worker this many reads at most; what it prints is dropped
            kind, data = check.run.poll_message()
            if kind == "none":
                return
            msg = protocol.decode(data, protocol.RUN_TYPES) if kind == "msg" else None
            if kind == "eof" or (msg is not None and msg["type"] == "result"):
                content = msg["content"] if msg is not None and msg["run_id"] == "check-ahead" else {}
                if recheck_ok(content):
                    with contextlib.suppress(OSError):
                        self.checked.keep(check.key, content["recheck"])
                return self.end()

    def end(self):
        check, self.under_way = self.under_way, None
        self.checked.mark(check.key, False)
        check.run.finish(self.kernel_caches)
        self.start_next()

    def stop(self):
        self.waiting.clear()
        if self.under_way is not None:
            self.end()

    def verdict(self, key, wait_s):
        """The host's verdict of check `key`: kept, or waited for (up to `wait_s`) while this worker or
        another makes it; None where no one does."""
        deadline = time.monotonic() + wait_s
        while time.monotonic() < deadline:
            if self.under_way is not None and self.under_way.key == key:
                fds = self.fds()
                self.step(select.select(fds, [], [], max(0.0, min(deadline - time.monotonic(), 0.5)))[0])
            elif self.checked.maker(key) not in (None, os.getpid()):
                time.sleep(0.05)
            else:
                break
        return self.checked.get(key)
