"""The run pipeline: one run spec in, one result out (sandbox.result), inside a run process.

Stages in order: parse → build (sandbox.launch.build: inputs, arguments, grid) → launch (traced and
bounds-checked in the interpreter by sandbox.trace; on a GPU after the GPU tracer's check, or a traced
pass over CPU copies) → check (sandbox.run.check) → bench (sandbox.run.bench) → ir (sandbox.launch.ir),
the launch's steps those of the launch pass every run shares (sandbox.run.launch_pass). Each stage
raises RunError naming its phase; `run_spec` turns that into the result's `error`.
"""
import contextlib
import hashlib
import json
import math
import os
import tempfile
import time

import torch
import triton

from sandbox import gpus
from sandbox import result as results
from sandbox.errors import RunError, error_chain
from sandbox.launch import build, host_driver, launcher
from sandbox.run import bench, replay as replays, script, sweep
from sandbox.run import check as checking
from sandbox.launch.ir import compile_ir, disassemble_early, ir_of_compiled
from sandbox.launch.launcher import Background, compile_configs_at_once, compile_launch, compiled_config, ready_to_launch
from sandbox.launch.kernel import as_run_error, find_kernel, launch_error, load_module, silenced, write_source
from sandbox.launch.warned import Warned
from sandbox.spec import SCRIPT_NOT_AHEAD, SpecError, is_script, normalize
from sandbox.run.launch_pass import Launch, LaunchPass, traced_launch
from sandbox.trace import gpu as gpu_trace, stepper
from sandbox.timeline.run import NO_GPU, timeline, timeline_or_note
from sandbox.trace.interpreter import TraceBudgetExceeded

CPU_FIRST_BUDGET_S = 0.25  # a small launch's interpreter pass, past which the GPU tracer takes over
# a status phase -> the phase of an error raised during it
ERROR_PHASE = {"compiling": "build", "running": "launch", "checking": "check", "bench": "bench", "ir": "ir"}


def device_info(kind):
    name = torch.cuda.get_device_name() if kind == "gpu" else "Triton interpreter (CPU)"
    return {"kind": kind, "name": name, "index": gpu_index() if kind == "gpu" else None,
            "triton": triton.__version__, "torch": torch.__version__.split("+")[0]}


def gpu_index():
    """The host's index of the GPU this run uses (nvidia-smi's), or None. A run sees only its worker's GPU,
    as its device 0, named in CUDA_VISIBLE_DEVICES by its index or (in a jail) its UUID (sandbox.gpus)."""
    visible = os.environ.get("CUDA_VISIBLE_DEVICES")
    if visible is None:
        return torch.cuda.current_device()
    first = visible.split(",")[0].strip()
    if first.isdigit():
        return int(first)
    gpu = gpus.find(gpus.host_gpus(), first)
    return gpu.index if gpu is not None else None  # a MIG instance, or no driver entries: no index to give


def choose_device(requested):
    if requested == "gpu" and not torch.cuda.is_available():
        raise RunError("build", "options.device is 'gpu' but this server has no GPU: use 'auto' or 'interpreter'",
                       field="options.device")
    if requested == "interpreter" or not torch.cuda.is_available():
        return "interpreter"
    return "gpu"


def reference_key(exprs, inputs, device, timer):
    """What a reference's time depends on: its expressions, the inputs' shapes and dtypes, the
    device and how it was timed; a digest (what the worker keeps is no user text)."""
    facts = [exprs, {name: [list(t.shape), str(t.dtype)] for name, t in inputs.items()},
             device and [device["kind"], device["name"]], timer]
    return hashlib.sha256(json.dumps(facts, sort_keys=True, default=str).encode()).hexdigest()


