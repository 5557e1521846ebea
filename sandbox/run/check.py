"""Compare a kernel's outputs with the reference: errors, mismatches and never-written elements."""
import torch

from sandbox.errors import RunError

# (atol, rtol) by dtype. fp32 follows torch.testing; half types are looser. fp32 on a GPU may go
# through tf32 in tl.dot: such specs set atol/rtol in their options.
TOLERANCES = {
    torch.float64: (1e-7, 1e-7),
    torch.float32: (1e-5, 1.3e-6),
    torch.float16: (1e-3, 1e-3),
    torch.bfloat16: (1e-2, 1.6e-2),
}


def tolerances(dtype, atol=None, rtol=None):
    default_atol, default_rtol = TOLERANCES.get(dtype, (0.0, 0.0))
    return (default_atol if atol is None else atol), (default_rtol if rtol is None else rtol)


def unwritten_mask(actual, poisoned):
    """Elements still holding the poison written before the launch."""
    if not poisoned:
        return torch.zeros_like(actual, dtype=torch.bool)
    if actual.dtype.is_floating_point:
        return torch.isnan(actual)
    if actual.dtype == torch.bool:
        return torch.zeros_like(actual, dtype=torch.bool)
    return actual == torch.iinfo(actual.dtype).min


def compare_one(name, actual, expected, poisoned, atol, rtol):
    # On the outputs' device: a GPU compares 16M elements in milliseconds where the host takes ~0.5 s.
    actual = actual.detach()
    expected = expected.detach().to(actual.device)
    if expected.shape != actual.shape:
        try:
            expected = expected.broadcast_to(actual.shape)
        except RuntimeError:
            raise RunError("check", f"the reference for '{name}' has shape {tuple(expected.shape)} but '{name}' "
                                    f"has shape {tuple(actual.shape)}", field=f"reference.{name}") from None
    atol, rtol = tolerances(actual.dtype, atol, rtol)
    unwritten = unwritten_mask(actual, poisoned) & ~unwritten_mask(expected.to(actual.dtype), poisoned)
    a, e = actual.double(), expected.double()
    close = torch.isclose(a, e, rtol=rtol, atol=atol, equal_nan=True) & ~unwritten
    both_finite = torch.isfinite(a) & torch.isfinite(e)
    abs_err = (a - e).abs().where(both_finite, torch.zeros_like(a))
    rel_err = abs_err / e.abs().clamp_min(torch.finfo(torch.float64).tiny)
    mismatched = int((~close).sum())
    return {"ok": mismatched == 0,
            "max_abs_err": float(abs_err.max()) if a.numel() else 0.0,
            "max_rel_err": float(rel_err.where(e != 0, torch.zeros_like(rel_err)).max()) if a.numel() else 0.0,
            "mismatched": mismatched, "unwritten": int(unwritten.sum()), "numel": a.numel(),
            "atol": atol, "rtol": rtol}


def compare(actual, expected, poisoned, atol=None, rtol=None):
    outputs = {name: compare_one(name, actual[name], expected[name], name in poisoned, atol, rtol)
               for name in expected}
    return {"ok": all(o["ok"] for o in outputs.values()), "outputs": outputs}
