"""Which tensor each memory access of a kernel belongs to, read from its source.

An access *site* is a `tl.load`, `tl.store` or `tl.atomic_*` call in the @triton.jit function, or
in a helper function of the source it calls (one site per call that reaches it: the helper's
parameters derive from that call's arguments); its pointer may be a block pointer
(`tl.make_block_ptr`, moved by `tl.advance`), which derives from its base. Its pointer belongs to
the kernel parameter at the root of its address expression (`x_ptr` in
`tl.load(x_ptr + offs + n)`), not to whichever tensor the address happens to fall in: a read past
the end of `x` that lands in `y` is still `x`'s overrun. Both tracers judge bounds by this.

The analysis is flow-insensitive: a name's roots are the union over all its assignments, and a
loaded value has no roots (a gather's index is data, not a pointer). A site whose pointer has no
tensor root or several (`tl.where(c, x_ptr, y_ptr)`) is located by address instead (see
`site_tensors`). `Kernel.unsupported` lists what an instrumented build cannot see.
"""
import ast
from dataclasses import dataclass, field

from sandbox.spec import parameter_names

ATOMICS = {"atomic_add", "atomic_max", "atomic_min", "atomic_and", "atomic_or", "atomic_xor", "atomic_xchg",
           "atomic_cas"}
OPS = {"load": "load", "store": "store", **{name: "atomic" for name in ATOMICS}}
# tl functions whose result is a value read from memory or an index, never a pointer
NO_ROOTS = {"load", "program_id", "num_programs", "arange", "zeros", "full", "cdiv", "sum", "max", "min",
            "dot", "atomic_add", "atomic_max", "atomic_min", "atomic_and", "atomic_or", "atomic_xor",
            "atomic_xchg", "atomic_cas", "argmax", "argmin", "cumsum", "exp", "log", "sqrt", "rand", "randn"}
UNSUPPORTED = {"make_tensor_descriptor": "a tensor descriptor (TMA)", "inline_asm_elementwise": "inline assembly",
               "load_tensor_descriptor": "a tensor descriptor (TMA)", "store_tensor_descriptor": "a tensor descriptor (TMA)"}
BLOCK_POINTER = ("make_block_ptr", "advance")
MAKE_BLOCK_PTR = ["base", "shape", "strides", "offsets", "block_shape", "order"]


@dataclass
class Site:
    index: int
    op: str               # load | store | atomic
    name: str             # the tl function: load, store, atomic_add, ...
    line: int
    position: tuple       # (line, end_line, col, end_col) of the call, as code.co_positions() gives it
    roots: frozenset      # parameter names of the kernel the pointer derives from
    node: ast.Call = field(repr=False, compare=False)
    path: tuple = ()      # positions of the helper calls that lead to it from the kernel (none: in the kernel)
    block: str = None     # the block pointer it accesses through (a name in its function), if any

    @property
    def key(self):
        """Where the access is made: the call positions from the kernel down to it."""
        return self.path + (self.position,)

    @property
    def atomic(self):
        """The atomic's operation as the trace names it (`add` for tl.atomic_add), else None."""
        return self.name.removeprefix("atomic_") if self.op == "atomic" else None


@dataclass
class Function:
    """The kernel, or a helper function as one call reaches it (each call has its own tensors)."""
    path: tuple           # positions of the calls that reach it (none: the kernel)
    name: str             # as the source defines it
    clone: str            # the name of its instrumented copy (sandbox.trace.gpu)
    node: ast.FunctionDef = field(repr=False)
    blocks: dict = field(default_factory=dict)  # block pointer variable -> its number of dimensions


@dataclass
class Kernel:
    name: str
    params: list
    sites: list
    unsupported: list     # reasons an instrumented build would miss accesses
    node: ast.FunctionDef = field(repr=False)
    functions: list = field(default_factory=list)  # the kernel, then the helpers with accesses it calls
    calls: list = field(default_factory=list)  # (name, line) of the calls of functions not in the source
    aliases: dict = field(default_factory=dict)  # the source's names of triton.language (language_aliases)


