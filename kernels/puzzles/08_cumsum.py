"""
Running sum of each row
=======================

Write the running (prefix) sums of each row of `x` into `out`: element (i, j) of `out` is the sum
of x[i, 0] through x[i, j].

One program per row, its row in one block. A scan is a reduction that keeps every partial
result: `tl.cumsum` gives a block of the same shape whose lane j holds the sum of lanes 0..j.
"""
# %% Starter
import triton
import triton.language as tl


@triton.jit
def row_cumsum(x_ptr, out_ptr, N, BLOCK_N: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK_N)
    mask = cols < N
    x = tl.load(x_ptr + row * N + cols, mask=mask, other=0.0)
    tl.store(out_ptr + row * N + cols, x, mask=mask)  # Your code: store the running sums, not x
# %% Solution
import triton
import triton.language as tl


@triton.jit
def row_cumsum(x_ptr, out_ptr, N, BLOCK_N: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK_N)
    mask = cols < N
    x = tl.load(x_ptr + row * N + cols, mask=mask, other=0.0)
    tl.store(out_ptr + row * N + cols, tl.cumsum(x, axis=0), mask=mask)


# %% The puzzle
PUZZLE = {
    "kernel": "row_cumsum",
    "inputs": {"x": "torch.randn(M, N)", "out": "torch.empty(M, N)"},
    "args": {"x_ptr": "x", "out_ptr": "out", "N": "N", "BLOCK_N": "triton.next_power_of_2(N)"},
    "grid": "(M,)",
    "reference": {"out": "x.cumsum(dim=1)"},
    "options": {"atol": 1e-5, "rtol": 1e-5},
    "hints": [
        "`tl.cumsum(block, axis=0)` is the scan you need.",
        "The masked lanes load 0.0, so they add nothing to the lanes after them (there are none: they are at the end).",
    ],
    "tests": [{"M": 4, "N": 10}, {"M": 2, "N": 32}, {"M": 3, "N": 50}],
    "hidden": [{"M": 5, "N": 131}],
}
