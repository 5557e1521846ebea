"""The graded kernel as the kept source states it: read, never run, from the text the server keeps
(the text a teacher's dashboard shows), by the grader itself. Nothing the student's run process
says reaches it.

What the text states, at the module's top level, is all that counts:

- `def`s decorated with Triton's `@triton.jit` (however imported: `from triton import jit` too), the
  graded one optionally under `@triton.autotune(configs=[triton.Config({...}, num_warps=..,
  num_stages=..), ...], key=[...])` (the lists written there, or as a name assigned once at the top
  level);
- constexprs: `NAME = tl.constexpr(<constant>)`, a constant being a number, a string, a bool, None,
  a dtype (`tl.float32`), an earlier constexpr, or arithmetic of numbers;
- imports of Triton's modules and of libdevice's functions.

A name the module binds anywhere else, or more than once (a second `def`, an assignment, a loop, an
import in an `if`, `global` in a function), is none of these: a kernel that reads it is refused,
naming where it is bound. What the module's code would do if it ran (rewrite a kernel's text,
`exec`, `setattr`, `globals()[...] = ...`) changes nothing: the grader compiles the `def`s as written.
"""
import ast
import importlib
import types

import triton
import triton.language as tl

from sandbox.grading.submission import (DTYPES, MAX_CONFIGS, MAX_SOURCE_BYTES, is_triton_module, refused)
from sandbox.trace import libdevice

AUTOTUNE_ARGS = ("configs", "key")
CONFIG_ARGS = ("kwargs", "num_warps", "num_stages")
DEFINED_HOW = ("only `def`s decorated with @triton.jit, `NAME = tl.constexpr(<constant>)` and imports of "
               "Triton's modules count, each bound once at the top level")
ARITHMETIC = {ast.Add: lambda a, b: a + b, ast.Sub: lambda a, b: a - b, ast.Mult: lambda a, b: a * b,
              ast.Div: lambda a, b: a / b, ast.FloorDiv: lambda a, b: a // b, ast.Mod: lambda a, b: a % b,
              ast.Pow: lambda a, b: a ** b, ast.LShift: lambda a, b: a << b, ast.RShift: lambda a, b: a >> b,
              ast.BitAnd: lambda a, b: a & b, ast.BitOr: lambda a, b: a | b, ast.BitXor: lambda a, b: a ^ b}
UNARY = {ast.USub: lambda a: -a, ast.UAdd: lambda a: +a, ast.Invert: lambda a: ~a, ast.Not: lambda a: not a}
LARGEST = 2 ** 64  # a constant's magnitude: no `2 ** 10 ** 9` is ever computed
HEURISTICS = "heuristics"  # what `decorator` says of @triton.heuristics(...)


class NotConstant(Exception):
    pass


def package(source, kernel_name):
    """The kernel `kernel_name` of `source` as sandbox.grading.submission.check takes it; RunError
    naming the line for a kernel the text does not state."""
    if not (isinstance(source, str) and isinstance(kernel_name, str)):
        raise refused("the run gave no kernel to grade")
    if len(source) > MAX_SOURCE_BYTES:
        raise refused(f"the source is longer than {MAX_SOURCE_BYTES // 1024} KB")
    # The newlines Python reads, and only those: a line is split where Python splits it (never at
    # a form feed or U+2028 inside a comment, as str.splitlines would), so what is checked is what runs.
    source = source.replace("\r\n", "\n").replace("\r", "\n")
    try:
        tree = ast.parse(source)
    except SyntaxError as e:
        raise refused(f"the source does not parse: {e.msg}", e.lineno) from None
    except (RecursionError, MemoryError, ValueError):
        raise refused("the source is nested too deeply to be read") from None
    try:
        reader = Reader(source.split("\n"), bindings(tree), top_level_imports(tree))
        for node in tree.body:
            reader.statement(node)
    except RecursionError:
        raise refused("the source is nested too deeply to be read") from None
    return reader.package(kernel_name)


