"""Step through one program: the kernel's program `options.step_pid` replayed alone in Triton's
interpreter (on CPU copies of the inputs, whatever the run's device), line by line, with its locals
at every line and what each line loaded and stored (docs/result.md `steps`).

Only that program runs: the interpreter is launched on a grid of one, and `tl.program_id` and
`tl.num_programs` answer as the real launch would. A line's locals are read through sys.settrace in
the kernel's own frame (a jit function it calls runs as one step), one step per statement: Python
reports a statement written over several lines (`tl.load(...,\n mask=...)`) as it moves between
them, and those reports make one step, at the statement's first line. The payload is bounded: a tile
up to MAX_CELLS elements is sent whole, a bigger one as min/max/mean and its top-left corner, and
a variable is sent again only when it holds a new value.
"""
import ast
import contextlib
import math
import os
import sys
import tempfile

import numpy as np
import torch
import triton.language as tl
from triton.runtime import interpreter

from sandbox import result as results
from sandbox.errors import RunError, explain
from sandbox.launch import build
from sandbox.launch.kernel import as_run_error, user_line, write_source
from sandbox.launch.warned import Warned
from sandbox.trace import provenance
from sandbox.trace.interpreter import Tracer
from sandbox.trace.record import owners_by_position, TensorRange

MAX_STEPS = 2000  # line events kept; a longer program stops being recorded there (and says so)
MAX_CELLS = 256  # a tile this small is sent whole: 16 x 16
CORNER = 16  # a bigger tile: its top-left CORNER x CORNER (or first CORNER**2 elements)
MAX_VALUES = 4000  # distinct values sent in all


def check_pid(pid, grid):
    pid = list(pid) + [0] * (3 - len(pid))
    if any(p >= g for p, g in zip(pid, grid)):
        raise RunError("build", f"options.step_pid {tuple(pid)} is outside the grid {tuple(grid)}", field="options.step_pid")
    return tuple(pid)


def rounded(array):
    if array.dtype.kind == "f":
        return [float(f"{v:.5g}") if math.isfinite(v) else None for v in array.astype(np.float64).ravel()]
    return array.ravel().tolist()


class Values:
    """Each distinct local value once, by the object's identity (objects are kept alive, so an id is
    never reused while the replay runs). `unset`: a loaded tile's handle id -> (handle, the lanes its
    mask left without a value)."""

    def __init__(self, ranges, unset=None):
        self.ranges, self.by_id, self.table, self.alive = ranges, {}, [], []
        self.unset = {} if unset is None else unset
        self.full = False

    def index(self, value):
        key = id(value)
        if key in self.by_id:
            return self.by_id[key]
        if len(self.table) >= MAX_VALUES:
            self.full = True
            return None
        self.alive.append(value)
        self.by_id[key] = len(self.table)
        self.table.append(self.describe(value))
        return self.by_id[key]

    def describe(self, value):
        if isinstance(value, tl.constexpr):
            value = value.value
        if isinstance(value, (bool, int, float)) or value is None:
            return {"kind": "scalar", "dtype": type(value).__name__, "value": value}
        if isinstance(value, tl.tensor) and hasattr(value.handle, "data"):
            return self.tensor(value)
        return {"kind": "other", "dtype": type(value).__name__, "value": repr(value)[:120]}

    def tensor(self, value):
        data = np.asarray(value.handle.data)
        shape = [int(getattr(d, "value", d)) for d in value.shape] if value.shape else []
        found = {"shape": shape, "dtype": str(value.dtype)}
        if value.dtype.is_ptr():
            data, owner = self.pointer_offsets(data)
            found.update(kind="pointer", tensor=owner)
        elif value.dtype == tl.int1:
            found["kind"] = "mask"
        else:
            found["kind"] = "tile" if shape else "scalar"
        data = data.reshape(shape) if shape else data.reshape(())
        unset = self.unset.get(id(value.handle), (None, None))[1]
        unset = unset.reshape(data.shape) if unset is not None and unset.any() else None
        if data.size <= MAX_CELLS:
            found["values"] = rounded(data)
            return with_unset(found, unset)
        corner = data[:CORNER, :CORNER] if data.ndim == 2 else data.ravel()[:CORNER * CORNER]
        numeric = data.astype(np.float64)[unset == False] if unset is not None else data.astype(np.float64)  # noqa: E712
        found.update(values=rounded(corner), corner=list(corner.shape))
        if numeric.size:
            found["summary"] = {"min": float(numeric.min()), "max": float(numeric.max()), "mean": float(numeric.mean())}
        if unset is not None:
            found.setdefault("summary", {})["unset"] = int(unset.sum())
            unset = unset[:CORNER, :CORNER] if unset.ndim == 2 else unset.ravel()[:CORNER * CORNER]
        return with_unset(found, unset)

    def pointer_offsets(self, addresses):
        """Element offsets into the tensor the addresses point into (the first lane's), and its name."""
        flat = addresses.ravel().view(np.int64)
        for candidate in flat[:64]:
            owner = next((r for r in self.ranges if r.start <= candidate < r.end), None)
            if owner is not None:
                return owner.offsets(addresses.ravel()).reshape(addresses.shape), owner.name
        return addresses.view(np.int64), None


