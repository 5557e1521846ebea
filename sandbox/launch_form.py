"""A launch a script made, as a form run's spec: "Make a form from this launch".

From a record of `result.launches.list` (docs/result.md) and the program's source: the program's
definitions (its launches and checks left out: a form run imports the source), the kernel, inputs
as torch expressions that rebuild the captured tensors (their values where the program made them
with calls a form can repeat: the same fills, the same draws from the same seed in the same order;
else random values of the captured shapes, dtypes and strides, and a note says which), the
arguments, and the grid as the captured tuple. Pure Python and free of user-code evaluation (it builds text), so the
web process may answer it; the spec is checked by sandbox.spec.normalize like any other.
"""
import ast
import math
import re

from sandbox.spec import MAX_SOURCE_BYTES, NUM_STAGES, NUM_WARPS, SpecError, normalize, parse_source

# A tensor's sizes and strides are int64s in torch: a larger one is no launch's.
MAX_EXTENT = 2 ** 63 - 1
DTYPE = re.compile(r"^(bool|u?int(8|16|32|64)|float(8\w*|16|32|64)|bfloat16|complex(64|128))$")


def form_of(source, launch, seed=0):
    """(the form run's spec of `launch`, a launch record of the program `source`; notes on its
    inputs' values, for the person who asked); raises SpecError."""
    _expect(len(source.encode()) <= MAX_SOURCE_BYTES, f"'source' is larger than {MAX_SOURCE_BYTES // 1024} KB", "source")
    _expect(isinstance(launch, dict), "'launch' must be a launch of result.launches.list", "launch")
    kernel = launch.get("kernel")
    _expect(isinstance(kernel, str) and kernel.isidentifier(), "launch.kernel must name the kernel", "launch.kernel")
    args = launch.get("args")
    _expect(isinstance(args, list) and all(isinstance(a, dict) and str(a.get("name", "")).isidentifier()
                                           for a in args), "launch.args must list the launch's arguments", "launch.args")
    tuned = set(launch.get("config") or {}) - {"num_warps", "num_stages"}
    tensors, values, parameters = {}, {}, {a["name"] for a in args}
    for arg in args:
        name = arg["name"]
        if name in tuned:
            continue  # the autotuner's configs set it
        if arg.get("kind") == "tensor":
            input_name = _input_name(name, parameters, tensors)
            tensors[input_name] = arg
            values[name] = input_name
        else:
            values[name] = _literal(arg.get("value"), f"launch.args.{name}")
    inputs, drawn_seed, notes = _inputs(tensors)
    options = {"seed": seed if drawn_seed is None else drawn_seed}
    if launch.get("config") is None:
        if launch.get("num_warps") in NUM_WARPS:
            options["num_warps"] = launch["num_warps"]
        if isinstance(launch.get("num_stages"), int) and NUM_STAGES[0] <= launch["num_stages"] <= NUM_STAGES[1]:
            options["num_stages"] = launch["num_stages"]
    spec = normalize({"source": definitions(source), "kernel": kernel, "inputs": inputs, "args": values,
                      "grid": _grid(launch.get("grid")), "reference": {}, "options": options})
    return spec, notes


def _inputs(tensors):
    """({input: expression} in the order a form run builds them, the seed they are drawn from or None,
    notes). The program's draws since its seed come first, in its order (a draw no argument kept is
    made and dropped inside the next one's expression: `(torch.rand(...), torch.randn(...))[-1]`),
    then its fills, then random tensors for the values that cannot be made again (which draw from
    the generator after the program's draws, so never before them)."""
    drawn, draws, seed, filled, random, why = {}, [], None, {}, {}, {}
    for name, arg in tensors.items():
        field = f"launch.args.{arg['name']}.values"
        origin = arg.get("values") if isinstance(arg.get("values"), dict) else {"why": "not recorded"}
        if "expression" in origin:
            filled[name] = _expression(origin["expression"], field)
            continue
        mine = origin.get("draws")
        if isinstance(mine, list) and mine and type(origin.get("seed")) is int:
            mine = [_expression(e, f"{field}.draws") for e in mine]
            shorter, longer = sorted([mine, draws], key=len)
            if seed in (None, origin["seed"]) and longer[:len(shorter)] == shorter:
                seed, draws = origin["seed"], longer
                drawn.setdefault(len(mine) - 1, name)
                continue
            origin = {"why": f"drawn from seed {origin['seed']} by other draws than the launch's other inputs"}
        random[name] = _tensor_expression(arg)
        why[name] = str(origin.get("why", "not recorded"))[:200]
    inputs, pending = {}, []
    for index, expression in enumerate(draws):
        pending.append(expression)
        if index in drawn:
            inputs[drawn[index]] = pending[0] if len(pending) == 1 else f"({', '.join(pending)})[-1]"
            pending = []
    notes = []
    if drawn:
        notes.append(f"{', '.join(inputs)}: drawn again from seed {seed} as the program drew them, the same values.")
    if filled:
        notes.append(f"{', '.join(filled)}: made by the program's own torch call.")
    notes += [f"{name}: random values of the launch's shape, dtype and strides, not the program's ({reason})."
              for name, reason in why.items()]
    return {**inputs, **filled, **random}, seed, notes


def _expression(text, field):
    _expect(isinstance(text, str) and 0 < len(text) <= 300 and text.startswith("torch."),
            f"{field} must be a torch call", field)
    return text


def _expect(cond, message, field):
    if not cond:
        raise SpecError(message, field)


