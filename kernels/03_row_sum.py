"""
Row sum: one program per row
============================

Sum each row of a 6 x 20 matrix, like `a.sum(dim=1)`, with a grid of `(M,)`: six programs, and
program i sums row i. This is the simplest way to split a 2-D problem: give each program a
slice of the data that it can finish on its own.

A kernel receives a pointer to the matrix's first element, not the matrix. Row i starts
`i * stride_row` elements further on (for a contiguous matrix the stride is the row length,
20). The program loads its whole row in one block, reduces it with `tl.sum` and stores one
number.

The block has to be a power of 2, so it is 32 lanes for a row of 20: BLOCK_N is computed in the
run spec as `triton.next_power_of_2(a.shape[1])`, and the mask `cols < N` switches the last 12
lanes off. Masked loads give `other=0.0`, which adds nothing to the sum. In the diagram, each
program's loads cover one row of `a` and its store one element of `out`.

Try: a wider matrix (the block grows with it, up to what fits in a program's registers), or
`other=1.0` in the load: every row's sum then grows by 12, one for each padding lane.
"""
# %% The kernel
import triton
import triton.language as tl


@triton.jit
def row_sum_kernel(a_ptr,  # pointer to the input matrix, M x N
                   out_ptr,  # pointer to the output vector, M
                   N,  # number of columns
                   stride_row,  # elements between the starts of two rows of a
                   BLOCK_N: tl.constexpr,  # lanes per row: N rounded up to a power of 2
                   ):
    row = tl.program_id(axis=0)  # one program per row
    cols = tl.arange(0, BLOCK_N)
    values = tl.load(a_ptr + row * stride_row + cols, mask=cols < N, other=0.0)
    tl.store(out_ptr + row, tl.sum(values, axis=0))


# %% The run spec
RUN = {
    "kernel": "row_sum_kernel",
    "inputs": {
        "a": "torch.randn(6, 20)",
        "out": "torch.empty(6)",
    },
    "args": {"a_ptr": "a", "out_ptr": "out", "N": "a.shape[1]", "stride_row": "a.stride(0)",
             "BLOCK_N": "triton.next_power_of_2(a.shape[1])"},
    "grid": "(a.shape[0],)",
    "reference": {"out": "a.sum(dim=1)"},
}
