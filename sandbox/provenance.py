"""Which tensor each memory access of a kernel belongs to, read from its source.

An access *site* is a `tl.load`, `tl.store` or `tl.atomic_*` call in the @triton.jit function.
Its pointer belongs to the kernel parameter at the root of its address expression (`x_ptr` in
`tl.load(x_ptr + offs + n)`), not to whichever tensor the address happens to fall in: a read past
the end of `x` that lands in `y` is still `x`'s overrun. Both tracers judge bounds by this.

The analysis is flow-insensitive: a name's roots are the union over all its assignments, and a
loaded value has no roots (a gather's index is data, not a pointer). A site whose pointer has no
tensor root or several (`tl.where(c, x_ptr, y_ptr)`) is located by address instead (see
`site_tensors`). `Kernel.unsupported` lists what an instrumented build cannot see.
"""
import ast
from dataclasses import dataclass, field

ATOMICS = {"atomic_add", "atomic_max", "atomic_min", "atomic_and", "atomic_or", "atomic_xor", "atomic_xchg",
           "atomic_cas"}
OPS = {"load": "load", "store": "store", **{name: "atomic" for name in ATOMICS}}
# tl functions whose result is a value read from memory or an index, never a pointer
NO_ROOTS = {"load", "program_id", "num_programs", "arange", "zeros", "full", "cdiv", "sum", "max", "min",
            "dot", "atomic_add", "atomic_max", "atomic_min", "atomic_and", "atomic_or", "atomic_xor",
            "atomic_xchg", "atomic_cas", "argmax", "argmin", "cumsum", "exp", "log", "sqrt", "rand", "randn"}
UNSUPPORTED = {"make_block_ptr": "a block pointer (tl.make_block_ptr)", "advance": "a block pointer (tl.advance)",
               "make_tensor_descriptor": "a tensor descriptor (TMA)", "inline_asm_elementwise": "inline assembly",
               "load_tensor_descriptor": "a tensor descriptor (TMA)", "store_tensor_descriptor": "a tensor descriptor (TMA)"}


@dataclass
class Site:
    index: int
    op: str               # load | store | atomic
    name: str             # the tl function: load, store, atomic_add, ...
    line: int
    position: tuple       # (line, end_line, col, end_col) of the call, as code.co_positions() gives it
    roots: frozenset      # parameter names the pointer derives from
    node: ast.Call = field(repr=False, compare=False)

    @property
    def atomic(self):
        """The atomic's operation as the trace names it (`add` for tl.atomic_add), else None."""
        return self.name.removeprefix("atomic_") if self.op == "atomic" else None


@dataclass
class Kernel:
    name: str
    params: list
    sites: list
    unsupported: list     # reasons an instrumented build would miss accesses
    node: ast.FunctionDef = field(repr=False)

    def site_at(self, position):
        return self.by_position.get(position)

    def __post_init__(self):
        self.by_position = {site.position: site for site in self.sites}


def analyze_kernel(source_path, kernel):
    """The Kernel analysis of a sandbox.kernel.Kernel loaded from `source_path`."""
    with open(source_path) as f:
        return analyze(f.read(), kernel.function.__name__)


def analyze(source, function_name):
    """The Kernel of the module-level function `function_name` in `source`, or None if absent."""
    module = ast.parse(source)
    functions = {node.name: node for node in module.body if isinstance(node, ast.FunctionDef)}
    fn = functions.get(function_name)
    if fn is None:
        return None
    aliases = _language_aliases(module)
    params = [a.arg for a in fn.args.posonlyargs + fn.args.args + fn.args.kwonlyargs]
    roots = _roots_of_names(fn, params, aliases)
    sites, unsupported = [], []
    for node in ast.walk(fn):
        if not isinstance(node, ast.Call):
            continue
        name = _tl_name(node.func, aliases)
        if name in OPS:
            pointer = node.args[0] if node.args else next((k.value for k in node.keywords if k.arg == "pointer"), None)
            sites.append(Site(len(sites), OPS[name], name, node.lineno,
                              (node.lineno, node.end_lineno, node.col_offset, node.end_col_offset),
                              frozenset(_roots(pointer, roots, aliases)) if pointer is not None else frozenset(), node))
        elif name in UNSUPPORTED:
            unsupported.append(f"{UNSUPPORTED[name]} at line {node.lineno}")
        elif isinstance(node.func, ast.Name) and node.func.id in functions and node.func.id != function_name:
            callee = functions[node.func.id]
            if any(_tl_name(n.func, aliases) in OPS for n in ast.walk(callee) if isinstance(n, ast.Call)):
                unsupported.append(f"memory accesses inside the helper function {node.func.id}() "
                                   f"called at line {node.lineno}")
    sites.sort(key=lambda s: s.position)
    for i, site in enumerate(sites):
        site.index = i
    return Kernel(function_name, params, sites, unsupported, fn)


def _language_aliases(module):
    """Names under which triton.language is reachable: `tl` (import triton.language as tl), `triton`."""
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
    return aliases


def _tl_name(func, aliases):
    """'load' for tl.load / triton.language.load, else None."""
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
        tl_name = _tl_name(node.func, aliases)
        if tl_name in NO_ROOTS:
            return set()
        if tl_name == "where":  # the condition picks; the two branches are the candidates
            return set().union(*(_roots(a, names, aliases) for a in node.args[1:]))
        found = set()
        if isinstance(node.func, ast.Attribute) and tl_name is None:  # a method: x.to(...), ptrs.reshape(...)
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


def _targets(target):
    if isinstance(target, ast.Name):
        return [target.id]
    if isinstance(target, (ast.Tuple, ast.List)):
        return [name for element in target.elts for name in _targets(element)]
    return []


def _roots_of_names(fn, params, aliases):
    """name -> roots, to a fixed point over every assignment in the function."""
    names = {p: {p} for p in params}
    assignments = []
    for node in ast.walk(fn):
        if isinstance(node, ast.Assign):
            assignments += [(name, node.value, False) for t in node.targets for name in _targets(t)]
        elif isinstance(node, (ast.AugAssign, ast.AnnAssign)) and node.value is not None:
            assignments += [(name, node.value, isinstance(node, ast.AugAssign)) for name in _targets(node.target)]
        elif isinstance(node, ast.For):
            assignments += [(name, node.iter, False) for name in _targets(node.target)]
        elif isinstance(node, ast.NamedExpr):
            assignments.append((node.target.id, node.value, False))
    changed = True
    while changed:
        changed = False
        for name, value, _ in assignments:
            found = _roots(value, names, aliases)
            if not found <= names.setdefault(name, set()):
                names[name] |= found
                changed = True
    return names


def site_tensors(kernel, args, tensors):
    """{site index: name of the launch tensor its pointer derives from}, for sites with one root
    parameter bound to a tensor. `tensors` are the launch's named tensors (sandbox.build.launch_tensors);
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