def statements(function):
    """{source line: (first, last) line of the statement it belongs to} over a function's body. A
    compound statement (for, if, while, with) is its header: its body's lines are its body's."""
    owner = {}
    for node in ast.walk(function):
        if not isinstance(node, ast.stmt) or node is function:
            continue
        parts = [node] if not any(isinstance(child, ast.stmt) for child in ast.iter_child_nodes(node)) else \
            [child for child in ast.iter_child_nodes(node) if not isinstance(child, ast.stmt) and hasattr(child, "lineno")]
        last = max([node.lineno] + [part.end_lineno for part in parts])
        for line in range(node.lineno, last + 1):
            owner[line] = (node.lineno, last)
    return owner


def with_unset(found, unset):
    """`unset`: the flat indices of the sent values that a masked load left without a value."""
    if unset is not None and unset.any():
        found["unset"] = np.flatnonzero(unset).tolist()
    return found


@contextlib.contextmanager
def unset_lanes(unset):
    """A load with a mask and no `other` leaves its masked-off lanes without a value (on a GPU,
    whatever the register held; the interpreter fills 0): each such load's result is kept in
    `unset` with those lanes, so that the replay marks them instead of showing a 0."""
    builder = interpreter.interpreter_builder
    cls = type(builder)

    def create_masked_load(ptrs, mask, other, *rest, **kwargs):
        handle = cls.create_masked_load(builder, ptrs, mask, other, *rest, **kwargs)
        if other is None and mask is not None:
            unset[id(handle)] = (handle, ~np.asarray(mask.data, dtype=bool))
        return handle

    builder.create_masked_load = create_masked_load
    try:
        yield
    finally:
        del builder.create_masked_load


class Recorder:
    """sys.settrace in the kernel's frame: one step per statement reached, with the locals as they
    are when it starts and the accesses the previous step made."""

    def __init__(self, path, name, values, accesses, statements):
        self.path, self.name, self.values, self.accesses = path, name, values, accesses
        self.statements = statements  # statements() of the kernel
        self.steps, self.truncated = [], False
        self.shown = {}  # name -> value index last sent

    def global_trace(self, frame, event, arg):
        if frame.f_code.co_filename == self.path and frame.f_code.co_name == self.name:
            return self.local_trace
        return None

    def local_trace(self, frame, event, arg):
        if event == "return":
            self.record(None, None, frame.f_locals)
        elif event == "line":
            first, last = self.statements.get(frame.f_lineno, (frame.f_lineno, frame.f_lineno))
            if not (self.steps and self.steps[-1]["line"] == first):  # not the statement under way, on another of its lines
                self.record(first, last, frame.f_locals)
        return self.local_trace

    def record(self, line, end_line, scope):
        self.close_step()
        if len(self.steps) >= MAX_STEPS:
            self.truncated = True
            return
        changed = {}
        for name, value in scope.items():
            index = self.values.index(value)
            if index is not None and self.shown.get(name) != index:
                changed[name] = self.shown[name] = index
        self.steps.append({"line": line, "end_line": end_line, "set": changed, "accesses": [self.accesses(), None]})

    def close_step(self):
        if self.steps and self.steps[-1]["accesses"][1] is None:
            self.steps[-1]["accesses"][1] = self.accesses()


