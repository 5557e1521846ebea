"""The run processes a worker keeps (sandbox.worker.main.Worker): its warm spares, which a job takes
and the worker forks again after it, and what a preemption set aside until the worker has time to
reap it. The server's own work takes a warm spare only where another stays warm for a person."""
import time

from sandbox import protocol
from sandbox.errors import StartError

READY_TIMEOUT_S = 120  # a run process's warm-up: CUDA init, with a loaded host
# A worker idle this long after a preemption reaps the preempted run (the person's run it was
# preempted for comes within milliseconds, and goes first).
CATCH_UP_IDLE_S = 0.5


def job_run_process(spares, yielding, new_run_process):
    """(the run process a job takes, whether it is one of `spares`, which loses it): a warm spare (the
    oldest still warming if none is), but for the server's own work (`yielding`) only while another
    spare stays warm: else a new one, warming at idle CPU priority. A person who presses Run while
    the server warms up then finds a warm one (a GPU's takes ~0.25 s to warm: CUDA init)."""
    warm = [spare for spare in spares if spare.poll_ready()]
    if yielding and len(warm) < 2:
        return new_run_process(warming=True), False
    run = warm[0] if warm else spares[0]
    spares.remove(run)
    return run, True


class Spares:
    """The Worker's methods for its run processes: it has `spares` and `spare_count`, `taken` (the run
    processes the job under way took), `ended` and `ended_at` (a preemption's, not reaped yet),
    `yielding`, `new_run_process`, `input`, `kernel_caches` and `send`."""

    def run_process_for_compile(self):
        """A run process as the server's own work takes one (job_run_process): a warm spare only while
        another stays warm, replaced at once (the next run finds one warm too); else a new one, which
        warms up at idle CPU priority."""
        run, spare = job_run_process(self.spares, True, self.new_run_process)
        if spare:
            self.spares.append(self.new_run_process())
        return run

    def take_warm_run_process(self, run_id=None):
        """A warm spare (the oldest still warming up if none is warm yet; for the server's own work, as
        job_run_process says), or a new one in place of one that died while it waited (the host may
        kill it): a dead one never fails the next job.
        While it waits for one to warm, a `preempt` of `run_id` ends the run (Preempted)."""
        why = "they end before their job"
        for _ in range(2 * self.spare_count + 1):
            run, spare = job_run_process(self.spares, self.yielding, self.new_run_process)
            self.taken.append(run)
            try:
                self.input.wait_warm(run, run_id, READY_TIMEOUT_S)
                if run.ready is None:
                    run.wait_ready(READY_TIMEOUT_S)
                if run.wait() is None:
                    return run
            except StartError as e:
                why = str(e)
            run.finish(self.kernel_caches)
            if spare:
                self.spares.append(self.new_run_process())
        raise StartError(f"run processes fail to start: {why}")

    def set_aside(self, run_id):
        """End the preempted run `run_id` for the person's run that wants this worker: its processes
        killed and the answer sent at once. Reaping them waits (the kernel frees a run's memory
        before it can be reaped: ~0.1 s a GB), and so do the spares but the one the next run needs."""
        for run in self.taken:
            if run.fds:  # not finished yet (finish closes its pipes)
                run.kill()
                self.ended.append(run)
        self.ended_at = time.monotonic()
        self.send(protocol.message("preempted", run_id))
        if not self.spares:  # it took them all (a graded run: its run's and its grader's)
            self.spares.append(self.new_run_process())

    def catch_up_s(self):
        """Seconds until an idle worker reaps a preempted run; None: none to reap."""
        return max(0.0, self.ended_at + CATCH_UP_IDLE_S - time.monotonic()) if self.ended else None

    def catch_up(self):
        """After a run, or idle a while: reap what a preemption set aside and fork the spares it took."""
        while self.ended:
            self.ended.pop().finish(self.kernel_caches)
        while len(self.spares) < self.spare_count:
            self.spares.append(self.new_run_process())
