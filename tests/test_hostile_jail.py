"""The jail, attacked from inside a run: each case is one attack a user's run makes, and asserts
(a) the denial, precisely (the errno, the exception, the file that is not there), (b) that the
server is alive (GET /healthz is 200 and ok) and (c) that the next normal run works.

The jail these cases describe: a run sees only its own processes (its own PID namespace), a minimal
read-only root whose only writable place is its capped /tmp, an unprivileged uid, no capabilities,
no new privileges, a seccomp filter, no inherited descriptors, no network and no server secrets.
Runs go through one app with two real workers (the interpreter on this CPU); the attack sources are
in tests/support/attacks/, the checker in tests/support/hostile.py. The limits of a run as a whole
are attacked in test_hostile_limits.py, the web server in test_hostile_server.py."""
import contextlib
import hashlib
import os
import secrets
import threading
import time

import pytest

from sandbox.worker.run_process import RUN_ENVIRONMENT
from tests.support import ROOT
from tests.support import attacks as H
from tests.support.hostile import (ENOENT, EPERM, GONE, NO_NETWORK, NOT_THERE, NOT_THERE_OR_READ_ONLY,
                                   READ_ONLY, Expect, Returns, alive, case, check, children_of, comm_of, findings_of,
                                   host_pids, hostile_spec, result_summary, stat_fields, wait_for)
from tests.support.hostile_targets import hostile, listeners, survives  # noqa: F401  (fixtures)

pytestmark = pytest.mark.integration  # every attack runs in a real jailed run process

RUN_ENVIRONMENT = set(RUN_ENVIRONMENT)
RUN_SETS = {"TMPDIR", "HOME", "TRITON_CACHE_DIR", "PLAYGROUND_SHARED_KERNELS", "TRITON_CACHE_MANAGER"}  # by the run itself
DEV_NODES = {"null", "zero", "full", "random", "urandom", "shm", "fd", "stdin", "stdout", "stderr"}


UNSHARE_FLAGS = {"newns": 0x00020000, "newnet": 0x40000000, "newpid": 0x20000000, "newuts": 0x04000000,
                 "newipc": 0x08000000, "newcgroup": 0x02000000, "newtime": 0x80, "no_flags": 0}

