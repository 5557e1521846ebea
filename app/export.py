"""Export a run spec as a standalone Python script that needs only triton and torch.

Pure text generation: the web process never runs the script. The kernel source goes in as
written; the spec's expressions go in as Python literals (repr) and the script evaluates them
the way the playground does (inputs in order, then arguments, then the grid with `meta`).
"""
import ast
import re

from sandbox.spec import is_script, normalize

_EMPTY = re.compile(r"^\s*torch\.empty(_like)?\s*\(")

HEADER = '''"""{title}

Exported from the Triton Playground. Runs the kernel on a CUDA GPU when there is one, otherwise
in Triton's interpreter on the CPU (TRITON_INTERPRET=1 forces the interpreter). Checks the
outputs against the PyTorch reference, prints OK or the mismatch, and on a GPU times the kernel
and the reference.
"""
import os
import sys

import torch

# Triton picks the interpreter when it is imported, so decide before `import triton`.
{choose_interpreter}
INTERPRET = os.environ.get("TRITON_INTERPRET") == "1"
DEVICE = "cpu" if INTERPRET else "cuda"

import triton  # noqa: E402

'''

SPEC = '''

# %% The run spec
KERNEL = {kernel}
# Built in this order on DEVICE; later inputs may use earlier ones.
INPUTS = {inputs}
# Outputs made with torch.empty: filled with NaN first, so elements the kernel never writes show up.
POISONED = {poisoned}
# One entry per kernel parameter: an expression over the inputs (and earlier arguments), or a literal.
ARGS = {args}
# `meta` is the dict of all kernel arguments by parameter name.
GRID = {grid}
# The expected final value of each output, from the inputs as they were before the launch.
REFERENCE = {reference}
OPTIONS = {options}
'''

# A puzzle's check stays on the server: the script says so, and prints what the kernel wrote.
PUZZLE_NOTE = '''# The puzzle "{puzzle}": its check runs on the server (the reference is not shared), so this
# script prints what your kernel wrote. To be graded, Run it on the puzzle's page: /puzzles/{puzzle}

'''

RUNNER = '''

# %% Run, check, time
# (atol, rtol) by dtype when OPTIONS gives none; tl.dot on fp32 may use tf32 on a GPU.
TOLERANCES = {
    torch.float64: (1e-7, 1e-7),
    torch.float32: (1e-5, 1.3e-6),
    torch.float16: (1e-3, 1e-3),
    torch.bfloat16: (1e-2, 1.6e-2),
}


def evaluate(expr, names):
    """Strings are Python expressions over torch, triton, the kernel source and `names`."""
    return eval(expr, {**globals(), **names}) if isinstance(expr, str) else expr


def poison(tensor):
    if tensor.dtype.is_floating_point:
        tensor.fill_(float("nan"))
    elif tensor.dtype != torch.bool:
        tensor.fill_(torch.iinfo(tensor.dtype).min)


def build_inputs():
    torch.manual_seed(OPTIONS["seed"])
    inputs = {}
    with torch.device(DEVICE):
        for name, expr in INPUTS.items():
            inputs[name] = evaluate(expr, inputs).to(DEVICE)
            if name in POISONED:
                poison(inputs[name])
    return inputs


def build_args(inputs):
    names, args = dict(inputs), {}
    for name, expr in ARGS.items():
        args[name] = names[name] = evaluate(expr, names)
    return args, names


def build_grid(args, names):
    if GRID.lstrip().startswith("lambda"):
        return evaluate(GRID, names)(dict(args))
    return evaluate(GRID, {**names, "meta": dict(args)})


def launch(kernel, grid, args):
    autotuned = isinstance(kernel, triton.runtime.autotuner.Autotuner)
    tuning = {} if autotuned else {"num_warps": OPTIONS["num_warps"], "num_stages": OPTIONS["num_stages"]}
    kernel[grid](**args, **tuning)


def references(names):
    return {name: torch.as_tensor(evaluate(expr, names)) for name, expr in REFERENCE.items()}


def clones(tensors):
    return {name: tensor.clone() for name, tensor in tensors.items()}


def compare(name, actual, expected):
    """Print how `actual` compares with `expected`; True when they match."""
    default_atol, default_rtol = TOLERANCES.get(actual.dtype, (0.0, 0.0))
    atol = default_atol if OPTIONS["atol"] is None else OPTIONS["atol"]
    rtol = default_rtol if OPTIONS["rtol"] is None else OPTIONS["rtol"]
    expected = expected.to(actual.device, actual.dtype).broadcast_to(actual.shape)
    try:
        torch.testing.assert_close(actual, expected, atol=atol, rtol=rtol)
    except AssertionError as mismatch:
        print(f"MISMATCH in {name}: {mismatch}")
        if name in POISONED and actual.dtype.is_floating_point:
            print(f"  {int(actual.isnan().sum())} element(s) of {name} were never written (still NaN)")
        return False
    print(f"OK: {name} matches the reference (atol={atol}, rtol={rtol})")
    return True


def bench(kernel, grid, args, before, names):
    kernel_ms = triton.testing.do_bench(lambda: launch(kernel, grid, args), return_mode="median")
    line = f"kernel: {kernel_ms:.4f} ms"
    if REFERENCE:
        names_before = clones(before)
        reference_ms = triton.testing.do_bench(lambda: references(names_before), return_mode="median")
        line += f"  reference: {reference_ms:.4f} ms  speedup: {reference_ms / kernel_ms:.2f}x"
    if OPTIONS.get("flops"):
        line += f"  {evaluate(OPTIONS['flops'], names) / kernel_ms / 1e9:.2f} TFLOP/s"
    print(line)


def show_written(before, after):
    """Without a reference to check against: what the launch wrote, tensor by tensor."""
    wrote = False
    for name, tensor in after.items():
        if not torch.is_tensor(tensor):
            continue
        if name in POISONED and tensor.dtype.is_floating_point:
            written = ~tensor.isnan()
        else:
            written = tensor != before[name]
            if tensor.dtype.is_floating_point:
                written &= ~(tensor.isnan() & before[name].isnan())
        if written.any():
            wrote = True
            print(f"{name}: the kernel wrote {int(written.sum())} of {tensor.numel()} elements")
            print(tensor)
    if not wrote:
        print("The kernel wrote no element of any input.")


def main():
    kernel = globals()[KERNEL]
    inputs = build_inputs()
    before = clones(inputs)
    args, names = build_args(inputs)
    grid = build_grid(args, names)
    print(f"{KERNEL}: grid {tuple(grid)} on {'the Triton interpreter (CPU)' if INTERPRET else torch.cuda.get_device_name()}")
    launch(kernel, grid, args)
    ok = True
    if OPTIONS["check"] and REFERENCE:
        expected = references(clones(before))
        ok = all([compare(name, inputs[name], expected[name]) for name in expected])
        print("OK" if ok else "MISMATCH: the kernel's outputs differ from the reference")
    else:
        show_written(before, inputs)
    if OPTIONS["bench"] and not INTERPRET:
        bench(kernel, grid, args, before, names)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
'''


