"""What the embedded dispatch counts for an operator (GET /metrics: app.web.metrics): each run's
outcome and latencies, as its listener sees them, and what became of the compiles ahead.

prometheus_client's instruments, in no global registry: a DispatchMetrics is a collector, which the
app that owns the dispatch registers in its own registry, so that two apps of one process (the
tests') never share a count."""
import time

from prometheus_client import Counter, Histogram

# Seconds: a queue wait is milliseconds when a worker is free and seconds behind other runs; a run
# in the interpreter takes up to RUN_TIMEOUT_S.
LATENCY_BUCKETS = (0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 20.0, 30.0, 60.0, 120.0)
COMPILE_OUTCOMES = ("queued", "refused", "taken", "dropped", "answered")


def work_of(job):
    """Whose work a run is, as the metrics label it: a person's, or the server's own."""
    return "server" if job.server_work else "person"


class DispatchMetrics:
    def __init__(self):
        self.runs = Counter("playground_runs", "Runs given their result, by its status, its error's phase "
                            "(none: no error) and whose work it is (person, server)",
                            ["status", "phase", "work"], registry=None)
        self.queue_wait = Histogram("playground_run_queue_wait_seconds", "From queued (or queued again after a "
                                    "preemption) to taken by a worker", ["work"], buckets=LATENCY_BUCKETS, registry=None)
        self.run_time = Histogram("playground_run_seconds", "From taken by a worker to its result",
                                  ["work"], buckets=LATENCY_BUCKETS, registry=None)
        self.whole = Histogram("playground_run_whole_seconds", "From submitted to its result: what a person waits",
                               ["work"], buckets=LATENCY_BUCKETS, registry=None)
        self.compiles = Counter("playground_compile_ahead", "Compiles ahead, by what became of them: queued, refused "
                                "(asked too fast, or no room), taken by a worker, dropped (stale, or no worker to "
                                "take it), answered", ["outcome"], registry=None)
        for outcome in COMPILE_OUTCOMES:
            self.compiles.labels(outcome)  # every outcome shows, at 0 until it happens

    def collect(self):
        for instrument in (self.runs, self.queue_wait, self.run_time, self.whole, self.compiles):
            yield from instrument.collect()

    def watch(self, job):
        """Count `job` as its listener hears it: its queue wait when a worker takes it (each time), its
        run and whole latency and its outcome at its one result. Before it is queued."""
        listener, work, submitted = job.listener, work_of(job), time.monotonic()
        started = []

        def observed(run_id, type, content):
            now = time.monotonic()
            if type == "status" and content.get("phase") == "starting":
                self.queue_wait.labels(work).observe(now - job.queued_at)
                started.append(now)
            elif type == "result":
                self.finished(work, content.get("result") or {}, submitted, started[-1] if started else None, now)
            listener(run_id, type, content)

        job.listener = observed

    def finished(self, work, result, submitted, started, now):
        error = result.get("error") if isinstance(result.get("error"), dict) else {}
        self.runs.labels(str(result.get("status")), str(error.get("phase") or "none"), work).inc()
        self.whole.labels(work).observe(now - submitted)
        if started is not None:
            self.run_time.labels(work).observe(now - started)

    def compile(self, outcome):
        self.compiles.labels(outcome).inc()