class Run(LaunchPass):
    """One run of one spec, its one launch made by the launch pass (sandbox.run.launch_pass);
    `emit(type, content)` streams status to the worker."""

    def __init__(self, spec, emit, scratch, limits, sanitized_before=False, reference_times=None, given_inputs=None,
                 compiled_ahead=False, given_run=None, given_config=None):
        super().__init__(os.path.join(scratch, "kernel.py"), spec["options"], limits)
        self.compiled_ahead = compiled_ahead
        self.cpu_first_programs = limits.get("trace_on_cpu_first", 0)
        self.spec, self.emit, self.scratch = spec, emit, scratch
        self.given_inputs = given_inputs  # a script's launch replayed (sandbox.run.replay): its inputs as it had them
        self.given_run = given_run  # and as the program ran it (replay.Ran): not launched again, or on a GPU not traced
        self.given_config = given_config  # and on a GPU, the autotuner's config it ran (Kernel.keep_to)
        self.compiled = None  # on a GPU, the CompiledKernel of the config that runs, once known: its IR
        self.reference_times = reference_times or {}  # reference_key -> its timing, measured on this device before
        self.reference_note = None
        self.sanitized_before = sanitized_before
        self.trace_budget_s = limits.get("trace_budget_s")
        self.result = results.new()
        self.notes = self.result["notes"]
        self.phase, self.doing = "build", "preparing the run"

    def status(self, phase, message):
        # the phase of an error no stage caught, and what a bug report says the playground was doing
        self.phase, self.doing = ERROR_PHASE.get(phase, "sandbox"), message
        self.emit("status", {"phase": phase, "message": message})

    def timings_ready(self):
        """The timings are complete: with the reference's note where its time was kept, sent."""
        if self.reference_note:
            self.result["timings"]["notes"].append(self.reference_note)
        self.ready("timings")

    def ready(self, part):
        """Send the result's section `part` as soon as it is final (sandbox.result.PARTS): the page
        shows the verdict and the diagram while the timings and the IR are still being made."""
        if self.result[part] is not None:
            self.emit("partial", {"part": part, "content": self.result[part]})

    def execute(self):
        kind = choose_device(self.options["device"])
        self.result["device"] = device_info(kind)
        write_source(self.spec["source"], self.path)
        try:
            if kind == "gpu":
                self.run_gpu()
            else:
                self.run_interpreter()
        finally:
            pretended = host_driver.note()  # the module asked Triton's driver on a host without a GPU
            if pretended:
                self.result["notes"].append(pretended)

    def prepare(self, interpret, device):
        self.torch_device = device  # where the inputs are made, and the reference's tensors
        kernel, self.namespace, inputs, poisoned, args, grid, scope = build.prepare(
            self.spec, self.path, interpret, device, self.given_inputs, self.given_config)
        return kernel, inputs, poisoned, args, grid, scope

    def run_interpreter(self):
        self.status("compiling", "loading the kernel into Triton's interpreter")
        kernel, inputs, poisoned, args, grid, scope = self.prepare(True, "cpu")
        before = {name: t.clone() for name, t in inputs.items()}
        running = self.given_run.doing if self.given_run else f"running {math.prod(grid)} program(s) in the interpreter"
        self.status("running", running)
        start = time.perf_counter()
        try:  # a script's launch as its program ran it (given_run) is not launched again
            self.result["trace"] = self.given_run.launched(kernel) if self.given_run else traced_launch(
                kernel, grid, args, inputs, self.path, self.options, self.limits)
        except Exception as e:
            raise launch_error(e, self.path) from None
        launch_ms = self.given_run.ms if self.given_run else (time.perf_counter() - start) * 1e3
        self.ready("trace")
        self.check(inputs, before, poisoned)
        if self.options["bench"]:
            self.result["timings"] = bench.interpreter_timings(
                launch_ms, self.reference_time(bench.time_cpu, before), bench.bytes_moved(self.result["trace"], before),
                build.flop_count(self.options["flops"], scope), kernel.autotuner)
            self.timings_ready()
        if self.options["timeline"]:
            self.notes.append(NO_GPU)
        self.compile_ir(kernel, args)

    def run_gpu(self):
        self.status("compiling", "tracing on CPU copies, then compiling for the GPU")
        kernel, inputs, poisoned, args, grid, scope = self.prepare(False, "cuda")
        before = {name: t.clone() for name, t in inputs.items()}
        grids = build.GridPerConfig(self.spec, scope) if kernel.autotuner else None
        if self.options["trace"] or (self.options["sanitize"] and not self.sanitized_before):
            self.trace_pass(kernel, inputs, grid, lambda: self.compile_real(kernel, grids or grid, args))
            self.ready("trace")
        elif self.options["sanitize"]:
            self.result["notes"].append("Bounds check not repeated: this exact launch (source, inputs, arguments, "
                                        "grid and seed) passed it on this server before, in an earlier run or in "
                                        "the server's own warm-up of the gallery.")
        else:
            self.result["notes"].append("No trace and no bounds check (options.trace and options.sanitize are "
                                        "off): an out-of-bounds access faults on the GPU instead of being explained.")
        self.status("running", f"launching {math.prod(grid)} program(s) on the GPU")
        start = time.perf_counter()
        if grids and len(kernel.autotuner.configs) > 1:
            self.status("compiling", f"compiling the autotuner's {len(kernel.autotuner.configs)} configs at once")
            with contextlib.suppress(Exception):  # an optimisation only: the launch compiles what is missing
                compile_configs_at_once(kernel, grids, args)
        try:
            launcher.launch(kernel, grids or grid, args, self.options)
            torch.cuda.synchronize()
        except Exception as e:
            raise self.launch_failed(e) from None
        if grids:
            self.disassemble_choice(kernel, grids.last, args)
            self.notes += filter(None, [launcher.left_out_note(kernel)])
        # The compile done beside the trace pass, and the first launch (what of the compile was left).
        first_launch_ms = self.compiled_beside_ms + (time.perf_counter() - start) * 1e3
        self.check(inputs, before, poisoned)
        if self.options["bench"]:
            # The autotuner's choice is settled now: time it with the grid of the launch it made.
            self.status("bench", "timing the kernel and the reference")
            timed_grid = grids.last if grids else grid
            self.result["timings"] = bench.gpu_timings(
                bench.time_gpu(lambda: launcher.launch(kernel, timed_grid, args, self.options)),
                self.reference_time(bench.time_gpu, before), first_launch_ms,
                bench.bytes_moved(self.result["trace"], before), build.flop_count(self.options["flops"], scope),
                before.values(), kernel.autotuner, bench.untimed_note(kernel), kernel.left_out + kernel.untimed)
            self.timings_ready()
        if self.options["timeline"]:
            self.record_timeline(kernel, grids.last if grids else grid, args)
        self.compile_ir(kernel, args)

    def record_timeline(self, kernel, grid, args):
        """The timeline part (sandbox.timeline), from one more launch under Proton's instrumentation;
        one that cannot be made leaves a note and the rest of the run as it was."""
        self.status("bench", "recording a timeline of the kernel with Proton's instrumentation")
        config = kernel.config(kernel.chosen(), self.options["num_warps"], self.options["num_stages"])
        kernel_ms = ((self.result["timings"] or {}).get("kernel_ms") or {}).get("median")
        self.result["timeline"] = timeline_or_note(
            self.notes, lambda: timeline(self.spec, self.scratch, config, grid, args, kernel_ms))
        self.ready("timeline")

    def compile_ahead(self):
        """Compile what a run of this spec compiles, launching nothing: on a GPU the kernel (an autotuned one's every
        config) and its instrumented build (none where a script's trace was kept) at once, then the IR (an
        autotuner's: of its first config); in the interpreter, where a launch compiles nothing, the IR (for sm90).
        A compile error is the result's error."""
        kind = choose_device(self.options["device"])
        self.result["device"] = device_info(kind)
        write_source(self.spec["source"], self.path)
        self.status("compiling", "compiling ahead of a run")
        gpu = kind == "gpu"
        kernel, inputs, _, args, grid, scope = self.prepare(not gpu, "cuda" if gpu else "cpu")
        if gpu:
            grids = build.GridPerConfig(self.spec, scope) if kernel.autotuner else None
            compiling = Background(lambda: self.compile_real(kernel, grids or grid, args))
            if (self.options["trace"] or self.options["sanitize"]) and self.given_run is None:
                tracer, tracer_args = gpu_trace.prepare(self.spec, self.path, kernel, inputs, self.namespace)
                if self.unseen_by_gpu(tracer) is None:
                    with contextlib.suppress(Exception):  # the run falls back to the interpreter and says why
                        gpu_trace.compile_instrumented(tracer, tracer.load(self.scratch), grid, tracer_args,
                                                       self.trace_config(kernel), self.options, self.limits)
            error = compiling.wait()
        self.compile_ir(kernel, args)  # a compile error raised here names its line (sandbox.launch.ir.compile_error)
        failed = (self.result["ir"] or {}).get("error")
        if failed:
            self.result["ir"] = None
            raise RunError(**{k: v for k, v in failed.items() if k in ("phase", "message", "type", "hint", "line")})
        if gpu and error is not None:
            raise launch_error(error, self.path, "compile")

    def compile_real(self, kernel, grid, args):
        """The real launch's compile, launching nothing; the IR's disassembly of what it made starts at
        once (it takes ~0.5 s, and runs beside the rest of the run), and its launcher is built."""
        compiled = self.compiled = compile_launch(kernel, grid, args, self.options)
        if self.ir_of_launch:
            disassemble_early(compiled)
        ready_to_launch(compiled)

    def disassemble_choice(self, kernel, grid, args):
        """The disassembly of an autotuned kernel's chosen config starts as soon as it is chosen, beside
        the check and the timing (as compile_real starts a kernel's)."""
        if self.ir_of_launch:
            with contextlib.suppress(Exception):  # an optimisation only: the IR step compiles what is missing
                self.compiled = compiled_config(kernel, grid, args, kernel.autotuner.best_config)
                disassemble_early(self.compiled)

    def trace_pass(self, kernel, inputs, grid, compile_real):
        """The trace and bounds check before the real launch: by the interpreter first where the launch
        is small (traced_on_cpu_first), else by the launch pass: from an instrumented
        launch on the GPU (sandbox.trace.gpu), with `compile_real()` (the real launch's compile) on a
        thread beside its compile; or from the interpreter on CPU copies where instrumentation cannot
        see every access (unseen_on_gpu). Either raises the out-of-bounds error, the real launch never
        happening."""
        if self.traced_by_its_program(kernel, compile_real) or self.traced_on_cpu_first(kernel, inputs, grid,
                                                                                        compile_real):
            return
        tracer, args = gpu_trace.prepare(self.spec, self.path, kernel, inputs, self.namespace)
        trace, checked = self.sanitize_on_gpu(tracer, lambda: gpu_trace.gpu_trace(
            tracer, tracer.load(self.scratch), grid, args, self.trace_config(kernel), self.options, self.limits),
            Launch(kernel, args, inputs, grid), compile_real)
        if checked:
            self.result["trace"] = trace
            self.emit("sanitized", {})

    def traced_by_its_program(self, kernel, compile_real):
        """A script's launch replayed with its trace as its program's run made it (replay.Ran), of the config
        that ran: no tracer pass, only the real compile (most often found compiled). True if so."""
        if self.given_run is None or (kernel.autotuner is not None and len(kernel.autotuner.configs) > 1):
            return False
        start = time.perf_counter()
        compile_real()
        self.compiled_beside_ms = (time.perf_counter() - start) * 1e3
        self.result["trace"] = self.given_run.trace
        return True

    def traced_on_cpu_first(self, kernel, gpu_inputs, grid, compile_real):
        """Trace and bounds-check a small launch (TRACE_ON_CPU_FIRST programs at most) by the interpreter
        on CPU copies, after its real compile (~0.1 s each for a small kernel, where the GPU tracer's
        instrumented build takes ~0.5 s to compile after an edit). One after the other: the interpreter
        patches triton.language while it runs, which a compile beside it would see. True if so; False
        where the launch is not small, its instrumented build is likely at hand (compiled ahead, or the
        GPU tracer checked this exact launch before), the kernel is autotuned over several configs
        (compiled beside the GPU tracer's build instead) unless it is a script's launch replayed (its
        program's run compiled them), or the compile or the interpreter fails or takes over
        CPU_FIRST_BUDGET_S: the GPU tracer then, which says why as ever. An access out of bounds is the run's error."""
        if self.compiled_ahead or self.sanitized_before or not 0 < math.prod(grid) <= self.cpu_first_programs:
            return False
        if kernel.autotuner is not None and len(kernel.autotuner.configs) > 1 and self.given_inputs is None:
            return False
        start = time.perf_counter()
        try:
            compile_real()
            self.compiled_beside_ms = (time.perf_counter() - start) * 1e3
            with silenced():
                trace = self.interpreter_pass(gpu_inputs, grid, CPU_FIRST_BUDGET_S)
        except RunError as e:
            if e.type in ("OutOfBounds", "DeviceAssert"):
                raise
            return False
        except Exception:
            return False
        self.result["trace"] = trace
        self.notes.append("Bounds-checked (and traced, where asked) by Triton's interpreter on CPU copies of the "
                          "inputs: a launch this small is checked there sooner than the GPU tracer's build of it compiles.")
        if not self.options["trace"]:
            # Reported only where no trace is asked for (a rerun then skips the check): with a trace, a
            # launch checked before goes to the GPU tracer, whose build an interpreter pass never made.
            self.emit("sanitized", {})
        return True

    def interpreter_pass(self, gpu_inputs, grid, budget_s):
        """The trace (or None) of the launch in the interpreter over CPU copies of `gpu_inputs`; raises
        its RunError (out of bounds, or TraceBudgetExceeded past `budget_s`), or the interpreter's failure."""
        module = load_module(self.path, True)
        kernel = find_kernel(module, self.spec["kernel"])
        inputs = {name: t.detach().cpu().clone() for name, t in gpu_inputs.items()}
        args, _ = build.build_args(self.spec, kernel, {**build.expression_namespace(module), **inputs})
        return traced_launch(kernel, grid, args, inputs, self.path, self.options, self.limits, budget_s)

    def unseen_on_gpu(self, why, launch):
        """A form run's launch the GPU tracer cannot check is traced by the interpreter on CPU copies."""
        self.notes.append(f"Traced by Triton's interpreter on CPU copies of the inputs: {why}.")
        self.trace_on_cpu(launch.tensors, launch.grid)

    def trace_config(self, kernel):
        return kernel.config(None, self.options["num_warps"], self.options["num_stages"])

    def trace_on_cpu(self, gpu_inputs, grid):
        """The bounds check and the trace, from the interpreter over CPU copies of the same inputs.
        Silent: what the module and the kernel print is the GPU run's to show."""
        with silenced():
            self._trace_on_cpu(gpu_inputs, grid)

    def _trace_on_cpu(self, gpu_inputs, grid):
        try:
            self.result["trace"] = self.interpreter_pass(gpu_inputs, grid, self.trace_budget_s)
            self.emit("sanitized", {})  # every access of this launch is in bounds: the worker remembers it
        except TraceBudgetExceeded as e:
            self.result["notes"].append(e.message)  # a launch too big to trace still runs and is timed
        except Exception as e:
            lacking = interpreter_lacks(e)
            if lacking is None:
                raise launch_error(e, self.path) from None
            # Neither tracer can follow it (inline assembly, say): the GPU runs it unchecked, and says so.
            self.result["notes"].append(f"Not bounds-checked, nor traced: Triton's interpreter cannot run this "
                                        f"kernel ({lacking}).")

    def check(self, inputs, before, poisoned):
        if not (self.options["check"] and self.spec["reference"]):
            return
        self.status("checking", "comparing outputs with the reference")
        expected = self.references(before)
        self.result["check"] = checking.compare({name: inputs[name] for name in expected}, expected, poisoned,
            atol=self.options["atol"], rtol=self.options["rtol"])
        if not self.result["check"]["ok"]:
            self.result["status"] = "mismatch"
        self.ready("check")

    def references(self, before):
        namespace = {**self.namespace, **{k: v.clone() for k, v in before.items()}}
        return build.references(self.spec["reference"], namespace, self.torch_device)

    def reference_time(self, timer, before):
        """The reference's timing: measured, and reported to the worker (`timed`), or the one this
        worker measured for the same expressions over inputs of the same shapes and dtypes on the
        same device (a PyTorch reference's time depends on nothing else), said in the notes."""
        if not self.spec["reference"]:
            return None
        exprs = list(self.spec["reference"].values())
        key = reference_key(exprs, before, self.result["device"], timer.__name__)
        kept = self.reference_times.get(key)
        if kept is not None:
            self.reference_note = ("The reference's time was measured in an earlier run of the same reference over "
                                   "inputs of the same shapes and dtypes on this device (yours, or this server's "
                                   "warm-up of the example as shipped), and not again.")
            return kept
        namespace = {**self.namespace, **before}
        with torch.device(self.torch_device):
            measured = timer(lambda: [eval(e, namespace) for e in exprs])
        self.emit("timed", {"key": key, "reference_ms": measured})
        return measured

    def compile_ir(self, kernel, args):
        """The IR of the config that ran: the autotuner's choice (ahead of it, its first), else the spec's."""
        if not self.options["ir"]:
            return
        self.status("ir", "compiling to TTIR, TTGIR, LLIR, PTX and SASS")
        if self.ir_of_launch and self.compiled is not None:
            self.result["ir"] = self.ir_of(lambda: ir_of_compiled(self.compiled, self.path))
        else:
            config = kernel.config(kernel.chosen(), self.options["num_warps"], self.options["num_stages"])
            self.result["ir"] = self.ir_of(lambda: compile_ir(
                self.path, self.spec["kernel"], {**args, **config.kwargs}, num_warps=config.num_warps,
                num_stages=config.num_stages, arch=self.options["arch"]), self.notes if kernel.interpreted else None)
        self.ready("ir")


