"""The hostile corpus: each case is one attack a user's run (or a request) makes, and asserts
(a) the denial, precisely (the errno, the exception, the file that is not there), (b) that the
server is alive (GET /healthz is 200 and ok) and (c) that the next normal run works.

Runs go through one app with real workers (the interpreter on this CPU); the attacks on the web
server process itself go through a real gunicorn server started as a subprocess. The attack sources
are in tests/hostile_cases.py. The jail these cases describe: a run sees only its own processes (its
own PID namespace), a minimal read-only root whose only writable place is its capped /tmp, an
unprivileged uid, no capabilities, no new privileges, a seccomp filter, limits for the run as a
whole (memory, tasks, file size), no inherited descriptors, no network and no server secrets.
"""
import contextlib
import glob
import hashlib
import http.client
import json
import os
import secrets
import signal
import socket
import subprocess
import sys
import textwrap
import threading
import time
from dataclasses import dataclass

import pytest

from sandbox.jail.isolation import Limits
from sandbox.worker.run_process import RUN_ENVIRONMENT
from tests import hostile_cases as H
from app.gallery import load_example
from tests.support import ROOT, VECTOR_ADD, vector_add_spec, wait_until_ready, wait_until_warmed

pytestmark = pytest.mark.integration  # every attack runs in a real jailed run process

SECRET = "hostile-secret-" + secrets.token_hex(8)
CREDENTIAL = "nvapi-" + secrets.token_hex(8)  # a credential-shaped variable of the server's, NVIDIA_API_KEY
RUN_ENVIRONMENT = set(RUN_ENVIRONMENT)
RUN_SETS = {"TMPDIR", "HOME", "TRITON_CACHE_DIR", "PLAYGROUND_SHARED_KERNELS", "TRITON_CACHE_MANAGER"}  # by the run itself
RUN_TIMEOUT_S = 20.0
RUN_MEMORY_MB = 4096  # the memory bomb goes over it without pressing on the host
FINDINGS = "HOSTILE-FINDINGS "


# ---------------------------------------------------------------- what a denial looks like

class Denied:
    """The step raised: an exception of one of these names, or an OSError with one of these errnos."""

    def __init__(self, *codes, words=()):
        self.codes, self.words = codes, words

    def __call__(self, outcome):
        return ("raised" in outcome and (outcome["raised"] in self.codes or outcome["errno"] in self.codes)
                and all(word in outcome["message"] for word in self.words))

    def __repr__(self):
        return "denied with " + " or ".join(self.codes) + "".join(f", saying {w!r}" for w in self.words)


class Returns:
    """The step returned this value (or one the predicate accepts)."""

    def __init__(self, expected, meaning=None):
        self.expected, self.meaning = expected, meaning

    def __call__(self, outcome):
        if "returned" not in outcome:
            return False
        value = outcome["returned"]
        return self.expected(value) if callable(self.expected) else value == self.expected

    def __repr__(self):
        return self.meaning or f"returns {self.expected!r}"


ENOENT = Denied("ENOENT")
EPERM = Denied("EPERM")
ENOSPC = Denied("ENOSPC")
GONE = Denied("ProcessLookupError")
NOT_THERE = Denied("ENOENT", "EACCES", "EPERM")
READ_ONLY = Denied("EROFS", "EACCES", "EPERM")
NOT_THERE_OR_READ_ONLY = Denied("ENOENT", "EROFS", "EACCES", "EPERM")
NO_NETWORK = Denied("ENETUNREACH", "EHOSTUNREACH", "ECONNREFUSED", "EPERM", "EACCES", "EAFNOSUPPORT")
UNREACHABLE = Denied("ENOENT", "ECONNREFUSED", "EACCES", "EPERM")
DEV_NODES = {"null", "zero", "full", "random", "urandom", "shm", "fd", "stdin", "stdout", "stderr"}


@dataclass
class Expect:
    denials: dict
    status: str = "ok"           # the run's own result; "error" with one of `phases` for limits
    phases: tuple = ()
    words: tuple = ()            # what the error message names (what was exceeded)
    host_absent: tuple = ()      # host paths (formatted with the context) the attack must not leave
    strays: bool = False         # no process carrying the case's marker may outlive the run
    real_result: bool = False    # the result is the run's real one, not one the run forged
    alive: tuple = ()            # host processes (context keys) that must still be running


def case(name, attack, *, status="ok", phases=(), words=(), host_absent=(), strays=False, real_result=False,
         alive=(), **denials):
    return pytest.param(attack, Expect(denials, status, phases, words, host_absent, strays, real_result, alive), id=name)


# ---------------------------------------------------------------- the corpus

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
    case("fill_dev_shm_with_1_gb", H.SHM_FILL, host_absent=("/dev/shm/{marker}-0",), shm=ENOSPC),
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
    # the scratch dir (/tmp) is capped in bytes and files; any one file is capped in size
    case("scratch_720_mb_and_20000_files",
         H.SCRATCH_FILL + "attempt('bytes', fill_bytes, 720)\nattempt('files', fill_files, 20000)",
         bytes=ENOSPC, files=ENOSPC),
    case("scratch_2_gb", H.SCRATCH_FILL + "attempt('bytes', fill_bytes, 2048)", bytes=ENOSPC),
    case("scratch_50000_files", H.SCRATCH_FILL + "attempt('files', fill_files, 50000)", files=ENOSPC),
    case("one_file_over_the_size_limit", H.ONE_BIG_FILE, one_file=Denied("EFBIG")),
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
    # limits of the run as a whole
    case("memory_bomb_across_three_forks", H.MEMORY_BOMB,  # 3 x 2 GB held at once, over the run's 4 GB
         status="error", phases=("limit", "sandbox"), words=("memory",)),
    case("thread_bomb", H.THREAD_BOMB, threads=Denied("RuntimeError", words=("can't start new thread",))),
    case("fork_bomb", H.FORK_BOMB, strays=True, forks=Denied("EAGAIN")),
    case("output_flood", H.OUTPUT_FLOOD, status="error", phases=("limit",), words=("printed more than",)),
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

# Attacks on the web server process itself: through a real gunicorn server.
SERVER_RUN_CASES = [
    case("kill_the_gunicorn_master", H.KILL_GUNICORN_MASTER, alive=("master_pid",),
         servers_seen=Returns([]), kill_master=GONE),
    case("kill_the_web_process", H.KILL_WEB_PROCESS, alive=("server_pid",), kill_web_process=GONE),
    case("gunicorn_control_socket_shutdown", H.CONTROL_SOCKET, alive=("master_pid",),
         server_control_socket=UNREACHABLE, home_control_socket=UNREACHABLE),
    case("server_oom_score_adj", H.SERVER_OOM_SCORE,
         master_oom_score_adj=NOT_THERE_OR_READ_ONLY, web_oom_score_adj=NOT_THERE_OR_READ_ONLY),
    case("server_environment", H.SERVER_ENVIRON,
         master_environ=NOT_THERE, web_environ=NOT_THERE, secret_in_own_environment=Returns(False)),
]


def spec_json(**changes):
    """The vector add spec as a JSON body, with fields replaced (dotted names reach into a member)."""
    spec = vector_add_spec(n=1024, block=256)
    for name, value in changes.items():
        if "." in name:
            member, key = name.split(".")
            spec[member] = {**(spec.get(member) or {}), key: value}
        else:
            spec[name.rstrip("_")] = value
    return json.dumps(spec, allow_nan=True).encode()


def nested_body(depth):
    """A request body whose "ui" (or a spec field) nests `depth` lists deep, beside a valid spec."""
    return (b'{"spec": ' + json.dumps(vector_add_spec(n=1024, block=256)).encode() + b', "ui": '
            + b"[" * depth + b"]" * depth + b"}")


def puzzle_body(**changes):
    """A teacher's puzzle (POST /api/puzzles) made from the vector add, its spec's fields replaced."""
    spec = {**vector_add_spec(n=1024, block=256), "inputs": {"x": "torch.randn(N)", "y": "torch.randn(N)",
                                                             "out": "torch.empty(N)"}}
    spec = {**spec, "args": {**spec["args"], "n": "N"}, **changes}
    starter = VECTOR_ADD.replace("tl.store(out_ptr + offs, x + y, mask=mask)", "pass  # store the sum")
    return json.dumps({"spec": spec, "title": "Add", "statement": "Add x and y.", "starter": starter,
                       "tests": [{"N": 100}]}).encode()


