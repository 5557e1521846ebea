"""The memory trace and the bounds sanitizer, on real kernels run in Triton's interpreter."""
import importlib.util
import json

import numpy as np
import pytest
import torch
import triton
from triton.runtime import interpreter

from sandbox.errors import RunError
from sandbox.trace.interpreter import TraceBudgetExceeded, Tracer
from sandbox.trace.patches import interpreter_hygiene, patch_interpreter_compat
from sandbox.trace.record import runs_of, unique_bytes
from tests.support import needs_block_pointers

KERNELS = '''import triton
import triton.language as tl


@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    y = tl.load(y_ptr + offs, mask=mask)
    tl.store(out_ptr + offs, x + y, mask=mask)


@triton.jit
def wait_for_flag_kernel(flag_ptr, out_ptr):
    # program 0 waits for program 1's flag: at once on a GPU, never in an interpreter that runs program 0 first
    pid = tl.program_id(0)
    if pid == 0:
        while tl.atomic_add(flag_ptr, 0) == 0:
            pass
    else:
        tl.atomic_xchg(flag_ptr, 1)
    tl.store(out_ptr + pid, pid)


@triton.jit
def add_one_unmasked_kernel(x_ptr, out_ptr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    tl.store(out_ptr + offs, x + 1)


@triton.jit
def row_sum_kernel(a_ptr, out_ptr, N, BLOCK_N: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK_N)
    values = tl.load(a_ptr + row * N + cols, mask=cols < N, other=0.0)
    tl.store(out_ptr + row, tl.sum(values, axis=0))


@triton.jit
def row_sum_without_other_kernel(a_ptr, out_ptr, N, BLOCK_N: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK_N)
    values = tl.load(a_ptr + row * N + cols, mask=cols < N)
    tl.store(out_ptr + row, tl.sum(values, axis=0))


@triton.jit
def scale_2d_kernel(a_ptr, out_ptr, M, N, BM: tl.constexpr, BN: tl.constexpr):
    rows = tl.program_id(0) * BM + tl.arange(0, BM)
    cols = tl.program_id(1) * BN + tl.arange(0, BN)
    offs = rows[:, None] * N + cols[None, :]
    mask = (rows[:, None] < M) & (cols[None, :] < N)
    a = tl.load(a_ptr + offs, mask=mask)
    tl.store(out_ptr + offs, 2 * a, mask=mask)


@triton.jit
def loop_sum_kernel(x_ptr, out_ptr, K, BK: tl.constexpr):
    acc = tl.zeros((BK,), dtype=tl.float32)
    for k in range(0, tl.cdiv(K, BK)):
        offs = k * BK + tl.arange(0, BK)
        acc += tl.load(x_ptr + offs, mask=offs < K, other=0.0)
    tl.store(out_ptr + tl.arange(0, BK), acc)


@triton.jit
def atomics_kernel(x_ptr, counts_ptr, max_ptr, flag_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    v = tl.load(x_ptr + offs, mask=mask, other=0)
    tl.atomic_add(counts_ptr + v, 1, mask=mask)
    tl.atomic_max(max_ptr, tl.max(v, axis=0))
    tl.atomic_cas(flag_ptr, 0, 1)


@triton.jit
def block_copy_kernel(a_ptr, out_ptr, M, N, BM: tl.constexpr, BN: tl.constexpr, CHECK: tl.constexpr):
    start = (tl.program_id(0) * BM, tl.program_id(1) * BN)
    a = tl.make_block_ptr(a_ptr, shape=(M, N), strides=(N, 1), offsets=start, block_shape=(BM, BN), order=(1, 0))
    o = tl.make_block_ptr(out_ptr, shape=(M, N), strides=(N, 1), offsets=start, block_shape=(BM, BN), order=(1, 0))
    block = tl.load(a, boundary_check=(0, 1))
    if CHECK:
        tl.store(o, block, boundary_check=(0, 1))
    else:
        tl.store(o, block)


@triton.jit
def strided_fill_kernel(out_ptr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * 2 * BLOCK + tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, 1.0)


@triton.jit
def overlap_fill_kernel(out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * (BLOCK - 1) + tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, 1.0, mask=offs < n)
    tl.store(out_ptr + offs, 2.0, mask=offs < n)
'''


