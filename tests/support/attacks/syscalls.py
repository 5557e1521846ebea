"""Attacks through system calls the seccomp filter refuses."""

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
