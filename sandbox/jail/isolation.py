"""The jail: what a run gives up before it sees user code. A run sees only itself.

The steps, in the order they are taken (each where the host allows it; the list of steps that took
effect is reported by /healthz):

  worker, once          prepare_worker(): a private mount namespace, so the scratch mounts below
                        never reach the host and vanish with the worker
  worker, per run       Scratch: a tmpfs capped in bytes and files, the run's only writable place
                        RunCgroup (sandbox.jail.cgroups): memory, tasks and CPU for all the run's processes together
                        new_pid_namespace(): the next fork is pid 1 of a namespace of its own
  run process (pid 1)   enter_namespaces(): no network, own IPC and hostname; a minimal root
                        (build_root) of read-only binds; then it forks the user process and stays
                        its init (serve_as_init): when it ends, the kernel kills the whole namespace
  user process          confine(): an unprivileged uid of its own, no new privileges, not dumpable,
                        rlimits, and a seccomp filter (deny_syscalls)

`mode` "none" keeps only the rlimits. Everything here is Linux system calls through ctypes, except
the syscall filter, which libseccomp builds (through its `pyseccomp` binding).
"""
import ctypes
import errno
import os
import resource
import shutil
import signal
import socket
import sys
from dataclasses import dataclass

from sandbox import gpus, settings

# The namespace flags are the same on every Linux architecture; Python 3.12+ names them in os.
CLONE_NEWNS, CLONE_NEWCGROUP, CLONE_NEWUTS, CLONE_NEWIPC, CLONE_NEWUSER, CLONE_NEWPID, CLONE_NEWNET, CLONE_NEWTIME = (
    getattr(os, name, value) for name, value in (
        ("CLONE_NEWNS", 0x00020000), ("CLONE_NEWCGROUP", 0x02000000), ("CLONE_NEWUTS", 0x04000000),
        ("CLONE_NEWIPC", 0x08000000), ("CLONE_NEWUSER", 0x10000000), ("CLONE_NEWPID", 0x20000000),
        ("CLONE_NEWNET", 0x40000000), ("CLONE_NEWTIME", 0x00000080)))
NAMESPACE_FLAGS = (CLONE_NEWNS, CLONE_NEWCGROUP, CLONE_NEWUTS, CLONE_NEWIPC, CLONE_NEWUSER, CLONE_NEWPID,
                   CLONE_NEWNET, CLONE_NEWTIME)
MS_RDONLY, MS_NOSUID, MS_NODEV, MS_NOEXEC, MS_REMOUNT, MS_BIND = 0x1, 0x2, 0x4, 0x8, 0x20, 0x1000
MS_REC, MS_PRIVATE = 0x4000, 0x40000
MNT_DETACH = 2
PR_SET_PDEATHSIG, PR_SET_DUMPABLE, PR_SET_NAME, PR_CAPBSET_DROP, PR_SET_SECUREBITS = 1, 4, 15, 24, 28
PR_SET_CHILD_SUBREAPER, PR_SET_NO_NEW_PRIVS = 36, 38
SECUREBITS = 0b1111  # root gets no capabilities back on exec nor on a uid change; locked
# Each run's own uid, far from any real user's and from the usual container ranges (systemd's end
# at 1,879,048,191): two runs never share a uid, so they cannot signal or read each other even
# where namespaces are not allowed.
RUN_UID_BASE, RUN_UID_SPAN = 2_000_000_000, 1 << 20
libc = ctypes.CDLL(None, use_errno=True)

# What a kernel run never needs, and what would let it undo the jail or reach the kernel's soft
# spots. Everything else is allowed: CUDA's driver, torch and Triton's compiler use a wide range.
DENIED_SYSCALLS = (
    "ptrace", "process_vm_readv", "process_vm_writev", "kcmp",
    "mount", "umount2", "pivot_root", "chroot", "unshare", "setns", "open_tree", "move_mount",
    "fsopen", "fsconfig", "fsmount", "fspick", "mount_setattr", "open_by_handle_at", "name_to_handle_at",
    "keyctl", "add_key", "request_key", "bpf", "perf_event_open", "userfaultfd", "io_uring_setup",
    "init_module", "finit_module", "delete_module", "kexec_load", "kexec_file_load", "reboot",
    "swapon", "swapoff", "acct", "quotactl", "syslog", "sethostname", "setdomainname",
    "settimeofday", "clock_settime", "clock_adjtime", "adjtimex", "iopl", "ioperm", "lookup_dcookie",
)

