"""The run pipeline: one run spec in, one result out (DESIGN.md), inside a worker's run process.

Stages in order: parse → build (module, inputs, args, grid) → launch (traced and bounds-checked in
the interpreter; on a GPU after a traced pass over CPU copies) → check → bench → ir.
Each stage raises RunError naming its phase; `run_spec` turns that into the result's `error`.
"""
import contextlib
import importlib.util
import itertools
import math
import os
import re
import sys
import tempfile
import time
import traceback

import torch
import triton
import triton.language as tl
from triton.runtime.autotuner import Autotuner, Heuristics

from sandbox import bench
from sandbox import check as checking
from sandbox.errors import RunError, hint_for
from sandbox.ir import compile_ir, silenced
from sandbox.spec import SpecError, normalize
from sandbox.trace import TraceBudgetExceeded, Tracer, unique_bytes

_module_ids = itertools.count()
LAUNCH_BOUND_MS = 0.01  # below ~10 µs a kernel's time is mostly launch overhead
_EMPTY = re.compile(r"^\s*torch\.empty(_like)?\s*\(")


def device_info(kind):
    name = torch.cuda.get_device_name() if kind == "gpu" else "Triton interpreter (CPU)"
    return {"kind": kind, "name": name, "triton": triton.__version__, "torch": torch.__version__.split("+")[0]}


def gpu_available():
    return torch.cuda.is_available()


def choose_device(requested):
    if requested == "gpu" and not gpu_available():
        raise RunError("build", "options.device is 'gpu' but this server has no GPU: use 'auto' or 'interpreter'")
    if requested == "interpreter" or not gpu_available():
        return "interpreter"
    return "gpu"


# ---------------------------------------------------------------- parse and build

def user_line(exc, path):
    """The deepest line of the user's source in an exception's traceback (or its causes)."""
    line = getattr(exc, "lineno", None) if isinstance(exc, SyntaxError) else None
    seen = set()
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        for frame in traceback.extract_tb(exc.__traceback__):
            if frame.filename == path:
                line = frame.lineno
        exc = exc.__cause__ or exc.__context__
    return line


def describe(exc):
    """The innermost meaningful message: the interpreter wraps errors as InterpreterError(repr(e))."""
    inner = exc
    while inner.__cause__ is not None:
        inner = inner.__cause__
    message = f"{type(inner).__name__}: {inner}"
    hint = hint_for(message) or hint_for(str(exc))
    return type(inner).__name__, (f"{message}\n\n{hint}" if hint else message)


def load_module(source, path, interpret):
    """Write the source to a real file (inspect.getsource needs one) and import it."""
    with open(path, "w") as f:
        f.write(source)
    try:
        code = compile(source, path, "exec")
    except SyntaxError as e:
        raise RunError("parse", f"{e.msg} (line {e.lineno})", type="SyntaxError", line=e.lineno) from None
    module_name = f"playground_kernel_{next(_module_ids)}"
    module_spec = importlib.util.spec_from_file_location(module_name, path)
    module = importlib.util.module_from_spec(module_spec)
    sys.modules[module_name] = module
    with interpreter_mode(interpret):
        try:
            exec(code, module.__dict__)
        except Exception as e:
            kind, message = describe(e)
            raise RunError("build", f"running the module failed: {message}", type=kind, line=user_line(e, path)) from None
    return module


@contextlib.contextmanager
def interpreter_mode(on):
    """@triton.jit picks the interpreter at decoration time from this knob."""
    before = triton.knobs.runtime.interpret
    triton.knobs.runtime.interpret = on
    try:
        yield
    finally:
        triton.knobs.runtime.interpret = before


def innermost_jit(obj):
    """Unwrap @triton.autotune / @triton.heuristics down to the jit function."""
    while not hasattr(obj, "arg_names") and hasattr(obj, "fn"):
        obj = obj.fn
    return obj


