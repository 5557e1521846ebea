"""
Constant add
============

Add ten to every element of a vector `x` and write the sums to `out`.

The launch starts `cdiv(n, BLOCK)` programs. Program `pid` owns the elements
`pid * BLOCK ... pid * BLOCK + BLOCK - 1`. The first test has n = 20 and BLOCK = 8: three
programs, and the last one has only four real elements; its other four lanes must neither read
nor write memory.
"""
# %% Starter
import triton
import triton.language as tl


@triton.jit
def add_ten(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offsets = pid * BLOCK + tl.arange(0, BLOCK)
    # Your code: load x at `offsets`, add 10, store the result in out.
# %% Solution
import triton
import triton.language as tl


@triton.jit
def add_ten(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offsets = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    x = tl.load(x_ptr + offsets, mask=mask)
    tl.store(out_ptr + offsets, x + 10.0, mask=mask)


# %% The puzzle
PUZZLE = {
    "kernel": "add_ten",
    "inputs": {"x": "torch.randn(N)", "out": "torch.empty(N)"},
    "args": {"x_ptr": "x", "out_ptr": "out", "n": "N", "BLOCK": 8},
    "grid": "(triton.cdiv(n, meta['BLOCK']),)",
    "reference": {"out": "x + 10.0"},
    "hints": [
        "A pointer plus a block of offsets is a block of pointers: `x_ptr + offsets`.",
        "`tl.load(pointers)` reads a whole block; `tl.store(pointers, values)` writes one.",
        "The last program's block runs past the end: pass `mask=offsets < n` to both the load and the store.",
    ],
    "tests": [{"N": 20}, {"N": 8}, {"N": 333}],
    "hidden": [{"N": 1}, {"N": 1531}],
}