@pytest.fixture(scope="module")
def kernels(tmp_path_factory):
    """The kernels above, imported from a real file with the interpreter on (jit decides at decoration)."""
    path = tmp_path_factory.mktemp("kernels") / "kernels.py"
    path.write_text(KERNELS)
    was = triton.knobs.runtime.interpret
    triton.knobs.runtime.interpret = True
    try:
        spec = importlib.util.spec_from_file_location("trace_test_kernels", path)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
    finally:
        triton.knobs.runtime.interpret = was
    module.path = str(path)
    return module


def line_of(text):
    return next(i for i, line in enumerate(KERNELS.splitlines(), 1) if text in line)


def traced(kernels, tensors, kernel, grid, *args, **kwargs):
    with Tracer(tensors, kernels.path, **kwargs.pop("tracer", {})) as tracer:  # it keeps the interpreter tidy itself
        kernel[grid](*args, **kwargs)
    return tracer.result(grid)


def accesses(trace, pid):
    return next(p["accesses"] for p in trace["programs"] if p["pid"] == pid)


def test_vector_add_trace_is_exact(kernels):
    n = 10
    x, y, out = torch.randn(n), torch.randn(n), torch.empty(n)
    trace = traced(kernels, {"x": x, "y": y, "out": out}, kernels.add_kernel, (3,), x, y, out, n, BLOCK=4)

    assert trace["grid"] == [3, 1, 1]
    assert (trace["programs_total"], trace["programs_traced"], trace["sampled"]) == (3, 3, False)
    assert [p["pid"] for p in trace["programs"]] == [[0, 0, 0], [1, 0, 0], [2, 0, 0]]
    assert accesses(trace, [2, 0, 0]) == [
        {"op": "load", "tensor": "x", "line": line_of("x = tl.load"), "offsets": [[8, 2]], "masked": [[10, 2]]},
        {"op": "load", "tensor": "y", "line": line_of("y = tl.load"), "offsets": [[8, 2]], "masked": [[10, 2]]},
        {"op": "store", "tensor": "out", "line": line_of("tl.store(out_ptr + offs, x + y"),
         "offsets": [[8, 2]], "masked": [[10, 2]]},
    ]
    assert accesses(trace, [0, 0, 0])[2]["offsets"] == [[0, 4]] and accesses(trace, [0, 0, 0])[2]["masked"] == []
    assert trace["tensors"] == {"x": {"shape": [10], "dtype": "float32", "role": "input"},
                                "y": {"shape": [10], "dtype": "float32", "role": "input"},
                                "out": {"shape": [10], "dtype": "float32", "role": "output"}}
    assert trace["coverage"]["out"] == {"numel": 10, "unwritten": 0, "multiply_written": 0,
                                        "unwritten_runs": [], "multi_runs": [], "truncated": False}
    assert torch.allclose(out, x + y)
    json.dumps(trace)


