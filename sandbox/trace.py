"""The memory trace of a launch in Triton's interpreter, and the bounds sanitizer.

While a `Tracer` is entered, the interpreter's builder reports every load, store and atomic of
every program: which tensor it touched, the element offsets of the active lanes and of the
masked-off lanes, and the line of the user's kernel. An access whose active lanes fall outside
every known tensor is stopped before it happens (in the interpreter a stray store would corrupt
the worker's own memory) and reported as a RunError in words a beginner can act on.

The kernel must run in the interpreter and the tensors must live on the CPU: the interpreter
works on host memory, and addresses are matched against the tensors' data pointers.
"""
import contextlib
import dataclasses
import math
import operator
import os
import sys
import time
from collections import deque

import numpy as np
import torch
import triton.language as tl
from triton.runtime import interpreter
from triton.runtime.jit import mangle_type

from sandbox import libdevice, provenance, settings
from sandbox.errors import RunError

MAX_COVERAGE_RUNS = 10_000
LIMITS = {"max_programs": settings.default("TRACE_MAX_PROGRAMS"), "max_bytes": settings.default("TRACE_MAX_BYTES")}

# Atomic operations as the user wrote them (tl.atomic_<name>); unsigned and float variants fold in.
ATOMIC_NAMES = {"ADD": "add", "FADD": "add", "MIN": "min", "UMIN": "min", "MAX": "max", "UMAX": "max",
                "AND": "and", "OR": "or", "XOR": "xor", "XCHG": "xchg"}

VERBS = {"load": "loads", "store": "stores", "atomic": "updates"}
LAUNCH_CODE = interpreter.GridExecutor.__call__.__code__  # the interpreter's launch of a kernel's programs


def runs_of(offsets, limit=None):
    """[[start, length], ...] of an int array, merging consecutive +1 steps, in array order."""
    if offsets.size == 0:
        return []
    breaks = ((offsets[1:] - offsets[:-1]) != 1).nonzero()[0]
    if breaks.size == 0:  # the common case: one contiguous run
        return [[int(offsets[0]), int(offsets.size)]]
    starts = np.concatenate(([0], breaks + 1))
    if limit is not None:
        starts = starts[:limit + 1]
    ends = np.concatenate((starts[1:], [offsets.size]))[:limit]
    starts = starts[:limit]
    return [[start, length] for start, length in zip(offsets[starts].tolist(), (ends - starts).tolist())]


def _runs_bytes(runs):
    """About how many bytes `runs` take in JSON, without serialising them."""
    if not runs:
        return 2
    digits = len(str(max(abs(runs[0][0]), abs(runs[-1][0]), runs[0][1]))) + 1
    return 2 + len(runs) * (2 * digits + 4)


UNDEFINED_INT = 0x5A5A  # 23130


def undefined_fill(dtype):
    """What a masked-off lane of a load without `other` reads in a graded run, as the bits the
    interpreter stores for `dtype`: a NaN for floats (bfloat16's and float8's NaN patterns, kept
    as integers); for integers UNDEFINED_INT, or the dtype's largest value where that is less (a
    sum goes far wrong, yet even a block of 65536 such lanes sums within int32, where the
    interpreter would stop with an overflow); True for booleans; None for pointers (left as the
    interpreter has them)."""
    if dtype.is_bf16():
        return 0x7FC0
    if dtype.is_fp8():
        return 0x7F  # NaN in e4m3 and e5m2; the largest finite value in the fnuz formats
    if dtype.is_floating():
        return np.nan
    if dtype.is_bool():
        return True
    if dtype.is_int():
        return min(UNDEFINED_INT, np.iinfo(interpreter._get_np_dtype(dtype)).max)
    return None


def _array(handle_or_array):
    """The numpy data of an interpreter TensorHandle (block-pointer masks come as bare arrays)."""
    if isinstance(handle_or_array, np.ndarray):
        return handle_or_array
    return np.asarray(handle_or_array.data)


def _error_chain(exc):
    while exc is not None:
        yield exc
        exc = exc.__cause__ or exc.__context__


# ---------------------------------------------------------------- the tensors a kernel may touch