def _literal(value):
    """A dict one entry per line, anything else as its repr."""
    if not isinstance(value, dict) or not value:
        return repr(value)
    return "{\n" + "".join(f"    {key!r}: {item!r},\n" for key, item in value.items()) + "}"


def _kernel_params(source, kernel):
    """The kernel's parameter names in order, read from the source without running it."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return []
    for node in tree.body:
        if isinstance(node, ast.FunctionDef) and node.name == kernel:
            return [a.arg for a in node.args.posonlyargs + node.args.args + node.args.kwonlyargs]
    return []


def _args_in_parameter_order(spec):
    """Arguments are evaluated in the kernel's parameter order, as the playground does."""
    params = [p for p in _kernel_params(spec["source"], spec["kernel"]) if p in spec["args"]]
    rest = [name for name in spec["args"] if name not in params]
    return {name: spec["args"][name] for name in params + rest}


# What the script's header imports already: the same line in the kernel's source is dropped.
HEADER_IMPORTS = {"import os", "import sys", "import torch", "import triton"}


def _source_without_header_imports(source):
    """The kernel's source minus its top-level lines that repeat an import of the header."""
    return "\n".join(line for line in source.strip("\n").split("\n") if line.rstrip() not in HEADER_IMPORTS)


def export_script(spec, title=None):
    """A standalone script (str) that builds the inputs, launches, checks and times `spec`. A script
    spec's program is one already, and is its own export."""
    spec = normalize(spec)
    if is_script(spec):
        return spec["source"]
    options = {key: spec["options"][key] for key in
               ("num_warps", "num_stages", "seed", "check", "bench", "atol", "rtol", "flops")}
    if spec["options"]["device"] == "interpreter":
        choose = 'os.environ["TRITON_INTERPRET"] = "1"  # the run spec asks for the interpreter'
    else:
        choose = 'if not torch.cuda.is_available():\n    os.environ["TRITON_INTERPRET"] = "1"'
    header = HEADER.format(title=(title or spec["kernel"]).replace('"""', "'''"), choose_interpreter=choose)
    if spec["options"]["puzzle"]:
        header += PUZZLE_NOTE.format(puzzle=spec["options"]["puzzle"])
    constants = SPEC.format(
        kernel=repr(spec["kernel"]),
        inputs=_literal(spec["inputs"]),
        poisoned=_literal([name for name, expr in spec["inputs"].items() if _EMPTY.match(expr)]),
        args=_literal(_args_in_parameter_order(spec)),
        grid=repr(spec["grid"]),
        reference=_literal(spec["reference"]),
        options=_literal(options))
    return header + _source_without_header_imports(spec["source"]).strip("\n") + "\n" + constants + RUNNER