RUN_CASES = [
    # processes: a run sees and signals only its own
    case("proc_lists_only_the_runs_own_processes", H.PROC_LISTING,
         pids=Returns(lambda pids: 1 in pids and len(pids) <= 16 and max(pids) < 1000,
                      "a handful of small pids, the run's init being 1")),
    case("host_processes_cannot_be_signalled", H.KILL_HOST_PROCESSES, alive=("victim_pid",),
         kill_victim=GONE, signal_test_process=GONE, signal_worker=GONE),
    # who the run is
    case("uid_is_not_root", "attempt('uid', os.getuid)\nattempt('euid', os.geteuid)",
         uid=Returns(lambda uid: uid != 0, "a uid other than 0"), euid=Returns(lambda uid: uid != 0, "not 0")),
    case("no_capabilities_and_no_new_privileges",
         "attempt('proc_status', status_fields, 'CapInh', 'CapPrm', 'CapEff', 'CapBnd', 'CapAmb', 'NoNewPrivs')",
         proc_status=Returns({**{cap: "0000000000000000" for cap in ("CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb")},
                              "NoNewPrivs": "1"})),
    case("seccomp_filter_is_on", "attempt('seccomp', status_fields, 'Seccomp')", seccomp=Returns({"Seccomp": "2"})),
    case("home_and_temp_dir_are_the_scratch_tmp",
         "attempt('places', lambda: {'cwd': os.getcwd(), 'HOME': os.environ.get('HOME'), 'TMPDIR': os.environ.get('TMPDIR')})",
         places=Returns({"cwd": "/tmp", "HOME": "/tmp", "TMPDIR": "/tmp"})),
    # files the run must not find
    case("etc_shadow_does_not_exist", "attempt('read', read, '/etc/shadow')", read=ENOENT),
    # /root holds only a way through to a Python install that lives under it (this CI host's): nothing to list
    case("root_home_cannot_be_listed", "attempt('list', os.listdir, '/root')", list=NOT_THERE),
    case("root_home_has_no_keys", "attempt('list', os.listdir, '/root/.ssh')", list=ENOENT),
    case("home_does_not_exist", "attempt('list', os.listdir, '/home')", list=ENOENT),
    case("server_config_does_not_exist", "attempt('read', read, CONTEXT['checkout'] + '/app/config.py')", read=ENOENT),
    case("server_code_dir_does_not_exist", "attempt('list', os.listdir, CONTEXT['checkout'] + '/app')", list=ENOENT),
    case("database_does_not_exist", "attempt('read', read, CONTEXT['database'])", read=ENOENT),
    case("passwd_and_group_name_only_the_run_user", H.PASSWD,
         other_users=Returns([]), other_groups=Returns([])),
    case("other_runs_scratch_dirs_are_out_of_sight", H.OTHER_SCRATCH,
         other_scratch_dirs=Returns([]), run_root=ENOENT),
    case("dev_holds_only_harmless_nodes", H.DEV_LISTING,
         dev=Returns(lambda names: not [n for n in names if n not in DEV_NODES and not n.startswith("nvidia")],
                     "only null, zero, full, random, urandom, shm (and nvidia*)")),
    case("host_disk_cannot_be_read", "attempt('disk', read, CONTEXT['disk'], 512)", disk=NOT_THERE),
    # the host's settings: each write puts back the value read, so a write that passes changes nothing
    case("write_core_pattern", "attempt('write', write_back, '/proc/sys/kernel/core_pattern')", write=READ_ONLY),
    case("write_overcommit_memory", "attempt('write', write_back, '/proc/sys/vm/overcommit_memory')", write=READ_ONLY),
    case("write_hostname", "attempt('write', write_back, '/proc/sys/kernel/hostname')", write=READ_ONLY),
    case("create_a_file_in_dev", "attempt('create', create, '/dev/' + CONTEXT['marker'])",
         host_absent=("/dev/{marker}",), create=READ_ONLY),
    case("create_a_cgroup", H.CGROUP_MKDIR, host_absent=("/sys/fs/cgroup/pids/{marker}", "/sys/fs/cgroup/{marker}"),
         mkdir=NOT_THERE_OR_READ_ONLY),
    case("write_cgroup_release_agent", H.CGROUP_RELEASE_AGENT, release_agent=NOT_THERE_OR_READ_ONLY),
    case("write_into_etc", "attempt('create', create, '/etc/' + CONTEXT['marker'])",
         host_absent=("/etc/{marker}",), create=NOT_THERE_OR_READ_ONLY),
    case("write_into_usr", "attempt('create', create, '/usr/' + CONTEXT['marker'])",
         host_absent=("/usr/{marker}",), create=NOT_THERE_OR_READ_ONLY),
    case("write_into_the_checkouts_sandbox_dir",
         "attempt('create', create, CONTEXT['checkout'] + '/sandbox/' + CONTEXT['marker'] + '.py')",
         host_absent=(os.path.join(ROOT, "sandbox", "{marker}.py"),), create=NOT_THERE_OR_READ_ONLY),
    # system calls the seccomp filter refuses
    case("unshare_user_then_mount_namespace",
         "attempt('newuser', syscall, 'unshare', 0x10000000)\nattempt('newns', syscall, 'unshare', 0x00020000)",
         newuser=EPERM, newns=EPERM),
    case("unshare_any_other_namespace",
         "".join(f"attempt({name!r}, syscall, 'unshare', {flag})\n" for name, flag in UNSHARE_FLAGS.items()),
         **{name: EPERM for name in UNSHARE_FLAGS}),
    case("setns", "attempt('setns', lambda: syscall('setns', os.open('/proc/self/ns/net', os.O_RDONLY), 0))",
         setns=EPERM),
    case("mount", H.MOUNT, mount_on_etc=EPERM, remount=EPERM),
    case("umount", "attempt('umount_tmp', syscall, 'umount2', b'/tmp', 4)\n"  # MNT_EXPIRE: a first call only marks
                   "attempt('umount_proc', syscall, 'umount2', b'/proc', 4)", umount_tmp=EPERM, umount_proc=EPERM),
    case("pivot_root", H.PIVOT_ROOT, pivot_root=EPERM),
    case("chroot", "attempt('chroot', os.chroot, '/tmp')", chroot=EPERM),
    case("ptrace", H.PTRACE, seize_worker=EPERM, traceme=EPERM),
    case("keyctl", "attempt('keyctl', syscall, 'keyctl', 1, None)", keyctl=EPERM),  # join a new session keyring
    case("add_key", "attempt('add_key', syscall, 'add_key', b'user', b'hostile', b'secret', 6, -2)", add_key=EPERM),
    case("bpf", H.BPF, bpf=EPERM),
    case("perf_event_open", H.PERF_EVENT, perf=EPERM),
    case("userfaultfd", "attempt('userfaultfd', syscall, 'userfaultfd', 0o2000000 | 1)", userfaultfd=EPERM),
    case("process_vm_readv", H.PROCESS_VM_READV, read_worker=EPERM),
    case("load_a_kernel_module", H.MODULES, init_module=EPERM, finit_module=EPERM),
    case("kexec_load", "attempt('kexec', syscall, 'kexec_load', 0, 0, None, 0x7fff0000)", kexec=EPERM),
    case("reboot", "attempt('reboot', syscall, 'reboot', 0, 0, 0, None)", reboot=EPERM),  # a wrong magic
    case("prctl_set_dumpable",
         "attempt('set_dumpable', lambda: checked(libc.prctl(4, 1, 0, 0, 0), 'prctl(PR_SET_DUMPABLE, 1)'))\n"
         "attempt('dumpable', libc.prctl, 3, 0, 0, 0, 0)",
         set_dumpable=EPERM, dumpable=Returns(0)),
    case("socket_families_other_than_unix_and_ip", H.SOCKET_FAMILIES,
         vsock=EPERM, netlink=EPERM, packet=EPERM, bluetooth=EPERM, alg=EPERM, high_bits_vsock=EPERM,
         vsock_pair=EPERM, unix_pair=Returns("opened"), ip=Returns("opened")),
    # channels
    case("forged_result_on_every_descriptor", H.FORGE_RESULT, real_result=True),
    case("tcp_to_the_hosts_loopback", "attempt('tcp', tcp, '127.0.0.1', CONTEXT['tcp_port'])", tcp=NO_NETWORK),
    case("tcp_to_the_internet", "attempt('tcp', tcp, '1.1.1.1', 53)", tcp=NO_NETWORK),
    case("udp", "attempt('local', udp, '127.0.0.1', CONTEXT['udp_port'])\nattempt('remote', udp, '8.8.8.8', 53)",
         local=NO_NETWORK, remote=NO_NETWORK),
    case("abstract_unix_socket", "attempt('abstract', abstract_unix, CONTEXT['abstract'])", abstract=NO_NETWORK),
    case("no_server_secret_in_the_environment", H.OWN_ENVIRONMENT,
         secret_key=Returns(False), secret_value=Returns(False), test_process_environ=NOT_THERE,
         credential=Returns([]), names=Returns(lambda names: set(names) <= RUN_ENVIRONMENT | RUN_SETS,
                                               "only the run environment's names")),
]


