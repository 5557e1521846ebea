"""The sources of the hostile corpus (tests/test_hostile_*.py): module-level Python that a run
executes before its kernel is launched. Here the prelude; the attacks by topic in this package's
modules, all under one name (`from tests.support import attacks as H`).

Every attack runs after PRELUDE, which gives it CONTEXT (pids, paths and markers the test knows)
and `attempt(name, fn, *args)`: call fn and record what happened, a value or the exception with its
errno. The test appends `report()`, which prints the findings as one line of JSON.

Attacks that would change the host if the jail let them through are written so that they change
nothing even then: a /proc/sys or /proc/<pid> file gets back the value it holds, a kill aims only at
processes the test started, ptrace seizes without stopping, an unmount only marks (MNT_EXPIRE), and
mount, pivot_root, reboot, kexec_load and the module calls carry arguments the kernel refuses once
past its permission check. Files and directories an attack may create on the host are removed by
the test.
"""

PRELUDE = r'''
# ---- hostile prelude
import ctypes as _ctypes
import errno as _errno
import json as _json
import os
import platform as _platform
import signal
import socket
import struct
import sys
import time

CONTEXT = _json.loads(__CONTEXT__)
libc = _ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = _ctypes.c_long
NR = {
    "x86_64": {"unshare": 272, "setns": 308, "mount": 165, "umount2": 166, "pivot_root": 155, "chroot": 161,
               "ptrace": 101, "keyctl": 250, "add_key": 248, "bpf": 321, "perf_event_open": 298,
               "userfaultfd": 323, "process_vm_readv": 310, "init_module": 175, "finit_module": 313,
               "kexec_load": 246, "reboot": 169, "socket": 41},
    "aarch64": {"unshare": 97, "setns": 268, "mount": 40, "umount2": 39, "pivot_root": 41, "chroot": 51,
                "ptrace": 117, "keyctl": 219, "add_key": 217, "bpf": 280, "perf_event_open": 241,
                "userfaultfd": 282, "process_vm_readv": 270, "init_module": 105, "finit_module": 273,
                "kexec_load": 104, "reboot": 142, "socket": 198},
}[_platform.machine()]
FOUND = {}


def _jsonable(value):
    try:
        _json.dumps(value)
        return value
    except (TypeError, ValueError):
        return repr(value)


def attempt(name, fn, *args, **kwargs):
    """Run one step of the attack; record its value, or the exception and errno it raised."""
    try:
        value = fn(*args, **kwargs)
    except BaseException as e:  # noqa: B036 - every way of failing is a finding
        code = getattr(e, "errno", None)
        FOUND[name] = {"raised": type(e).__name__, "errno": _errno.errorcode.get(code) if code else None,
                       "message": str(e)[:300]}
        return None
    FOUND[name] = {"returned": _jsonable(value)}
    return value


def report():
    print("HOSTILE-FINDINGS " + _json.dumps(FOUND), flush=True)


def _fail(what):
    code = _ctypes.get_errno()
    raise OSError(code, f"{what}: {os.strerror(code)}")


def syscall(name, *args):
    """A raw system call by name; -1 becomes an OSError carrying errno."""
    converted = [_ctypes.c_long(a) if isinstance(a, int) else a for a in args]
    result = libc.syscall(_ctypes.c_long(NR[name]), *converted)
    if result == -1:
        _fail(name)
    return result


def checked(result, what):
    """A libc call's result; -1 becomes an OSError carrying errno."""
    if result == -1:
        _fail(what)
    return result


def read(path, size=4096):
    with open(path, "rb") as f:
        return f.read(size).decode(errors="replace")


def write_back(path):
    """Write a file the value it already holds: a write that succeeds shows the way is open,
    and changes nothing."""
    fd = os.open(path, os.O_RDONLY)
    try:
        value = os.read(fd, 4096)
    finally:
        os.close(fd)
    fd = os.open(path, os.O_WRONLY)
    try:
        return os.write(fd, value or b"\n")
    finally:
        os.close(fd)


def create(path, data=b"x"):
    with open(path, "xb") as f:
        f.write(data)
    return "created"


def status_fields(*names):
    with open("/proc/self/status") as f:
        fields = dict(line.rstrip("\n").split(":\t", 1) for line in f if ":\t" in line)
    return {name: fields.get(name, "").strip() for name in names}


def cmdline(pid):
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return f.read().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return ""


def comm(pid):
    try:
        with open(f"/proc/{pid}/comm") as f:
            return f.read().strip()
    except OSError:
        return ""


def visible_pids():
    return sorted(int(name) for name in os.listdir("/proc") if name.isdigit())


def kill_each(pids, sig=signal.SIGKILL):
    """Signal each pid; the set of outcomes ("signalled" or the exception's name)."""
    outcomes = set()
    for pid in pids:
        try:
            os.kill(pid, sig)
            outcomes.add("signalled")
        except OSError as e:
            outcomes.add(type(e).__name__)
    return sorted(outcomes)


def tcp(host, port):
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.settimeout(3)
        s.connect((host, port))
        s.sendall(b"GET /healthz HTTP/1.0\r\n\r\n")
        return "connected"


def udp(host, port):
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.settimeout(3)
        return s.sendto(b"hostile", (host, port))


def abstract_unix(name):
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
        s.settimeout(3)
        s.connect("\0" + name)
        s.sendall(b"hostile")
        return "connected"
# ---- end of the prelude
'''

# The attacks, by topic (defined in their modules, named here for the corpus).
from tests.support.attacks.processes import *  # noqa: E402,F401,F403
from tests.support.attacks.files import *  # noqa: E402,F401,F403
from tests.support.attacks.syscalls import *  # noqa: E402,F401,F403
from tests.support.attacks.limits import *  # noqa: E402,F401,F403
from tests.support.attacks.web import *  # noqa: E402,F401,F403
