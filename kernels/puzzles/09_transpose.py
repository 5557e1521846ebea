"""
Transpose
=========

Write the transpose of the M × N matrix `x` into the N × M matrix `out`: element (i, j) of `x`
goes to (j, i) of `out`.

Program (pid_m, pid_n) loads a BM × BN tile of `x` and stores it, turned, as a BN × BM tile of
`out`. Both are row-major, but with different row lengths: `x`'s rows are N long, `out`'s are M
long. Tiles on the edges hang over: mask them on both axes.
"""
# %% Starter
import triton
import triton.language as tl


@triton.jit
def transpose(x_ptr, out_ptr, M, N, BM: tl.constexpr, BN: tl.constexpr):
    rows = tl.program_id(0) * BM + tl.arange(0, BM)
    cols = tl.program_id(1) * BN + tl.arange(0, BN)
    mask = (rows[:, None] < M) & (cols[None, :] < N)
    tile = tl.load(x_ptr + rows[:, None] * N + cols[None, :], mask=mask)
    # Your code: store the tile at its transposed place in out.
# %% Solution
import triton
import triton.language as tl


@triton.jit
def transpose(x_ptr, out_ptr, M, N, BM: tl.constexpr, BN: tl.constexpr):
    rows = tl.program_id(0) * BM + tl.arange(0, BM)
    cols = tl.program_id(1) * BN + tl.arange(0, BN)
    mask = (rows[:, None] < M) & (cols[None, :] < N)
    tile = tl.load(x_ptr + rows[:, None] * N + cols[None, :], mask=mask)
    tl.store(out_ptr + cols[None, :] * M + rows[:, None], tile, mask=mask)


# %% The puzzle
PUZZLE = {
    "kernel": "transpose",
    "inputs": {"x": "torch.randn(M, N)", "out": "torch.empty(N, M)"},
    "args": {"x_ptr": "x", "out_ptr": "out", "M": "M", "N": "N", "BM": 8, "BN": 8},
    "grid": "(triton.cdiv(M, meta['BM']), triton.cdiv(N, meta['BN']))",
    "reference": {"out": "x.t()"},
    "hints": [
        "Element (i, j) of x lands at (j, i) of out, whose offset is j * M + i.",
        "You need not turn the tile itself: compute its destination offsets with rows and columns swapped.",
        "The load's mask is the store's mask: the same lanes are real.",
    ],
    "tests": [{"M": 10, "N": 12}, {"M": 16, "N": 16}, {"M": 5, "N": 33}],
    "hidden": [{"M": 37, "N": 19}],
}