# The socket families a run may open: AF_UNIX (Python, torch and the CUDA driver talk to themselves
# over it) and IP, which reaches nothing in the run's empty network namespace. Every other family
# (vsock, netlink, packet, bluetooth, alg, ...) has a port space or a kernel interface outside it.
SOCKET_FAMILIES = (socket.AF_UNIX, socket.AF_INET, socket.AF_INET6)

SHARED_AT = "/shared-kernels"  # the gallery's compiled kernels (sandbox.worker.shared_kernels), read-only
DEV_NODES = ("null", "zero", "full", "random", "urandom")
ETC_FILES = ("ld.so.cache", "ld.so.conf", "ld.so.conf.d", "alternatives", "localtime", "nsswitch.conf", "os-release")


@dataclass(frozen=True)
class Limits:
    """What one run may use, all its processes together. Compiler Explorer gives a compiled C++
    program 200 MiB, 14 pids and a 20 MiB /tmp; a Triton run imports torch (~1 GB mapped before
    any input), the interpreter keeps CPU copies of every tensor, torch starts a thread per core,
    and Triton's compiler runs gcc and ptxas: hence these."""
    memory_mb: int = settings.default("RUN_MEMORY_MB")  # resident memory of the whole run, tmpfs writes included
    tasks: int = settings.default("RUN_TASKS")  # processes and threads
    tasks_without_cpu_share: int = settings.default("RUN_TASKS_WITHOUT_CPU_SHARE")  # RLIMIT_NPROC of the run's uid
    scratch_mb: int = settings.default("RUN_SCRATCH_MB")  # /tmp: the source, Triton's cache of the run, compiler temp files
    scratch_files: int = settings.default("RUN_SCRATCH_FILES")
    shm_mb: int = 64
    file_mb: int = settings.default("RUN_FILE_MB")  # any one file
    open_files: int = settings.default("RUN_OPEN_FILES")

    @classmethod
    def from_settings(cls):
        """The limits this worker's server set (its environment: sandbox.settings)."""
        return cls(**{field: settings.value(name) for field, name in LIMIT_SETTINGS.items()})


LIMIT_SETTINGS = {"memory_mb": "RUN_MEMORY_MB", "tasks": "RUN_TASKS", "tasks_without_cpu_share": "RUN_TASKS_WITHOUT_CPU_SHARE",
                  "scratch_mb": "RUN_SCRATCH_MB", "scratch_files": "RUN_SCRATCH_FILES", "file_mb": "RUN_FILE_MB",
                  "open_files": "RUN_OPEN_FILES"}


class JailError(OSError):
    pass


def _check(result, what):
    if result != 0:
        code = ctypes.get_errno()
        raise JailError(code, f"{what}: {os.strerror(code)}")


def _encode(text):
    return text.encode() if text is not None else None


def _mount(source, target, fstype=None, flags=0, data=None):
    _check(libc.mount(_encode(source), _encode(target), _encode(fstype), flags, _encode(data)), f"mount on {target}")


def _unshare(flags):
    if hasattr(os, "unshare"):  # Python 3.12+
        try:
            os.unshare(flags)
        except OSError:
            return False
        return True
    return libc.unshare(flags) == 0


def _setns(fd, nstype):
    if hasattr(os, "setns"):  # Python 3.12+
        try:
            os.setns(fd, nstype)
        except OSError:
            return False
        return True
    return libc.setns(fd, nstype) == 0


def syscall_number(name):
    """`name`'s number on this machine's architecture (capset: 126 on x86-64, 91 on aarch64), as
    libseccomp, which builds the syscall filter too, resolves it: for the calls glibc does not wrap."""
    try:
        import pyseccomp as seccomp
    except (ImportError, OSError) as e:
        raise JailError(errno.ENOSYS, f"{name}: no libseccomp to find its number ({e})") from None
    number = seccomp.resolve_syscall(seccomp.Arch.NATIVE, name)
    if number < 0:
        raise JailError(errno.ENOSYS, f"{name}: no such system call on this architecture")
    return number