def bindings(tree):
    """{name: [every line where the module's own scope binds it]}."""
    found = {}

    def bind(name, line):
        found.setdefault(name, []).append(line)

    def visit(node):
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                bind(child.name, child.lineno)
                outside = [child.args, child.returns] if not isinstance(child, ast.ClassDef) else child.bases + child.keywords
                for part in child.decorator_list + [p for p in outside if p is not None]:
                    visit(ast.Expr(value=part))  # the part itself too: `@(jit := ...)` binds `jit`
                for inner in ast.walk(child):  # `global NAME` anywhere inside binds the module's NAME
                    if isinstance(inner, ast.Global):
                        for name in inner.names:
                            bind(name, inner.lineno)
            elif isinstance(child, (ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp, ast.Lambda)):
                for inner in ast.walk(child):  # their own names are theirs; `:=` binds the module's
                    if isinstance(inner, ast.NamedExpr):
                        bind(inner.target.id, inner.lineno)
            elif isinstance(child, ast.Name) and not isinstance(child.ctx, ast.Load):
                bind(child.id, child.lineno)
            elif isinstance(child, (ast.ExceptHandler, ast.MatchAs, ast.MatchStar, ast.MatchMapping)):
                name = child.rest if isinstance(child, ast.MatchMapping) else child.name  # `except E as name`, `case name`
                if name:
                    bind(name, child.lineno)
                visit(child)
            elif isinstance(child, (ast.Import, ast.ImportFrom)):
                for alias in child.names:
                    if alias.name == "*":
                        raise refused(f"`from {child.module} import *`: the grader cannot tell what it binds; "
                                      f"import names one by one", child.lineno)
                    bind(alias.asname or alias.name.split(".")[0], child.lineno)
            else:
                visit(child)

    visit(tree)
    return found


