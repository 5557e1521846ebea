"""Each owner's launch inputs from its latest script run: collected from the finished run, lent to
a replay of one of its launches (sandbox.run.replay), so that selecting another launch of the same
program shows it without running the program again.

Only the owner's own code keeps any (sandbox.protocol.kept_for: a shared link's program, a graded
run, keeps nothing and is lent nothing), and only under the owner's digest: no one else's replay
reads them. What is kept is the run's bytes and the launch records of its result, the program's own
word: taken as plain files sized against those records, read without following a link, never loaded
as anything but tensor data by the replay. Bounded on the host's disk: one run per owner, at most
SCRIPT_KEPT_INPUTS_MB of it, at most `max_owners` owners (the least recently used go first), and
dropped with the owner's compiled kernels (sandbox.worker.kernel_cache.KernelCaches). Workers of
one host share it, as they share the kernel caches.

Beside the inputs, the results of launches replayed ahead of their click (sandbox.worker.ahead), each
under the view it was made for (the program and the options that show it), SHOWN_BYTES of them per owner:
a click on one, on whichever worker of the host, shows it.
"""
import contextlib
import hashlib
import json
import os
import shutil
import stat

from sandbox.result import PARTS
from sandbox.run.replay import DTYPES, INPUTS_DIR, RAN_BYTES, SHOWN_BY, file_name, ran_name
from sandbox.spec import SpecError, normalize
from sandbox.worker.kernel_cache import OWNER

MANIFEST = "manifest.json"
SHOWN_BYTES = 16 << 20  # the results of one owner's launches replayed ahead, all together
SHOWING = "showing.json"  # which worker replays which launches ahead, for the host's other workers
NO_FOLLOW = os.O_RDONLY | os.O_NOFOLLOW
VIEW_OPTIONS = ("launch", *SHOWN_BY)  # what a replay may change: not the program
NOT_KEPT = ("its inputs were not kept from the run that listed it (past SCRIPT_KEPT_INPUTS_MB of one run, "
            "or arguments that share memory)")
GONE = ("the inputs kept from the run that listed the launches are not here (a later run replaced them, or they "
        "were dropped, or this worker is on another host)")


def program_key(spec):
    """What a program's launches depend on: its source and its options but those a replay may change;
    None for a spec that is not one."""
    try:
        spec = normalize(spec)
    except (SpecError, TypeError, AttributeError, KeyError):
        return None
    options = {k: v for k, v in spec["options"].items() if k not in VIEW_OPTIONS}
    return hashlib.sha256(json.dumps([spec["source"], options], sort_keys=True, default=str).encode()).hexdigest()


def input_bytes(arg):
    """The bytes of a tensor argument of a launch record as sandbox.run.replay keeps it, or None."""
    dtype, shape, strides = DTYPES.get(arg.get("dtype")), arg.get("shape"), arg.get("strides")
    if dtype is None or not (isinstance(shape, list) and isinstance(strides, list) and len(shape) == len(strides)
                             and all(type(v) is int and v >= 0 for v in shape + strides)):
        return None
    span = 1 + sum((size - 1) * stride for size, stride in zip(shape, strides)) if all(shape) else 0
    return span * dtype.itemsize