def after_each_line(recorded):
    """The arguments as the program starts, and each line with what it set: the locals read as the
    next line starts (the program's return for the last one)."""
    if not recorded:
        return {}, []
    steps = [{"line": step["line"], "end_line": step["end_line"], "set": following["set"], "accesses": step["accesses"]}
             for step, following in zip(recorded, recorded[1:] + [{"set": {}}]) if step["line"] is not None]
    return recorded[0]["set"], steps


@contextlib.contextmanager
def one_program(pid, grid):
    """The interpreter runs a grid of one; the builder answers program_id and num_programs as the
    real launch's program `pid` would (the tracer's hooks see that pid too)."""
    builder = interpreter.interpreter_builder
    cls = type(builder)
    builder.set_grid_dim = lambda *_: cls.set_grid_dim(builder, *grid)
    builder.set_grid_idx = lambda *_: cls.set_grid_idx(builder, *pid)
    try:
        yield
    finally:
        del builder.set_grid_dim, builder.set_grid_idx


def step_run(spec, result, path):
    """Fill result["steps"] (and result["error"] for a program that fails: the steps up to it stay)."""
    write_source(spec["source"], path)
    kernel, _, inputs, _, args, grid, _ = build.prepare(spec, path, True, "cpu")
    pid = check_pid(spec["options"]["step_pid"], grid)
    tensors = build.launch_tensors(inputs, args)
    analysis = provenance.analyze_kernel(path, kernel)
    owners = owners_by_position(analysis, args, tensors)
    unset = {}
    values = Values([TensorRange(name, t) for name, t in tensors.items() if isinstance(t, torch.Tensor)], unset)
    tracer = Tracer(tensors, path, owners=owners, only=0, max_programs=1, max_bytes=4_000_000)
    recorder = Recorder(path, kernel.function.__name__, values,
                        lambda: len(tracer.program[1]["accesses"]) if tracer.program else 0,
                        statements(analysis.node) if analysis else {})
    error, trace = None, None
    try:
        with tracer, one_program(pid, grid), unset_lanes(unset):
            sys.settrace(recorder.global_trace)
            try:
                kernel.jit[(1, 1, 1)](**args)
            finally:
                sys.settrace(None)
                recorder.close_step()
        trace = tracer.result(grid)
    except Exception as e:
        error = e if isinstance(e, RunError) else RunError("launch", explain(e)[1], type=explain(e)[0],
                                                           line=user_line(e, path), pid=list(pid))
        trace = getattr(error, "trace", None)
        recorder.close_step()
    program = trace["programs"][0] if trace and trace["programs"] else {"pid": list(pid), "accesses": []}
    initial, steps = after_each_line(recorder.steps)
    result["steps"] = {"pid": list(pid), "grid": list(grid), "function": kernel.function.__name__,
                       "initial": initial, "steps": steps, "values": values.table, "accesses": program["accesses"],
                       "tensors": trace["tensors"] if trace else {}, "truncated": recorder.truncated or values.full}
    if error is not None:
        raise error


def stepped(spec, scratch, device):
    """The result of a step-through run: `steps`, and `error` where the program failed."""
    result = results.new(device)
    result["notes"].append("Replayed alone in Triton's interpreter, on CPU copies of the inputs.")
    with contextlib.ExitStack() as stack:
        if scratch is None:
            scratch = stack.enter_context(tempfile.TemporaryDirectory(prefix="step-"))
        path = os.path.join(scratch, "kernel.py")
        warned = Warned(path)
        try:
            with warned.catching():
                step_run(spec, result, path)
        except Exception as e:
            results.fail(result, as_run_error(e, path, "launch", "replaying the program line by line"))
    return warned.into(result)
