"""RMS normalization after a residual add, as a transformer block applies it, forward and backward:
the forward kernel adds the residual, scales each row by 1/rms and by the weight, and keeps the sum
and 1/rms; the backward kernel gives the gradient of the sum (so of x and of the residual) from
them. One program per row, walking it in blocks of at most 256 columns; checked against torch's
autograd."""
import torch
import triton
import triton.language as tl

DEVICE = triton.runtime.driver.active.get_active_torch_device()


@triton.jit
def add_rms_norm_fwd(x_ptr, res_ptr, w_ptr, out_ptr, h_ptr, inv_rms_ptr, row_stride, n_cols, eps,
                     BLOCK: tl.constexpr):
    start = tl.program_id(0) * row_stride
    squares = tl.zeros([BLOCK], dtype=tl.float32)
    for first in range(0, n_cols, BLOCK):
        cols = first + tl.arange(0, BLOCK)
        h = tl.load(x_ptr + start + cols, mask=cols < n_cols, other=0.0) + tl.load(
            res_ptr + start + cols, mask=cols < n_cols, other=0.0)
        tl.store(h_ptr + start + cols, h, mask=cols < n_cols)
        squares += h * h
    inv_rms = tl.rsqrt(tl.sum(squares, axis=0) / n_cols + eps)
    tl.store(inv_rms_ptr + tl.program_id(0), inv_rms)
    for first in range(0, n_cols, BLOCK):
        cols = first + tl.arange(0, BLOCK)
        # the sum again from its terms, not read back from h: no load waits on this program's stores
        h = tl.load(x_ptr + start + cols, mask=cols < n_cols, other=0.0) + tl.load(
            res_ptr + start + cols, mask=cols < n_cols, other=0.0)
        w = tl.load(w_ptr + cols, mask=cols < n_cols, other=0.0)
        tl.store(out_ptr + start + cols, h * inv_rms * w, mask=cols < n_cols)


@triton.jit
def rms_norm_bwd(grad_ptr, h_ptr, w_ptr, inv_rms_ptr, grad_h_ptr, row_stride, n_cols, BLOCK: tl.constexpr):
    """out = h·r·w with r = (mean(h²) + eps)^-½, so dh = r·(g·w) - h·r³·mean(g·w·h)."""
    start = tl.program_id(0) * row_stride
    r = tl.load(inv_rms_ptr + tl.program_id(0))
    along = tl.zeros([BLOCK], dtype=tl.float32)
    for first in range(0, n_cols, BLOCK):
        cols = first + tl.arange(0, BLOCK)
        gw = tl.load(grad_ptr + start + cols, mask=cols < n_cols, other=0.0) * tl.load(
            w_ptr + cols, mask=cols < n_cols, other=0.0)
        along += gw * tl.load(h_ptr + start + cols, mask=cols < n_cols, other=0.0)
    projection = tl.sum(along, axis=0) / n_cols * r * r * r
    for first in range(0, n_cols, BLOCK):
        cols = first + tl.arange(0, BLOCK)
        gw = tl.load(grad_ptr + start + cols, mask=cols < n_cols, other=0.0) * tl.load(
            w_ptr + cols, mask=cols < n_cols, other=0.0)
        h = tl.load(h_ptr + start + cols, mask=cols < n_cols, other=0.0)
        tl.store(grad_h_ptr + start + cols, r * gw - projection * h, mask=cols < n_cols)


def launch_shape(n_cols):
    block = min(256, triton.next_power_of_2(n_cols))
    return block, max(1, min(8, block // 64))  # (BLOCK, num_warps)


def add_rms_norm(x, residual, weight, eps=1e-6):
    """(out, h = x + residual, 1/rms of each row of h)."""
    assert x.shape == residual.shape and x.is_contiguous() and residual.is_contiguous()
    n_rows, n_cols = x.shape
    out, h = torch.empty_like(x), torch.empty_like(x)
    inv_rms = torch.empty(n_rows, device=x.device, dtype=torch.float32)
    block, warps = launch_shape(n_cols)
    add_rms_norm_fwd[(n_rows,)](x, residual, weight, out, h, inv_rms, x.stride(0), n_cols, eps,
                                BLOCK=block, num_warps=warps)
    return out, h, inv_rms


def add_rms_norm_backward(grad_out, h, inv_rms, weight):
    n_rows, n_cols = h.shape
    grad_h = torch.empty_like(h)
    block, warps = launch_shape(n_cols)
    rms_norm_bwd[(n_rows,)](grad_out, h, weight, inv_rms, grad_h, h.stride(0), n_cols, BLOCK=block, num_warps=warps)
    return grad_h


torch.manual_seed(0)
rows, cols, eps = 32, 640, 1e-6
x = torch.randn(rows, cols, device=DEVICE)
residual = torch.randn(rows, cols, device=DEVICE)
weight = torch.rand(cols, device=DEVICE) + 0.5
grad_out = torch.randn(rows, cols, device=DEVICE)

out, h, inv_rms = add_rms_norm(x, residual, weight, eps)
grad_h = add_rms_norm_backward(grad_out, h, inv_rms, weight)

x_ref = x.clone().requires_grad_()
out_ref = torch.nn.functional.rms_norm(x_ref + residual, (cols,), weight, eps)
out_ref.backward(grad_out)
assert torch.equal(h, x + residual)
assert torch.allclose(out, out_ref.detach(), atol=1e-5, rtol=1e-4)
print(f"gradient: largest gap from autograd {(grad_h - x_ref.grad).abs().max().item():.2e}")
assert torch.allclose(grad_h, x_ref.grad, atol=1e-4, rtol=1e-4)


@triton.testing.perf_report(
    triton.testing.Benchmark(
        x_names=["n_cols"],
        x_vals=[1024 * i for i in range(1, 17)],
        line_arg="impl",
        line_vals=["triton", "torch"],
        line_names=["Triton, fused", "torch, add then rms_norm"],
        ylabel="GB/s",
        plot_name="add-rms-norm-forward",
        args={"n_rows": 16},
    ))
def forward_bandwidth(n_rows, n_cols, impl):
    x = torch.randn(n_rows, n_cols, device=DEVICE)
    residual = torch.randn(n_rows, n_cols, device=DEVICE)
    weight = torch.rand(n_cols, device=DEVICE)
    if impl == "triton":
        run = lambda: add_rms_norm(x, residual, weight)
    else:
        run = lambda: torch.nn.functional.rms_norm(x + residual, (n_cols,), weight, 1e-6)
    ms, slow_ms, fast_ms = triton.testing.do_bench(run, quantiles=[0.5, 0.8, 0.2])
    gbps = lambda ms: 4 * x.numel() * x.element_size() / ms * 1e-6  # x and residual read, out and h written
    return gbps(ms), gbps(slow_ms), gbps(fast_ms)


forward_bandwidth.run(print_data=True)
