"""The runs waiting for a worker: a run (Job), a compile ahead (CompileRequest) and the one bounded,
fair queue both wait in (JobQueue): each owner may have only QUEUE_PER_OWNER runs waiting and each
client address QUEUE_PER_ADDRESS (a client that drops its cookie is a new owner at each request,
not a new address); the server's own work waits behind every person's run, and a compile ahead
behind every run; the waiting runs of a client that left are withdrawn."""
import collections
import logging
import threading
import time

from app.dispatch.interface import AddressQueueFull, OwnerQueueFull, QueueFull
from app import owners
from sandbox import protocol
from sandbox.protocol import FOREIGN, OWN
from sandbox import result as results
from sandbox.errors import RunError
from sandbox.spec import launch_key

log = logging.getLogger(__name__)


def owner_full_message(per_owner):
    return f"you already have {per_owner} runs waiting; wait for one to finish"


def address_full_message(per_address):
    return (f"{per_address} runs from your network address are already waiting (QUEUE_PER_ADDRESS); "
            f"wait for one to finish")

def ordinal(n):
    suffix = "th" if 10 <= n % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")
    return f"{n}{suffix}"


def triton_asked(spec):
    """The Triton version a spec names (options.triton), None for the server's default; the
    dispatcher puts the version that runs it in its job's `triton`."""
    options = spec.get("options") if isinstance(spec, dict) else None
    return options.get("triton") if isinstance(options, dict) else None


def provenance(spec, owner, from_link=False):
    """Whose code a job runs, decided here for every job and compile ahead, whatever its route:
    OWN only when nothing says otherwise. Anyone else's (FOREIGN): what the page declares someone
    else's (`from_link`: a shared link, a fork of one, a run of one from its history), any spec that
    names a puzzle (its inputs, arguments, grid and check are its author's, whether it is run,
    graded, stepped through, swept or compiled ahead), a graded run, the server's own work, and a
    spec whose shape cannot say."""
    if from_link or isinstance(owner, owners.ServerWork) or not isinstance(spec, dict) or "grading" in spec:
        return FOREIGN
    options = spec.get("options")
    return FOREIGN if not isinstance(options, dict) or options.get("puzzle") is not None else OWN


class Job:
    def __init__(self, spec, listener, owner, client=None, from_link=False, address=None):
        self.run_id = protocol.new_id()
        self.spec = spec
        # Runs of one owner share compiled kernels; a worker sees a digest, never the session's id
        # (app.owners.key: the server's own work has keys no session's digest can be).
        self.owner = owners.key(owner)
        self.server_work = isinstance(owner, owners.ServerWork)  # yields its worker to a person's run
        self.listener = listener  # listener(run_id, type, content), called from a worker slot's thread
        self.client = client  # the Socket.IO sid that asked, whose leaving withdraws the run
        self.address = address  # the client's address (app.owners.address_key); None: the server's own work
        # Whose code it runs: someone else's is lent nothing kept for its owner and keeps nothing (store).
        self.provenance = provenance(spec, owner, from_link)
        self.triton = triton_asked(spec)  # the version whose worker takes it (the dispatcher names the default's)
        self.queued_at = time.monotonic()
        self.finished = False  # its one result was given
        self.stdout = []  # what the run printed, as relayed: the result carries it whole
        self.stop_requested = threading.Event()  # its client pressed Stop: the slot running it ends it
        # Notifications reach the listener one at a time and in order: the slot's "starting" never
        # overtakes submit's "queued", though a free slot may take the job before submit returns.
        self.notifying = threading.RLock()

    @property
    def store(self):
        """The owner's kept data its run may read and write (sandbox.protocol.kept_for); None for code
        that is not the owner's own."""
        return protocol.kept_for(self.owner, self.provenance)

    @property
    def launch(self):
        """What decides where its launch reads and writes, for the bounds-check memory, which is kept
        data as any other: None for code that is not its owner's own, and for a spec that cannot be
        encoded (it never reaches a worker)."""
        if self.store is None:
            return None
        try:
            return self.store, self.triton, launch_key(self.spec)
        except (TypeError, ValueError, KeyError):
            return None

    def waited_s(self):
        return time.monotonic() - self.queued_at

    def notify(self, type, content):
        """Tell the listener; a listener that raises is logged, and the run and its slot go on."""
        with self.notifying:
            if self.finished:
                return  # nothing of a run follows its one result (a part of a stopped run still on its way)
            if type == "stdout":
                self.stdout.append(content.get("text", ""))
            if type == "result":
                results.delivered(content["result"], self.run_id, "".join(self.stdout))
                self.finished = True
            try:
                self.listener(self.run_id, type, content)
            except Exception:
                log.exception("the listener of run %s failed on its %s", self.run_id, type)

    def fail(self, error):
        """End the job with `error` (a RunError) unless it already has its result."""
        self.notify("result", {"result": results.failed(error)})

    def may_stop(self, client):
        """Only the client that asked for a run can stop it."""
        return client is not None and self.client == client

    def message(self):
        """The job as it travels to a worker host of another process (app.dispatch.celery_worker): JSON."""
        return {"run_id": self.run_id, "spec": self.spec, "owner": self.owner, "client": self.client,
                "provenance": self.provenance, "address": self.address}

    @classmethod
    def arrived(cls, message, listener, waited_s):
        """A job another process sent (Job.message) after it waited `waited_s` in the queue: whose code
        it is was decided where it was made, and is decided again here, the same way."""
        job = cls(message["spec"], listener, "", message["client"], message.get("provenance") != OWN,
                  message.get("address"))
        job.run_id, job.owner = message["run_id"], message["owner"]  # the owner is a digest already
        job.queued_at = time.monotonic() - waited_s
        return job


