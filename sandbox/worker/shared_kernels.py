"""The gallery's compiled kernels, lent read-only to every run.

Every owner's kernel cache (sandbox.worker.kernel_cache) starts empty, so without this a class opening the
same example compiles it once per student. These kernels are built by the worker alone, from the
gallery as the server ships it (sandbox.worker.warming: a run process of the worker's own, given only those
specs, never a user's), and published here whole entry by whole entry. A run sees this directory
through a read-only bind (isolation.SHARED_AT) or, where the host allows no mount namespace, as files of
another uid that it cannot write; where neither holds, it is not lent at all (`cannot_write`).

Triton looks an entry up by its key (source, options, target and Triton's own files: a changed
kernel is another key, never a stale hit) through its cache manager: a run's is `SharedFirstCache`,
which reads these entries first and writes only into the run's own cache dir. Shared entries come
first so that a run's own cache, which its earlier runs could write, never overrides a trusted
entry; a launcher library (.so) that a run loads from here is one the worker built.
"""
import contextlib
import fcntl
import hashlib
import json
import os
import re
import shutil

from triton.runtime.cache import FileCacheManager

from sandbox.worker.kernel_cache import GROUP, NO_FOLLOW, copy_entry, entry_bytes

KEY = re.compile(r"^[A-Z2-7]{16,64}$")  # Triton's keys: base32 digests (a partial copy or a marker is not one)
ENV = "PLAYGROUND_SHARED_KERNELS"  # where a run's cache manager looks, as the run sees it
MANAGER = "sandbox.worker.shared_kernels:SharedFirstCache"
MARKER = ".warmed-"


class SharedFirstCache(FileCacheManager):
    """Triton's file cache over the run's own dir, with the shared entries looked up first."""

    def __init__(self, key, override=False, dump=False):
        # Unlike FileCacheManager, no directory for a key until something is written under it: a
        # lookup served from the shared entries leaves nothing in the run's own cache to collect.
        self.key, self.lock_path = key, None
        if dump or override:
            super().__init__(key, override, dump)
            self.shared = None
            return
        from triton import knobs
        if not knobs.cache.dir:
            raise RuntimeError("Could not create or locate cache dir")
        self.cache_dir = os.path.join(knobs.cache.dir, key)
        self.lock_path = os.path.join(self.cache_dir, "lock")
        root = os.environ.get(ENV)
        self.shared = os.path.join(root, key) if root else None

    def _shared_path(self, filename):
        if self.shared is None:
            return None
        path = os.path.join(self.shared, filename)
        return path if os.path.isfile(path) else None

    def get_file(self, filename):
        return self._shared_path(filename) or super().get_file(filename)

    def get_group(self, filename):
        """A shared group names its files by the path they had where the worker built them: each is
        looked up by name in the shared entry instead. An incomplete one is a miss there."""
        path = self._shared_path(GROUP + filename)
        if path is not None:
            try:
                with open(path) as f:
                    names = [os.path.basename(str(p)) for p in json.load(f)["child_paths"].values()]
                found = {name: os.path.join(self.shared, name) for name in names}
                if found and all(os.path.isfile(p) for p in found.values()):
                    return found
            except (OSError, ValueError, KeyError, TypeError, AttributeError):
                pass
        try:
            return super().get_group(filename)
        except (OSError, ValueError):  # triton 3.6 raises on a group it cannot parse: a miss
            return None

    def put(self, data, filename, binary=True):
        os.makedirs(self.cache_dir, exist_ok=True)
        return super().put(data, filename, binary)


def cannot_write(path):
    """True where this process can read `path` but neither write it nor make it writable: a
    read-only mount, or a directory of another uid without write permission for this one."""
    try:
        if os.statvfs(path).f_flag & os.ST_RDONLY:
            return True
        return os.stat(path).st_uid != os.geteuid() and not os.access(path, os.W_OK)
    except OSError:
        return False


def use_in_this_process(path):
    """Point Triton's cache lookups (this process and its children) at the shared entries too."""
    os.environ[ENV] = path
    os.environ["TRITON_CACHE_MANAGER"] = MANAGER


