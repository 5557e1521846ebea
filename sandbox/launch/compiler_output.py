"""What Triton's compiler writes to the process's stderr while it compiles, kept for its error.

A pass of Triton's MLIR pipeline that fails says why on fd 2, from C++ (`kernel.py:12:8: error:
...`, `LLVM ERROR: ...`, the pass that failed, a reproducer of the module), and Triton raises only
"PassManager::run failed": no knob of Triton's (3.7, 3.9) routes that diagnostic to Python. So each
compile runs `captured()`: fd 2 goes to a file while any compile runs (one redirect, shared by the
compiles that run at once on threads: an autotuner's configs, the launch's compile beside the GPU
tracer's), each compile knows where its own stretch of that file begins, and the exception of a
compile that fails carries what was written from its start to its failure as
`sandbox.errors.COMPILER_REPORT` (sandbox.errors.compiler_failure reads it). When the last compile
ends, fd 2 comes back and whatever else was written meanwhile (a print of another thread, a
compiler's warning) is written to it: nothing is swallowed but a failed compile's own report, which
its error carries instead.
"""
import contextlib
import functools
import os
import sys
import tempfile
import threading

from sandbox.errors import COMPILER_REPORT

REPORT_HEAD = REPORT_TAIL = 1 << 16  # bytes of a long report kept from each end: the errors are at its ends


class _Redirect:
    """fd 2 to a file while at least one compile runs (process-wide: fd 2 is)."""

    def __init__(self):
        self.lock = threading.Lock()
        self.depth = 0
        self.file = self.saved = None
        self.reported = []  # (start, end) offsets of failed compiles' reports: their errors carry them

    def begin(self):
        """Redirect fd 2 (if no compile has yet); returns where the caller's stretch begins, or None
        where fd 2 cannot be redirected (a program closed it): that compile runs uncaptured."""
        with self.lock:
            if self.depth == 0:
                flush_stderr()
                try:
                    self.saved = os.dup(2)
                except OSError:
                    return None
                self.file = tempfile.TemporaryFile()
                os.dup2(self.file.fileno(), 2)
                self.reported = []
            self.depth += 1
            return os.fstat(self.file.fileno()).st_size

    def end(self, start, failed):
        """The caller's stretch, when it `failed` (else None); the last to end gives fd 2 back."""
        if start is None:
            return None
        with self.lock:
            flush_stderr()
            stop = os.fstat(self.file.fileno()).st_size
            report = None
            if failed:
                report = read_span(self.file.fileno(), start, stop)
                self.reported.append((start, stop))
            self.depth -= 1
            if self.depth == 0:
                os.dup2(self.saved, 2)
                os.close(self.saved)
                write_back(self.file.fileno(), stop, self.reported)
                self.file.close()
                self.file = self.saved = None
            return report


_redirect = _Redirect()


def flush_stderr():
    """Python's buffered stderr to fd 2 now, where it belongs (a program may have replaced sys.stderr)."""
    with contextlib.suppress(Exception):
        sys.stderr.flush()


def read_span(fd, start, stop):
    """The text between two offsets of `fd`; a long one as its head and tail."""
    if stop - start <= REPORT_HEAD + REPORT_TAIL:
        data = os.pread(fd, stop - start, start)
    else:
        data = os.pread(fd, REPORT_HEAD, start) + b"\n...\n" + os.pread(fd, REPORT_TAIL, stop - REPORT_TAIL)
    return data.decode(errors="replace")


def write_back(fd, size, left_out):
    """Copy `fd`'s first `size` bytes to fd 2, but the `left_out` spans."""
    position = 0
    for start, stop in sorted(left_out) + [(size, size)]:
        while position < start:
            chunk = os.pread(fd, min(1 << 20, start - position), position)
            if not chunk:
                break
            with contextlib.suppress(OSError):
                os.write(2, chunk)
            position += len(chunk)
        position = max(position, stop)


@contextlib.contextmanager
def captured():
    """Run one compile with what the compiler writes to fd 2 kept: an exception it raises carries it
    (COMPILER_REPORT), and the exception propagates."""
    start = _redirect.begin()
    failure = None
    try:
        yield
    except BaseException as e:
        failure = e
        raise
    finally:
        report = _redirect.end(start, failure is not None)
        if failure is not None and report and not hasattr(failure, COMPILER_REPORT):
            with contextlib.suppress(AttributeError):
                setattr(failure, COMPILER_REPORT, report)


def install():
    """Capture every compile Triton's JIT makes (a launch's, a warmup's, on any thread): its
    `triton.compiler.compile`, which a kernel's launcher binds at its first launch, wrapped (once)."""
    import triton.compiler
    compile = triton.compiler.compile
    if getattr(compile, "captured", False):
        return

    @functools.wraps(compile)
    def compile_captured(*args, **kwargs):
        with captured():
            return compile(*args, **kwargs)

    compile_captured.captured = True
    triton.compiler.compile = compile_captured
