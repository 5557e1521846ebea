"""A run's cgroup: memory, tasks and CPU of all of one run's processes together (RunCgroup, v2 or
v1), below a parent this server's workers share (runs_cgroup_v2, runs_cgroup_v1), and the ones
dead workers left behind swept away (sweep_cgroups)."""
import errno
import os
import time


RUN_CONTROLLERS = ("memory", "pids", "cpu")
CPU_PERIOD_US = 100_000


def cpu_quota_us():
    """A run may use every core but one (one core on a host of one): however many processes it
    spins, the server and the other runs keep a core, and the CPU's weight is shared evenly."""
    return max(1, (os.cpu_count() or 1) - 1) * CPU_PERIOD_US


class RunCgroup:
    """Memory, tasks and CPU of all of one run's processes together: a cgroup of its own (v2, or
    the memory, pids and cpu hierarchies of v1). The run process joins it before it forks anything."""

    def __init__(self, paths, kind):
        self.paths, self.kind = paths, kind

    @classmethod
    def create(cls, name, limits):
        """A new cgroup for a run, or None where the host delegates none to this process."""
        try:
            if os.path.exists("/sys/fs/cgroup/cgroup.controllers"):
                return cls._create_v2(name, limits)
            return cls._create_v1(name, limits)
        except OSError:
            return None

    @classmethod
    def _create_v2(cls, name, limits):
        parent = runs_cgroup_v2()
        if parent is None:
            return None
        path = os.path.join(parent, name)
        os.makedirs(path, exist_ok=True)
        controllers = _read(os.path.join(parent, "cgroup.subtree_control")).split()
        if "memory" in controllers:
            _write(os.path.join(path, "memory.max"), limits.memory_mb << 20)
            _write(os.path.join(path, "memory.swap.max"), 0, missing_ok=True)
        if "pids" in controllers:
            _write(os.path.join(path, "pids.max"), limits.tasks)
        if "cpu" in controllers:  # the same weight as every other run, and never every core
            _write(os.path.join(path, "cpu.weight"), 100)
            _write(os.path.join(path, "cpu.max"), f"{cpu_quota_us()} {CPU_PERIOD_US}")
        kept = [c for c in RUN_CONTROLLERS if c in controllers]
        return cls([path], "cgroup v2 (" + ", ".join(kept) + ")") if kept else None

    @classmethod
    def _create_v1(cls, name, limits):
        paths, kept = [], []
        for controller, files in (("memory", {"memory.limit_in_bytes": limits.memory_mb << 20,
                                              "memory.memsw.limit_in_bytes": limits.memory_mb << 20}),
                                  ("pids", {"pids.max": limits.tasks}),
                                  ("cpu", {"cpu.shares": 1024, "cpu.cfs_period_us": CPU_PERIOD_US,
                                           "cpu.cfs_quota_us": cpu_quota_us()})):
            parent = runs_cgroup_v1(controller)
            if parent is None:
                continue
            path = os.path.join(parent, "playground-" + name)
            try:
                os.makedirs(parent, exist_ok=True)
                os.mkdir(path)
                for file, value in files.items():
                    _write(os.path.join(path, file), value, missing_ok=file.startswith("memory.memsw"))
            except OSError:
                continue
            paths.append(path)
            kept.append(controller)
        return cls(paths, "cgroup v1 (" + ", ".join(kept) + ")") if paths else None

    def make_idle(self):
        """The CPU goes to every other cgroup first (a compile ahead, a warm-up): the group's weight at
        its least and, where the kernel has it, the group itself idle (`cpu.idle`). A process's own
        SCHED_IDLE is not enough: it yields only to the processes of its own cgroup, and the host
        shares the CPU between cgroups by their weights."""
        for path in self.paths:
            for name, least in (("cpu.weight", 1), ("cpu.shares", 2), ("cpu.idle", 1)):
                file = os.path.join(path, name)
                try:
                    if os.path.exists(file):
                        _write(file, least)
                except OSError:  # not ours to set here: the process's own SCHED_IDLE is what is left
                    pass

    def join(self):
        """Move the calling process in (its children follow)."""
        for path in self.paths:
            _write(os.path.join(path, "cgroup.procs"), 0)

    def out_of_memory(self):
        """Did the kernel kill a process of this run for exceeding its memory?"""
        for path in self.paths:
            for name in ("memory.events", "memory.oom_control"):
                for line in _read(os.path.join(path, name)).splitlines():
                    key, _, value = line.partition(" ")
                    if key == "oom_kill" and value.strip().isdigit() and int(value) > 0:
                        return True
        return False

    def reached_memory_limit(self):
        """Did the run's memory reach its limit (it may then stall in reclaim rather than be killed)?"""
        for path in self.paths:
            for line in _read(os.path.join(path, "memory.events")).splitlines():
                key, _, value = line.partition(" ")
                if key in ("max", "oom") and value.strip().isdigit() and int(value) > 0:
                    return True
            failures = _read(os.path.join(path, "memory.failcnt")).strip()
            if failures.isdigit() and int(failures) > 0:
                return True
        return False

    def remove(self):
        for path in self.paths:
            for _ in range(50):  # the last processes of the run may still be exiting
                try:
                    os.rmdir(path)
                    break
                except FileNotFoundError:
                    break
                except OSError:
                    time.sleep(0.01)


