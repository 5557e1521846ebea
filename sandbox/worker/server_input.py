"""What the server sends a worker (sandbox.protocol's lines on its stdin), read between jobs, and
also while a run goes on: the server may ask for the worker back (`preempt`) to end the run under
way, its own work, for a person's run. Every other line that comes during a run waits for its end.
"""
import os
import select
import time

from sandbox import protocol


class Preempted(Exception):
    """The server asked to end the run under way (`preempt`): its worker is wanted for a person's run."""


class ServerInput:
    def __init__(self, fd=0):
        self.fd, self.open = fd, True
        self.pending = b""  # read and not handled yet
        self.preempt_next = None  # a `preempt` that came while no run went on: it may overtake its job

    def read(self):
        data = os.read(self.fd, 1 << 20)
        self.pending += data
        self.open = bool(data)

    def next_line(self):
        """The next whole line read, or None."""
        if b"\n" not in self.pending:
            return None
        line, self.pending = self.pending.split(b"\n", 1)
        return line

    def listener(self, run_id):
        """What a wait on run `run_id` listens to beside it (RunProcess.next_message): the server's
        input, read as it comes; None once the server closed it."""
        return (self.fd, lambda: self.check(run_id, readable=True)) if self.open else None

    def preempt_later(self, run_id):
        self.preempt_next = run_id

    def check(self, run_id, readable=False):
        """Read what is there if `readable`; raise Preempted if the server asked to end run `run_id`.
        A `preempt` of another run is dropped; every other line is kept for after the run."""
        if readable:
            self.read()
        preempted = self.preempt_next == run_id
        if preempted:
            self.preempt_next = None  # the run may come again, from the queue, and run then
        kept = []
        *lines, rest = self.pending.split(b"\n")
        for line in lines:
            msg = protocol.decode(line, ("preempt",))
            if msg is None:
                kept.append(line + b"\n")
            preempted = preempted or (msg is not None and msg["run_id"] == run_id)
        self.pending = b"".join(kept) + rest
        if preempted:
            raise Preempted()

    def wait_warm(self, run, run_id, timeout_s):
        """Until the run process `run` is warm (or has ended, or `timeout_s` passed), raising
        Preempted if the server asks meanwhile to end run `run_id` (None: nothing to listen for)."""
        if run_id is not None:
            self.check(run_id)  # it may have come with the job
        deadline = time.monotonic() + timeout_s
        while run_id is not None and self.open and not run.poll_ready() and run.wait() is None:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return
            if self.fd in select.select(run.watched() + [self.fd], [], [], remaining)[0]:
                self.check(run_id, readable=True)
