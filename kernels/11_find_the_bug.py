"""
Find the bug: a bias that only half arrives
===========================================

This kernel should add a bias vector to every row of an 8 x 24 matrix, one program per row,
like `x + bias`. It compiles, it runs, it never touches memory outside the tensors, and the
check still fails. Your task is to find out why and fix it.

Start from the result, not the code. The check tells you how many elements of `out` are wrong
and how many were never written at all. Then open the diagram and pick a program: which columns
of its row does it store, and which lanes are drawn as masked off? Do the other programs stop
at the same place? Compare that place with the shapes of the inputs.

Once you have a guess, find the one line that decides which lanes are active, fix it, and run
again until the check passes. Then ask yourself what this bug would have done to a matrix with
more rows than columns.
"""
# %% The kernel
import triton
import triton.language as tl


@triton.jit
def add_bias_kernel(x_ptr,  # pointer to the input matrix, M x N
                    bias_ptr,  # pointer to the bias, N
                    out_ptr,  # pointer to the output matrix, M x N
                    M,  # number of rows
                    N,  # number of columns
                    stride_row,  # elements between two rows of x (and of out)
                    BLOCK_N: tl.constexpr,  # lanes per row: N rounded up to a power of 2
                    ):
    row = tl.program_id(axis=0)  # one program per row
    cols = tl.arange(0, BLOCK_N)
    mask = cols < M
    x = tl.load(x_ptr + row * stride_row + cols, mask=mask)
    bias = tl.load(bias_ptr + cols, mask=mask)
    tl.store(out_ptr + row * stride_row + cols, x + bias, mask=mask)


# %% The run spec
RUN = {
    "kernel": "add_bias_kernel",
    "inputs": {
        "x": "torch.randn(8, 24)",
        "bias": "torch.randn(24)",
        "out": "torch.empty(8, 24)",
    },
    "args": {"x_ptr": "x", "bias_ptr": "bias", "out_ptr": "out", "M": "x.shape[0]", "N": "x.shape[1]",
             "stride_row": "x.stride(0)", "BLOCK_N": "triton.next_power_of_2(x.shape[1])"},
    "grid": "(x.shape[0],)",
    "reference": {"out": "x + bias"},
}
