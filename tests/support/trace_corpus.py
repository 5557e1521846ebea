"""Kernels both tracers must see alike: the interpreter tracer (sandbox.trace) and the instrumented
launch (sandbox.trace.gpu). Each is a run spec; BUGS are out-of-bounds variants with the program id
and tensor the error must name."""
from tests.support import has_block_pointers

HEADER = "import triton\nimport triton.language as tl\n\n"


def spec(kernel, source, inputs, args, grid, **options):
    return {"version": 1, "source": HEADER + source.strip() + "\n", "kernel": kernel, "inputs": inputs,
            "args": args, "grid": grid, "reference": {},
            "options": {"bench": False, "ir": False, "check": False, **options}}


ADD = """
@triton.jit
def add(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    y = tl.load(y_ptr + offs, mask=mask)
    tl.store(out_ptr + offs, x + y, mask=mask)
"""
ADD_IO = {"x": "torch.randn(50)", "y": "torch.randn(50)", "out": "torch.empty(50)"}
ADD_ARGS = {"x_ptr": "x", "y_ptr": "y", "out_ptr": "out", "n": "x.numel()", "BLOCK": 16}
ADD_GRID = "(triton.cdiv(n, meta['BLOCK']),)"

CORPUS = {
    "vector_add_masked_tail": spec("add", ADD, ADD_IO, ADD_ARGS, ADD_GRID),
    "load_with_other": spec("k", """
@triton.jit
def k(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n, other=-1.0)
    tl.store(out_ptr + offs, x * 2, mask=offs < n)
""", {"x": "torch.randn(37)", "out": "torch.empty(37)"}, {"x_ptr": "x", "out_ptr": "out", "n": 37, "BLOCK": 8},
        "(5,)"),
    "row_sum_2d_grid": spec("k", """
@triton.jit
def k(a_ptr, out_ptr, M, N, BM: tl.constexpr, BN: tl.constexpr):
    rows = tl.program_id(0) * BM + tl.arange(0, BM)
    cols = tl.program_id(1) * BN + tl.arange(0, BN)
    mask = (rows[:, None] < M) & (cols[None, :] < N)
    a = tl.load(a_ptr + rows[:, None] * N + cols[None, :], mask=mask, other=0.0)
    tl.atomic_add(out_ptr + rows, tl.sum(a, axis=1), mask=rows < M)
""", {"a": "torch.randn(10, 12)", "out": "torch.zeros(10)"},
        {"a_ptr": "a", "out_ptr": "out", "M": 10, "N": 12, "BM": 4, "BN": 8}, "(3, 2)"),
    "strided_columns": spec("k", """
@triton.jit
def k(a_ptr, out_ptr, M, stride, BLOCK: tl.constexpr):
    col = tl.program_id(0)
    rows = tl.arange(0, BLOCK)
    v = tl.load(a_ptr + rows * stride + col, mask=rows < M, other=0.0)
    tl.store(out_ptr + col, tl.max(v, axis=0))
""", {"a": "torch.randn(6, 5)", "out": "torch.empty(5)"},
        {"a_ptr": "a", "out_ptr": "out", "M": 6, "stride": "a.stride(0)", "BLOCK": 8}, "(5,)"),
    "transposed_view": spec("k", """
@triton.jit
def k(a_ptr, out_ptr, M, N, sam, san, BM: tl.constexpr, BN: tl.constexpr):
    rows = tl.program_id(0) * BM + tl.arange(0, BM)
    cols = tl.arange(0, BN)
    mask = (rows[:, None] < M) & (cols[None, :] < N)
    a = tl.load(a_ptr + rows[:, None] * sam + cols[None, :] * san, mask=mask)
    tl.store(out_ptr + rows[:, None] * N + cols[None, :], a, mask=mask)
""", {"a": "torch.randn(8, 6).T", "out": "torch.empty(6, 8)"},
        {"a_ptr": "a", "out_ptr": "out", "M": 6, "N": 8, "sam": "a.stride(0)", "san": "a.stride(1)", "BM": 4,
         "BN": 8}, "(2,)"),
    "atomics": spec("k", """
@triton.jit
def k(x_ptr, total_ptr, hist_ptr, max_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n, other=0)
    tl.atomic_add(total_ptr, tl.sum(x, axis=0))
    tl.atomic_add(hist_ptr + (x % 4), 1, mask=offs < n)
    tl.atomic_max(max_ptr, tl.max(x, axis=0))
""", {"x": "torch.randint(0, 100, (40,), dtype=torch.int32)", "total": "torch.zeros(1, dtype=torch.int32)",
      "hist": "torch.zeros(4, dtype=torch.int32)", "m": "torch.zeros(1, dtype=torch.int32)"},
        {"x_ptr": "x", "total_ptr": "total", "hist_ptr": "hist", "max_ptr": "m", "n": 40, "BLOCK": 16}, "(3,)"),
    "where_relu": spec("k", """
@triton.jit
def k(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n, other=0.0)
    tl.store(out_ptr + offs, tl.where(x > 0, x, 0.0), mask=offs < n)
""", {"x": "torch.randn(20)", "out": "torch.empty(20)"}, {"x_ptr": "x", "out_ptr": "out", "n": 20, "BLOCK": 8},
        "(3,)"),
    "loop_over_k_with_dot": spec("k", """
@triton.jit
def k(a_ptr, b_ptr, c_ptr, M, N, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    rows = tl.program_id(0) * BM + tl.arange(0, BM)
    cols = tl.program_id(1) * BN + tl.arange(0, BN)
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for kk in range(0, tl.cdiv(K, BK)):
        ks = kk * BK + tl.arange(0, BK)
        a = tl.load(a_ptr + rows[:, None] * K + ks[None, :], mask=(rows[:, None] < M) & (ks[None, :] < K), other=0.0)
        b = tl.load(b_ptr + ks[:, None] * N + cols[None, :], mask=(ks[:, None] < K) & (cols[None, :] < N), other=0.0)
        acc += tl.dot(a, b)
    tl.store(c_ptr + rows[:, None] * N + cols[None, :], acc, mask=(rows[:, None] < M) & (cols[None, :] < N))
""", {"a": "torch.randn(20, 40)", "b": "torch.randn(40, 24)", "c": "torch.empty(20, 24)"},
        {"a_ptr": "a", "b_ptr": "b", "c_ptr": "c", "M": 20, "N": 24, "K": 40, "BM": 16, "BN": 16, "BK": 16},
        "(2, 2)"),
    "pointer_advanced_in_loop": spec("k", """
@triton.jit
def k(x_ptr, out_ptr, ROWS, COLS: tl.constexpr):
    cols = tl.arange(0, COLS)
    ptrs = x_ptr + tl.program_id(0) * ROWS * COLS + cols
    acc = tl.zeros((COLS,), dtype=tl.float32)
    for r in range(ROWS):
        acc += tl.load(ptrs)
        ptrs += COLS
    tl.store(out_ptr + tl.program_id(0) * COLS + cols, acc)
""", {"x": "torch.randn(2, 3, 8)", "out": "torch.empty(2, 8)"}, {"x_ptr": "x", "out_ptr": "out", "ROWS": 3,
                                                                    "COLS": 8}, "(2,)"),
    "int64_offsets": spec("k", """
@triton.jit
def k(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK).to(tl.int64)
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=offs < n) + 1, mask=offs < n)
""", {"x": "torch.randn(30)", "out": "torch.empty(30)"}, {"x_ptr": "x", "out_ptr": "out", "n": 30, "BLOCK": 16},
        "(2,)"),
    "early_return": spec("k", """
@triton.jit
def k(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    if pid * BLOCK >= n:
        return
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=offs < n), mask=offs < n)
""", {"x": "torch.randn(20)", "out": "torch.zeros(20)"}, {"x_ptr": "x", "out_ptr": "out", "n": 20, "BLOCK": 8},
        "(5,)"),
    "constexpr_branch": spec("k", """
@triton.jit
def k(x_ptr, out_ptr, n, BLOCK: tl.constexpr, SQUARE: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n)
    if SQUARE:
        tl.store(out_ptr + offs, x * x, mask=offs < n)
    else:
        tl.store(out_ptr + offs, x, mask=offs < n)
""", {"x": "torch.randn(20)", "out": "torch.empty(20)"}, {"x_ptr": "x", "out_ptr": "out", "n": 20, "BLOCK": 8,
                                                            "SQUARE": True}, "(3,)"),
    # an optional output left None, written only where its flag is set: the access compiles away
    "optional_pointer_none": spec("k", """
@triton.jit
def k(x_ptr, out_ptr, extra_ptr, n, BLOCK: tl.constexpr, HAS_EXTRA: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n)
    tl.store(out_ptr + offs, x + 1, mask=offs < n)
    if HAS_EXTRA:
        tl.store(extra_ptr + offs, x * 2, mask=offs < n)
""", {"x": "torch.randn(20)", "out": "torch.empty(20)"}, {"x_ptr": "x", "out_ptr": "out", "extra_ptr": None, "n": 20,
                                                            "BLOCK": 8, "HAS_EXTRA": False}, "(3,)"),
    "gather_by_index": spec("k", """
@triton.jit
def k(x_ptr, idx_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    i = tl.load(idx_ptr + offs, mask=offs < n, other=0)
    tl.store(out_ptr + offs, tl.load(x_ptr + i, mask=offs < n), mask=offs < n)
""", {"x": "torch.randn(64)", "idx": "torch.randint(0, 64, (24,), dtype=torch.int32)", "out": "torch.empty(24)"},
        {"x_ptr": "x", "idx_ptr": "idx", "out_ptr": "out", "n": 24, "BLOCK": 8}, "(3,)"),
    "overlapping_stores": spec("k", """
@triton.jit
def k(out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * (BLOCK // 2) + tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, tl.program_id(0) + 0.0, mask=offs < n)
""", {"out": "torch.empty(20)"}, {"out_ptr": "out", "n": 20, "BLOCK": 8}, "(4,)"),
    "softmax_rows": spec("k", """
@triton.jit
def k(x_ptr, out_ptr, N, stride, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + row * stride + cols, mask=cols < N, other=-float('inf'))
    e = tl.exp(x - tl.max(x, axis=0))
    tl.store(out_ptr + row * stride + cols, e / tl.sum(e, axis=0), mask=cols < N)
""", {"x": "torch.randn(6, 10)", "out": "torch.empty(6, 10)"},
        {"x_ptr": "x", "out_ptr": "out", "N": 10, "stride": "x.stride(0)", "BLOCK": 16}, "(6,)"),
    "three_d_grid": spec("k", """
@triton.jit
def k(x_ptr, out_ptr, B: tl.constexpr):
    i, j, l = tl.program_id(0), tl.program_id(1), tl.program_id(2)
    base = (i * tl.num_programs(1) + j) * tl.num_programs(2) + l
    offs = base * B + tl.arange(0, B)
    tl.store(out_ptr + offs, tl.load(x_ptr + offs) * 3)
""", {"x": "torch.randn(2 * 3 * 2 * 4)", "out": "torch.empty(2 * 3 * 2 * 4)"},
        {"x_ptr": "x", "out_ptr": "out", "B": 4}, "(2, 3, 2)"),
    "autotuned": spec("k", """
@triton.autotune(configs=[triton.Config({'BLOCK': 16}, num_warps=2), triton.Config({'BLOCK': 32}, num_warps=4)],
                 key=['n'])
@triton.jit
def k(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=offs < n) - 1, mask=offs < n)
""", {"x": "torch.randn(40)", "out": "torch.empty(40)"}, {"x_ptr": "x", "out_ptr": "out", "n": 40},
        "lambda meta: (triton.cdiv(meta['n'], meta['BLOCK']),)"),
}

