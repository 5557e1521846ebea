"""
Vector add: one program per block
=================================

Your first kernel: add two vectors of 98,432 numbers. Triton does not start one thread per
element; it starts a grid of *programs*, and each program handles a whole block of
BLOCK_SIZE neighbouring elements at once.

Each program asks which one it is with `tl.program_id(0)`, computes the offsets of its block,
`pid * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)`, loads x and y at those offsets, adds them and
stores the sum. The grid `(triton.cdiv(n, meta['BLOCK_SIZE']),)` launches just enough programs
to cover every element: 98432 / 1024 = 96.125, so 97 programs.

In the diagram, pick a program id and see the block it owns. Look at the last program: only
128 of its 1024 lanes have an element to work on; the mask `offsets < n` switches the other
lanes off, so they neither read nor write memory.

Try: BLOCK_SIZE 256 or 4096 (the number of programs changes, the result does not), or a
BLOCK_SIZE that is not a power of 2.
"""
# %% The kernel
import triton
import triton.language as tl


@triton.jit
def add_kernel(x_ptr,  # pointer to the first input vector
               y_ptr,  # pointer to the second input vector
               out_ptr,  # pointer to the output vector
               n,  # number of elements in each vector
               BLOCK_SIZE: tl.constexpr,  # elements per program; a compile-time constant
               ):
    pid = tl.program_id(axis=0)  # which block this program owns
    offsets = pid * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n  # the last block may hang over the end of the vectors
    x = tl.load(x_ptr + offsets, mask=mask)
    y = tl.load(y_ptr + offsets, mask=mask)
    tl.store(out_ptr + offsets, x + y, mask=mask)


# %% The run spec
RUN = {
    "kernel": "add_kernel",
    "inputs": {
        "x": "torch.randn(98432)",
        "y": "torch.randn(98432)",
        "out": "torch.empty(98432)",
    },
    "args": {"x_ptr": "x", "y_ptr": "y", "out_ptr": "out", "n": "x.numel()", "BLOCK_SIZE": 1024},
    "grid": "(triton.cdiv(n, meta['BLOCK_SIZE']),)",
    "reference": {"out": "x + y"},
}