def analyze_kernel(source_path, kernel):
    """The Kernel analysis of a sandbox.launch.kernel.Kernel loaded from `source_path`."""
    with open(source_path) as f:
        return analyze(f.read(), kernel.function.__name__)


def analyze(source, function_name):
    """The Kernel of the module-level function `function_name` in `source`, or None if absent."""
    module = ast.parse(source)
    functions = {node.name: node for node in module.body if isinstance(node, ast.FunctionDef)}
    fn = functions.get(function_name)
    if fn is None:
        return None
    params = parameter_names(fn)
    kernel = Kernel(function_name, params, [], [], fn, aliases=language_aliases(module))
    Analysis(kernel, functions, kernel.aliases).function(
        Function((), function_name, function_name, fn), {p: {p} for p in params})
    kernel.sites.sort(key=lambda s: s.key)
    for i, site in enumerate(kernel.sites):
        site.index = i
    return kernel


class Analysis:
    """Walks the kernel and, through each call, the helper functions of the source that access memory."""

    def __init__(self, kernel, functions, aliases):
        self.kernel, self.functions, self.aliases = kernel, functions, aliases

    def function(self, reached, seeds):
        """Collect the sites of `reached`, whose parameters derive from the kernel's as `seeds` say."""
        self.kernel.functions.append(reached)
        fn, aliases, unsupported = reached.node, self.aliases, self.kernel.unsupported
        roots = _roots_of_names(fn, seeds, aliases)
        reached.blocks = self.block_pointers(fn)
        for node in ast.walk(fn):
            if not isinstance(node, ast.Call):
                continue
            name = tl_name(node.func, aliases)
            position = (node.lineno, node.end_lineno, node.col_offset, node.end_col_offset)
            if name in OPS:
                pointer = node.args[0] if node.args else next((k.value for k in node.keywords if k.arg == "pointer"),
                                                              None)
                block = pointer.id if isinstance(pointer, ast.Name) and pointer.id in reached.blocks else None
                self.kernel.sites.append(Site(0, OPS[name], name, node.lineno, position,
                                              frozenset(_roots(pointer, roots, aliases)), node, reached.path, block))
                if block is not None:
                    self.check_block_access(node)
                elif any(k.arg in ("boundary_check", "padding_option") for k in node.keywords):
                    unsupported.append(f"a block pointer access at line {node.lineno} whose block pointer is not "
                                       f"made in the same function")
            elif name in UNSUPPORTED:
                unsupported.append(f"{UNSUPPORTED[name]} at line {node.lineno}")
            elif isinstance(node.func, ast.Name) and node.func.id in self.functions:
                if self.accesses(node.func.id):
                    self.helper(reached, node, position, roots)
            elif name is None and _dotted(node.func):
                self.kernel.calls.append((_dotted(node.func), node.lineno))

    def helper(self, caller, call, position, roots):
        callee = self.functions[call.func.id]
        stack = [f.name for f in self.kernel.functions if f.path == caller.path[:len(f.path)]]
        if call.func.id in stack:
            self.kernel.unsupported.append(f"a recursive call of {call.func.id}() at line {call.lineno}")
            return
        args = callee.args
        if args.vararg or args.kwarg or args.kwonlyargs or args.posonlyargs:
            self.kernel.unsupported.append(f"the helper function {call.func.id}() called at line {call.lineno} "
                                           f"(its parameters are not all plain)")
            return
        passed = call.args + [k.value for k in call.keywords]
        if any(isinstance(a, ast.Name) and a.id in caller.blocks for a in passed) or any(
                isinstance(a, ast.Starred) for a in call.args) or any(k.arg is None for k in call.keywords):
            self.kernel.unsupported.append(f"the call of {call.func.id}() at line {call.lineno} (a block pointer or "
                                           f"an unpacked argument passed to a helper)")
            return
        names = [a.arg for a in args.args]
        seeds = {p: set() for p in names}
        for param, value in list(zip(names, call.args)) + [(k.arg, k.value) for k in call.keywords]:
            seeds[param] = _roots(value, roots, self.aliases)
        clone = f"_tp_{call.func.id}_{len(self.kernel.functions)}"
        self.function(Function(caller.path + (position,), call.func.id, clone, callee), seeds)

    def accesses(self, name, seen=()):
        """Whether the function `name` of the source (or one it calls) accesses memory."""
        for node in ast.walk(self.functions[name]):
            if not isinstance(node, ast.Call):
                continue
            if tl_name(node.func, self.aliases) in set(OPS) | set(BLOCK_POINTER) | set(UNSUPPORTED):
                return True
            callee = node.func.id if isinstance(node.func, ast.Name) else None
            if callee in self.functions and callee not in seen + (name,) and self.accesses(callee, seen + (name,)):
                return True
        return False

    def block_pointers(self, fn):
        """{name: dimensions} of the block pointers `fn` makes, each by `p = tl.make_block_ptr(...)` or
        `p = tl.advance(q, ...)` with its tuples written out; what else makes one is unsupported."""
        blocks, calls = {}, []
        for node in ast.walk(fn):
            if (isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name)
                    and isinstance(node.value, ast.Call) and tl_name(node.value.func, self.aliases) in BLOCK_POINTER):
                calls.append((node.targets[0].id, node.value))
        planned = {id(call) for _, call in calls}
        for node in ast.walk(fn):
            if isinstance(node, ast.Call) and tl_name(node.func, self.aliases) in BLOCK_POINTER:
                if id(node) not in planned:
                    self.kernel.unsupported.append(f"a block pointer made or advanced at line {node.lineno} other "
                                                   f"than by assigning it to a name")
                elif any(isinstance(n, ast.Call) and tl_name(n.func, self.aliases) in OPS for n in ast.walk(node)):
                    # the instrumented build evaluates these arguments twice
                    self.kernel.unsupported.append(f"a memory access inside the arguments of the block pointer at "
                                                   f"line {node.lineno}")
        changed = True
        while changed:  # an advanced pointer has the dimensions of the one it advances
            changed = False
            for name, call in calls:
                ndim = self.block_dimensions(call, blocks)
                if ndim is None or blocks.get(name) == ndim:
                    continue
                if name in blocks:
                    self.kernel.unsupported.append(f"the block pointer {name} with two numbers of dimensions")
                    return {}
                blocks[name], changed = ndim, True
        for name, call in calls:
            if name not in blocks or self.block_dimensions(call, blocks) is None:
                self.kernel.unsupported.append(f"a block pointer at line {call.lineno} whose shape, strides, offsets "
                                               f"or block shape is not a tuple written out")
                return {}
        for node in ast.walk(fn):  # its scalars follow it only through those assignments
            if isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign, ast.For, ast.NamedExpr)) and not (
                    isinstance(node, ast.Assign) and id(node.value) in planned):
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                value = node.iter if isinstance(node, ast.For) else node.value
                moved = {name for t in targets + [value] for name in assigned_names(t)}  # `p = ...`, `q = p`
                if moved & set(blocks):
                    self.kernel.unsupported.append(f"the block pointer {sorted(moved & set(blocks))[0]} assigned "
                                                   f"or copied at line {node.lineno} other than by "
                                                   f"tl.make_block_ptr or tl.advance")
                    return {}
        return blocks

    def block_dimensions(self, call, blocks):
        """The dimensions of the block pointer `call` makes (None: not known from the source)."""
        if tl_name(call.func, self.aliases) == "advance":
            bound = bind(call, ["base", "offsets"])
            source, offsets = bound.get("base"), bound.get("offsets")
            ndim = blocks.get(source.id) if isinstance(source, ast.Name) else None
            return ndim if written_out(offsets) and len(offsets.elts) == ndim else None
        bound = bind(call, MAKE_BLOCK_PTR)
        tuples = [bound.get(name) for name in MAKE_BLOCK_PTR[1:5]]
        if not all(written_out(t) for t in tuples) or len({len(t.elts) for t in tuples}) != 1:
            return None
        return len(tuples[0].elts)

    def check_block_access(self, call):
        check, padding = (next((k.value for k in call.keywords if k.arg == arg), None)
                          for arg in ("boundary_check", "padding_option"))
        dims = check.elts if written_out(check) else [check] if check is not None else []
        if not all(isinstance(d, ast.Constant) and isinstance(d.value, int) for d in dims) or not (
                padding is None or isinstance(padding, ast.Constant)):
            self.kernel.unsupported.append(f"a block pointer access at line {call.lineno} whose boundary_check or "
                                           f"padding_option is not written out")


