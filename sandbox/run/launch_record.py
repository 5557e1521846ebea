"""A captured launch as script mode lists it (`result.launches`, docs/result.md): its arguments bound
as Triton binds them, its grid, and its record."""
import math

import torch

from sandbox.launch.kernel import described, triton_grid

DEFAULT_NUM_WARPS, DEFAULT_NUM_STAGES = 4, 3  # Triton's, for a launch that names neither
MAX_TEXT = 256  # characters of a string argument kept in its launch's record


def bind(kernel, args, kwargs):
    """{parameter: value} of one launch, defaults included, as Triton binds them."""
    params = kernel.signature
    bound = dict(kernel.defaults)
    bound.update(zip(params, args))
    bound.update({name: value for name, value in kwargs.items() if name in params})
    return {name: bound[name] for name in params if name in bound}  # in the signature's order


def resolve_grid(grid, meta):
    """The launch's grid as 3 ints, as Triton launches it (raises GridError where Triton would not)."""
    return triton_grid(grid(meta) if callable(grid) else grid)


def grid_text(grid):
    shown = list(grid)
    while len(shown) > 1 and shown[-1] == 1:
        shown.pop()
    return ", ".join(map(str, shown)) + ("," if len(shown) == 1 else "")


def describe_launch(index, kernel, arguments, grid, line, num_warps, num_stages, config):
    """A launch's record in `result.launches.list` (docs/result.md)."""
    constexprs = {name for name, is_constexpr, _ in kernel.params if is_constexpr}
    return {"index": index, "kernel": kernel.name, "line": line, "grid": list(grid),
            "args": [describe_argument(name, value, name in constexprs) for name, value in arguments.items()],
            "num_warps": num_warps, "num_stages": num_stages, "config": None if config is None else described(config),
            "ms": None, "bounds": "unchecked"}


def describe_argument(name, value, constexpr):
    if isinstance(value, torch.Tensor):
        return {"name": name, "kind": "tensor", "shape": list(value.shape),
                "dtype": str(value.dtype).removeprefix("torch."), "strides": list(value.stride()),
                "device": str(value.device)}
    if hasattr(value, "value") and type(value).__name__ == "constexpr":
        value = value.value
    if not (value is None or isinstance(value, (bool, int, float, str))):
        value = repr(value)[:80]
    elif isinstance(value, str) and len(value) > MAX_TEXT:
        value = value[:MAX_TEXT] + "…"  # a launch's record stays small, whatever the program passes
    elif isinstance(value, float) and not math.isfinite(value):
        value = repr(value)
    return {"name": name, "kind": "constexpr" if constexpr else "scalar", "value": value}
