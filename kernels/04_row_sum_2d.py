"""
Row sum on a 2-D grid: programs share a row
===========================================

The same row sum as before, but now the work is cut both ways: a grid of (row blocks, column
blocks). Each program owns a BLOCK_M x BLOCK_N tile of the 6 x 16 matrix, here 2 rows by 8
columns, so the grid is (3, 2) and every program sums two half rows.

A program finds its tile from two ids, `tl.program_id(0)` for the rows and `tl.program_id(1)` for
the columns. Offsets are now 2-D: `rows[:, None]` is a column of row numbers, `cols[None, :]`
a row of column numbers, and adding them broadcasts to a full tile of offsets.

Splitting a row between programs raises a question a one-program-per-row kernel never had: who
adds the halves together? Programs cannot wait for each other, so each one adds its partial sums
into the output with `tl.atomic_add`, which makes every read-add-write indivisible. The output
therefore has to start at zero: it is made with `torch.zeros`, not `torch.empty`.

In the diagram, the two programs with the same first id write to the same elements of `out`
(drawn as atomics). Try N = 20: the masks on both axes keep the last column block in bounds.
Try BLOCK_N = 16, and the grid falls back to one program per row block.
"""
# %% The kernel
import triton
import triton.language as tl


@triton.jit
def row_sum_2d_kernel(a_ptr,  # pointer to the input matrix, M x N
                      out_ptr,  # pointer to the output vector, M; must start at zero
                      M,  # number of rows
                      N,  # number of columns
                      stride_row,  # elements between the starts of two rows of a
                      BLOCK_M: tl.constexpr,  # rows per program
                      BLOCK_N: tl.constexpr,  # columns per program
                      ):
    rows = tl.program_id(axis=0) * BLOCK_M + tl.arange(0, BLOCK_M)
    cols = tl.program_id(axis=1) * BLOCK_N + tl.arange(0, BLOCK_N)
    mask = (rows[:, None] < M) & (cols[None, :] < N)  # a BLOCK_M x BLOCK_N tile of booleans
    tile = tl.load(a_ptr + rows[:, None] * stride_row + cols[None, :], mask=mask, other=0.0)
    partial = tl.sum(tile, axis=1)  # this program's share of each of its rows
    tl.atomic_add(out_ptr + rows, partial, mask=rows < M)


# %% The run spec
RUN = {
    "kernel": "row_sum_2d_kernel",
    "inputs": {
        "a": "torch.randn(6, 16)",
        "out": "torch.zeros(6)",
    },
    "args": {"a_ptr": "a", "out_ptr": "out", "M": "a.shape[0]", "N": "a.shape[1]",
             "stride_row": "a.stride(0)", "BLOCK_M": 2, "BLOCK_N": 8},
    "grid": "(triton.cdiv(M, meta['BLOCK_M']), triton.cdiv(N, meta['BLOCK_N']))",
    "reference": {"out": "a.sum(dim=1)"},
}
