"""Which matrix products of a kernel only make values it stores: what its instrumented build
(sandbox.trace.instrument) may leave uncomputed.

The instrumented launch checks and records addresses; the real launch computes the outputs. A
`tl.dot` of the kernel whose result reaches nothing but the value of a `tl.store` (through
assignments, loop-carried accumulators and tl's value functions: `acc += tl.dot(a, b)`,
`p = tl.exp(qk - m)`, `acc.to(tl.float16)`) changes no address, mask, branch, loop bound or atomic
of the launch, and the product is much of the instrumented build's compile (a 4096^3 matmul's
ptxas: 2.9 s without it, 4.2 s with it; the trace the same). Its instrumented build has
`sandbox.trace.probes.product_left_out` in its place: the accumulator, or zeros of the product's
type. The product's operands are still evaluated (their loads are probed as ever); a load that fed
only the product then falls away in the compiler, its probe staying.

Flow-insensitive, and refusing where unsure: a product's value that may reach a condition, a loop's
range, a pointer, a mask, an atomic, a print or an assert, a call of anything but tl's value
functions and a value's methods, a `return`, an assignment to anything but names, or a tensor the
kernel also reads or updates (it could come back as an address) leaves every product computed.
"""
import ast

from sandbox.trace import provenance

DOT = ["input", "other", "acc", "input_precision", "allow_tf32", "max_num_imprecise_acc", "out_dtype"]
# tl functions whose arguments a product's value must not reach (besides a store's pointer and mask)
NOT_VALUES = set(provenance.OPS) - {"store"} | set(provenance.BLOCK_POINTER) | set(provenance.UNSUPPORTED) | {
    "device_print", "device_assert", "static_print", "static_assert", "debug_barrier"}


def products_left_out(kernel, owners):
    """The positions ((line, end line, col, end col), as provenance.Site's) of the kernel's `tl.dot`
    calls its instrumented build may leave out: all of them, or none. `kernel`: a provenance.Kernel;
    `owners`: {site index: the tensor its pointer derives from}, as the launch binds them."""
    fn = kernel.node
    products = [node for node in ast.walk(fn)
                if isinstance(node, ast.Call) and provenance.tl_name(node.func, kernel.aliases) == "dot"]
    if not products:
        return set()
    parents = {child: node for node in ast.walk(fn) for child in ast.iter_child_nodes(node)}
    carriers = _carriers(fn, products)
    stores = {site.position: site for site in kernel.sites if site.op == "store" and not site.path}
    stored_into = set()
    for node in ast.walk(fn):
        if node in products or isinstance(node, ast.Name) and node.id in carriers and isinstance(node.ctx, ast.Load):
            tensors = _stored_into(node, parents, kernel.aliases, stores, owners)
            if tensors is None:
                return set()
            stored_into |= tensors
    read = {owners.get(site.index) for site in kernel.sites if site.op != "store"}
    if None in stored_into or stored_into & read:
        return set()
    return {(p.lineno, p.end_lineno, p.col_offset, p.end_col_offset) for p in products}


def _carriers(fn, products):
    """The names that may hold a product's value: to a fixed point over the function's assignments."""
    given = provenance.assignments(fn)
    names, changed = set(), True
    while changed:
        changed = False
        for name, value in given:
            if name not in names and any(n in products or isinstance(n, ast.Name) and n.id in names
                                         for n in ast.walk(value)):
                names.add(name)
                changed = True
    return names


def _stored_into(node, parents, aliases, stores, owners):
    """The tensors the product's value at `node` is stored into (none: it is assigned to names, which
    are followed in their turn), or None where it may reach anything else."""
    child, parent = node, parents[node]
    while True:
        if isinstance(parent, ast.Call):
            name = provenance.tl_name(parent.func, aliases)
            if name == "store":
                site = stores.get((parent.lineno, parent.end_lineno, parent.col_offset, parent.end_col_offset))
                value = provenance.bind(parent, ["pointer", "value"]).get("value")
                return {owners.get(site.index)} if site is not None and value is child else None
            method = child is parent.func  # x.to(...), x.reshape(...): a value's method makes a value
            if not method and (name is None or name in NOT_VALUES):
                return None
        elif isinstance(parent, (ast.Assign, ast.AugAssign, ast.AnnAssign)):
            targets = parent.targets if isinstance(parent, ast.Assign) else [parent.target]
            plain = all(isinstance(t, ast.Name) or isinstance(t, (ast.Tuple, ast.List))
                        and all(isinstance(e, ast.Name) for e in t.elts) for t in targets)
            return set() if child is parent.value and plain else None
        elif isinstance(parent, ast.stmt) or isinstance(parent, ast.IfExp) and child is parent.test:
            return None  # a condition, a loop's range, a return, an assert, a call's statement
        child, parent = parent, parents[parent]


def left_out_call(node):
    """The call that stands for the product `node` in the instrumented build: its operands and
    accumulator evaluated as written, its value the accumulator or zeros of its type."""
    bound = provenance.bind(node, DOT)
    arguments = [bound.get("input"), bound.get("other"), bound.get("acc", ast.Constant(None)),
                 bound.get("out_dtype", ast.parse("_tp_tl.float32", mode="eval").body)]
    return ast.copy_location(ast.Call(ast.parse("_tp_probes.product_left_out", mode="eval").body, arguments, []),
                             node)
