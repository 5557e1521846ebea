"""
Tiled matrix multiplication: a 2-D grid over the output
=======================================================

C = A @ B with A of 128 x 96 and B of 96 x 128. Each program computes one 32 x 32 tile of C, so
the grid is 2-D, (M / BLOCK_M, N / BLOCK_N) = (4, 4): `tl.program_id(0)` picks the tile's rows,
`tl.program_id(1)` its columns.

A tile of C needs a strip of rows of A and a strip of columns of B, too much to load at once on
bigger matrices. So the program walks along K in steps of BLOCK_K: at each step it loads a
BLOCK_M x BLOCK_K tile of A and a BLOCK_K x BLOCK_N tile of B, multiplies them with `tl.dot`,
and adds the product into an accumulator that stays in registers. C is written once, at the end.
The loop `for k in range(0, tl.cdiv(K, BLOCK_K))` runs 3 times here.

In the diagram, select a program: its loads sweep across a row strip of `a` and down a column
strip of `b`, and it stores one tile of `c`. Neighbouring programs load the same strips again;
on a GPU the L2 cache absorbs much of that, and the order in which tiles are assigned to
programs matters for speed.

These sizes keep the interpreter quick. A GPU wants much more: matrices of thousands, tiles of
128 x 128 x 32 or 64 in fp16, num_stages 3 or 4 so loads of the next tiles overlap the `tl.dot`.
On a GPU `tl.dot` on fp32 inputs uses tf32 by default, which rounds the inputs to about three
decimal digits; the error grows with K (up to about 0.04 here). That is why this run compares
with looser tolerances than the others: atol 0.05, rtol 0.01.
"""
# %% The kernel
import triton
import triton.language as tl


@triton.jit
def matmul_kernel(a_ptr,  # pointer to A, M x K
                  b_ptr,  # pointer to B, K x N
                  c_ptr,  # pointer to C, M x N
                  M, N, K,  # the problem's sizes
                  stride_am, stride_ak,  # elements to the next row / column of A
                  stride_bk, stride_bn,  # elements to the next row / column of B
                  stride_cm, stride_cn,  # elements to the next row / column of C
                  BLOCK_M: tl.constexpr,  # rows of C per program
                  BLOCK_N: tl.constexpr,  # columns of C per program
                  BLOCK_K: tl.constexpr,  # depth of each step along K
                  ):
    rows = tl.program_id(axis=0) * BLOCK_M + tl.arange(0, BLOCK_M)
    cols = tl.program_id(axis=1) * BLOCK_N + tl.arange(0, BLOCK_N)
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(0, tl.cdiv(K, BLOCK_K)):
        ks = k * BLOCK_K + tl.arange(0, BLOCK_K)
        a = tl.load(a_ptr + rows[:, None] * stride_am + ks[None, :] * stride_ak,
                    mask=(rows[:, None] < M) & (ks[None, :] < K), other=0.0)
        b = tl.load(b_ptr + ks[:, None] * stride_bk + cols[None, :] * stride_bn,
                    mask=(ks[:, None] < K) & (cols[None, :] < N), other=0.0)
        acc += tl.dot(a, b)
    mask = (rows[:, None] < M) & (cols[None, :] < N)
    tl.store(c_ptr + rows[:, None] * stride_cm + cols[None, :] * stride_cn, acc, mask=mask)


# %% The run spec
RUN = {
    "kernel": "matmul_kernel",
    "inputs": {
        "a": "torch.randn(128, 96)",
        "b": "torch.randn(96, 128)",
        "c": "torch.empty(128, 128)",
    },
    "args": {"a_ptr": "a", "b_ptr": "b", "c_ptr": "c",
             "M": "a.shape[0]", "N": "b.shape[1]", "K": "a.shape[1]",
             "stride_am": "a.stride(0)", "stride_ak": "a.stride(1)",
             "stride_bk": "b.stride(0)", "stride_bn": "b.stride(1)",
             "stride_cm": "c.stride(0)", "stride_cn": "c.stride(1)",
             "BLOCK_M": 32, "BLOCK_N": 32, "BLOCK_K": 32},
    "grid": "(triton.cdiv(M, meta['BLOCK_M']), triton.cdiv(N, meta['BLOCK_N']))",
    "reference": {"c": "a @ b"},
    "options": {"atol": 5e-2, "rtol": 1e-2, "flops": "2 * M * N * K"},
}
