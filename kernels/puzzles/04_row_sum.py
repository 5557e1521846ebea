"""
Row sum
=======

Sum each row of the M × N matrix `x` into `out`, a vector of M numbers.

One program per row, each loading its whole row as one block of BLOCK_N lanes (a power of 2 at
or above N) and reducing it to one number. The lanes past N are masked off: what they hold must
not count in the sum.
"""
# %% Starter
import triton
import triton.language as tl


@triton.jit
def row_sum(x_ptr, out_ptr, N, BLOCK_N: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK_N)
    x = tl.load(x_ptr + row * N + cols, mask=cols < N)
    # Your code: reduce the row and store one number in out.
# %% Solution
import triton
import triton.language as tl


@triton.jit
def row_sum(x_ptr, out_ptr, N, BLOCK_N: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK_N)
    x = tl.load(x_ptr + row * N + cols, mask=cols < N, other=0.0)
    tl.store(out_ptr + row, tl.sum(x, axis=0))


# %% The puzzle
PUZZLE = {
    "kernel": "row_sum",
    "inputs": {"x": "torch.randn(M, N)", "out": "torch.empty(M)"},
    "args": {"x_ptr": "x", "out_ptr": "out", "N": "N", "BLOCK_N": "triton.next_power_of_2(N)"},
    "grid": "(M,)",
    "reference": {"out": "x.sum(dim=1)"},
    "hints": [
        "`tl.sum(block, axis=0)` reduces a 1-D block to a single number.",
        "A masked-off lane of a load holds garbage unless you say what it holds: `other=0.0` makes it add nothing.",
        "One number per program: `tl.store(out_ptr + row, total)`.",
    ],
    "tests": [{"M": 6, "N": 10}, {"M": 3, "N": 64}, {"M": 9, "N": 37}],
    "hidden": [{"M": 11, "N": 203}],
}
