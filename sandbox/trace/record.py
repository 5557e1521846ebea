"""The trace record both tracers write (docs/result.md's `trace`), and the errors they raise.

A trace lists, per traced program, its accesses as runs of element offsets per tensor; which
programs keep their detail is chosen by ProgramSample within the trace's size limits; coverage
says which elements no program wrote and which more than one did. The interpreter tracer
(sandbox.trace.interpreter) and the GPU tracer (sandbox.trace.gpu) both build it through here.
"""
import math
import operator
from collections import deque

import numpy as np
import torch

from sandbox import settings
from sandbox.errors import RunError
from sandbox.trace import provenance

MAX_COVERAGE_RUNS = 10_000
LIMITS = {"max_programs": settings.default("TRACE_MAX_PROGRAMS"), "max_bytes": settings.default("TRACE_MAX_BYTES")}
VERBS = {"load": "loads", "store": "stores", "atomic": "updates"}


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
    1 (one program, or atomics) or 2 (plain stores of more than one program). An array, or a tensor
    where the launch left it (the GPU's: only the elements found leave the device)."""
    writers = torch.as_tensor(writers)
    t = tensor_range.tensor
    positions = None
    if not t.is_contiguous():  # only the view's own elements; gaps between them are never expected to be written
        positions = torch.as_strided(torch.arange(tensor_range.span, device=writers.device), t.shape,
                                     t.stride()).flatten()
        writers = writers[positions]

    def elements(mask):
        found = torch.nonzero(mask).squeeze(1)
        return (found if positions is None else positions[found]).cpu().numpy()

    unwritten, multi = elements(writers == 0), elements(writers > 1)
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
    """Bytes a launch moves at least: each element loaded once plus each element stored once (the
    union of the accesses' runs, merged as intervals: no array of the elements themselves)."""
    loaded, stored = {}, {}
    for program in trace["programs"]:
        for access in program["accesses"]:
            targets = [loaded, stored] if access["op"] == "atomic" else [loaded if access["op"] == "load" else stored]
            for target in targets:
                target.setdefault(access["tensor"], []).extend(access["offsets"])
    total = 0
    for seen in (loaded, stored):
        for name, runs in seen.items():
            itemsize = getattr(torch, trace["tensors"][name]["dtype"]).itemsize
            total += covered(runs) * itemsize
    return int(total)


def covered(runs):
    """How many elements the (start, length) runs cover together."""
    count, end = 0, None
    for start, length in sorted(runs):
        if end is None or start > end:
            count, end = count + length, start + length
        elif start + length > end:
            count, end = count + start + length - end, start + length
    return count
