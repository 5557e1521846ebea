"""
Quantised matmul (int8 weights)
===============================

Multiply activations `a` (M × K, float32) by weights stored as 8-bit integers: `w` is K × N of
int8 and `scale` holds one float32 per column, so the real weight (k, n) is w[k, n] * scale[n].
Compute `out = a @ (w * scale)` without ever writing the float32 weights to memory.

This is the matmul of the previous puzzle with a twist: the tile of `w` arrives as int8 and must
be converted to float32 before `tl.dot`. The scale is the same for a whole column, so it can be
applied once to the accumulated tile, after the K loop, instead of to every weight.
"""
# %% Starter
import triton
import triton.language as tl


@triton.jit
def int8_matmul(a_ptr, w_ptr, scale_ptr, out_ptr, M, N, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    rows = tl.program_id(0) * BM + tl.arange(0, BM)
    cols = tl.program_id(1) * BN + tl.arange(0, BN)
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k0 in range(0, K, BK):
        ks = k0 + tl.arange(0, BK)
        a = tl.load(a_ptr + rows[:, None] * K + ks[None, :], mask=(rows[:, None] < M) & (ks[None, :] < K), other=0.0)
        w = tl.load(w_ptr + ks[:, None] * N + cols[None, :], mask=(ks[:, None] < K) & (cols[None, :] < N), other=0)
        acc += tl.dot(a, w.to(tl.float32), input_precision="ieee")
    # Your code: apply each column's scale before storing.
    mask = (rows[:, None] < M) & (cols[None, :] < N)
    tl.store(out_ptr + rows[:, None] * N + cols[None, :], acc, mask=mask)
# %% Solution
import triton
import triton.language as tl


@triton.jit
def int8_matmul(a_ptr, w_ptr, scale_ptr, out_ptr, M, N, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    rows = tl.program_id(0) * BM + tl.arange(0, BM)
    cols = tl.program_id(1) * BN + tl.arange(0, BN)
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k0 in range(0, K, BK):
        ks = k0 + tl.arange(0, BK)
        a = tl.load(a_ptr + rows[:, None] * K + ks[None, :], mask=(rows[:, None] < M) & (ks[None, :] < K), other=0.0)
        w = tl.load(w_ptr + ks[:, None] * N + cols[None, :], mask=(ks[:, None] < K) & (cols[None, :] < N), other=0)
        acc += tl.dot(a, w.to(tl.float32), input_precision="ieee")
    scale = tl.load(scale_ptr + cols, mask=cols < N, other=0.0)
    acc = acc * scale[None, :]
    mask = (rows[:, None] < M) & (cols[None, :] < N)
    tl.store(out_ptr + rows[:, None] * N + cols[None, :], acc, mask=mask)


# %% The puzzle
PUZZLE = {
    "kernel": "int8_matmul",
    "inputs": {"a": "torch.randn(M, K)", "w": "torch.randint(-127, 128, (K, N), dtype=torch.int8)",
               "scale": "torch.rand(N) / 64", "out": "torch.empty(M, N)"},
    "args": {"a_ptr": "a", "w_ptr": "w", "scale_ptr": "scale", "out_ptr": "out", "M": "M", "N": "N", "K": "K",
             "BM": 16, "BN": 16, "BK": 16},
    "grid": "(triton.cdiv(M, meta['BM']), triton.cdiv(N, meta['BN']))",
    "reference": {"out": "a @ (w.float() * scale)"},
    "options": {"atol": 1e-4, "rtol": 1e-4},
    "hints": [
        "Load this program's BN scales with the column mask: `tl.load(scale_ptr + cols, mask=cols < N, other=0.0)`.",
        "A (BN,) block as a row is `scale[None, :]`; multiplying the (BM, BN) accumulator by it scales each column.",
    ],
    "tests": [{"M": 20, "N": 24, "K": 40}, {"M": 32, "N": 16, "K": 32}, {"M": 9, "N": 33, "K": 20}],
    "hidden": [{"M": 27, "N": 45, "K": 52}],
}