@pytest.mark.parametrize("attack, expect", RUN_CASES)
def test_a_hostile_run_is_denied(hostile, attack, expect):
    hostile.attack(attack, expect)


# ---------------------------------------------------------------- the attacks of more than one step

def concurrent_run_of_another_owner(h):
    """Run A (one owner) names itself and sleeps on one worker; run B (another owner) looks for it
    and kills it. A must finish ok."""
    comm = "h" + secrets.token_hex(7)
    alice, bob = h.target.new_client(), h.target.new_client()
    box = {}
    sleeper = hostile_spec(H.SLEEPER, h.context(comm=comm))
    thread = threading.Thread(target=lambda: box.update(a=h.target.run(sleeper, alice)))
    thread.start()
    try:
        found = wait_for(lambda: [p for p in host_pids() if comm_of(p) == comm], 30)
        assert found, "run A never started"
        context = h.context(comm=comm, other_run_pid=found[0])
        result = h.target.run(hostile_spec(H.KILL_CONCURRENT_RUN, context), bob)
        problems = []
        try:
            check(result, Expect({"seen": Returns([]), "kill_by_pid": GONE}), context)
        except AssertionError as e:
            problems.append(str(e))
    finally:
        thread.join(60)
    if box.get("a", {}).get("status") != "ok":
        problems.append(f"run A did not finish ok: {result_summary(box.get('a', {}))}")
    assert not problems, "\n".join(problems)