class SharedKernels:
    """The worker's side: the directory (owned by the worker, readable by all), its lock (one worker
    of a host warms at a time), and a marker per warm-up that finished (`digest`: Triton's version,
    the GPU and the gallery's specs), listing its entries and the launches it bounds-checked."""

    def __init__(self, path, max_entry_bytes=32 << 20):
        self.path, self.max_entry_bytes = path, max_entry_bytes
        os.makedirs(path, mode=0o755, exist_ok=True)
        os.chmod(path, 0o755)
        self.lock_fd = None

    @staticmethod
    def digest(triton_version, device, specs):
        text = json.dumps([triton_version, device, specs], sort_keys=True)
        return hashlib.sha256(text.encode()).hexdigest()[:32]

    def _marker_path(self, digest):
        return os.path.join(self.path, MARKER + digest + ".json")

    def marker(self, digest):
        """What the warm-up with this digest left ({"triton", "entries", "launches", "references",
        "peak_gbps"}), or None."""
        try:
            with open(self._marker_path(digest)) as f:
                found = json.load(f)
            return found if isinstance(found.get("launches"), list) and isinstance(found.get("entries"), list) else None
        except (OSError, ValueError, AttributeError):
            return None

    def try_lock(self):
        """Take the host's warm-up lock without waiting; True if this worker now holds it."""
        if self.lock_fd is None:
            self.lock_fd = os.open(os.path.join(self.path, ".lock"), os.O_CREAT | os.O_RDWR | os.O_NOFOLLOW, 0o600)
        try:
            fcntl.flock(self.lock_fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return True
        except BlockingIOError:
            return False

    def unlock(self):
        if self.lock_fd is not None:
            os.close(self.lock_fd)
            self.lock_fd = None

    def sweep(self, triton_version):
        """Under the lock, before a warm-up: drop the markers of another Triton version, then every
        entry no remaining marker lists (an older gallery's, a warm-up that died half way)."""
        kept = set()
        for name in os.listdir(self.path):
            if name.startswith(MARKER):
                found = self.marker(name[len(MARKER):-len(".json")])
                if found is None or found.get("triton") != triton_version:
                    os.unlink(os.path.join(self.path, name))
                else:
                    kept.update(found["entries"])
        for name in os.listdir(self.path):
            if (KEY.match(name) or name.endswith(".partial")) and name not in kept:
                shutil.rmtree(os.path.join(self.path, name), ignore_errors=True)

    def publish(self, run_cache):
        """Copy a warm-up run's finished entries in (whole entries of plain files, never following a
        link; each appears at once or not at all). Returns the keys it holds now of that run's."""
        try:
            source = os.open(run_cache, NO_FOLLOW | os.O_DIRECTORY)
        except OSError:
            return []
        published = []
        try:
            for key in os.listdir(source):
                if not KEY.match(key) or entry_bytes(source, key, self.max_entry_bytes) is None:
                    continue
                kept = os.path.join(self.path, key)
                if not os.path.lexists(kept):
                    copy_entry(source, key, kept)
                published.append(key)
        finally:
            os.close(source)
        return published

    def finish(self, digest, triton_version, entries, launches, references=None, peak_gbps=None):
        """Write the warm-up's marker (whole, at once) and let the next worker of the host in.
        `references`, `peak_gbps`: the examples' reference timings and the device's copy bandwidth
        (sandbox.worker.warming), for the workers that adopt the warm-up."""
        partial = self._marker_path(digest) + ".partial"
        with open(partial, "w") as f:
            json.dump({"triton": triton_version, "entries": sorted(set(entries)), "launches": sorted(set(launches)),
                       "references": references or {}, "peak_gbps": peak_gbps}, f)
        os.chmod(partial, 0o644)
        os.rename(partial, self._marker_path(digest))
        self.unlock()

    def entries(self):
        with contextlib.suppress(OSError):
            return sorted(n for n in os.listdir(self.path) if KEY.match(n))
        return []
