"""
Matrix multiplication
=====================

Compute `c = a @ b` for an M × K matrix `a` and a K × N matrix `b`.

Program (pid_m, pid_n) owns a BM × BN tile of `c`. It walks along K in steps of BK, loading a
BM × BK tile of `a` and a BK × BN tile of `b` each step and adding their product (`tl.dot`) into
an accumulator. Every dimension may be ragged: rows of `a` past M, columns of `b` past N and the
last step's columns of `a` and rows of `b` past K must be masked (loaded as zeros, which add
nothing to a dot product).
"""
# %% Starter
import triton
import triton.language as tl


@triton.jit
def matmul(a_ptr, b_ptr, c_ptr, M, N, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    rows = tl.program_id(0) * BM + tl.arange(0, BM)
    cols = tl.program_id(1) * BN + tl.arange(0, BN)
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k0 in range(0, K, BK):
        ks = k0 + tl.arange(0, BK)
        # Your code: load the tiles of a and b for this step and add their product into acc.
    mask = (rows[:, None] < M) & (cols[None, :] < N)
    tl.store(c_ptr + rows[:, None] * N + cols[None, :], acc, mask=mask)
# %% Solution
import triton
import triton.language as tl


@triton.jit
def matmul(a_ptr, b_ptr, c_ptr, M, N, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    rows = tl.program_id(0) * BM + tl.arange(0, BM)
    cols = tl.program_id(1) * BN + tl.arange(0, BN)
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k0 in range(0, K, BK):
        ks = k0 + tl.arange(0, BK)
        a = tl.load(a_ptr + rows[:, None] * K + ks[None, :], mask=(rows[:, None] < M) & (ks[None, :] < K), other=0.0)
        b = tl.load(b_ptr + ks[:, None] * N + cols[None, :], mask=(ks[:, None] < K) & (cols[None, :] < N), other=0.0)
        acc += tl.dot(a, b, input_precision="ieee")
    mask = (rows[:, None] < M) & (cols[None, :] < N)
    tl.store(c_ptr + rows[:, None] * N + cols[None, :], acc, mask=mask)


# %% The puzzle
PUZZLE = {
    "kernel": "matmul",
    "inputs": {"a": "torch.randn(M, K)", "b": "torch.randn(K, N)", "c": "torch.empty(M, N)"},
    "args": {"a_ptr": "a", "b_ptr": "b", "c_ptr": "c", "M": "M", "N": "N", "K": "K", "BM": 16, "BN": 16, "BK": 16},
    "grid": "(triton.cdiv(M, meta['BM']), triton.cdiv(N, meta['BN']))",
    "reference": {"c": "torch.mm(a, b)"},
    "options": {"atol": 1e-4, "rtol": 1e-4},
    "hints": [
        "Tile (rows, ks) of a is at `rows[:, None] * K + ks[None, :]`; tile (ks, cols) of b at `ks[:, None] * N + cols[None, :]`.",
        "Mask both loads on both of their axes, with `other=0.0`: a zero adds nothing to the product.",
        "`acc += tl.dot(a, b)` multiplies a (BM, BK) tile by a (BK, BN) tile. `input_precision=\"ieee\"` keeps full fp32 on a GPU.",
    ],
    "tests": [{"M": 20, "N": 24, "K": 18}, {"M": 32, "N": 32, "K": 32}, {"M": 17, "N": 40, "K": 9}],
    "hidden": [{"M": 41, "N": 23, "K": 35}],
}
