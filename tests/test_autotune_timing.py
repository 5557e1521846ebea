"""A form run's autotuner times each config briefly, unless the kernel's author said how to time it
(sandbox.launch.launcher.time_configs_briefly); the run then times the chosen config in full. The
configs compile at once, and one still compiling past a budget is left out (compile_configs_at_once;
on a GPU: tests/test_gpu.py)."""
import contextlib
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import pytest
import triton
import triton.language as tl

from sandbox.launch.launcher import TUNING_REP_MS, made_by, time_configs_briefly, unfinished_after
from sandbox.run.bench import autotune_note, autotune_table

pytestmark = pytest.mark.unit

CONFIGS = [triton.Config({"BLOCK": 64}), triton.Config({"BLOCK": 128})]


def tuned(configs=CONFIGS, **autotune):
    @triton.autotune(configs=configs, key=["n"], **autotune)
    @triton.jit
    def kernel(x_ptr, n, BLOCK: tl.constexpr):
        offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        tl.store(x_ptr + offsets, 1.0, mask=offsets < n)
    return kernel


def test_an_autotuner_without_a_timing_of_its_authors_times_each_config_briefly_and_says_so():
    autotuner = tuned()
    assert time_configs_briefly(autotuner)
    assert autotuner.do_bench is autotuner._do_bench  # the autotuner's own timing calls it
    assert f"each over {TUNING_REP_MS} ms of calls" in autotune_note(autotuner)


@pytest.mark.parametrize("autotune", [{"do_bench": lambda fn, quantiles: [1.0, 1.0, 1.0]}, {"warmup": 10, "rep": 50}],
                         ids=["do_bench", "warmup and rep"])
def test_an_authors_own_timing_of_the_configs_is_kept(autotune):
    with pytest.warns(Warning) if "rep" in autotune else contextlib.nullcontext():
        autotuner = tuned(**autotune)
    kept = autotuner._do_bench
    assert not time_configs_briefly(autotuner)
    assert autotuner._do_bench is kept
    assert "ms of calls" not in autotune_note(autotuner)


def test_a_single_config_is_never_timed():
    autotuner = tuned(configs=CONFIGS[:1])
    assert not time_configs_briefly(autotuner)
    assert autotune_note(autotuner).startswith("One autotune config")



def test_configs_still_compiling_past_the_budget_are_the_late_ones_but_one_always_finishes():
    release = threading.Event()
    with ThreadPoolExecutor(max_workers=2) as pool:
        quick, stuck = pool.submit(time.sleep, 0.01), pool.submit(release.wait)
        assert unfinished_after([quick, stuck], 0.3) == {stuck}
        release.set()
    release.clear()
    with ThreadPoolExecutor(max_workers=2) as pool:
        slow, stuck = pool.submit(time.sleep, 0.4), pool.submit(release.wait)
        start = time.monotonic()
        assert unfinished_after([slow, stuck], 0.05) == {stuck}  # none done in time: the first to finish is kept
        assert time.monotonic() - start >= 0.35
        release.set()


def test_a_config_is_known_by_the_keywords_the_autotuner_warms_it_with():
    config = triton.Config({"BLOCK": 64}, num_warps=2)
    assert made_by(config, {"x_ptr": 1, "n": 10, **config.all_kwargs()})
    assert not made_by(config, {"x_ptr": 1, "n": 10, **CONFIGS[1].all_kwargs()})


def test_configs_left_out_of_the_tuning_are_listed_last_untimed():
    autotuner = tuned()
    late = triton.Config({"BLOCK": 8192}, num_warps=1)
    table = autotune_table(autotuner, {CONFIGS[1]: [0.02, 0.019, 0.021]}, CONFIGS[1], left_out=[late])
    assert [(row["config"]["BLOCK"], row["ms"], row["chosen"]) for row in table] == [
        (64, None, False), (128, 0.02, True), (8192, None, False)]


def test_a_replayed_launch_keeps_to_the_config_its_record_names():
    from sandbox.launch.kernel import described, unwrap
    configs = [triton.Config({"BLOCK": 64}, num_warps=4), triton.Config({"BLOCK": 128}, num_warps=8, num_stages=2)]
    kernel = unwrap(tuned(configs), "kernel")
    record = {"config": described(configs[1])}  # as sandbox.run.launch_record names the config a launch ran
    assert record["config"] == {"BLOCK": 128, "num_warps": 8, "num_stages": 2}
    kernel.keep_to({**record["config"], "num_stages": 3})  # no config of the kernel's: tuned as ever
    assert kernel.autotuner.configs == configs and kernel.first is configs[0] and kernel.untimed == []
    kernel.keep_to(record["config"])
    assert kernel.autotuner.configs == [configs[1]] and kernel.first is configs[1]
    assert kernel.untimed == [configs[0]]
    assert kernel.tuned == {"BLOCK": 128}  # the meta-parameters a form run's arguments take