def sweep_cgroups(is_dead):
    """Remove the run cgroups that workers now dead left behind (named after their worker's pid), and
    in v1 the parents of servers now dead (named after the server's pid)."""
    if os.path.exists("/sys/fs/cgroup/cgroup.controllers"):
        parents = [runs_cgroup_v2()]
    else:
        parents = [runs_cgroup_v1(c) for c in RUN_CONTROLLERS]
        parents += [os.path.join(os.path.dirname(own), name) for own in filter(None, parents[:])
                    for name in _listdir(os.path.dirname(own)) if _dead_parent(name, is_dead)]
    for parent in filter(None, parents):
        for name in _listdir(parent):
            fields = name.removeprefix("playground-").split("-")
            if fields[0] == "run" and len(fields) >= 3 and fields[1].isdigit() and is_dead(int(fields[1])):
                _rmdir(os.path.join(parent, name))
        if _dead_parent(os.path.basename(parent), is_dead):
            _rmdir(parent)


def _dead_parent(name, is_dead):
    pid = name.removeprefix(RUNS_PARENT + "-")
    return name.startswith(RUNS_PARENT + "-") and pid.isdigit() and is_dead(int(pid))


def _listdir(path):
    try:
        return os.listdir(path)
    except OSError:
        return []


def _rmdir(path):
    try:
        os.rmdir(path)
    except OSError:
        pass


def own_cgroup(controller=None):
    """This process's cgroup path: the v2 one (controller None) or a v1 hierarchy's."""
    try:
        lines = _read("/proc/self/cgroup").splitlines()
    except OSError:
        return None
    for line in lines:
        _, controllers, path = line.split(":", 2)
        if (controller is None and controllers == "") or controller in controllers.split(","):
            return path
    return None


LEAF = "playground-server"
RUNS_PARENT = "playground-runs"  # the runs' cgroups are its children: together they weigh as one against the host


def runs_cgroup_v1(controller):
    """The parent of the runs' cgroups in a v1 hierarchy (made by the first run's create), as v2's
    (runs_cgroup_v2): the runs and compiles ahead share out its CPU among themselves, where an idle
    compile gives way to a run but not to the rest of the host. One per server (named after the
    workers' parent process), as a v2 service has its own cgroup: another server's runs on the host
    are the rest of the host."""
    own, root = own_cgroup(controller), os.path.join("/sys/fs/cgroup", controller)
    if own is None or not os.path.isdir(root):
        return None
    return os.path.join(root + own, f"{RUNS_PARENT}-{os.getppid()}")


def runs_cgroup_v2():
    """The parent of the runs' v2 cgroups: this process's cgroup, with memory (and pids) enabled
    for its children. v2 allows controllers below a cgroup only if no process sits in it, so the
    processes found there (this server's) first move to a leaf of their own, as a delegated
    service manager would arrange."""
    own = own_cgroup()
    if own is None:
        return None
    base = "/sys/fs/cgroup" + own
    if os.path.basename(base) == LEAF:  # moved there by an earlier worker of this server
        base = os.path.dirname(base)
    wanted = [c for c in RUN_CONTROLLERS if c in _read(os.path.join(base, "cgroup.controllers")).split()]
    enabled = _read(os.path.join(base, "cgroup.subtree_control")).split()
    if not wanted:
        return None
    if not all(c in enabled for c in wanted) and not enable_below(base, wanted):
        return None
    runs = os.path.join(base, RUNS_PARENT)
    os.makedirs(runs, exist_ok=True)
    try:
        _write(os.path.join(runs, "cgroup.subtree_control"), " ".join("+" + c for c in wanted))
    except OSError:
        return None
    return runs


def enable_below(base, wanted, attempts=20):
    """Move the processes of `base` to its leaf and enable `wanted` for its children. Another worker
    of this server may do the same at once, and the server may fork a process into `base` meanwhile
    (then the kernel answers EBUSY): move again and retry. False if it never held."""
    leaf = os.path.join(base, LEAF)
    os.makedirs(leaf, exist_ok=True)
    for _ in range(attempts):
        for pid in _read(os.path.join(base, "cgroup.procs")).split():
            try:
                _write(os.path.join(leaf, "cgroup.procs"), pid)
            except OSError:
                pass  # gone, or a kernel thread
        try:
            _write(os.path.join(base, "cgroup.subtree_control"), " ".join("+" + c for c in wanted))
            return True
        except OSError as e:
            if e.errno != errno.EBUSY:
                return False
            time.sleep(0.05)
    return False


def _read(path):
    try:
        with open(path) as f:
            return f.read()
    except FileNotFoundError:
        return ""


def _write(path, value, missing_ok=False):
    try:
        with open(path, "w") as f:
            f.write(str(value))
    except FileNotFoundError:
        if not missing_ok:
            raise
