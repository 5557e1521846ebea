"""What a run's process gives up before it sees user code: network, privileges, resources.

Called in the freshly forked run process (single-threaded, so namespaces can be entered).
`mode` "auto" applies every step this host allows and reports which; "none" only sets rlimits.
"""
import ctypes
import os
import resource
import sys

CLONE_NEWNS = 0x00020000
CLONE_NEWUSER = 0x10000000
CLONE_NEWNET = 0x40000000
MS_RDONLY, MS_NOSUID, MS_NODEV, MS_REMOUNT, MS_BIND, MS_REC, MS_PRIVATE = 0x1, 0x2, 0x4, 0x20, 0x1000, 0x4000, 0x40000
NOBODY = 65534
PR_SET_DUMPABLE, PR_CAPBSET_DROP, PR_SET_SECUREBITS, PR_SET_CHILD_SUBREAPER, PR_SET_NO_NEW_PRIVS = 4, 24, 28, 36, 38
# Root gets no capabilities back on exec, nor on a uid change: SECBIT_NOROOT, SECBIT_NO_SETUID_FIXUP, locked.
SECUREBITS = 0b1111
SYS_CAPSET = 126  # x86_64
libc = ctypes.CDLL(None, use_errno=True)


def _unshare(flags):
    return libc.unshare(flags) == 0


def _mount(source, target, fstype, flags, data=None):
    encode = lambda text: text.encode() if text is not None else None  # noqa: E731
    if libc.mount(encode(source), encode(target), encode(fstype), flags, encode(data)) != 0:
        raise OSError(ctypes.get_errno(), f"mount on {target}: {os.strerror(ctypes.get_errno())}")


def private_filesystem(scratch, hidden):
    """A private mount namespace: each `hidden` directory an empty tmpfs (the other runs' scratch
    dirs and kernel caches, the server's database), then the whole filesystem read-only, except for
    this run's scratch dir, bound back in place. Returns the steps applied."""
    if not _unshare(CLONE_NEWNS):
        return []
    places = [scratch]
    try:
        _mount(None, "/", None, MS_REC | MS_PRIVATE)  # nothing done here reaches the host's namespace
        handles = {path: os.open(path, os.O_PATH) for path in places}  # reachable once covered
        for directory in hidden:
            # Never a directory holding the code a run still imports (a checkout under /tmp, say).
            needed = (sys.prefix, sys.base_prefix, os.path.dirname(os.path.dirname(__file__)))
            if os.path.isdir(directory) and not any(_is_within(path, directory) for path in needed):
                _mount("tmpfs", directory, "tmpfs", MS_NOSUID | MS_NODEV, "size=64k,mode=755")
        for path, fd in handles.items():  # its own mount point, so it stays writable
            os.makedirs(path, exist_ok=True)
            _mount(f"/proc/self/fd/{fd}", path, None, MS_BIND)
            os.close(fd)
    except OSError:  # e.g. a host that allows the namespace but not mounts in it
        return []
    try:
        _remount_read_only(places)
    except OSError:
        return ["private mounts"]
    return ["private mounts", "read-only filesystem"]


def _remount_read_only(writable):
    keep = {os.path.realpath(p) for p in writable}
    with open("/proc/self/mountinfo") as f:
        points = [line.split()[4].encode().decode("unicode_escape") for line in f]
    for point in points:
        if point in keep or point.startswith(("/proc", "/sys", "/dev")):
            continue
        try:
            _mount(None, point, None, MS_REMOUNT | MS_BIND | MS_RDONLY)
        except OSError:
            if point == "/":
                raise


def _is_within(path, directory):
    path, directory = os.path.realpath(path), os.path.realpath(directory)
    return path == directory or path.startswith(directory.rstrip(os.sep) + os.sep)


def drop_network():
    """A new, empty network namespace: no interface but a down loopback."""
    if _unshare(CLONE_NEWNET):
        return "netns"
    if _unshare(CLONE_NEWUSER | CLONE_NEWNET):  # unprivileged hosts with user namespaces
        return "userns+netns"
    return None


def readable_by_others(path):
    """Every directory down to `path` lets others through: nobody can still import from it."""
    path = os.path.realpath(path)
    while True:
        if not os.stat(path).st_mode & 0o005:
            return False
        if path == "/":
            return True
        path = os.path.dirname(path)


def drop_privileges(scratch):
    """uid nobody where the Python install allows it; else, still root, no capabilities (no mounts,
    no unmounting what hides the other runs, no ptrace, no reading others' /proc). Either way no
    setuid binary can raise them again, and no other run can inspect this one."""
    steps = []
    if os.getuid() == 0 and all(readable_by_others(p) for p in (sys.base_prefix, sys.prefix)):
        os.chown(scratch, NOBODY, NOBODY)
        os.setgroups([])
        os.setgid(NOBODY)
        os.setuid(NOBODY)
        steps.append("uid nobody")
    elif os.getuid() == 0 and drop_capabilities():
        steps.append("no capabilities")
    if libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) == 0:
        steps.append("no new privileges")
    libc.prctl(PR_SET_DUMPABLE, 0, 0, 0, 0)  # its /proc entries: root's, and out of others' reach
    return steps


def drop_capabilities():
    """Empty every capability set of this root process, the bounding set first (so exec gives none back)."""
    with open("/proc/sys/kernel/cap_last_cap") as f:
        last = int(f.read())
    for cap in range(last + 1):
        if libc.prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) != 0:
            return False
    if libc.prctl(PR_SET_SECUREBITS, SECUREBITS, 0, 0, 0) != 0:
        return False
    header = (ctypes.c_uint32 * 2)(0x20080522, 0)  # _LINUX_CAPABILITY_VERSION_3, this process
    data = (ctypes.c_uint32 * 6)()  # effective, permitted, inheritable (two 32-bit words each): none
    return libc.syscall(SYS_CAPSET, header, data) == 0


def set_limits(memory_mb, file_mb=64, open_files=256):
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    resource.setrlimit(resource.RLIMIT_FSIZE, (file_mb << 20, file_mb << 20))
    resource.setrlimit(resource.RLIMIT_NOFILE, (open_files, open_files))
    if memory_mb:
        # Address space on top of what the warm process already maps (torch alone maps gigabytes).
        with open("/proc/self/statm") as f:
            mapped = int(f.read().split()[0]) * resource.getpagesize()
        limit = mapped + (memory_mb << 20)
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    return f"rlimits (memory +{memory_mb} MB)" if memory_mb else "rlimits"


def enter(mode, scratch, memory_mb, hidden=()):
    """Apply isolation in the run process; returns the list of steps that took effect."""
    applied = []
    if mode == "auto":
        network = drop_network()
        filesystem = private_filesystem(scratch, hidden)
        privileges = drop_privileges(scratch)  # last: the steps before need root
        applied += [network, *filesystem, *privileges]
    applied = [step for step in applied if step]
    applied.append(set_limits(memory_mb))
    return applied