# What only the spec's own launch reports: a sweep's configuration keeps it to itself.
SPEC_LAUNCH_ONLY = ("sanitized", "partial")


def compile_spec(raw_spec, emit=None, scratch=None, limits=None, replay=None):
    """Compile one spec ahead of its run (Run.compile_ahead); the result says ok, or the error that
    a run would meet compiling, and has no parts. Never raises for user errors. A script's program
    is never run to compile it: its launches kept from a run that listed them (`replay`:
    {"launches": [records]}) are replayed ahead instead (replay.replay_ahead), each as its selection would."""
    emit = emit or (lambda type, content: None)
    try:
        spec = normalize(raw_spec)
        if is_script(spec) and replay is None:  # compiling it would run the program
            raise SpecError(SCRIPT_NOT_AHEAD, "mode")
    except SpecError as e:
        return results.failed(RunError("parse", str(e), type="SpecError", field=e.field))
    status_only = lambda type, content: type == "status" and emit(type, content)  # noqa: E731
    with contextlib.ExitStack() as stack:
        if scratch is None:
            scratch = stack.enter_context(tempfile.TemporaryDirectory(prefix="compile-"))
        if replay is not None:
            try:
                device = device_info(choose_device(spec["options"]["device"]))
            except RunError as e:
                return results.failed(e)
            return replays.replay_ahead(spec, replay["launches"], status_only, scratch, limits or {}, device, Run,
                                        lambda index, **made: emit("shown", {"launch": index, **made}))
        run = Run(spec, status_only, scratch, limits or {})
        try:
            run.compile_ahead()
        except Exception as e:
            results.fail(run.result, as_run_error(e, run.path, run.phase, run.doing))
        return run.result


