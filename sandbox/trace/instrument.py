"""The rewrite that makes a kernel's instrumented build (sandbox.trace.gpu): each function reached from
the kernel takes the run's buffers as extra parameters, each access site becomes a call into
sandbox.trace.probes, each helper call goes to that call's copy of the helper, and a block pointer's
accesses are made through the tensor of pointers its scalars give. A matrix product whose value is
only stored is left out (sandbox.trace.stored_values)."""
import ast

from sandbox.trace import provenance, stored_values

ARGUMENTS = {
    "load": ["pointer", "mask", "other", "boundary_check", "padding_option", "cache_modifier", "eviction_policy",
             "volatile"],
    "store": ["pointer", "value", "mask", "boundary_check", "cache_modifier", "eviction_policy"],
    "atomic": ["pointer", "val", "mask", "sem", "scope"],
    "cas": ["pointer", "cmp", "val", "sem", "scope"],
}
DEFAULTS = {"mask": None, "other": None, "cache_modifier": "", "eviction_policy": "", "volatile": False,
            "sem": None, "scope": None}


class Instrumenter(ast.NodeTransformer):
    """Rewrites one function reached from the kernel (provenance.Function): extra parameters, in the
    kernel a prologue, each site through sandbox.trace.probes, each helper call to that call's copy of the
    helper, and beside each block pointer the scalars it is made of (`_tp_<name>_base`, and per
    dimension `_shape<d>`, `_stride<d>` and `_ix<d>`, the block's indices), from which a block
    pointer's access is made as the same access through a tensor of pointers."""

    def __init__(self, tracer, reached):
        self.tracer, self.reached = tracer, reached
        self.sites = {site.position: site for site in tracer.analysis.sites if site.path == reached.path}
        self.calls = {f.path[-1]: f for f in tracer.analysis.functions if f.path and f.path[:-1] == reached.path}
        self.products = stored_values.products_left_out(tracer.analysis, tracer.owners) if not reached.path else set()
        owners = sorted(set(tracer.owners.values()))
        self.shared = ["_tp_rec", "_tp_cursor", "_tp_cap", "_tp_viol"] + [
            f"_tp_{what}_{i}" for i in owners for what in ("base", "span", "cov")]

    def rewrite(self, fn):
        # `tl.constexpr` as written: the interpreter reads annotations from the source text
        constexpr = ast.parse("tl.constexpr", mode="eval").body
        flags = [ast.arg("_TP_TRACE", constexpr)]
        if self.reached.path:  # a helper: the kernel's program and buffers, passed by keyword
            fn.decorator_list = [ast.parse("_tp_triton.jit", mode="eval").body]
            fn.name = self.reached.clone
            new = [ast.arg(name) for name in self.shared + ["_tp_slot", "_tp_pid"]] + flags
            fn.args.args += new
            fn.args.defaults += [ast.Constant(None) for _ in new]
            self.generic_visit(fn)
            return
        first_default = len(fn.args.args) - len(fn.args.defaults)
        fn.args.args[first_default:first_default] = [ast.arg(name) for name in self.shared + ["_tp_slots"]] + flags
        # Nothing but constexprs is specialized on (no integer's divisibility by 16 or being 1, no pointer's
        # alignment; the tracer's own integers change with every launch's sizes): the build checks and
        # records, its speed is not the point, and one build then serves every launch of the kernel with
        # the same constexprs and types (a program's next sizes, an autotuner's next key), each build
        # being several times slower to compile than the kernel itself.
        dynamic = [arg.arg for arg in fn.args.args if "constexpr" not in ast.unparse(arg.annotation or ast.Constant(""))]
        fn.decorator_list = [ast.parse(f"_tp_triton.jit(do_not_specialize={dynamic!r}, "
                                       f"do_not_specialize_on_alignment={dynamic!r})", mode="eval").body]
        self.generic_visit(fn)
        prologue = ast.parse("_tp_pid = (_tp_tl.program_id(0) * _tp_tl.num_programs(1) + _tp_tl.program_id(1)) "
                             "* _tp_tl.num_programs(2) + _tp_tl.program_id(2)\n"
                             "_tp_slot = _tp_tl.load(_tp_slots + _tp_pid)\n").body
        docstring = int(bool(fn.body) and isinstance(fn.body[0], ast.Expr) and isinstance(fn.body[0].value, ast.Constant))
        fn.body[docstring:docstring] = prologue

    def visit_Assign(self, node):
        self.generic_visit(node)
        target = node.targets[0]
        if not (isinstance(target, ast.Name) and target.id in self.reached.blocks and isinstance(node.value, ast.Call)):
            return node
        return [ast.copy_location(statement, node) for statement in self.block_scalars(target.id, node.value)] + [node]

    def block_scalars(self, name, call):
        """The statements that set the scalars of block pointer `name`, made by `call`, before it."""
        ndim, new = self.reached.blocks[name], f"_tp_{name}"
        if call.func.attr == "advance":  # tl.advance or triton.language.advance (provenance made sure)
            bound = provenance.bind(call, ["base", "offsets"])
            old = f"_tp_{bound['base'].id}"
            lines = [f"{new}_base = {old}_base"] if old != new else []
            lines += [line for d in range(ndim) for line in
                      ([f"{new}_shape{d} = {old}_shape{d}", f"{new}_stride{d} = {old}_stride{d}"] if old != new else [])
                      + [f"{new}_ix{d} = {old}_ix{d} + _tp_probes.i32({ast.unparse(bound['offsets'].elts[d])})"]]
        else:
            bound = provenance.bind(call, provenance.MAKE_BLOCK_PTR)
            shape, strides, offsets, block = (bound[k].elts for k in provenance.MAKE_BLOCK_PTR[1:5])
            lines = [f"{new}_base = {ast.unparse(bound['base'])}"]
            for d in range(ndim):
                lines += [f"{new}_shape{d} = _tp_probes.i64({ast.unparse(shape[d])})",
                          f"{new}_stride{d} = _tp_probes.i64({ast.unparse(strides[d])})",
                          f"{new}_ix{d} = _tp_probes.i32({ast.unparse(offsets[d])}) + "
                          f"_tp_tl.arange(0, {ast.unparse(block[d])})"]
        return ast.parse("\n".join(lines)).body

    def block_access(self, site, given):
        """The pointers and the mask of a block pointer's access, from its scalars, as the expressions
        of the same access through a tensor of pointers."""
        ndim, name = self.reached.blocks[site.block], f"_tp_{site.block}"

        def along(d, expression):  # a vector of dimension d, broadcast against the others
            axes = ", ".join(":" if i == d else "None" for i in range(ndim))
            return f"({expression})" if ndim == 1 else f"({expression})[{axes}]"

        pointers = " + ".join([f"{name}_base"] + [along(d, f"{name}_ix{d}.to(_tp_tl.int64) * {name}_stride{d}")
                                                  for d in range(ndim)])
        check = given.get("boundary_check")
        dims = [] if check is None else [e.value for e in check.elts] if provenance.written_out(check) else [check.value]
        mask = " & ".join(along(d, f"({name}_ix{d} >= 0) & ({name}_ix{d} < {name}_shape{d})")
                          for d in sorted(set(dims)))
        padding = given.get("padding_option")
        other = {"zero": "0", "nan": "float('nan')"}.get(padding.value if padding is not None else None, "None")
        return {"pointer": ast.parse(pointers, mode="eval").body,
                "mask": ast.parse(mask or "None", mode="eval").body,
                "other": ast.parse(other, mode="eval").body}

    def visit_Call(self, node):
        self.generic_visit(node)
        position = (node.lineno, node.end_lineno, node.col_offset, node.end_col_offset)
        if position in self.calls:  # a helper with accesses: this call's copy of it
            node.func = ast.Name(self.calls[position].clone, ast.Load())
            node.keywords += [ast.keyword(name, ast.Name(name, ast.Load()))
                              for name in self.shared + ["_tp_slot", "_tp_pid", "_TP_TRACE"]]
            return node
        if position in self.products:
            return stored_values.left_out_call(node)
        site = self.sites.get(position)
        if site is None or site.index in self.tracer.compiled_away:
            return node
        kind = "cas" if site.name == "atomic_cas" else site.op
        given = dict(zip(ARGUMENTS[kind], node.args))
        given.update({k.arg: k.value for k in node.keywords})
        if site.block is not None:
            given.update(self.block_access(site, given))
        user = [given.get(name, ast.Constant(DEFAULTS.get(name))) for name in ARGUMENTS[kind]
                if name not in ("boundary_check", "padding_option")]
        i = self.tracer.owners[site.index]
        shift = self.tracer.ranges[i].shift
        tail = (f"_tp_base_{i}, _tp_span_{i}, _tp_cov_{i}, _tp_rec, _tp_cursor, _tp_cap, _tp_slot, _tp_viol, "
                f"_tp_pid, {site.index}, {shift}, _TP_TRACE")
        if kind == "atomic":
            tail += f", {site.atomic!r}"
        call = ast.parse(f"_tp_probes.{kind}({tail})", mode="eval").body
        call.args[0:0] = user
        return ast.copy_location(call, node)
