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

GELU_TANH = "0.5 * a * (1 + torch.tanh(0.7978845608028654 * (a + 0.044715 * a ** 3)))"
GELU_TANH_GRAD = ("(lambda t: 0.5 * (1 + t) + 0.5 * a * (1 - t * t) * 0.7978845608028654 * (1 + 3 * 0.044715 * a * a))"
                  "(torch.tanh(0.7978845608028654 * (a + 0.044715 * a ** 3)))")
LOG_P = f"torch.log_softmax(torch.randn({R}, {C}), -1)"
JSD_M = "torch.log(0.5 * torch.exp(X) + 0.5 * torch.exp(Y))"  # log of the mixture, beta = 0.5
CAUSAL = f"torch.randn(2, {C}, {C})"  # two score matrices of 50 x 50, masked above the diagonal
TWO_OF_EACH = f"view(2, 2, {C}).sum(0)"  # the rows a program strides over: 0 and 2, 1 and 3 (two programs)
DYT = "(1 - torch.tanh(alpha * x) ** 2) * dy * gamma"

ENTRIES |= {
    "liger.geglu_backward": Entry(
        OPS + "geglu", "_geglu_tanh_backward_kernel", {"dc": X, "a": X, "b": X},
        {"dc": "dc", "a": "a", "b": "b", "stride": "dc.stride(0)", "n_cols": C, "BLOCK_SIZE": B}, ROWS,
        {"a": f"dc * b * {GELU_TANH_GRAD}", "b": f"dc * {GELU_TANH}"}, "a", {"atol": 1e-5}),
    "liger.dyt_backward": Entry(
        OPS + "dyt", "_dyt_bwd_kernel",
        {"dy": X, "x": X, "alpha": "torch.tensor([0.7])", "gamma": f"torch.randn({C})", "dx": OUT,
         "da": "torch.zeros(2, 1)", "dg": f"torch.empty(2, {C})", "db": f"torch.empty(2, {C})"},
        {"DY": "dy", "DX": "dx", "DA": "da", "DG": "dg", "DB": "db", "X": "x", "Alpha": "alpha", "Gamma": "gamma",
         "HAVE_BETA": True, "M": R, "N": C},
        f"lambda meta: (triton.cdiv({C}, meta['BLOCK_N']), 2)",  # the wrapper's NUM_SMS programs: 2 here
        {"dx": f"alpha * {DYT}", "dg": f"(dy * torch.tanh(alpha * x)).{TWO_OF_EACH}", "db": f"dy.{TWO_OF_EACH}",
         "da": f"(x * {DYT}).{TWO_OF_EACH}.sum(1, keepdim=True)"}, "dx", {"atol": 1e-4}),
    "liger.jsd": Entry(
        OPS + "jsd", "_jsd_kernel", {"X": LOG_P, "Y": LOG_P, "loss": OUT, "dX": OUT, "label": "torch.empty(1)"},
        rows(X_ptr=("X", "X_stride"), Y_ptr=("Y", "Y_stride"), loss_ptr=("loss", "loss_stride"),
             dX_ptr=("dX", "dX_stride"))
        | {"label_ptr": "label", "beta": 0.5, "n_non_ignore": R, "ignore_index": -100, "n_cols": C, "BLOCK_SIZE": 16,
           "HAS_LABEL": False}, ROWS,
        {"loss": f"(0.5 * torch.exp(Y) * (Y - {JSD_M}) + 0.5 * torch.exp(X) * (X - {JSD_M})) / {R}",
         "dX": f"0.5 * torch.exp(X) * (X - {JSD_M}) / {R}"}, "loss", {"atol": 1e-6}),
    "liger.tvd": Entry(
        OPS + "tvd", "_tv_distance_kernel",
        {"p": f"torch.softmax(torch.randn({R}, {C}), -1)", "q": f"torch.softmax(torch.randn({R}, {C}), -1)",
         "loss": OUT, "grads": OUT, "label": "torch.empty(1)"},
        rows(p_ptr=("p", "p_stride"), q_ptr=("q", "q_stride"), loss_ptr=("loss", "loss_stride"),
             grads_ptr=("grads", "grads_stride"))
        | {"label_ptr": "label", "ignore_index": -100, "n_cols": C, "scale": 1.0, "BLOCK_SIZE": B,
           "HAS_LABEL": False, "reduction": 0}, ROWS,  # reduction 0: none, a loss per element
        {"loss": "0.5 * (p - q).abs()", "grads": "0.5 * torch.sign(p - q)"}, "grads"),
    "liger.sparsemax_forward": Entry(
        OPS + "sparsemax", "_sparsemax_forward_kernel",
        {"x": X, "x_sorted": "x.sort(-1, descending=True).values", "out": OUT},
        rows(x_ptr=("x", "x_stride_row"), sorted_x_ptr=("x_sorted", "sorted_x_stride_row"),
             o_ptr=("out", "o_stride_row")) | {"n_cols": C, "BLOCK_SIZE": B, "num_warps": 4}, ROWS,
        # the threshold tau of each row: the support is the k largest with 1 + k z_k > their sum
        {"out": "(x - (lambda z, k: (z.cumsum(-1).gather(-1, k - 1) - 1) / k)(x_sorted, "
                f"((1 + torch.arange(1, {C + 1}) * x_sorted) > x_sorted.cumsum(-1)).sum(-1, keepdim=True))).clamp_min(0)"},
        "out", {"atol": 1e-5}, store_root="ptr_output_row"),
    "liger.causal_mask_forward": Entry(
        OPS + "multi_token_attention", "_mask_fwd_kernel", {"scores": CAUSAL, "out": f"torch.empty(2, {C}, {C})"},
        {"scores_ptr": "scores", "out_ptr": "out", "stride_b": "scores.stride(0)", "stride_m": "scores.stride(1)",
         "stride_n": "scores.stride(2)", "L": C, "mask_val": -1e9, "BLOCK": 16, "num_warps": 4},
        f"(triton.cdiv({C}, 16), triton.cdiv({C}, 16), 2)",
        {"out": f"scores.masked_fill(torch.ones({C}, {C}, dtype=torch.bool).triu(1), -1e9)"}, "out"),
    "liger.block_rms_norm_forward": Entry(
        OPS + "rms_norm", "_block_rms_norm_forward_kernel",
        {"X": f"torch.randn(20, {C})", "W": f"torch.randn({C})", "Y": f"torch.empty(20, {C})", "RSTD": "torch.empty(20)"},
        rows(Y_ptr=("Y", "Y_row_stride"), X_ptr=("X", "X_row_stride"), W_ptr=("W", "W_row_stride"),
             RSTD_ptr=("RSTD", "RSTD_row_stride"))
        | {"n_rows": 20, "n_cols": C, "eps": 1e-6, "offset": 0.0, "casting_mode": 0, "elementwise_affine": True,
           "BLOCK_SIZE": B, "BLOCK_ROW": 16}, "(triton.cdiv(20, 16),)",  # 16 rows a program, the last with 4
        {"Y": f"X * {RMS} * W", "RSTD": f"{RMS}.squeeze(-1)"}, "Y", {"atol": 1e-5}),
}