def definitions(source, in_place=False):
    """The program's imports, functions, classes and constant assignments, in order: what a form run's
    import of the source may execute (not the launches, checks and benchmarks of the program).
    `in_place`: each on its own lines, the rest blank, so that its lines are the program's (a
    launch replayed alone, sandbox.run.replay: its errors name them, and Triton's cache, whose key
    holds a kernel's first line, finds what the program's run compiled)."""
    tree = parse_source(source, "the program")
    lines = source.splitlines()
    kept, blank = [], [""] * len(lines)
    for node in tree.body:
        if isinstance(node, (ast.Import, ast.ImportFrom, ast.FunctionDef, ast.ClassDef)) or _is_constant(node):
            first = min([node.lineno] + [d.lineno for d in getattr(node, "decorator_list", [])])
            last = _last_line(node, lines)
            kept.append("\n".join(lines[first - 1:last]))
            blank[first - 1:last] = lines[first - 1:last]
    return "\n".join(blank) + "\n" if in_place else "\n\n".join(kept) + "\n"


def _last_line(node, lines):
    """A definition's last line, with the comments indented under it after its last statement (a
    timeline region's closing `# endregion`: sandbox.timeline.regions)."""
    last = node.end_lineno
    if not isinstance(node, (ast.FunctionDef, ast.ClassDef)):
        return last
    for number in range(last + 1, len(lines) + 1):
        text = lines[number - 1]
        if text.strip() and not (text.lstrip().startswith("#") and len(text) - len(text.lstrip()) > node.col_offset):
            break
        if text.strip():
            last = number
    return last


def _is_constant(node):
    """`BLOCK = 128`, `SCALE: tl.constexpr = tl.constexpr(2.0)`: an assignment of literals only."""
    return isinstance(node, (ast.Assign, ast.AnnAssign)) and node.value is not None and _literal_only(node.value)


def _literal_only(node):
    """Walked without recursion: a constant nested thousands deep is only a long walk."""
    stack = [node]
    while stack:
        node = stack.pop()
        if isinstance(node, (ast.Tuple, ast.List)):
            stack.extend(node.elts)
        elif isinstance(node, ast.UnaryOp):
            stack.append(node.operand)
        elif isinstance(node, ast.BinOp):
            stack += [node.left, node.right]
        elif isinstance(node, ast.Call):  # tl.constexpr(...)
            name = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", None)
            if name != "constexpr" or node.keywords:
                return False
            stack.extend(node.args)
        elif not isinstance(node, ast.Constant):
            return False
    return True


def _input_name(param, parameters, taken):
    """`x_ptr` → `x`, unless another parameter or input has that name."""
    name = param.removesuffix("_ptr") or param
    if name != param and (name in taken or name in parameters):
        name = param
    return name


def _tensor_expression(arg):
    """A torch expression for a tensor of the captured shape, dtype and strides (random values)."""
    field = f"launch.args.{arg['name']}"
    shape, strides, dtype = arg.get("shape"), arg.get("strides"), arg.get("dtype")
    _expect(isinstance(dtype, str) and DTYPE.match(dtype), f"{field}.dtype is not a torch dtype", f"{field}.dtype")
    _expect(_ints(shape) and _ints(strides) and len(shape) == len(strides), f"{field} needs its shape and strides as "
                                                                             f"lists of integers up to 2**63 - 1", field)
    _expect(_fits(shape), f"{field}.shape has more than 2**63 - 1 elements", f"{field}.shape")
    contiguous = _contiguous_strides(shape)
    if all(size <= 1 or stride == expected for size, stride, expected in zip(shape, strides, contiguous)):
        return _random(tuple(shape), dtype)
    span = 1 + sum((size - 1) * stride for size, stride in zip(shape, strides)) if math.prod(shape) else 0
    return f"{_random((span,), dtype)}.as_strided({tuple(shape)}, {tuple(strides)})"


def _fits(shape):
    """Whether the shape's sizes (an empty dimension counted as 1) multiply to at most MAX_EXTENT:
    stopped as soon as they pass it, so no product grows past 64 bits."""
    count = 1
    for size in shape:
        count *= max(size, 1)
        if count > MAX_EXTENT:
            return False
    return True


def _contiguous_strides(shape):
    """A row-major tensor's strides, in one pass from the last dimension."""
    strides, step = [], 1
    for size in reversed(shape):
        strides.append(step)
        step *= max(size, 1)
    return strides[::-1]


def _random(shape, dtype):
    if dtype == "bool":
        return f"torch.rand({shape}) < 0.5"
    if "int" in dtype:
        return f"torch.randint(0, 100, {shape}, dtype=torch.{dtype})"
    if dtype.startswith("float8"):
        return f"torch.randn({shape}).to(torch.{dtype})"
    return f"torch.randn({shape}, dtype=torch.{dtype})"


def _ints(values):
    return isinstance(values, list) and all(type(v) is int and 0 <= v <= MAX_EXTENT for v in values)


def _literal(value, field):
    """A scalar or constexpr argument as the spec takes it: a number or bool as itself, anything
    else as the Python expression of its value (a string constexpr: its quoted text)."""
    if value is None or isinstance(value, (bool, int)) or isinstance(value, float) and math.isfinite(value):
        return value
    if value in ("nan", "inf", "-inf"):
        return f"float({value!r})"
    _expect(isinstance(value, str), f"{field} is not a value a launch takes", field)
    return repr(value)


def _grid(grid):
    _expect(isinstance(grid, list) and 1 <= len(grid) <= 3 and all(type(g) is int and g >= 1 for g in grid),
            "launch.grid must be 1 to 3 positive integers", "launch.grid")
    shown = list(grid)
    while len(shown) > 1 and shown[-1] == 1:
        shown.pop()
    return "(" + ", ".join(map(str, shown)) + ("," if len(shown) == 1 else "") + ")"
