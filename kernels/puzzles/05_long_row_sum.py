"""
Long rows: sum in a loop
========================

Sum each row of `x` (M rows of N numbers) into `out`, when a row is too long for one block.

One program per row again, but now a block holds only BLOCK = 16 lanes: walk along the row in
steps of BLOCK, adding each chunk into an accumulator, and store the total once at the end. The
last chunk of a row may be partial. The last test's rows are 2,500 numbers long: one block of any
sensible size does not hold them.
"""
# %% Starter
import triton
import triton.language as tl


@triton.jit
def long_row_sum(x_ptr, out_ptr, N, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    acc = tl.zeros((BLOCK,), dtype=tl.float32)
    for start in range(0, N, BLOCK):
        cols = start + tl.arange(0, BLOCK)
        # Your code: add this chunk of the row into acc.
    tl.store(out_ptr + row, tl.sum(acc, axis=0))
# %% Solution
import triton
import triton.language as tl


@triton.jit
def long_row_sum(x_ptr, out_ptr, N, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    acc = tl.zeros((BLOCK,), dtype=tl.float32)
    for start in range(0, N, BLOCK):
        cols = start + tl.arange(0, BLOCK)
        acc += tl.load(x_ptr + row * N + cols, mask=cols < N, other=0.0)
    tl.store(out_ptr + row, tl.sum(acc, axis=0))


# %% The puzzle
PUZZLE = {
    "kernel": "long_row_sum",
    "inputs": {"x": "torch.randn(M, N)", "out": "torch.empty(M)"},
    "args": {"x_ptr": "x", "out_ptr": "out", "N": "N", "BLOCK": 16},
    "grid": "(M,)",
    "reference": {"out": "x.sum(dim=1)"},
    "options": {"atol": 1e-3, "rtol": 1e-4},  # 3,001 floats summed in another order than torch's
    "hints": [
        "The loop body is Python syntax but runs inside the kernel: `acc += block` adds lane by lane.",
        "Row `row` starts at `row * N`; this chunk's elements are at `row * N + cols`.",
        "The last chunk runs past N: mask it, with `other=0.0` so the extra lanes add nothing.",
    ],
    "tests": [{"M": 4, "N": 100}, {"M": 3, "N": 16}, {"M": 5, "N": 250}, {"M": 2, "N": 2500}],
    "hidden": [{"M": 7, "N": 3001}],
}
