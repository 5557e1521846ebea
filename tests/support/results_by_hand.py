"""Every hand-written result (and result part) the front-end tests show the page, in one place.

They have the shape of the server's result definition (sandbox/result.py), so a test can check
each of them against it: `ALL_RESULTS` lists the whole results, `ALL_TRACES` the traces.
Traces are written as the run pipeline returns them: per program its accesses as runs
([start, length] of element offsets) of active and masked-off lanes, per written tensor its coverage.
"""

# Source lines of the accesses in the vector-add traces, as the kernel would have them.
LOAD_X, LOAD_Y, STORE_OUT = 14, 15, 17


def result(**fields):
    """A result with every field, as a run that ran and checked nothing; `fields` replace those."""
    base = {"run_id": None, "status": "ok", "device": INTERPRETER, "error": None, "stdout": "", "check": None,
            "timings": None, "trace": None, "ir": None, "notes": [], "warnings": [], "run_ms": 12.5,
            "puzzle": None, "sweep": None, "steps": None, "launches": None,
            "benchmarks": None, "claims": None, "server_check": None, "timeline": None}
    unknown = set(fields) - set(base)
    assert not unknown, unknown
    return {**base, **fields}


def error(phase, message, *, type="RunError", hint=None, line=None, pid=None, field=None, launch=None):
    """A result's `error`: fields, never text to parse (message without its line, hint apart)."""
    return {"phase": phase, "type": type, "message": message, "hint": hint, "line": line, "pid": pid, "field": field,
            "launch": launch}


def error_result(phase, message, **fields):
    return result(status="error", error=error(phase, message, **fields))


INTERPRETER = {"kind": "interpreter", "name": "CPU", "index": None, "triton": "3.7.1", "torch": "2.13.0"}
H100 = {"kind": "gpu", "name": "NVIDIA H100 80GB HBM3", "index": 0, "triton": "3.6.0", "torch": "2.11.0"}


# ---- traces ----------------------------------------------------------------------------------

def runs_of(offsets):
    """[start, length] runs of a sorted list of offsets."""
    runs = []
    for offset in offsets:
        if runs and runs[-1][0] + runs[-1][1] == offset:
            runs[-1][1] += 1
        else:
            runs.append([offset, 1])
    return runs


def coverage_of(numel, stored_by_program, atomic_runs=()):
    """Unwritten and multiply-stored elements, as the tracer reports them: an element stored by two
    programs is a conflict; atomics write an element without ever making it one.
    `stored_by_program`: per program, the runs it stored."""
    edges = {0: [0, 0], numel: [0, 0]}  # offset -> change in [stores, atomics] covering it
    for kind, runs in enumerate(([run for runs in stored_by_program for run in runs], atomic_runs)):
        for start, length in runs:
            edges.setdefault(start, [0, 0])[kind] += 1
            edges.setdefault(start + length, [0, 0])[kind] -= 1
    unwritten, multi, stores, atomics = [], [], 0, 0
    points = sorted(edges)
    for here, following in zip(points, points[1:]):
        stores, atomics = stores + edges[here][0], atomics + edges[here][1]
        if here >= numel:
            break
        piece = [here, min(following, numel) - here]
        if stores == 0 and atomics == 0:
            unwritten.append(piece)
        elif stores > 1:
            multi.append(piece)
    return {"numel": numel, "unwritten": sum(n for _, n in unwritten), "multiply_written": sum(n for _, n in multi),
            "unwritten_runs": unwritten, "multi_runs": multi, "truncated": False}


def trace(grid, tensors, programs, coverage, total=None, sample=None):
    total = total if total is not None else grid[0] * grid[1] * grid[2]
    return {"grid": grid, "programs_total": total, "programs_traced": len(programs), "sampled": total > len(programs),
            "sample": sample, "tensors": tensors, "programs": programs, "coverage": coverage,
            "tracer": "interpreter", "bytes_touched": None}


