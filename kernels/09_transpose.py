"""
Transpose: the same tile, read by rows, written by columns
==========================================================

`out = x.T` for a 40 x 72 matrix, with a 2-D grid of 16 x 16 tiles: (3, 5) programs. Each
program loads one tile of `x` and stores it into `out` with the roles of rows and columns
swapped. Nothing is computed; the whole kernel is addressing.

The idea to take away is strides. Element (i, j) of a matrix lives at `i * stride_row +
j * stride_col` from its first element. The load uses x's strides with (rows, cols); the store
uses out's strides with (cols, rows), which puts x[i, j] at out[j, i]. Passing strides instead
of assuming a contiguous layout is also what lets a kernel accept views such as slices or
`x.T` itself.

40 and 72 are not multiples of 16, so the tiles on the bottom and right edges are partly masked:
the same 2-D mask guards the load and the store. In the diagram, a program's loads form a square
of consecutive rows of `x`, and its stores land as a square of `out` in the mirrored position.
On a GPU the reads walk along rows (fast) and the writes jump a whole row of `out` between
neighbouring elements; optimised transposes stage the tile so both sides are contiguous.

Try: BLOCK_M = 32, or a non-square tile.
"""
# %% The kernel
import triton
import triton.language as tl


@triton.jit
def transpose_kernel(x_ptr,  # pointer to the input matrix, M x N
                     out_ptr,  # pointer to the output matrix, N x M
                     M,  # rows of x
                     N,  # columns of x
                     stride_xm, stride_xn,  # elements to the next row / column of x
                     stride_om, stride_on,  # elements to the next row / column of out
                     BLOCK_M: tl.constexpr,  # rows of x per program
                     BLOCK_N: tl.constexpr,  # columns of x per program
                     ):
    rows = tl.program_id(axis=0) * BLOCK_M + tl.arange(0, BLOCK_M)
    cols = tl.program_id(axis=1) * BLOCK_N + tl.arange(0, BLOCK_N)
    mask = (rows[:, None] < M) & (cols[None, :] < N)
    tile = tl.load(x_ptr + rows[:, None] * stride_xm + cols[None, :] * stride_xn, mask=mask)
    # x[i, j] goes to out[j, i]: the column index picks out's row, the row index its column.
    tl.store(out_ptr + cols[None, :] * stride_om + rows[:, None] * stride_on, tile, mask=mask)


# %% The run spec
RUN = {
    "kernel": "transpose_kernel",
    "inputs": {
        "x": "torch.randn(40, 72)",
        "out": "torch.empty(72, 40)",
    },
    "args": {"x_ptr": "x", "out_ptr": "out", "M": "x.shape[0]", "N": "x.shape[1]",
             "stride_xm": "x.stride(0)", "stride_xn": "x.stride(1)",
             "stride_om": "out.stride(0)", "stride_on": "out.stride(1)",
             "BLOCK_M": 16, "BLOCK_N": 16},
    "grid": "(triton.cdiv(M, meta['BLOCK_M']), triton.cdiv(N, meta['BLOCK_N']))",
    "reference": {"out": "x.T"},
}