HELPERS = """
@triton.jit
def load_block(p, offs, n):
    return tl.load(p + offs, mask=offs < n, other=0.0)

@triton.jit
def store_block(p, offs, v, n):
    tl.store(p + offs, v, mask=offs < n)

@triton.jit
def add(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    store_block(out_ptr, offs, load_block(x_ptr, offs, n) + load_block(y_ptr, offs, n), n)
"""
BLOCK_POINTERS = """
@triton.jit
def k(a_ptr, out_ptr, M, N, stride_m, stride_n, BM: tl.constexpr, BN: tl.constexpr):
    a = tl.make_block_ptr(a_ptr, (M, N), (stride_m, stride_n), (tl.program_id(0) * BM, 0), (BM, BN), (1, 0))
    out = tl.make_block_ptr(base=out_ptr, shape=(M,), strides=(1,), offsets=(tl.program_id(0) * BM,),
                            block_shape=(BM,), order=(0,))
    acc = tl.zeros((BM,), dtype=tl.float32)
    for j in range(0, N, BN):
        acc += tl.sum(tl.load(a, boundary_check=(0, 1), padding_option="zero"), axis=1)
        a = tl.advance(a, (0, BN))
    tl.store(out, acc, boundary_check=(0,))
"""
BLOCK_IO = {"a": "torch.randn(10, 12)", "out": "torch.empty(10)"}
BLOCK_ARGS = {"a_ptr": "a", "out_ptr": "out", "M": 10, "N": 12, "stride_m": "a.stride(0)", "stride_n": "a.stride(1)",
              "BM": 4, "BN": 8}