class Reader:
    """The module's top-level statements, read in order."""

    def __init__(self, lines, bound, imports):
        self.lines, self.bound, self.imports = lines, bound, imports
        self.stated = {}  # name: (what, value, line) for each top-level statement the grader takes
        self.other = {}  # name: why a kernel cannot use it

    def statement(self, node):
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            for alias in node.names:
                self.imported(node, alias)
        elif isinstance(node, ast.FunctionDef):
            self.function(node)
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            self.assignment(node)

    # ---- imports

    def imported(self, node, alias):
        name = alias.asname or alias.name.split(".")[0]
        if isinstance(node, ast.Import):
            value = triton_module(alias.name if alias.asname else alias.name.split(".")[0])
        else:
            value = triton_attribute(node.module, alias.name) if node.level == 0 and node.module else None
        if value is None:
            self.other.setdefault(name, f"'{name}' is imported from outside Triton (line {node.lineno})")
        else:
            self.state(name, "import", value, node.lineno)

    def state(self, name, what, value, line):
        if name in self.stated and not (what == "import" and self.stated[name][1] is value):
            self.other[name] = self.twice(name)
        self.stated.setdefault(name, (what, value, line))

    def twice(self, name):
        lines = ", ".join(str(line) for line in sorted(set(self.bound.get(name, ()))))
        return f"'{name}' is bound more than once (lines {lines}): keep one definition"

    def resolve(self, node):
        """The Triton object a name or dotted name of the source is, or None."""
        chain = []
        while isinstance(node, ast.Attribute):
            chain.insert(0, node.attr)
            node = node.value
        if not isinstance(node, ast.Name) or self.stated.get(node.id, ("",))[0] != "import" or self.reused(node.id):
            return None
        value = self.stated[node.id][1]
        for attr in chain:
            if not isinstance(value, types.ModuleType) or attr.startswith("_"):
                return None
            value = getattr(value, attr, None)
        return value

    def reused(self, name):
        """Is `name` bound more than once, other than by top-level imports (of one Triton object: see
        `state`), or known to be none of what a kernel may read?"""
        return name in self.other or self.duplicated(name)

    def duplicated(self, name):
        lines = self.bound.get(name, ())
        return len(lines) > 1 and len(lines) != self.imports.get(name, 0)

    # ---- functions

    def function(self, node):
        decorators = [self.decorator(d, node.name) for d in node.decorator_list]
        if HEURISTICS in decorators:
            self.other.setdefault(node.name, f"'{node.name}' (line {node.lineno}) uses @triton.heuristics: its rules "
                                             f"are Python the grader does not run. Give the value as a constexpr "
                                             f"argument or a constexpr of the source")
            return
        if not decorators or decorators[-1] is not triton.jit:
            why = ("a plain Python function, not @triton.jit" if not decorators
                   else "not decorated with Triton's @triton.jit as written (a decorator of the module's own, "
                        "`triton.jit(...)` with arguments, or one the grader cannot read)")
            roots = [root_name(d) for d in node.decorator_list if root_name(d) and self.reused(root_name(d))]
            if roots:  # `triton` itself is bound again: the decorator is not known to be Triton's
                why += f"; {self.other.get(roots[0]) or self.twice(roots[0])}"
            self.other.setdefault(node.name, f"'{node.name}' (line {node.lineno}) is {why}")
            return
        autotune = None
        for decorator in decorators[:-1]:
            if not isinstance(decorator, dict) or autotune is not None:
                self.other.setdefault(node.name, f"'{node.name}' (line {node.lineno}) is decorated with more than "
                                                 f"@triton.autotune over @triton.jit")
                return
            autotune = decorator
        text = "\n".join(self.lines[node.lineno - 1:node.end_lineno]) + "\n"
        self.state(node.name, "function", {"source": text, "line": node.lineno, "autotune": autotune}, node.lineno)

    def decorator(self, node, name):
        """triton.jit, an autotune's {"key", "configs"}, or None for any other decorator."""
        if not isinstance(node, ast.Call):
            return self.resolve(node)
        called = self.resolve(node.func)
        if called is triton.heuristics:
            return HEURISTICS
        if called is not triton.autotune:
            return None
        args = call_arguments(node, AUTOTUNE_ARGS, "@triton.autotune")
        if set(args) != set(AUTOTUNE_ARGS):
            raise refused("@triton.autotune without its configs and key", node.lineno)
        configs, key = self.assigned(args["configs"]), self.assigned(args["key"])
        if not (isinstance(configs, (ast.List, ast.Tuple)) and 0 < len(configs.elts) <= MAX_CONFIGS):
            raise refused(f"the configs of {name}'s @triton.autotune are not a list of triton.Config(...) written out "
                          f"(no comprehension or function call: the grader reads them, it does not run them)",
                          args["configs"].lineno)
        return {"key": [self.text_constant(k, "a key of @triton.autotune") for k in sequence(key, "its key")],
                "configs": [self.config(c) for c in configs.elts]}

    def assigned(self, node):
        """A name assigned once at the top level stands for what it is assigned."""
        if isinstance(node, ast.Name) and self.stated.get(node.id, ("",))[0] == "value" and not self.reused(node.id):
            return self.stated[node.id][1]
        return node

    def config(self, node):
        if not (isinstance(node, ast.Call) and self.resolve(node.func) is triton.Config):
            raise refused("an autotune config that is not triton.Config(...) written out", node.lineno)
        args = call_arguments(node, CONFIG_ARGS, "triton.Config")
        kwargs = args.get("kwargs")
        if not isinstance(kwargs, ast.Dict) or None in kwargs.keys:
            raise refused("a triton.Config whose constexprs are not a {'NAME': value} written out", node.lineno)
        try:
            values = {self.text_constant(k, "a constexpr's name in triton.Config"): self.constant(v)
                      for k, v in zip(kwargs.keys, kwargs.values)}
            numbers = {k: self.constant(args[k]) for k in ("num_warps", "num_stages") if k in args}
        except NotConstant:
            raise refused("a value in triton.Config that is not a constant written out", node.lineno) from None
        try:
            config = triton.Config(values, **numbers)
        except Exception as e:  # noqa: BLE001  (Triton's own check of the values)
            raise refused(f"a triton.Config Triton refuses: {e}", node.lineno) from None
        return {"kwargs": dict(config.kwargs), "num_warps": config.num_warps, "num_stages": config.num_stages}

    # ---- constexprs and other assignments

    def assignment(self, node):
        targets = node.targets if isinstance(node, ast.Assign) else [node.target]
        if not (len(targets) == 1 and isinstance(targets[0], ast.Name) and node.value is not None):
            return  # bound, and not by a statement the grader takes: see `package`
        name, value = targets[0].id, node.value
        if isinstance(value, ast.Call) and self.resolve(value.func) is tl.constexpr:
            try:
                if len(value.args) != 1 or value.keywords:
                    raise NotConstant
                self.state(name, "constexpr", encode(self.constant(value.args[0])), node.lineno)
            except NotConstant:
                self.other.setdefault(name, f"the constexpr '{name}' (line {node.lineno}) is computed by code the "
                                            f"grader does not run: give it as tl.constexpr(<a number, string or dtype>)")
        else:
            self.state(name, "value", value, node.lineno)

    def constant(self, node):
        """A constant expression's value; NotConstant for anything else."""
        if isinstance(node, ast.Constant) and (node.value is None or isinstance(node.value, (bool, int, float, str))):
            return node.value
        if isinstance(node, ast.UnaryOp) and type(node.op) in UNARY:
            return bounded(UNARY[type(node.op)](number(self.constant(node.operand))))
        if isinstance(node, ast.BinOp) and type(node.op) in ARITHMETIC:
            left, right = number(self.constant(node.left)), number(self.constant(node.right))
            if isinstance(node.op, (ast.Pow, ast.LShift)) and abs(right) > 64:
                raise NotConstant
            try:
                return bounded(ARITHMETIC[type(node.op)](left, right))
            except (ArithmeticError, ValueError):
                raise NotConstant from None
        if isinstance(node, ast.Name) and self.stated.get(node.id, ("",))[0] == "constexpr" and not self.reused(node.id):
            return decode(self.stated[node.id][1])
        value = self.resolve(node)
        if isinstance(value, tl.dtype) and value.name in DTYPES:
            return value
        raise NotConstant

    def text_constant(self, node, what):
        if not (isinstance(node, ast.Constant) and isinstance(node.value, str)):
            raise refused(f"{what} is not a string written out", getattr(node, "lineno", None))
        return node.value

    # ---- the package

    def package(self, kernel_name):
        """{kernel, functions, constexprs, modules, libdevice, autotune, unbound}: what check takes."""
        for name, lines in self.bound.items():
            if self.duplicated(name):
                self.other[name] = self.twice(name)
            elif name in self.other:
                continue
            elif name not in self.stated:
                self.other[name] = f"'{name}' is bound at line {lines[0]} by code the grader does not run: {DEFINED_HOW}"
            elif self.stated[name][0] == "value":
                self.other[name] = (f"'{name}' (line {lines[0]}) is not a constexpr: a kernel reads a value of the "
                                    f"module only as {name} = tl.constexpr(<a number, string or dtype>)")
            elif self.stated[name][0] == "import" and not (isinstance(self.stated[name][1], types.ModuleType)
                                                          or libdevice.reference(self.stated[name][1]) is not None):
                self.other[name] = (f"'{name}' is imported from Triton by name (line {lines[0]}): the grader takes "
                                    f"Triton's modules and libdevice's functions; write it through its module")
        kept = {name: stated for name, stated in self.stated.items() if name not in self.other}
        if kernel_name in self.other:
            raise refused(self.other[kernel_name], self.bound.get(kernel_name, [None])[0])
        if kept.get(kernel_name, ("",))[0] != "function":
            raise refused(f"there is no @triton.jit function named {kernel_name!r} at the top level of the source "
                          f"(the grader reads the source: a kernel made by exec or by a function call is none)")
        of = lambda what: {name: value for name, (kind, value, _) in kept.items() if kind == what}  # noqa: E731
        functions, imports = of("function"), of("import")
        autotuned = [name for name, f in functions.items() if f["autotune"] is not None and name != kernel_name]
        if autotuned:
            raise refused(f"{autotuned[0]!r} is not the graded kernel and is autotuned", functions[autotuned[0]]["line"])
        return {"kernel": kernel_name,
                "functions": {name: {"source": f["source"], "line": f["line"]} for name, f in functions.items()},
                "constexprs": of("constexpr"),
                "modules": {name: value.__name__ for name, value in imports.items() if isinstance(value, types.ModuleType)},
                "libdevice": {name: libdevice.reference(value) for name, value in imports.items()
                              if libdevice.reference(value) is not None},
                "autotune": functions[kernel_name]["autotune"],
                "unbound": dict(self.other)}