def prctl(option, value):
    return libc.prctl(option, value, 0, 0, 0) == 0


def set_process_name(name):
    """What ps and /proc/<pid>/comm show for this process (15 bytes at most)."""
    libc.prctl(PR_SET_NAME, name.encode()[:15], 0, 0, 0)


# ---------------------------------------------------------------- the worker's side

def prepare_worker():
    """Called once by a worker before it starts any thread. Its runs' mounts go into a private
    mount namespace of its own; whatever its runs leave running comes back to it to be killed.
    Returns True where the worker may mount (root, or the like)."""
    prctl(PR_SET_CHILD_SUBREAPER, 1)
    if not _unshare(CLONE_NEWNS):
        return False
    try:
        _mount(None, "/", None, MS_REC | MS_PRIVATE)
    except JailError:
        return False
    return True


_own_pid_namespace = None


def new_pid_namespace():
    """The worker's next child is pid 1 of a new PID namespace (its own /proc, sees and signals
    only its own processes, and takes them all with it when it ends). A process may unshare a
    PID namespace only while its children's is its own: go back to its own first."""
    global _own_pid_namespace
    if _own_pid_namespace is None:
        _own_pid_namespace = os.open("/proc/self/ns/pid", os.O_RDONLY | os.O_CLOEXEC)
    _setns(_own_pid_namespace, CLONE_NEWPID)
    return _unshare(CLONE_NEWPID)


def run_uid(worker_pid, serial):
    """A uid for one run: its worker's and its own serial number (a worker holds two runs at most)."""
    return RUN_UID_BASE + (worker_pid * 64 + serial % 64) % RUN_UID_SPAN


class Scratch:
    """A run's scratch dir: a tmpfs capped in bytes and files and owned by the run's uid, mounted
    by the worker (in its own mount namespace), so what the run compiled outlives the run for the
    worker to collect. Without the right to mount, a plain directory."""

    def __init__(self, path, uid, limits, can_mount):
        self.path = path
        self.capped = False
        if can_mount:
            try:
                _mount("tmpfs", path, "tmpfs", MS_NOSUID | MS_NODEV,
                       f"size={limits.scratch_mb}m,nr_inodes={limits.scratch_files},mode=0700,uid={uid},gid={uid}")
                self.capped = True
            except JailError:
                pass
        if not self.capped and os.getuid() == 0:
            os.chown(path, uid, uid)

    @classmethod
    def existing(cls, path, capped):
        """The handle on a scratch dir made by another process (the worker, for a run process)."""
        scratch = cls.__new__(cls)
        scratch.path, scratch.capped = path, capped
        return scratch

    def remove(self):
        if self.capped:
            libc.umount2(_encode(self.path), MNT_DETACH)
        shutil.rmtree(self.path, ignore_errors=True)


# ---------------------------------------------------------------- the run process (pid 1 of the run)

def die_with_parent():
    """SIGKILL when the parent goes: a worker that dies takes its run process (and so, as that
    is the namespace's init, every process of the run) with it."""
    prctl(PR_SET_PDEATHSIG, signal.SIGKILL)


def enter_namespaces(root_mountpoint, scratch, uid, devices, hidden, shared=None):
    """In the run process, still root: its own network (none), IPC, hostname and mount namespaces,
    and a minimal root (with `shared`, the gallery's compiled kernels, bound read-only at
    SHARED_AT). Returns (steps taken, the scratch dir's path as the run sees it)."""
    steps = ["pid namespace"] if os.getpid() == 1 else []
    if _unshare(CLONE_NEWNET):
        steps.append("no network")
    if _unshare(CLONE_NEWIPC | CLONE_NEWUTS):
        libc.sethostname(b"run", 3)
        steps.append("own IPC and hostname")
    if not _unshare(CLONE_NEWNS):
        return steps, scratch
    try:
        build_root(root_mountpoint, scratch, uid, devices, hidden, shared)
    except (JailError, OSError):
        return steps, scratch
    return steps + ["minimal read-only root"], "/tmp"


