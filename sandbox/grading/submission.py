"""A graded kernel as the grader takes it: the `@triton.jit` functions of the student's source, with
none of the module but its constexprs, its Triton modules, the libdevice functions it imported by
name and its autotune configs.

The grader (sandbox.grading.grader), a process that never runs the module, reads it from the source
the server kept (sandbox.grading.kept: nothing of the student's run process decides what is graded),
checks it (`check`) and loads it (`load`): each function's source, alone in a file at its own line,
in a namespace of nothing but `tl`, `triton`, the constexprs and libdevice's functions. What it
loads is only a kernel:

- every name a function reads is one of its parameters or locals, a constexpr or `@triton.jit`
  function the source states (sandbox.grading.kept), a Triton module the source imported, a libdevice function it imported by
  name (`from triton.language.extra.libdevice import rsqrt`: the package names the function, and the
  grader binds libdevice's own, never an object of the student's), or one of the few builtins
  Triton's front end knows (`range`, `min`, `max`, `len`, `int`, `float`, `print`);
- no attribute starts with `_`; an attribute of a Triton module is part of the language (a builtin,
  a jit function of Triton's library, a dtype, a class of the language: never another module, nor a
  plain function a Triton module holds, such as `tl.str_to_ty`, which evaluates text), and any other
  is one of a Triton tensor's, dtype's or constexpr's public attributes;
- no attribute is set (`tl.core.load = ...` would change Triton for the grader);
- no import, class, nested function, lambda, comprehension, `global`, `try`, `raise` or `with`;
- and Triton's front end accepts it (sandbox.grading.grader compiles it to TTIR before anything runs it).

On a host without a GPU the interpreter executes the functions' Python: these rules are what keep
that Python a kernel's.
"""
import ast
import importlib
import itertools
import sys
import types

import triton
import triton.language as tl

from sandbox.errors import RunError
from sandbox.launch.kernel import find_kernel, interpreter_mode
from sandbox.spec import parameter_names
from sandbox.trace import libdevice

MAX_FUNCTIONS = 64
MAX_SOURCE_BYTES = 128 * 1024  # a spec's source is at most this
MAX_CONSTEXPRS = 256
MAX_CONFIGS = 64
BUILTINS = ("range", "min", "max", "len", "int", "float", "print")
FORBIDDEN = {ast.Import: "an import", ast.ImportFrom: "an import", ast.Global: "`global`", ast.Nonlocal: "`nonlocal`",
             ast.Lambda: "a lambda", ast.ClassDef: "a class", ast.FunctionDef: "a nested function",
             ast.AsyncFunctionDef: "a nested function", ast.Await: "`await`", ast.Yield: "`yield`",
             ast.YieldFrom: "`yield`", ast.Try: "`try`", ast.Raise: "`raise`", ast.Delete: "`del`",
             ast.With: "`with`", ast.AsyncWith: "`with`", ast.AsyncFor: "`async for`", ast.ListComp: "a comprehension",
             ast.SetComp: "a comprehension", ast.DictComp: "a comprehension", ast.GeneratorExp: "a generator",
             ast.NamedExpr: "`:=`", ast.Match: "`match`", getattr(ast, "TryStar", ast.Try): "`try`"}
# Attributes of values (tensors, dtypes, constexprs): the public ones of Triton's own types.
VALUE_ATTRIBUTES = frozenset(
    {name for cls in (tl.tensor, tl.dtype, tl.constexpr, tl.pointer_type, tl.block_type)
     for name in dir(cls) if not name.startswith("_")} | {"shape", "dtype", "type", "value", "numel", "element_ty"})
DTYPES = frozenset(tl.dtype.SINT_TYPES + tl.dtype.UINT_TYPES + tl.dtype.FP_TYPES + tl.dtype.OTHER_TYPES)


def refused(message, line=None):
    return RunError("compile", f"the grader takes only a Triton kernel: {message}", type="NotAKernel", line=line,
                    field="source", hint="A graded kernel may use its parameters, its locals, tl, triton, libdevice, "
                                         "the constexprs and @triton.jit functions of its source: nothing else "
                                         "of the module reaches the grader.")


def is_triton_module(name):
    return name == "triton" or name == "triton.language" or name.startswith("triton.language.")


# ---------------------------------------------------------------- in the grader