def wrappers(kernel):
    """The @triton.autotune / @triton.heuristics layers around the jit function, outermost first."""
    layers = []
    while isinstance(kernel, (Autotuner, Heuristics)):
        layers.append(kernel)
        kernel = kernel.fn
    return layers


def autotuner_of(kernel):
    return next((layer for layer in wrappers(kernel) if isinstance(layer, Autotuner)), None)


def autotuned_values(kernel):
    """{meta-parameter: value} of the autotuner's first config; {} when the kernel is not autotuned."""
    autotuner = autotuner_of(kernel)
    return dict(autotuner.configs[0].kwargs) if autotuner else {}


def heuristic_rules(kernel):
    """{meta-parameter: rule(args) -> value} of the kernel's @triton.heuristics."""
    return {name: rule for layer in wrappers(kernel) if isinstance(layer, Heuristics)
            for name, rule in layer.values.items()}


def is_interpreted(kernel):
    from triton.runtime.interpreter import InterpretedFunction
    layers = wrappers(kernel)
    return isinstance(layers[-1].fn if layers else kernel, InterpretedFunction)


def jit_functions(module):
    return [name for name, obj in vars(module).items()
            if hasattr(innermost_jit(obj), "arg_names") and hasattr(obj, "__getitem__")]


def find_kernel(module, name):
    kernel = getattr(module, name, None)
    if kernel is None or not hasattr(innermost_jit(kernel), "arg_names"):
        found = ", ".join(jit_functions(module)) or "none"
        raise RunError("build", f"there is no @triton.jit function named '{name}' in the source "
                                f"(jit functions found: {found})")
    return kernel


def kernel_params(kernel):
    """[(name, is_constexpr, has_default)] from the innermost Python function's signature."""
    import inspect
    fn = innermost_jit(kernel)
    while hasattr(fn, "fn"):
        fn = fn.fn
    params = []
    for p in inspect.signature(fn).parameters.values():
        annotation = p.annotation
        is_constexpr = annotation is tl.constexpr or "constexpr" in str(annotation)
        params.append((p.name, is_constexpr, p.default is not inspect.Parameter.empty))
    return params


def expression_namespace(module):
    helpers = {k: v for k, v in vars(module).items() if not k.startswith("_")}
    return {"torch": torch, "triton": triton, "tl": tl, "math": math, **helpers}


def evaluate(expr, namespace, what):
    try:
        return eval(expr, namespace)  # the whole process is the sandbox: this is where user code runs
    except NameError as e:
        raise RunError("build", f"{what} = {expr!r}: {e.name!r} is not an input, an argument or a "
                                f"name defined in your source", type="NameError") from None
    except SyntaxError as e:
        raise RunError("build", f"{what} = {expr!r} is not a valid Python expression: {e.msg}", type="SyntaxError") from None
    except RunError:
        raise
    except Exception as e:
        raise RunError("build", f"{what} = {expr!r} failed: {type(e).__name__}: {e}", type=type(e).__name__) from None


def poison(tensor):
    """Fill a torch.empty output with a value the kernel would not write, to count unwritten elements."""
    if tensor.dtype.is_floating_point or tensor.dtype.is_complex:
        tensor.fill_(float("nan"))
    elif tensor.dtype == torch.bool:
        tensor.fill_(False)
    else:
        tensor.fill_(torch.iinfo(tensor.dtype).min)


def build_inputs(spec, namespace, device):
    inputs, poisoned = {}, set()
    torch.manual_seed(spec["options"]["seed"])
    with torch.device(device):
        for name, expr in spec["inputs"].items():
            value = evaluate(expr, {**namespace, **inputs}, f"input '{name}'")
            if not isinstance(value, torch.Tensor):
                raise RunError("build", f"input '{name}' = {expr!r} is a {type(value).__name__}, not a torch tensor")
            if value.device.type != torch.device(device).type:
                value = value.to(device)
            if _EMPTY.match(expr):
                poison(value)
                poisoned.add(name)
            inputs[name] = value
    return inputs, poisoned


