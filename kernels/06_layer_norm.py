"""
Layer norm: statistics of a row, then a scale and a shift
=========================================================

Layer normalisation rescales each row to mean 0 and variance 1, then applies a learned weight
and bias per column: `y = (x - mean) / sqrt(var + eps) * w + b`. One program per row of a
32 x 200 matrix computes the row's mean and variance and writes the normalised row: `x` is read
once and `y` written once, and the statistics never leave the program.

The lesson is in the padding lanes. The row has 200 columns in a block of 256, and masked loads
fill the extra 56 lanes with 0. That is harmless for the sum that gives the mean, but after
subtracting the mean those lanes hold `-mean`, which would add to the variance. `tl.where(mask,
x - mean, 0.0)` zeroes them again before squaring. Divide by N, not BLOCK_N: the padding lanes
are not part of the row.

Look at the diagram: `w` and `b` are loaded by every program, the whole vector each time, while
each row of `x` and `y` belongs to one program. Try: remove the `tl.where` and see the check
fail, or rows of 256 columns, where the mask has nothing left to do.
"""
# %% The kernel
import triton
import triton.language as tl


@triton.jit
def layer_norm_kernel(x_ptr,  # pointer to the input matrix, M x N
                      y_ptr,  # pointer to the output matrix, M x N
                      w_ptr,  # pointer to the weights, N
                      b_ptr,  # pointer to the biases, N
                      N,  # number of columns
                      stride_row,  # elements between two rows of x (and of y)
                      eps,  # added to the variance, so we never divide by zero
                      BLOCK_N: tl.constexpr,  # lanes per row: N rounded up to a power of 2
                      ):
    row = tl.program_id(axis=0)  # one program per row
    cols = tl.arange(0, BLOCK_N)
    mask = cols < N
    x = tl.load(x_ptr + row * stride_row + cols, mask=mask, other=0.0)
    mean = tl.sum(x, axis=0) / N
    centered = tl.where(mask, x - mean, 0.0)  # padding lanes must not count in the variance
    var = tl.sum(centered * centered, axis=0) / N
    rstd = 1 / tl.sqrt(var + eps)
    w = tl.load(w_ptr + cols, mask=mask)
    b = tl.load(b_ptr + cols, mask=mask)
    tl.store(y_ptr + row * stride_row + cols, centered * rstd * w + b, mask=mask)


# %% The run spec
RUN = {
    "kernel": "layer_norm_kernel",
    "inputs": {
        "x": "torch.randn(32, 200)",
        "w": "torch.rand(200) + 0.5",
        "b": "torch.randn(200)",
        "y": "torch.empty(32, 200)",
    },
    "args": {"x_ptr": "x", "y_ptr": "y", "w_ptr": "w", "b_ptr": "b", "N": "x.shape[1]",
             "stride_row": "x.stride(0)", "eps": 1e-5, "BLOCK_N": "triton.next_power_of_2(x.shape[1])"},
    "grid": "(x.shape[0],)",
    "reference": {"y": "torch.nn.functional.layer_norm(x, (x.shape[1],), w, b, eps=1e-5)"},
}
