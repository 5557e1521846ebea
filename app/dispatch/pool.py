"""The embedded dispatch: a pool of warm workers in this process's slots (app.dispatch.slot), one
bounded, fair queue (app.dispatch.jobs). One warm worker per GPU by default, each pinned to its GPU;
two on a host without one."""
import collections
import functools
import threading
import time

from app.dispatch import memory
from app.dispatch.metrics import DispatchMetrics
from app.dispatch.interface import QueueFull, RunLost, TritonUnavailable, health_of, route_triton, wait_bound_s
from app.dispatch.jobs import CompileRequest, Job, JobQueue, ordinal, stopped
from app.dispatch.slot import Slot, SlotShared, gpu_assignments
from sandbox import tritons
from sandbox.spec import compile_key, is_script

COMPILES_ANSWERED = 4096  # compile ids whose answer still has a client to go to
# A host without a GPU: two workers, so that a run rarely waits for the next warm run process.
CPU_WORKERS = 2


class Pool:
    """The embedded dispatch (app.dispatch.interface.Dispatcher): WORKERS slots of the default Triton in
    this process, and one of each version TRITON_VERSIONS adds, each a thread serving the one queue's
    runs of its version."""

    def __init__(self, config, deliver=None):
        self.config = config
        self.deliver = deliver  # deliver(client, run_id, type, content): app.web.events.deliver's emit
        self.jobs = JobQueue(config["QUEUE_LIMIT"], config["QUEUE_PER_OWNER"], config.get("QUEUE_PER_ADDRESS"))
        self.compile_clients = collections.OrderedDict()  # compile_id -> (the client to answer, owner, compile key)
        self.compiled_ahead = collections.OrderedDict()  # owner -> the compile key of its last compile ahead done
        self.compile_asked = collections.OrderedDict()  # owner -> when it last asked to compile (monotonic)
        self.compiling = threading.Lock()
        self.stopping = threading.Event()
        self.metrics = DispatchMetrics()  # registered in its app's registry (app.web.metrics)
        # One warm worker per GPU by default, each pinned to its GPU; WORKERS of them, round-robin.
        assigned = gpu_assignments()
        count = config["WORKERS"] or len(assigned) or CPU_WORKERS
        versions = tritons.server_versions(config)
        self.default_triton = versions[0][0]
        # The default's workers, then one of each version added (on a GPU host, round-robin over the GPUs too).
        chosen = [versions[0]] * count + versions[1:]
        self.run_memory = memory.apply(config, len(chosen))  # before any worker is started with it
        shared = SlotShared(on_compiled=self.compiled, compiled_ahead=self.found_compiled,
                            compile_dropped=self.compile_dropped, compile_taken=lambda _: self.metrics.compile("taken"),
                            start_failed=self.start_failed)
        self.slots = [Slot(i, config, shared, assigned[i % len(assigned)] if assigned else None, triton)
                      for i, triton in enumerate(chosen)]
        self.started_at = time.time()

    def start(self):
        for slot in self.slots:
            threading.Thread(target=slot.serve, args=(self.jobs, self.stopping), name=f"worker-slot-{slot.index}",
                             daemon=True).start()
        return self

    def submit(self, spec, owner, client=None, from_link=False, address=None, listener=None):
        """Queue a run of `owner` (who may reuse its own compiled kernels); returns its run_id. Its
        status, stdout, parts and result go to the Socket.IO client `client`, whose leaving withdraws the
        run while it waits, or, in this process only, to listener(run_id, type, content)."""
        if listener is None:
            listener = functools.partial(self.deliver, client) if self.deliver else (lambda *_: None)
        job = Job(spec, listener, owner, client, from_link, address)
        job.triton = self.route(job.triton)
        self.metrics.watch(job)
        with job.notifying:  # a free slot may take the job at once: its "starting" waits for this "queued"
            place = self.jobs.put(job)
            job.notify("status", {"phase": "queued", "message": f"queued: {ordinal(place)} in line", "position": place})
        if not job.server_work:
            self.make_way()
        return job.run_id

    def make_way(self):
        """The rule that keeps the server's own work out of a person's way: a person's run waiting
        with no idle worker for it preempts a worker busy with the server's own work (which goes
        back to the queue, behind every person's run)."""
        for version in {slot.triton for slot in self.slots}:
            slots = [slot for slot in self.slots if slot.triton == version]
            short = self.jobs.people_waiting(version) - sum(1 for slot in slots if slot.idle())
            for slot in slots:
                if short <= 0:
                    break
                short -= slot.preempt()

    def route(self, asked):
        """The version whose workers take a run asking for Triton `asked` (app.dispatch.interface.route_triton)."""
        return route_triton(asked, self.default_triton, self.why_not_live())

    def why_not_live(self):
        """{version: None while one of its workers is live, else why none is}."""
        why = {}
        for slot in self.slots:
            if slot.state != "dead":
                why[slot.triton] = None
            elif why.get(slot.triton, "") is not None:
                why[slot.triton] = f"its worker cannot start: {slot.start_error or 'no reason given'}"
        return why

    def start_failed(self, slot):
        """The runs waiting for a Triton version none of whose workers will start get their refusal
        now (their worker may take minutes to start, or never), not the queue's "too busy" later."""
        why = self.why_not_live().get(slot.triton)
        if why is None:
            return
        refusal = TritonUnavailable(f"no worker of Triton {slot.triton} is running now ({why})", "options.triton")
        for job in self.jobs.withdraw(lambda job: job.triton == slot.triton):
            job.fail(refusal.error())

    def tritons(self):
        why = self.why_not_live()
        return [{**tritons.describe(version, self.default_triton), "live": why[version] is None} for version in why]

    def withdraw_client(self, client):
        """Drop the waiting runs and compiles of a client that left (a run already running finishes);
        returns how many runs."""
        self.jobs.withdraw_compiles(client)
        return len(self.jobs.withdraw(lambda job: job.client is not None and job.client == client))

    def compile_ahead(self, spec, owner, client, address=None, from_link=False):
        """Queue a compile ahead of `owner`'s next run (sandbox.ahead), after every waiting run, in place
        of the owner's waiting one; returns its compile_id. Its answer goes to `client` as `compiled`.
        None for code that is not the owner's own: nothing it compiled could be kept for a later run."""
        request = CompileRequest(spec, owner, client, address, from_link)
        if request.store is None:
            return None
        request.triton = self.route(request.triton)
        try:
            self.queue_compile(request, client, spec)
        except QueueFull:
            self.metrics.compile("refused")
            raise
        self.metrics.compile("queued")
        return request.compile_id

    def queue_compile(self, request, client, spec):
        with self.compiling:
            last = self.compile_asked.pop(request.owner, None)
            self.compile_asked[request.owner] = request.queued_at
            while len(self.compile_asked) > COMPILES_ANSWERED:
                self.compile_asked.popitem(last=False)
            interval_s = self.config["COMPILE_INTERVAL_S"]
            if last is not None and request.queued_at - last < interval_s:
                # The page asks once its person pauses; faster, each compile would end the one before
                # on its worker, and starting run processes for nothing costs the host's CPU.
                raise QueueFull(f"compile requests come faster than one per {interval_s:g} s; "
                                f"this one was dropped (Run compiles what it needs)")
            self.compile_clients[request.compile_id] = (client, request.store, compile_key(spec))
            while len(self.compile_clients) > COMPILES_ANSWERED:
                self.compile_clients.popitem(last=False)
        self.jobs.put_compile(request)

    def compiled(self, msg):
        """A worker's answer to a compile ahead: to the client that asked (once; a forged id reaches no one)."""
        content = msg["content"]
        self.metrics.compile("answered")
        with self.compiling:
            client, owner, key = self.compile_clients.pop(msg.get("run_id"), (None, None, None))
            if content.get("ok") is True and owner is not None:
                self.compiled_ahead.pop(owner, None)
                self.compiled_ahead[owner] = key
                while len(self.compiled_ahead) > COMPILES_ANSWERED:
                    self.compiled_ahead.popitem(last=False)
        if client is not None and self.deliver is not None:
            self.deliver(client, msg["run_id"], "compiled", {"ok": content.get("ok") is True,
                                                             "error": content.get("error")})

    def found_compiled(self, job):
        """Did a compile ahead of this very spec finish into the kernels its run is lent (on any worker)?"""
        try:
            key = compile_key(job.spec)
        except (TypeError, ValueError, KeyError):
            return False
        with self.compiling:
            return job.store is not None and self.compiled_ahead.get(job.store) == key

    def compile_dropped(self, request):
        self.metrics.compile("dropped")
        with self.compiling:
            self.compile_clients.pop(request.compile_id, None)

    def stop_run(self, run_id, client):
        for job in self.jobs.withdraw(lambda job: job.run_id == run_id and job.may_stop(client)):
            job.fail(stopped(started=False))
            return True
        for slot in self.slots:
            job = slot.job
            if job is not None and job.run_id == run_id and job.may_stop(client):
                job.stop_requested.set()
                return True
        return False

    def run(self, spec, owner, from_link=False, address=None):
        """Blocking run, for POST /api/run. The wait is bounded: a run that waited in the queue past
        QUEUE_WAIT_S gets its error result from the slot that drops it; past wait_bound_s the run is
        lost (RunLost), and if it is still waiting it is withdrawn so that no worker spends time on it."""
        done, box = threading.Event(), {}

        def listener(_run_id, type, content):
            if type == "result":
                box["result"] = content["result"]
                done.set()

        run_id = self.submit(spec, owner, from_link=from_link, listener=listener, address=address)
        bound_s = wait_bound_s(self.config, is_script(spec))
        if not done.wait(bound_s):
            self.jobs.withdraw(lambda job: job.run_id == run_id)
            raise RunLost(f"the server could not finish this run within {bound_s:g} s; try again")
        return box["result"]

    def health(self):
        health = health_of([s.info() for s in self.slots], next((s.ready for s in self.slots if s.ready), None),
                           len(self.jobs))
        return {**health, "run_memory": self.run_memory}

    def stop(self):
        self.stopping.set()
        self.jobs.close()
        for slot in self.slots:
            if slot.worker:
                slot.worker.stop()