def build_args(spec, kernel, namespace):
    params = kernel_params(kernel)
    names = [p[0] for p in params]
    unknown = [a for a in spec["args"] if a not in names]
    if unknown:
        raise RunError("build", f"{', '.join(repr(a) for a in unknown)} is not a parameter of {spec['kernel']} "
                                f"(its parameters: {', '.join(names)})")
    tuned, rules = autotuned_values(kernel), heuristic_rules(kernel)
    args, scope = {}, dict(namespace)
    for name, is_constexpr, has_default in params:
        if name in tuned:
            if name in spec["args"]:
                raise RunError("build", f"argument '{name}' is chosen by @triton.autotune (its configs set it): "
                                        f"remove it from the arguments")
            # The first config stands in for the grid, the trace and the IR; launch() leaves the choice to the autotuner.
            args[name] = scope[name] = tuned[name]
            continue
        if name not in spec["args"]:
            if has_default or name in rules:
                continue
            raise RunError("build", f"argument '{name}' of {spec['kernel']} is not mapped: give it an input "
                                    f"name, an expression such as x.numel(), or a literal")
        value = spec["args"][name]
        if isinstance(value, str):
            value = evaluate(value, scope, f"argument '{name}'")
        args[name] = scope[name] = value
    for name, rule in rules.items():
        if name not in spec["args"]:  # @triton.heuristics computes it at launch, as here, from the other arguments
            try:
                args[name] = scope[name] = rule(dict(args))
            except Exception as e:
                raise RunError("build", f"the @triton.heuristics rule for '{name}' failed: {type(e).__name__}: {e}",
                               type=type(e).__name__) from None
    return args, scope


def build_grid(spec, args, scope):
    expr = spec["grid"].strip()
    meta = dict(args)
    if expr.startswith("lambda"):
        fn = evaluate(expr, scope, "grid")
        try:
            grid = fn(meta)
        except Exception as e:
            raise RunError("build", f"grid = {expr!r} failed: {type(e).__name__}: {e}", type=type(e).__name__) from None
    else:
        grid = evaluate(expr, {**scope, "meta": meta}, "grid")
    if isinstance(grid, int):
        grid = (grid,)
    if not (isinstance(grid, (tuple, list)) and 1 <= len(grid) <= 3 and all(isinstance(g, int) for g in grid)):
        raise RunError("build", f"grid = {expr!r} gave {grid!r}: it must be a tuple of 1 to 3 integers, e.g. (triton.cdiv(n, meta['BLOCK_SIZE']),)")
    if any(g < 1 for g in grid):
        raise RunError("build", f"grid = {expr!r} gave {tuple(grid)}: every dimension must be at least 1 program")
    return tuple(grid) + (1,) * (3 - len(grid))


# ---------------------------------------------------------------- launch

def is_autotuned(kernel):
    return autotuner_of(kernel) is not None


def launch(kernel, grid, args, options):
    """kernel[grid](**args). An autotuned kernel gets its meta-parameters, num_warps and num_stages from
    the config the autotuner picks (on a GPU `grid` must then be a callable of meta); in the
    interpreter, which cannot time configs, that is the first config."""
    autotuner = autotuner_of(kernel)
    if autotuner is None:
        kernel[grid](**args, num_warps=options["num_warps"], num_stages=options["num_stages"])
        return
    untuned = {name: value for name, value in args.items() if name not in autotuned_values(kernel)}
    if not is_interpreted(autotuner):
        kernel[grid](**untuned)
        return
    configs = autotuner.configs
    autotuner.configs = configs[:1]  # one config: the autotuner runs it without benchmarking
    try:
        kernel[grid](**untuned)
    finally:
        autotuner.configs = configs


def launch_error(exc, path, phase="launch"):
    if isinstance(exc, RunError):
        return exc
    kind, message = describe(exc)
    pid = None
    try:
        from triton.runtime.interpreter import interpreter_builder
        pid = list(interpreter_builder.grid_idx)
    except Exception:
        pass
    return RunError(phase, message, type=kind, line=user_line(exc, path), pid=pid)