class TensorRange:
    """One named tensor and the bytes [start, end) its elements occupy."""

    def __init__(self, name, tensor):
        self.name, self.tensor = name, tensor
        self.itemsize = tensor.element_size()
        self.shift = self.itemsize.bit_length() - 1
        # Elements from the first to the last one the view reaches (a transposed view too).
        self.span = 1 + sum((size - 1) * stride for size, stride in zip(tensor.shape, tensor.stride())) \
            if tensor.numel() else 0
        self.start = tensor.data_ptr()
        self.end = self.start + self.span * self.itemsize
        self.loaded = self.stored = False
        self.coverage = None

    def offsets(self, addresses):
        """Element offsets from the data pointer (negative below it)."""
        # User-space addresses fit in int64; wrapped pointers of masked-off lanes wrap the same way.
        return (addresses.view(np.int64) - self.start) >> self.shift

    def distance(self, address):
        """Bytes from `address` to this tensor's elements (0 inside)."""
        if address < self.start:
            return self.start - address
        return max(0, address - self.end + 1)

    def is_near(self, address):
        # Off-by-a-block mistakes land just past an edge; a pointer much farther away never came from here.
        reach = max(self.end - self.start, 4096 * self.itemsize)
        return self.start - reach <= address < self.end + reach

    def info(self):
        role = {(True, False): "input", (False, True): "output", (True, True): "inout"}
        return {"shape": list(self.tensor.shape), "dtype": str(self.tensor.dtype).removeprefix("torch."),
                "role": role.get((self.loaded, self.stored), "input")}


class Coverage:
    """Which program wrote each element of one tensor, over the whole launch."""

    def __init__(self, tensor_range):
        self.last_writer = np.full(tensor_range.span, -1, dtype=np.int32)
        self.writers = np.zeros(tensor_range.span, dtype=np.uint8)  # 0, 1 or 2 (= more than one)

    def store(self, elements, runs, program):
        if len(runs) == 1:  # one contiguous run: a slice is much faster than an index array
            start, length = runs[0]
            where = slice(start, start + length)
            if (self.last_writer[where] == program).any():  # this program wrote some of them already
                where = elements[self.last_writer[elements] != program]
        else:
            where = elements[self.last_writer[elements] != program]
        self.writers[where] = np.minimum(self.writers[where], 1) + 1
        self.last_writer[where] = program

    def atomic(self, elements):
        # Atomics are how programs share an element on purpose: written, never a conflict.
        self.writers[elements] = np.maximum(self.writers[elements], 1)

    def result(self, tensor_range):
        return coverage_result(self.writers, tensor_range)


def coverage_result(writers, tensor_range):
    """docs/result.md `coverage` of one tensor from `writers` per element of its span: 0 (unwritten),
    1 (one program, or atomics) or 2 (plain stores of more than one program)."""
    t = tensor_range.tensor
    if not t.is_contiguous():  # only the view's own elements; gaps between them are never expected to be written
        positions = torch.as_strided(torch.arange(tensor_range.span), t.shape, t.stride()).flatten().numpy()
        writers = writers[positions]
    else:
        positions = np.arange(writers.size)
    unwritten = positions[writers == 0]
    multi = positions[writers > 1]
    unwritten_runs = runs_of(unwritten, MAX_COVERAGE_RUNS + 1)
    multi_runs = runs_of(multi, MAX_COVERAGE_RUNS + 1)
    return {"numel": t.numel(), "unwritten": int(unwritten.size), "multiply_written": int(multi.size),
            "unwritten_runs": unwritten_runs[:MAX_COVERAGE_RUNS], "multi_runs": multi_runs[:MAX_COVERAGE_RUNS],
            "truncated": max(len(unwritten_runs), len(multi_runs)) > MAX_COVERAGE_RUNS}


# ---------------------------------------------------------------- which programs keep their detail

