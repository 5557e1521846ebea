"""Attacks on files: what a run must not find, the host's settings, /dev, cgroups, the scratch dir, links
and the kernel caches."""

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
