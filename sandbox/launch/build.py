"""Building a launch from a spec: its inputs, its arguments and its grid, each an expression of the
user's evaluated here (this process is the sandbox). Errors name the spec field at fault.
"""
import math
import re

import torch
import triton
import triton.language as tl

from sandbox.errors import RunError
from sandbox.spec import EXPRESSION_MODULES
from sandbox.launch.kernel import GridError, find_kernel, load_module, triton_grid

_EMPTY = re.compile(r"^\s*torch\.empty(_like)?\s*\(")


def expression_namespace(module):
    """What an expression sees: sandbox.spec.EXPRESSION_MODULES, and the source's own public names."""
    helpers = {k: v for k, v in vars(module).items() if not k.startswith("_")}
    return {**dict(zip(EXPRESSION_MODULES, (torch, triton, tl, math))), **helpers}


def evaluate(expr, namespace, what, field, phase="build"):
    try:
        return eval(expr, namespace)  # the whole process is the sandbox: this is where user code runs
    except NameError as e:
        raise RunError(phase, f"{what} = {expr!r}: {e.name!r} is not an input, an argument or a name defined "
                              f"in your source", type="NameError", field=field) from None
    except SyntaxError as e:
        raise RunError(phase, f"{what} = {expr!r} is not a valid Python expression: {e.msg}", type="SyntaxError",
                       field=field) from None
    except RunError:
        raise
    except SystemExit as e:  # exit(), quit(), sys.exit() in an expression, or in what it calls
        raise RunError(phase, f"{what} = {expr!r} exited (sys.exit({e.code!r})) where it should give a value",
                       type="SystemExit", field=field) from None
    except BaseException as e:  # an Exception, or a BaseException of a library's
        raise RunError(phase, f"{what} = {expr!r} failed: {type(e).__name__}: {e}", type=type(e).__name__,
                       field=field) from None


def references(reference, namespace, device):
    """{output: expected tensor} of the reference's expressions, evaluated on the run's `device`: a
    tensor an expression makes (`torch.tensor([...])`, a lookup table) goes where the inputs are."""
    with torch.device(device):
        return {name: as_expected(evaluate(expr, namespace, f"reference for '{name}'", f"reference.{name}", phase="check"),
                                  name, expr)
                for name, expr in reference.items()}


def as_expected(value, name, expr):
    """A reference's value as the tensor the output is compared with: a tensor, or what torch.as_tensor
    takes (a number, a list of numbers, a numpy array)."""
    try:
        return torch.as_tensor(value)
    except (TypeError, ValueError, RuntimeError) as e:
        raise RunError("check", f"the reference for '{name}' = {expr!r} gave a {type(value).__name__}, not a tensor "
                                f"({e})", type="TypeError", field=f"reference.{name}") from None


def poison(tensor):
    """Fill a torch.empty output with a value the kernel would not write, to count unwritten elements."""
    if tensor.dtype.is_floating_point or tensor.dtype.is_complex:
        tensor.fill_(float("nan"))
    elif tensor.dtype == torch.bool:
        tensor.fill_(False)
    else:
        tensor.fill_(torch.iinfo(tensor.dtype).min)


def build_inputs(spec, namespace, device):
    """{name: tensor} in the spec's order, on `device`, and the names of the poisoned outputs."""
    inputs, poisoned = {}, set()
    torch.manual_seed(spec["options"]["seed"])
    with torch.device(device):
        for name, expr in spec["inputs"].items():
            value = evaluate(expr, {**namespace, **inputs}, f"input '{name}'", f"inputs.{name}")
            if not isinstance(value, torch.Tensor):
                raise RunError("build", f"input '{name}' = {expr!r} is a {type(value).__name__}, not a torch tensor",
                               field=f"inputs.{name}")
            if value.device.type != torch.device(device).type:
                value = value.to(device)
            if _EMPTY.match(expr):
                poison(value)
                poisoned.add(name)
            inputs[name] = value
    return inputs, poisoned


def build_args(spec, kernel, namespace):
    """{parameter: value} for the launch, and the scope later expressions see (inputs and arguments).
    An autotuned meta-parameter takes the autotuner's first config here: it stands in for the grid,
    the trace and the interpreter's launch, while a GPU launch leaves the choice to the autotuner."""
    params = kernel.params
    names = [p[0] for p in params]
    unknown = [a for a in spec["args"] if a not in names]
    if unknown:
        raise RunError("build", f"{', '.join(repr(a) for a in unknown)} is not a parameter of {spec['kernel']} "
                                f"(its parameters: {', '.join(names)})", field=f"args.{unknown[0]}")
    tuned = kernel.tuned_names
    args, scope = {}, dict(namespace)
    for name, _, has_default in params:
        if name in tuned:
            if name in spec["args"]:
                raise RunError("build", f"argument '{name}' is chosen by @triton.autotune (its configs set it): "
                                        f"remove it from the arguments", field=f"args.{name}")
            continue
        if name not in spec["args"]:
            if has_default or name in kernel.heuristics:
                continue
            raise RunError("build", f"argument '{name}' of {spec['kernel']} is not mapped: give it an input "
                                    f"name, an expression such as x.numel(), or a literal", field=f"args.{name}")
        value = spec["args"][name]
        if isinstance(value, str):
            value = evaluate(value, scope, f"argument '{name}'", f"args.{name}")
        args[name] = scope[name] = value
    settle(kernel, args)
    for name, value in kernel.tuned.items():
        args[name] = scope[name] = value
    for name, rule in kernel.heuristics.items():
        if name not in spec["args"]:  # @triton.heuristics computes it at launch, as here, from the other arguments
            try:
                args[name] = scope[name] = rule(dict(args))
            except Exception as e:
                raise RunError("build", f"the @triton.heuristics rule for '{name}' failed: {type(e).__name__}: {e}",
                               type=type(e).__name__, field="source") from None
    return args, scope