def traced_tensors(inputs, args):
    """The inputs, plus tensors made inside an argument expression (named by their parameter)."""
    storages = {t.untyped_storage().data_ptr() for t in inputs.values()}
    extra = {name: value for name, value in args.items()
             if isinstance(value, torch.Tensor) and value.untyped_storage().data_ptr() not in storages}
    return {**inputs, **extra}


@contextlib.contextmanager
def interpreter_hygiene():
    """Run the interpreter without leaving it patched into triton.language afterwards.

    Two fixes, both needed by a process that compiles for a GPU after an interpreted launch (a GPU
    run's trace pass; the IR of a CPU run):
    - triton.language's own @jit functions (tl.cdiv, tl.sum, ...) are compiled-mode JITFunctions in
      a process that imported triton with the interpreter off, and refuse to be called in a kernel:
      call them as interpreted functions instead;
    - the interpreter patches triton.language for each device-function call and never restores
      it (only the launch's own patches are undone): undo each call's patches when it returns.
    """
    from triton.runtime import interpreter
    from triton.runtime.jit import JITFunction
    scopes, interpreted = [], {}
    original_patch, original_device_call = interpreter._patch_lang, interpreter.InterpretedFunction.__call__
    original_jit_call = JITFunction.__call__

    def patch_lang(fn):
        scope = original_patch(fn)
        scopes.append(scope)
        return scope

    def device_call(self, *args, **kwargs):
        mark = len(scopes)
        try:
            return original_device_call(self, *args, **kwargs)
        finally:
            while len(scopes) > mark:
                scopes.pop().restore()

    def jit_call(self, *args, **kwargs):
        if self.fn not in interpreted:
            interpreted[self.fn] = interpreter.InterpretedFunction(self.fn)
        return interpreted[self.fn](*args, **kwargs)

    interpreter._patch_lang, interpreter.InterpretedFunction.__call__ = patch_lang, device_call
    JITFunction.__call__ = jit_call
    try:
        yield
    finally:
        interpreter._patch_lang, interpreter.InterpretedFunction.__call__ = original_patch, original_device_call
        JITFunction.__call__ = original_jit_call
        while scopes:
            scopes.pop().restore()


def traced_launch(kernel, grid, args, tensors, path, options, limits, budget_s=None):
    """Launch in the interpreter with the bounds sanitizer on; returns the trace (or None).
    With `budget_s` the launch stops with TraceBudgetExceeded once that time is spent."""
    tracer = Tracer(traced_tensors(tensors, args), path, record=options["trace"], budget_s=budget_s, **limits)
    with tracer, interpreter_hygiene():
        launch(kernel, grid, args, options)
    return tracer.result(grid) if options["trace"] else None


class GridPerConfig:
    """The spec's grid as a callable of meta, for the autotuner to evaluate with each config it tries."""

    def __init__(self, spec, scope):
        self.spec, self.scope, self.last = spec, scope, None

    def __call__(self, meta):
        self.last = build_grid(self.spec, meta, {**self.scope, **meta})
        return self.last


# ---------------------------------------------------------------- the whole run

