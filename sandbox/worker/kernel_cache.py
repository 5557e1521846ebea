"""Each owner's compiled kernels: lent to their run processes, collected back after.

Triton's kernel cache is code a later process loads (cubins, launcher .so files), and it keeps the
kernel's source: runs must not share one. A run compiles into its own scratch dir; once its process
is gone the worker collects the new entries into its owner's cache, and the owner's next run starts
with copies of them (its scratch dir is a tmpfs of its own: no hard links across). A run sees only its owner's kernels and can spoil only those. Owners are
opaque digests from the server (a browser's session). Workers share the caches on disk; an owner's
lock orders a collect before the next lend, on any worker.
"""
import contextlib
import fcntl
import json
import os
import re
import shutil
import stat
import time

NAME = re.compile(r"^[A-Za-z0-9_.\-]{1,200}$")  # Triton's keys and file names; no path tricks
# What a Triton cache entry holds: the kernel's IR stages, its binary, its metadata and source, the
# group index, a launcher library. Nothing else is collected.
ENTRY_FILE = re.compile(r"^[A-Za-z0-9_.\-]{1,200}\.(json|source|ttir|ttgir|llir|ptx|cubin|so|hsaco|amdgcn|spv|c)$")
OWNER = re.compile(r"^[0-9a-f]{16,64}$")
GROUP = "__grp__"  # Triton's index of an entry's files, by absolute path
NO_FOLLOW = os.O_RDONLY | os.O_NOFOLLOW


