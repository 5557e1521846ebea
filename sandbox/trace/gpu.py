"""The trace and bounds check of a GPU launch, taken on the GPU by an instrumented build of the kernel.

The user's @triton.jit function is rewritten (its AST, from sandbox.trace.provenance): every access site
becomes a call into sandbox.trace.probes with the site's number, the tensor its pointer derives from
(that tensor's base address, span and coverage counters as extra kernel arguments) and the run's
record buffers. The rewritten kernel is compiled like any other (its own cache key: it never
stands in for the user's kernel) and launched on clones of the inputs with the same grid and
configuration. Nothing it does reaches memory outside its tensors: out-of-bounds lanes are
masked off before the access and reported. The real launch runs afterwards, only if it found none.

Per tensor the counters make coverage exact for the whole launch at any size; per program, the
programs with a record slot (all of them while they fit the trace's limits, else the first, the
last and an even spread, or the one `options.trace_pid` asks for) keep their accesses, which are
decoded into the same `trace.programs` as the interpreter tracer's (sandbox.trace).

Helper functions of the source that access memory are copied once per call reached from the
kernel, each copy's sites owned as that call's arguments say (sandbox.trace.provenance), and take the
run's buffers as extra keyword arguments. A block pointer's accesses are made through the tensor of
pointers (and the boundary mask) its base, shape, strides and indices give, kept beside it.

`InstrumentedTracer.unsupported` says why a kernel cannot be instrumented (tensor descriptors,
inline assembly, block pointers not made plainly, jit functions imported from other modules that
access memory, pointers with no single root parameter); the run then falls back to the
interpreter tracer on CPU copies.
"""
import ast
import copy
import hashlib
import inspect
import itertools
import math
import os
import re
import textwrap

import numpy as np
import torch
from triton.runtime import KernelInterface

from sandbox.launch import build
from sandbox.launch.kernel import find_kernel, launch_keywords, load_module, silenced
from sandbox.launch.launcher import Background, build_launcher, ready_to_launch
from sandbox.trace import probes, provenance
from sandbox.trace.instrument import Instrumenter
from sandbox.trace.record import access_bytes, coverage_result, index_of, out_of_bounds_error, pid_of, ProgramSample, TensorRange, trace_of

RECORD_LANES = 1 << 24  # int64 lanes of record buffer (128 MB) shared by the programs with a slot
DEVICE_DECODE_LANES = 1 << 20  # recorded lanes past which they are decoded where they were recorded
# The instrumented build's warps, whatever the kernel's own: 1024 threads, a block's most. What a program
# accesses does not depend on its warps, but the probes' code is unrolled over each thread's share of
# every block: the 4096^3 matmul's build compiled for sm90 in 1.4 s at 32 warps, 3.4 s at its own 8 and
# 7.5 s at 4 (ptxas 0.15 s, 1.3 s, 3.8 s); a fused attention's in 1.6 s at 32, 7.5 s at its own 4.
WIDE_WARPS = 32
READS_ITS_WARPS = re.compile(r"\bnum_(warps|threads)\s*\(")  # tl.extra.cuda's queries of a program's warps


def jits_again(node, name):
    """Whether `node` is `name = triton.jit(name)` (or `= triton.jit(...)(name)`): a kernel defined by a
    plain `def` and jitted by assignment, as some libraries write kernels. The instrumented module
    jits the rewritten `def` itself, and a JITFunction jitted again is no function."""
    if not (isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name)
            and node.targets[0].id == name and isinstance(node.value, ast.Call)):
        return False
    call = node.value
    jit = call.func.func if isinstance(call.func, ast.Call) else call.func
    return (ast.unparse(jit).split(".")[-1] == "jit" and len(call.args) == 1
            and isinstance(call.args[0], ast.Name) and call.args[0].id == name)