def test_row_sum_one_program_per_row(kernels):
    a, out = torch.randn(3, 5), torch.empty(3)
    trace = traced(kernels, {"a": a, "out": out}, kernels.row_sum_kernel, (3,), a, out, 5, BLOCK_N=8)

    load, store = accesses(trace, [1, 0, 0])
    assert (load["tensor"], load["offsets"], load["masked"]) == ("a", [[5, 5]], [[10, 3]])
    assert (store["tensor"], store["offsets"], store["masked"]) == ("out", [[1, 1]], [])
    assert trace["tensors"]["a"] == {"shape": [3, 5], "dtype": "float32", "role": "input"}
    assert torch.allclose(out, a.sum(axis=1))


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.int32, torch.int8])
def test_masked_off_lanes_without_other_read_poison_when_asked(kernels, dtype):
    """The interpreter's 0 in a masked-off lane of a load without `other` would pass a sum that a GPU's
    undefined lanes break; with `poison` they read NaN (floats) or 23130 (integers)."""
    a = torch.arange(1, 3 * 5 + 1).reshape(3, 5).to(dtype)
    out = torch.zeros(3, dtype=dtype)

    def row_sums(kernel, poison):
        with Tracer({"a": a, "out": out}, kernels.path, record=False, poison=poison) as tracer:
            kernel[(3,)](a, out, 5, BLOCK_N=8)
        return out.clone(), tracer.undefined_lanes

    expected = a.sum(dim=1, dtype=dtype)
    sums, undefined = row_sums(kernels.row_sum_without_other_kernel, False)
    assert torch.equal(sums, expected) and undefined == 0
    sums, undefined = row_sums(kernels.row_sum_without_other_kernel, True)
    assert undefined == 3 * 3
    if dtype.is_floating_point:
        assert sums.isnan().all()
    else:
        assert (sums != expected).all()
    sums, undefined = row_sums(kernels.row_sum_kernel, True)  # other=0.0: nothing poisoned
    assert torch.equal(sums, expected) and undefined == 0


def test_2d_grid_offsets_are_flat_and_in_row_major_lane_order(kernels):
    a, out = torch.randn(5, 6), torch.empty(5, 6)
    trace = traced(kernels, {"a": a, "out": out}, kernels.scale_2d_kernel, (2, 2), a, out, 5, 6, BM=4, BN=4)

    assert trace["grid"] == [2, 2, 1] and trace["programs_total"] == 4
    assert [p["pid"] for p in trace["programs"]] == [[0, 0, 0], [0, 1, 0], [1, 0, 0], [1, 1, 0]]
    load = accesses(trace, [1, 1, 0])[0]
    # Block rows 4..7 x cols 4..7: only (4,4) and (4,5) exist; the others are masked, row by row.
    assert load["offsets"] == [[28, 2]]
    assert load["masked"] == [[30, 2], [34, 4], [40, 4], [46, 4]]
    assert accesses(trace, [0, 1, 0])[1]["offsets"] == [[4, 2], [10, 2], [16, 2], [22, 2]]
    assert trace["coverage"]["out"]["unwritten"] == 0
    assert torch.allclose(out, 2 * a)


def test_loop_records_every_iteration(kernels):
    x, out = torch.arange(10, dtype=torch.float32), torch.empty(4)
    trace = traced(kernels, {"x": x, "out": out}, kernels.loop_sum_kernel, (1,), x, out, 10, BK=4)

    loads = [a for a in accesses(trace, [0, 0, 0]) if a["op"] == "load"]
    assert [(a["offsets"], a["masked"]) for a in loads] == [([[0, 4]], []), ([[4, 4]], []), ([[8, 2]], [[10, 2]])]
    assert {a["line"] for a in loads} == {line_of("acc += tl.load")}
    assert out.tolist() == [12.0, 15.0, 8.0, 10.0]


def test_range_over_cdiv_runs_after_the_compat_patch(kernels):
    patch_interpreter_compat()
    patch_interpreter_compat()  # twice is harmless
    x, out = torch.arange(10, dtype=torch.float32), torch.empty(4)
    with interpreter_hygiene():
        kernels.loop_sum_kernel[(1,)](x, out, 10, BK=4)
    assert out.tolist() == [12.0, 15.0, 8.0, 10.0]