JSON = "application/json"
# (path, body, content type, HTTP status, words the error names)
REQUEST_CASES = [
    pytest.param("/api/run", b'{"source": "' + b"x" * (3 << 20) + b'"}', JSON, 413, (), id="body_of_3_mb"),
    pytest.param("/api/run", b"[" * 100_000 + b"]" * 100_000, JSON, 400, ("depth limit is 32",), id="json_nested_100000_deep"),
    pytest.param("/api/run", b'{"source": "\xff\xfe\xfd", "kernel": "\xc3("}', JSON, 400, (), id="body_not_utf8"),
    pytest.param("/api/run", spec_json(**{"options.atol": float("nan")}), JSON, 400, ("options.atol",), id="nan_tolerance"),
    pytest.param("/api/run", spec_json(**{"options.rtol": float("inf")}), JSON, 400, ("options.rtol",), id="infinite_tolerance"),
    pytest.param("/api/run", spec_json(**{"options.flops": float("-inf")}), JSON, 400, ("options.flops",), id="minus_infinity_flops"),
    pytest.param("/api/run", spec_json(**{"args.n": float("nan")}), JSON, 400, ("args.n",), id="nan_argument"),
    pytest.param("/api/run", spec_json(version="1"), JSON, 400, ("version",), id="version_a_string"),
    pytest.param("/api/run", spec_json(source=12), JSON, 400, ("'source'",), id="source_a_number"),
    pytest.param("/api/run", spec_json(kernel=["add_kernel"]), JSON, 400, ("'kernel'",), id="kernel_a_list"),
    pytest.param("/api/run", spec_json(inputs=["torch.randn(8)"]), JSON, 400, ("'inputs'",), id="inputs_a_list"),
    pytest.param("/api/run", spec_json(args="x_ptr=x"), JSON, 400, ("'args'",), id="args_a_string"),
    pytest.param("/api/run", spec_json(grid=4), JSON, 400, ("'grid'",), id="grid_a_number"),
    pytest.param("/api/run", spec_json(reference=["x + y"]), JSON, 400, ("'reference'",), id="reference_a_list"),
    pytest.param("/api/run", spec_json(options="fast"), JSON, 400, ("'options'",), id="options_a_string"),
    # malformed input: nesting, unknown fields, a teacher's expression that does not parse
    *[pytest.param(path, body, JSON, 400, ("nested more than 32 levels", "depth limit is 32"), id=f"{name}_on_{where}")
      for path, where in (("/api/run", "run"), ("/api/snippets", "snippets"), ("/api/puzzles", "puzzles"))
      for name, body in (("json_nested_600_deep", nested_body(600)), ("json_nested_100000_deep_beside_the_spec",
                                                                       nested_body(100_000)))],
    pytest.param("/api/run", spec_json(referenec={"out": "x + y"}), JSON, 400, ("'referenec'",),
                 id="unknown_spec_field_on_run"),
    pytest.param("/api/snippets", json.dumps({"spec": {**vector_add_spec(), "grading": None, "extra": 1}}).encode(), JSON,
                 400, ("'extra'",), id="unknown_spec_field_on_snippets"),
    pytest.param("/api/run", json.dumps({"spec": vector_add_spec(), "form_link": True}).encode(), JSON, 400,
                 ("'form_link'",), id="unknown_field_beside_the_spec"),
    pytest.param("/api/puzzles", puzzle_body(reference={"out": "x + ("}), JSON, 400, ("reference.out", "not a Python expression"),
                 id="teacher_puzzle_reference_that_does_not_tokenize"),
    pytest.param("/api/puzzles", puzzle_body(inputs={"x": "torch.randn(N", "y": "torch.randn(N)", "out": "torch.empty(N)"}),
                 JSON, 400, ("inputs.x",), id="teacher_puzzle_input_that_does_not_parse"),
    pytest.param("/api/puzzles", puzzle_body(grid="(triton.cdiv(n, 256),) if"), JSON, 400, ("grid",),
                 id="teacher_puzzle_grid_that_does_not_parse"),
    pytest.param("/api/puzzles", puzzle_body(source="def broken(:\n"), JSON, 400, ("source",),
                 id="teacher_puzzle_solution_that_does_not_parse"),
    pytest.param("/api/puzzles", json.dumps({**json.loads(puzzle_body()), "answer": "x"}).encode(), JSON, 400,
                 ("'answer'",), id="teacher_puzzle_with_an_unknown_field"),
]


# ---------------------------------------------------------------- host-side helpers

def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def cmdline(pid):
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return f.read().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return ""


def stat_fields(pid):
    """(state, ppid) of a host process, or None once it is gone."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return fields[0], int(fields[1])
    except (OSError, IndexError, ValueError):
        return None


def alive(pid):
    found = stat_fields(pid)
    return found is not None and found[0] not in ("Z", "X")


def host_pids():
    return [int(name) for name in os.listdir("/proc") if name.isdigit()]


def children_of(pid):
    """A worker's run processes (its zygote, which forks them, aside)."""
    return [p for p in host_pids() if (stat_fields(p) or (None, None))[1] == pid and _comm(p) != "zygote"]


def processes_carrying(*markers):
    return [p for p in host_pids() if p != os.getpid() and any(m in cmdline(p) for m in markers)]


def wait_for(predicate, timeout_s, interval_s=0.05):
    deadline = time.monotonic() + timeout_s
    while True:
        value = predicate()
        if value or time.monotonic() > deadline:
            return value
        time.sleep(interval_s)


def host_disk():
    """A block device of this host, for a run to try to read."""
    with open("/proc/partitions") as f:
        names = [line.split()[3] for line in f.read().splitlines()[2:] if line.split()]
    return f"/dev/{names[0]}" if names else "/dev/mem"


def remove_host_path(path):
    with contextlib.suppress(OSError):
        if os.path.isdir(path) and not os.path.islink(path):
            os.rmdir(path)  # a cgroup goes with rmdir; a plain directory only when empty
        else:
            os.unlink(path)


def result_summary(result):
    shown = {k: v for k, v in result.items() if k in ("status", "error", "notes")}
    shown["stdout"] = (result.get("stdout") or "")[-1500:]
    return json.dumps(shown)[:3000]


def findings_of(result):
    for line in (result.get("stdout") or "").splitlines():
        if line.startswith(FINDINGS):
            return json.loads(line[len(FINDINGS):])
    return None


def hostile_spec(attack, context):
    prelude = H.PRELUDE.replace("__CONTEXT__", repr(json.dumps(context)))
    return {**vector_add_spec(n=1024, block=256),
            "source": VECTOR_ADD + prelude + "\n" + textwrap.dedent(attack) + "\nreport()\n"}


# ---------------------------------------------------------------- the one checker

def check(result, expect, context, target=None):
    """Every problem of a case at once: the denials, the run's own result, what it left on the host,
    and then (with a target) that the server is alive and the next normal run works."""
    problems = []
    if expect.denials:
        findings = findings_of(result)
        if findings is None:
            problems.append(f"the attack did not report its findings: {result_summary(result)}")
        else:
            for name, denied in expect.denials.items():
                if name not in findings:
                    problems.append(f"{name}: the attack never got that far ({findings})")
                elif not denied(findings[name]):
                    problems.append(f"{name}: expected {denied!r}, got {findings[name]}")
    error = result.get("error") or {}
    # On a GPU, CUDA's own pipes are among those a forging run writes to: it may break its own GPU
    # context, and only that. What matters is that the forged result never comes back.
    broke_its_own_gpu = (expect.real_result and (result.get("device") or {}).get("kind") == "gpu"
                         and result.get("status") == "error")
    if broke_its_own_gpu:
        pass
    elif expect.status == "ok":
        if result.get("status") != "ok":
            problems.append(f"the run did not end ok: {result_summary(result)}")
    elif result.get("status") != expect.status or error.get("phase") not in expect.phases:
        problems.append(f"expected a run ending with status {expect.status!r} in phase {' or '.join(expect.phases)}, "
                        f"got {result_summary(result)}")
    else:
        missing = [w for w in expect.words if w not in (error.get("message") or "").lower()]
        if missing:
            problems.append(f"the error message does not name {missing}: {error.get('message')!r}")
    if expect.real_result:
        shown = json.dumps({k: v for k, v in result.items() if k != "stdout"})
        if context["marker"] in shown:
            problems.append(f"a forged result came back: {shown[:1500]}")
        elif not broke_its_own_gpu and not ((result.get("check") or {}).get("outputs") or {}).get("out", {}).get("ok"):
            problems.append(f"the result is not the run's real check: {shown[:1500]}")
    for template in expect.host_absent:
        path = template.format(**context)
        if os.path.lexists(path):
            problems.append(f"the run left {path} on the host")
    for name in expect.alive:
        if not alive(context[name]):
            problems.append(f"the run killed {name} {context[name]} ({cmdline(context[name])!r})")
    if expect.strays:
        markers = (context["marker"], "29." + context["number"])
        if not wait_for(lambda: not processes_carrying(*markers), 10):
            problems.append(f"processes of the run outlived it: {processes_carrying(*markers)}")
    if target is not None:
        problems += target.survival_problems()
    assert not problems, "\n".join(problems)


# ---------------------------------------------------------------- targets: the app, a gunicorn server