def written_out(node):
    return isinstance(node, (ast.Tuple, ast.List))


def bind(call, names):
    """{parameter: expression} of a call's arguments, by position, then by keyword."""
    bound = dict(zip(names, call.args))
    bound.update({k.arg: k.value for k in call.keywords if k.arg in names})
    return bound


def language_aliases(module):
    """Names under which triton.language is reachable: `tl` (import triton.language as tl), `triton`;
    and names of its functions (("function", "load")): `from triton.language import load as ld`, or a
    module-level `store = tl.store`, which reach memory as tl's own do."""
    aliases = {"tl": "tl"}
    for node in ast.walk(module):
        if isinstance(node, ast.Import):
            for a in node.names:
                if a.name == "triton.language":
                    aliases[a.asname or "triton.language"] = "tl"
                elif a.name == "triton":
                    aliases[a.asname or "triton"] = "triton"
        elif isinstance(node, ast.ImportFrom) and node.module == "triton" and any(a.name == "language" for a in node.names):
            for a in node.names:
                if a.name == "language":
                    aliases[a.asname or "language"] = "tl"
        elif isinstance(node, ast.ImportFrom) and node.module == "triton.language":
            for a in node.names:
                aliases[a.asname or a.name] = ("function", a.name)
    for node in module.body:  # `store = tl.store`, at module level only (a kernel's locals are values)
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            name = tl_name(node.value, aliases)
            if name is not None:
                aliases[node.targets[0].id] = ("function", name)
    return aliases


