"""Script mode on a GPU: the program runs as written, its kernels compiled, and every launch is
bounds-checked on the GPU before it touches memory.

Triton's launch path is hooked where every launch passes (`JITFunction.run`, under
`@triton.autotune` and `@triton.heuristics`). Each launch first runs as the GPU tracer's
instrumented build (sandbox.trace.gpu) over copies of its tensors: an out-of-bounds access
stops the program there, named (launch, program, tensor, line) and drawn, and the real launch
never happens. Only a launch found clean runs, on the program's own tensors (its compile done on a
thread beside the check's). Every launch listed is checked by the build that traces, and the
first ones whose inputs are kept for a replay (sandbox.run.replay) are traced, each trace kept
beside its inputs: a click on the launch replays it without the tracer's pass. An autotuner's
trial of a config, never listed, is checked by the light build that only checks (quicker to
compile), the configs' builds compiled ahead of the trials. The launch that is
shown has its trace from that check, its timings from do_bench's way of timing (sandbox.run.bench)
replaying it with its inputs restored before each repetition, its timeline where asked
(options.timeline: one more launch under Proton's instrumentation, sandbox.timeline), and its IR.

Launches that repeat one already checked run unchecked: the repetitions of a function that
`triton.testing.do_bench` times (its first call is checked), and the autotuner's timing of a config
(each config's first launch is checked).
"""
import contextlib
import os
import time
from concurrent.futures import ThreadPoolExecutor

import torch
import triton
from triton.runtime.autotuner import Autotuner, Config
from triton.runtime.jit import JITFunction

from sandbox.errors import RunError
from sandbox.run import bench
from sandbox.launch.ir import disassemble_early, ir_of_compiled
from sandbox.launch.kernel import Kernel, described
from sandbox.launch.launcher import COMPILE_THREADS
from sandbox.launch_form import definitions
from sandbox.run.capture import Capture, Kept, LaunchFailed, Warmed
from sandbox.run.launch_pass import Launch
from sandbox.run.launch_record import bind, resolve_grid
from sandbox.timeline.run import timeline, timeline_or_note
from sandbox.trace import gpu as gpu_trace


