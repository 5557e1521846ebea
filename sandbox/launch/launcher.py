"""kernel[grid](...) as a run makes it, and its compile ahead of the launch: an autotuned kernel's
configs compiled at once on threads, a compile on a thread beside other work (Background)."""
import contextlib
import os
import threading
import time
from concurrent.futures import FIRST_COMPLETED, ThreadPoolExecutor, wait
from types import SimpleNamespace

from triton.compiler import ASTSource
from triton.runtime import driver

from sandbox.launch.ir import specialize
from sandbox.launch.kernel import launch_keywords

COMPILE_THREADS = 8  # within a run's task limit, beside torch's threads
CONFIG_COMPILE_S = 15  # an autotuner's configs not compiled this long after they began are left out of its tuning
# How long a form run's autotuner times each config (Triton's default: 25 ms of warm-up, 100 of
# timing, ~2.2 s for 16 configs): a median over ~20 ms of calls picks the same fastest config but for
# ties, and the run then times the chosen one as do_bench does (sandbox.run.bench).
TUNING_WARMUP_MS, TUNING_REP_MS = 5, 20


def untuned_arguments(kernel, args):
    """An autotuned kernel's arguments but those its configs and its @triton.heuristics set, split as
    people pass them: Triton's wrappers add those by keyword, so one passed too (positionally, as a
    leading parameter would be) is "got multiple values"."""
    set_by_wrappers = kernel.tuned_names | set(kernel.heuristics)
    return kernel.positional({name: value for name, value in args.items() if name not in set_by_wrappers})


def launch(kernel, grid, args, options):
    """kernel[grid](**args). An autotuned kernel gets its meta-parameters, num_warps and num_stages from
    the config the autotuner picks (on a GPU `grid` must then be a callable of meta); in the
    interpreter, which cannot time configs, that is the first config."""
    if kernel.autotuner is None:
        kernel.launcher[grid](**launch_keywords(args, num_warps=options["num_warps"],
                                                num_stages=options["num_stages"]))
        return
    positional, keywords = untuned_arguments(kernel, args)
    if not kernel.interpreted:
        time_configs_briefly(kernel.autotuner)
        kernel.launcher[grid](*positional, **keywords)
        return
    configs = kernel.autotuner.configs
    kernel.autotuner.configs = [kernel.first]  # one config: the autotuner runs it without benchmarking
    try:
        kernel.launcher[grid](*positional, **keywords)
    finally:
        kernel.autotuner.configs = configs


def time_configs_briefly(autotuner):
    """The autotuner times each config over TUNING_REP_MS, where its kernel's author gave it no timing
    of their own (`do_bench=`, or the older `warmup=` and `rep=`, which Triton keeps as `_do_bench`).
    True if so."""
    if len(autotuner.configs) < 2 or getattr(autotuner, "_do_bench", "unknown") is not None:
        return False
    import triton.testing
    autotuner._do_bench = lambda fn, quantiles: triton.testing.do_bench(
        fn, warmup=TUNING_WARMUP_MS, rep=TUNING_REP_MS, quantiles=quantiles)
    autotuner.timed_briefly = True
    return True


def compiled_config(kernel, grid, args, config):
    """The CompiledKernel of an autotuned kernel's `config` (its chosen one after its launch: a cache hit)."""
    positional, keywords = untuned_arguments(kernel, args)
    return kernel.autotuner.fn.warmup(*positional, grid=grid, **keywords, **config.all_kwargs())


def compile_configs_at_once(kernel, grid, args):
    """Compile every config of an autotuned kernel at once, before the autotuner times them (it would
    compile each in turn as it reaches it, and 16 configs took 14 s so). Triton's own asynchronous
    compile mode runs the compiles on threads: its compiler's passes and ptxas run outside the GIL.
    A config that fails to compile is left to the launch, which then says why as it would have.
    Configs not compiled CONFIG_COMPILE_S after the compiles began (and after one of them finished) are
    left out of this run's tuning (`kernel.left_out`): a library's tuning space may hold a config
    whose compile alone outlasts a run (8,192 elements to a single warp: a minute and more of ptxas)."""
    from triton.runtime._async_compile import AsyncCompileMode
    positional, keywords = untuned_arguments(kernel, args)
    autotuner = kernel.autotuner
    pool = ThreadPoolExecutor(max_workers=min(len(autotuner.configs), os.cpu_count() or 1, COMPILE_THREADS))
    mode = AsyncCompileMode(pool, ignore_errors=True)
    with compiles_per_config(autotuner, mode) as submitted:
        try:
            with mode:
                warm_each_config(kernel, positional, keywords, grid)
                late = unfinished_after(mode.raw_futures, CONFIG_COMPILE_S)
                mode.raw_futures = [future for future in mode.raw_futures if future not in late]  # finalized on exit
        finally:
            pool.shutdown(wait=False, cancel_futures=True)  # a late compile runs on, unwaited for
    left_out = [config for config in autotuner.configs
                if any(late.intersection(futures) for keywords, futures in submitted if made_by(config, keywords))]
    if left_out:
        autotuner.configs = [config for config in autotuner.configs if config not in left_out]
        kernel.left_out += left_out