def test_a_device_function_patches_the_language_once_per_launch_and_leaves_it_as_found(kernels, monkeypatch):
    """tl.sum is a device function: the interpreter patched triton.language again at each of its
    calls (~7 ms apiece, most of a softmax's launch); once per module's globals a launch is enough."""
    import triton.language as tl
    patched, original = [], interpreter._patch_lang
    monkeypatch.setattr(interpreter, "_patch_lang", lambda fn: patched.append(fn) or original(fn))
    before = {name: getattr(tl.core.tensor, name, None) for name in ("__index__", "__add__", "T")}
    core_sum = tl.core.reduce
    a, out = torch.randn(64, 8), torch.empty(64)
    traced(kernels, {"a": a, "out": out}, kernels.row_sum_kernel, (64,), a, out, 8, BLOCK_N=8)
    assert torch.allclose(out, a.sum(1), atol=1e-5)
    assert len(patched) <= 3  # the kernel's module, and standard.py's: not once per program's tl.sum
    assert {name: getattr(tl.core.tensor, name, None) for name in before} == before and tl.core.reduce is core_sum


def test_atomics_are_recorded_and_count_as_writes(kernels):
    x = torch.tensor([0, 1, 1, 3, 3, 3], dtype=torch.int32)
    counts, top, flag = torch.zeros(5, dtype=torch.int32), torch.zeros(1, dtype=torch.int32), torch.zeros(1, dtype=torch.int32)
    tensors = {"x": x, "counts": counts, "top": top, "flag": flag}
    trace = traced(kernels, tensors, kernels.atomics_kernel, (2,), x, counts, top, flag, 6, BLOCK=4)

    ops = [(a["op"], a["tensor"], a.get("atomic"), a["offsets"], a["masked"]) for a in accesses(trace, [1, 0, 0])]
    assert ops == [("load", "x", None, [[4, 2]], [[6, 2]]),
                   ("atomic", "counts", "add", [[3, 1], [3, 1]], [[0, 1], [0, 1]]),
                   ("atomic", "top", "max", [[0, 1]], []),
                   ("atomic", "flag", "cas", [[0, 1]], [])]
    assert counts.tolist() == [1, 2, 0, 3, 0] and top.item() == 3 and flag.item() == 1
    assert trace["tensors"]["counts"]["role"] == "inout"
    # Two programs adding to the same counter is what atomics are for: no multiple-write warning.
    assert trace["coverage"]["counts"]["multiply_written"] == 0
    assert trace["coverage"]["counts"]["unwritten_runs"] == [[2, 1], [4, 1]]


@needs_block_pointers()
@pytest.mark.filterwarnings("ignore:tl.make_block_ptr is deprecated")
def test_block_pointers_with_boundary_check(kernels):
    a, out = torch.randn(5, 6), torch.empty(5, 6)
    trace = traced(kernels, {"a": a, "out": out}, kernels.block_copy_kernel, (2, 2),
                   a, out, 5, 6, BM=4, BN=4, CHECK=True)

    load, store = accesses(trace, [1, 1, 0])
    assert (load["op"], load["tensor"], load["offsets"]) == ("load", "a", [[28, 2]])
    assert load["masked"] == [[30, 2], [34, 4], [40, 4], [46, 4]]
    assert (store["op"], store["tensor"], store["offsets"]) == ("store", "out", [[28, 2]])
    assert trace["coverage"]["out"]["unwritten"] == 0
    assert torch.equal(out, a)


def test_coverage_counts_skipped_elements(kernels):
    out = torch.zeros(16)
    trace = traced(kernels, {"out": out}, kernels.strided_fill_kernel, (2,), out, BLOCK=4)

    coverage = trace["coverage"]["out"]
    assert (coverage["unwritten"], coverage["unwritten_runs"]) == (8, [[4, 4], [12, 4]])
    assert coverage["multiply_written"] == 0


def test_coverage_counts_elements_written_by_two_programs(kernels):
    out = torch.zeros(10)
    trace = traced(kernels, {"out": out}, kernels.overlap_fill_kernel, (3,), out, 10, BLOCK=4)

    coverage = trace["coverage"]["out"]
    # Each program stores its block twice; only elements shared by two programs count.
    assert (coverage["multiply_written"], coverage["multi_runs"]) == (2, [[3, 1], [6, 1]])
    assert coverage["unwritten"] == 0