class KernelCaches:
    """Bounded on the host's disk: an entry, an owner and the whole directory each have a byte cap,
    counted in apparent and allocated size alike (a sparse file from a run is copied dense)."""

    def __init__(self, root, max_bytes=2 << 30, max_owners=256, max_entries=64, max_entry_bytes=32 << 20):
        self.root, self.locks = root, os.path.join(root, ".locks")
        self.max_owners, self.max_entries, self.max_entry_bytes = max_owners, max_entries, max_entry_bytes
        self.max_bytes, self.max_owner_bytes = max_bytes, max(max_entry_bytes, max_bytes // 16)
        for directory in (root, self.locks):
            os.makedirs(directory, mode=0o700, exist_ok=True)
        self.on_drop = []  # drop(owner) of what else is kept for an owner, called as its kernels go

    def owner_dir(self, owner):
        if not (isinstance(owner, str) and OWNER.match(owner)):
            return None
        return os.path.join(self.root, owner)

    # -- lending: into a fresh run process's cache dir, before the job (no user code has run there)

    def lend(self, owner, run_cache, seen_as=None, wait_s=5.0):
        """Copy the owner's entries into a run's empty cache dir (`seen_as` is its path inside the
        run), owned like that dir. Waits (up to `wait_s`) for a collect of the same owner under way
        on another worker."""
        source = self.owner_dir(owner)
        if source is None or not (os.path.isdir(source) or os.path.exists(os.path.join(self.locks, owner))):
            return 0  # nothing collected, nor being collected
        lock = self._lock(owner, fcntl.LOCK_SH, wait_s)
        try:
            if not os.path.isdir(source):
                return 0
            os.utime(source)  # recently used: evicted last
            return self._copy_entries(source, run_cache, seen_as or run_cache)
        finally:
            os.close(lock)

    @staticmethod
    def _copy_entries(source, run_cache, seen_as):
        uid, gid = os.stat(run_cache).st_uid, os.stat(run_cache).st_gid
        entries = os.listdir(source)
        for key in entries:
            target = os.path.join(run_cache, key)
            os.mkdir(target)
            os.chown(target, uid, gid)  # Triton may add files to an entry
            for name in os.listdir(os.path.join(source, key)):
                path = os.path.join(source, key, name)
                if name.startswith(GROUP):
                    write_group(path, target, os.path.join(seen_as, key), uid, gid)
                else:
                    shutil.copyfile(path, os.path.join(target, name), follow_symlinks=False)
        return len(entries)

    # -- collecting: from a finished run's cache dir, once nothing of the run runs any more

    def reserve(self, owner):
        """Hold the owner's lock from a run's result until its collect(): the owner's next run,
        on any worker, then starts with what this one compiled."""
        return self._lock(owner, fcntl.LOCK_EX) if self.owner_dir(owner) else None

    def collect(self, owner, run_cache, reservation=None, budget=None):
        """Copy a finished run's new entries into its owner's cache: whole entries of plain files
        only, read without following a link the run may have planted. Releases `reservation`.
        `budget` (a WriteBudget, or None): each entry's bytes are taken from it, or it is not kept."""
        try:
            target = self.owner_dir(owner)
            try:
                source = os.open(run_cache, NO_FOLLOW | os.O_DIRECTORY)
            except OSError:
                return 0  # none, or not a real directory
            try:
                return self._take_entries(source, target, budget) if target else 0
            finally:
                os.close(source)
        finally:
            if reservation is not None:
                os.close(reservation)

    def _take_entries(self, source, target, budget=None):
        os.makedirs(target, mode=0o700, exist_ok=True)
        moved, used = 0, tree_bytes(target)
        for key in os.listdir(source)[:self.max_entries]:
            kept = os.path.join(target, key)
            size = None if os.path.lexists(kept) else entry_bytes(source, key, self.max_entry_bytes)
            if size is not None and used + size <= self.max_owner_bytes and (budget is None or budget.take(size)):
                copy_entry(source, key, kept)
                moved, used = moved + 1, used + size
        self.evict(target, self.max_entries)
        for owner in self.evict(self.root, self.max_owners, OWNER) + self.evict_to_size():
            with contextlib.suppress(FileNotFoundError):
                os.unlink(os.path.join(self.locks, owner))
            for drop in self.on_drop:
                drop(owner)
        return moved

    def evict_to_size(self):
        """Remove the least recently used owners' caches until all of them fit in max_bytes."""
        owners = sorted((name for name in os.listdir(self.root) if OWNER.match(name)),
                        key=lambda name: os.lstat(os.path.join(self.root, name)).st_mtime)
        sizes = {name: tree_bytes(os.path.join(self.root, name)) for name in owners}
        total, removed = sum(sizes.values()), []
        for name in owners:
            if total <= self.max_bytes:
                break
            shutil.rmtree(os.path.join(self.root, name), ignore_errors=True)
            total -= sizes[name]
            removed.append(name)
        return removed

    @staticmethod
    def evict(directory, keep, names=NAME):
        """Remove all but the `keep` most recently used subdirectories named like `names`; returns
        the names removed."""
        found = [name for name in os.listdir(directory) if names.match(name)]
        found.sort(key=lambda name: os.lstat(os.path.join(directory, name)).st_mtime)
        removed = found[:max(0, len(found) - keep)]
        for name in removed:
            shutil.rmtree(os.path.join(directory, name), ignore_errors=True)
        return removed

    def _lock(self, owner, mode, wait_s=None):
        """The owner's lock file, flocked; waits at most `wait_s` (then goes on unlocked: at worst
        a run compiles again what it would have found)."""
        fd = os.open(os.path.join(self.locks, owner), os.O_CREAT | os.O_RDWR | os.O_NOFOLLOW, 0o600)
        if wait_s is None:
            fcntl.flock(fd, mode)
            return fd
        deadline = time.monotonic() + wait_s
        while True:
            try:
                fcntl.flock(fd, mode | fcntl.LOCK_NB)
                return fd
            except BlockingIOError:
                if time.monotonic() > deadline:
                    return fd
                time.sleep(0.005)


class WriteBudget:
    """Bytes that may still be written into the host's kernel caches: refilled at `rate` bytes a
    second, up to `burst`. What is past it is not kept (a later run compiles it again)."""

    def __init__(self, rate, burst, clock=time.monotonic):
        self.rate, self.burst, self.clock = rate, burst, clock
        self.left, self.at = burst, clock()

    def take(self, nbytes):
        now = self.clock()
        self.left, self.at = min(self.burst, self.left + (now - self.at) * self.rate), now
        if nbytes > self.left:
            return False
        self.left -= nbytes
        return True


def file_bytes(st):
    """What a file costs on the host once copied: its apparent size, or its blocks if more."""
    return max(st.st_size, st.st_blocks * 512)


def tree_bytes(directory):
    total = 0
    for top, _, names in os.walk(directory):
        for name in names:
            with contextlib.suppress(OSError):
                total += file_bytes(os.lstat(os.path.join(top, name)))
    return total


def entry_bytes(source_fd, key, max_bytes):
    """The size of a finished entry of a run's cache (opened as `source_fd`), or None if it is not
    one: a real, non-empty directory of regular files named as Triton names them (ENTRY_FILE),
    `max_bytes` at most."""
    if not NAME.match(key) or key.startswith("tmp."):
        return None
    try:
        entry = os.open(key, NO_FOLLOW | os.O_DIRECTORY, dir_fd=source_fd)
    except OSError:
        return None
    try:
        names = os.listdir(entry)
        files = [os.lstat(name, dir_fd=entry) for name in names]
    finally:
        os.close(entry)
    size = sum(file_bytes(f) for f in files)
    if names and all(ENTRY_FILE.match(name) for name in names) and all(stat.S_ISREG(f.st_mode) for f in files) \
            and size <= max_bytes:
        return size
    return None


def copy_entry(source_fd, key, kept):
    """Copy one entry of plain files out of a run's cache (opened as `source_fd`), never following
    a link; it appears in the owner's cache whole or not at all."""
    partial = kept + ".partial"
    shutil.rmtree(partial, ignore_errors=True)
    os.mkdir(partial, 0o700)
    entry = os.open(key, NO_FOLLOW | os.O_DIRECTORY, dir_fd=source_fd)
    try:
        for name in os.listdir(entry):
            if not ENTRY_FILE.match(name):
                continue
            with os.fdopen(os.open(name, NO_FOLLOW, dir_fd=entry), "rb") as src, \
                    open(os.path.join(partial, name), "wb") as dst:
                shutil.copyfileobj(src, dst)
            os.chmod(os.path.join(partial, name), 0o644)
    finally:
        os.close(entry)
    os.chmod(partial, 0o755)
    os.rename(partial, kept)


def write_group(path, target, seen_as, uid, gid):
    """A group file lists its entry's files by absolute path: point them at the entry's new place,
    as the run sees it."""
    try:
        with os.fdopen(os.open(path, NO_FOLLOW)) as f:
            children = json.load(f)["child_paths"]
        paths = {str(k): os.path.join(seen_as, os.path.basename(str(v))) for k, v in children.items()}
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return  # unreadable: Triton treats a missing group as a miss and compiles again
    copy = os.path.join(target, os.path.basename(path))
    with open(copy, "w") as f:
        json.dump({"child_paths": paths}, f)
    os.chown(copy, uid, gid)
