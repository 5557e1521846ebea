"""
Masks: the last block hangs over the edge
=========================================

Ten elements in blocks of four: programs 0 and 1 get four elements each, program 2 gets the last
two. Yet every program runs the same code on a full block of four lanes, so program 2 computes
offsets 8, 9, 10 and 11, and offsets 10 and 11 are past the end of the vectors.

The mask `offsets < n` is a block of booleans, one per lane: True where the offset is inside the
vector. `tl.load` and `tl.store` skip the lanes where it is False. In the diagram, select
program 2: two lanes are stored, two are drawn as masked off. Delete the mask from the store and
run again to see what the playground says about writing past the end.

Why not blocks of three, which would fit ten elements more snugly? `tl.arange(0, BLOCK_SIZE)`
only accepts sizes that are powers of 2 (1, 2, 4, 8, ...): Triton spreads a block evenly over
the threads of a program, and that needs power-of-2 sizes. The usual answer is the one here: round the block up to a power of 2 and
mask the lanes you do not need. Try BLOCK_SIZE 3 to read the error Triton gives.

The grid here is written as a function of `meta`, the dictionary of the kernel's arguments, the
same way you would pass it to `add_kernel[grid](...)` in your own code.
"""
# %% The kernel
import triton
import triton.language as tl


@triton.jit
def add_kernel(x_ptr,  # pointer to the first input vector
               y_ptr,  # pointer to the second input vector
               out_ptr,  # pointer to the output vector
               n,  # number of elements in each vector
               BLOCK_SIZE: tl.constexpr,  # lanes per program; must be a power of 2
               ):
    pid = tl.program_id(axis=0)
    offsets = pid * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n  # False for the lanes that fall past the end
    x = tl.load(x_ptr + offsets, mask=mask)
    y = tl.load(y_ptr + offsets, mask=mask)
    tl.store(out_ptr + offsets, x + y, mask=mask)


# %% The run spec
RUN = {
    "kernel": "add_kernel",
    "inputs": {
        "x": "torch.randn(10)",
        "y": "torch.randn(10)",
        "out": "torch.empty(10)",
    },
    "args": {"x_ptr": "x", "y_ptr": "y", "out_ptr": "out", "n": "x.numel()", "BLOCK_SIZE": 4},
    "grid": "lambda meta: (triton.cdiv(n, meta['BLOCK_SIZE']),)",
    "reference": {"out": "x + y"},
}
