"""What a host's worker slots keep of the runs they ran, in memory: the launches that passed the bounds
check (shared by the slots of a host) and the reference timings (each slot's own). A slot runs one
Triton version; what is shared is keyed by it too (app.dispatch.jobs.Job.launch)."""
import collections
import threading


class SanitizedLaunches:
    """The launches that passed the bounds check, by (owner, Triton version, sandbox.spec.launch_key), least recently
    used first out. On a GPU that check is a pass over the whole launch in the interpreter (~0.15 s
    for a vector add of 98k elements): re-running the same launch, as one does to time it again,
    skips it, whichever worker takes the run."""

    def __init__(self, capacity=4096):
        self.keys, self.capacity, self.lock = collections.OrderedDict(), capacity, threading.Lock()

    def __contains__(self, key):
        with self.lock:
            if key in self.keys:
                self.keys.move_to_end(key)
                return True
            return False

    def add(self, key):
        with self.lock:
            self.keys[key] = True
            self.keys.move_to_end(key)
            while len(self.keys) > self.capacity:
                self.keys.popitem(last=False)


class ReferenceTimes:
    """The reference timings a worker slot's runs measured, least recently used first out: a run of
    the same reference over the same inputs on the same worker is not timed again (~0.1–1 s), and
    says so. Kept per owner's store (sandbox.protocol.kept_for: none for code not the owner's own,
    whose reports are dropped), each under the key the slot computes from the spec it sent
    (sandbox.spec.timing_key), never under one a run reports: a run can keep a timing only where a
    later run of its very reference looks. Beside it, the run's own key (sandbox.run.pipeline.
    reference_key: the inputs' shapes and dtypes as it made them), which the later run matches."""

    def __init__(self, per_owner=16, owners=256):
        self.times, self.per_owner, self.owners = collections.OrderedDict(), per_owner, owners

    def lent(self, store, key):
        """{the run's key: timing} kept for this store's runs of the spec whose timing_key is `key`."""
        kept = self.times.get(store) if store is not None and key is not None else None
        if kept is None or key not in kept:
            return {}
        self.times.move_to_end(store)
        kept.move_to_end(key)
        return dict([kept[key]])

    def add(self, store, key, run_key, timing):
        if store is None or key is None:
            return
        kept = self.times.setdefault(store, collections.OrderedDict())
        kept[key] = (run_key, timing)
        kept.move_to_end(key)
        self.times.move_to_end(store)
        while len(kept) > self.per_owner:
            kept.popitem(last=False)
        while len(self.times) > self.owners:
            self.times.popitem(last=False)