class KeptLaunches:
    def __init__(self, root, max_run_bytes, max_owners=32):
        self.root, self.max_run_bytes, self.max_owners = root, max_run_bytes, max_owners
        os.makedirs(root, mode=0o700, exist_ok=True)

    def owner_dir(self, owner):
        return os.path.join(self.root, owner) if isinstance(owner, str) and OWNER.match(owner) else None

    def collect(self, owner, scratch, spec, result):
        """Keep a finished script run's launch inputs (its scratch dir `scratch`; nothing of it runs any
        more) in place of the owner's earlier ones; returns result.launches.replay ({"kept", "why"})."""
        target, key, launches = self.owner_dir(owner), program_key(spec), (result or {}).get("launches")
        if target is None or key is None or not isinstance(launches, dict) or self.max_run_bytes <= 0:
            return None
        partial = f"{target}.partial-{os.getpid()}"  # workers of the host share the store
        shutil.rmtree(partial, ignore_errors=True)
        os.makedirs(partial, mode=0o700)
        kept, as_ran, left = [], [], self.max_run_bytes
        # A GPU's replay launches the kernel again (its timings) where its run was kept: not "as ran".
        shows_ran = (result.get("device") or {}).get("kind") != "gpu"
        try:
            source = os.open(os.path.join(scratch, INPUTS_DIR), NO_FOLLOW | os.O_DIRECTORY)
        except OSError:
            source = None
        try:
            for record in launches.get("list") or []:
                taken = self.take_launch(source, record, partial, left) if source is not None else None
                if taken is not None:
                    size, ran = taken
                    kept.append(record["index"])
                    if ran and shows_ran:
                        as_ran.append(record["index"])
                    left -= size
        finally:
            if source is not None:
                os.close(source)
        records = {str(r["index"]): r for r in launches.get("list") or [] if isinstance(r, dict) and r.get("index") in kept}
        replay = {"kept": kept, "as_ran": as_ran, "why": NOT_KEPT if len(kept) < len(launches.get("list") or []) else None,
                  "replayed": False}
        listing = {**{k: launches.get(k) for k in ("total", "list", "program_ms")}, "replay": replay}
        with open(os.path.join(partial, MANIFEST), "w") as f:
            json.dump({"key": key, "records": records, "listing": listing, "benchmarks": result.get("benchmarks")}, f)
        shutil.rmtree(target, ignore_errors=True)
        try:
            os.rename(partial, target)
        except OSError:  # another worker's collect of the same owner came first: its run is as recent
            shutil.rmtree(partial, ignore_errors=True)
            return None
        self.evict()
        return replay

    def take_launch(self, source, record, partial, left):
        """Copy one launch's files, each a plain file of the size its record says, and its run as the
        program made it where there is one (sandbox.run.replay.ran_name: a plain file, RAN_BYTES at most,
        read by the replay as data); (their bytes, whether its run was among them), or None."""
        if not (isinstance(record, dict) and type(record.get("index")) is int and isinstance(record.get("args"), list)):
            return None
        tensors = [arg for arg in record["args"] if isinstance(arg, dict) and arg.get("kind") == "tensor"]
        sizes = [input_bytes(arg) for arg in tensors]
        names = [file_name(record["index"], arg.get("name")) for arg in tensors]
        if None in sizes or sum(sizes) > left or not all(isinstance(a.get("name"), str) and a["name"].isidentifier()
                                                        for a in tensors):
            return None
        for name, size in zip(names, sizes):
            try:
                found = os.lstat(name, dir_fd=source)
            except OSError:
                return None
            if not stat.S_ISREG(found.st_mode) or found.st_size != size:
                return None
        as_ran = False
        with contextlib.suppress(OSError):
            ran = os.lstat(ran_name(record["index"]), dir_fd=source)
            if as_ran := stat.S_ISREG(ran.st_mode) and ran.st_size <= min(RAN_BYTES, left - sum(sizes)):
                names, sizes = [*names, ran_name(record["index"])], [*sizes, ran.st_size]
        for name in names:
            with os.fdopen(os.open(name, NO_FOLLOW, dir_fd=source), "rb") as src, \
                    open(os.path.join(partial, name), "wb") as dst:
                shutil.copyfileobj(src, dst)
        return sum(sizes), as_ran

    def manifest(self, owner):
        """The owner's kept run as `collect` wrote it (its program's key, records, listing), or None."""
        try:
            with open(os.path.join(self.owner_dir(owner), MANIFEST)) as f:
                manifest = json.load(f)
        except (OSError, ValueError, TypeError):
            return None
        return manifest if isinstance(manifest, dict) else None

    def find(self, owner, spec, index):
        """((the kept result.launches, its result.benchmarks, launch `index`'s record), None) where a
        replay of it can be made, else (None, why not)."""
        manifest = self.manifest(owner)
        if manifest is None or manifest.get("key") != program_key(spec):
            return None, GONE
        record = manifest["records"].get(str(index))
        if record is None:
            return None, NOT_KEPT
        os.utime(self.owner_dir(owner))  # recently used: evicted last
        return (manifest["listing"], manifest.get("benchmarks"), record), None

    def lend(self, owner, record, run_scratch):
        """Copy launch `record`'s inputs into a fresh run's scratch dir (before its job: no user code
        has run there), readable by the run."""
        target, into = self.owner_dir(owner), os.path.join(run_scratch, INPUTS_DIR)
        os.makedirs(into, mode=0o755, exist_ok=True)
        names = [file_name(record["index"], arg["name"]) for arg in record["args"] if arg.get("kind") == "tensor"]
        if os.path.exists(os.path.join(target, ran_name(record["index"]))):
            names.append(ran_name(record["index"]))
        for name in names:
            shutil.copyfile(os.path.join(target, name), os.path.join(into, name), follow_symlinks=False)
            os.chmod(os.path.join(into, name), 0o644)

    def keep_shown(self, owner, spec, view, index, result=None, part=None, content=None):
        """Keep launch `index`'s result as its replay ahead made it for `view` (sandbox.worker.ahead.view_key
        of `spec`), or a part of it as it came, with the owner's kept run of that program, within
        SHOWN_BYTES; ValueError past them, OSError if that run is no longer kept."""
        target, kept_run = self.owner_dir(owner), self.manifest(owner)
        if kept_run is None:
            raise OSError(f"no launches are kept for {owner}")
        if kept_run.get("key") != program_key(spec):
            raise OSError("a later program's run replaced the launches")
        data = json.dumps({"view": view, "result": result} if part is None else {"view": view, "content": content}).encode()
        taken = sum(os.path.getsize(os.path.join(target, name)) for name in os.listdir(target) if name.startswith("shown."))
        if taken + len(data) > SHOWN_BYTES:
            raise ValueError("past the bytes kept of launches replayed ahead")
        name = f"shown.{index}.json" if part is None else f"shown.{index}.{part}.json"
        partial = os.path.join(target, f".{name}.{os.getpid()}")
        with open(partial, "wb") as f:
            f.write(data)
        os.rename(partial, os.path.join(target, name))
        for made in PARTS if part is None else ():  # the result holds them all
            with contextlib.suppress(OSError):
                os.unlink(os.path.join(target, f"shown.{index}.{made}.json"))

    def shown(self, owner, view, index, part=None):
        """Launch `index`'s result as its replay ahead made it for `view` (or that result's `part`), or None."""
        target = self.owner_dir(owner)
        if target is None or type(index) is not int or view is None:
            return None
        try:
            name = f"shown.{index}.json" if part is None else f"shown.{index}.{part}.json"
            with os.fdopen(os.open(os.path.join(target, name), NO_FOLLOW), "rb") as f:
                kept = json.load(f)
        except (OSError, ValueError):
            return None
        return kept.get("result" if part is None else "content") if isinstance(kept, dict) and kept.get("view") == view else None

    def shown_parts(self, owner, view, index):
        """[(part, its content)] of launch `index`'s replay ahead for `view`, those kept so far."""
        made = [(part, self.shown(owner, view, index, part)) for part in PARTS]
        return [(part, content) for part, content in made if content is not None]

    def mark_showing(self, owner, view, indices):
        """Say, for the host's other workers, that this one replays the owner's launches `indices` ahead."""
        target = self.owner_dir(owner)
        with contextlib.suppress(OSError):
            with open(os.path.join(target, SHOWING), "w") as f:
                json.dump({"view": view, "launches": list(indices), "pid": os.getpid()}, f)

    def unmark_showing(self, owner):
        target = self.owner_dir(owner)
        if target is not None and self.showing_worker(owner) == os.getpid():
            with contextlib.suppress(OSError):
                os.unlink(os.path.join(target, SHOWING))

    def showing_worker(self, owner, view=None, index=None):
        """The pid of the live worker replaying the owner's launches ahead for `view` (any, if None), launch
        `index` among them and due (`due`), or None."""
        target = self.owner_dir(owner)
        try:
            with os.fdopen(os.open(os.path.join(target, SHOWING), NO_FOLLOW), "rb") as f:
                marker = json.load(f)
            pid = marker["pid"]
            if view is not None and (marker["view"] != view or not self.due(owner, marker["launches"], index)):
                return None
            os.kill(pid, 0)  # a worker that died left it
        except (OSError, ValueError, TypeError, KeyError):
            return None
        return pid

    def due(self, owner, indices, index):
        """Of launches `indices` replayed ahead in their order (the first whose result is not kept is under
        way), is `index` due: under way, or after launches that took no longer in the program's run than
        it did (their records' `ms`)? A click on it waits for that replay then: a replay of its own would
        take as long, beside the one ahead on the same cores. Else the click replays it itself."""
        target = self.owner_dir(owner)
        pending = [i for i in indices if not os.path.exists(os.path.join(target, f"shown.{i}.json"))]
        if index not in pending:
            return False
        if pending[0] == index:
            return True
        records = (self.manifest(owner) or {}).get("records")
        try:
            before, own = [records[str(i)]["ms"] for i in pending[:pending.index(index)]], records[str(index)]["ms"]
            return sum(before) <= own
        except (TypeError, KeyError):  # a launch whose time is not known
            return False

    def drop(self, owner):
        target = self.owner_dir(owner)
        if target is not None:
            shutil.rmtree(target, ignore_errors=True)

    def evict(self):
        owners = sorted((name for name in os.listdir(self.root) if OWNER.match(name)),
                        key=lambda name: os.lstat(os.path.join(self.root, name)).st_mtime)
        for name in owners[:max(0, len(owners) - self.max_owners)]:
            with contextlib.suppress(OSError):
                shutil.rmtree(os.path.join(self.root, name))