class AppTarget:
    """The module's app with real workers, through Flask's test client."""

    def __init__(self, app):
        self.app, self.client = app, app.test_client()

    def new_client(self):
        return self.app.test_client()  # another browser: another owner

    def run(self, spec, client=None):
        response = (client or self.client).post("/api/run", json=spec)
        assert response.status_code == 200, response.get_data(as_text=True)[:2000]
        return response.get_json()

    def workers(self):
        return self.app.extensions["dispatcher"].health()["workers"]

    def worker_pids(self):
        return [w["pid"] for w in self.workers() if w.get("pid")]

    def survival_problems(self):
        problems = []
        response = self.client.get("/healthz")
        if response.status_code != 200 or not (response.get_json() or {}).get("ok"):
            problems.append(f"/healthz after the attack: {response.status_code} {response.get_data(as_text=True)[:500]}")
        result = self.run(vector_add_spec(n=1024, block=256))
        if result.get("status") != "ok":
            problems.append(f"the next normal run failed: {result_summary(result)}")
        return problems


class GunicornServer:
    """`gunicorn -w 1 --threads 8 'app:create_app()'` on a free port, its database, runs and HOME (so
    its control socket, ~/.gunicorn/gunicorn.ctl) in a temp dir. Restarted when an attack took it down."""

    def __init__(self, root):
        self.root, self.proc, self.port = root, None, None
        self.home = os.path.join(root, "home")
        self.database = os.path.join(root, "db", "server.sqlite")
        self.run_root = os.path.join(root, "runs")
        for directory in (self.home, os.path.dirname(self.database)):
            os.makedirs(directory, exist_ok=True)
        self.log = open(os.path.join(root, "gunicorn.log"), "ab")

    @property
    def ctl_socket(self):
        return os.path.join(self.home, ".gunicorn", "gunicorn.ctl")

    @property
    def master_pid(self):
        return self.proc.pid

    def worker_pids(self):
        web = self.web_pid()
        return [p for p in children_of(web) if "sandbox.worker" in cmdline(p)] if web else []

    def web_pid(self):
        kids = [p for p in children_of(self.proc.pid) if "gunicorn" in cmdline(p)]
        return kids[0] if kids else None

    settings = {"TRUSTED_PROXY_HOPS": "1"}  # a proxy in front says who the client is and whether it came over https

    @property
    def url(self):
        return f"http://127.0.0.1:{self.port}"

    def health(self):
        try:
            status, body = self.request("GET", "/healthz", timeout=10)
            return json.loads(body)
        except (OSError, ValueError, http.client.HTTPException):
            return {}

    def command(self):
        gunicorn = os.path.join(ROOT, ".venv", "bin", "gunicorn")
        command = [gunicorn] if os.path.exists(gunicorn) else [sys.executable, "-m", "gunicorn"]
        return command + ["-w", "1", "--threads", "8", "-b", f"127.0.0.1:{self.port}", "app:create_app()"]

    def start(self):
        self.port = free_port()
        env = {k: v for k, v in os.environ.items() if k != "XDG_RUNTIME_DIR"}
        env.update({"DATABASE": self.database, "RUN_ROOT": self.run_root, "HOME": self.home, "SECRET_KEY": SECRET,
                    "WORKERS": "1", "RUN_TIMEOUT_S": str(RUN_TIMEOUT_S), "HOST": "127.0.0.1", "PORT": str(self.port),
                    **self.settings})
        self.proc = subprocess.Popen(self.command(), cwd=ROOT, env=env, stdout=self.log, stderr=subprocess.STDOUT,
                                     start_new_session=True)
        if not wait_for(lambda: self.healthy() or self.proc.poll() is not None, 180, 0.3) or not self.healthy():
            self.stop()
            raise RuntimeError("the gunicorn server did not become healthy (see gunicorn.log in the test's temp dir)")

    def ensure(self):
        """A server to attack: this one if healthy (waiting a while for a respawned web process), else a new one."""
        if self.proc is not None and self.proc.poll() is None and wait_for(self.healthy, 60, 0.3):
            return
        self.stop()
        self.start()

    def stop(self):
        if self.proc is not None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.proc.pid, signal.SIGKILL)  # the server's whole process group, workers included
            self.proc.wait()
            self.proc = None

    def request(self, method, path, body=None, headers=None, timeout=90):
        connection = http.client.HTTPConnection("127.0.0.1", self.port, timeout=timeout)
        try:
            connection.request(method, path, body=body, headers=headers or {})
            response = connection.getresponse()
            return response.status, response.read()
        finally:
            connection.close()

    def healthy(self):
        try:
            status, body = self.request("GET", "/healthz", timeout=5)
            return status == 200 and json.loads(body)["ok"]
        except (OSError, ValueError, KeyError, http.client.HTTPException):
            return False

    def run(self, spec, client=None):
        try:
            status, body = self.request("POST", "/api/run", json.dumps(spec).encode(), {"Content-Type": JSON})
        except (OSError, http.client.HTTPException) as e:
            raise AssertionError(f"the server dropped the run's request: {e!r}") from None
        assert status == 200, body[:2000]
        return json.loads(body)

    def survival_problems(self):
        problems = []
        try:
            status, body = self.request("GET", "/healthz", timeout=10)
            if status != 200 or not json.loads(body).get("ok"):
                problems.append(f"/healthz after the attack: {status} {body[:500]!r}")
        except (OSError, http.client.HTTPException, ValueError) as e:
            return [f"the server no longer answers /healthz: {e!r}"]
        try:
            result = self.run(vector_add_spec(n=1024, block=256))
        except AssertionError as e:
            return problems + [f"the next normal run failed: {e}"]
        if result.get("status") != "ok":
            problems.append(f"the next normal run failed: {result_summary(result)}")
        return problems


class ProductionServer(GunicornServer):
    """The server as `make run` starts it (`python -m app.serve`: gunicorn's gevent worker, a greenlet
    per connection), with small per-address limits: for attacks of many connections."""

    settings = {"TRUSTED_PROXY_HOPS": "1", "CONNECTIONS_PER_ADDRESS": "20", "QUEUE_PER_ADDRESS": "6"}

    def command(self):
        return [sys.executable, "-m", "app.serve"]


class Listeners:
    """Host sockets an attack tries to reach: TCP and UDP on 127.0.0.1, an abstract unix socket."""

    def __init__(self):
        self.tcp = socket.socket()
        self.tcp.bind(("127.0.0.1", 0))
        self.tcp.listen(16)
        self.udp = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.udp.bind(("127.0.0.1", 0))
        self.abstract_name = "hostile-" + secrets.token_hex(8)
        self.abstract = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.abstract.bind("\0" + self.abstract_name)
        self.abstract.listen(16)
        for s in (self.tcp, self.udp, self.abstract):
            s.setblocking(False)

    def context(self):
        return {"tcp_port": self.tcp.getsockname()[1], "udp_port": self.udp.getsockname()[1],
                "abstract": self.abstract_name}

    def reached(self):
        """What reached the host's sockets (drained, so one case's leak is reported once)."""
        reached = []
        for name, s, take in (("tcp", self.tcp, lambda s: s.accept()[0].close()),
                              ("udp", self.udp, lambda s: s.recv(4096)),
                              ("abstract unix", self.abstract, lambda s: s.accept()[0].close())):
            with contextlib.suppress(BlockingIOError):
                while True:
                    take(s)
                    reached.append(name)
        return reached

    def close(self):
        for s in (self.tcp, self.udp, self.abstract):
            s.close()


class Harness:
    """One target and what a case needs around it: a fresh context (markers, pids, paths), a victim
    process to aim at, the host sockets, and the clean-up of whatever an attack may leave."""

    def __init__(self, target, database, run_root, listeners):
        self.target, self.database, self.run_root, self.listeners = target, database, run_root, listeners

    def context(self, **extra):
        marker = "hostile-" + secrets.token_hex(6)
        scratch = sorted(glob.glob(os.path.join(self.run_root, "run-*")))
        context = {"marker": marker, "number": str(secrets.randbelow(10 ** 9)).zfill(9), "test_pid": os.getpid(),
                   "worker_pids": self.target.worker_pids(), "checkout": ROOT, "database": self.database,
                   "run_root": self.run_root, "scratch_dirs": scratch, "secret": SECRET, "credential": CREDENTIAL,
                   "disk": host_disk(),
                   **self.listeners.context()}
        if isinstance(self.target, GunicornServer):
            context.update(port=self.target.port, master_pid=self.target.master_pid,
                           server_pid=self.target.web_pid(), ctl_socket=self.target.ctl_socket)
        context.update(extra)
        return context

    def clean(self, context, victim=None):
        if victim is not None:
            victim.kill()
            victim.wait()
        for pid in processes_carrying(context["marker"], "29." + context["number"]):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        for path in (f"/dev/{context['marker']}", f"/etc/{context['marker']}", f"/usr/{context['marker']}",
                     os.path.join(ROOT, "sandbox", context["marker"] + ".py"),
                     f"/sys/fs/cgroup/pids/{context['marker']}", f"/sys/fs/cgroup/{context['marker']}",
                     *glob.glob(f"/dev/shm/{context['marker']}*")):
            if os.path.lexists(path):
                remove_host_path(path)

    def attack(self, attack, expect):
        victim = subprocess.Popen(["sleep", "300"], start_new_session=True)
        context = self.context(victim_pid=victim.pid)
        try:
            result = self.target.run(hostile_spec(attack, context))
            problems = []
            try:
                check(result, expect, context, self.target)
            except AssertionError as e:
                problems.append(str(e))
            reached = self.listeners.reached()
            if reached:
                problems.append(f"the run reached the host's sockets: {reached}")
            assert not problems, "\n".join(problems)
        finally:
            self.clean(context, victim)


