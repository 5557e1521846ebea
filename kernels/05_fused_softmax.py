"""
Fused softmax: a whole row in one program
=========================================

Softmax of each row of a 64 x 100 matrix: subtract the row's maximum (so `exp` cannot
overflow), exponentiate, divide by the sum. In PyTorch that is several operations, each reading
and writing the whole matrix. Here one program loads its row once, does all the steps on values
it keeps in registers, and writes the result once: the operations are *fused*.

The row fits in one block of 128 lanes (100 rounded up to a power of 2). The 28 padding lanes
load `-inf`, not 0: `exp(-inf)` is 0, so they change neither the maximum nor the sum. On the GPU
the run's timings show the fused kernel against `torch.softmax`; the bytes moved are one read
and one write of the matrix.

In the diagram every program owns one row of `x` and the same row of `out`. Try: `other=0.0` in
the load (the padding lanes then count in every row's sum), or wider rows (past a few thousand
columns a row no longer fits comfortably in one program).
"""
# %% The kernel
import triton
import triton.language as tl


@triton.jit
def softmax_kernel(x_ptr,  # pointer to the input matrix, M x N
                   out_ptr,  # pointer to the output matrix, M x N
                   N,  # number of columns
                   stride_x,  # elements between two rows of x
                   stride_out,  # elements between two rows of out
                   BLOCK_N: tl.constexpr,  # lanes per row: N rounded up to a power of 2
                   ):
    row = tl.program_id(axis=0)  # one program per row
    cols = tl.arange(0, BLOCK_N)
    mask = cols < N
    x = tl.load(x_ptr + row * stride_x + cols, mask=mask, other=-float("inf"))
    x = x - tl.max(x, axis=0)  # the largest value becomes 0, so exp() stays <= 1
    numerator = tl.exp(x)
    softmax = numerator / tl.sum(numerator, axis=0)
    tl.store(out_ptr + row * stride_out + cols, softmax, mask=mask)


# %% The run spec
RUN = {
    "kernel": "softmax_kernel",
    "inputs": {
        "x": "torch.randn(64, 100)",
        "out": "torch.empty(64, 100)",
    },
    "args": {"x_ptr": "x", "out_ptr": "out", "N": "x.shape[1]", "stride_x": "x.stride(0)",
             "stride_out": "out.stride(0)", "BLOCK_N": "triton.next_power_of_2(x.shape[1])"},
    "grid": "(x.shape[0],)",
    "reference": {"out": "torch.softmax(x, dim=1)"},
}
