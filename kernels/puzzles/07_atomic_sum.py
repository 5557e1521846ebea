"""
Sum a vector with atomics
=========================

Add up all N numbers of `x` into the single number `out[0]` (`out` starts at zero).

Each program sums its own block of BLOCK elements, then has to combine its partial sum with the
others'. Programs run in any order and at the same time, so a plain store from each program
keeps only one of the partial sums: the others are lost. An atomic add reads, adds and writes
as one step that no other program can split.
"""
# %% Starter
import triton
import triton.language as tl


@triton.jit
def vector_sum(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offsets, mask=offsets < n, other=0.0)
    partial = tl.sum(x, axis=0)
    tl.store(out_ptr, partial)  # Your code: every program writes here; only one survives
# %% Solution
import triton
import triton.language as tl


@triton.jit
def vector_sum(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offsets, mask=offsets < n, other=0.0)
    partial = tl.sum(x, axis=0)
    tl.atomic_add(out_ptr, partial)


# %% The puzzle
PUZZLE = {
    "kernel": "vector_sum",
    "inputs": {"x": "torch.randn(N)", "out": "torch.zeros(1)"},
    "args": {"x_ptr": "x", "out_ptr": "out", "n": "N", "BLOCK": 32},
    "grid": "(triton.cdiv(n, meta['BLOCK']),)",
    "reference": {"out": "x.sum().reshape(1)"},
    "options": {"atol": 1e-4, "rtol": 1e-4},
    "hints": [
        "In the diagram, every program stores to the same element: that is a race.",
        "`tl.atomic_add(pointer, value)` adds `value` to what is at `pointer`, as one indivisible step.",
    ],
    "tests": [{"N": 100}, {"N": 64}, {"N": 1000}],
    "hidden": [{"N": 2049}],
}