def _dotted(func):
    """'name' or 'module.name' of a called function, else None."""
    if isinstance(func, ast.Name):
        return func.id
    if isinstance(func, ast.Attribute) and _dotted(func.value):
        return f"{_dotted(func.value)}.{func.attr}"
    return None


def tl_name(func, aliases):
    """'load' for tl.load / triton.language.load / an alias of it, else None."""
    if isinstance(func, ast.Name) and isinstance(aliases.get(func.id), tuple):
        return aliases[func.id][1]
    if not isinstance(func, ast.Attribute):
        return None
    owner = func.value
    if isinstance(owner, ast.Name) and aliases.get(owner.id) == "tl":
        return func.attr
    if (isinstance(owner, ast.Attribute) and owner.attr == "language" and isinstance(owner.value, ast.Name)
            and aliases.get(owner.value.id) == "triton"):
        return func.attr
    return None


def _roots(node, names, aliases):
    """The parameters an expression's value derives from."""
    if node is None:
        return set()
    if isinstance(node, ast.Name):
        return set(names.get(node.id, ()))
    if isinstance(node, ast.Call):
        function = tl_name(node.func, aliases)
        if function in NO_ROOTS:
            return set()
        if function in BLOCK_POINTER:  # a block pointer belongs to its base
            return _roots(bind(node, ["base"]).get("base"), names, aliases)
        if function == "where":  # the condition picks; the two branches are the candidates
            return set().union(*(_roots(a, names, aliases) for a in node.args[1:]))
        found = set()
        if isinstance(node.func, ast.Attribute) and function is None:  # a method: x.to(...), ptrs.reshape(...)
            found |= _roots(node.func.value, names, aliases)
        for arg in list(node.args) + [k.value for k in node.keywords]:
            found |= _roots(arg, names, aliases)
        return found
    if isinstance(node, (ast.Compare, ast.BoolOp)):
        return set()  # a mask, not an address
    if isinstance(node, ast.Subscript):
        return _roots(node.value, names, aliases)
    if isinstance(node, ast.Attribute):
        return _roots(node.value, names, aliases)
    found = set()
    for child in ast.iter_child_nodes(node):
        if isinstance(child, ast.expr):
            found |= _roots(child, names, aliases)
    return found