def root_name(node):
    """The name a (dotted, maybe called) decorator starts from, or None."""
    node = node.func if isinstance(node, ast.Call) else node
    while isinstance(node, ast.Attribute):
        node = node.value
    return node.id if isinstance(node, ast.Name) else None


def top_level_imports(tree):
    """{name: how many of the module's top-level imports bind it}."""
    found = {}
    for node in tree.body:
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            for alias in node.names:
                name = alias.asname or alias.name.split(".")[0]
                found[name] = found.get(name, 0) + 1
    return found


def call_arguments(node, names, what):
    """{parameter: its expression} of a call written with `names` (positional in that order, or by name)."""
    if len(node.args) > len(names) or any(isinstance(a, ast.Starred) for a in node.args):
        raise refused(f"{what} with arguments the grader does not take", node.lineno)
    args = dict(zip(names, node.args))
    for keyword in node.keywords:
        if keyword.arg not in names or keyword.arg in args:
            raise refused(f"{what}({keyword.arg or '**'}=...): the grader takes only {', '.join(names)}", node.lineno)
        args[keyword.arg] = keyword.value
    return args


def sequence(node, what):
    if not isinstance(node, (ast.List, ast.Tuple)) or len(node.elts) > 64:
        raise refused(f"@triton.autotune's {what} is not a list written out", node.lineno)
    return node.elts