class Run:
    """One run of one spec; `emit(type, content)` streams status to the worker."""

    def __init__(self, spec, emit, scratch, limits, checked_before=False):
        self.spec, self.emit, self.scratch = spec, emit, scratch
        self.checked_before = checked_before
        self.limits = {k: v for k, v in limits.items() if k in ("max_programs", "max_bytes")}
        self.trace_budget_s = limits.get("trace_budget_s")
        self.options = spec["options"]
        self.path = os.path.join(scratch, "kernel.py")
        self.result = {"status": "ok", "device": None, "error": None, "stdout": "",
                       "check": None, "timings": None, "trace": None, "ir": None, "notes": []}

    def status(self, phase, message):
        self.emit("status", {"phase": phase, "message": message})

    def execute(self):
        kind = choose_device(self.options["device"])
        self.result["device"] = device_info(kind)
        if kind == "gpu":
            self.run_gpu()
        else:
            self.run_interpreter()

    def prepare(self, interpret, device):
        module = load_module(self.spec["source"], self.path, interpret)
        kernel = find_kernel(module, self.spec["kernel"])
        namespace = self.namespace = expression_namespace(module)
        inputs, poisoned = build_inputs(self.spec, namespace, device)
        with torch.device(device):  # a tensor made in an argument expression goes where the inputs are
            args, scope = build_args(self.spec, kernel, {**namespace, **inputs})
        grid = build_grid(self.spec, args, scope)
        return kernel, inputs, poisoned, args, grid, scope

    def run_interpreter(self):
        self.status("compiling", "loading the kernel into Triton's interpreter")
        kernel, inputs, poisoned, args, grid, scope = self.prepare(True, "cpu")
        before = {name: t.clone() for name, t in inputs.items()}
        self.status("running", f"running {math.prod(grid)} program(s) in the interpreter")
        start = time.perf_counter()
        try:
            self.result["trace"] = traced_launch(kernel, grid, args, inputs, self.path, self.options, self.limits)
        except Exception as e:
            raise launch_error(e, self.path) from None
        launch_ms = (time.perf_counter() - start) * 1e3
        self.check(inputs, before, poisoned)
        self.timings_interpreter(kernel, launch_ms, before, scope)
        self.compile_ir(args)

    def run_gpu(self):
        self.status("compiling", "tracing on CPU copies, then compiling for the GPU")
        kernel, inputs, poisoned, args, grid, scope = self.prepare(False, "cuda")
        before = {name: t.clone() for name, t in inputs.items()}
        if self.options["trace"] or (self.options["sanitize"] and not self.checked_before):
            self.trace_on_cpu(inputs, grid)
        elif self.options["sanitize"]:
            self.result["notes"].append("Bounds check not repeated: this worker checked this exact launch (source, "
                                        "inputs, arguments, grid and seed) on an earlier run.")
        else:
            self.result["notes"].append("No trace and no bounds check (options.trace and options.sanitize are "
                                        "off): an out-of-bounds access faults on the GPU instead of being explained.")
        self.status("running", f"launching {math.prod(grid)} program(s) on the GPU")
        grids = GridPerConfig(self.spec, scope) if is_autotuned(kernel) else None
        start = time.perf_counter()
        try:
            launch(kernel, grids or grid, args, self.options)
            torch.cuda.synchronize()
        except Exception as e:
            raise launch_error(e, self.path, "compile" if "CompilationError" in type(e).__name__ else "launch") from None
        first_launch_ms = (time.perf_counter() - start) * 1e3
        self.check(inputs, before, poisoned)
        # The autotuner's choice is settled now: time it with the grid of the launch it made.
        self.timings_gpu(kernel, grids.last if grids else grid, args, before, first_launch_ms, scope)
        self.compile_ir(args)

    def trace_on_cpu(self, gpu_inputs, grid):
        """The bounds check and the trace, from the interpreter over CPU copies of the same inputs.
        Silent: what the module and the kernel print is the GPU run's to show."""
        with silenced():
            self._trace_on_cpu(gpu_inputs, grid)

    def _trace_on_cpu(self, gpu_inputs, grid):
        path = os.path.join(self.scratch, "kernel_trace.py")
        module = load_module(self.spec["source"], path, True)
        kernel = find_kernel(module, self.spec["kernel"])
        inputs = {name: t.detach().cpu().clone() for name, t in gpu_inputs.items()}
        args, _ = build_args(self.spec, kernel, {**expression_namespace(module), **inputs})
        try:
            self.result["trace"] = traced_launch(kernel, grid, args, inputs, path, self.options, self.limits,
                                                 self.trace_budget_s)
            self.emit("checked", {})  # every access of this launch is in bounds: the worker remembers it
        except TraceBudgetExceeded as e:
            self.result["notes"].append(e.message)  # a launch too big to trace still runs and is timed
        except Exception as e:
            raise launch_error(e, path) from None

    def check(self, inputs, before, poisoned):
        if not (self.options["check"] and self.spec["reference"]):
            return
        self.status("checking", "comparing outputs with the reference")
        expected = self.references(before)
        self.result["check"] = checking.compare(
            {name: inputs[name] for name in expected}, expected, poisoned,
            atol=self.options["atol"], rtol=self.options["rtol"])
        if not self.result["check"]["ok"]:
            self.result["status"] = "mismatch"

    def references(self, before):
        namespace = {**self.namespace, **{k: v.clone() for k, v in before.items()}}
        expected = {}
        for name, expr in self.spec["reference"].items():
            try:
                value = eval(expr, namespace)
            except Exception as e:
                raise RunError("check", f"reference for '{name}' = {expr!r} failed: {type(e).__name__}: {e}", type=type(e).__name__) from None
            expected[name] = torch.as_tensor(value)
        return expected

    def timings_interpreter(self, kernel, launch_ms, before, scope):
        """The interpreter's wall clock, labelled as such: no bandwidth or TFLOP/s claims, only counts."""
        if not self.options["bench"]:
            return
        moved, source = bytes_moved(self.result["trace"], before)
        timings = {"compile_ms": None, "kernel_ms": bench.summarize([launch_ms]),
                   "reference_ms": self.reference_time(bench.time_cpu, before),
                   "interpreter": True, "speedup": None, "bytes": moved, "bytes_source": source,
                   "gbps": None, "peak_gbps": None,
                   "flops": self.flop_count(scope), "tflops": None, "peak_tflops": None, "peak_tflops_kind": None,
                   "autotune": None, "notes": []}
        if autotuner := autotuner_of(kernel):
            timings["autotune"] = autotune_table(autotuner, {}, autotuner.configs[0])
            timings["notes"].append("Triton's interpreter does not time autotune configs: "
                                    "this run used the first config.")
        self.result["timings"] = timings

    def reference_time(self, timer, before):
        if not self.spec["reference"]:
            return None
        namespace = {**self.namespace, **before}
        exprs = list(self.spec["reference"].values())
        return timer(lambda: [eval(e, namespace) for e in exprs])

    def timings_gpu(self, kernel, grid, args, before, first_launch_ms, scope):
        """Kernel and reference side by side (CUDA events, warmed up, L2 flushed), the first launch
        (compile) apart, bandwidth against the measured copy peak, TFLOP/s when options.flops is given."""
        if not self.options["bench"]:
            return
        self.status("bench", "timing the kernel and the reference")
        kernel_ms = bench.time_gpu(lambda: launch(kernel, grid, args, self.options))
        reference_ms = self.reference_time(bench.time_gpu, before)
        moved, source = bytes_moved(self.result["trace"], before)
        flops = self.flop_count(scope)
        peak_tflops, peak_kind = bench.peak_tflops(torch.cuda.get_device_name(), before.values())
        timings = {
            "compile_ms": first_launch_ms, "kernel_ms": kernel_ms, "reference_ms": reference_ms,
            "interpreter": False,
            "speedup": reference_ms["median"] / kernel_ms["median"] if reference_ms else None,
            "bytes": moved, "bytes_source": source,
            "gbps": bench.bandwidth(moved, kernel_ms["median"]), "peak_gbps": bench.peak_gbps(),
            "flops": flops, "tflops": bench.tflops(flops, kernel_ms["median"]),
            "peak_tflops": peak_tflops if flops else None, "peak_tflops_kind": peak_kind if flops else None,
            "autotune": None, "notes": []}
        if autotuner := autotuner_of(kernel):
            timings["autotune"] = autotune_table(autotuner, getattr(autotuner, "configs_timings", {}),
                                                 autotuner.best_config)
            timings["notes"].append(autotune_note(autotuner))
        if kernel_ms["median"] < LAUNCH_BOUND_MS:
            timings["notes"].append(
                f"At {kernel_ms['median'] * 1e3:.1f} µs a launch is mostly fixed cost (a few µs on any GPU), "
                f"not memory traffic: give it more work (bigger inputs) to measure its bandwidth.")
        self.result["timings"] = timings

    def flop_count(self, scope):
        """options.flops: a number, or an expression over inputs and arguments such as "2 * M * N * K"."""
        expr = self.options["flops"]
        if expr is None or expr == "":
            return None
        value = evaluate(expr, dict(scope), "options.flops") if isinstance(expr, str) else expr
        if isinstance(value, torch.Tensor) and value.numel() == 1:
            value = value.item()
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not value > 0:
            raise RunError("build", f"options.flops = {expr!r} gave {value!r}: it must be a positive number of "
                                    f"floating-point operations, e.g. \"2 * M * N * K\" for a matmul")
        return value

    def compile_ir(self, args):
        if not self.options["ir"]:
            return
        self.status("ir", "compiling to TTIR, TTGIR, LLIR, PTX and SASS")
        try:
            self.result["ir"] = compile_ir(self.path, self.spec["kernel"], args, num_warps=self.options["num_warps"],
                                           num_stages=self.options["num_stages"], arch=self.options["arch"])
        except RunError as e:
            # A kernel that ran but does not compile for the target is worth seeing, not a failed run.
            self.result["ir"] = {"error": e.to_dict()}


