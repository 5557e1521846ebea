"""liger-kernel's kernels, each launched as its wrapper in liger_kernel/ops/<name>.py launches it:
one program per row (`X += row * stride`), BLOCK_SIZE the next power of 2 of the row, here rows of
50 columns so that every block has masked-off lanes."""
from tests.corpus import Entry

OPS = "liger_kernel.ops."
R, C, B = 4, 50, 64
ROWS = "(4,)"
X = f"torch.randn({R}, {C})"
OUT = f"torch.empty({R}, {C})"
RMS = f"torch.rsqrt(X.pow(2).mean(-1, keepdim=True) + 1e-6)"


def rows(**pairs):
    """Pointer arguments and their row strides: rows(Y_ptr="Y") -> {"Y_ptr": "Y", "Y_row_stride": "Y.stride(0)"}."""
    args = {}
    for name, (tensor, stride) in pairs.items():
        args[name] = tensor
        if stride:
            args[stride] = f"{tensor}.stride(0)"
    return args


ENTRIES = {
    "liger.rms_norm_forward": Entry(
        OPS + "rms_norm", "_rms_norm_forward_kernel",
        {"X": X, "W": f"torch.randn({C})", "Y": OUT, "RSTD": f"torch.empty({R})"},
        {**rows(Y_ptr=("Y", "Y_row_stride"), X_ptr=("X", "X_row_stride"), W_ptr=("W", "W_row_stride"),
                RSTD_ptr=("RSTD", "RSTD_row_stride")),
         "n_cols": C, "eps": 1e-6, "offset": 0.0, "casting_mode": 0, "elementwise_affine": True, "BLOCK_SIZE": B},
        ROWS, {"Y": f"X * {RMS} * W", "RSTD": f"{RMS}.squeeze(-1)"}, "Y", store_root="y_base"),
    "liger.layer_norm_forward": Entry(
        OPS + "layer_norm", "_layer_norm_forward_kernel",
        {"X": X, "W": f"torch.randn({C})", "Bias": f"torch.randn({C})", "Y": OUT, "Mean": f"torch.empty({R})",
         "RSTD": f"torch.empty({R})"},
        {**rows(Y_ptr=("Y", "Y_row_stride"), X_ptr=("X", "X_row_stride"), W_ptr=("W", "W_row_stride"),
                B_ptr=("Bias", "B_row_stride"), Mean_ptr=("Mean", "Mean_row_stride"),
                RSTD_ptr=("RSTD", "RSTD_row_stride")), "n_cols": C, "eps": 1e-6, "BLOCK_SIZE": B},
        ROWS, {"Y": f"torch.nn.functional.layer_norm(X, ({C},), W, Bias, 1e-6)", "Mean": "X.mean(-1)",
               "RSTD": "torch.rsqrt(X.var(-1, unbiased=False) + 1e-6)"}, "Y", {"atol": 1e-4}, store_root="row_Y_ptr"),
    "liger.swiglu_forward": Entry(
        OPS + "swiglu", "_swiglu_forward_kernel", {"a": X, "b": X, "c": OUT},
        {"a_ptr": "a", "b_ptr": "b", "c_ptr": "c", "stride": "c.stride(0)", "gate_multiplier": 1.0, "n_cols": C,
         "BLOCK_SIZE": B}, ROWS, {"c": "torch.nn.functional.silu(a) * b"}, "c", {"atol": 1e-5}),
    "liger.swiglu_backward": Entry(
        OPS + "swiglu", "_swiglu_backward_kernel", {"dc": X, "a": X, "b": X},
        {"dc_ptr": "dc", "a_ptr": "a", "b_ptr": "b", "stride": "dc.stride(0)", "gate_multiplier": 1.0, "n_cols": C,
         "BLOCK_SIZE": B}, ROWS,
        {"a": "dc * (torch.sigmoid(a) * (1 + a * (1 - torch.sigmoid(a)))) * b", "b": "dc * torch.nn.functional.silu(a)"},
        "a", {"atol": 1e-5}),
    "liger.swiglu_forward_tiled": Entry(
        OPS + "swiglu", "_swiglu_forward_kernel_tiled", {"a": X, "b": X, "c": OUT},
        {"a_ptr": "a", "b_ptr": "b", "c_ptr": "c", "stride": "c.stride(0)", "gate_multiplier": 1.0, "n_cols": C,
         "BLOCK_SIZE": 16}, f"({R}, triton.cdiv({C}, 16))",  # the wrapper's grid: rows by column tiles
        {"c": "torch.nn.functional.silu(a) * b"}, "c", {"atol": 1e-5}),
    "liger.geglu_forward": Entry(
        OPS + "geglu", "_geglu_tanh_forward_kernel", {"a": X, "b": X, "c": OUT},
        {"a": "a", "b": "b", "c": "c", "stride": "c.stride(0)", "n_cols": C, "BLOCK_SIZE": B}, ROWS,
        {"c": "torch.nn.functional.gelu(a, approximate='tanh') * b"}, "c", {"atol": 1e-5}),
    "liger.relu_squared_forward": Entry(
        OPS + "relu_squared", "_relu_squared_forward_kernel", {"X": X, "Y": OUT},
        rows(Y_ptr=("Y", "Y_stride"), X_ptr=("X", "X_stride")) | {"n_cols": C, "BLOCK_SIZE": B}, ROWS,
        {"Y": "torch.relu(X) ** 2"}, "Y"),
    "liger.relu_squared_backward": Entry(
        OPS + "relu_squared", "_relu_squared_backward_kernel", {"dY": X, "X": X, "dX": OUT},
        rows(dX_ptr=("dX", "dX_stride"), dY_ptr=("dY", "dY_stride"), X_ptr=("X", "X_stride"))
        | {"n_cols": C, "BLOCK_SIZE": B}, ROWS, {"dX": "2 * torch.relu(X) * dY"}, "dX", {"atol": 1e-5}),
    "liger.softmax_single_block_forward": Entry(
        OPS + "softmax", "_softmax_single_block_forward_kernel", {"X": X, "Y": OUT},
        rows(Y_ptr=("Y", "Y_row_stride"), X_ptr=("X", "X_row_stride")) | {"n_cols": C, "BLOCK_SIZE": B}, ROWS,
        {"Y": "torch.softmax(X, -1)"}, "Y"),
    "liger.softmax_multi_block_forward": Entry(
        OPS + "softmax", "_softmax_multi_block_forward_kernel", {"X": X, "Y": OUT},
        rows(Y_ptr=("Y", "Y_row_stride"), X_ptr=("X", "X_row_stride")) | {"n_cols": C, "BLOCK_SIZE": 16}, ROWS,
        {"Y": "torch.softmax(X, -1)"}, "Y"),
    "liger.softmax_single_block_backward": Entry(
        OPS + "softmax", "_softmax_single_block_backward_kernel",
        {"dy": X, "y": f"torch.softmax(torch.randn({R}, {C}), -1)", "dx": OUT},
        rows(dy_ptr=("dy", "dy_stride"), y_ptr=("y", "y_stride"), dx_ptr=("dx", "dx_stride"))
        | {"n_cols": C, "BLOCK_SIZE": B}, ROWS, {"dx": "y * (dy - (dy * y).sum(-1, keepdim=True))"}, "dx"),
    "liger.softmax_multi_block_backward": Entry(
        OPS + "softmax", "_softmax_multi_block_backward_kernel",
        {"dy": X, "y": f"torch.softmax(torch.randn({R}, {C}), -1)", "dx": OUT},
        rows(dy_ptr=("dy", "dy_stride"), y_ptr=("y", "y_stride"), dx_ptr=("dx", "dx_stride"))
        | {"n_cols": C, "BLOCK_SIZE": 16}, ROWS, {"dx": "y * (dy - (dy * y).sum(-1, keepdim=True))"}, "dx"),
    "liger.kl_div_forward": Entry(
        OPS + "kl_div", "_kldiv_kernel_forward",
        {"y": f"torch.log_softmax(torch.randn({R}, {C}), -1)", "gt": f"torch.softmax(torch.randn({R}, {C}), -1)",
         "loss": OUT},
        rows(y_ptr=("y", "y_stride"), gt_ptr=("gt", "gt_stride"), loss_ptr=("loss", "loss_stride"))
        | {"n_cols": C, "eps": 1e-10, "BLOCK_SIZE": B, "reduction": 0, "log_target": False}, ROWS,
        {"loss": "torch.nn.functional.kl_div(y, gt, reduction='none')"}, "loss", {"atol": 1e-6}),
    "liger.kl_div_backward": Entry(
        OPS + "kl_div", "_kldiv_kernel_backward",
        {"target": f"torch.softmax(torch.randn({R}, {C}), -1)", "grads": OUT},
        rows(target_ptr=("target", "target_stride"), new_grads_ptr=("grads", "new_grads_stride"))
        | {"n_cols": C, "BLOCK_SIZE": B, "log_target": False}, ROWS, {"grads": "-target"}, "grads"),
    "liger.poly_norm_forward": Entry(
        OPS + "poly_norm", "_poly_norm_forward_kernel",
        {"X": X, "W": "torch.tensor([0.3, 0.5, 0.7])", "Bias": "torch.tensor([0.1])", "Y": OUT,
         "RSTD": f"torch.empty({R}, 3)"},
        rows(Y_ptr=("Y", "Y_row_stride"), X_ptr=("X", "X_row_stride"), W_ptr=("W", None), B_ptr=("Bias", None),
             RSTD_ptr=("RSTD", "RSTD_row_stride")) | {"n_cols": C, "eps": 1e-6, "BLOCK_SIZE": B}, ROWS,
        {"Y": "sum(w * u * torch.rsqrt(u.pow(2).mean(-1, keepdim=True) + 1e-6) for w, u in zip(W, (X**3, X**2, X)))"
              " + Bias"}, "Y", {"atol": 1e-4}),
    "liger.fused_add_rms_norm_forward": Entry(
        OPS + "fused_add_rms_norm", "_fused_add_rms_norm_forward_kernel",
        {"X": X, "Res": X, "W": f"torch.randn({C})", "Y": OUT, "S": OUT, "RSTD": f"torch.empty({R})"},
        rows(Y_ptr=("Y", "Y_row_stride"), S_ptr=("S", "S_row_stride"), X_ptr=("X", "X_row_stride"),
             R_ptr=("Res", "R_row_stride"), W_ptr=("W", "W_row_stride"), RSTD_ptr=("RSTD", "RSTD_row_stride"))
        | {"n_cols": C, "eps": 1e-6, "offset": 0.0, "casting_mode": 0, "BLOCK_SIZE": B}, ROWS,
        {"S": "X + Res", "Y": "(X + Res) * torch.rsqrt((X + Res).pow(2).mean(-1, keepdim=True) + 1e-6) * W"}, "Y",
        {"atol": 1e-5}),
    "liger.element_mul": Entry(
        OPS + "utils", "element_mul_kernel", {"X": X, "g": "torch.tensor([0.5])"},
        {"X_ptr": "X", "X_stride": "X.stride(0)", "grad_output_ptr": "g", "n_cols": C, "BLOCK_SIZE": 16}, ROWS,
        {"X": "X * 0.5"}, "X"),
    "liger.dyt_forward": Entry(
        OPS + "dyt", "_dyt_fwd_kernel",
        {"X": X, "Y": OUT, "alpha": "torch.tensor([0.7])", "gamma": f"torch.randn({C})", "beta": f"torch.randn({C})"},
        {"X": "X", "Y": "Y", "Alpha": "alpha", "Gamma": "gamma", "Beta": "beta", "HAVE_BETA": True, "N": C},
        f"lambda meta: (triton.cdiv({C}, meta['BLOCK_N']), {R})", {"Y": "torch.tanh(alpha * X) * gamma + beta"}, "Y",
        {"atol": 1e-5}),
}