def runs_at_once(h, specs_and_clients):
    """Run the specs concurrently (with two workers, each takes one): their results, in order."""
    results = [None] * len(specs_and_clients)

    def one(i, spec, client):
        results[i] = h.target.run(spec, client)

    threads = [threading.Thread(target=one, args=(i, *pair)) for i, pair in enumerate(specs_and_clients)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(120)
    return results


def a_previous_runs_job_is_not_in_a_later_runs_memory(h):
    """Alice's runs (one on each worker) hold a secret in their source and output; then Bob's runs
    (again one on each worker) scan all they inherited: every readable page of their address space
    and every object Python keeps. Run processes descend from a zygote that never held a job."""
    prefix = "PLANTED-"
    planted = prefix + secrets.token_hex(12)
    alice, bob = h.target.new_client(), h.target.new_client()
    # Two rounds of one run on each worker: each worker's two spare run processes are then forked
    # after it held Alice's job (a worker keeps two warm).
    for _ in range(2):
        plants = runs_at_once(h, [(hostile_spec(H.PLANT, h.context(plant=planted, hold_s=1.0)), alice)] * 2)
        assert all(r and r["status"] == "ok" and planted in r["stdout"] for r in plants), \
            [result_summary(r or {}) for r in plants]
    context = h.context(prefix=prefix, length=len(planted) - len(prefix),
                        digest=hashlib.sha256(planted.encode()).hexdigest())
    for _ in range(2):
        for scan in runs_at_once(h, [(hostile_spec(H.MEMORY_SCAN, context), bob)] * 2):
            check(scan, Expect({"memory": Returns(lambda v: v["found"] == 0 and v["scanned_mb"] > 100,
                                                  "no copy of the secret in 100+ MB read"),
                                "objects": Returns(0)}), context)


def idle_run_process_of_the_other_worker(h):
    """Both workers idle, each with its spare run processes forked ahead of need: a run kills every
    one it is told of. The other worker's must live on."""
    workers = h.target.worker_pids()

    def idle_now():
        """Each worker's spare run processes, once the last run's process is reaped and the next forked."""
        first = {w: children_of(w) for w in workers}
        time.sleep(0.3)
        second = {w: children_of(w) for w in workers}
        return first if first == second and all(len(kids) == 2 for kids in first.values()) else None

    idle = wait_for(idle_now, 30)
    assert idle and len(idle) == 2, f"two idle workers with two spare run processes each: {idle}"
    runs = lambda: {w["pid"]: w["runs"] for w in h.target.workers()}  # noqa: E731
    runs_before = runs()
    context = h.context(idle_runs=[p for kids in idle.values() for p in kids])
    result = h.target.run(hostile_spec(H.KILL_IDLE_RUNS, context))
    wait_for(lambda: sum(runs().values()) > sum(runs_before.values()), 10)
    ran = {pid for pid, count in runs().items() if count != runs_before.get(pid, count)}
    others = [p for w, kids in idle.items() if w not in ran for p in kids]
    problems = []
    try:
        check(result, Expect({"kill_idle_runs": Returns(["ProcessLookupError"])}), context)
    except AssertionError as e:
        problems.append(str(e))
    if not others or not all(alive(p) for p in others):
        problems.append(f"the other worker's run process is gone: {[(p, stat_fields(p)) for p in others]}")
    assert not problems, "\n".join(problems)


def own_worker_killed_and_a_daemon_left(h):
    """A run leaves a double-forked daemon (new session) and kills its worker: the worker lives,
    and nothing of the run outlives it."""
    context = h.context()
    result = h.target.run(hostile_spec(H.KILL_WORKER_LEAVE_DAEMON, context))
    try:
        check(result, Expect({"daemon": Returns("started"), "kill_worker": Returns(["ProcessLookupError"])},
                             strays=True), context)
    finally:
        h.clean(context)


def dev_shm_is_not_shared_between_runs(h):
    context = h.context()
    try:
        first = h.target.run(hostile_spec("attempt('plant', create, '/dev/shm/' + CONTEXT['marker'])", context))
        assert first["status"] == "ok", result_summary(first)
        second = h.target.run(hostile_spec("attempt('seen', os.path.exists, '/dev/shm/' + CONTEXT['marker'])", context))
        check(second, Expect({"seen": Returns(False)}, host_absent=("/dev/shm/{marker}",)), context)
    finally:
        h.clean(context)


def descriptor_targets(pid):
    found = set()
    with contextlib.suppress(OSError):
        for name in os.listdir(f"/proc/{pid}/fd"):
            with contextlib.suppress(OSError):
                found.add(os.readlink(f"/proc/{pid}/fd/{name}"))
    return found


RUN_OWN_DESCRIPTORS = ("/dev/null", "/dev/urandom", "/dev/nvidia", "anon_inode:", "/usr/", "/tmp/", "/proc/")


def no_descriptor_reaches_outside_the_run(h):
    """The run's descriptors, each named: its stdio and pipes to its worker (0-4), and beyond them
    only what it opened itself (on a GPU, CUDA's device nodes, eventfds and its own pipes). None is a
    pipe or socket that any process outside the run holds: not the worker's, the zygote's or the
    server's."""
    context = h.context()
    result = h.target.run(hostile_spec(H.DESCRIPTORS, context))
    findings = findings_of(result) or {}
    held = (findings.get("descriptors") or {}).get("returned")
    assert isinstance(held, dict), f"the run did not list its descriptors: {result_summary(result)}"
    workers = h.target.worker_pids()
    outside = set()
    for pid in [os.getpid(), *workers, *[p for w in workers for p in host_pids() if (stat_fields(p) or (0, 0))[1] == w]]:
        outside |= {t for t in descriptor_targets(pid) if t.startswith(("pipe:", "socket:"))}
    channels = {held.get(fd) for fd in ("1", "3", "4")}  # its output, job and message pipes
    problems = [f"fd {fd} -> {target}" for fd, target in sorted(held.items(), key=lambda kv: int(kv[0]))
                if int(fd) > 4 and (target in outside or not (target.startswith(("pipe:", "socket:"))
                                                            or target.startswith(RUN_OWN_DESCRIPTORS)))]
    problems += [f"fd {fd} -> {target}" for fd, target in held.items()
                 if int(fd) <= 4 and target not in channels and target != "/dev/null"]
    assert not problems, f"descriptors reaching outside the run ({len(held)} held): {problems}"


SCENARIOS = [
    pytest.param(no_descriptor_reaches_outside_the_run, "hostile", id="descriptors_of_the_run"),
    pytest.param(a_previous_runs_job_is_not_in_a_later_runs_memory, "hostile", id="read_a_previous_runs_job_from_memory"),
    pytest.param(concurrent_run_of_another_owner, "hostile", id="kill_a_concurrent_run_of_another_owner"),
    pytest.param(idle_run_process_of_the_other_worker, "hostile", id="kill_the_other_workers_idle_run_process"),
    pytest.param(own_worker_killed_and_a_daemon_left, "hostile", id="kill_own_worker_and_leave_a_daemon"),
    pytest.param(dev_shm_is_not_shared_between_runs, "hostile", id="dev_shm_file_left_for_the_next_run"),
]


@pytest.mark.parametrize("scenario, target", SCENARIOS)
def test_a_hostile_scenario_is_denied(request, scenario, target):
    survives(request.getfixturevalue(target), scenario)