# each program adds its block's sum under a lock it spins on (tl.atomic_cas takes no mask)
SPIN_LOCK = """
@triton.jit
def k(x_ptr, total_ptr, locks_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    part = tl.sum(tl.load(x_ptr + offs, mask=offs < n, other=0.0), axis=0)
    lock = locks_ptr + tl.program_id(0) % 2
    while tl.atomic_cas(lock, 0, 1) == 1:
        pass
    tl.store(total_ptr, tl.load(total_ptr) + part)
    tl.atomic_xchg(lock, 0)
"""
SPIN_LOCK_IO = {"x": "torch.randn(20)", "total": "torch.zeros(1)", "locks": "torch.zeros(2, dtype=torch.int32)"}
SPIN_LOCK_ARGS = {"x_ptr": "x", "total_ptr": "total", "locks_ptr": "locks", "n": 20, "BLOCK": 8}
CORPUS["spin_lock"] = spec("k", SPIN_LOCK, SPIN_LOCK_IO, SPIN_LOCK_ARGS, "(3,)")
CORPUS["helper_functions"] = spec("add", HELPERS, ADD_IO, ADD_ARGS, ADD_GRID)
if has_block_pointers():  # Triton 3.9 removed them (a block pointer there is an error: tests/test_semantics.py)
    CORPUS["block_pointers"] = spec("k", BLOCK_POINTERS, BLOCK_IO, BLOCK_ARGS, "(3,)")