def settle(kernel, args):
    """The autotuner's config for the interpreter, from the arguments (sandbox.launch.kernel.Kernel.settle)."""
    try:
        kernel.settle(args)
    except Exception as e:
        raise RunError("build", f"the @triton.autotune prune_configs_by of {kernel.name} failed: "
                                f"{type(e).__name__}: {e}", type=type(e).__name__, field="source") from None


def build_grid(spec, args, scope):
    """The grid as (gx, gy, gz) from the spec's expression or `lambda meta: ...`."""
    expr = spec["grid"].strip()
    meta = dict(args)
    if expr.startswith("lambda"):
        fn = evaluate(expr, scope, "grid", "grid")
        try:
            grid = fn(meta)
        except Exception as e:
            raise RunError("build", f"grid = {expr!r} failed: {type(e).__name__}: {e}", type=type(e).__name__,
                           field="grid") from None
    else:
        grid = evaluate(expr, {**scope, "meta": meta}, "grid", "grid")
    if isinstance(grid, int):
        grid = (grid,)
    if not (isinstance(grid, (tuple, list)) and len(grid) >= 1 and all(isinstance(g, int) for g in grid)):
        raise RunError("build", f"grid = {expr!r} gave {grid!r}: it must be a tuple of 1 to 3 integers, "
                                f"e.g. (triton.cdiv(n, meta['BLOCK_SIZE']),)", field="grid")
    if any(g < 1 for g in grid):
        raise RunError("build", f"grid = {expr!r} gave {tuple(grid)}: every dimension must be at least 1 program",
                       field="grid")
    try:
        return triton_grid(grid)
    except GridError as e:
        raise RunError("build", f"grid = {expr!r} gave {e}", field="grid") from None


class GridPerConfig:
    """The spec's grid as a callable of meta, for the autotuner to evaluate with each config it tries."""

    def __init__(self, spec, scope):
        self.spec, self.scope, self.last = spec, scope, None

    def __call__(self, meta):
        self.last = build_grid(self.spec, meta, {**self.scope, **meta})
        return self.last


def launch_tensors(inputs, args):
    """The inputs, plus tensors made inside an argument expression (named by their parameter)."""
    storages = {t.untyped_storage().data_ptr() for t in inputs.values()}
    extra = {name: value for name, value in args.items()
             if isinstance(value, torch.Tensor) and value.untyped_storage().data_ptr() not in storages}
    return {**inputs, **extra}


def flop_count(expr, scope):
    """options.flops: a number, or an expression over inputs and arguments such as "2 * M * N * K"."""
    if expr is None or expr == "":
        return None
    value = evaluate(expr, dict(scope), "options.flops", "options.flops") if isinstance(expr, str) else expr
    if isinstance(value, torch.Tensor) and value.numel() == 1:
        value = value.item()
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not value > 0:
        raise RunError("build", f"options.flops = {expr!r} gave {value!r}: it must be a positive number of "
                                f"floating-point operations, e.g. \"2 * M * N * K\" for a matmul", field="options.flops")
    return value


def prepare(spec, path, interpret, device, given_inputs=None, given_config=None):
    """A launch of `spec` from its source file at `path`, for the interpreter or the compiler: the
    kernel, the names expressions see, the inputs on `device` (and which are poisoned), the arguments,
    the grid and the scope later expressions see. `given_inputs`: the inputs as tensors already
    (a script's launch replayed: sandbox.run.replay), in place of the spec's expressions;
    `given_config`: the autotuner's config that launch ran (Kernel.keep_to)."""
    module = load_module(path, interpret)
    kernel = find_kernel(module, spec["kernel"])
    if given_config is not None and kernel.autotuner is not None:
        kernel.keep_to(given_config)
    namespace = expression_namespace(module)
    inputs, poisoned = (given_inputs, set()) if given_inputs is not None else build_inputs(spec, namespace, device)
    with torch.device(device):  # a tensor made in an argument expression goes where the inputs are
        args, scope = build_args(spec, kernel, {**namespace, **inputs})
    return kernel, namespace, inputs, poisoned, args, build_grid(spec, args, scope), scope
