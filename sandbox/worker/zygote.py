"""The zygote: a pristine warm process that only ever forks run processes.

    worker ── fork (once, after the imports and warm-up, before any job) ──▶ zygote
    worker ── "spawn" ──▶ zygote ── fork ──▶ midwife ── fork ──▶ run process (the worker's child)
                                              exits at once

A run process forked from the worker itself would inherit the worker's memory, and with it every
job the worker has handled (specs, sources, results: another owner's code, a puzzle's solution).
Like CPython's forkserver and Android's zygote, the zygote is forked before the worker holds any
job and never receives one: it gets only what a fork needs (a uid, a scratch dir, a cgroup), so
what a run inherits is the warm, job-free state of the worker's start.

The run process is adopted by the worker (the subreaper of its runs) when the midwife exits, so the
worker waits for it, kills it and collects it as its own child; the pipes the run process talks on
reach the worker over the zygote's socket (SCM_RIGHTS).
"""
import contextlib
import json
import os
import socket
import struct

from sandbox.jail import isolation

MAX_REQUEST_BYTES = 1 << 16


class Zygote:
    """The worker's handle on its zygote."""

    def __init__(self, fork_run_process):
        """`fork_run_process(request, pipes)`: in a new process (the run process), never returns."""
        self.channel, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        worker = os.getpid()
        self.pid = os.fork()
        if self.pid == 0:
            try:
                self.channel.close()
                _become_zygote(worker, theirs)
                _serve(theirs, fork_run_process)
            finally:
                os._exit(0)
        theirs.close()

    def spawn(self, request):
        """A new run process for `request` (a small dict of what the fork needs, no job): returns
        its pid and the worker's ends of its pipes (job, message, output)."""
        self.channel.sendall(json.dumps(request).encode())
        try:
            data, fds, _, _ = socket.recv_fds(self.channel, 64, 3)
        except OSError as e:
            raise RuntimeError(f"the zygote is gone: {e}") from None
        if len(data) != 4 or len(fds) != 3:
            for fd in fds:
                os.close(fd)
            # A worker whose zygote died is replaced whole: forking another from the worker, which
            # has held jobs by now, would defeat its purpose.
            raise RuntimeError("the zygote failed to fork a run process" if data or fds else "the zygote is gone")
        return struct.unpack("i", data)[0], tuple(fds)

    def stop(self):
        self.channel.close()
        with contextlib.suppress(ChildProcessError):
            os.waitpid(self.pid, 0)


def _become_zygote(worker, channel):
    """Die with the worker; hold nothing of it but the channel (not its link to the server)."""
    isolation.die_with_parent()
    if os.getppid() != worker:
        os._exit(0)
    isolation.set_process_name("zygote")
    null = os.open(os.devnull, os.O_RDWR)
    os.dup2(null, 0)
    os.dup2(null, 1)  # stderr stays: the worker's log, for a traceback
    keep = {0, 1, 2, channel.fileno()}
    for fd in map(int, os.listdir("/proc/self/fd")):
        if fd not in keep:
            with contextlib.suppress(OSError):
                os.close(fd)


def _serve(channel, fork_run_process):
    """Fork one run process per request until the worker closes the channel."""
    while True:
        data = channel.recv(MAX_REQUEST_BYTES)
        if not data:
            return
        try:
            pid, theirs = _spawn(json.loads(data), fork_run_process)
        except Exception:  # noqa: BLE001  (a failed fork is answered, never fatal to the zygote)
            import traceback
            traceback.print_exc()
            channel.send(b"")
            continue
        try:
            socket.send_fds(channel, [struct.pack("i", pid)], theirs)
        finally:
            for fd in theirs:
                os.close(fd)


def _spawn(request, fork_run_process):
    job_r, job_w = os.pipe()
    msg_r, msg_w = os.pipe()
    out_r, out_w = os.pipe()
    born_r, born_w = os.pipe()  # the midwife tells its child's pid
    free_r, free_w = os.pipe()  # EOF once the midwife is reaped: the run process has been adopted
    midwife = os.fork()
    if midwife == 0:
        try:
            for fd in (job_w, msg_r, out_r, born_r, free_w):
                os.close(fd)
            _deliver(request, (job_r, msg_w, out_w), born_w, free_r, fork_run_process)
        finally:
            os._exit(0)
    for fd in (job_r, msg_w, out_w, born_w, free_r):
        os.close(fd)
    with os.fdopen(born_r, "rb") as born:
        data = born.read(4)
    # Reaped, the midwife has finished exiting, and its child's parent is the worker: only then may
    # the child ask to die with its parent (asked earlier, the midwife's exit would kill it).
    os.waitpid(midwife, 0)
    os.close(free_w)
    if len(data) != 4:
        for fd in (job_w, msg_r, out_r):
            os.close(fd)
        raise RuntimeError("the run process was not born")
    return struct.unpack("i", data)[0], (job_w, msg_r, out_r)


def _deliver(request, pipes, born_w, free_r, fork_run_process):
    """In the midwife: a new PID namespace for the run where allowed, then the run process."""
    pid_namespace = bool(request.get("pid_namespace")) and isolation.new_pid_namespace()
    child = os.fork()
    if child == 0:
        os.close(born_w)
        with os.fdopen(free_r, "rb") as free:
            free.read()
        fork_run_process(request, pipes, pid_namespace)
        os._exit(70)
    os.write(born_w, struct.pack("i", child))
