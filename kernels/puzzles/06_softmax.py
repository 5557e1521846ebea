"""
Fused softmax
=============

Write the softmax of each row of `x` into `out`: subtract the row's maximum, exponentiate,
divide by the sum of the exponentials. One kernel, one read of `x` and one write of `out`
(three separate PyTorch operations would read and write the matrix three times).

One program per row, the row in one block of BLOCK_N lanes. Lanes past N must not change the
maximum or the sum: load them as minus infinity, whose exponential is 0.

`SPREAD` scales the inputs. The last test's rows reach the hundreds, and float32 overflows past
`exp(88.7)`: there the maximum's subtraction is what keeps the answer finite.
"""
# %% Starter
import triton
import triton.language as tl


@triton.jit
def softmax(x_ptr, out_ptr, N, BLOCK_N: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK_N)
    mask = cols < N
    x = tl.load(x_ptr + row * N + cols, mask=mask, other=-float("inf"))
    # Your code: the numerically stable softmax of x, stored in out's row.
# %% Solution
import triton
import triton.language as tl


@triton.jit
def softmax(x_ptr, out_ptr, N, BLOCK_N: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK_N)
    mask = cols < N
    x = tl.load(x_ptr + row * N + cols, mask=mask, other=-float("inf"))
    z = x - tl.max(x, axis=0)
    e = tl.exp(z)
    tl.store(out_ptr + row * N + cols, e / tl.sum(e, axis=0), mask=mask)


# %% The puzzle
PUZZLE = {
    "kernel": "softmax",
    "inputs": {"x": "torch.randn(M, N) * SPREAD", "out": "torch.empty(M, N)"},
    "args": {"x_ptr": "x", "out_ptr": "out", "N": "N", "BLOCK_N": "triton.next_power_of_2(N)"},
    "grid": "(M,)",
    "reference": {"out": "torch.softmax(x, dim=1)"},
    "hints": [
        "`tl.max(x, axis=0)` and `tl.sum(e, axis=0)` reduce the block to one number each.",
        "Subtracting the maximum first keeps `tl.exp` from overflowing; the result is the same.",
        "Store only the N real lanes: the same mask as the load.",
    ],
    "tests": [{"M": 5, "N": 10, "SPREAD": 3}, {"M": 4, "N": 32, "SPREAD": 3}, {"M": 3, "N": 77, "SPREAD": 100}],
    "hidden": [{"M": 6, "N": 301, "SPREAD": 100}],
}