def test_out_of_bounds_store_is_stopped_before_it_happens(kernels):
    buffer = torch.full((16,), -1.0)
    x, out = torch.arange(12, dtype=torch.float32), buffer[:10]
    with pytest.raises(RunError) as caught:
        traced(kernels, {"x": x, "out": out}, kernels.add_one_unmasked_kernel, (3,), x, out, BLOCK=4)

    error = caught.value
    line = line_of("tl.store(out_ptr + offs, x + 1)")
    assert (error.phase, error.type, error.line, error.pid) == ("launch", "OutOfBounds", line, [2, 0, 0])
    assert error.message == ("program (2, 0, 0) stores `out` at offsets 10..11, but `out` has 10 elements "
                             "(valid offsets 0..9).")
    assert error.hint == "Mask the store: tl.store(ptr, value, mask=offs < n)."
    # The memory just past `out` was never written, and the interpreter still works.
    assert buffer[10:].tolist() == [-1.0] * 6
    assert interpreter.InterpreterBuilder.create_masked_store.__module__ == interpreter.__name__
    x, y, out = torch.ones(10), torch.ones(10), torch.empty(10)
    kernels.add_kernel[(3,)](x, y, out, 10, BLOCK=4)
    assert out.tolist() == [2.0] * 10


def test_sanitizer_runs_without_recording(kernels):
    x, out = torch.arange(10, dtype=torch.float32), torch.empty(12)
    with pytest.raises(RunError) as caught:
        traced(kernels, {"x": x, "out": out}, kernels.add_one_unmasked_kernel, (3,), x, out, BLOCK=4,
               tracer={"record": False})
    assert caught.value.pid == [2, 0, 0] and caught.value.line == line_of("x = tl.load(x_ptr + offs)")
    assert "loads `x` at offsets 10..11" in caught.value.message
    assert "tl.load(ptr, mask=offs < n, other=0.0)" in caught.value.hint


@needs_block_pointers()
@pytest.mark.filterwarnings("ignore:tl.make_block_ptr is deprecated")
def test_block_pointer_without_boundary_check_is_stopped(kernels):
    a, out = torch.randn(5, 6), torch.empty(5, 6)
    with pytest.raises(RunError) as caught:
        traced(kernels, {"a": a, "out": out}, kernels.block_copy_kernel, (2, 2), a, out, 5, 6, BM=4, BN=4, CHECK=False)
    # Program (0, 1) runs past the right edge into the next rows: inside `out`, so not caught.
    assert caught.value.pid == [1, 0, 0] and caught.value.line == line_of("tl.store(o, block)")
    assert "stores `out` at offsets 30..45" in caught.value.message
    assert "boundary_check=(0, 1)" in caught.value.hint


def test_pointer_outside_every_named_tensor_is_named_as_such(kernels):
    elsewhere, out = torch.zeros(1 << 20), torch.empty(4)
    with pytest.raises(RunError) as caught:
        traced(kernels, {"out": out}, kernels.add_one_unmasked_kernel, (1,), elsewhere, out, BLOCK=4)
    assert "not inside any tensor passed to the kernel (tensors: `out`)" in caught.value.message
    assert caught.value.line == line_of("x = tl.load(x_ptr + offs)")


def test_a_trace_over_its_time_budget_stops_and_says_where(kernels):
    x, y, out = torch.randn(40), torch.randn(40), torch.empty(40)
    with pytest.raises(TraceBudgetExceeded) as caught:
        traced(kernels, {"x": x, "y": y, "out": out}, kernels.add_kernel, (10,), x, y, out, 40, BLOCK=4,
               tracer={"budget_s": 0.0, "record": False})
    assert caught.value.phase == "trace" and caught.value.total == 10 and caught.value.done < 10
    assert "too slow for a launch this size" in caught.value.message


