"""The sources of the hostile corpus (tests/test_hostile_*.py): module-level Python that a run
executes before its kernel is launched.

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

# -- processes -------------------------------------------------------------------------------

PROC_LISTING = "attempt('pids', visible_pids)"

KILL_HOST_PROCESSES = """
attempt('kill_victim', os.kill, CONTEXT['victim_pid'], signal.SIGKILL)
attempt('signal_test_process', os.kill, CONTEXT['test_pid'], 0)
attempt('signal_worker', os.kill, CONTEXT['worker_pids'][0], 0)
"""

KILL_GUNICORN_MASTER = """
bind = '127.0.0.1:%d' % CONTEXT['port']
attempt('servers_seen', lambda: [p for p in visible_pids() if 'gunicorn' in cmdline(p) and bind in cmdline(p)])
attempt('kill_master', os.kill, CONTEXT['master_pid'], signal.SIGKILL)
"""

KILL_WEB_PROCESS = "attempt('kill_web_process', os.kill, CONTEXT['server_pid'], signal.SIGKILL)"

CONTROL_SOCKET = """
def shutdown_quick(path):
    request = _json.dumps({'id': 1, 'command': 'shutdown quick', 'args': []}).encode()
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
        s.settimeout(3)
        s.connect(path)
        s.sendall(struct.pack('>I', len(request)) + request)
        return s.recv(4096).decode(errors='replace')
attempt('server_control_socket', shutdown_quick, CONTEXT['ctl_socket'])
attempt('home_control_socket', shutdown_quick, os.path.expanduser('~/.gunicorn/gunicorn.ctl'))
"""

SERVER_OOM_SCORE = """
attempt('master_oom_score_adj', write_back, '/proc/%d/oom_score_adj' % CONTEXT['master_pid'])
attempt('web_oom_score_adj', write_back, '/proc/%d/oom_score_adj' % CONTEXT['server_pid'])
"""

SERVER_ENVIRON = """
attempt('master_environ', read, '/proc/%d/environ' % CONTEXT['master_pid'])
attempt('web_environ', read, '/proc/%d/environ' % CONTEXT['server_pid'])
attempt('secret_in_own_environment', lambda: 'SECRET_KEY' in os.environ
        or any(CONTEXT['secret'] in value for value in os.environ.values()))
"""

OWN_ENVIRONMENT = """
attempt('secret_key', lambda: 'SECRET_KEY' in os.environ)
attempt('credential', lambda: [k for k, v in os.environ.items() if 'API_KEY' in k or CONTEXT['credential'] in v])
attempt('names', lambda: sorted(os.environ))
attempt('secret_value', lambda: any(CONTEXT['secret'] in value for value in os.environ.values()))
attempt('test_process_environ', read, '/proc/%d/environ' % CONTEXT['test_pid'])
"""

# Runs B of another owner while run A (which named itself CONTEXT['comm']) sleeps on the other worker.
KILL_CONCURRENT_RUN = """
attempt('seen', lambda: [p for p in visible_pids() if comm(p) == CONTEXT['comm']])
attempt('kill_by_comm', lambda: kill_each([p for p in visible_pids() if comm(p) == CONTEXT['comm']]))
attempt('kill_by_pid', os.kill, CONTEXT['other_run_pid'], signal.SIGKILL)
"""

SLEEPER = """
libc.prctl(15, CONTEXT['comm'].encode(), 0, 0, 0)  # PR_SET_NAME: what the other run looks for
time.sleep(6)
"""

KILL_IDLE_RUNS = "attempt('kill_idle_runs', kill_each, [p for p in CONTEXT['idle_runs'] if p != os.getpid()])"

KILL_WORKER_LEAVE_DAEMON = """
def daemon():
    if os.fork() == 0:  # detached the classic way: a new session, then a second fork
        os.setsid()
        if os.fork() == 0:
            os.execv(sys.executable, [sys.executable, '-c', 'import time; time.sleep(60)', CONTEXT['marker']])
        os._exit(0)
    os.wait()
    return 'started'
attempt('daemon', daemon)
parent = os.getppid()
attempt('kill_worker', kill_each, [parent] if parent in CONTEXT['worker_pids'] else CONTEXT['worker_pids'])
"""

# -- filesystem ------------------------------------------------------------------------------

PASSWD = """
attempt('uid', os.getuid)
attempt('other_users', lambda: sorted(line.split(':')[0] for line in read('/etc/passwd', 1 << 20).splitlines()
                                      if line.count(':') >= 2 and int(line.split(':')[2]) != os.getuid()))
