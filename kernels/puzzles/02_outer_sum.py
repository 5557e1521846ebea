"""
Outer sum
=========

Given a column vector `x` of M numbers and a row vector `y` of N numbers, fill the M × N
matrix `out` with every pair's sum: element (i, j) is x[i] plus y[j].

The grid is two-dimensional: program (pid_m, pid_n) owns a BM × BN tile of `out`. Load a block
of `x` and a block of `y` (two 1-D blocks), then let broadcasting make the tile: a block of
shape (BM, 1) plus one of shape (1, BN) is a (BM, BN) block. `out` is row-major: element (i, j)
is at offset i * N + j.
"""
# %% Starter
import triton
import triton.language as tl


@triton.jit
def outer_sum(x_ptr, y_ptr, out_ptr, M, N, BM: tl.constexpr, BN: tl.constexpr):
    rows = tl.program_id(0) * BM + tl.arange(0, BM)
    cols = tl.program_id(1) * BN + tl.arange(0, BN)
    x = tl.load(x_ptr + rows, mask=rows < M)
    y = tl.load(y_ptr + cols, mask=cols < N)
    # Your code: the (BM, BN) tile of sums, stored where it belongs in out.
# %% Solution
import triton
import triton.language as tl


@triton.jit
def outer_sum(x_ptr, y_ptr, out_ptr, M, N, BM: tl.constexpr, BN: tl.constexpr):
    rows = tl.program_id(0) * BM + tl.arange(0, BM)
    cols = tl.program_id(1) * BN + tl.arange(0, BN)
    x = tl.load(x_ptr + rows, mask=rows < M)
    y = tl.load(y_ptr + cols, mask=cols < N)
    tile = x[:, None] + y[None, :]
    offsets = rows[:, None] * N + cols[None, :]
    mask = (rows[:, None] < M) & (cols[None, :] < N)
    tl.store(out_ptr + offsets, tile, mask=mask)


# %% The puzzle
PUZZLE = {
    "kernel": "outer_sum",
    "inputs": {"x": "torch.randn(M)", "y": "torch.randn(N)", "out": "torch.empty(M, N)"},
    "args": {"x_ptr": "x", "y_ptr": "y", "out_ptr": "out", "M": "M", "N": "N", "BM": 8, "BN": 8},
    "grid": "(triton.cdiv(M, meta['BM']), triton.cdiv(N, meta['BN']))",
    "reference": {"out": "x[:, None] + y[None, :]"},
    "hints": [
        "`x[:, None]` turns a block of BM values into a (BM, 1) column; `y[None, :]` makes a (1, BN) row.",
        "The offsets of the tile are a (BM, BN) block too: row index times the row length, plus the column.",
        "A tile at the bottom or right edge hangs over: its mask needs both the rows and the columns in range.",
    ],
    "tests": [{"M": 10, "N": 13}, {"M": 8, "N": 8}, {"M": 33, "N": 5}],
    "hidden": [{"M": 29, "N": 47}],
}