def assigned_names(target):
    if isinstance(target, ast.Name):
        return [target.id]
    if isinstance(target, (ast.Tuple, ast.List)):
        return [name for element in target.elts for name in assigned_names(element)]
    return []


def assignments(fn):
    """[(name, the expression it is given)] of every assignment in the function: `=`, `+=`, annotated,
    a for loop's target (its iterable), `:=`."""
    found = []
    for node in ast.walk(fn):
        if isinstance(node, ast.Assign):
            found += [(name, node.value) for t in node.targets for name in assigned_names(t)]
        elif isinstance(node, (ast.AugAssign, ast.AnnAssign)) and node.value is not None:
            found += [(name, node.value) for name in assigned_names(node.target)]
        elif isinstance(node, ast.For):
            found += [(name, node.iter) for name in assigned_names(node.target)]
        elif isinstance(node, ast.NamedExpr):
            found.append((node.target.id, node.value))
    return found


def _roots_of_names(fn, seeds, aliases):
    """name -> roots, to a fixed point over every assignment in the function, from the roots of its
    parameters (`seeds`)."""
    names = {p: set(roots) for p, roots in seeds.items()}
    given = assignments(fn)
    changed = True
    while changed:
        changed = False
        for name, value in given:
            found = _roots(value, names, aliases)
            if not found <= names.setdefault(name, set()):
                names[name] |= found
                changed = True
    return names


def accesses_memory(source):
    """Whether the source of a function names a memory access of triton.language (as tl.load,
    triton.language.store, ...), a block pointer or a tensor descriptor."""
    names = set(OPS) | set(BLOCK_POINTER) | set(UNSUPPORTED)
    return any(isinstance(node, ast.Attribute) and node.attr in names for node in ast.walk(ast.parse(source)))


def site_tensors(kernel, args, tensors):
    """{site index: name of the launch tensor its pointer derives from}, for sites with one root
    parameter bound to a tensor. `tensors` are the launch's named tensors (sandbox.launch.build.launch_tensors);
    an argument that is a view of one of them (`x[1:]`, `x.T`) belongs to it."""
    found = {}
    for site in kernel.sites if kernel else []:
        pointers = [args[p] for p in site.roots if hasattr(args.get(p), "data_ptr")]
        if len(pointers) != 1:
            continue  # no root, or several: locate it by address
        value = pointers[0]
        same = [name for name, t in tensors.items() if hasattr(t, "data_ptr") and t.data_ptr() == value.data_ptr()]
        storage = value.untyped_storage().data_ptr()
        shared = [name for name, t in tensors.items()
                  if hasattr(t, "untyped_storage") and t.untyped_storage().data_ptr() == storage]
        if same or shared:
            found[site.index] = (same or shared)[0]
    return found


def looks_2d(site):
    """Whether the site's pointer is built as a 2-D tile (`rows[:, None]`): the fix a hint shows."""
    return any(isinstance(n, ast.Subscript) and any(isinstance(c, ast.Constant) and c.value is None
                                                    for c in ast.walk(n.slice))
               for n in ast.walk(site.node))