def autotune_table(autotuner, timings, chosen):
    """[{"config": {meta-parameters, num_warps, num_stages}, "ms", "chosen"}] for every config.
    `timings` is the autotuner's configs_timings (do_bench's [median, p20, p80] per config); a config
    it did not time, or one that failed to compile or run (inf), has ms None."""
    table = []
    for config in autotuner.configs:
        ms = timings.get(config)
        ms = ms[0] if isinstance(ms, (list, tuple)) else ms
        table.append({"config": {**config.kwargs, "num_warps": config.num_warps, "num_stages": config.num_stages},
                      "ms": ms if ms is not None and math.isfinite(ms) else None,
                      "chosen": config == chosen})
    return table


def autotune_note(autotuner):
    if len(autotuner.configs) == 1:
        return "One autotune config: the autotuner ran it without timing it."
    return ("The autotuner timed each config (median ms) and launched the fastest; the first launch's time "
            "includes compiling and timing them all. The trace comes from the interpreter, which runs the first config.")


def bytes_moved(trace, tensors):
    """Unique elements loaded plus stored, times their size, from a complete trace (every program,
    every access); else the sizes of all the tensors."""
    if trace and not trace.get("sampled") and not any(p.get("truncated") for p in trace["programs"]):
        return unique_bytes(trace), "trace"
    return sum(t.numel() * t.element_size() for t in tensors.values()), "tensors"


def run_spec(raw_spec, emit=None, scratch=None, limits=None, checked_before=False):
    """Run one spec to completion and return the result dict; never raises for user errors.
    `checked_before`: the same launch passed the bounds check on an earlier run (GPU: skip the CPU pass
    when no trace is asked for). `emit("checked", {})` reports a launch that passed it."""
    emit = emit or (lambda type, content: None)
    try:
        spec = normalize(raw_spec)
    except SpecError as e:
        return RunError("parse", str(e), type="SpecError").result()
    with contextlib.ExitStack() as stack:
        if scratch is None:
            scratch = stack.enter_context(tempfile.TemporaryDirectory(prefix="run-"))
        run = Run(spec, emit, scratch, limits or {}, checked_before)
        try:
            run.execute()
        except RunError as e:
            run.result["status"], run.result["error"] = "error", e.to_dict()
        except Exception as e:  # a bug of ours or an exotic user error: still a clear result
            kind, message = describe(e)
            run.result["status"] = "error"
            run.result["error"] = {"phase": "sandbox", "type": kind, "message": message,
                                   "line": user_line(e, run.path), "pid": None}
        return run.result