# ---------------------------------------------------------------- fixtures

@pytest.fixture(scope="module")
def listeners():
    found = Listeners()
    yield found
    found.close()


@pytest.fixture(scope="module")
def hostile(tmp_path_factory, listeners):
    """One app with two real workers, its own database and run root; SECRET_KEY set in the server's
    environment, for a run to look for."""
    from app import create_app
    root = tmp_path_factory.mktemp("hostile-app")
    database, run_root = str(root / "db" / "app.sqlite"), str(root / "runs")
    os.makedirs(os.path.dirname(database))
    before = os.environ.get("SECRET_KEY")
    os.environ["SECRET_KEY"] = SECRET
    os.environ["NVIDIA_API_KEY"] = CREDENTIAL
    # Behind one proxy (TRUSTED_PROXY_HOPS=1): a case says which address a request comes from.
    app = create_app({"TESTING": True, "DATABASE": database, "RUN_ROOT": run_root, "WORKERS": 2,
                      "RUN_TIMEOUT_S": RUN_TIMEOUT_S, "RUN_MEMORY_MB": RUN_MEMORY_MB, "TRUSTED_PROXY_HOPS": 1,
                      "QUEUE_PER_ADDRESS": 6})
    try:
        wait_until_ready(app)
        wait_until_warmed(app)  # the shared kernels (an attack's target), and runs in a steady state
        yield Harness(AppTarget(app), database, run_root, listeners)
    finally:
        app.extensions["dispatcher"].stop()
        os.environ.pop("NVIDIA_API_KEY", None)
        if before is None:
            os.environ.pop("SECRET_KEY", None)
        else:
            os.environ["SECRET_KEY"] = before


def serving(server):
    """A server subprocess for a module's tests, stopped after them."""
    server.start()
    yield server
    server.stop()
    server.log.close()


def harness_of(server, listeners):
    server.ensure()  # restarted if an attack took it down
    return Harness(server, server.database, server.run_root, listeners)


@pytest.fixture(scope="module")
def gunicorn_server(tmp_path_factory):
    yield from serving(GunicornServer(str(tmp_path_factory.mktemp("hostile-server"))))


@pytest.fixture
def served(gunicorn_server, listeners):
    return harness_of(gunicorn_server, listeners)


@pytest.fixture(scope="module")
def production_server(tmp_path_factory):
    yield from serving(ProductionServer(str(tmp_path_factory.mktemp("hostile-production"))))


@pytest.fixture
def production(production_server, listeners):
    return harness_of(production_server, listeners)


# ---------------------------------------------------------------- the tests

@pytest.mark.parametrize("attack, expect", RUN_CASES)
def test_a_hostile_run_is_denied(hostile, attack, expect):
    hostile.attack(attack, expect)


@pytest.mark.parametrize("attack, expect", SERVER_RUN_CASES)
def test_a_hostile_run_cannot_touch_the_web_server(served, attack, expect):
    served.attack(attack, expect)


@pytest.mark.parametrize("path, body, content_type, code, words", REQUEST_CASES)
def test_a_hostile_request_is_refused(served, path, body, content_type, code, words):
    server = served.target
    status, answer = server.request("POST", path, body, {"Content-Type": content_type})
    problems = []
    try:
        message = json.loads(answer)["error"]["message"]
    except (ValueError, KeyError, TypeError):
        message = None
        problems.append(f"the refusal is not a JSON error: {answer[:300]!r}")
    if status != code:
        problems.append(f"expected {code}, got {status}: {answer[:300]!r}")
    missing = [w for w in words if w not in (message or "")]
    if missing:
        problems.append(f"the message does not name {missing}: {message!r}")
    problems += server.survival_problems()
    assert not problems, "\n".join(problems)


# -- the attacks of more than one step

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
        found = wait_for(lambda: [p for p in host_pids() if _comm(p) == comm], 30)
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


def _comm(pid):
    try:
        with open(f"/proc/{pid}/comm") as f:
            return f.read().strip()
    except OSError:
        return ""


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


def links_planted_in_the_kernel_cache_are_not_followed(h):
    """An owner's run plants links in its kernel cache (to /etc/passwd, to a file and a directory
    it cannot see); that owner's next run finds no link and none of their contents."""
    context = h.context()
    secret_file = os.path.join(os.path.dirname(h.database), context["marker"] + ".txt")
    with open(secret_file, "w") as f:
        f.write(SECRET)
    context["secret_file"] = secret_file
    owner = h.target.new_client()
    try:
        first = h.target.run(hostile_spec(H.PLANT_LINKS, context), owner)
        assert first["status"] == "ok", result_summary(first)
        second = h.target.run(hostile_spec(H.LOOK_FOR_LINKS, context), owner)
        check(second, Expect({"cache": Returns({"links": [], "leaks": []})}), context)
        kept = [os.path.join(top, name) for top, dirs, files in os.walk(os.path.join(h.run_root, "kernel-caches"))
                for name in dirs + files]
        assert not [p for p in kept if os.path.islink(p)], f"links kept in the owners' caches: {kept}"
        for path in kept:
            if os.path.isfile(path) and not os.path.islink(path):
                with open(path, "rb") as f:
                    assert SECRET.encode() not in f.read(), f"{path} holds the hidden file's contents"
    finally:
        os.unlink(secret_file)


def another_owners_kernels_are_out_of_reach(h):
    alice, bob = h.target.new_client(), h.target.new_client()
    compiled = h.target.run({**vector_add_spec(n=1024, block=256), "options": {"ir": True}}, alice)
    assert compiled["status"] == "ok", result_summary(compiled)
    root = os.path.join(h.run_root, "kernel-caches")
    caches = [os.path.join(root, n) for n in os.listdir(root) if not n.startswith(".")]
    assert caches, "the owner's run left no compiled kernel to look for"
    context = h.context(kernel_caches=caches, kernel_cache_root=root)
    look = ("attempt('visible', lambda: [p for p in CONTEXT['kernel_caches'] if os.path.exists(p)])\n"
            "attempt('listing', os.listdir, CONTEXT['kernel_cache_root'])")
    result = h.target.run(hostile_spec(look, context), bob)
    check(result, Expect({"visible": Returns([]), "listing": ENOENT}), context)


def sparse_entries_are_not_collected_dense(h):
    """A run plants 64 cache entries of a 60 MB sparse file each (nothing on its tmpfs, 3.8 GB copied
    dense) and entries of files no Triton entry holds: none reaches its owner's cache on the host."""
    from sandbox.worker.kernel_cache import tree_bytes
    mallory = h.target.new_client()
    context = h.context()
    result = h.target.run(hostile_spec(H.SPARSE_CACHE, context), mallory)
    check(result, Expect({"sparse": Returns("planted"), "foreign": Returns("planted")}), context)
    root = os.path.join(h.run_root, "kernel-caches")
    time.sleep(0.5)  # collected just after the reply
    planted = [os.path.join(top, d) for top, dirs, _ in os.walk(root) for d in dirs
               if d.startswith(("SPARSE", "FOREIGN"))]
    assert not planted, f"collected into the host's kernel caches: {planted[:4]}"
    assert tree_bytes(root) < 256 << 20, f"the kernel caches hold {tree_bytes(root) >> 20} MB"


def a_spinning_run_leaves_a_bystander_its_share(h):
    """One owner's run spins up to 120 processes for 8 s; another owner's vector add, run meanwhile on
    the other worker, takes less than twice its time on the idle host, give or take half a second
    (the run's CPU share)."""
    import statistics
    bystander, spinner = h.target.new_client(), h.target.new_client()

    def bystander_s():
        start = time.monotonic()
        result = h.target.run(vector_add_spec(n=1 << 16, block=1024), bystander)
        assert result["status"] == "ok", result_summary(result)
        return time.monotonic() - start

    idle = statistics.median(bystander_s() for _ in range(3))
    box = {}
    spin = hostile_spec(H.SPIN, h.context(spin_s=8))
    thread = threading.Thread(target=lambda: box.update(result=h.target.run(spin, spinner)))
    thread.start()
    time.sleep(3)  # its processes forked and spinning
    # The best of three: a run that took the bystander's share would slow every one of them; other
    # work on the host (the whole suite runs beside) slows one now and then.
    loaded = min(bystander_s() for _ in range(3))
    thread.join(60)
    isolation = h.target.client.get("/healthz").get_json()["isolation"] or []
    if any("cpu" in step for step in isolation if step.startswith("cgroup")):
        check(box["result"], Expect({"spinners": Returns(lambda n: n >= 32, "32 or more spinning processes")}), {})
        # Twice its time, plus half a second for what is not the run's own (its relay, the next spare
        # run process warming) on a 2-core host: starved, 120 spinners would make it take ~60 times longer.
        assert loaded < 2 * idle + 0.5, f"the bystander took {loaded:.2f} s beside the spinning run, {idle:.2f} s alone"
    else:  # no CPU cgroup on this host: the run's tasks are what is bounded (README, security model)
        limit = Limits.tasks_without_cpu_share
        check(box["result"], Expect({"spinners": Returns(lambda n: n < limit, f"fewer than {limit} processes")}), {})


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


