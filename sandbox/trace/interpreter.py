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
import os
import sys
import time

import numpy as np
import torch
from triton.runtime import interpreter

from sandbox.errors import RunError, error_chain
from sandbox.trace.patches import boolean_mask, interpreter_hygiene, patch_interpreter_compat
from sandbox.trace.record import (LIMITS, VERBS, Coverage, ProgramSample, TensorRange, access_bytes,
                                  device_assert_error, fix_hint, out_of_bounds_error, runs_of, trace_of)

# Atomic operations as the user wrote them (tl.atomic_<name>); unsigned and float variants fold in.
ATOMIC_NAMES = {"ADD": "add", "FADD": "add", "MIN": "min", "UMIN": "min", "MAX": "max", "UMAX": "max",
                "AND": "and", "OR": "or", "XOR": "xor", "XCHG": "xchg"}
LAUNCH_CODE = interpreter.GridExecutor.__call__.__code__  # the interpreter's launch of a kernel's programs

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
        # derives from (sandbox.trace.provenance)
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
            mask = boolean_mask(mask)
            tracer.access("load", ptrs, mask, self)
            if other is None and tracer.poison:
                other = tracer.undefined(ptrs, mask)
            return tracer.saved["create_masked_load"](self, ptrs, mask, other, *rest, **kwargs)

        def create_masked_store(self, ptrs, value, mask, *rest, **kwargs):
            mask = boolean_mask(mask)
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
            if hook.__name__ not in builder.__dict__:
                continue  # block pointers: gone from Triton 3.9's interpreter, as from its language
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
        error = next((e for e in error_chain(exc) if isinstance(e, RunError)), None)
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
        self.check_budget(self.executed)
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

    def check_budget(self, done):
        """At each program's start and each access: a program that waits on another's flag (which a GPU
        runs beside it, and the interpreter only after it) would spin until the run's timeout."""
        if self.deadline is not None and time.monotonic() > self.deadline:
            raise TraceBudgetExceeded(done, self.sample.total, self.budget_s)

    def access(self, op, ptrs, mask, builder, atomic=None):
        self.check_budget(self.executed - 1)  # the program under way is not done
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