COMPILED_AHEAD = ("Compiled ahead while you typed: the server compiled this source and launch before you pressed "
                  "Run, and this run found what it needs built.")


def run_spec(raw_spec, emit=None, scratch=None, limits=None, sanitized_before=False, compiled_ahead=False,
             reference_times=None, replay=None):
    """Run one spec to completion and return the result dict; never raises for user errors.
    `sanitized_before`: the same launch passed the bounds check on an earlier run (GPU: skip the CPU pass
    when no trace is asked for). `emit("sanitized", {})` reports a launch that passed it.
    `compiled_ahead`: a compile-ahead of this spec (compile_spec) finished into the kernels it was lent.
    `reference_times`: the reference timings its worker kept for the owner (sandbox.protocol.Job).
    `replay`: {"launch": a record} of a script's launch to replay alone (sandbox.run.replay)."""
    emit = emit or (lambda type, content: None)
    try:
        spec = normalize(raw_spec)
    except SpecError as e:
        return results.failed(RunError("parse", str(e), type="SpecError", field=e.field))
    if spec["options"]["sweep"]:
        # The spec's own launch reports "sanitized" and sends its parts as usual (the sweep's result is
        # its result, with `sweep` added); a configuration's launch is not the spec's.
        config_emit = lambda type, content: type in SPEC_LAUNCH_ONLY or emit(type, content)  # noqa: E731
        return sweep.sweep(spec, lambda one: run_spec(one, emit, scratch, limits, sanitized_before),
                           lambda one: run_spec(one, config_emit, scratch, limits))
    if spec["options"]["step_pid"] is not None:
        return stepper.stepped(spec, scratch, device_info("interpreter"))  # one program, line by line
    with contextlib.ExitStack() as stack:
        if scratch is None:
            scratch = stack.enter_context(tempfile.TemporaryDirectory(prefix="run-"))
        if is_script(spec):
            try:
                kind = choose_device(spec["options"]["device"])
            except RunError as e:
                return results.failed(e)
            if replay is not None:
                return replays.replay(spec, replay["launch"], emit, scratch, limits or {}, device_info(kind), Run)
            return script.run_script(spec, emit, scratch, limits or {}, device_info(kind))
        run = Run(spec, emit, scratch, limits or {}, sanitized_before, reference_times, compiled_ahead=compiled_ahead)
        if compiled_ahead:
            run.result["notes"].append(COMPILED_AHEAD)
        warned = Warned(run.path)
        try:
            with warned.catching():
                run.execute()
        except Exception as e:
            results.fail(run.result, as_run_error(e, run.path, run.phase, run.doing))
        return warned.into(run.result)


def interpreter_lacks(exc):
    """What Triton's interpreter says it cannot run (its NotImplementedError, which it may wrap in an
    InterpreterError), anywhere in `exc`'s chain; None if that is not why `exc` was raised."""
    return next((str(e) for e in error_chain(exc) if isinstance(e, NotImplementedError) and "interpreter" in str(e)),
                None)