def readonly_paths(project_sandbox, hidden):
    """What the run's root holds, read-only: the system's programs and libraries, the Python
    install with its packages, the project's sandbox/ (never the rest of the project)."""
    wanted = ["/usr", *(os.path.join("/etc", name) for name in ETC_FILES), project_sandbox,
              sys.base_prefix, sys.base_exec_prefix, sys.prefix, sys.exec_prefix]
    wanted += [p for p in sys.path if p and os.path.isdir(p)]
    wanted += [p for p in os.environ.get("LD_LIBRARY_PATH", "").split(":") if p]
    project = os.path.dirname(project_sandbox)
    chosen = []
    for path in sorted({os.path.realpath(p) for p in wanted if os.path.exists(p)}, key=len):
        if path == "/" or any(_within(path, kept) for kept in chosen):
            continue
        # Never a directory that holds what a run must not see (the checkout, the runs, the database).
        if any(_within(secret, path) for secret in (project, *hidden)) and path != project_sandbox:
            continue
        chosen.append(path)
    return chosen


def _within(path, directory):
    return path == directory or path.startswith(directory.rstrip("/") + "/")


def build_root(mountpoint, scratch, uid, devices, hidden, shared=None):
    """A new root, as bubblewrap and nsjail build one: a tmpfs holding read-only binds of what a
    run needs, its scratch dir as /tmp (its only writable place), a /dev of a few nodes, a private
    /dev/shm, its own /proc (the other GPUs' driver entries covered); then pivot_root into it and drop the old root entirely. `shared` (a
    directory under the hidden run root) is bound read-only at SHARED_AT, the one part of it shown."""
    _mount(None, "/", None, MS_REC | MS_PRIVATE)
    _mount("tmpfs", mountpoint, "tmpfs", MS_NOSUID | MS_NODEV, "size=4m,nr_inodes=4096,mode=0755")
    new = lambda path: mountpoint + path  # noqa: E731
    # The scratch dir first: what is bound read-only may lie under /tmp (a checkout in /tmp/ci, say).
    _bind(scratch, new("/tmp"), readonly=False)
    project_sandbox = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # sandbox/, above jail/
    bound = readonly_paths(project_sandbox, hidden)
    for path in bound:
        _bind(path, new(path), readonly=True)
    if shared:
        _bind(shared, new(SHARED_AT), readonly=True)
    for parent in {p for path in bound for p in _ancestors(path)} - {"/etc", "/tmp"}:
        os.chmod(new(parent), 0o711)  # a way through to what is bound (/root/.pyenv/...), nothing to list
    for name in ("bin", "sbin", "lib", "lib32", "lib64", "libx32"):  # merged /usr: links into it
        if os.path.islink("/" + name):
            os.symlink(os.readlink("/" + name), new("/" + name))
        elif os.path.isdir("/" + name):
            _bind("/" + name, new("/" + name), readonly=True)
    _make_dev(new("/dev"), devices)
    os.makedirs(new("/etc"), exist_ok=True)
    for name, text in (("passwd", f"run:x:{uid}:{uid}::/tmp:/usr/sbin/nologin\n"), ("group", f"run:x:{uid}:\n"),
                       ("hostname", "run\n")):
        with open(new("/etc/" + name), "w") as f:
            f.write(text)
    os.makedirs(new("/proc"))
    _mount("proc", new("/proc"), "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC)
    for path in ("/proc/sys", "/proc/sysrq-trigger", "/proc/irq", "/proc/bus"):  # what root could still write
        if os.path.exists(new(path)):
            _bind(new(path), new(path), readonly=True)
    for path in gpus.others_entries(devices):  # the other GPUs' model, UUID and bus: covered, empty
        _mount("tmpfs", new(path), "tmpfs", MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC, "size=4k,nr_inodes=1,mode=0555")
    os.chdir(mountpoint)
    _check(libc.syscall(syscall_number("pivot_root"), b".", b"."), "pivot_root")
    _check(libc.umount2(b".", MNT_DETACH), "detach the old root")
    os.chdir("/")
    _mount(None, "/", None, MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | MS_NODEV)


def _ancestors(path):
    """'/a/b/c' -> ['/a', '/a/b']."""
    parts = path.strip("/").split("/")[:-1]
    return ["/" + "/".join(parts[:i + 1]) for i in range(len(parts))]


def _bind(source, target, readonly):
    if os.path.isdir(source):
        os.makedirs(target, exist_ok=True)
    else:
        os.makedirs(os.path.dirname(target), exist_ok=True)
        open(target, "a").close()
    _mount(source, target, None, MS_BIND | MS_REC)
    flags = MS_REMOUNT | MS_BIND | MS_NOSUID | (MS_RDONLY if readonly else 0)
    if not source.startswith("/dev/"):
        flags |= MS_NODEV
    _mount(None, target, None, flags)


def _make_dev(dev, devices):
    os.makedirs(dev)
    _mount("tmpfs", dev, "tmpfs", MS_NOSUID, "size=64k,nr_inodes=64,mode=0755")
    for name in (*DEV_NODES, *devices):
        if os.path.exists("/dev/" + name):
            _bind("/dev/" + name, os.path.join(dev, name), readonly=False)
    for name, target in (("fd", "/proc/self/fd"), ("stdin", "/proc/self/fd/0"), ("stdout", "/proc/self/fd/1"),
                         ("stderr", "/proc/self/fd/2")):
        os.symlink(target, os.path.join(dev, name))
    os.makedirs(os.path.join(dev, "shm"))
    _mount("tmpfs", os.path.join(dev, "shm"), "tmpfs", MS_NOSUID | MS_NODEV | MS_NOEXEC,
           f"size={Limits.shm_mb}m,mode=1777")
    _mount(None, dev, None, MS_REMOUNT | MS_RDONLY | MS_NOSUID)


def has_gpu():
    """A GPU this process may use, known without initialising anything (no CUDA, no NVML thread)."""
    if os.environ.get("CUDA_VISIBLE_DEVICES", None) in ("", "-1"):
        return False
    return any(name[len("nvidia"):].isdigit() for name in gpu_devices())


def gpu_devices():
    """The NVIDIA device nodes a run gets: the driver's control nodes (nvidiactl, UVM, MIG's caps) and
    the node of the GPU its worker was given (CUDA_VISIBLE_DEVICES, set per worker by the dispatcher
    and placed at /dev/nvidia<minor> by sandbox.gpus), so that a run can open no other GPU. Where the
    worker's GPUs cannot be placed (no variable, a MIG instance) every GPU's node."""
    try:
        names = os.listdir("/dev")
    except OSError:
        return []
    mine = gpus.selected(gpus.host_gpus(), os.environ.get("CUDA_VISIBLE_DEVICES"))
    wanted = {f"nvidia{gpu.minor}" for gpu in mine} if mine is not None else set(filter(gpus.GPU_NODE.fullmatch, names))
    return sorted(n for n in names if n in ("nvidiactl", "nvidia-uvm", "nvidia-uvm-tools", "nvidia-caps") or n in wanted)


def serve_as_init(child):
    """The run process after it forked the user process: reap whatever the run orphans (pid 1's
    duty), and end when the user process ends, with its status (a signal as 128 + its number).
    Its end kills every process left in the namespace."""
    while True:
        try:
            pid, status = os.waitpid(-1, 0)
        except ChildProcessError:
            os._exit(70)
        if pid == child:
            os._exit(128 + os.WTERMSIG(status) if os.WIFSIGNALED(status) else os.WEXITSTATUS(status))


# ---------------------------------------------------------------- the user process

def confine(uid, limits, memory_rlimit_mb, tasks_rlimit, python_reachable):
    """In the user process, last before the job: give up the uid, privileges and the syscalls a
    run never needs. Returns the steps taken."""
    steps = []
    if os.getuid() == 0:
        if python_reachable:
            drop_bounding_set()  # nothing can give a capability back, not even a setuid-root binary
            os.setgroups([])
            os.setresgid(uid, uid, uid)
            os.setresuid(uid, uid, uid)
            steps.append("own unprivileged uid")
        elif drop_capabilities():
            steps.append("root without capabilities")
    if prctl(PR_SET_NO_NEW_PRIVS, 1):
        steps.append("no new privileges")
    prctl(PR_SET_DUMPABLE, 0)  # its /proc entries out of reach of anything else running as its uid
    steps.append(set_limits(limits, memory_rlimit_mb, tasks_rlimit))
    refused = deny_syscalls()
    steps.append("seccomp filter" if refused is None else f"no seccomp filter ({refused})")
    return steps


def readable_by_others(path):
    """Every directory down to `path` lets others through: another uid can still import from it."""
    path = os.path.realpath(path)
    while True:
        if not os.stat(path).st_mode & 0o005:
            return False
        if path == "/":
            return True
        path = os.path.dirname(path)


def drop_capabilities():
    """Empty every capability set of this root process, the bounding set first (so exec gives
    none back): for hosts where the Python install is out of other users' reach."""
    if not drop_bounding_set():
        return False
    if libc.prctl(PR_SET_SECUREBITS, SECUREBITS, 0, 0, 0) != 0:
        return False
    header = (ctypes.c_uint32 * 2)(0x20080522, 0)  # _LINUX_CAPABILITY_VERSION_3, this process
    data = (ctypes.c_uint32 * 6)()
    try:
        return libc.syscall(syscall_number("capset"), header, data) == 0
    except JailError:
        return False


def drop_bounding_set():
    with open("/proc/sys/kernel/cap_last_cap") as f:
        last = int(f.read())
    return all(libc.prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) == 0 for cap in range(last + 1))