# name -> (spec, the program id and the tensor its out-of-bounds error names)
BUGS = {
    "unmasked_tail_load": (spec("add", ADD.replace("x = tl.load(x_ptr + offs, mask=mask)", "x = tl.load(x_ptr + offs)"),
                                ADD_IO, ADD_ARGS, ADD_GRID), [3, 0, 0], "x"),
    "load_runs_into_the_next_tensor": (spec("add", ADD.replace("tl.load(x_ptr + offs, mask=mask)",
                                                              "tl.load(x_ptr + offs + n + 8, mask=mask)"),
                                            ADD_IO, ADD_ARGS, ADD_GRID), [0, 0, 0], "x"),
    "unmasked_tail_store": (spec("add", ADD.replace("tl.store(out_ptr + offs, x + y, mask=mask)",
                                                    "tl.store(out_ptr + offs, x + y)"),
                                 ADD_IO, ADD_ARGS, ADD_GRID), [3, 0, 0], "out"),
    "row_past_the_end": (spec("k", CORPUS["softmax_rows"]["source"].replace("import triton\nimport triton.language as tl\n\n", ""),
                              {"x": "torch.randn(6, 10)", "out": "torch.empty(6, 10)"},
                              {"x_ptr": "x", "out_ptr": "out", "N": 10, "stride": "x.stride(0)", "BLOCK": 16},
                              "(7,)"), [6, 0, 0], "x"),
    "atomic_past_the_end": (spec("k", CORPUS["row_sum_2d_grid"]["source"].replace(
        "import triton\nimport triton.language as tl\n\n", "").replace("mask=rows < M)", "mask=rows < M + 4)"),
        {"a": "torch.randn(10, 12)", "out": "torch.zeros(10)"},
        {"a_ptr": "a", "out_ptr": "out", "M": 10, "N": 12, "BM": 4, "BN": 8}, "(3, 2)"), [2, 0, 0], "out"),
    "store_in_a_helper_unmasked": (spec("add", HELPERS.replace("tl.store(p + offs, v, mask=offs < n)",
                                                               "tl.store(p + offs, v)"),
                                        ADD_IO, ADD_ARGS, ADD_GRID), [3, 0, 0], "out"),
    "lock_past_the_end": (spec("k", SPIN_LOCK.replace("tl.program_id(0) % 2", "tl.program_id(0)"), SPIN_LOCK_IO,
                               SPIN_LOCK_ARGS, "(3,)"), [2, 0, 0], "locks"),
}
if has_block_pointers():
    BUGS["block_pointer_unchecked_rows"] = (spec("k", BLOCK_POINTERS.replace("boundary_check=(0, 1)", "boundary_check=(1,)"),
                                                 BLOCK_IO, BLOCK_ARGS, "(3,)"), [2, 0, 0], "a")