def file_digests(directory):
    found = {}
    for top, _, names in os.walk(directory):
        for name in names:
            path = os.path.join(top, name)
            if name != ".lock" and not os.path.islink(path):
                with open(path, "rb") as f:
                    found[os.path.relpath(path, directory)] = hashlib.sha256(f.read()).hexdigest()
    return found


def shared_kernels_written_replaced_or_poisoned(h):
    """A run tries to change the gallery's compiled kernels for every later run: in place (write,
    add, create an entry, replace, remove, chmod, remount) and through its own cache (the same key,
    every file and the group poisoned). Each write is refused, the shared files are unchanged, and both the next owner's run of the example and the attacker's own run
    compile what the worker compiled."""
    shared = os.path.join(h.run_root, "shared-kernels")
    key = next(k for k in sorted(os.listdir(shared)) if os.path.exists(os.path.join(shared, k, "add_kernel.cubin")))
    example = load_example("vector_add")["spec"]
    before = h.target.run(example, h.target.new_client())
    assert before["status"] == "ok" and "error" not in before["ir"], result_summary(before)
    digests = file_digests(shared)
    context = h.context(shared_key=key, shared_file="add_kernel.cubin", other_file="add_kernel.ptx",
                        shared_group="add_kernel.json", shared_host_path=shared)
    attacker = h.target.new_client()
    result = h.target.run(hostile_spec(H.SHARED_KERNELS, context), attacker)
    erofs = Denied("EROFS")
    # Opening a file of another uid for writing fails on its permissions before the mount's read-only
    # flag is looked at; everything that changes the directory meets the read-only bind.
    check(result, Expect({"lent": Returns("sandbox.worker.shared_kernels:SharedFirstCache"), "overwrite": Denied("EACCES"),
                          "add_file": erofs, "new_entry": erofs, "replace": erofs, "unlink": erofs, "chmod": erofs,
                          "remount": EPERM, "host_path": ENOENT,
                          "poison_own_cache": Returns(lambda names: "add_kernel.cubin" in names, "poisoned its own copy")}),
          context)
    assert file_digests(shared) == digests, "the shared kernels changed"
    for who in (h.target.new_client(), attacker):  # the attacker's owner cache now holds the poisoned entry
        after = h.target.run(example, who)
        assert after["status"] == "ok" and after["ir"].get("ptx") == before["ir"]["ptx"], result_summary(after)
        assert after["ir"].get("sass") == before["ir"]["sass"]


def socketio_client(server):
    import socketio
    client = socketio.Client(reconnection=True, reconnection_delay=0.2)
    events = []
    for name in ("run_status", "run_result", "run_stdout"):
        client.on(name, lambda data, name=name: events.append((name, data)))
    client.on("disconnect", lambda *reason: events.append(("disconnect", reason)))
    client.connect(f"http://127.0.0.1:{server.port}", transports=["websocket"], wait_timeout=10)
    return client, events


def socketio_run_ok(client, events, timeout_s=60):
    ack = client.call("run", {"spec": vector_add_spec(n=1024, block=256)}, timeout=30)
    assert ack and "run_id" in ack, f"a normal run was refused: {ack}"
    results = wait_for(lambda: [d for n, d in events if n == "run_result" and d["run_id"] == ack["run_id"]], timeout_s)
    assert results, f"no result for the normal run {ack['run_id']}"
    assert results[0]["result"]["status"] == "ok", result_summary(results[0]["result"])


def malformed_socketio_run_events(h):
    """100 malformed `run` events from one client (not an object, no spec, a spec that is a string,
    a list, the wrong shape, a huge one, no argument, two arguments): no run starts, every event
    that reaches the handler gets an error ack, and the same connection then runs normally."""
    client, events = socketio_client(h.target)
    sid, acks = client.sid, []
    good = vector_add_spec(n=1024, block=256)
    shapes = [1, "run", [1, 2], True, {}, {"spec": None}, {"spec": "a string"}, {"spec": []},
              {"spec": {"source": 5}}, {"spec": {**good, "grid": 5}}, {"spec": {**good, "source": "x" * 600_000}},
              None, ("two", "arguments")]
    try:
        expected_acks = 0
        for i in range(100):
            shape = shapes[i % len(shapes)]
            client.emit("run", shape, callback=lambda *ack: acks.append(ack))
            expected_acks += not isinstance(shape, tuple) and shape is not None
        wait_for(lambda: len(acks) >= expected_acks, 20)
        problems = []
        started = [a for a in acks if a and isinstance(a[0], dict) and "run_id" in a[0]]
        if started:
            problems.append(f"malformed events started runs: {started[:3]}")
        if len(acks) < expected_acks:
            problems.append(f"{expected_acks - len(acks)} malformed events got no error ack")
        refused = lambda ack: ack and isinstance(ack[0], dict) and (ack[0].get("error") or {}).get("message")  # noqa: E731
        if not all(refused(a) for a in acks):
            problems.append(f"an ack without an error message: {[a for a in acks if not refused(a)][:3]}")
        if any(name == "disconnect" for name, _ in events) or client.sid != sid:
            problems.append("the server dropped the client's connection")
        if not problems:
            socketio_run_ok(client, events)
        assert not problems, "\n".join(problems)
    finally:
        client.disconnect()


def oversized_socketio_event(h):
    """A 3 MB `run` event (over the transport's limit): no run starts, and the client, reconnected
    if the server dropped it, runs normally."""
    client, events = socketio_client(h.target)
    acks = []
    try:
        client.emit("run", {"spec": {**vector_add_spec(), "source": "x" * (3 << 20)}},
                    callback=lambda *ack: acks.append(ack))
        wait_for(lambda: acks or any(n == "disconnect" for n, _ in events), 10)
        assert not [a for a in acks if a and isinstance(a[0], dict) and "run_id" in a[0]], f"it started a run: {acks}"
        assert acks or any(n == "disconnect" for n, _ in events), "neither refused nor dropped"
        assert wait_for(lambda: client.connected, 15), "the client could not connect again"
        socketio_run_ok(client, events)
    finally:
        client.disconnect()


# -- the web side: identity, fairness, quotas, headers, what the web process reads ----------------

def session_cookie(key, data):
    """A session cookie holding `data`, signed with `key` as Flask signs one."""
    from flask import Flask
    from flask.sessions import SecureCookieSessionInterface
    forger = Flask("forger")
    forger.secret_key = key
    return SecureCookieSessionInterface().get_signing_serializer(forger).dumps(data)


def owner_of(client):
    with client.session_transaction() as session:
        return session["owner"]


@contextlib.contextmanager
def jobs_queued(app):
    """Every Job the app's queue takes (or refuses: `refused`) while the block runs."""
    queue = app.extensions["dispatcher"].jobs
    taken, refused = [], []

    def put(job):
        try:
            place = type(queue).put(queue, job)
        except Exception as e:
            refused.append((job, e))
            raise
        taken.append(job)
        return place

    queue.put = put
    try:
        yield taken, refused
    finally:
        del queue.put


def from_address(address):
    """Request headers of a client at `address`, as the proxy in front (TRUSTED_PROXY_HOPS=1) says."""
    return {"X-Forwarded-For": address}


def sleeper_spec(h, comm=None):
    return hostile_spec(H.SLEEPER, h.context(comm=comm or "s" + secrets.token_hex(6)))


def run_in_thread(target, *args):
    box = {}
    thread = threading.Thread(target=lambda: box.update(value=target(*args)), daemon=True)
    thread.start()
    return thread, box


def occupy_workers(h, count=2):
    """`count` runs of their own owners that sleep 6 s, one per worker; returns their threads once all run."""
    app = h.target.app
    threads = [run_in_thread(lambda spec=sleeper_spec(h): app.test_client().post("/api/run", json=spec))
               for _ in range(count)]
    assert wait_for(lambda: sum(w["state"] == "busy" for w in h.target.workers()) == count
                    and app.extensions["dispatcher"].health()["queued"] == 0, 30), "the sleepers never ran"
    return threads


def nested(depth):
    value = []
    for _ in range(depth - 1):
        value = [value]
    return value