class GpuCapture(Capture):
    """The program's launches on the GPU; see the module's docstring."""
    where = "on the GPU"
    clock = "do_bench's on the GPU"

    def __init__(self, options, path, limits, scratch, emit):
        super().__init__(options, path, limits, emit)
        self.scratch = scratch
        self.instrumented = {}  # instrumented source -> its kernel, compiled once
        self.passing = 0        # > 0: launches run as they are (the tracer's own, do_bench's repetitions)
        self.trial = None       # the autotuner config being timed: [config, whether its launch was checked]
        self.tuner_runs = []    # a TunerRun per autotuner run under way (innermost last)
        self.last_from_cache = {}  # id(autotuner) -> TunerRun.from_cache of its last choice not in its memory
        self.unchecked = set()  # kernels whose launches the GPU tracer cannot check
        self.compiler = None    # the threads that compile an autotuner's configs ahead of its trials

    @contextlib.contextmanager
    def environment(self):
        """The launch path hooked, and Triton's autotuning cache on: an autotuner keeps its choice for a
        key in the owner's kernel cache, so that running the program again (to show another launch)
        launches what the first run did, found compiled, without timing every config again."""
        caching = triton.knobs.autotuning.cache
        triton.knobs.autotuning.cache = True  # read by @triton.autotune as the program defines its kernels
        try:
            with self.hooked():
                yield
        finally:
            triton.knobs.autotuning.cache = caching
            if self.compiler is not None:  # builds no launch waited for: not worth the run's end
                self.compiler.shutdown(wait=False, cancel_futures=True)

    def timed_earlier(self):
        if not self.tuner_runs:
            return False
        if self.tuner_runs[-1].from_cache is None:  # a key it met before in this run: (most likely) chosen so again
            return self.last_from_cache.get(id(self.tuning[-1]), False)
        return self.tuner_runs[-1].from_cache

    @contextlib.contextmanager
    def passing_through(self):
        self.passing += 1
        try:
            yield
        finally:
            self.passing -= 1

    @contextlib.contextmanager
    def hooked(self):
        """Triton's launch path, the autotuner's timing of configs, do_bench and perf_report."""
        capture = self
        run, tune, bench_config, cached, do_bench, mark_run = (
            JITFunction.run, Autotuner.run, Autotuner._bench, Autotuner.check_disk_cache, triton.testing.do_bench,
            triton.testing.Mark.run)

        def launched(fn, *args, grid, warmup, **kwargs):
            again = lambda: run(fn, *args, grid=grid, warmup=False, **kwargs)  # noqa: E731
            if capture.passing:
                return run(fn, *args, grid=grid, warmup=warmup, **kwargs)
            if warmup:
                return GpuWarmed(run(fn, *args, grid=grid, warmup=True, **kwargs), fn, args, kwargs, capture.path,
                                 lambda grid, *args, **options: launched(fn, *args, grid=grid, warmup=False, **options))
            if capture.trial is not None:
                return capture.trial_launch(again, fn, args, kwargs, grid)
            return capture.launch(again, fn, args, kwargs, grid,
                                  compile_real=lambda: run(fn, *args, grid=grid, warmup=True, **kwargs))

        def tuned(autotuner, *args, **kwargs):
            capture.tuning.append(autotuner)
            capture.tuner_runs.append(TunerRun())
            try:
                return tune(autotuner, *args, **kwargs)
            finally:
                capture.tuning.pop()
                capture.tuner_runs.pop()

        def cached_choice(autotuner, *args, **kwargs):
            used = cached(autotuner, *args, **kwargs)
            capture.tuner_runs[-1].from_cache = capture.last_from_cache[id(autotuner)] = used
            return used

        def timing_config(autotuner, *args, config, **kwargs):
            if capture.tuner_runs and not capture.tuner_runs[-1].compiling:  # (an autotuner's own run under way)
                capture.tuner_runs[-1].compiling = True
                capture.compile_configs(autotuner, args, kwargs)
            capture.trial = [config, False]
            try:
                return bench_config(autotuner, *args, config=config, **kwargs)
            finally:
                capture.trial = None

        def checked_do_bench(fn, *args, **kwargs):
            fn()  # its launches captured and checked once; do_bench's repetitions of them are not
            with capture.passing_through():
                return do_bench(fn, *args, **kwargs)

        JITFunction.run, Autotuner.run, Autotuner._bench = launched, tuned, timing_config
        Autotuner.check_disk_cache = cached_choice
        triton.testing.do_bench, triton.testing.Mark.run = checked_do_bench, self.benchmarks.run
        try:
            yield
        finally:
            JITFunction.run, Autotuner.run, Autotuner._bench = run, tune, bench_config
            Autotuner.check_disk_cache = cached
            triton.testing.do_bench, triton.testing.Mark.run = do_bench, mark_run

    # -- one launch

    def launch(self, run, fn, args, kwargs, grid, compile_real=None):
        """Check, then run, one launch of the program; `compile_real()` compiles the real kernel (a thread
        does it beside the check's own compile, as a form run's trace pass does)."""
        index, kernel, arguments, grid, record, keep, autotuner = self.begin(fn, args, kwargs, grid)
        tensors = {name: value for name, value in arguments.items() if isinstance(value, torch.Tensor)}
        self.refuse_device(index, kernel, record, tensors, "cuda",
                           "the program runs on the GPU: make tensors on "
                           "triton.runtime.driver.active.get_active_torch_device() (here 'cuda')")
        config = Config({}, num_warps=record["num_warps"], num_stages=record["num_stages"])
        self.keep_inputs(index, tensors)
        # Traced where it is shown, and where its trace is kept for a replay of it (which then skips its tracer pass).
        kept_ran = self.inputs is not None and self.inputs.keeps_ran(index)
        traced = (keep or kept_ran) and self.options["trace"]
        try:  # a compile error of the real launch is the launch's to report, next
            checked, trace = self.check(kernel, arguments, tensors, grid, config, traced, compile_real=compile_real)
        except Exception as e:
            record["bounds"] = "out_of_bounds" if isinstance(e, RunError) and e.type == "OutOfBounds" else "failed"
            self.failed(e, index, record, kernel, arguments, tensors, grid, run)
            raise LaunchFailed() from None
        record["bounds"] = "ok" if checked else "unchecked"
        before = snapshot(tensors) if keep and (self.options["bench"] or self.options["timeline"]) else None
        start = time.perf_counter()
        try:
            value = run()
            torch.cuda.synchronize()
        except Exception as e:
            record["bounds"] = "failed" if record["bounds"] == "ok" else record["bounds"]
            self.failed(e, index, record, kernel, arguments, tensors, grid, run)
            raise LaunchFailed() from None
        ms = (time.perf_counter() - start) * 1e3
        record["ms"] = ms
        if kept_ran and trace is not None:
            self.inputs.keep_ran(index, trace, ms, self.options["trace_pid"])
        if keep:
            kept = self.kept[index] = Kept(fn, arguments, tensors, trace, ms, record["num_warps"],
                                           record["num_stages"], autotuner, grid)
            if before is not None:
                kept.replay = (run, lambda: restore(before))
            if self.ir_of_launch:
                with contextlib.suppress(Exception):  # its IR then compiles the kernel itself (Capture.shown_ir)
                    kept.compiled = compile_real()  # what ran, found compiled: launches nothing
            if trace is not None:  # the diagram need not wait for the rest of the program
                self.emit("partial", {"part": "trace", "content": trace})
                kept.sent = True
        return value

    def compile_configs(self, autotuner, args, meta):
        """Start compiling every config the autotuner is about to time, and its instrumented builds, in
        the order they are needed: the configs' own builds and their light checks, which the
        autotuner's trials wait for, then the builds that check and trace, which only a listed launch
        waits for (the chosen config's, or a later one's of another config); what is left of them when
        the program ends is dropped. A build that fails is left to the launch that meets it, to say why."""
        meta = {k: v for k, v in meta.items() if k != "warmup"}
        configs = autotuner.prune_configs(meta)
        jit = autotuner.fn if isinstance(autotuner.fn, JITFunction) else None  # under @heuristics: the real ones only
        with self.compiling_ahead(), self.passing_through():
            for config in configs:
                with contextlib.suppress(Exception):
                    autotuner.fn.warmup(*args, **{**meta, **config.all_kwargs()})
            if jit is None or not self.gpu_tracer_on:
                return
            copies = {}  # of the tensors, shared by every config's build
            builds = list(filter(None, (self.instrumented_build(jit, args, meta, config, copies) for config in configs)))
            for light in (True, False):
                for build in builds:
                    with contextlib.suppress(Exception):
                        gpu_trace.compile_instrumented(*build, {"trace": True}, self.limits, light=light)

    def instrumented_build(self, jit, args, meta, config, copies):
        """(tracer, instrumented kernel, grid, its arguments, launch config) of `config`'s launch over
        `copies` of its tensors (made once), as gpu_trace.compile_instrumented takes them; None where
        there is none."""
        with contextlib.suppress(Exception):
            kernel = Kernel(jit.__name__, jit, jit)
            current = {**meta, **config.all_kwargs()}
            arguments = bind(kernel, args, current)
            if not copies:
                copies.update(copies_of({name: value for name, value in arguments.items()
                                         if isinstance(value, torch.Tensor)}))
            launch_args = {**arguments, **copies}
            tracer = gpu_trace.InstrumentedTracer(self.path, kernel, launch_args, copies)
            if tracer.unsupported is None:
                return (tracer, self.instrumented_kernel(tracer, kernel), resolve_grid(meta["grid"], current | arguments),
                        launch_args, Config({}, num_warps=config.num_warps, num_stages=config.num_stages))
        return None

    @contextlib.contextmanager
    def compiling_ahead(self):
        """Triton's asynchronous compile mode on the run's compile threads (its passes and ptxas run
        outside the GIL), left without waiting: Triton keeps a build under way as its kernel, and a
        launch of it waits for that build alone."""
        from triton.runtime._async_compile import AsyncCompileMode, active_mode
        if self.compiler is None:
            self.compiler = ThreadPoolExecutor(max_workers=min(os.cpu_count() or 1, COMPILE_THREADS),
                                               thread_name_prefix="compile")
        token = active_mode.set(AsyncCompileMode(self.compiler, ignore_errors=True))
        try:
            yield
        finally:
            active_mode.reset(token)

    def trial_launch(self, run, fn, args, kwargs, grid):
        """A launch of the autotuner timing a config: the config's first is bounds-checked, not listed."""
        config, checked = self.trial
        if not checked:
            self.trial[1] = True
            kernel = Kernel(fn.__name__, fn, fn)
            arguments = bind(kernel, args, kwargs)
            tensors = {name: value for name, value in arguments.items() if isinstance(value, torch.Tensor)}
            try:
                self.check(kernel, arguments, tensors, resolve_grid(grid, {**kwargs, **arguments}),
                           Config({}, num_warps=config.num_warps, num_stages=config.num_stages), False, light=True)
            except RunError as e:
                if e.type != "OutOfBounds":
                    raise
                self.trial_failed(e, kernel, config)
                raise LaunchFailed() from None
        return run()

    def trial_failed(self, error, kernel, config):
        """An out-of-bounds access of a config the autotuner was timing: the launch it was tuning is named."""
        index = self.total
        error.launch = None
        error.message = (f"launch {index} ({kernel.name}, called at line {self.call_line()}), as the autotuner timed "
                         f"its config {described(config)}: {error.message}")
        if self.error is None:
            self.error = error

    def check(self, kernel, arguments, tensors, grid, config, traced, light=False, compile_real=None):
        """The launch pass's check on the GPU: the GPU tracer's instrumented launch over copies of the
        tensors, with `compile_real()` beside its compile: (whether it checked the launch, its trace
        where `traced`), or the out-of-bounds RunError; the program's tensors untouched. `light`: by
        the build that neither records nor counts (gpu_trace.bounds_check), for a launch no one will
        see. Where the tracer cannot check the kernel's accesses, the launch runs unchecked and the
        notes say why (unseen_on_gpu)."""
        copies = copies_of(tensors)
        args = {**arguments, **{name: copies[name] for name in tensors}}
        tracer = gpu_trace.InstrumentedTracer(self.path, kernel, args, {name: copies[name] for name in tensors})
        tracer.restore = lambda: [span_of(copies[name]).copy_(span_of(tensors[name])) for name in tensors]

        def instrumented_launch():
            jit = self.instrumented_kernel(tracer, kernel)
            with self.passing_through():
                if not traced:
                    gpu_trace.bounds_check(tracer, jit, grid, args, config, self.limits, light)
                    return None
                options = {"trace": True, "trace_pid": self.options["trace_pid"]}
                return gpu_trace.gpu_trace(tracer, jit, grid, args, config, options, self.limits)

        trace, checked = self.sanitize_on_gpu(tracer, instrumented_launch, Launch(kernel, arguments, tensors, grid),
                                              compile_real)
        return checked, trace

    def unseen_on_gpu(self, why, launch):
        """A script's launch the GPU tracer cannot check runs unchecked, said once per kernel in the notes."""
        self.note_unchecked(launch.kernel.name, why)

    def note_unchecked(self, name, why):
        if name not in self.unchecked:
            self.unchecked.add(name)
            self.notes.append(f"The launches of {name} ran without a bounds check: {why}.")

    def instrumented_kernel(self, tracer, kernel):
        """The instrumented build of the kernel, defined beside the program once per source."""
        source = tracer.instrumented_source(functions_only=True)
        if source not in self.instrumented:
            self.instrumented[source] = tracer.define(self.scratch, kernel.function.__globals__)
        return self.instrumented[source]

    def retrace(self, kernel, arguments, tensors, grid, run):
        return None  # the GPU tracer's error brings its trace

    def failed(self, exc, index, record, kernel, arguments, tensors, grid, run):
        """A compiled launch's failure: a compile error is the compile's, at its line (launch_failed)."""
        super().failed(self.launch_failed(exc), index, record, kernel, arguments, tensors, grid, run)

    def disassemble_shown(self, kept):
        if kept.compiled is not None:
            disassemble_early(kept.compiled)

    def shown_ir(self, kept, notes):
        """On the local GPU, the IR of the kernel the launch compiled (sandbox.launch.ir.ir_of_compiled)."""
        if kept.compiled is None:
            return super().shown_ir(kept, None)
        return self.ir_of(lambda: ir_of_compiled(kept.compiled, self.path))

    def timings(self, kept, index):
        """The shown launch replayed as do_bench times a kernel, its inputs restored before each call."""
        if kept.replay is None:
            return None
        run, refresh = kept.replay
        with self.passing_through():
            kernel_ms = bench.time_gpu(run, refresh=refresh)
            refresh()
        timings = bench.gpu_timings(kernel_ms, None, kept.ms, bench.bytes_moved(kept.trace, kept.tensors), None,
                                    kept.tensors.values(), kept.autotuner, tuned_note(kept.autotuner))
        timings["notes"].append(f"Launch {index} replayed as triton.testing.do_bench times a kernel, its tensors "
                                f"restored to what the program gave it before each call; the first launch's time "
                                f"is the program's own launch (its compile included where it compiled).")
        return timings

    def record_timeline(self, kept, notes, kernel_ms):
        """The shown launch's timeline part, made as a form run's is (sandbox.timeline.run), its inputs
        restored to what the program gave it: its kernel from the program's definitions (on its own
        lines, as a replay of it loads them), launched with its arguments, grid and config; None with
        a note in `notes` where none can be made."""
        def make():
            if kept.replay is not None:
                kept.replay[1]()
            spec = {"source": definitions(self.source, in_place=True), "kernel": kept.function.__name__}
            config = Config({}, num_warps=kept.num_warps, num_stages=kept.num_stages)
            return timeline(spec, self.scratch, config, kept.grid, kept.arguments, kernel_ms)

        with self.passing_through():
            return timeline_or_note(notes, make)


