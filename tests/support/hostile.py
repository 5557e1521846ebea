"""The hostile corpus's checker: what a denial looks like, a case and its expectations, the one check
of a run's findings, and the host-side helpers the cases share (processes, waiting, the requests
and puzzles a case makes). The attack sources are in tests/support/attacks/, the targets an
attack is aimed at (an app, a gunicorn server) in tests/support/hostile_targets.py."""
import contextlib
import json
import os
import secrets
import socket
import textwrap
import threading
import time
from dataclasses import dataclass

import pytest

from tests.support import attacks as H
from tests.support.kernels import VECTOR_ADD, vector_add_spec

SECRET = "hostile-secret-" + secrets.token_hex(8)
CREDENTIAL = "nvapi-" + secrets.token_hex(8)  # a credential-shaped variable of the server's, NVIDIA_API_KEY
FINDINGS = "HOSTILE-FINDINGS "
JSON = "application/json"


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


def comm_of(pid):
    try:
        with open(f"/proc/{pid}/comm") as f:
            return f.read().strip()
    except OSError:
        return ""


def children_of(pid):
    """A worker's run processes (its zygote, which forks them, aside)."""
    return [p for p in host_pids() if (stat_fields(p) or (None, None))[1] == pid and comm_of(p) != "zygote"]


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


# ---------------------------------------------------------------- requests, owners and puzzles of a case

def from_address(address):
    """Request headers of a client at `address`, as the proxy in front (TRUSTED_PROXY_HOPS=1) says."""
    return {"X-Forwarded-For": address}


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


def run_in_thread(target, *args):
    box = {}
    thread = threading.Thread(target=lambda: box.update(value=target(*args)), daemon=True)
    thread.start()
    return thread, box


def sleeper_spec(h, comm=None):
    return hostile_spec(H.SLEEPER, h.context(comm=comm or "s" + secrets.token_hex(6)))


def occupy_workers(h, count=2):
    """`count` runs of their own owners that sleep 6 s, one per worker; returns their threads once all run."""
    app = h.target.app
    threads = [run_in_thread(lambda spec=sleeper_spec(h): app.test_client().post("/api/run", json=spec))
               for _ in range(count)]
    assert wait_for(lambda: sum(w["state"] == "busy" for w in h.target.workers()) == count
                    and app.extensions["dispatcher"].health()["queued"] == 0, 30), "the sleepers never ran"
    return threads


def puzzle_body(**changes):
    """A teacher's puzzle (POST /api/puzzles) made from the vector add, its spec's fields replaced."""
    spec = {**vector_add_spec(n=1024, block=256), "inputs": {"x": "torch.randn(N)", "y": "torch.randn(N)",
                                                             "out": "torch.empty(N)"}}
    spec = {**spec, "args": {**spec["args"], "n": "N"}, **changes}
    starter = VECTOR_ADD.replace("tl.store(out_ptr + offs, x + y, mask=mask)", "pass  # store the sum")
    return json.dumps({"spec": spec, "title": "Add", "statement": "Add x and y.", "starter": starter,
                       "tests": [{"N": 100}]}).encode()


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