def socketio_run_event_nested_deep(h):
    """A `run` event nested 600 deep gets an error ack naming the depth limit (not a server
    error); one with a field beside the spec is refused naming it; a raw event nested 100,000 deep
    (deeper than any encoder writes) is dropped; the connection then runs normally."""
    client, events = socketio_client(h.target)
    try:
        spec = vector_add_spec(n=1024, block=256)
        limit = sys.getrecursionlimit()
        sys.setrecursionlimit(5000)  # the client's own encoder walks the event twice as deep as it nests
        try:
            ack = client.call("run", {"spec": {**spec, "args": {**spec["args"], "n": nested(600)}}}, timeout=30)
        finally:
            sys.setrecursionlimit(limit)
        assert "depth limit is 32" in ((ack or {}).get("error") or {}).get("message", ""), ack
        ack = client.call("run", {"spec": spec, "form_link": True}, timeout=30)
        assert "'form_link'" in ((ack or {}).get("error") or {}).get("message", ""), ack
        client.eio.send('2["run",' + "[" * 100_000 + "]" * 100_000 + "]")
        time.sleep(1)
        assert client.connected, "the server dropped the connection"
        socketio_run_ok(client, events)
    finally:
        client.disconnect()


def forged_session_cookies(h):
    """Sessions are signed with the server's own key, never `dev`: a cookie signed with `dev`
    naming another student's owner id is a new owner's (it sees none of her kernels); a cookie
    signed with the real key names no work of the server's (its key is another space); with no
    SECRET_KEY two web processes starting at once make one key, kept 0600 and out of a run's sight;
    and the server refuses to start with `dev`."""
    app = h.target.app
    alice = h.target.new_client()
    compiled = h.target.run({**vector_add_spec(n=1024, block=256), "options": {"ir": True}}, alice)
    assert compiled["status"] == "ok", result_summary(compiled)
    context = h.context()
    own = h.target.run(hostile_spec(H.LIST_OWN_CACHE, context), alice)
    check(own, Expect({"cache": Returns(lambda names: len(names) > 0, "her own compiled kernels")}), context)
    forger = app.test_client()
    forger.set_cookie("session", session_cookie("dev", {"owner": owner_of(alice)}))
    forged = h.target.run(hostile_spec(H.LIST_OWN_CACHE, context), forger)
    check(forged, Expect({"cache": Returns([])}), context)
    assert owner_of(forger) != owner_of(alice), "a cookie signed with 'dev' was taken"
    from app.owners import PUZZLE_SOLUTIONS, SERVER_PREFIX
    with jobs_queued(app) as (taken, _):
        for claimed in ("puzzle-solution:constant_add", PUZZLE_SOLUTIONS.key, "server-warm-up", owner_of(alice) + "x"):
            client = app.test_client()
            client.set_cookie("session", session_cookie(SECRET, {"owner": claimed}))
            assert h.target.run(vector_add_spec(n=1024, block=256), client)["status"] == "ok"
    assert len(taken) == 4 and not [job.owner for job in taken if job.owner.startswith(SERVER_PREFIX)
                                    or len(job.owner) != 32], [job.owner for job in taken]
    # No SECRET_KEY: two web processes of one host start at once and make one key.
    instance = os.path.join(h.run_root, "..", "instance-" + context["marker"])
    code = ("import hashlib; from app import create_app; app = create_app({'START_WORKERS': False, "
            "'DATABASE': ':memory:', 'INSTANCE_PATH': %r}); print(hashlib.sha256(app.secret_key.encode()).hexdigest())"
            % instance)
    env = {k: v for k, v in os.environ.items() if k != "SECRET_KEY"}
    starts = [subprocess.Popen([sys.executable, "-c", code], cwd=ROOT, env=env, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE) for _ in range(2)]
    keys = [p.communicate(timeout=120)[0].decode().strip() for p in starts]
    assert len(set(keys)) == 1 and len(keys[0]) == 64, keys
    key_file = os.path.join(instance, "secret_key")
    assert os.stat(key_file).st_mode & 0o777 == 0o600
    refused = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env={**env, "SECRET_KEY": "dev"},
                             capture_output=True, timeout=120)
    assert refused.returncode != 0 and b"SECRET_KEY is 'dev'" in refused.stderr, refused.stderr[-2000:]
    look = h.target.run(hostile_spec("attempt('read', read, CONTEXT['key_file'])", h.context(key_file=key_file)))
    check(look, Expect({"read": NOT_THERE}), context)


def http_exchange(server, path, headers=None):
    connection = http.client.HTTPConnection("127.0.0.1", server.port, timeout=60)
    try:
        connection.request("GET", path, headers=headers or {})
        response = connection.getresponse()
        return response.status, response.headers, response.read().decode(errors="replace")
    finally:
        connection.close()


def csp_directives(header):
    return {part.split()[0]: part.split()[1:] for part in (header or "").split(";") if part.strip()}


def security_headers(h):
    """Every response says nosniff and a Referrer-Policy; every page a Content-Security-Policy
    that allows scripts from the server only (the editor's one inline import map by the response's
    nonce: no inline handler, no unmarked inline script, no eval), frames it only from itself (the
    embed from FRAME_ANCESTORS); the session cookie is SameSite=Lax and HttpOnly, and Secure when the
    proxy says the request came over https."""
    import re
    problems = []
    pages = ["/", "/examples/vector_add", "/new", "/puzzles", "/puzzles/constant_add", "/examples/vector_add?embed=1",
             "/no/such/page"]
    for path in pages + ["/api/spec", "/healthz", "/static/js/main.js"]:
        status, headers, body = http_exchange(h.target, path)
        if headers.get("X-Content-Type-Options") != "nosniff" or headers.get("Referrer-Policy") != "same-origin":
            problems.append(f"{path}: {dict(headers)}")
        if path not in pages:
            continue
        csp = csp_directives(headers.get("Content-Security-Policy"))
        nonces = [s[len("'nonce-"):-1] for s in csp.get("script-src", []) if s.startswith("'nonce-")]
        if set(csp.get("script-src", [])) - {"'self'"} - {f"'nonce-{n}'" for n in nonces} or len(nonces) != 1:
            problems.append(f"{path}: script-src {csp.get('script-src')}")
        if csp.get("object-src") != ["'none'"] or csp.get("base-uri") != ["'none'"]:
            problems.append(f"{path}: {csp}")
        if csp.get("frame-ancestors") != (["*"] if "embed=1" in path else ["'self'"]):
            problems.append(f"{path}: frame-ancestors {csp.get('frame-ancestors')}")
        for tag in re.findall(r"<script\b[^>]*>", body):
            if "src=" not in tag and 'type="application/json"' not in tag and f'nonce="{nonces[0] if nonces else "-"}"' not in tag:
                problems.append(f"{path}: an inline script without the nonce: {tag}")
        handlers = re.findall(r"<[^>]*\son[a-z]+\s*=[^>]*>", body) + re.findall(r"javascript:", body)
        if handlers:
            problems.append(f"{path}: inline handlers {handlers[:3]}")
    _, headers, _ = http_exchange(h.target, "/")
    cookie = headers.get("Set-Cookie") or ""
    if "SameSite=Lax" not in cookie or "HttpOnly" not in cookie or "Secure" in cookie:
        problems.append(f"the session cookie over http: {cookie}")
    _, headers, _ = http_exchange(h.target, "/", {"X-Forwarded-Proto": "https", "X-Forwarded-For": "192.0.2.44"})
    cookie = headers.get("Set-Cookie") or ""
    if "Secure" not in cookie or "SameSite=Lax" not in cookie:
        problems.append(f"the session cookie over https: {cookie}")
    assert not problems, "\n".join(problems)


def graded_run_is_lent_no_kernels(h):
    """A teacher's puzzle runs its expressions in the student's graded run: that run is lent
    none of the student's compiled kernels, and nothing it leaves in its cache reaches the student's
    next ordinary run or the student's cache on the host."""
    import base64
    from app.owners import key as owner_key
    app, student = h.target.app, h.target.new_client()
    compiled = h.target.run({**vector_add_spec(n=1024, block=256), "options": {"ir": True}}, student)
    assert compiled["status"] == "ok", result_summary(compiled)
    own_cache = os.path.join(h.run_root, "kernel-caches", owner_key(owner_of(student)))
    theirs = set(wait_for(lambda: os.path.isdir(own_cache) and os.listdir(own_cache), 10) or ())
    assert theirs, "the student's run left no compiled kernel to be lent"
    context = h.context()
    planted = base64.b32encode(hashlib.sha256(context["marker"].encode()).digest()).decode().rstrip("=")
    plant = f"exec({H.GRADED_PLANT.replace('KEY', repr(planted))!r}) or torch.randn(N)"
    body = json.loads(puzzle_body(inputs={"x": plant, "y": "torch.randn(N)", "out": "torch.empty(N)"}))
    body["title"] = "Plant " + context["marker"]
    made = app.test_client().post("/api/puzzles", json=body)
    assert made.status_code == 200, made.get_data(as_text=True)
    spec = app.test_client().get(f"/api/puzzles/{made.json['name']}").json["spec"]
    graded = h.target.run({**spec, "source": VECTOR_ADD}, student)
    assert graded.get("puzzle"), result_summary(graded)
    seen = [json.loads(line.split(" ", 1)[1]) for line in graded["stdout"].splitlines()
            if line.startswith("GRADED-FINDINGS ")]
    assert seen and all(set(names) <= {planted} for names in seen), f"the graded run was lent {seen}"
    after = h.target.run(hostile_spec(H.LIST_OWN_CACHE, context), student)
    check(after, Expect({"cache": Returns(lambda names: planted not in names and set(names) >= theirs,
                                          "the student's own kernels, without the planted entry")}), context)
    assert planted not in os.listdir(own_cache), "the planted entry was collected into the student's cache"