class TunerRun:
    """One run of an autotuner under way: whether its configs' compiles were started, and whether it took
    its choice from an earlier run of the program (None: the key was in its memory, nothing was asked)."""

    def __init__(self):
        self.compiling, self.from_cache = False, None


def tuned_note(tuned):
    """What the autotuner of a launch the program made did (sandbox.run.capture.Tuned), or None."""
    if tuned is None or len(tuned.configs) == 1:
        return None
    if tuned.timed_earlier:
        return ("The autotuner's choice for these arguments came from Triton's autotuning cache: an earlier run "
                "of this program timed each config (median ms, as shown), so this run launched the fastest at "
                "once. Editing the kernel or its configs times them again.")
    return ("The autotuner timed each config (median ms) and launched the fastest, which was checked and "
            "traced; the first launch's time includes compiling and timing them all.")


class GpuWarmed(Warmed):
    """`kernel.warmup(...)` on a GPU: the compiled kernel's facts are the real ones; its launch,
    `warmed[grid](*args)`, is a launch like any other (captured and bounds-checked)."""

    def __init__(self, compiled, function, args, kwargs, path, launch):
        super().__init__(function, args, kwargs, path, launch)
        self.real = compiled

    def _init_handles(self):
        self.real._init_handles()
        return self.real

    @property
    def n_regs(self):
        return self._init_handles().n_regs

    @property
    def n_spills(self):
        return self._init_handles().n_spills

    @property
    def metadata(self):
        return self.real.metadata


def span_of(tensor):
    """The elements from a tensor's first to its last, as one flat view of its storage."""
    span = 1 + sum((size - 1) * stride for size, stride in zip(tensor.shape, tensor.stride())) if tensor.numel() else 0
    return tensor.as_strided((span,), (1,))


def copies_of(tensors):
    """A copy of each tensor with its shape and strides (a slice's gaps included), arguments that
    are the same tensor sharing one copy."""
    made, copies = {}, {}
    for name, tensor in tensors.items():
        key = (tensor.data_ptr(), tuple(tensor.shape), tuple(tensor.stride()), tensor.dtype)
        if key not in made:
            made[key] = span_of(tensor).clone().as_strided(tensor.shape, tensor.stride())
        copies[name] = made[key]
    return copies


def snapshot(tensors):
    """What a replay restores: each tensor's span as the launch received it."""
    return [(span_of(t), span_of(t).clone()) for t in {t.data_ptr(): t for t in tensors.values()}.values()]


def restore(saved):
    for view, before in saved:
        view.copy_(before)


__all__ = ["GpuCapture"]