class ProgramSample:
    """Every program while they fit the limits; past them the first programs, the last programs
    and an even spread (every `stride`-th), each held to a third of the limits."""

    def __init__(self, total, max_programs, max_bytes):
        self.total, self.max_programs, self.max_bytes = total, max_programs, max_bytes
        self.part_programs = max(1, max_programs // 3)
        self.part_bytes = max_bytes // 3
        self.sampling = False
        self.everything, self.everything_bytes = [], 0
        self.head, self.spread, self.tail = [], [], deque()
        self.head_bytes = self.spread_bytes = self.tail_bytes = 0
        self.head_open = True
        self.stride = max(1, math.ceil(total / self.part_programs))

    def in_tail(self, index):
        # The last third of the launch at most, so that a launch over the byte limit keeps a spread.
        return index >= self.total - min(self.part_programs, max(1, self.total // 3))

    def wants(self, index):
        """Whether program `index` (in launch order) may be kept, so is worth recording."""
        return (not self.sampling or self.head_open or self.in_tail(index)
                or index % self.stride == 0)

    def add(self, index, program, nbytes):
        item = (index, program, nbytes)
        if self.sampling:
            self._add_sampled(item)
            return
        self.everything.append(item)
        self.everything_bytes += nbytes
        if len(self.everything) > self.max_programs or self.everything_bytes > self.max_bytes:
            self.sampling = True
            for kept in self.everything:
                self._add_sampled(kept)
            self.everything = []

    def _add_sampled(self, item):
        index, _, nbytes = item
        if self.head_open:
            if len(self.head) < self.part_programs and self.head_bytes + nbytes <= self.part_bytes:
                self.head.append(item)
                self.head_bytes += nbytes
                return
            self.head_open = False
        if self.in_tail(index):
            self.tail.append(item)
            self.tail_bytes += nbytes
            while len(self.tail) > 1 and self.tail_bytes > self.part_bytes:
                self.tail_bytes -= self.tail.popleft()[2]
        elif index % self.stride == 0:
            self.spread.append(item)
            self.spread_bytes += nbytes
            while len(self.spread) > 1 and (len(self.spread) > self.part_programs
                                            or self.spread_bytes > self.part_bytes):
                self.stride *= 2
                self.spread = [kept for kept in self.spread if kept[0] % self.stride == 0]
                self.spread_bytes = sum(kept[2] for kept in self.spread)

    def programs(self):
        kept = self.head + self.spread + list(self.tail) if self.sampling else self.everything
        return [program for _, program, _ in sorted(kept, key=operator.itemgetter(0))]

    def describe(self):
        if not self.sampling:
            return None
        return {"first": len(self.head), "last": len(self.tail), "every": self.stride}


# ---------------------------------------------------------------- the tracer

class TraceBudgetExceeded(RunError):
    """The interpreter pass ran out of its time budget (a GPU run's trace pass on CPU copies)."""

    def __init__(self, done, total, budget_s):
        super().__init__("trace", f"the trace and bounds check stopped after {budget_s:g} s, at program {done} "
                                  f"of {total}: Triton's interpreter (about 1 ms per program and more for big "
                                  f"blocks) is too slow for a launch this size. The GPU launch went ahead "
                                  f"without a bounds check. Shrink the problem to see its trace.")
        self.done, self.total = done, total


class Tracer:
    """Context manager: hooks the interpreter's builder for one kernel launch.

    `tensors`: name -> CPU tensor (other values are ignored); `source_path`: the file the kernel
    was imported from (lines are reported for frames in it). With `record=False` only the bounds
    sanitizer runs. An out-of-bounds access raises RunError("launch", ..., type="OutOfBounds") out
    of the `with` block (unwrapped from the interpreter's InterpreterError). With `poison=True` the
    masked-off lanes of a load without `other` read a poison value (`undefined_fill`), not the
    interpreter's 0: on a GPU they are undefined; `undefined_lanes` counts them.
    """

    def __init__(self, tensors, source_path, *, owners=None, record=True, only=None,
                 max_programs=LIMITS["max_programs"], max_bytes=LIMITS["max_bytes"], budget_s=None, poison=False):
        for name, t in tensors.items():
            if isinstance(t, torch.Tensor) and t.device.type != "cpu":
                raise ValueError(f"tensor '{name}' is on {t.device}: the trace needs CPU tensors "
                                 "(the interpreter runs on copies in host memory)")
        self.ranges = [TensorRange(name, t) for name, t in tensors.items() if isinstance(t, torch.Tensor)]
        self.searchable = [r for r in self.ranges if r.span]
        by_name = {r.name: r for r in self.ranges}
        # call positions in the source, from the kernel down to the access -> the tensor its pointer
        # derives from (sandbox.provenance)
        self.owners = {position: by_name[name] for position, name in (owners or {}).items() if name in by_name}
        self.only = only
        self.positions = {}
        self.source_paths = {source_path, os.path.realpath(source_path)}
        self.record = record
        self.max_programs, self.max_bytes = max_programs, max_bytes
        self.budget_s = budget_s
        self.deadline = None
        self.sample = None
        self.executed = 0
        self.program = None  # (index, record, bytes, recording) of the running program
        self.programs_before = []  # of an out-of-bounds error's trace
        self.block_pointer = False
        self.poison = poison
        self.undefined_lanes = 0
        self.saved = {}

    # -- hooks

    def undefined(self, ptrs, mask):
        """The `other` of a load that gave none: its masked-off lanes poisoned (None where all are on)."""
        off = ptrs.data.size - np.count_nonzero(np.broadcast_to(_array(mask), ptrs.data.shape))
        dtype = ptrs.get_element_ty()
        fill = undefined_fill(dtype)
        if not off or fill is None:
            return None
        self.undefined_lanes += off
        return interpreter.TensorHandle(np.full(ptrs.data.shape, fill, dtype=interpreter._get_np_dtype(dtype)), dtype)

    def __enter__(self):
        patch_interpreter_compat()
        self.hygiene = interpreter_hygiene()
        self.hygiene.__enter__()
        builder = interpreter.InterpreterBuilder
        tracer = self

        def create_masked_load(self, ptrs, mask, other, *rest, **kwargs):
            tracer.access("load", ptrs, mask, self)
            if other is None and tracer.poison:
                other = tracer.undefined(ptrs, mask)
            return tracer.saved["create_masked_load"](self, ptrs, mask, other, *rest, **kwargs)

        def create_masked_store(self, ptrs, value, mask, *rest, **kwargs):
            tracer.access("store", ptrs, mask, self)
            return tracer.saved["create_masked_store"](self, ptrs, value, mask, *rest, **kwargs)

        def create_atomic_rmw(self, rmw_op, ptr, val, mask, *rest, **kwargs):
            tracer.access("atomic", ptr, mask, self, ATOMIC_NAMES.get(rmw_op.name, rmw_op.name.lower()))
            return tracer.saved["create_atomic_rmw"](self, rmw_op, ptr, val, mask, *rest, **kwargs)

        def create_atomic_cas(self, ptr, *rest, **kwargs):
            tracer.access("atomic", ptr, None, self, "cas")
            return tracer.saved["create_atomic_cas"](self, ptr, *rest, **kwargs)

        def create_tensor_pointer_load(self, *args, **kwargs):
            with tracer.through_block_pointer():
                return tracer.saved["create_tensor_pointer_load"](self, *args, **kwargs)

        def create_tensor_pointer_store(self, *args, **kwargs):
            with tracer.through_block_pointer():
                return tracer.saved["create_tensor_pointer_store"](self, *args, **kwargs)

        def set_grid_dim(self, nx, ny, nz):
            tracer.saved["set_grid_dim"](self, nx, ny, nz)
            tracer.start_launch((nx, ny, nz))
            if tracer.budget_s is not None:
                tracer.deadline = time.monotonic() + tracer.budget_s

        def set_grid_idx(self, x, y, z):
            tracer.saved["set_grid_idx"](self, x, y, z)
            tracer.start_program((x, y, z))

        def create_assert(self, condition, message):
            if not condition:
                line, _ = tracer.user_site()
                raise device_assert_error(message, list(self.grid_idx), line)

        hooks = [create_masked_load, create_masked_store, create_atomic_rmw, create_atomic_cas,
                 create_tensor_pointer_load, create_tensor_pointer_store, create_assert]
        if self.record or self.budget_s is not None:
            hooks += [set_grid_dim, set_grid_idx]
        for hook in hooks:
            self.saved[hook.__name__] = builder.__dict__[hook.__name__]
            setattr(builder, hook.__name__, hook)
        # The playground is where a kernel is debugged: tl.device_assert is checked, as Triton does with
        # debug=True (without debug's integer-overflow checks of every add, which change no result).
        self.options = interpreter.interpreter_builder.options
        interpreter.interpreter_builder.options = dataclasses.replace(self.options, debug=True,
                                                                      sanitize_overflow=False)
        return self

    def __exit__(self, exc_type, exc, tb):
        builder = interpreter.InterpreterBuilder
        for name, original in self.saved.items():
            setattr(builder, name, original)
        self.saved = {}
        interpreter.interpreter_builder.options = self.options
        self.hygiene.__exit__(None, None, None)
        error = next((e for e in _error_chain(exc) if isinstance(e, RunError)), None)
        if error is not None and error.type == "OutOfBounds" and self.record and self.sample is not None:
            error.trace = self.result(self.grid)  # what ran up to and including the offending access
        self.finish_program()
        if error is not None and error is not exc:
            raise error from None
        return False

    @contextlib.contextmanager
    def through_block_pointer(self):
        self.block_pointer = True
        try:
            yield
        finally:
            self.block_pointer = False

    # -- programs

    def start_launch(self, grid):
        self.finish_program()
        self.grid, total = grid, math.prod(grid)
        self.sample = ProgramSample(total, self.max_programs, self.max_bytes)

    def start_program(self, pid):
        self.finish_program()
        if self.deadline is not None and time.monotonic() > self.deadline:
            raise TraceBudgetExceeded(self.executed, self.sample.total, self.budget_s)
        index = self.executed
        self.executed += 1
        recording = self.sample.wants(index) if self.only is None else index == self.only
        self.program = (index, {"pid": list(pid), "accesses": []}, [40], recording)

    def finish_program(self):
        if self.program is None:
            return
        index, program, nbytes, recording = self.program
        self.program = None
        if recording:
            self.sample.add(index, program, nbytes[0])

    # -- one access

    def access(self, op, ptrs, mask, builder, atomic=None):
        ptrs = _array(ptrs)
        shape = ptrs.shape
        ptrs = ptrs.ravel()
        if mask is not None:
            mask = _array(mask)
            mask = (mask if mask.shape == shape else np.broadcast_to(mask, shape)).ravel()
            if mask.all():
                mask = None
        active = ptrs if mask is None else ptrs[mask]
        masked = ptrs[~mask] if mask is not None else ptrs[:0]
        line, owner = self.user_site()
        try:
            groups = self.locate(active, owner, op, builder, atomic, len(shape), line)
        except RunError as error:
            self.record_error(op, owner, active, masked, line, atomic)
            raise error
        for tensor, _ in groups:
            tensor.loaded |= op != "store"
            tensor.stored |= op != "load"
        if self.program is None:  # not recording
            return
        index, program, nbytes, recording = self.program
        if not recording and op == "load":
            return
        accesses = []
        for tensor, addresses in groups:
            elements = tensor.offsets(addresses)
            accesses.append((tensor, elements, runs_of(elements)))
        if op != "load":
            self.cover(op, accesses, index)
        if not recording:
            return
        if nbytes[0] > self.sample.part_bytes:
            program["truncated"] = True
            return
        if not accesses and masked.size:
            owner = owner or self.nearest(int(masked[0]))
            accesses = [(owner, None, [])] if owner else []
        for i, (tensor, _, runs) in enumerate(accesses):
            record = {"op": op, "tensor": tensor.name, "line": line, "offsets": runs,
                      "masked": runs_of(tensor.offsets(masked)) if i == 0 and masked.size else []}
            if atomic:
                record["atomic"] = atomic
            program["accesses"].append(record)
            nbytes[0] += access_bytes(record)

    def record_error(self, op, owner, active, masked, line, atomic):
        """Keep the offending access, its stray lanes apart, as the last access of the trace."""
        if self.program is None or owner is None:
            return
        index, program, nbytes, recording = self.program
        elements = owner.offsets(active)
        inside = (active >= owner.start) & (active < owner.end)
        record = {"op": op, "tensor": owner.name, "line": line, "offsets": runs_of(elements),
                  "masked": runs_of(owner.offsets(masked)), "out_of_bounds": runs_of(elements[~inside])}
        if atomic:
            record["atomic"] = atomic
        program["accesses"].append(record)
        self.program = (index, program, nbytes, True)

    def cover(self, op, accesses, index):
        for tensor, elements, runs in accesses:
            if tensor.coverage is None:
                tensor.coverage = Coverage(tensor)
            if op == "store":
                tensor.coverage.store(elements, runs, index)
            else:
                tensor.coverage.atomic(elements)

    def locate(self, active, owner, op, builder, atomic, ndim, line):
        """[(tensor, addresses)] of the active lanes, in lane order; raises for lanes outside their
        tensor: the one the pointer derives from (`owner`), else (no provenance) every known tensor."""
        if active.size == 0:
            return []
        if owner is not None:
            outside = (active < owner.start) | (active >= owner.end)
            if outside.any():
                raise out_of_bounds_error(op, owner, owner.offsets(active[outside]), list(builder.grid_idx), line,
                                          atomic, ndim, self.block_pointer)
            return [(owner, active)]
        low, high = int(active.min()), int(active.max())
        for tensor in self.searchable:
            if tensor.start <= low and high < tensor.end:
                return [(tensor, active)]
        owners = np.full(active.size, -1)
        for i, tensor in enumerate(self.searchable):
            owners[(owners < 0) & (active >= tensor.start) & (active < tensor.end)] = i
        outside = owners < 0
        if outside.any():
            raise self.out_of_bounds(op, active[outside], builder, atomic, ndim, line)
        found, first = np.unique(owners, return_index=True)
        return [(self.searchable[i], active[owners == i]) for i in found[np.argsort(first)]]

    def nearest(self, address):
        if not self.searchable:
            return None
        return min(self.searchable, key=lambda tensor: tensor.distance(address))

    def user_site(self):
        """(line, tensor the pointer derives from or None) of the access being made, from the
        positions of the calls in the user's source that lead to it (the kernel's, a helper's)."""
        frame = sys._getframe(1)
        line, key = None, ()
        # The interpreter's launch is where the kernel's calls start: a script's own frames, which
        # launched it, are outside them (its file is the kernel's).
        while frame is not None and frame.f_code is not LAUNCH_CODE:
            if frame.f_code.co_filename in self.source_paths:
                code = frame.f_code
                if code not in self.positions:
                    self.positions[code] = list(code.co_positions())
                key = (self.positions[code][frame.f_lasti // 2],) + key
                line = frame.f_lineno if line is None else line
            frame = frame.f_back
        return line, self.owners.get(key)

    # -- the sanitizer's message, for an access with no provenance

    def out_of_bounds(self, op, addresses, builder, atomic, ndim, line):
        pid = list(builder.grid_idx)
        first = int(addresses[0])
        tensor = self.nearest(first)
        if tensor is not None and tensor.is_near(first):
            return out_of_bounds_error(op, tensor, tensor.offsets(addresses), pid, line, atomic, ndim, self.block_pointer)
        names = ", ".join(f"`{r.name}`" for r in self.ranges) or "none"
        nearest = f"; the nearest, `{tensor.name}`, is {tensor.distance(first)} bytes away" if tensor else ""
        message = (f"program ({pid[0]}, {pid[1]}, {pid[2]}) {VERBS[op]} memory at address {first:#x}, which is not "
                   f"inside any tensor passed to the kernel (tensors: {names}){nearest}. A pointer must be a tensor "
                   f"argument plus offsets inside that tensor.")
        return RunError("launch", message, type="OutOfBounds", hint=fix_hint(op, atomic, ndim, self.block_pointer),
                        line=line, pid=pid)

    # -- the result

    def result(self, grid):
        """The trace of the launch (docs/result.md `trace`), plus `sample` ({first, last, every}: what a
        sampled trace kept, else None), per-tensor `coverage` of written tensors, and
        `"truncated": true` on a program whose own accesses outgrew a third of `max_bytes`."""
        self.finish_program()
        programs = self.sample.programs() if self.sample else []
        return trace_of(grid, programs, "interpreter", sampled=len(programs) < self.executed,
                        sample=self.sample.describe() if self.sample else None,
                        tensors={r.name: r.info() for r in self.ranges},
                        coverage={r.name: r.coverage.result(r) for r in self.ranges if r.coverage is not None})


def trace_of(grid, programs, tracer, *, sampled, sample, tensors, coverage, bytes_touched=None):
    """A result's `trace` (docs/result.md), from either tracer."""
    grid = list(grid) + [1] * (3 - len(grid))
    return {"grid": grid, "programs_total": math.prod(grid), "programs_traced": len(programs), "sampled": sampled,
            "sample": sample, "tensors": tensors, "programs": programs, "coverage": coverage, "tracer": tracer,
            "bytes_touched": bytes_touched}


def pid_of(index, grid):
    """(x, y, z) of the program at `index` in launch order (z fastest, as the interpreter runs them)."""
    gx, gy, gz = grid
    return index // (gy * gz), index // gz % gy, index % gz


def index_of(pid, grid):
    return (pid[0] * grid[1] + pid[1]) * grid[2] + pid[2]


def owners_by_position(analysis, args, tensors):
    """Tracer's `owners`: where each access site is (its call positions from the kernel down, as
    provenance.Site.key) -> the tensor its pointer derives from."""
    return {analysis.sites[i].key: name for i, name in provenance.site_tensors(analysis, args, tensors).items()}


def device_assert_error(message, pid, line):
    """The run's error for a tl.device_assert whose condition is false in some lane of program `pid`."""
    return RunError("launch", f"tl.device_assert failed in program {tuple(pid)}: {message}", type="DeviceAssert",
                    hint="The kernel's own check failed: its condition is false for at least one lane of this "
                         "program. The message is the one your tl.device_assert gives.", line=line, pid=pid)


def out_of_bounds_error(op, tensor, elements, pid, line, atomic, ndim, block_pointer=False):
    """The launch error of lanes of `tensor` at `elements` (offsets outside it; None: not known)."""
    if elements is None:
        at = "offsets outside it"
    else:
        low, high = int(elements.min()), int(elements.max())
        at = f"offset {low}" if low == high else f"offsets {low}..{high}"
    message = (f"program ({pid[0]}, {pid[1]}, {pid[2]}) {VERBS[op]} `{tensor.name}` at {at}, but `{tensor.name}` has "
               f"{tensor.tensor.numel()} elements (valid offsets 0..{tensor.span - 1}).")
    return RunError("launch", message, type="OutOfBounds", hint=fix_hint(op, atomic, ndim, block_pointer), line=line,
                    pid=pid)


def fix_hint(op, atomic, ndim, block_pointer=False):
    if block_pointer:
        return (f"Pass boundary_check to the tl.{op} of the block pointer, listing every dimension "
                f"that can run past the edge, e.g. boundary_check=(0, 1).")
    mask = "(rows[:, None] < M) & (cols[None, :] < N)" if ndim == 2 else "offs < n"
    if op == "load":
        return f"Mask the load: tl.load(ptr, mask={mask}, other=0.0)."
    if op == "store":
        return f"Mask the store: tl.store(ptr, value, mask={mask})."
    if atomic == "cas":
        return "tl.atomic_cas takes no mask: compute its pointers only for offsets inside the tensor."
    return f"Mask the atomic: tl.atomic_{atomic}(ptr, value, mask={mask})."


def access_bytes(record):
    """About how many bytes an access record takes in JSON (the trace's size limits count these)."""
    return 60 + len(record["tensor"]) + _runs_bytes(record["offsets"]) + _runs_bytes(record["masked"])


def unique_bytes(trace):
    """Bytes a launch moves at least: each element loaded once plus each element stored once."""
    loaded, stored = {}, {}
    for program in trace["programs"]:
        for access in program["accesses"]:
            targets = [loaded, stored] if access["op"] == "atomic" else [loaded if access["op"] == "load" else stored]
            for target in targets:
                target.setdefault(access["tensor"], []).extend(access["offsets"])
    total = 0
    for seen in (loaded, stored):
        for name, runs in seen.items():
            elements = [np.arange(start, start + length) for start, length in runs]
            itemsize = getattr(torch, trace["tensors"][name]["dtype"]).itemsize
            total += np.unique(np.concatenate(elements or [[]])).size * itemsize
    return int(total)


@contextlib.contextmanager
def interpreter_hygiene():
    """Run the interpreter without leaving it patched into triton.language afterwards.

    Two fixes, both needed by a process that compiles for a GPU after an interpreted launch (a GPU
    run's trace pass; the IR of a CPU run):
    - triton.language's own @jit functions (tl.cdiv, tl.sum, ...) are compiled-mode JITFunctions in
      a process that imported triton with the interpreter off, and refuse to be called in a kernel:
      call them as interpreted functions instead;
    - the interpreter patches triton.language for each device-function call and never restores
      it (only the launch's own patches are undone): undo each call's patches when it returns.
    """
    from triton.runtime import interpreter
    from triton.runtime.jit import JITFunction
    scopes, interpreted = [], {}
    original_patch, original_device_call = interpreter._patch_lang, interpreter.InterpretedFunction.__call__
    original_jit_call = JITFunction.__call__

    def patch_lang(fn):
        scope = original_patch(fn)
        scopes.append(scope)
        return scope

    def device_call(self, *args, **kwargs):
        mark = len(scopes)
        try:
            return original_device_call(self, *args, **kwargs)
        finally:
            while len(scopes) > mark:
                scopes.pop().restore()

    def jit_call(self, *args, **kwargs):
        if self.fn not in interpreted:
            interpreted[self.fn] = interpreter.InterpretedFunction(self.fn)
        return interpreted[self.fn](*args, **kwargs)

    interpreter._patch_lang, interpreter.InterpretedFunction.__call__ = patch_lang, device_call
    JITFunction.__call__ = jit_call
    try:
        yield
    finally:
        interpreter._patch_lang, interpreter.InterpretedFunction.__call__ = original_patch, original_device_call
        JITFunction.__call__ = original_jit_call
        while scopes:
            scopes.pop().restore()


# ---------------------------------------------------------------- Triton 3.6 compatibility

def _scalar_index(tensor):
    # Interpreter scalars are 1-element arrays; numpy >= 2.4 refuses int() of any array with ndim > 0.
    return int(np.asarray(tensor.handle.data).item())


def patch_interpreter_compat():
    """Let `range(...)` take interpreter scalars (e.g. `range(0, tl.cdiv(K, BK))`) on Triton 3.6.

    Triton 3.6's interpreter gives tl.tensor an `__index__` of `int(handle.data)`, which fails with
    "only 0-dimensional arrays can be converted to Python scalars"; 3.7 squeezes the array first.
    The interpreter installs `__index__` at every launch, so the patch wraps the function that does.
    Idempotent, and the same behaviour as 3.7's own on 3.7.
    """
    original = interpreter._patch_lang_tensor
    if getattr(original, "scalar_index_compat", False):
        return

    def patch_lang_tensor(tensor, scope):
        original(tensor, scope)
        scope.set_attr(tensor, "__index__", _scalar_index)

    patch_lang_tensor.scalar_index_compat = True
    interpreter._patch_lang_tensor = patch_lang_tensor
    interpreter._implicit_cvt = _float_arguments(interpreter._implicit_cvt)
    libdevice.install()


def _float_arguments(convert):
    """A kernel's float argument as a compiled launch passes it: an fp32 scalar tensor (so that
    `eps.to(tl.float32)` works, as in liger-kernel's norms). The interpreter passes a bare float."""
    if getattr(convert, "float_arguments", False):
        return convert

    def implicit_cvt(arg):
        if isinstance(arg, float):
            ty = tl.str_to_ty(mangle_type(arg), None)
            return tl.tensor(interpreter.TensorHandle(np.array([arg], dtype=np.float32), ty), ty)
        return convert(arg)

    implicit_cvt.float_arguments = True
    return implicit_cvt
