"""fla-core's (flash-linear-attention) utility kernels, each launched as its wrapper launches it:
the activations over the flattened input (T elements, one program per block of B from the autotuner's
first config, 512, so that a 4 x 50 input leaves masked-off lanes), the row kernels (softmax, l2norm)
one program per row with the block the next power of 2 of the row."""
from tests.corpus import Entry

ACT = "fla.modules.activations.ops"
R, C = 4, 50
X = f"torch.randn({R}, {C})"
OUT = f"torch.empty({R}, {C})"
FLAT = f"lambda meta: (triton.cdiv({R * C}, meta['B']),)"
SIG = "torch.sigmoid(x)"


def unary(kernel, reference, **extra):
    """An activation's forward: x -> y, rows addressed through their stride."""
    return Entry(ACT, kernel, {"x": X, "y": OUT},
                 {"x": "x", "y": "y", "stride_x_row": "x.stride(0)", "stride_y_row": "y.stride(0)", **extra,
                  "T": R * C, "D": C}, FLAT, {"y": reference}, "y", {"atol": 1e-5})


def backward(kernel, reference, **extra):
    """An activation's backward: (x, dy) -> dx."""
    return Entry(ACT, kernel, {"x": X, "dy": X, "dx": OUT},
                 {"x": "x", "dy": "dy", "dx": "dx", "stride_x_row": "x.stride(0)", "stride_dy_row": "dy.stride(0)",
                  "stride_dx_row": "dx.stride(0)", **extra, "T": R * C, "D": C}, FLAT, {"dx": reference}, "dx",
                 {"atol": 1e-5})


def gated(kernel, reference):
    """A gated activation's forward: (x, y) -> z."""
    return Entry(ACT, kernel, {"x": X, "y": X, "z": OUT},
                 {"x": "x", "y": "y", "z": "z", "stride_x_row": "x.stride(0)", "stride_y_row": "y.stride(0)",
                  "stride_z_row": "z.stride(0)", "T": R * C, "D": C}, FLAT, {"z": reference}, "z", {"atol": 1e-5})


ENTRIES = {
    "fla.sigmoid_fwd": unary("sigmoid_fwd_kernel", SIG),
    "fla.sigmoid_bwd": backward("sigmoid_bwd_kernel", f"dy * {SIG} * (1 - {SIG})"),
    "fla.elu_p1_fwd": unary("elu_p1_fwd_kernel", "torch.nn.functional.elu(x) + 1"),
    "fla.elu_p1_bwd": backward("elu_p1_bwd_kernel", "dy * torch.exp(torch.clamp(x, max=0))"),
    "fla.logsigmoid_fwd": unary("logsigmoid_fwd_kernel", "torch.nn.functional.logsigmoid(x) / 2.0",
                                temperature=2.0),
    "fla.logsigmoid_bwd": backward("logsigmoid_bwd_kernel", f"dy * (1 - {SIG}) / 2.0", temperature=2.0),
    "fla.swish_fwd": unary("swish_fwd_kernel", "torch.nn.functional.silu(x)"),
    "fla.swish_bwd": backward("swish_bwd_kernel", f"dy * {SIG} * (1 + x * (1 - {SIG}))"),
    "fla.swiglu_fwd": gated("swiglu_fwd_kernel", "torch.nn.functional.silu(x) * y"),
    "fla.sigmoidglu_fwd": gated("sigmoidglu_fwd_kernel", "torch.sigmoid(x) * y"),
    "fla.softmax_fwd": Entry(
        "fla.ops.utils.softmax", "softmax_fwd_kernel", {"x": X, "p": OUT}, {"x": "x", "p": "p", "D": C, "B": 64},
        f"({R},)", {"p": "torch.softmax(x, -1)"}, "p", {"atol": 1e-6}),
    "fla.softmax_bwd": Entry(
        "fla.ops.utils.softmax", "softmax_bwd_kernel",
        {"p": f"torch.softmax(torch.randn({R}, {C}), -1)", "dp": X, "ds": OUT},
        {"p": "p", "dp": "dp", "ds": "ds", "D": C, "B": 64}, f"({R},)",
        {"ds": "p * dp - p * (p * dp).sum(-1, keepdim=True)"}, "ds", {"atol": 1e-6}),
    "fla.l2norm_fwd_row": Entry(
        "fla.modules.norm.l2norm", "l2norm_fwd_kernel_row", {"x": X, "y": OUT, "rstd": f"torch.empty({R})"},
        {"x": "x", "y": "y", "rstd": "rstd", "eps": 1e-6, "D": C, "BD": 64}, f"({R},)",
        {"y": "x * torch.rsqrt(x.pow(2).sum(-1, keepdim=True) + 1e-6)",
         "rstd": "torch.rsqrt(x.pow(2).sum(-1) + 1e-6)"}, "y", {"atol": 1e-5}),
    "fla.l2norm_bwd_row": Entry(
        "fla.modules.norm.l2norm", "l2norm_bwd_kernel_row",
        {"y": f"torch.nn.functional.normalize(torch.randn({R}, {C}), dim=-1)", "rstd": f"torch.rand({R}) + 0.5",
         "dy": X, "dx": OUT},
        {"y": "y", "rstd": "rstd", "dy": "dy", "dx": "dx", "eps": 1e-6, "D": C, "BD": 64}, f"({R},)",
        {"dx": "dy * rstd[:, None] - (dy * y).sum(-1, keepdim=True) * y * rstd[:, None]"}, "dx", {"atol": 1e-5}),
}

POW_GATE = "(lambda x: torch.where(x > 0, x.clamp_min(1e-30) ** (2.0 / (x.clamp_min(0).sqrt() + 1)), x) * torch.sigmoid(x))"