def check(package):
    """The package checked field by field, its constants decoded and its libdevice functions found:
    (functions, constexprs, modules, libdevice functions, autotune). Raises RunError naming what is
    not a kernel's."""
    fields = {"kernel", "functions", "constexprs", "modules", "libdevice", "autotune", "unbound"}
    if not isinstance(package, dict) or set(package) != fields:
        raise refused("the run gave no kernel to grade")
    functions, constexprs, modules = package["functions"], package["constexprs"], package["modules"]
    imported, unbound = package["libdevice"], package["unbound"]
    if not (isinstance(unbound, dict) and isinstance(functions, dict) and 0 < len(functions) <= MAX_FUNCTIONS and isinstance(constexprs, dict)
            and len(constexprs) <= MAX_CONSTEXPRS and isinstance(modules, dict) and len(modules) <= 16
            and isinstance(imported, dict) and len(imported) <= MAX_CONSTEXPRS):
        raise refused("the run gave no kernel to grade")
    if package["kernel"] not in functions:
        raise refused(f"there is no @triton.jit function named {package['kernel']!r} in the source")
    names = list(functions) + list(constexprs) + list(modules) + list(imported)
    if not all(isinstance(n, str) and n.isidentifier() and not n.startswith("__") for n in names) or len(set(names)) != len(names):
        raise refused("a name of the module is not one a kernel can use")
    if sum(len(str(f.get("source", ""))) for f in functions.values() if isinstance(f, dict)) > MAX_SOURCE_BYTES:
        raise refused("the kernel's source is too long")
    decoded = {name: decode_constant(value, name) for name, value in constexprs.items()}
    for name, module in modules.items():
        if not (isinstance(module, str) and is_triton_module(module)):
            raise refused(f"{name!r} is not a Triton module")
    found = {name: libdevice_function(reference, name) for name, reference in imported.items()}
    allowed = set(functions) | set(decoded) | set(modules) | set(found) | set(BUILTINS)
    parsed = {name: check_function(name, f, allowed, modules, unbound) for name, f in functions.items()}
    return parsed, decoded, modules, found, check_autotune(package["autotune"])


def libdevice_function(reference, name):
    """libdevice's own function that `reference` ([module, function name]) names: the grader binds it,
    whatever the student's module held under `name`."""
    found = libdevice.resolve(reference)
    if found is None:
        raise refused(f"{name!r} is not a function of Triton's libdevice")
    return found


def decode_constant(value, name):
    if not (isinstance(value, list) and len(value) == 2 and all(isinstance(v, str) for v in value)):
        raise refused(f"the constexpr {name!r} is not a number, a string or a dtype")
    kind, text = value
    try:
        decoded = {"bool": lambda: {"True": True, "False": False}[text], "int": lambda: int(text),
                   "float": lambda: float(text), "str": lambda: text, "none": lambda: None,
                   "dtype": lambda: tl.dtype(text) if text in DTYPES else None}[kind]()
    except (KeyError, ValueError):
        raise refused(f"the constexpr {name!r} is not a number, a string or a dtype") from None
    if kind == "dtype" and decoded is None:
        raise refused(f"the constexpr {name!r} is not a Triton dtype")
    return tl.constexpr(decoded)


def check_autotune(autotune):
    if autotune is None:
        return None
    ok = (isinstance(autotune, dict) and set(autotune) == {"key", "configs"} and isinstance(autotune["key"], list)
          and all(isinstance(k, str) for k in autotune["key"]) and isinstance(autotune["configs"], list)
          and 0 < len(autotune["configs"]) <= MAX_CONFIGS)
    for config in autotune["configs"] if ok else ():
        ok = ok and (isinstance(config, dict) and set(config) == {"kwargs", "num_warps", "num_stages"}
                     and isinstance(config["kwargs"], dict)
                     and all(isinstance(v, (int, float, bool, str)) and isinstance(k, str) for k, v in config["kwargs"].items())
                     and all(isinstance(config[k], int) and not isinstance(config[k], bool) and 0 <= config[k] <= 64
                             for k in ("num_warps", "num_stages")))
    if not ok:
        raise refused("its @triton.autotune configs are not numbers by name")
    return autotune