RSTD = "torch.rsqrt(X.pow(2).mean(-1) + 1e-6)"
ENTRIES |= {
    "liger.swiglu_backward_tiled": Entry(
        OPS + "swiglu", "_swiglu_backward_kernel_tiled", {"dc": X, "a": X, "b": X},
        {"dc_ptr": "dc", "a_ptr": "a", "b_ptr": "b", "stride": "dc.stride(0)", "gate_multiplier": 1.0, "n_cols": C,
         "BLOCK_SIZE": 16}, f"({R}, triton.cdiv({C}, 16))",
        {"a": "dc * (torch.sigmoid(a) * (1 + a * (1 - torch.sigmoid(a)))) * b", "b": "dc * torch.nn.functional.silu(a)"},
        "a", {"atol": 1e-5}),
    "liger.causal_mask_backward": Entry(
        OPS + "multi_token_attention", "_mask_bwd_kernel", {"grad": CAUSAL, "out": f"torch.empty(2, {C}, {C})"},
        {"grad_in_ptr": "grad", "out_ptr": "out", "stride_b": "grad.stride(0)", "stride_m": "grad.stride(1)",
         "stride_n": "grad.stride(2)", "L": C, "BLOCK": 16, "num_warps": 4},
        f"(triton.cdiv({C}, 16), triton.cdiv({C}, 16), 2)", {"out": "grad.tril()"}, "out"),
    "liger.rms_norm_backward": Entry(
        OPS + "rms_norm", "_rms_norm_backward_kernel",
        {"dY": X, "X": X, "W": f"torch.randn({C})", "RSTD": RSTD, "dX": OUT, "dW": f"torch.empty(2, {C})"},
        rows(dY_ptr=("dY", "dY_row_stride"), dX_ptr=("dX", "dX_row_stride"), X_ptr=("X", "X_row_stride"),
             W_ptr=("W", "W_row_stride"), RSTD_ptr=("RSTD", "RSTD_row_stride"), dW_ptr=("dW", "dW_row_stride"))
        | {"X_dtype": "tl.float32", "n_rows": R, "n_cols": C, "offset": 0.0, "rows_per_program": 2, "casting_mode": 0,
           "elementwise_affine": True, "BLOCK_SIZE": B}, "(2,)",  # the wrapper's one program a core: 2 here
        {"dX": f"{RSTD}[:, None] * (dY * W - {RSTD}[:, None] ** 2 / {C} * (dY * W * X).sum(-1, keepdim=True) * X)",
         "dW": f"(dY * X * {RSTD}[:, None]).view(2, 2, {C}).sum(1)"}, "dX", {"atol": 1e-5}, store_root="dx_base"),
}