attempt('other_groups', lambda: sorted(line.split(':')[0] for line in read('/etc/group', 1 << 20).splitlines()
                                       if line.count(':') >= 2 and int(line.split(':')[2]) != os.getgid()))
"""

OTHER_SCRATCH = """
attempt('other_scratch_dirs', lambda: [p for p in CONTEXT['scratch_dirs']
                                       if os.path.exists(p) and not os.path.samefile(p, os.getcwd())])
attempt('run_root', os.listdir, CONTEXT['run_root'])
"""

SCRATCH_FILL = """
import shutil

def fill_bytes(total_mb, file_mb=48, chunk_mb=16):
    chunk, written, index = b'\\1' * (chunk_mb << 20), 0, 0
    try:
        while written < total_mb:
            with open('fill-%d' % index, 'wb') as f:
                for _ in range(file_mb // chunk_mb):
                    f.write(chunk)
                    written += chunk_mb
            index += 1
        return '%d MB written' % written
    except OSError as e:
        raise OSError(e.errno, 'after %d MB: %s' % (written, e.strerror)) from None
    finally:
        for i in range(index + 1):
            if os.path.exists('fill-%d' % i):
                os.unlink('fill-%d' % i)

def fill_files(count):
    os.mkdir('many')
    made = 0
    try:
        for made in range(count):
            with open('many/%d' % made, 'wb'):
                pass
        return '%d files made' % count
    except OSError as e:
        raise OSError(e.errno, 'after %d files: %s' % (made, e.strerror)) from None
    finally:
        shutil.rmtree('many', ignore_errors=True)
"""

ONE_BIG_FILE = """
def one_file(mb):
    chunk = b'\\1' * (1 << 20)
    written = 0
    try:
        with open('big', 'wb') as f:
            for written in range(mb):
                f.write(chunk)
                f.flush()
        return '%d MB in one file' % mb
    except OSError as e:
        raise OSError(e.errno, 'after %d MB: %s' % (written, e.strerror)) from None
    finally:
        if os.path.exists('big'):
            os.unlink('big')
attempt('one_file', one_file, 128)
"""

SHM_FILL = """
def fill_shm(total_mb, file_mb=32):
    chunk, written, index = b'\\1' * (file_mb << 20), 0, 0
    try:
        while written < total_mb:
            with open('/dev/shm/%s-%d' % (CONTEXT['marker'], index), 'wb') as f:
                f.write(chunk)
            written += file_mb
            index += 1
        return '%d MB written' % written
    except OSError as e:
        raise OSError(e.errno, 'after %d MB: %s' % (written, e.strerror)) from None
    finally:
        for i in range(index + 1):
            if os.path.exists('/dev/shm/%s-%d' % (CONTEXT['marker'], i)):
                os.unlink('/dev/shm/%s-%d' % (CONTEXT['marker'], i))
attempt('shm', fill_shm, 1024)
"""

CGROUP_MKDIR = """
where = '/sys/fs/cgroup/pids' if os.path.isdir('/sys/fs/cgroup/pids') else '/sys/fs/cgroup'
attempt('mkdir', os.mkdir, where + '/' + CONTEXT['marker'])
"""

CGROUP_RELEASE_AGENT = """
where = '/sys/fs/cgroup/pids' if os.path.isdir('/sys/fs/cgroup/pids') else '/sys/fs/cgroup'
attempt('release_agent', write_back, where + '/release_agent')
"""

DEV_LISTING = "attempt('dev', lambda: sorted(os.listdir('/dev')))"

# Planted by the first run of an owner in its kernel cache (TRITON_CACHE_DIR); the second run of
# the same owner looks for what the planted links would have brought in.
PLANT_LINKS = """
cache = os.environ['TRITON_CACHE_DIR']
key = CONTEXT['marker'].replace('-', '')
def plant():
    os.makedirs(os.path.join(cache, key + 'a'))
    os.symlink('/etc/passwd', os.path.join(cache, key + 'a', 'add_kernel.json'))
    os.symlink(CONTEXT['secret_file'], os.path.join(cache, key + 'a', 'add_kernel.source'))
    os.symlink(os.path.dirname(CONTEXT['secret_file']), os.path.join(cache, key + 'b'))
    os.symlink('/etc', os.path.join(cache, key + 'c'))
    os.makedirs(os.path.join(cache, key + 'd'))
    with open(os.path.join(cache, key + 'd', 'add_kernel.json'), 'w') as f:
        f.write('{}')
    with open(os.path.join(cache, key + 'd', '__grp__add_kernel.json'), 'w') as f:
        _json.dump({'child_paths': {'add_kernel.json': '/etc/passwd', 'secret': CONTEXT['secret_file']}}, f)
    return sorted(os.listdir(cache))
attempt('plant', plant)
"""

LOOK_FOR_LINKS = """
cache = os.environ['TRITON_CACHE_DIR']
def walk():
    links, leaks = [], []
    for top, dirs, files in os.walk(cache):
        for name in dirs + files:
            path = os.path.join(top, name)
            if os.path.islink(path):
                links.append(os.path.relpath(path, cache))
            elif os.path.isfile(path):
                fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
                with os.fdopen(fd, 'rb') as f:
                    text = f.read(1 << 20).decode(errors='replace')
                if CONTEXT['secret'] in text or 'root:x:0:0' in text:
                    leaks.append(os.path.relpath(path, cache))
    return {'links': links, 'leaks': leaks}
attempt('cache', walk)
"""

# The gallery's compiled kernels, lent read-only to every run (sandbox.worker.shared_kernels): the run tries
# to change one entry for every later run, in place and through its own cache (an entry under the
# same key, with every file and the group poisoned, which its owner's cache then keeps).
SHARED_KERNELS = """
shared = '/shared-kernels'
entry = os.path.join(shared, CONTEXT['shared_key'])
victim = os.path.join(entry, CONTEXT['shared_file'])
def overwrite(path):
    with open(path, 'r+b') as f:
        return f.write(b'poison')
def poison_own_cache():
    own = os.path.join(os.environ['TRITON_CACHE_DIR'], CONTEXT['shared_key'])
    os.makedirs(own)
    children = {}
    for name in os.listdir(entry):
        with open(os.path.join(own, name), 'wb') as f:
            f.write(b'poison')
        children[name] = os.path.join(own, name)
    with open(os.path.join(own, '__grp__' + CONTEXT['shared_group']), 'w') as f:
        _json.dump({'child_paths': children}, f)
    return sorted(os.listdir(own))
attempt('lent', lambda: os.environ.get('TRITON_CACHE_MANAGER'))
attempt('overwrite', overwrite, victim)
attempt('add_file', create, os.path.join(entry, 'planted.so'))
attempt('new_entry', os.mkdir, os.path.join(shared, 'A' * 52))
attempt('replace', os.rename, os.path.join(entry, CONTEXT['other_file']), victim)
attempt('unlink', os.unlink, victim)
attempt('chmod', os.chmod, entry, 0o777)
attempt('remount', syscall, 'mount', None, shared.encode(), None, 0x20 | 0x1000, None)  # MS_REMOUNT | MS_BIND, writable
attempt('host_path', os.listdir, CONTEXT['shared_host_path'])
attempt('poison_own_cache', poison_own_cache)
"""

# -- system calls ----------------------------------------------------------------------------

# Where the permission check is the kernel's first, a call that passes it fails on the next one:
# a file system type that does not exist, a directory that is not a mount point.
MOUNT = """
os.makedirs('not-a-mount', exist_ok=True)
attempt('mount_on_etc', syscall, 'mount', b'none', b'/etc', b'hostile-no-such-fs', 0, None)
attempt('remount', syscall, 'mount', None, b'not-a-mount', None, 0x20 | 0x1000, None)  # MS_REMOUNT | MS_BIND, writable
"""

PIVOT_ROOT = """
os.makedirs('not-a-mount/old', exist_ok=True)
attempt('pivot_root', syscall, 'pivot_root', b'not-a-mount', b'not-a-mount/old')
"""

PTRACE = """
def traceme():
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        result = libc.syscall(_ctypes.c_long(NR['ptrace']), _ctypes.c_long(0), _ctypes.c_long(0),
                              _ctypes.c_long(0), _ctypes.c_long(0))
        os.write(w, str(0 if result == 0 else -_ctypes.get_errno()).encode())
        os._exit(0)
    os.close(w)
    code = int(os.read(r, 32) or b'-1')
    os.waitpid(pid, 0)
    if code < 0:
        raise OSError(-code, 'ptrace(PTRACE_TRACEME): ' + os.strerror(-code))
    return code
attempt('seize_worker', syscall, 'ptrace', 0x4206, CONTEXT['worker_pids'][0], 0, 0)  # PTRACE_SEIZE: no stop
attempt('traceme', traceme)
"""

BPF = """
attr = _ctypes.create_string_buffer(128)
struct.pack_into('IIII', attr, 0, 2, 4, 4, 1)  # BPF_MAP_TYPE_ARRAY, key 4, value 4, one entry
attempt('bpf', syscall, 'bpf', 0, attr, 128)  # BPF_MAP_CREATE
"""

PERF_EVENT = """
attr = _ctypes.create_string_buffer(128)
struct.pack_into('IIQ', attr, 0, 1, 128, 0)  # PERF_TYPE_SOFTWARE, size, PERF_COUNT_SW_CPU_CLOCK
struct.pack_into('Q', attr, 40, (1 << 0) | (1 << 5) | (1 << 6))  # disabled, exclude_kernel, exclude_hv
attempt('perf', syscall, 'perf_event_open', attr, 0, -1, -1, 0)  # this process, any cpu
"""

PROCESS_VM_READV = """
class Iovec(_ctypes.Structure):
    _fields_ = [('base', _ctypes.c_void_p), ('length', _ctypes.c_size_t)]
buf = _ctypes.create_string_buffer(64)
local, remote = Iovec(_ctypes.addressof(buf), 64), Iovec(0x400000, 64)
attempt('read_worker', syscall, 'process_vm_readv', CONTEXT['worker_pids'][0],
        _ctypes.byref(local), 1, _ctypes.byref(remote), 1, 0)
"""

MODULES = """
attempt('init_module', syscall, 'init_module', None, 0, b'')
attempt('finit_module', syscall, 'finit_module', os.open('/dev/null', os.O_RDONLY), b'', 0)
"""

# -- limits ----------------------------------------------------------------------------------

MEMORY_BOMB = """
r, w = os.pipe()
children = []
for index in range(3):
    pid = os.fork()
    if pid == 0:
        code = 0
        try:
            block = bytearray(2 << 30)
            block[::4096] = b'\\1' * ((2 << 30) // 4096)  # every page touched
            os.write(w, str(index).encode())
            time.sleep(3)  # all three held at once
        except MemoryError:
            code = 3
        finally:
            os._exit(code)
    children.append(pid)
os.close(w)

def outcome(pid):
    _, status = os.waitpid(pid, 0)  # as long as it takes: the run's own limits must end this
    if os.WIFSIGNALED(status):
        return 'killed by ' + signal.Signals(os.WTERMSIG(status)).name
    return {0: 'held 2 GB', 3: 'MemoryError'}.get(os.WEXITSTATUS(status), 'exited %d' % os.WEXITSTATUS(status))
attempt('children', lambda: [outcome(pid) for pid in children])
"""

THREAD_BOMB = """
import threading

def thread_bomb(count):
    stop, threads = threading.Event(), []
    threading.stack_size(64 * 1024)
    try:
        for _ in range(count):
            thread = threading.Thread(target=stop.wait, daemon=True)
            thread.start()
            threads.append(thread)
        return '%d threads started' % count
    except RuntimeError as e:
        raise RuntimeError('after %d threads: %s' % (len(threads), e)) from None
    finally:
        stop.set()
        for thread in threads:
            thread.join()
        threading.stack_size(0)
attempt('threads', thread_bomb, 10000)
"""

# A fork bomb from a lean process (a bare interpreter): forking the warm run process, torch and all,
# is slow enough that the run's time would end before any limit is met.
FORK_BOMB = """
BOMB = '''
import os, sys, time
children, deadline = [], time.monotonic() + 10
try:
    while len(children) < 10000 and time.monotonic() < deadline:
        pid = os.fork()
        if pid == 0:
            try:
                os.dup2(os.open('/dev/null', os.O_WRONLY), 1)
                os.execv('/bin/sleep', ['sleep', sys.argv[1]])
            finally:
                os._exit(1)
        children.append(pid)
    print('started', len(children), flush=True)
except OSError as e:
    print('refused', len(children), e.errno, e.strerror, flush=True)
finally:
    for pid in children:
        try:
            os.kill(pid, 9)
        except OSError:
            pass
    for pid in children:
        try:
            os.waitpid(pid, 0)
        except OSError:
            pass
'''

def fork_bomb():
    r, w = os.pipe()
    pid = os.posix_spawn(sys.executable, [sys.executable, '-S', '-I', '-c', BOMB, '29.' + CONTEXT['number']],
                         os.environ, file_actions=[(os.POSIX_SPAWN_DUP2, w, 1)])
    os.close(w)
    out = b''
    while True:
        chunk = os.read(r, 4096)
        if not chunk:
            break
        out += chunk
    os.waitpid(pid, 0)
    words = out.decode().split()
    if words and words[0] == 'refused':
        raise OSError(int(words[2]), 'after %s processes: %s' % (words[1], ' '.join(words[3:])))
    return out.decode().strip() or 'the bomb printed nothing'
attempt('forks', fork_bomb)
"""

OUTPUT_FLOOD = """
line = 'flood ' * 200
while True:
    print(line)
"""

FORGE_RESULT = """
forged = _json.dumps({'type': 'result', 'id': 'forged', 'run_id': None, 'content': {'result': {
    'status': 'ok', 'device': {'kind': CONTEXT['marker']}, 'error': None, 'check': None, 'timings': None,
    'trace': None, 'ir': None, 'notes': [CONTEXT['marker']], 'stdout': ''}}}) + '\\n'
def forge():
    # every pipe and socket it holds: where a channel to its worker or the server would be (not
    # CUDA's own device and event descriptors, whose corruption would only break this run's GPU)
    written = []
    for fd in range(3, 65):
        try:
            if not os.readlink(f'/proc/self/fd/{fd}').startswith(('pipe:', 'socket:')):
                continue
            os.write(fd, forged.encode())
            written.append(fd)
        except OSError:
            pass
    return written
attempt('forged_on', forge)
"""

# A run of one owner holds a secret in its source and its output; a later run of another owner looks
# for it in everything it inherited: each readable page of its own address space and every object
# Python keeps. It knows only the secret's prefix and digest, so its own memory never holds the secret.
PLANT = """
PLANTED = CONTEXT['plant']
print(PLANTED)
time.sleep(CONTEXT.get('hold_s', 0))
"""

MEMORY_SCAN = """
import gc as _gc
import hashlib as _hashlib


def _matches(data, prefix, digest, length):
    found, i = 0, data.find(prefix)
    while i >= 0:
        found += _hashlib.sha256(data[i:i + len(prefix) + length]).hexdigest() == digest
        i = data.find(prefix, i + 1)
    return found


def scan_memory(prefix, digest, length):
    # Every readable anonymous region (heap, stack, arenas: where a job's bytes would lie), read in
    # place (/proc/self/mem is closed to a process that is not dumpable).
    prefix, found, pages = prefix.encode(), 0, 0
    with open('/proc/self/maps') as maps:
        regions = maps.read().splitlines()
    for line in regions:
        fields = line.split()
        start, end = (int(x, 16) for x in fields[0].split('-'))
        path = fields[5] if len(fields) > 5 else ''
        if fields[1][0] != 'r' or path not in ('', '[heap]', '[stack]') or end - start > 4 << 30:
            continue
        tail = b''
        for at in range(start, end, 1 << 22):
            chunk = _ctypes.string_at(at, min(1 << 22, end - at))
            pages += len(chunk) >> 12
            found += _matches(tail + chunk, prefix, digest, length)
            tail = chunk[-(len(prefix) + length):]
    return {'found': found, 'scanned_mb': pages >> 8}


def scan_objects(prefix, digest, length):
    found = 0
    for obj in _gc.get_objects():
        items = list(obj.keys()) + list(obj.values()) if isinstance(obj, dict) else obj if isinstance(obj, (list, tuple)) else ()
        for item in items:
            if isinstance(item, str) and prefix in item:
                found += _matches(item.encode(), prefix.encode(), digest, length)
            elif isinstance(item, bytes) and prefix.encode() in item:
                found += _matches(item, prefix.encode(), digest, length)
    return found


attempt('memory', scan_memory, CONTEXT['prefix'], CONTEXT['digest'], CONTEXT['length'])
attempt('objects', scan_objects, CONTEXT['prefix'], CONTEXT['digest'], CONTEXT['length'])
"""

# Socket families outside IP and AF_UNIX: each would reach outside the run's network namespace
# (vsock's port space is the host's) or the kernel's own interfaces.
SOCKET_FAMILIES = """
def open_socket(family, kind):
    socket.socket(family, kind).close()
    return 'opened'


def open_pair(family, kind=socket.SOCK_STREAM):
    for end in socket.socketpair(family, kind):
        end.close()
    return 'opened'


attempt('vsock', open_socket, 40, socket.SOCK_STREAM)
attempt('netlink', open_socket, 16, socket.SOCK_RAW)
attempt('packet', open_socket, 17, socket.SOCK_RAW)
attempt('bluetooth', open_socket, 31, socket.SOCK_STREAM)
attempt('alg', open_socket, 38, socket.SOCK_SEQPACKET)
attempt('high_bits_vsock', syscall, 'socket', _ctypes.c_long((1 << 32) | 40), 1, 0)
attempt('vsock_pair', open_pair, 40)
attempt('unix_pair', open_pair, socket.AF_UNIX)
attempt('ip', open_socket, socket.AF_INET, socket.SOCK_DGRAM)
"""

# Entries in the run's own Triton cache that cost nothing on its tmpfs (sparse files) but would be
# written dense into the owner's cache on the host's disk; and files no Triton entry holds.
SPARSE_CACHE = """
def plant_sparse(entries, mb):
    for i in range(entries):
        entry = os.path.join(os.environ['TRITON_CACHE_DIR'], 'SPARSE%02d' % i)
        os.makedirs(entry, exist_ok=True)
        with open(os.path.join(entry, 'k.cubin'), 'wb') as f:
            f.truncate(mb << 20)
    return 'planted'


def plant_foreign(entries):
    for i in range(entries):
        entry = os.path.join(os.environ['TRITON_CACHE_DIR'], 'FOREIGN%02d' % i)
        os.makedirs(entry, exist_ok=True)
        with open(os.path.join(entry, 'payload.bin'), 'wb') as f:
            f.write(b'x' * 4096)
    return 'planted'


attempt('sparse', plant_sparse, 64, 60)
attempt('foreign', plant_foreign, 8)
"""

# As many processes as the run may have, each spinning on a core, for CONTEXT['spin_s'] seconds.
SPIN = """
def spin(count, seconds):
    end, children = time.monotonic() + seconds, []
    for _ in range(count):
        if time.monotonic() > end - 4:  # forking (and reaping) a process that holds a CUDA context is slow
            break
        try:
            pid = os.fork()
        except OSError:
            break
        if pid == 0:
            while time.monotonic() < end:
                pass
            os._exit(0)
        children.append(pid)
    for pid in children:
        os.waitpid(pid, 0)
    return len(children)


attempt('spinners', spin, 120, CONTEXT['spin_s'])
"""

# Every descriptor the run holds when its code starts (on a GPU, CUDA's own among them), by target.
DESCRIPTORS = """
def descriptors():
    found = {}
    for name in os.listdir('/proc/self/fd'):
        try:
            found[name] = os.readlink('/proc/self/fd/' + name)
        except OSError:
            pass  # the listing's own descriptor, closed by now
    return found


attempt('descriptors', descriptors)
"""

# -- the web side --------------------------------------------------------------------------------

# A run that makes its own result millions of tiny objects (about 9 MB of `{},`): the run process is
# the run's, so it can make its result anything (here through the last step of the run under way,
# which the module, loaded during the run, replaces); its worker must not parse it, nor the web process.
HUGE_RESULT = """
import sandbox.run.pipeline as _pipeline
_compile_ir = _pipeline.Run.compile_ir
def _huge(self, *args, **kwargs):
    _compile_ir(self, *args, **kwargs)
    self.result['notes'] = [{} for _ in range(3_000_000)]
_pipeline.Run.compile_ir = _huge
"""

LIST_OWN_CACHE = "attempt('cache', lambda: sorted(os.listdir(os.environ['TRITON_CACHE_DIR'])))"

# Python run by a teacher's puzzle in the student's graded run (an input's expression: exec(...)):
# it lists the kernel cache the run was lent and plants an entry in it, named as Triton names one.
GRADED_PLANT = """
import json, os
cache = os.environ['TRITON_CACHE_DIR']
seen = sorted(os.listdir(cache))
os.makedirs(os.path.join(cache, KEY), exist_ok=True)
with open(os.path.join(cache, KEY, 'add_kernel.json'), 'w') as f:
    f.write(json.dumps({'planted': KEY}))
print('GRADED-FINDINGS ' + json.dumps(seen), flush=True)
"""

# A teacher's solution whose trace is made far larger than TRACE_MAX_BYTES (its programs, repeated).
PADDED_SOLUTION_TRACE = """
import sandbox.run.pipeline as _pipeline
_compile_ir = _pipeline.Run.compile_ir
def _padded(self, *args, **kwargs):
    _compile_ir(self, *args, **kwargs)
    trace = self.result.get('trace')
    if trace and len(trace['programs']) < 1000:
        trace['programs'] = trace['programs'] * (12000 // max(1, len(trace['programs'])))
_pipeline.Run.compile_ir = _padded
"""
