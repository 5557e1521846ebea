"""
Scale each row
==============

Multiply row i of the M × N matrix `x` by the number `s[i]`, writing `out`.

One program per row: program i reads its row of `x` as one block of BLOCK_N lanes (the next
power of 2 at or above N, so most rows leave lanes over), and its scale `s[i]`, a single
number. Rows are `stride_m` elements apart: use the stride, not N, to find where a row starts.
In the last test `x` and `out` are the first N columns of wider matrices (rows `STRIDE` apart).
"""
# %% Starter
import triton
import triton.language as tl


@triton.jit
def scale_rows(x_ptr, s_ptr, out_ptr, N, stride_m, BLOCK_N: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK_N)
    x = tl.load(x_ptr + row * stride_m + cols)
    # Your code: load this row's scale and store the scaled row in out.
# %% Solution
import triton
import triton.language as tl


@triton.jit
def scale_rows(x_ptr, s_ptr, out_ptr, N, stride_m, BLOCK_N: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK_N)
    mask = cols < N
    x = tl.load(x_ptr + row * stride_m + cols, mask=mask)
    s = tl.load(s_ptr + row)
    tl.store(out_ptr + row * stride_m + cols, x * s, mask=mask)


# %% The puzzle
PUZZLE = {
    "kernel": "scale_rows",
    "inputs": {"x": "torch.randn(M, STRIDE)[:, :N]", "s": "torch.randn(M)", "out": "torch.empty(M, STRIDE)[:, :N]"},
    "args": {"x_ptr": "x", "s_ptr": "s", "out_ptr": "out", "N": "N", "stride_m": "x.stride(0)",
             "BLOCK_N": "triton.next_power_of_2(N)"},
    "grid": "(M,)",
    "reference": {"out": "x * s[:, None]"},
    "hints": [
        "`tl.load(s_ptr + row)` with a scalar pointer loads one number; a block times a number scales every lane.",
        "The starter's load reads past the end of a row when N is not a power of 2: it needs `mask=cols < N`.",
        "Store with the same offsets and the same mask as the load.",
    ],
    "tests": [{"M": 5, "N": 10, "STRIDE": 10}, {"M": 4, "N": 16, "STRIDE": 16}, {"M": 7, "N": 37, "STRIDE": 48}],
    "hidden": [{"M": 13, "N": 129, "STRIDE": 131}],
}