X_HAT = "((X - X.mean(-1, keepdim=True)) * torch.rsqrt(X.var(-1, unbiased=False, keepdim=True) + 1e-6))"
ENTRIES |= {
    "liger.layer_norm_backward": Entry(
        OPS + "layer_norm", "_layer_norm_backward_kernel",
        {"X": X, "W": f"torch.randn({C})", "Mean": "X.mean(-1)", "RSTD": "torch.rsqrt(X.var(-1, unbiased=False) + 1e-6)",
         "dY": X, "DX": OUT, "DW": f"torch.empty(2, {C})", "DB": f"torch.empty(2, {C})"},
        {"X_ptr": "X", "stride_x": "X.stride(0)", "W_ptr": "W", "Mean_ptr": "Mean", "stride_mean": "Mean.stride(0)",
         "RSTD_ptr": "RSTD", "stride_rstd": "RSTD.stride(0)", "DX_ptr": "DX", "stride_dx": "DX.stride(0)",
         "DW_ptr": "DW", "stride_dw": "DW.stride(0)", "DB_ptr": "DB", "stride_db": "DB.stride(0)", "DY_ptr": "dY",
         "stride_dy": "dY.stride(0)", "n_rows": R, "n_cols": C, "rows_per_program": 2, "BLOCK_SIZE": B},
        "(2,)",  # the wrapper's one program a core: 2 here, 2 rows each
        {"DX": f"(lambda wdy: (wdy - ({X_HAT} * ({X_HAT} * wdy).mean(-1, keepdim=True) + wdy.mean(-1, keepdim=True)))"
               f" * torch.rsqrt(X.var(-1, unbiased=False, keepdim=True) + 1e-6))(W * dY)",
         "DW": f"(dY * {X_HAT}).view(2, 2, {C}).sum(1)", "DB": f"dY.view(2, 2, {C}).sum(1)"}, "DX", {"atol": 1e-4},
        store_root="row_DX_ptr"),
}

TARGETS = f"torch.cat((torch.randint(0, {C}, ({R - 1},)), torch.tensor([-100])))"  # the last row ignored
ENTRIES |= {
    # reduction "none", the gradient written over the logits as in training; the outputs it is not asked
    # for (z loss, accuracy, predicted tokens) and the class weights passed as None, as its wrapper does
    "liger.cross_entropy": Entry(
        OPS + "cross_entropy", "liger_cross_entropy_kernel",
        {"X": X, "Y": TARGETS, "loss": f"torch.zeros({R})"},
        {"X_ptr": "X", "X_stride": "X.stride(0)", "Y_ptr": "Y", "Y_stride": "Y.stride(0)", "weight_ptr": None,
         "loss_ptr": "loss", "z_loss_ptr": None, "loss_stride": "loss.stride(0)", "token_accuracy_ptr": None,
         "token_accuracy_stride": 0, "predicted_tokens_ptr": None, "predicted_tokens_stride": 0, "n_cols": C,
         "n_non_ignore": float(R - 1), "sum_non_ignore_weight": float(R - 1), "weight_sum": 0.0, "ignore_index": -100,
         "lse_square_scale": 0.0, "label_smoothing": 0.0, "reduction": "'none'", "softcap": None, "RETURN_Z_LOSS": False,
         "RETURN_TOKEN_ACCURACY": False, "RETURN_PREDICTED_TOKENS": False, "BLOCK_SIZE": B, "HAS_WEIGHT": False,
         "HAS_SOFTCAPPING": False, "HAS_GRADIENTS": True}, ROWS,
        {"loss": "torch.nn.functional.cross_entropy(X, Y, reduction='none')",
         "X": f"torch.where((Y < 0)[:, None], 0.0, torch.softmax(X, -1) - torch.nn.functional.one_hot(Y.clamp_min(0), {C}))"},
        "X", {"atol": 1e-5}),  # the first masked store through X: the ignored row's zeros
}
