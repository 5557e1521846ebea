"""A linear layer's forward in one kernel, out = GELU(x @ w + bias): each program computes one tile
of `out` on a 2-D grid, its tiles visited in bands of GROUP rows (tl.swizzle2d) so that the programs
running together reuse the same rows of x from the cache; @triton.autotune picks the tile shape,
and the activation is a constexpr string, GELU a @triton.jit helper defined after the kernel."""
import torch
import triton
import triton.language as tl

DEVICE = triton.runtime.driver.active.get_active_torch_device()


def tile_configs():
    # (BLOCK_M, BLOCK_N, BLOCK_K, GROUP, num_warps, num_stages)
    shapes = [(64, 64, 64, 4, 4, 3), (32, 64, 32, 8, 4, 4), (128, 64, 32, 4, 8, 3)]
    return [triton.Config({"BLOCK_M": m, "BLOCK_N": n, "BLOCK_K": k, "GROUP": g}, num_warps=warps, num_stages=stages)
            for m, n, k, g, warps, stages in shapes]


@triton.autotune(configs=tile_configs(), key=["M", "N", "K"])
@triton.jit
def linear_gelu_kernel(x_ptr, w_ptr, bias_ptr, out_ptr, M, N, K,
                       stride_xm, stride_xk, stride_wk, stride_wn, stride_om, stride_on,
                       BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, GROUP: tl.constexpr,
                       ACTIVATION: tl.constexpr):
    # The GPU starts programs axis 0 first: the swizzle's row-major order is (axis 1, axis 0).
    tile_m, tile_n = tl.swizzle2d(tl.program_id(1), tl.program_id(0), tl.num_programs(1), tl.num_programs(0), GROUP)
    rows = tile_m * BLOCK_M + tl.arange(0, BLOCK_M)
    cols = tile_n * BLOCK_N + tl.arange(0, BLOCK_N)
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k_start in range(0, K, BLOCK_K):
        ks = k_start + tl.arange(0, BLOCK_K)
        x_tile = tl.load(x_ptr + rows[:, None] * stride_xm + ks[None, :] * stride_xk,
                         mask=(rows[:, None] < M) & (ks[None, :] < K), other=0.0)
        w_tile = tl.load(w_ptr + ks[:, None] * stride_wk + cols[None, :] * stride_wn,
                         mask=(ks[:, None] < K) & (cols[None, :] < N), other=0.0)
        acc = tl.dot(x_tile, w_tile, acc)
    acc += tl.load(bias_ptr + cols, mask=cols < N, other=0.0).to(tl.float32)[None, :]
    if ACTIVATION == "gelu":
        acc = gelu(acc)
    tl.store(out_ptr + rows[:, None] * stride_om + cols[None, :] * stride_on, acc.to(out_ptr.dtype.element_ty),
             mask=(rows[:, None] < M) & (cols[None, :] < N))


@triton.jit
def gelu(v):
    """GELU as torch computes it by default: v·Φ(v), Φ the normal distribution's, from erf."""
    return 0.5 * v * (1.0 + tl.erf(v * 0.7071067811865476))


def linear(x, w, bias, activation="gelu"):
    (M, K), (K_w, N) = x.shape, w.shape
    assert K == K_w and bias.shape == (N,), "x is (M, K), w is (K, N), bias is (N,)"
    out = torch.empty((M, N), device=x.device, dtype=x.dtype)
    tiles = lambda META: (triton.cdiv(N, META["BLOCK_N"]), triton.cdiv(M, META["BLOCK_M"]))
    linear_gelu_kernel[tiles](x, w, bias, out, M, N, K, x.stride(0), x.stride(1), w.stride(0), w.stride(1),
                              out.stride(0), out.stride(1), ACTIVATION=activation)
    return out


torch.manual_seed(0)
x = torch.randn((192, 144), device=DEVICE, dtype=torch.float16)
w = torch.randn((144, 112), device=DEVICE, dtype=torch.float16) / 12
bias = torch.randn(112, device=DEVICE, dtype=torch.float16)
affine = x.float() @ w.float() + bias.float()
plain = linear(x, w, bias, activation="none")
assert torch.allclose(plain.float(), affine, atol=2e-2, rtol=1e-2), (plain.float() - affine).abs().max()
fused = linear(x, w, bias)
expected = torch.nn.functional.gelu(affine)
print(f"largest gap from torch, with GELU: {(fused.float() - expected).abs().max().item():.4f}")
assert torch.allclose(fused.float(), expected, atol=2e-2, rtol=1e-2)


@triton.testing.perf_report(
    triton.testing.Benchmark(
        x_names=["M", "N", "K"],
        x_vals=[256 * i for i in range(1, 17)],
        line_arg="impl",
        line_vals=["triton", "torch"],
        line_names=["Triton, fused", "torch, matmul then GELU"],
        ylabel="TFLOPS",
        plot_name="linear-gelu-fp16",
        args={"activation": "gelu"},
    ))
def speed(M, N, K, impl, activation):
    x = torch.randn((M, K), device=DEVICE, dtype=torch.float16)
    w = torch.randn((K, N), device=DEVICE, dtype=torch.float16)
    bias = torch.randn(N, device=DEVICE, dtype=torch.float16)

    def with_torch():
        affine = torch.addmm(bias, x, w)
        return torch.nn.functional.gelu(affine) if activation == "gelu" else affine

    run = (lambda: linear(x, w, bias, activation)) if impl == "triton" else with_torch
    ms, slow_ms, fast_ms = triton.testing.do_bench(run, quantiles=[0.5, 0.8, 0.2])
    tflops = lambda ms: 2 * M * N * K / ms * 1e-9
    return tflops(ms), tflops(slow_ms), tflops(fast_ms)


speed.run(print_data=True, show_plots=True)