def teacher_puzzle(h, source=VECTOR_ADD, title=None, **changes):
    """Save a teacher's puzzle (from a client of its own address); returns its name."""
    body = json.loads(puzzle_body(source=source, **changes))
    body["title"] = title or "Puzzle " + secrets.token_hex(6)
    made = h.target.app.test_client().post("/api/puzzles", json=body,
                                            headers=from_address(f"198.18.{secrets.randbelow(250)}.{secrets.randbelow(250)}"))
    assert made.status_code == 200, made.get_data(as_text=True)
    return made.json["name"]


def graded_run(h, name, source=VECTOR_ADD, client=None):
    spec = h.target.app.test_client().get(f"/api/puzzles/{name}").json["spec"]
    return h.target.run({**spec, "source": source}, client or h.target.new_client())


def solution_state(h, name):
    from app.course import puzzles
    with h.target.app.app_context():
        return h.target.app.extensions["puzzle_solutions"].outcome(puzzles.find(name))


def puzzle_checks_run_as_the_teachers_runs(h):
    """Saving a teacher's puzzle runs its solution and its starter as the teacher's own runs (lent
    no kernels), never as the server's work: a failing solution is refused and stored nowhere; a
    saved puzzle's check is its solution's outcome, so four concurrent first graded runs and three
    after them run the solution no more. A teacher saving puzzles while the workers are busy waits
    in the teacher's own share: past QUEUE_PER_OWNER saves at once one is refused (429), and a
    bystander still gets in."""
    from app.owners import PUZZLE_SOLUTIONS
    from app.owners import key as owner_key
    app = h.target.app
    teacher = app.test_client()
    teacher.get("/")  # its session: the owner of its saves' runs
    address = from_address("198.18.7.7")
    failing = VECTOR_ADD.replace("x + y, mask=mask", "x - y, mask=mask")
    with jobs_queued(app) as (taken, refused):
        count = get_db_count(app)
        answer = teacher.post("/api/puzzles", json=json.loads(puzzle_body(source=failing)), headers=address)
        assert answer.status_code == 400 and answer.json["error"]["field"] == "solution", answer.get_data(as_text=True)
        assert get_db_count(app) == count, "a refused puzzle was stored"
        assert [job.owner for job in taken] == [owner_key(owner_of(teacher))] and taken[0].store is None, \
            "the failing solution's check did not run once, as the teacher's run"
        made = teacher.post("/api/puzzles", json={**json.loads(puzzle_body()), "title": "Checked " + secrets.token_hex(4)},
                            headers=address)
        assert made.status_code == 200, made.get_data(as_text=True)
        name = made.json["name"]
        results = []
        threads = [run_in_thread(graded_run, h, name) for _ in range(4)]
        for thread, box in threads:
            thread.join(120)
            results.append(box.get("value") or {})
        results += [graded_run(h, name) for _ in range(3)]
        assert all(r.get("puzzle") and r["puzzle"]["expected"] for r in results), [result_summary(r) for r in results]
        assert not [job for job in taken if job.owner == PUZZLE_SOLUTIONS.key], "the server ran a solution its check had run"
        assert solution_state(h, name)["state"] == "ok"
    per_owner = app.config["QUEUE_PER_OWNER"]
    with jobs_queued(app) as (taken, refused):
        sleepers = occupy_workers(h)

        def save(i):
            source = VECTOR_ADD.replace("pid = tl.program_id", f"# puzzle {i} {secrets.token_hex(4)}\n    pid = tl.program_id")
            return teacher.post("/api/puzzles", json=json.loads(puzzle_body(source=source)), headers=address).status_code
        saves = [run_in_thread(save, i) for i in range(per_owner + 1)]
        assert wait_for(lambda: refused, 30), "no save was refused past the teacher's share"
        bystander = h.target.run(vector_add_spec(n=1024, block=256), h.target.new_client())
        for thread, _ in sleepers + saves:
            thread.join(120)
        statuses = sorted(box.get("value") for _, box in saves)
        assert statuses == [200] * per_owner + [429], statuses
        assert bystander["status"] == "ok", result_summary(bystander)


def get_db_count(app):
    import sqlite3
    with contextlib.closing(sqlite3.connect(app.config["DATABASE"])) as conn:
        return conn.execute("SELECT COUNT(*) FROM puzzle").fetchone()[0]


def cookieless_runs_from_one_address(h):
    """A client that drops its cookie is a new owner at each request, not a new address: of 12
    runs sent at once without cookies from one address, QUEUE_PER_ADDRESS wait and the rest are
    refused (429) naming the limit; a bystander at another address still gets in."""
    app = h.target.app
    per_address = app.config["QUEUE_PER_ADDRESS"]
    sleepers = occupy_workers(h)
    spec = vector_add_spec(n=1024, block=256)

    def post():
        return app.test_client(use_cookies=False).post("/api/run", json=spec, headers=from_address("203.0.113.7"))

    flood = [run_in_thread(post) for _ in range(12)]
    answered = lambda: [box["value"] for _, box in flood if "value" in box]  # noqa: E731
    assert wait_for(lambda: len(answered()) >= 12 - per_address, 30), [a.status_code for a in answered()]
    bystander = app.test_client().post("/api/run", json=spec, headers=from_address("192.0.2.9"))
    for thread, _ in flood + sleepers:
        thread.join(120)
    answers = [box["value"] for _, box in flood]
    refused = [a for a in answers if a.status_code == 429]
    ran = [a for a in answers if a.status_code == 200]
    assert len(ran) == per_address and len(refused) == 12 - per_address, [a.status_code for a in answers]
    assert all("QUEUE_PER_ADDRESS" in a.json["error"]["message"] for a in refused), refused[0].json
    assert all(a.json["status"] == "ok" for a in ran)
    assert bystander.status_code == 200 and bystander.json["status"] == "ok", bystander.get_data(as_text=True)[:500]


def socketio_connections_from_one_address(h):
    """One address opens 30 Socket.IO connections: CONNECTIONS_PER_ADDRESS (20) are let in,
    the rest refused at the handshake; a run from each of the 20 (each its own owner, no cookie)
    puts at most QUEUE_PER_ADDRESS in line; a bystander at another address connects and runs; once
    they close, the address connects again."""
    import socketio
    server, clients, refused = h.target, [], 0
    spec = vector_add_spec(n=1024, block=256)

    def connect(address):
        client = socketio.Client(reconnection=False)
        events = []
        client.on("run_result", lambda data: events.append(data))
        client.connect(server.url, transports=["websocket"], headers=from_address(address), wait_timeout=10)
        return client, events

    try:
        for _ in range(30):
            try:
                clients.append(connect("203.0.113.8"))
            except socketio.exceptions.ConnectionError:
                refused += 1
        assert (len(clients), refused) == (20, 10), (len(clients), refused)
        first, _ = clients[0]
        assert "run_id" in first.call("run", {"spec": sleeper_spec(h)}, timeout=30)
        assert wait_for(lambda: server.health().get("queued") == 0 and server.health()["workers"][0]["state"] == "busy", 30)
        acks = [client.call("run", {"spec": spec}, timeout=30) for client, _ in clients[1:]]
        queued = [a for a in acks if "run_id" in a]
        full = [a for a in acks if "QUEUE_PER_ADDRESS" in (a.get("error") or {}).get("message", "")]
        assert len(queued) == 6 and len(full) == len(acks) - 6, acks
        bystander, events = connect("192.0.2.10")
        clients.append((bystander, events))
        ack = bystander.call("run", {"spec": spec}, timeout=30)
        assert "run_id" in ack, ack
        assert wait_for(lambda: events, 120) and events[0]["result"]["status"] == "ok", events
    finally:
        for client, _ in clients:
            client.disconnect()
    assert wait_for(lambda: server.health().get("queued") == 0, 120)

    def connects_again():
        try:
            connect("203.0.113.8")[0].disconnect()
            return True
        except socketio.exceptions.ConnectionError:
            return False
    assert wait_for(connects_again, 20, 0.5), "the address could not connect again once its connections closed"