def test_a_program_that_waits_for_another_stops_at_the_time_budget(kernels):
    """The interpreter runs programs one after another: a program spinning on another's flag would spin
    until the run's timeout. The budget is looked at on every access too, not only as a program starts."""
    import time
    flag, out = torch.zeros(1, dtype=torch.int32), torch.zeros(2, dtype=torch.int32)
    start = time.monotonic()
    with pytest.raises(TraceBudgetExceeded) as caught:
        traced(kernels, {"flag": flag, "out": out}, kernels.wait_for_flag_kernel, (2,), flag, out,
               tracer={"budget_s": 0.2, "record": False})
    assert time.monotonic() - start < 5 and caught.value.done == 0


def test_sampling_beyond_max_programs_keeps_first_last_and_a_spread(kernels):
    n = 400
    x, y, out = torch.randn(n), torch.randn(n), torch.empty(n)
    trace = traced(kernels, {"x": x, "y": y, "out": out}, kernels.add_kernel, (100,), x, y, out, n, BLOCK=4,
                   tracer={"max_programs": 30})

    pids = [p["pid"][0] for p in trace["programs"]]
    assert trace["sampled"] and trace["programs_total"] == 100
    assert trace["programs_traced"] == len(pids) <= 30
    assert pids[:10] == list(range(10)) and pids[-10:] == list(range(90, 100))
    middle = pids[10:-10]
    assert len(middle) >= 5 and len({b - a for a, b in zip(middle, middle[1:])}) == 1
    assert trace["sample"] == {"first": 10, "last": 10, "every": middle[1] - middle[0]}
    assert accesses(trace, [50, 0, 0])[2]["offsets"] == [[200, 4]]
    # Coverage still covers every program, kept or not.
    assert trace["coverage"]["out"]["unwritten"] == 0


def test_payload_stays_under_max_bytes(kernels):
    n = 4000
    x, y, out = torch.randn(n), torch.randn(n), torch.empty(n)
    trace = traced(kernels, {"x": x, "y": y, "out": out}, kernels.add_kernel, (1000,), x, y, out, n, BLOCK=4,
                   tracer={"max_bytes": 20_000})
    assert trace["sampled"] and 0 < trace["programs_traced"] < 1000
    assert len(json.dumps(trace["programs"])) <= 20_000
    assert trace["programs"][0]["pid"] == [0, 0, 0] and trace["programs"][-1]["pid"] == [999, 0, 0]


def test_runs_merge_consecutive_steps_in_lane_order():
    assert runs_of(np.array([3, 4, 5, 9, 8, 10, 11])) == [[3, 3], [9, 1], [8, 1], [10, 2]]
    assert runs_of(np.array([], dtype=np.int64)) == []
    assert runs_of(np.arange(0, 20, 2), limit=3) == [[0, 1], [2, 1], [4, 1]]


def test_unique_bytes_counts_each_element_once_per_direction(kernels):
    x, out = torch.arange(10, dtype=torch.float32), torch.empty(4)
    trace = traced(kernels, {"x": x, "out": out}, kernels.loop_sum_kernel, (1,), x, out, 10, BK=4)
    assert unique_bytes(trace) == (10 + 4) * 4


def test_unique_bytes_merge_the_runs_of_every_access_as_the_elements_would():
    """The union of (start, length) runs, counted without listing their elements (a launch of a
    million elements is counted in microseconds), equals the count of the distinct elements."""
    import random
    from sandbox.trace.record import covered
    rng = random.Random(7)
    for _ in range(500):
        runs = [(rng.randrange(0, 60), rng.randrange(0, 12)) for _ in range(rng.randrange(0, 9))]
        assert covered(runs) == len({e for start, length in runs for e in range(start, start + length)}), runs