def set_limits(limits, memory_rlimit_mb, tasks_rlimit):
    """Per-process limits: on files always; on memory (address space, CPU runs only: CUDA maps
    more than any sane limit) and tasks (per uid, which is the run's own) where no cgroup applies."""
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    resource.setrlimit(resource.RLIMIT_FSIZE, (limits.file_mb << 20,) * 2)
    resource.setrlimit(resource.RLIMIT_NOFILE, (limits.open_files,) * 2)
    if tasks_rlimit:
        resource.setrlimit(resource.RLIMIT_NPROC, (tasks_rlimit,) * 2)
    if memory_rlimit_mb:
        with open("/proc/self/statm") as f:  # on top of what the warm process already maps
            mapped = int(f.read().split()[0]) * resource.getpagesize()
        limit = mapped + (memory_rlimit_mb << 20)
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    return "rlimits"


def deny_syscalls():
    """A seccomp filter: EPERM for DENIED_SYSCALLS, for a socket of a family not in SOCKET_FAMILIES,
    for clone into any new namespace, and for
    prctl(PR_SET_DUMPABLE) (not dumpable stays so); clone3 answers ENOSYS, so the C library falls
    back to clone, whose flags the filter can see. Syscalls of other ABIs (i386, x32) kill.
    Returns None once loaded, else why not (for /healthz)."""
    try:
        import pyseccomp as seccomp
        rules = seccomp.SyscallFilter(seccomp.ALLOW)
        # A seccomp filter would otherwise also turn on the kernel's Spectre v4 (speculative store
        # bypass) mitigation for the process, a cost on CPU-bound code that a process without a
        # filter does not pay either (the kernel's default leaves it opt-in).
        rules.set_attr(seccomp.Attr.CTL_SSB, 1)
        deny = seccomp.ERRNO(errno.EPERM)
        for name in DENIED_SYSCALLS:
            try:
                rules.add_rule(deny, name)
            except (OSError, ValueError):  # unknown to this libseccomp: the kernel predates it too
                pass
        rules.add_rule(deny, "prctl", seccomp.Arg(0, seccomp.EQ, PR_SET_DUMPABLE))
        for flag in NAMESPACE_FLAGS:
            rules.add_rule(deny, "clone", seccomp.Arg(0, seccomp.MASKED_EQ, flag, flag))
        rules.add_rule(seccomp.ERRNO(errno.ENOSYS), "clone3")
        for call in ("socket", "socketpair"):
            for family in set(range(max(SOCKET_FAMILIES))) - set(SOCKET_FAMILIES):
                rules.add_rule(deny, call, seccomp.Arg(0, seccomp.EQ, family))
            # Above the largest allowed, as a 64-bit value: an int with high bits set is caught too.
            rules.add_rule(deny, call, seccomp.Arg(0, seccomp.GT, max(SOCKET_FAMILIES)))
        rules.load()
    except (ImportError, OSError, RuntimeError, AttributeError) as e:
        return f"{type(e).__name__}: {e}"
    return None
