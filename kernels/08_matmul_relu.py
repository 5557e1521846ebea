"""
Fusion: matmul and ReLU in one kernel
=====================================

`torch.relu(a @ b)` runs two kernels: the matmul writes C to memory, then the ReLU reads C back
and writes the result. The second kernel does almost no arithmetic; its time is all memory
traffic, a round trip of C through the GPU's DRAM.

Fusing removes the round trip. The tiled matmul already holds its tile of C in registers when
the K loop ends, so applying `tl.maximum(acc, 0.0)` there costs nothing: C is written once, already
activated, and never read back. The kernel is the previous example plus one line.

The bytes show it. The Timings tab counts the kernel's memory traffic from the trace, each element
loaded or stored counted once: A (49 KB) + B (49 KB) + C (66 KB) = 164 KB, the very figure of the
matmul alone (run the previous example). Unfused, the ReLU would read C and write it again:
164 + 2 × 66 = 295 KB, 1.8 times the traffic for the same result.

On a GPU, compare the kernel's time with the reference's: the reference moves C three times
(write, read, write), the fused kernel once. The gain grows with the size of C relative to
the matmul's work, so it is largest for wide, shallow products (small K) and for cheap
element-wise tails such as activations, bias adds or scaling.

Try: add a bias vector before the ReLU (one more load per program, still one store), or change
the activation. As in the matmul example, the sizes are small for the interpreter, and fp32
inputs use tf32 in `tl.dot` on a GPU, hence the looser tolerances.
"""
# %% The kernel
import triton
import triton.language as tl


@triton.jit
def matmul_relu_kernel(a_ptr,  # pointer to A, M x K
                       b_ptr,  # pointer to B, K x N
                       c_ptr,  # pointer to C = relu(A @ B), M x N
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
    acc = tl.maximum(acc, 0.0)  # the fused ReLU, applied while the tile is still in registers
    mask = (rows[:, None] < M) & (cols[None, :] < N)
    tl.store(c_ptr + rows[:, None] * stride_cm + cols[None, :] * stride_cn, acc, mask=mask)


# %% The run spec
RUN = {
    "kernel": "matmul_relu_kernel",
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
    "reference": {"c": "torch.relu(a @ b)"},
    "options": {"atol": 5e-2, "rtol": 1e-2, "flops": "2 * M * N * K"},
}