def number(value):
    if isinstance(value, (int, float)):  # bools are ints
        return value
    raise NotConstant


def bounded(value):
    if not isinstance(value, (int, float)) or abs(value) >= LARGEST:  # a complex root, a huge power
        raise NotConstant
    return value


def triton_module(name):
    """The Triton module `name`, or None."""
    if not is_triton_module(name) or any(part.startswith("_") for part in name.split(".")):
        return None
    try:
        return importlib.import_module(name)
    except ImportError:
        return None


def triton_attribute(module_name, name):
    """What `from module_name import name` binds, when that is a Triton module or object; else None."""
    module = triton_module(module_name)
    if module is None or name.startswith("_"):
        return None
    value = getattr(module, name, None)
    if value is None:
        value = triton_module(f"{module_name}.{name}")
    return value


def encode(value):
    """A constant as [kind, text] (submission.check decodes it)."""
    if isinstance(value, tl.dtype):
        return ["dtype", value.name]
    if isinstance(value, bool):
        return ["bool", str(value)]
    if isinstance(value, int):
        return ["int", str(value)]
    if isinstance(value, float):
        return ["float", repr(value)]
    if isinstance(value, str):
        return ["str", value]
    return ["none", ""]


def decode(encoded):
    kind, text = encoded
    return {"dtype": lambda: tl.dtype(text), "bool": lambda: text == "True", "int": lambda: int(text),
            "float": lambda: float(text), "str": lambda: text, "none": lambda: None}[kind]()