class InstrumentedTracer:
    """One instrumented launch (or two: a second records the program of an out-of-bounds access)."""

    def __init__(self, source_path, kernel, args, tensors):
        self.source_path, self.kernel = source_path, kernel
        with open(source_path) as f:
            self.source = f.read()
        self.analysis = provenance.analyze(self.source, kernel.function.__name__)
        self.ranges = [TensorRange(name, t) for name, t in tensors.items() if isinstance(t, torch.Tensor)]
        self.owners = self._owners(args, tensors)
        self.compiled_away = self._compiled_away(args)
        self.site_of = {}  # id of an out-of-bounds record -> its site
        self.device = next((r.tensor.device for r in self.ranges), torch.device("cpu"))
        self.narrow = bool(READS_ITS_WARPS.search(self.source))  # compiled at the kernel's own warps

    # -- can it be instrumented?

    def _owners(self, args, tensors):
        """site index -> index into self.ranges of the tensor its pointer derives from."""
        index = {r.name: i for i, r in enumerate(self.ranges)}
        return {site: index[name] for site, name in provenance.site_tensors(self.analysis, args, tensors).items()}

    def _compiled_away(self, args):
        """Sites whose pointer derives from an argument passed as None (an optional tensor left out) and
        from no tensor: Triton binds a None argument as a constant, so such an access can only sit in a
        branch its flag compiles away (else the kernel itself would not compile). They stay as written,
        unprobed."""
        sites = self.analysis.sites if self.analysis else []
        return {site.index for site in sites
                if any(p in args and args[p] is None for p in site.roots)
                and not any(hasattr(args.get(p), "data_ptr") for p in site.roots)}

    @property
    def unsupported(self):
        """Why the kernel's accesses cannot all be seen by instrumentation, or None."""
        if self.analysis is None:
            return "the kernel is not a module-level function of the source"
        if self.analysis.unsupported:
            return self.analysis.unsupported[0]
        for name, line in self.analysis.calls:
            imported = self.imported_function(name)
            if imported is not None:
                return (f"memory accesses inside {name}() called at line {line}, a @triton.jit function of "
                        f"{imported} (not of the source)")
        for site in self.analysis.sites:
            if site.index not in self.owners and site.index not in self.compiled_away:
                return (f"the pointer of the tl.{site.name} at line {site.line} is not derived from exactly one "
                        f"tensor argument")
        return None

    def imported_function(self, name):
        """The module of the @triton.jit function `name` (as the kernel's module sees it) if it is
        imported from elsewhere and accesses memory, else None."""
        value = self.kernel.function.__globals__.get(name.split(".")[0])
        for attribute in name.split(".")[1:]:
            value = getattr(value, attribute, None)
        function = getattr(value, "fn", None)
        if not (isinstance(value, KernelInterface) and inspect.isfunction(function)):
            return None
        try:
            source = textwrap.dedent(inspect.getsource(function))
        except (OSError, TypeError):
            return function.__module__  # no source to read: its accesses cannot be seen
        return function.__module__ if provenance.accesses_memory(source) else None

    # -- the instrumented module

    def instrumented_source(self, functions_only=False):
        """The source with the kernel instrumented and a copy of each helper per call; with
        `functions_only`, those functions and the imports alone (what script mode defines beside a
        running program, sandbox.run.script_gpu)."""
        module = ast.parse(self.source)
        if functions_only:
            module.body = [node for node in module.body if isinstance(node, (ast.Import, ast.ImportFrom))
                           or isinstance(node, ast.FunctionDef) and node.name == self.analysis.name]
        at = next(i for i, node in enumerate(module.body)
                  if isinstance(node, ast.FunctionDef) and node.name == self.analysis.name)
        copies = []
        for reached in self.analysis.functions:  # the kernel, rewritten in place; a copy of each helper per call
            fn = copy.deepcopy(reached.node) if reached.path else module.body[at]
            Instrumenter(self, reached).rewrite(fn)
            copies += [fn] if reached.path else []
        module.body[at:at] = copies
        module.body = [node for node in module.body if not jits_again(node, self.analysis.name)]
        imports = ast.parse("import triton as _tp_triton\nimport triton.language as _tp_tl\nimport triton.language as tl\n"
                            "from sandbox.trace import probes as _tp_probes\n").body
        at = next((i for i, node in enumerate(module.body)
                   if not (isinstance(node, ast.ImportFrom) and node.module == "__future__")
                   and not (i == 0 and isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant))), 0)
        module.body[at:at] = imports
        return ast.unparse(ast.fix_missing_locations(module))

    def load(self, scratch):
        """The instrumented kernel, compiled for the device of the tensors (interpreted on a CPU)."""
        path = os.path.join(scratch, "kernel_instrumented.py")
        with open(path, "w") as f:
            f.write(self.instrumented_source())
        with silenced():
            module = load_module(path, self.device.type == "cpu")
        return find_kernel(module, self.analysis.name).jit

    def define(self, scratch, namespace):
        """The instrumented kernel for a program already running: its functions alone, defined in a copy
        of `namespace` (the program's globals), so that nothing else of the program runs again."""
        source = self.instrumented_source(functions_only=True)
        path = os.path.join(scratch, f"instrumented_{hashlib.sha256(source.encode()).hexdigest()[:16]}.py")
        with open(path, "w") as f:
            f.write(source)  # @triton.jit reads its function's source from the file
        scope = {**namespace, "__name__": "playground_instrumented", "__file__": path}
        exec(compile(source, path, "exec"), scope)
        return scope[self.analysis.name]

    # -- one launch

    def keywords(self, args, config):
        """The instrumented build's launch keywords: the kernel's stages, WIDE_WARPS (or its own warps
        where it reads them, or where the wide build did not compile)."""
        warps = config.num_warps if self.narrow else max(config.num_warps, WIDE_WARPS)
        return launch_keywords(args, num_warps=warps, num_stages=config.num_stages)

    def compile(self, jit, grid, args, config):
        """Compile the instrumented build, launching nothing: (its launch keywords, the compiled kernel).
        Where the wide build does not compile (a layout Triton cannot make so wide), the kernel's own
        warps, from then on."""
        keywords = self.keywords(args, config)
        try:
            return keywords, jit.warmup(grid=grid, **keywords)
        except Exception:
            if self.narrow or keywords["num_warps"] == config.num_warps:
                raise
        self.narrow = True
        return self.compile(jit, grid, args, config)

    def run(self, jit, grid, args, config, plan, trace, cap=None):
        """Launch the instrumented kernel; returns its buffers (on the GPU)."""
        buffers, extra = self.buffers(math.prod(grid), plan, trace, cap)
        args = {**args, **extra}
        if self.device.type == "cpu":
            jit[grid](**self.keywords(args, config))
            return buffers
        beside = Background(lambda: build_launcher(jit, self.keywords(args, config)))  # while the build compiles
        keywords, _ = self.compile(jit, grid, args, config)
        jit[grid](**keywords)
        torch.cuda.synchronize()
        beside.wait()
        return buffers

    def buffers(self, total, plan, trace, cap=None):
        """The buffers of one launch of `total` programs, `plan` of them with a record slot of `cap`
        lanes (default: an equal share of RECORD_LANES), and the extra kernel arguments that pass
        them (sandbox.trace.probes says what each holds). With `trace` the build records and counts
        coverage, else it only checks bounds: two builds, never a third for a launch again."""
        on = {"device": self.device}
        slots = torch.full((total,), -1, dtype=torch.int32, **on)
        if plan:
            slots[torch.tensor(plan, **on)] = torch.arange(len(plan), dtype=torch.int32, **on)
        cap = cap or (max(64, RECORD_LANES // len(plan)) if plan else 1)
        buffers = {"plan": plan, "rec": torch.empty(max(1, len(plan)) * cap, dtype=torch.int64, **on),
                   "cursor": torch.zeros(max(1, len(plan)), dtype=torch.int64, **on),
                   "viol": torch.full((total,), -1, dtype=torch.int32, **on), "cap": cap, "counters": {}}
        extra = {"_tp_rec": buffers["rec"], "_tp_cursor": buffers["cursor"], "_tp_cap": cap, "_tp_slots": slots,
                 "_tp_viol": buffers["viol"], "_TP_TRACE": trace}
        for i in sorted(set(self.owners.values())):
            r = self.ranges[i]
            cov = torch.zeros(probes.COUNTERS * max(1, r.span) if trace else 1, dtype=torch.int32, **on)
            if trace:
                cov[:r.span].fill_(torch.iinfo(torch.int32).max)
                cov[r.span:2 * r.span].fill_(-1)
            buffers["counters"][i] = cov
            extra.update({f"_tp_base_{i}": r.start, f"_tp_span_{i}": r.span, f"_tp_cov_{i}": cov})
        return buffers, extra

    # -- reading the buffers back

    def programs(self, buffers, grid, limits, wanted=None):
        """[(index, program, nbytes)] of the recorded programs (those of `wanted` only, if given),
        decoded like the interpreter's records."""
        plan, cap = buffers["plan"], buffers["cap"]
        slots = [slot for slot, index in enumerate(plan) if wanted is None or index in wanted]
        cursor = buffers["cursor"][slots].cpu().numpy() if slots else np.zeros(0, np.int64)
        used = np.minimum(cursor, cap)
        width = int(used.max()) if used.size else 0
        rec = (buffers["rec"].view(-1, cap)[torch.tensor(slots, device=self.device), :width] if width
               else torch.zeros((len(slots), 0), dtype=torch.int64))
        host = rec.cpu()
        events = self.events(host.numpy(), used)  # the headers, read on the host
        records = self.records(rec, host, events)
        part_bytes = max(1, limits["max_bytes"] // 3)
        decoded, at = [], 0
        for row, slot in enumerate(slots):
            index = plan[slot]
            program, nbytes = {"pid": list(pid_of(index, grid)), "accesses": []}, 40
            truncated = cursor[row] > cap
            while at < len(events) and events[at][0] == row:
                record = records[at]
                at += 1
                if record is None:
                    continue
                if nbytes > part_bytes and not record.get("out_of_bounds"):  # the error's access is always kept
                    truncated = True
                    continue
                program["accesses"].append(record)
                nbytes += access_bytes(record)
            if truncated:
                program["truncated"] = True
            decoded.append((index, program, nbytes))
        return decoded

    @staticmethod
    def events(rec, used):
        """[(row, first lane column, site, lanes)] in row order, then program order."""
        events = []
        for row, stream in enumerate(rec):
            at, end = 0, int(used[row])
            while at + 2 <= end:
                site, n = int(stream[at]), int(stream[at + 1])
                if site < 0 or at + 2 + n > end:
                    break
                events.append((row, at + 2, site, n))
                at += n + 2
        return events

    def records(self, rec, host, events):
        """The access record of each event, all decoded at once (stream_runs): on the device (`rec`)
        where the lanes are many (a 4096^3 matmul's program records a million), else on the host."""
        if not events:
            return []
        rows, starts, sizes = (np.array([event[i] for event in events]) for i in (0, 1, 3))
        where = rec if sizes.sum() > DEVICE_DECODE_LANES else host
        runs = stream_runs(where.reshape(-1), rows * rec.shape[1] + starts, sizes)
        return [self.record(event[2], *event_runs) for event, event_runs in zip(events, zip(*runs))]

    def record(self, site_index, offsets, masked, out_of_bounds):
        if not offsets and not masked:
            return None
        site = self.analysis.sites[site_index]
        record = {"op": site.op, "tensor": self.ranges[self.owners[site_index]].name, "line": site.line,
                  "offsets": offsets, "masked": masked}
        if site.op == "atomic":
            record["atomic"] = site.atomic
        if out_of_bounds:
            record["out_of_bounds"] = out_of_bounds
            self.site_of[id(record)] = site_index
        return record

    def tensors_and_coverage(self, counters):
        tensors, coverage, touched = {r.name: r.info() for r in self.ranges}, {}, 0
        for i, cov in counters.items():
            r = self.ranges[i]
            lowest, highest, loads, atomics = cov.view(probes.COUNTERS, -1)
            stored, loaded, updated = highest >= 0, loads > 0, atomics > 0
            r.loaded, r.stored = bool((loaded | updated).any()), bool((stored | updated).any())
            tensors[r.name] = r.info()
            touched += int(((loaded | updated).sum() + (stored | updated).sum()).item()) * r.itemsize
            if r.stored:
                writers = torch.where(highest < 0, 0, torch.where(lowest == highest, 1, 2))
                writers = torch.maximum(writers, updated.to(writers.dtype)).to(torch.uint8)
                coverage[r.name] = coverage_result(writers, r)
        return tensors, coverage, touched


def stream_runs(stream, starts, sizes):
    """The lanes of the events in `stream` (a tensor; event i's lanes are stream[starts[i]:starts[i] +
    sizes[i]]) as three lists of runs per event: its active lanes' elements, its masked lanes' and its
    active out-of-bounds lanes', each [[first element, length], ...]. Torch's operations, where the
    stream is: only the runs leave the device."""
    on = {"device": stream.device}
    sizes, starts = torch.from_numpy(sizes).to(**on), torch.from_numpy(starts).to(**on)
    event = torch.repeat_interleave(torch.arange(sizes.numel(), **on), sizes)
    first_lane = torch.cumsum(sizes, 0) - sizes  # each event's first lane among all events' lanes
    lanes = stream[torch.arange(event.numel(), **on) + (starts - first_lane)[event]]
    elements, active = lanes >> 2, (lanes & 1).bool()
    out = active & ((lanes >> 1) & 1).bool()
    return [event_runs(elements[which], event[which], sizes.numel()) for which in (active, ~active, out)]


def event_runs(elements, event, count):
    """The runs of consecutive elements within each of `count` events (`event`: each element's, in
    order), as runs_of gives them: a list per event."""
    if elements.numel() == 0:
        return [[] for _ in range(count)]
    starts_run = torch.ones(elements.numel(), dtype=torch.bool, device=elements.device)
    starts_run[1:] = (elements.diff() != 1) | (event.diff() != 0)
    first = torch.nonzero(starts_run).squeeze(1)
    lengths = torch.diff(first, append=torch.tensor([elements.numel()], device=elements.device))
    runs = torch.stack([elements[first], lengths], dim=1).cpu().tolist()
    bounds = np.searchsorted(event[first].cpu().numpy(), np.arange(count + 1))
    return [runs[start:end] for start, end in zip(bounds[:-1].tolist(), bounds[1:].tolist())]


def record_plan(total, limits, trace_pid=None, grid=None):
    """The programs that get a record slot: every program while they fit `max_programs`, else the
    first, the last and an even spread (as ProgramSample keeps them); or only `trace_pid`."""
    if trace_pid is not None:
        return [index_of(trace_pid, grid)]
    max_programs = limits["max_programs"]
    if total <= max_programs:
        return list(range(total))
    part = max(1, max_programs // 3)
    stride = max(1, math.ceil(total / part))
    head, tail = set(range(part)), set(range(total - min(part, max(1, total // 3)), total))
    return sorted(head | tail | set(range(0, total, stride)))


def first_launch_plan(grid, options, limits):
    """The programs with a record slot in a trace's first instrumented launch."""
    return record_plan(math.prod(grid), limits, options.get("trace_pid"), grid) if options["trace"] else []


def compile_instrumented(tracer, jit, grid, args, config, options, limits, light=False):
    """Compile the instrumented build that gpu_trace's first launch runs (with `light`, the one of
    bounds_check's light check), launching nothing: the same arguments, so the launch finds it
    compiled (or, in Triton's asynchronous compile mode, being compiled)."""
    plan, trace = ([], False) if light else (first_launch_plan(grid, options, limits), options["trace"])
    _, extra = tracer.buffers(math.prod(grid), plan, trace)
    ready_to_launch(tracer.compile(jit, grid, {**args, **extra}, config)[1])


def checked_run(tracer, jit, grid, args, config, limits, plan, trace):
    """One instrumented launch (`plan`'s programs with a record slot, coverage counted, where
    `trace`); its buffers, or the out-of-bounds RunError of its first stray program."""
    buffers = tracer.run(jit, grid, args, config, plan, trace)
    bad = np.flatnonzero(buffers["viol"].cpu().numpy() >= 0)
    if bad.size:
        raise out_of_bounds(tracer, jit, grid, args, config, limits, int(bad[0]), buffers)
    return buffers


def bounds_check(tracer, jit, grid, args, config, limits, light=False):
    """The bounds check alone, by the build a trace launches (one program recorded, nothing decoded):
    a later trace of a launch alike finds it compiled (script mode checks every launch it lists so,
    and traces the one shown). `light`: by the build that neither records nor counts coverage, quicker
    to compile (script mode's check of an autotuner's trial of a config); an access out
    of bounds is then recorded by a second launch, as the error needs. Raises the out-of-bounds RunError."""
    checked_run(tracer, jit, grid, args, config, limits, [] if light else [0], not light)


def gpu_trace(tracer, jit, grid, args, config, options, limits):
    """The trace (docs/result.md) of an instrumented launch; raises the out-of-bounds RunError, with
    the trace up to and including the offending access attached as `error.trace`."""
    total = math.prod(grid)
    trace_pid = options.get("trace_pid")
    buffers = checked_run(tracer, jit, grid, args, config, limits, first_launch_plan(grid, options, limits),
                          options["trace"])
    if not options["trace"]:
        return None
    tensors, coverage, touched = tracer.tensors_and_coverage(buffers["counters"])
    wanted, buffers = recorded_whole(tracer, jit, grid, args, config, limits, buffers)
    sample = ProgramSample(total, limits["max_programs"] if trace_pid is None else 1, limits["max_bytes"])
    for item in tracer.programs(buffers, grid, limits, wanted):
        sample.add(*item)
    programs = sample.programs()
    return trace_of(grid, programs, "gpu", sampled=len(programs) < total, sample=sample.describe(), tensors=tensors,
                    coverage=coverage, bytes_touched=touched)


def recorded_whole(tracer, jit, grid, args, config, limits, buffers):
    """The programs worth decoding: as many as the trace's byte limit takes, judged by the first
    program's size, so that decoding costs what is sent, and a big program's slots are recorded
    whole (by a second launch, with slots of its size, where the first launch's were too small)."""
    plan, cap = buffers["plan"], buffers["cap"]
    cursor = buffers["cursor"].cpu().numpy()[:len(plan)]
    need = max(1, int(cursor.max()))
    first = tracer.programs(buffers, grid, limits, {plan[0]})[0][2]
    per_program = first * max(1.0, cursor[0] / cap)  # a cut-short first program, scaled to its whole size
    fit = max(1, min(RECORD_LANES // need, math.ceil(limits["max_bytes"] / per_program)))
    wanted = set(plan if fit >= len(plan) else record_plan(math.prod(grid), {"max_programs": fit}))
    slot_of = {index: slot for slot, index in enumerate(plan)}
    if all(index in slot_of and cursor[slot_of[index]] <= cap for index in wanted):
        return wanted, buffers
    tracer.restore()  # the same launch again, from the inputs as they were
    return wanted, tracer.run(jit, grid, args, config, sorted(wanted), True, cap=min(max(64, need), RECORD_LANES))


def out_of_bounds(tracer, jit, grid, args, config, limits, index, buffers):
    """The first program (in launch order) with an out-of-bounds access, recorded and explained."""
    plan = buffers["plan"]
    if index not in plan:  # record it (and the programs before it that have slots) in a second launch
        plan = sorted([p for p in plan if p < index] + [index])
        tracer.restore()  # the same launch again: from the inputs as they were
        buffers = tracer.run(jit, grid, args, config, plan, True)
    site_index = int(buffers["viol"][index].item())  # the site of the program's first stray access
    programs, error = decoded_until(tracer, buffers, grid, limits, index)
    if error is None:
        # Its slot was too small for all its accesses (a long loop, a big block): record it alone, whole.
        need = int(buffers["cursor"][buffers["plan"].index(index)].item())
        tracer.restore()
        alone = tracer.run(jit, grid, args, config, [index], True, cap=min(max(64, need), RECORD_LANES))
        whole, error = decoded_until(tracer, alone, grid, limits, index)
        programs = programs[:-1] + whole[-1:]
    site = tracer.analysis.sites[tracer.site_of[id(error)] if error is not None else site_index]
    tensor = tracer.ranges[tracer.owners[site.index]]
    tensors = {r.name: r.info() for r in tracer.ranges}
    pid = list(pid_of(index, grid))
    if error is None:  # more accesses than any record buffer holds: the error without its offsets
        exc = out_of_bounds_error(site.op, tensor, None, pid, site.line, None, 1, site.block is not None)
        exc.trace = trace_of(grid, programs[:-1], "gpu", sampled=True, sample=None, tensors=tensors, coverage={})
        return exc
    out = np.concatenate([np.arange(start, start + length) for start, length in error["out_of_bounds"]])
    exc = out_of_bounds_error(site.op, tensor, out, pid, site.line, error.get("atomic"),
                              2 if provenance.looks_2d(site) else 1, site.block is not None)
    exc.trace = trace_of(grid, programs, "gpu", sampled=True, sample=None, tensors=tensors, coverage={})
    return exc


def decoded_until(tracer, buffers, grid, limits, index):
    """The recorded programs up to program `index`, whose accesses end at its first out-of-bounds one,
    and that access (None where its record did not fit its slot)."""
    programs, error = [], None
    for i, program, _ in tracer.programs(buffers, grid, limits):
        if i > index:
            break
        if i == index:
            for at, access in enumerate(program["accesses"]):
                if access.get("out_of_bounds"):
                    program["accesses"] = program["accesses"][:at + 1]
                    error = access
                    break
        programs.append(program)
    return programs, error


def prepare(spec, kernel_path, kernel, inputs, namespace):
    """The tracer, and the arguments of its launch over clones of `inputs` (the instrumented launch
    writes too: the real one must start from the inputs as built)."""
    clones = {name: t.clone() for name, t in inputs.items()}
    args, _ = build.build_args(spec, kernel, {**namespace, **clones})
    tracer = InstrumentedTracer(kernel_path, kernel, args, build.launch_tensors(clones, args))
    tracer.restore = lambda: [clones[name].copy_(t) for name, t in inputs.items()]
    return tracer, args