def database_quota(h):
    """One address may store WRITES_PER_MINUTE new snippets a minute: past them it is refused
    (429, Retry-After) and the database does not grow; saving what is stored already is free (the
    same id, no growth, even when limited); another address still saves; and past DATABASE_MAX_MB a
    write is refused (507) saying the storage is full."""
    import sqlite3
    app = h.target.app
    per_minute = app.config["WRITES_PER_MINUTE"]

    def rows():
        with contextlib.closing(sqlite3.connect(h.database)) as conn:
            return conn.execute("SELECT count(*) FROM snippet").fetchone()[0]

    def save(n, address, pad=0):
        spec = vector_add_spec(n=n, block=256)
        if pad:
            spec["inputs"]["pad"] = "torch.zeros(1)  # " + "p" * pad
        return app.test_client().post("/api/snippets", json={"spec": spec, "ui": {}}, headers=from_address(address))

    first, before = save(7001, "203.0.113.20"), rows()
    answers = [save(7002 + i, "203.0.113.20") for i in range(per_minute + 9)]
    refused = [a for a in answers if a.status_code == 429]
    assert first.status_code == 200 and len(refused) >= 9, [a.status_code for a in answers]
    assert all(int(a.headers["Retry-After"]) >= 1 and "WRITES_PER_MINUTE" in a.json["error"]["message"] for a in refused)
    grown = rows()
    assert grown - before == len(answers) - len(refused)
    again = save(7001, "203.0.113.20")  # stored already: free, though the address is limited
    assert again.status_code == 200 and again.json["id"] == first.json["id"] and rows() == grown
    assert save(7001 + 10_000, "203.0.113.21").status_code == 200
    limited = app.test_client().post("/api/puzzles", data=puzzle_body(), content_type=JSON,
                                     headers=from_address("203.0.113.20"))
    assert limited.status_code == 429, limited.get_data(as_text=True)
    size_mb = os.path.getsize(h.database) / (1 << 20)
    cap = int(size_mb) + 2
    app.config["DATABASE_MAX_MB"] = cap
    try:
        answers = [save(8000 + i, f"203.0.114.{i}", pad=200_000) for i in range(20)]
        full = [a for a in answers if a.status_code == 507]
        assert full and all(a.status_code == 200 for a in answers[:answers.index(full[0])]), [a.status_code for a in answers]
        assert all("DATABASE_MAX_MB" in a.json["error"]["message"] for a in full)
        assert os.path.getsize(h.database) <= (cap << 20) + (1 << 20)
        assert save(7001, "203.0.114.250").status_code == 200  # a stored one still saves (free)
    finally:
        app.config["DATABASE_MAX_MB"] = 1024


def peak_rss_mb():
    with open("/proc/self/status") as f:
        return int(f.read().split("VmHWM:")[1].split()[0]) / 1024


def result_of_millions_of_tiny_objects(h):
    """A run makes its result 3 million empty objects (9 MB): the worker does not parse it, the
    run ends with an error, and this web process's peak memory does not move by 200 MB."""
    before = peak_rss_mb()
    context = h.context()
    result = h.target.run(hostile_spec(H.HUGE_RESULT, context))
    check(result, Expect({}, status="error", phases=("limit", "sandbox")), context)
    assert peak_rss_mb() - before < 200, f"the web process grew from {before:.0f} MB to {peak_rss_mb():.0f} MB"


def worker_line_past_the_limits(h):
    """A worker (as a compromised one would) writes a 15 MB line of tiny objects to the web
    process while a run is in flight: the web process never parses it (its peak memory does not
    move by 200 MB), that run fails naming the limit, and the worker is replaced."""
    app = h.target.app
    client = app.test_client()
    thread, box = run_in_thread(lambda: client.post("/api/run", json=sleeper_spec(h)).json)
    assert wait_for(lambda: any(w["state"] == "busy" for w in h.target.workers()), 30)
    slot = next(s for s in app.extensions["dispatcher"].slots if s.state == "busy")
    restarts, before = slot.restarts, peak_rss_mb()
    line = b'{"type":"status","id":"x","run_id":"' + slot.job.run_id.encode() + b'","content":{"n":[' \
        + b"{}," * 4_999_999 + b"{}]}}\n"
    channel = f"pipe:[{os.fstat(slot.worker.proc.stdout.fileno()).st_ino}]"  # the worker's end of it
    fds = [fd for fd in os.listdir(f"/proc/{slot.worker.proc.pid}/fd")
           if os.readlink(f"/proc/{slot.worker.proc.pid}/fd/{fd}") == channel]
    assert fds, "the worker's channel to the web process was not found"
    with open(f"/proc/{slot.worker.proc.pid}/fd/{fds[0]}", "wb") as pipe:
        pipe.write(line)
    del line
    thread.join(60)
    result = box.get("value") or {}
    assert result.get("status") == "error" and "MESSAGE_MAX_ELEMENTS" in result["error"]["message"], result_summary(result)
    assert slot.restarts == restarts + 1
    assert peak_rss_mb() - before < 200, f"the web process grew from {before:.0f} MB to {peak_rss_mb():.0f} MB"


def solution_trace_past_its_bound(h):
    """A teacher's solution makes its trace far larger than TRACE_MAX_BYTES: its outcome is
    kept without it (in the database; the web process keeps no trace), and graded runs go without
    the picture."""
    import sqlite3
    from app.course import puzzles
    from app.course.solutions import Solutions
    source = VECTOR_ADD + H.PADDED_SOLUTION_TRACE
    name = teacher_puzzle(h, source=source)
    assert wait_for(lambda: solution_state(h, name), 120), "the solution never ran"
    with h.target.app.app_context():
        digest = Solutions.digest(puzzles.find(name))
    with contextlib.closing(sqlite3.connect(h.database)) as conn:
        state, trace, detail = conn.execute("SELECT state, trace, detail FROM solution WHERE digest = ?", (digest,)).fetchone()
    assert state == "ok" and trace is None and "TRACE_MAX_BYTES" in detail, (state, detail)
    result = graded_run(h, name)
    assert result["status"] == "ok" and result["puzzle"]["expected"] is None, result_summary(result)
    kept = vars(h.target.app.extensions["puzzle_solutions"])
    assert not [k for k, v in kept.items() if isinstance(v, (dict, list)) and len(json.dumps(v, default=str)) > 10_000]


SCENARIOS = [
    pytest.param(no_descriptor_reaches_outside_the_run, "hostile", id="descriptors_of_the_run"),
    pytest.param(a_spinning_run_leaves_a_bystander_its_share, "hostile", id="spin_every_core_beside_a_bystander"),
    pytest.param(sparse_entries_are_not_collected_dense, "hostile", id="sparse_files_collected_into_kernel_caches"),
    pytest.param(a_previous_runs_job_is_not_in_a_later_runs_memory, "hostile", id="read_a_previous_runs_job_from_memory"),
    pytest.param(concurrent_run_of_another_owner, "hostile", id="kill_a_concurrent_run_of_another_owner"),
    pytest.param(idle_run_process_of_the_other_worker, "hostile", id="kill_the_other_workers_idle_run_process"),
    pytest.param(own_worker_killed_and_a_daemon_left, "hostile", id="kill_own_worker_and_leave_a_daemon"),
    pytest.param(dev_shm_is_not_shared_between_runs, "hostile", id="dev_shm_file_left_for_the_next_run"),
    pytest.param(links_planted_in_the_kernel_cache_are_not_followed, "hostile", id="links_planted_in_the_kernel_cache"),
    pytest.param(another_owners_kernels_are_out_of_reach, "hostile", id="another_owners_compiled_kernels"),
    pytest.param(shared_kernels_written_replaced_or_poisoned, "hostile", id="write_replace_or_poison_the_shared_kernels"),
    pytest.param(malformed_socketio_run_events, "served", id="socketio_100_malformed_run_events"),
    pytest.param(oversized_socketio_event, "served", id="socketio_oversized_run_event"),
    pytest.param(socketio_run_event_nested_deep, "served", id="socketio_run_event_nested_600_and_100000_deep"),
    pytest.param(forged_session_cookies, "hostile", id="session_cookie_signed_with_dev_or_naming_the_server"),
    pytest.param(security_headers, "served", id="security_headers_and_cookie_flags"),
    pytest.param(graded_run_is_lent_no_kernels, "hostile", id="teacher_puzzle_plants_in_the_students_kernel_cache"),
    pytest.param(puzzle_checks_run_as_the_teachers_runs, "hostile", id="teacher_puzzle_checked_as_the_teachers_runs"),
    pytest.param(cookieless_runs_from_one_address, "hostile", id="twelve_cookieless_runs_from_one_address"),
    pytest.param(socketio_connections_from_one_address, "production", id="thirty_socketio_connections_from_one_address"),
    pytest.param(database_quota, "hostile", id="snippet_flood_and_a_full_database"),
    pytest.param(result_of_millions_of_tiny_objects, "hostile", id="result_of_3_million_tiny_objects"),
    pytest.param(worker_line_past_the_limits, "hostile", id="worker_line_of_15_mb_of_tiny_objects"),
    pytest.param(solution_trace_past_its_bound, "hostile", id="teacher_solution_trace_past_its_bound"),
]


@pytest.mark.parametrize("scenario, target", SCENARIOS)
def test_a_hostile_scenario_is_denied(request, scenario, target):
    harness = request.getfixturevalue(target)
    problems = []
    try:
        scenario(harness)
    except AssertionError as e:
        problems.append(str(e))
    problems += harness.target.survival_problems()
    assert not problems, "\n".join(problems)