def warm_each_config(kernel, positional, keywords, grid):
    """The autotuner's own warmup (each config compiled, none launched), given what any
    @triton.heuristics above it adds: the warmup of such a wrapper would run the autotuner itself, which
    then times calls that only compile, and keeps the "fastest" for the launch."""
    layer = kernel.launcher
    while layer is not kernel.autotuner:
        for name, rule in getattr(layer, "values", {}).items():  # a Heuristics: its rules, as its run applies them
            keywords = {**keywords, name: rule({**dict(zip(layer.arg_names, positional)), **keywords})}
        layer = layer.fn
    kernel.autotuner.warmup(*positional, grid=grid, **keywords)


@contextlib.contextmanager
def compiles_per_config(autotuner, mode):
    """[(the keywords the autotuner warmed a config with, the compiles `mode` took from that call)]:
    the autotuner warms each config through its function's `warmup`, watched here meanwhile."""
    warmup, submitted = autotuner.fn.warmup, []

    def watched(*args, **keywords):
        before = len(mode.raw_futures)
        try:
            return warmup(*args, **keywords)
        finally:
            submitted.append((keywords, set(mode.raw_futures[before:])))

    autotuner.fn.warmup = watched
    try:
        yield submitted
    finally:
        del autotuner.fn.warmup  # the function's own method again


def left_out_note(kernel):
    """What a result says of the configs compile_configs_at_once left out, or None."""
    if not kernel.left_out:
        return None
    named = "; ".join(", ".join(f"{k}={v}" for k, v in {**c.kwargs, "num_warps": c.num_warps}.items())
                      for c in kernel.left_out[:4]) + ("; ..." if len(kernel.left_out) > 4 else "")
    count = len(kernel.left_out) + len(kernel.autotuner.configs)
    return (f"{len(kernel.left_out)} of the autotuner's {count} configs had not compiled {CONFIG_COMPILE_S} s "
            f"after the configs began compiling, and were left out of this run's tuning ({named}): the autotuner "
            f"chose among the other {len(kernel.autotuner.configs)}. Triton would compile them as long as it "
            f"takes: a block of many elements to few warps can hold ptxas for minutes.")


def made_by(config, keywords):
    return all(keywords.get(name) == value for name, value in config.all_kwargs().items())


def unfinished_after(futures, budget_s):
    """The futures not done `budget_s` from now, or once the first is done if none is by then."""
    done, pending = wait(futures, timeout=budget_s)
    if pending and not done:
        done, pending = wait(futures, return_when=FIRST_COMPLETED)
    return pending


def compile_launch(kernel, grid, args, options):
    """Compile what launch() launches, launching nothing (Triton's warmup, with the same arguments and
    options, so the launch finds it): an autotuned kernel's configs all at once. Returns the compiled
    kernel (None for an autotuned one of several configs: which runs is not known yet)."""
    if kernel.autotuner is None:
        return kernel.launcher.warmup(grid=grid, **launch_keywords(args, num_warps=options["num_warps"],
                                                                   num_stages=options["num_stages"]))
    [config, *others] = kernel.autotuner.configs
    if others:
        compile_configs_at_once(kernel, grid, args)
        return None
    return compiled_config(kernel, grid, args, config)


def ready_to_launch(compiled):
    """Load a compiled kernel and build its launcher now, beside other work, where Triton would do
    both at its first launch: on Triton 3.6 the launcher is a C library built per signature (~0.3 s
    of the C compiler). An optimisation only: the launch does what is left."""
    with contextlib.suppress(Exception):
        if compiled is not None:
            compiled._init_handles()


def build_launcher(jit, keywords):
    """Build the launcher of `jit` launched with `keywords` while the kernel itself compiles (Triton
    builds it after the compile, at the launch, into the same cache entry, keyed by its source: the
    signature). Where a Triton has no launcher to build, or derives another signature, this costs a
    few ms of the thread it runs on and the launch builds its own. An optimisation only."""
    with contextlib.suppress(Exception):
        signature, constexprs, attrs = specialize(jit, keywords)
        driver.active.launcher_cls(ASTSource(jit, signature, constexprs=constexprs, attrs=attrs), LaunchMetadata())


class LaunchMetadata(SimpleNamespace):
    """A compiled kernel's metadata as a launcher reads it before any launch: what no compile has set
    yet is None."""

    def __getattr__(self, name):
        return None


class Background:
    """`work()` on a thread of its own from now on, beside what the caller does next: two compiles at
    once (Triton's passes and ptxas run outside the GIL). `wait()` joins it and returns its exception
    (None if it finished): what it prepares, a later step would do again, and report."""

    def __init__(self, work):
        self.error, self.ms = None, 0.0
        self.thread = threading.Thread(target=self._run, args=(work,), name="compile", daemon=True)
        self.thread.start()

    def _run(self, work):
        start = time.perf_counter()
        try:
            work()
        except Exception as e:
            self.error = e
        self.ms = (time.perf_counter() - start) * 1e3

    def wait(self):
        self.thread.join()
        return self.error