def gated_backward(kernel, gate, weighted, **extra):
    """A gated activation's backward: (x, y, dz) -> dx, dy, and z = gate(x) * y where a z is passed.
    The references differentiate the gate with autograd."""
    dgate = f"torch.func.grad(lambda u: {gate}(u).sum())(x)"
    outputs = {"dx": OUT, "dy": OUT} | ({"z": OUT} if weighted else {})
    reference = {"dx": f"g * y * {dgate}", "dy": f"g * {gate}(x)"} | ({"z": f"{gate}(x) * y"} if weighted else {})
    return Entry(ACT, kernel, {"x": X, "y": X, "g": X, **outputs},
                 {"x": "x", "y": "y", "g": "g", "dx": "dx", "dy": "dy", "z": "z" if weighted else None,
                  "stride_x_row": "x.stride(0)", "stride_y_row": "y.stride(0)", "stride_g_row": "g.stride(0)",
                  "stride_dx_row": C, "stride_dy_row": C, "stride_z_row": C if weighted else 0, **extra,
                  "T": R * C, "D": C}, FLAT, reference, "dx", {"atol": 1e-5})


ENTRIES |= {
    "fla.powglu_fwd": Entry(
        ACT, "powglu_fwd_kernel", {"x": X, "y": X, "z": OUT},
        {"x": "x", "y": "y", "z": "z", "stride_x_row": "x.stride(0)", "stride_y_row": "y.stride(0)",
         "stride_z_row": C, "m": 2.0, "T": R * C, "D": C}, FLAT, {"z": f"{POW_GATE}(x) * y"}, "z", {"atol": 1e-5}),
    "fla.swiglu_fwdbwd": gated_backward("swiglu_fwdbwd_kernel", "torch.nn.functional.silu", weighted=True),
    "fla.sigmoidglu_fwdbwd": gated_backward("sigmoidglu_fwdbwd_kernel", "torch.sigmoid", weighted=False),
    "fla.powglu_fwdbwd": gated_backward("powglu_fwdbwd_kernel", POW_GATE, weighted=True, m=2.0),
}

CUMSUM = "fla.ops.utils.cumsum"
SEQ = "torch.randn(2, 50, 2)"  # [B, T, H]: 2 sequences of 50 steps, 2 heads


def cumsum_args(**extra):
    return {"s": "s", "o": "o", "scale": None, "cu_seqlens": None, "T": 50, "B": 2, "H": 2, **extra}


ENTRIES |= {
    "fla.chunk_local_cumsum_scalar": Entry(
        CUMSUM, "chunk_local_cumsum_scalar_kernel", {"s": SEQ, "o": "torch.empty(2, 50, 2)"},
        cumsum_args(chunk_indices=None, BT=16, REVERSE=False), "(triton.cdiv(50, 16) * 2 * 2,)",
        {"o": "torch.cat([c.cumsum(1) for c in s.split(16, 1)], 1)"}, "o", {"atol": 1e-5}, store_root="p_o"),
    "fla.chunk_global_cumsum_scalar_reverse": Entry(
        CUMSUM, "chunk_global_cumsum_scalar_kernel", {"s": SEQ, "o": "torch.empty(2, 50, 2)"},
        cumsum_args(REVERSE=True), "(2 * 2,)", {"o": "s.flip(1).cumsum(1).flip(1)"}, "o", {"atol": 1e-5},
        store_root="p_o"),
    "fla.mean_pooling_fwd": Entry(
        "fla.ops.utils.pooling", "mean_pooling_fwd_kernel",
        {"x": "torch.randn(2, 50, 2, 20)", "o": "torch.empty(2, 4, 2, 20)"},  # [B, T, H, D] in chunks of 16 steps
        {"x": "x", "o": "o", "cu_seqlens": None, "chunk_indices": None, "T": 50, "H": 2, "D": 20, "BT": 16},
        "lambda meta: (triton.cdiv(20, meta['BD']) * 4, 2 * 2)",
        {"o": "torch.stack([c.mean(1) for c in x.split(16, 1)], 1)"}, "o", {"atol": 1e-5}, store_root="p_o"),
}

# the l2norm kernels over blocks of rows (the autotuner's first BT, 8: 20 rows leave the last block partial)
ROWS20 = f"torch.randn(20, {C})"
L2 = "fla.modules.norm.l2norm"
ENTRIES |= {
    "fla.l2norm_fwd": Entry(
        L2, "l2norm_fwd_kernel", {"x": ROWS20, "y": f"torch.empty(20, {C})", "rstd": "torch.empty(20)"},
        {"x": "x", "y": "y", "rstd": "rstd", "eps": 1e-6, "T": 20, "D": C, "BD": 64, "NB": 1},
        "lambda meta: (triton.cdiv(20, meta['BT']),)",
        {"y": "x * torch.rsqrt(x.pow(2).sum(-1, keepdim=True) + 1e-6)", "rstd": "torch.rsqrt(x.pow(2).sum(-1) + 1e-6)"},
        "y", {"atol": 1e-5}, store_root="p_y"),
    "fla.l2norm_bwd": Entry(
        L2, "l2norm_bwd_kernel",
        {"y": f"torch.nn.functional.normalize({ROWS20}, dim=-1)", "rstd": "torch.rand(20) + 0.5", "dy": ROWS20,
         "dx": f"torch.empty(20, {C})"},
        {"y": "y", "rstd": "rstd", "dy": "dy", "dx": "dx", "eps": 1e-6, "T": 20, "D": C, "BD": 64, "NB": 1},
        "lambda meta: (triton.cdiv(20, meta['BT']),)",
        {"dx": "dy * rstd[:, None] - (dy * y).sum(-1, keepdim=True) * y * rstd[:, None]"}, "dx", {"atol": 1e-5},
        store_root="p_dx"),
}
