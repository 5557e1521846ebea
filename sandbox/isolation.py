"""What a run's process gives up before it sees user code: network, privileges, resources.

Called in the freshly forked run process (single-threaded, so namespaces can be entered).
`mode` "auto" applies every step this host allows and reports which; "none" only sets rlimits.
"""
import ctypes
import os
import resource
import sys

CLONE_NEWUSER = 0x10000000
CLONE_NEWNET = 0x40000000
NOBODY = 65534


def _unshare(flags):
    libc = ctypes.CDLL(None, use_errno=True)
    return libc.unshare(flags) == 0


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
    # As nobody, lazy imports need the Python install (and the venv) to be readable by others.
    if os.getuid() != 0 or not all(readable_by_others(p) for p in (sys.base_prefix, sys.prefix)):
        return None
    os.chown(scratch, NOBODY, NOBODY)
    os.setgroups([])
    os.setgid(NOBODY)
    os.setuid(NOBODY)
    return "uid nobody"


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


def enter(mode, scratch, memory_mb):
    """Apply isolation in the run process; returns the list of steps that took effect."""
    applied = []
    if mode == "auto":
        applied += [step for step in (drop_network(), drop_privileges(scratch)) if step]
    applied.append(set_limits(memory_mb))
    return applied
