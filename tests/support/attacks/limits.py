"""Attacks on the limits of a run as a whole: memory, tasks, output, forged results, memory of an
earlier run, sockets, sparse files, spinning, descriptors."""

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