def vector_add_trace(n, block, programs=None, grid=None, rows=1):
    """out = x + y, one program per block of `block` elements, lanes at offsets >= n masked off.
    `rows` > 1: a grid (cdiv(n, block), rows) whose programs of every row do the same blocks again,
    so each element of out is stored by `rows` programs."""
    count = -(-n // block) if programs is None else programs
    traced = []
    for row in range(rows):
        for pid in range(count):
            start = pid * block
            active = [[start, max(0, min(block, n - start))]]
            masked = [[max(start, n), start + block - max(start, n)]] if start + block > n else []
            active = [r for r in active if r[1] > 0]
            traced.append({"pid": [pid, row, 0], "accesses": [
                {"op": "load", "tensor": "x", "line": LOAD_X, "offsets": active, "masked": masked},
                {"op": "load", "tensor": "y", "line": LOAD_Y, "offsets": active, "masked": masked},
                {"op": "store", "tensor": "out", "line": STORE_OUT, "offsets": active, "masked": masked}]})
    grid = grid or [count, rows, 1]
    total = grid[0] * grid[1] * grid[2]
    per_row = [[0, min(n, grid[0] * block)]]  # coverage spans the whole launch, sampled or not
    return trace(grid, {"x": {"shape": [n], "dtype": "float32", "role": "input"},
                        "y": {"shape": [n], "dtype": "float32", "role": "input"},
                        "out": {"shape": [n], "dtype": "float32", "role": "output"}},
                 traced, {"out": coverage_of(n, [per_row] * grid[1])}, total=total)


def row_sum_2d_trace(m, n, block_m, block_n):
    """out[r] += a[r, cols of the tile].sum() on a (cdiv(m, block_m), cdiv(n, block_n)) grid."""
    gx, gy = -(-m // block_m), -(-n // block_n)
    traced, written = [], []
    for py in range(gy):
        for px in range(gx):
            rows = range(px * block_m, px * block_m + block_m)
            cols = range(py * block_n, py * block_n + block_n)
            active = [r * n + c for r in rows for c in cols if r < m and c < n]
            masked = [r * n + c for r in rows for c in cols if not (r < m and c < n)]
            out_active = runs_of([r for r in rows if r < m])
            out_masked = runs_of([r for r in rows if r >= m])
            written += out_active
            traced.append({"pid": [px, py, 0], "accesses": [
                {"op": "load", "tensor": "a", "line": 30, "offsets": runs_of(active), "masked": runs_of(masked)},
                {"op": "atomic", "atomic": "add", "tensor": "out", "line": 32,
                 "offsets": out_active, "masked": out_masked}]})
    return trace([gx, gy, 1], {"a": {"shape": [m, n], "dtype": "float32", "role": "input"},
                               "out": {"shape": [m], "dtype": "float32", "role": "inout"}},
                 traced, {"out": coverage_of(m, [], written)})


def atomic_sum_trace(n=5000, block=512):
    """The gallery's atomic_sum: every program sums its block of x and atomically adds it to out[0]."""
    count = -(-n // block)
    traced = []
    for pid in range(count):
        start = pid * block
        active = [[start, min(block, n - start)]]
        masked = [[n, start + block - n]] if start + block > n else []
        traced.append({"pid": [pid, 0, 0], "accesses": [
            {"op": "load", "tensor": "x", "line": 33, "offsets": active, "masked": masked},
            {"op": "atomic", "atomic": "add", "tensor": "out", "line": 34, "offsets": [[0, 1]], "masked": []}]})
    return trace([count, 1, 1], {"x": {"shape": [n], "dtype": "float32", "role": "input"},
                                 "out": {"shape": [1], "dtype": "float32", "role": "inout"}},
                 traced, {"out": coverage_of(1, [], [[0, 1]] * count)})


def out_of_bounds_trace(n, block, stray_start=None):
    """Vector add whose load of x lost its mask: every program up to the last, which stops the run
    at that load, its lanes from n on (or from `stray_start`, far past the end) out of bounds, as the
    tracer returns it with the error: the offending access last, the stray lanes in `out_of_bounds`."""
    full = vector_add_trace(n, block)
    last = full["programs"][-1]
    start = last["pid"][0] * block
    inside = n - start
    strays = [[n if stray_start is None else stray_start, block - inside]]
    offsets = [[start, inside], *strays] if stray_start is not None else [[start, block]]
    last["accesses"] = [{"op": "load", "tensor": "x", "line": LOAD_X, "offsets": offsets, "masked": [],
                         "out_of_bounds": strays}]
    full["coverage"] = {"out": coverage_of(n, [[[0, start]]])}
    return full


def without_coverage(trace):
    """The same trace without the server's coverage: the page counts a complete trace itself."""
    return {**trace, "coverage": {}}


# ---- whole results ---------------------------------------------------------------------------

GPU_RESULT = result(  # a matmul on an H100, as the GPU pipeline reports it; its trace pass ran out of time
    device=H100, run_ms=3100.0,
    notes=["the trace and bounds check stopped after 10 s, at program 2048 of 65536"],
    timings={"compile_ms": 2400.0, "kernel_ms": {"median": 0.231, "p20": 0.229, "p80": 0.236, "n": 400},
             "reference_ms": {"median": 0.262, "p20": 0.26, "p80": 0.27, "n": 380}, "speedup": 1.134,
             "interpreter": False, "bytes": 100663296, "bytes_source": "tensors", "gbps": 435.8, "peak_gbps": 2950.0,
             "flops": 2 * 4096 ** 3, "tflops": 595.0, "peak_tflops": 989.5,
             "peak_tflops_kind": "fp16/bf16 tensor core, dense (datasheet)",
             "autotune": [{"config": {"BLOCK_M": 128, "num_warps": 8, "num_stages": 3}, "ms": 0.231, "chosen": True},
                          {"config": {"BLOCK_M": 64, "num_warps": 4, "num_stages": 4}, "ms": 0.298, "chosen": False},
                          {"config": {"BLOCK_M": 256, "num_warps": 8, "num_stages": 4}, "ms": None, "chosen": False}],
             "notes": ["The autotuner timed each config and launched the fastest."]})


def timings_of(**fields):
    """GPU_RESULT with some of its timings replaced."""
    return {**GPU_RESULT, "timings": {**GPU_RESULT["timings"], **fields}}


GPU_RESULT_NO_COMPUTE_PEAK = timings_of(peak_tflops=None, peak_tflops_kind=None)
GPU_RESULT_NO_FLOPS = timings_of(flops=None, tflops=None, peak_tflops=None, peak_tflops_kind=None)


def checked(name, numel, **fields):
    """check.outputs[name] of an output that matched."""
    return {"ok": True, "max_abs_err": 0.0, "max_rel_err": 0.0, "mismatched": 0, "unwritten": 0,
            "atol": 1e-5, "rtol": 1.3e-6, "numel": numel, **fields}


# vector add on a (cdiv(n, BLOCK), 2) grid: both rows of programs store every element of out. The
# values agree, so the check passes; the stores still race.
RACE_RESULT = result(trace=vector_add_trace(10, 4, rows=2),
                     check={"ok": True, "outputs": {"out": checked("out", 10)}})

# the gallery's atomic_sum: ten programs add into out[0] with tl.atomic_add: no race.
ATOMIC_RESULT = result(trace=atomic_sum_trace(),
                       check={"ok": True, "outputs": {"out": checked("out", 1, atol=1e-4, rtol=1e-5)}})

# Build errors naming the spec field at fault, one per kind of field the launch form shows.
FIELD_ERRORS = {
    "args.n": error_result("build", "argument 'n' of add_kernel is not mapped: give it an input name, "
                           "an expression such as x.numel(), or a literal", field="args.n"),
    "inputs.x": error_result("build", "input 'x' = 'torch.randn(-1)' failed: RuntimeError: negative dimension -1",
                             type="RuntimeError", field="inputs.x"),
    "grid": error_result("build", "grid = '(0,)' gave (0,): every dimension must be at least 1 program", field="grid"),
    "reference.out": error_result("check", "the reference for 'out' has shape (3,) but 'out' has shape (12,)",
                                  field="reference.out"),
    "options.num_warps": error_result("parse", "options.num_warps must be a power of 2 (1, 2, 4, 8, 16, 32), not 3",
                                      type="SpecError", field="options.num_warps"),
    "kernel": error_result("build", "there is no @triton.jit function named 'nope' in the source", field="kernel"),
}

# A launch error with its hint and its line and program apart from the message.
LAUNCH_ERROR = error_result("launch", "arange's range must be a power of 2", type="ValueError",
                            hint="tl.arange(start, end) needs end - start to be a power of 2 (1, 2, 4, 8, 16, ...).",
                            line=35, pid=[0, 0, 0])

# An error from a server that sends no hint and no field yet: shown as it comes.
OLD_SHAPE_ERROR = {**result(status="error"), "error": {"phase": "build", "type": "RunError",
                                                        "message": "argument 'n' of add_kernel is not mapped",
                                                        "line": None, "pid": None}}

ALL_RESULTS = [GPU_RESULT, GPU_RESULT_NO_COMPUTE_PEAK, GPU_RESULT_NO_FLOPS, RACE_RESULT, ATOMIC_RESULT, LAUNCH_ERROR,
               *FIELD_ERRORS.values()]
ALL_TRACES = [vector_add_trace(10, 4), vector_add_trace(10, 4, programs=2), vector_add_trace(10, 4, rows=2),
              vector_add_trace(1 << 20, 1024), vector_add_trace(1 << 30, 1024, programs=3, grid=[1 << 20, 1, 1]),
              row_sum_2d_trace(5, 20, 2, 8), atomic_sum_trace(), out_of_bounds_trace(10, 4)]