class CompileRequest:
    """A compile ahead (sandbox.worker.ahead): what a client's page sends while its person types. It waits
    behind every run, the newest of an owner replacing an older one, and goes to an idle worker,
    which answers `compiled` to the client whenever it is done."""

    def __init__(self, spec, owner, client, address=None, from_link=False):
        self.compile_id = protocol.new_id()
        self.spec, self.owner, self.client, self.address = spec, owners.key(owner), client, address
        self.provenance = provenance(spec, owner, from_link)
        self.triton = triton_asked(spec)
        self.queued_at = time.monotonic()

    @property
    def store(self):
        """Where what it compiles is kept: None for code that is not its owner's own, which is never
        compiled ahead (nothing it would keep could be read by a later run)."""
        return protocol.kept_for(self.owner, self.provenance)

    def stale(self, stale_s):
        """No worker took it within `stale_s` (COMPILE_STALE_S): its person has typed on or run it."""
        return time.monotonic() - self.queued_at > stale_s

    def message(self):
        return protocol.Job(spec=self.spec, owner=self.owner, provenance=self.provenance,
                            compile_ahead=True).message(self.compile_id, "compile")


def stopped(started):
    """The error of a run its client stopped, before (started=False) or while it ran."""
    if not started:
        return RunError("stopped", "you stopped this run before it started; nothing ran", type="Stopped")
    return RunError("stopped", "you stopped this run while it ran; its worker was replaced, and nothing of the run "
                               "is kept", type="Stopped")


class JobQueue:
    """The runs waiting for a worker, oldest first, bounded in all, per owner and per client address.
    A waiting run can be withdrawn (its client left, its HTTP caller gave up) so that no worker time
    is spent on it."""

    def __init__(self, limit, per_owner, per_address=None):
        self.limit, self.per_owner, self.per_address = limit, per_owner, per_address
        self.waiting = collections.deque()
        self.compiles = collections.OrderedDict()  # owner -> its newest CompileRequest, taken after every run
        self.changed = threading.Condition()
        self.closed = False

    def __len__(self):
        return len(self.waiting)

    def put(self, job):
        """Queue `job`; returns its place in line (1: the next to start)."""
        with self.changed:
            if sum(1 for j in self.waiting if j.owner == job.owner) >= self.per_owner:
                raise OwnerQueueFull(owner_full_message(self.per_owner))
            if (job.address is not None and self.per_address
                    and sum(1 for j in self.waiting if j.address == job.address) >= self.per_address):
                raise AddressQueueFull(address_full_message(self.per_address))
            if len(self.waiting) >= self.limit:
                raise QueueFull(f"the server is busy ({len(self.waiting)} runs waiting); try again in a moment")
            self.waiting.append(job)
            self.changed.notify_all()  # the slots of every version wait on it
            return len(self.waiting)

    def put_compile(self, request):
        """Queue a compile ahead in place of its owner's waiting one, if any."""
        with self.changed:
            self.compiles.pop(request.owner, None)
            if (request.address is not None and self.per_address
                    and sum(1 for r in self.compiles.values() if r.address == request.address) >= self.per_address):
                raise AddressQueueFull(address_full_message(self.per_address))
            if len(self.compiles) >= self.limit:
                raise QueueFull(f"the server is busy ({len(self.compiles)} compiles waiting); your run will compile")
            self.compiles[request.owner] = request
            self.changed.notify_all()  # the slots of every version wait on it

    def get(self, triton=None):
        """The oldest waiting person's run for Triton `triton` (a worker runs one version), once there
        is one, else the oldest of the server's own work, else the oldest compile ahead; None once
        the queue is closed."""
        with self.changed:
            while not self.closed:
                waiting = [job for job in self.waiting if job.triton == triton]
                compiles = [owner for owner, request in self.compiles.items() if request.triton == triton]
                if waiting:
                    job = next((job for job in waiting if not job.server_work), waiting[0])
                    self.waiting.remove(job)
                    return job
                if compiles:
                    return self.compiles.pop(compiles[0])
                self.changed.wait()
            return None

    def people_waiting(self, triton=None):
        with self.changed:
            return sum(1 for job in self.waiting if not job.server_work and job.triton == triton)

    def requeue(self, job):
        """The server's own work, set aside for a person's run, waits again at the head of its kind
        (beyond the queue's bounds: it held its place already); its wait starts again."""
        with self.changed:
            job.queued_at = time.monotonic()
            self.waiting.appendleft(job)
            self.changed.notify_all()  # the slots of every version wait on it

    def withdraw(self, which):
        """Take the waiting jobs for which which(job) is true out of the queue; returns them."""
        with self.changed:
            gone = [job for job in self.waiting if which(job)]
            for job in gone:
                self.waiting.remove(job)
            return gone

    def withdraw_compiles(self, client):
        with self.changed:
            for owner in [owner for owner, request in self.compiles.items() if request.client == client]:
                del self.compiles[owner]

    def close(self):
        with self.changed:
            self.closed = True
            self.changed.notify_all()