def check_function(name, function, allowed, modules, unbound):
    """The function's `def` as an AST, checked; RunError at the first line that is not a kernel's."""
    if not (isinstance(function, dict) and set(function) == {"source", "line"} and isinstance(function["source"], str)
            and isinstance(function["line"], int) and 1 <= function["line"] <= 100_000):
        raise refused(f"{name!r} is not a function of the source")
    first = function["line"]
    try:
        tree = ast.parse(function["source"])
    except (SyntaxError, ValueError, RecursionError):
        raise refused(f"{name!r} is not a function of the source", first) from None
    if not (len(tree.body) == 1 and isinstance(tree.body[0], ast.FunctionDef) and tree.body[0].name == name
            and not tree.body[0].decorator_list):
        raise refused(f"{name!r} is not one plain function", first)
    node = tree.body[0]
    local = set(parameter_names(node))
    local |= {a.arg for a in (node.args.vararg, node.args.kwarg) if a is not None}
    local |= {n.id for n in ast.walk(node) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
    for sub in ast.walk(node):
        line = first + getattr(sub, "lineno", 1) - 1
        if sub is not node and type(sub) in FORBIDDEN:
            raise refused(f"{FORBIDDEN[type(sub)]} in {name}", line)
        if isinstance(sub, ast.Name) and isinstance(sub.ctx, ast.Load) and sub.id in unbound and sub.id not in local:
            raise refused(f"{name} reads {sub.id!r}: {unbound[sub.id]}", line)
        if isinstance(sub, ast.Name) and isinstance(sub.ctx, ast.Load) and sub.id not in local | allowed:
            raise refused(f"{name} reads {sub.id!r}, which is not a parameter, a local, a constexpr, a Triton module "
                          f"or a @triton.jit function of the source", line)
        if isinstance(sub, ast.Attribute) and not isinstance(sub.ctx, ast.Load):
            raise refused(f"{name} sets the attribute {sub.attr!r}: a kernel sets none", line)
        if isinstance(sub, ast.Attribute):
            check_attribute(sub, modules, local, line)
    return function


def check_attribute(node, modules, local, line):
    if node.attr.startswith("_"):
        raise refused(f"the attribute {node.attr!r}", line)
    chain, root = [node.attr], node.value
    while isinstance(root, ast.Attribute):
        chain.insert(0, root.attr)
        root = root.value
    if not (isinstance(root, ast.Name) and root.id in modules and root.id not in local):
        if node.attr not in VALUE_ATTRIBUTES:
            raise refused(f"the attribute {node.attr!r} (not one of a Triton tensor, dtype or constexpr)", line)
        return
    value, where = importlib.import_module(modules[root.id]), modules[root.id]
    for attr in chain:
        if not isinstance(value, types.ModuleType):
            if attr not in VALUE_ATTRIBUTES:
                raise refused(f"the attribute {attr!r} of {where}", line)
            return
        if not hasattr(value, attr):
            raise refused(f"{where} has no {attr!r}", line)
        value, where = getattr(value, attr), f"{where}.{attr}"
        if not triton_object(value):
            raise refused(f"{where} is not part of the Triton language", line)


def triton_object(value):
    """Is `value`, reached through a Triton module, part of the language: a Triton module, a builtin
    (tl.load), a @triton.jit function of Triton's library (tl.sum), a dtype or constexpr, a number, a
    class of the language (tl.static_range), or triton.cdiv / triton.next_power_of_2? Not a plain
    function a Triton module happens to hold: tl.str_to_ty, say, evaluates text as Python."""
    if isinstance(value, types.ModuleType):
        return is_triton_module(value.__name__)
    if any(value is helper for helper in (triton.cdiv, triton.next_power_of_2)):
        return True
    if isinstance(value, (tl.dtype, tl.constexpr)) or (isinstance(value, (int, float)) and not isinstance(value, bool)):
        return True
    if libdevice.reference(value) is not None:  # libdevice.rsqrt: the stub the compiler maps to the backend's
        return True
    if getattr(value, "__triton_builtin__", False) is True:
        return True
    if isinstance(value, triton.runtime.KernelInterface):
        return (getattr(getattr(value, "fn", None), "__module__", None) or "").startswith("triton.language")
    return isinstance(value, type) and value.__module__.startswith("triton.language")


_module_ids = itertools.count()


def bare_source(functions):
    """The file the grader loads: each function at the line it has in the student's source, and
    nothing else (so an error names the student's line)."""
    lines = []
    for name, function in sorted(functions.items(), key=lambda item: item[1]["line"]):
        start = function["line"] - 1
        if start < len(lines):
            raise refused(f"{name!r} overlaps another function of the source", function["line"])
        # Split where Python splits lines: never at a form feed or U+2028, which str.splitlines
        # would, turning a comment's tail into code the check never saw.
        lines += [""] * (start - len(lines)) + function["source"].rstrip("\n").split("\n")
    return "\n".join(lines) + "\n"


def load(checked, kernel_name, path, interpret):
    """The bare module at `path` (written from `bare_source`), its functions made `@triton.jit` for the
    interpreter or the compiler; returns the Kernel (sandbox.launch.kernel) named `kernel_name`, and the module."""
    functions, constexprs, modules, imported, autotune = checked
    with open(path) as f:
        code = compile(f.read(), path, "exec")
    module = types.ModuleType(f"graded_kernel_{next(_module_ids)}")
    module.__file__ = path
    sys.modules[module.__name__] = module
    module.__dict__.update({name: importlib.import_module(m) for name, m in modules.items()}, **constexprs, **imported)
    with interpreter_mode(interpret):
        exec(code, module.__dict__)
        for name in functions:
            module.__dict__[name] = triton.jit(module.__dict__[name])
        if autotune is not None:
            configs = [triton.Config(c["kwargs"], num_warps=c["num_warps"], num_stages=c["num_stages"])
                       for c in autotune["configs"]]
            module.__dict__[kernel_name] = triton.autotune(configs, key=autotune["key"])(module.__dict__[kernel_name])
    return find_kernel(module, kernel_name, phase="compile"), module

