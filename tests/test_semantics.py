"""Triton's semantics as Triton has them: kernels written in Triton's own style (its tutorials' and
its docs' idioms) run as they would under Triton, on this host in the interpreter and, marked `gpu`,
on a GPU. And no exception from inside the playground reaches a person bare."""
import pytest

from sandbox.run import pipeline
from sandbox.run.pipeline import run_spec
from sandbox.trace import provenance
from tests.support import has_block_pointers, has_gpu, needs_block_pointers

HEADER = "import torch\nimport triton\nimport triton.language as tl\n"
DEVICE = "gpu" if has_gpu() else "interpreter"


def spec(source, kernel, inputs, args, grid, reference, **options):
    return {"version": 1, "source": HEADER + source, "kernel": kernel, "inputs": inputs, "args": args,
            "grid": grid, "reference": reference,
            "options": {"ir": False, "bench": False, "device": DEVICE, **options}}


def ok(result):
    assert result["error"] is None, result["error"]
    assert result["status"] == "ok", result["check"]
    return result


def line_of(source, text):
    return (HEADER + source).splitlines().index(next(s for s in (HEADER + source).splitlines() if text in s)) + 1


# -- launch options as parameter names

SOFTMAX_STYLE = """
@triton.jit
def scale_rows(out_ptr, in_ptr, n_rows, n_cols, BLOCK_SIZE: tl.constexpr, {option}: tl.constexpr):
    row_start = tl.program_id(0)
    row_step = tl.num_programs(0)
    for row in tl.range(row_start, n_rows, row_step, num_stages=2):
        offs = tl.arange(0, BLOCK_SIZE)
        x = tl.load(in_ptr + row * n_cols + offs, mask=offs < n_cols, other=0.0)
        tl.store(out_ptr + row * n_cols + offs, x * {option}, mask=offs < n_cols)
"""


@pytest.mark.parametrize("option, value", [("num_stages", 3), ("num_warps", 4), ("num_ctas", 1), ("maxnreg", 128)])
def test_a_parameter_named_like_a_launch_option_binds_as_in_triton(option, value):
    # Triton's fused-softmax tutorial declares `num_stages: tl.constexpr` and launches with num_stages=...
    raw = spec(SOFTMAX_STYLE.format(option=option), "scale_rows",
               {"x": "torch.randn(6, 20)", "y": "torch.empty(6, 20)"},
               {"out_ptr": "y", "in_ptr": "x", "n_rows": 6, "n_cols": 20, "BLOCK_SIZE": 32, option: value},
               "(4,)", {"y": f"x * {value}"}, ir=True)
    result = ok(run_spec(raw))
    assert "error" not in (result["ir"] or {})


# -- the driver on a host without a GPU

TUTORIAL_PREAMBLE = """
DEVICE = triton.runtime.driver.active.get_active_torch_device()
TARGET = triton.runtime.driver.active.get_current_target()
properties = triton.runtime.driver.active.utils.get_device_properties(DEVICE.index)
NUM_SM = properties["multiprocessor_count"]
SIZE_SMEM = properties["max_shared_mem"]
WARP_SIZE = properties["warpSize"]


def is_cuda():
    return TARGET.backend == "cuda"


@triton.jit
def add_kernel(x_ptr, y_ptr, output_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    lanes = tl.program_id(0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    within = lanes < n_elements
    total = tl.load(x_ptr + lanes, mask=within) + tl.load(y_ptr + lanes, mask=within)
    tl.store(output_ptr + lanes, total, mask=within)
"""


@pytest.mark.cpu_only
def test_a_tutorial_module_that_asks_the_driver_for_its_device_runs_and_says_what_it_pretends():
    raw = spec(TUTORIAL_PREAMBLE, "add_kernel",
               {"x": "torch.rand(1000, device=DEVICE)", "y": "torch.rand(1000, device=DEVICE)",
                "out": "torch.empty(1000, device=DEVICE)"},
               {"x_ptr": "x", "y_ptr": "y", "output_ptr": "out", "n_elements": "out.numel()", "BLOCK_SIZE": 256},
               "(min(NUM_SM, triton.cdiv(n_elements, meta['BLOCK_SIZE'])),) if is_cuda() else None",
               {"out": "x + y"}, ir=True)
    result = ok(run_spec(raw))
    note = next(n for n in result["notes"] if "triton.runtime.driver.active" in n)
    assert "'cpu'" in note and "sm90" in note and "132 SMs" in note
    assert result["ir"]["target"] == "sm90"


def test_a_run_that_never_asks_the_driver_gets_no_note_about_it():
    plain = "\n@triton.jit" + TUTORIAL_PREAMBLE.split("\n@triton.jit")[1]
    raw = spec(plain, "add_kernel", {"x": "torch.rand(10)", "y": "torch.rand(10)", "out": "torch.empty(10)"},
               {"x_ptr": "x", "y_ptr": "y", "output_ptr": "out", "n_elements": 10, "BLOCK_SIZE": 16}, "(1,)",
               {"out": "x + y"})
    assert not any("driver.active" in n for n in ok(run_spec(raw))["notes"])



DERIVED_DEVICE = HEADER + """
DEVICE = DEVICE_FROM_DRIVER


@triton.jit
def double(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    lanes = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(out_ptr + lanes, 2 * tl.load(x_ptr + lanes, mask=lanes < n), mask=lanes < n)


x = torch.randn(100, device=DEVICE)
out = torch.empty(100).to(DEVICE)
double[(4,)](x, out, 100, BLOCK=32)
torch.testing.assert_close(out, 2 * x.cuda())
print("doubled on", out.device)
"""


@pytest.mark.cpu_only
@pytest.mark.parametrize("derived", ["torch.device(triton.runtime.driver.active.get_current_target().backend)",
                                     "triton.runtime.driver.active.get_current_target().backend + ':0'",
                                     "triton.runtime.driver.active.get_current_device()", "'cuda'"])
def test_a_tutorial_program_deriving_its_device_from_the_driver_runs_on_the_cpu(derived, capfd):
    """The stand-in driver's target says 'cuda' (the IR's GPU) and its device index 0 is cuda:0 to
    torch: on a host without CUDA, each is the CPU, and the run says so."""
    result = ok(run_spec({"mode": "script", "source": DERIVED_DEVICE.replace("DEVICE_FROM_DRIVER", derived),
                          "options": {"device": DEVICE}}))
    assert "doubled on cpu" in capfd.readouterr().out
    if "driver" in derived:
        assert any("is this host's CPU" in note for note in result["notes"])


@pytest.mark.cpu_only
def test_an_assertion_inside_torch_is_no_failed_check_of_the_program():
    source = HEADER + "x = torch.ones(4)\ntorch.cuda.synchronize()\n"
    error = run_spec({"mode": "script", "source": source, "options": {"device": DEVICE}})["error"]
    assert error["type"] == "AssertionError" and error["line"] == 5
    assert not error["message"].startswith("assert failed") and "check" not in (error["hint"] or "")
    failed = HEADER + "x = torch.ones(4)\ntorch.testing.assert_close(x, 2 * x)\n"
    error = run_spec({"mode": "script", "source": failed, "options": {"device": DEVICE}})["error"]
    assert error["message"].startswith("assert failed") and "own check" in error["hint"]

# -- loops

def test_tl_range_with_num_stages_and_loop_unroll_factor():
    source = """
@triton.jit
def row_sums(x_ptr, out_ptr, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    acc = tl.zeros((BLOCK,), dtype=tl.float32)
    for start in tl.range(0, n_cols, BLOCK, num_stages=3, loop_unroll_factor=2):
        offs = start + tl.arange(0, BLOCK)
        acc += tl.load(x_ptr + row * n_cols + offs, mask=offs < n_cols, other=0.0)
    tl.store(out_ptr + row, tl.sum(acc, axis=0))
"""
    ok(run_spec(spec(source, "row_sums", {"x": "torch.randn(5, 70)", "out": "torch.empty(5)"},
                     {"x_ptr": "x", "out_ptr": "out", "n_cols": 70, "BLOCK": 16}, "(5,)", {"out": "x.sum(1)"},
                     atol=1e-4)))


def test_tl_static_range_unrolls_over_a_constexpr():
    source = """
@triton.jit
def powers(x_ptr, out_ptr, n, BLOCK: tl.constexpr, TERMS: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n)
    acc = tl.zeros((BLOCK,), dtype=tl.float32)
    term = tl.full((BLOCK,), 1.0, tl.float32)
    for i in tl.static_range(TERMS):
        acc += term
        term = term * x
    tl.store(out_ptr + offs, acc, mask=offs < n)
"""
    ok(run_spec(spec(source, "powers", {"x": "torch.rand(40) / 2", "out": "torch.empty(40)"},
                     {"x_ptr": "x", "out_ptr": "out", "n": 40, "BLOCK": 16, "TERMS": 4},
                     "(triton.cdiv(n, meta['BLOCK']),)", {"out": "1 + x + x**2 + x**3"}, atol=1e-5)))


# -- printing and asserting

PRINT_AND_ASSERT = """
@triton.jit
def checked_double(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n, other=1.0)
    tl.device_print("pid", pid)
    tl.device_assert(x > 0, "every x must be positive")
    tl.store(out_ptr + offs, x * 2, mask=offs < n)
"""


def test_tl_device_print_reaches_the_output(capfd):
    raw = spec(PRINT_AND_ASSERT, "checked_double", {"x": "torch.rand(20) + 0.5", "out": "torch.empty(20)"},
               {"x_ptr": "x", "out_ptr": "out", "n": 20, "BLOCK": 8}, "(3,)", {"out": "x * 2"})
    ok(run_spec(raw))
    printed = capfd.readouterr().out
    # "(1, 0, 0)  pid:  [1]" in the interpreter, "pid (1, 0, 0) idx () pid: 1" on a GPU
    assert all(f"({p}, 0, 0)" in printed for p in (0, 1, 2)) and printed.count("pid:") >= 3, printed


@pytest.mark.skipif(DEVICE == "gpu", reason="a compiled tl.device_assert fires only with debug=True, as in Triton")
def test_a_failing_tl_device_assert_is_the_runs_error_with_its_message_and_line():
    raw = spec(PRINT_AND_ASSERT, "checked_double", {"x": "torch.rand(20) + 0.5", "out": "torch.empty(20)"},
               {"x_ptr": "x", "out_ptr": "out", "n": 20, "BLOCK": 8}, "(3,)", {"out": "x * 2"})
    raw["inputs"]["x"] = "torch.cat([torch.rand(10) + 0.5, -torch.ones(10)])"
    error = run_spec(raw)["error"]
    assert error["type"] == "DeviceAssert" and error["phase"] == "launch"
    assert "every x must be positive" in error["message"]
    assert error["line"] == line_of(PRINT_AND_ASSERT, "tl.device_assert")
    assert error["pid"] == [1, 0, 0]  # elements 10.. are negative: program 1 is the first to see one


# -- module-level aliases of Triton's objects

ALIASES = """
from triton.language import maximum as larger
from triton.language.extra import libdevice

exp = tl.exp
as_type = tl.cast
blocks_of = tl.cdiv
ceil_div = triton.cdiv
smooth = libdevice.tanh


@triton.jit
def clipped(x):
    return larger(x, 0.0)


@triton.jit
def aliased(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    lanes = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    within = lanes < n
    x = tl.load(x_ptr + lanes, mask=within)
    spare = blocks_of(n, BLOCK) - ceil_div(n, BLOCK)  # 0
    y = as_type(exp(x), tl.float16).to(tl.float32) + smooth(x) * spare
    tl.store(out_ptr + lanes, clipped(y), mask=within)
"""


def test_module_level_aliases_of_triton_objects_work_inside_a_kernel():
    """`exp = tl.exp` and the like, as libraries write them: the interpreter patches `tl` itself, and
    an alias named the unpatched builtin ("Did you forget to add @triton.jit?")."""
    ok(run_spec(spec(ALIASES, "aliased", {"x": "torch.randn(100)", "y": "torch.empty(100)"},
                     {"x_ptr": "x", "out_ptr": "y", "n": 100, "BLOCK": 32}, "(triton.cdiv(100, 32),)",
                     {"y": "torch.exp(x).half().float()"})))


# -- grids as Triton launches them

ROWS = """
@triton.jit
def fill_rows(out_ptr, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.program_id(1) * BLOCK + tl.arange(0, BLOCK)
    tl.store(out_ptr + row * n_cols + cols, row + 0.0 * cols, mask=cols < n_cols)
"""
ROWS_PROGRAM = HEADER + ROWS + """
out = torch.zeros(4, 50)
fill_rows[GRID](out, 50, BLOCK=16)
assert torch.equal(out, torch.arange(4.0)[:, None].expand(4, 50))
"""


@pytest.mark.parametrize("grid", ["(4, triton.cdiv(50, 16), 1, 1)", "[4, 4, 1, 1, 1]"])
def test_a_grid_of_more_than_three_entries_of_one_launches_as_triton_launches_it(grid):
    """Compiled Triton reads a grid's first three entries; the interpreter refuses a 4th: both modes
    launch it as compiled Triton does."""
    result = ok(run_spec(spec(ROWS, "fill_rows", {"out": "torch.zeros(4, 50)"}, {"out_ptr": "out", "n_cols": 50,
                                                                                "BLOCK": 16}, grid,
                              {"out": "torch.arange(4.0)[:, None].expand(4, 50)"})))
    assert result["trace"]["grid"][:3] == [4, 4, 1]
    ok(run_spec({"mode": "script", "source": ROWS_PROGRAM.replace("GRID", grid), "options": {"device": DEVICE}}))


def test_a_fourth_grid_entry_above_one_is_named_as_the_programs_triton_would_not_run():
    raw = spec(ROWS, "fill_rows", {"out": "torch.zeros(4, 50)"}, {"out_ptr": "out", "n_cols": 50, "BLOCK": 16},
               "(4, 4, 1, 2)", {"out": "out"})
    error = run_spec(raw)["error"]
    assert error["phase"] == "build" and error["field"] == "grid" and "only the first 3" in error["message"]
    source = ROWS_PROGRAM.replace("GRID", "(4, 4, 1, 2)")
    error = run_spec({"mode": "script", "source": source, "options": {"device": DEVICE}})["error"]
    assert error["type"] == "GridError" and error["line"] == line_of(source[len(HEADER):], "fill_rows[")
    assert "(4, 4, 1, 2) has 4 entries" in error["message"]


@pytest.mark.parametrize("grid", ["None", "(4, 'rows')", "()"])
def test_a_program_launching_on_something_that_is_no_grid_is_told_so_at_its_line(grid):
    source = ROWS_PROGRAM.replace("GRID", grid)
    error = run_spec({"mode": "script", "source": source, "options": {"device": DEVICE}})["error"]
    assert error["type"] == "GridError" and error["line"] == line_of(source[len(HEADER):], "fill_rows[")


# -- the reference on the run's device

GATHER = """
@triton.jit
def gather_table(table_ptr, index_ptr, out_ptr, n, BLOCK: tl.constexpr):
    lanes = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    index = tl.load(index_ptr + lanes, mask=lanes < n, other=0)
    tl.store(out_ptr + lanes, tl.load(table_ptr + index, mask=lanes < n), mask=lanes < n)
"""


def test_a_reference_that_makes_a_lookup_table_runs_on_the_runs_device():
    """The inputs are made on the run's device; a tensor the reference makes goes there too."""
    ok(run_spec(spec(GATHER, "gather_table", {"table": "torch.tensor([0.5, 1.5, 2.5, 3.5])",
                                              "idx": "torch.randint(0, 4, (70,))", "out": "torch.empty(70)"},
                     {"table_ptr": "table", "index_ptr": "idx", "out_ptr": "out", "n": 70, "BLOCK": 32},
                     "(3,)", {"out": "torch.tensor([0.5, 1.5, 2.5, 3.5])[idx]"})))


def test_reference_expressions_make_their_tensors_on_the_runs_device():
    import torch
    from sandbox.launch import build
    idx = torch.tensor([2, 0, 1], device="meta")  # a device no default would choose
    expected = build.references({"out": "torch.tensor([5.0, 6.0, 7.0])[idx]", "n": "3"},
                                {"torch": torch, "idx": idx}, "meta")
    assert expected["out"].device.type == "meta" and expected["n"].device.type == "meta"


# -- heuristics and autotuning

def test_triton_heuristics_compute_a_meta_parameter_from_the_arguments():
    source = """
@triton.heuristics({"EVEN_N": lambda args: args["n"] % args["BLOCK"] == 0})
@triton.jit
def copy(x_ptr, out_ptr, n, BLOCK: tl.constexpr, EVEN_N: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    if EVEN_N:
        tl.store(out_ptr + offs, tl.load(x_ptr + offs))
    else:
        tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=offs < n), mask=offs < n)
"""
    for n in (64, 50):
        ok(run_spec(spec(source, "copy", {"x": f"torch.randn({n})", "out": f"torch.empty({n})"},
                         {"x_ptr": "x", "out_ptr": "out", "n": n, "BLOCK": 16}, "(triton.cdiv(n, meta['BLOCK']),)",
                         {"out": "x"})))


TUNED = '@triton.autotune(configs=[triton.Config({"BLOCK": 16}), triton.Config({"BLOCK": 64}, num_warps=2)], key=["n"])\n'
RULED = '@triton.heuristics({"HAS_BIAS": lambda args: args["b_ptr"] is not None})\n'
BIASED = """@triton.jit
def shift(x_ptr, b_ptr, out_ptr, HAS_BIAS: tl.constexpr, n, BLOCK: tl.constexpr):
    lanes = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + lanes, mask=lanes < n)
    if HAS_BIAS:
        x += tl.load(b_ptr + lanes, mask=lanes < n)
    tl.store(out_ptr + lanes, x, mask=lanes < n)
"""


@pytest.mark.parametrize("decorators", [TUNED + RULED, RULED + TUNED], ids=["autotune over heuristics",
                                                                          "heuristics over autotune"])
def test_autotune_and_heuristics_together_bind_as_triton_binds(decorators):
    """A heuristic's parameter among the leading ones: Triton's wrappers set it by keyword, so the run
    passes it no more than a person would."""
    result = ok(run_spec(spec(decorators + BIASED, "shift",
                              {"x": "torch.randn(100)", "b": "torch.randn(100)", "y": "torch.empty(100)"},
                              {"x_ptr": "x", "b_ptr": "b", "out_ptr": "y", "n": "x.numel()"},
                              "lambda meta: (triton.cdiv(meta['n'], meta['BLOCK']),)", {"y": "x + b"})))
    assert result["trace"] is not None


PRUNED = """
def keep_blocks_that_fit(configs, named_args, **kwargs):
    return [c for c in configs if c.kwargs["BLOCK"] <= named_args["n"]]


@triton.autotune(configs=[triton.Config({"BLOCK": 256}), triton.Config({"BLOCK": 64}, num_warps=2),
                          triton.Config({"BLOCK": 32}, num_warps=1)],
                 key=["n"], prune_configs_by={"early_config_prune": keep_blocks_that_fit})
@triton.jit
def negate(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    tl.static_assert(BLOCK <= 128, "a pruned config ran")
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, -tl.load(x_ptr + offs, mask=offs < n), mask=offs < n)
"""


def test_triton_autotune_prunes_its_configs_with_the_launchs_arguments_by_name():
    result = ok(run_spec(spec(PRUNED, "negate", {"x": "torch.randn(100)", "out": "torch.empty(100)"},
                              {"x_ptr": "x", "out_ptr": "out", "n": "x.numel()"},
                              "lambda meta: (triton.cdiv(meta['n'], meta['BLOCK']),)", {"out": "-x"}, bench=True)))
    chosen = [row["config"] for row in result["timings"]["autotune"] if row["chosen"]]
    assert len(chosen) == 1 and chosen[0]["BLOCK"] in (64, 32)
    if DEVICE == "interpreter":
        assert chosen[0]["BLOCK"] == 64  # the first config the prune keeps


def test_a_prune_that_keeps_no_config_is_a_clear_build_error():
    raw = spec(PRUNED, "negate", {"x": "torch.randn(16)", "out": "torch.empty(16)"},
               {"x_ptr": "x", "out_ptr": "out", "n": "x.numel()"},
               "lambda meta: (triton.cdiv(meta['n'], meta['BLOCK']),)", {"out": "-x"})
    error = run_spec(raw)["error"]
    assert error["phase"] == "build" and error["field"] == "source"
    assert "prune_configs_by" in error["message"] and "at least one config" in error["message"]


RESET_AND_RESTORE = """
@triton.autotune(configs=[triton.Config({"BLOCK": 32}), triton.Config({"BLOCK": 64})], key=["n"],
                 reset_to_zero=["hist_ptr"])
@triton.jit
def histogram(x_ptr, hist_ptr, n, BINS: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n, other=0)
    tl.atomic_add(hist_ptr + x, 1, mask=offs < n)


@triton.autotune(configs=[triton.Config({"BLOCK": 32}), triton.Config({"BLOCK": 64})], key=["n"],
                 restore_value=["x_ptr"])
@triton.jit
def increment_in_place(x_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(x_ptr + offs, tl.load(x_ptr + offs, mask=offs < n) + 1, mask=offs < n)
"""


def test_triton_autotune_reset_to_zero_leaves_one_launchs_counts():
    ok(run_spec(spec(RESET_AND_RESTORE, "histogram",
                     {"x": "torch.randint(0, 8, (300,), dtype=torch.int32)", "hist": "torch.zeros(8, dtype=torch.int32)"},
                     {"x_ptr": "x", "hist_ptr": "hist", "n": 300, "BINS": 8},
                     "lambda meta: (triton.cdiv(meta['n'], meta['BLOCK']),)",
                     {"hist": "torch.bincount(x, minlength=8).to(torch.int32)"})))


def test_triton_autotune_restore_value_leaves_one_launchs_update():
    ok(run_spec(spec(RESET_AND_RESTORE, "increment_in_place", {"x": "torch.randn(200)"}, {"x_ptr": "x", "n": 200},
                     "lambda meta: (triton.cdiv(meta['n'], meta['BLOCK']),)", {"x": "x + 1"})))


def test_do_not_specialize_keeps_an_argument_dynamic():
    source = """
@triton.jit(do_not_specialize=["n"])
def fill(out_ptr, value, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, tl.full((BLOCK,), value, tl.float32), mask=offs < n)
"""
    ok(run_spec(spec(source, "fill", {"out": "torch.empty(33)"}, {"out_ptr": "out", "value": 2.5, "n": 33, "BLOCK": 16},
                     "(3,)", {"out": "torch.full((33,), 2.5)"}, ir=True)))


def test_a_mask_of_a_blocks_comparison_and_a_scalars_loads_and_stores_as_compiled():
    # The interpreter hands such a mask over as int32 lanes, which Triton 3.9's loads and stores refuse.
    source = """
@triton.jit
def copy_small(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = (offs < n) & (n < 2000)
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask), mask=mask)
"""
    ok(run_spec(spec(source, "copy_small", {"x": "torch.randn(40)", "out": "torch.empty(40)"},
                     {"x_ptr": "x", "out_ptr": "out", "n": 40, "BLOCK": 16}, "(3,)", {"out": "x"})))


# -- block pointers and tensor descriptors

BLOCK_POINTERS = """
@triton.jit
def row_sums_blocked(x_ptr, out_ptr, M, N, stride_m, stride_n, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    pid = tl.program_id(0)
    block = tl.make_block_ptr(base=x_ptr, shape=(M, N), strides=(stride_m, stride_n), offsets=(pid * BLOCK_M, 0),
                              block_shape=(BLOCK_M, BLOCK_N), order=(1, 0))
    acc = tl.zeros((BLOCK_M,), dtype=tl.float32)
    for _ in range(0, tl.cdiv(N, BLOCK_N)):
        acc += tl.sum(tl.load(block, boundary_check=(0, 1), padding_option="zero"), axis=1)
        block = tl.advance(block, (0, BLOCK_N))
    rows = pid * BLOCK_M + tl.arange(0, BLOCK_M)
    tl.store(out_ptr + rows, acc, mask=rows < M)
"""


def block_pointer_spec(source=BLOCK_POINTERS):
    return spec(source, "row_sums_blocked", {"x": "torch.randn(19, 45)", "out": "torch.empty(19)"},
                {"x_ptr": "x", "out_ptr": "out", "M": 19, "N": 45, "stride_m": "x.stride(0)",
                 "stride_n": "x.stride(1)", "BLOCK_M": 8, "BLOCK_N": 16},
                "(triton.cdiv(M, meta['BLOCK_M']),)", {"out": "x.sum(1)"}, atol=1e-4)


@needs_block_pointers()
def test_make_block_ptr_and_advance_walk_a_matrix():
    ok(run_spec(block_pointer_spec()))


@pytest.mark.skipif(has_block_pointers(), reason="this Triton still has block pointers")
def test_a_block_pointer_on_a_triton_without_them_is_an_error_at_its_line_that_names_the_replacement():
    error = run_spec(block_pointer_spec())["error"]
    assert error["phase"] == "launch" and "Block pointers have been removed" in error["message"]
    assert error["line"] == line_of(BLOCK_POINTERS, "block = tl.make_block_ptr(")
    assert "tl.make_tensor_descriptor" in error["hint"] and "Triton 3.9" in error["hint"]


@needs_block_pointers()
def test_a_block_pointer_load_without_its_boundary_check_is_a_named_out_of_bounds_error():
    error = run_spec(block_pointer_spec(BLOCK_POINTERS.replace("boundary_check=(0, 1), ", "")))["error"]
    assert error["type"] == "OutOfBounds" and "`x`" in error["message"]
    assert error["line"] == line_of(BLOCK_POINTERS, "acc += tl.sum(tl.load(block")


DESCRIBED = """
@triton.jit
def row_sums_described(x_ptr, out_ptr, M, N, stride_m, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    pid = tl.program_id(0)
    x = tl.make_tensor_descriptor(x_ptr, shape=[M, N], strides=[stride_m, 1], block_shape=[BLOCK_M, BLOCK_N])
    acc = tl.zeros((BLOCK_M,), dtype=tl.float32)
    for k in range(0, tl.cdiv(N, BLOCK_N)):
        acc += tl.sum(x.load([pid * BLOCK_M, k * BLOCK_N]), axis=1)
    rows = pid * BLOCK_M + tl.arange(0, BLOCK_M)
    tl.store(out_ptr + rows, acc, mask=rows < M)
"""


def test_a_tensor_descriptor_walks_a_matrix_in_the_interpreter_traced_as_the_tensor_it_describes():
    # What replaces block pointers (Triton 3.9 removed them): the tiles past the matrix's edge read zeros.
    result = ok(run_spec(spec(DESCRIBED, "row_sums_described", {"x": "torch.randn(19, 44)", "out": "torch.empty(19)"},
                              {"x_ptr": "x", "out_ptr": "out", "M": 19, "N": 44, "stride_m": "x.stride(0)",
                               "BLOCK_M": 8, "BLOCK_N": 16},
                              "(triton.cdiv(M, meta['BLOCK_M']),)", {"out": "x.sum(1)"}, atol=1e-4, trace=True)))
    last = result["trace"]["programs"][2]["accesses"]
    assert [(a["op"], a["tensor"]) for a in last] == [("load", "x")] * 3 + [("store", "out")]
    assert last[0]["offsets"] == [[704, 16], [748, 16], [792, 16]]  # rows 16-18 of 19, columns 0-15
    assert last[0]["line"] == line_of(DESCRIBED, "x.load(")


TENSOR_DESCRIPTORS = """
from triton.tools.tensor_descriptor import TensorDescriptor


@triton.jit
def scale_tiles(in_desc, out_desc, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    off_m = tl.program_id(0) * BLOCK_M
    off_n = tl.program_id(1) * BLOCK_N
    tile = in_desc.load([off_m, off_n])
    out_desc.store([off_m, off_n], tile * 3)
"""


@pytest.mark.gpu
def test_tensor_descriptors_load_and_store_tiles_on_a_gpu():
    ok(run_spec(spec(TENSOR_DESCRIPTORS, "scale_tiles", {"x": "torch.randn(64, 96)", "y": "torch.empty(64, 96)"},
                     {"in_desc": "TensorDescriptor.from_tensor(x, [16, 32])",
                      "out_desc": "TensorDescriptor.from_tensor(y, [16, 32])", "BLOCK_M": 16, "BLOCK_N": 32},
                     "(4, 3)", {"y": "x * 3"}, device="gpu")))


# -- no internal exception reaches a person

def test_an_exception_of_the_playground_itself_is_a_bug_report(monkeypatch):
    # A bug of ours: provenance names an access site the analysis does not have, and the tracer's
    # own lookup of it fails.
    monkeypatch.setattr(provenance, "site_tensors", lambda analysis, args, tensors: {10750112: "x"})
    error = run_spec(spec(PRINT_AND_ASSERT, "checked_double", {"x": "torch.rand(8) + 1", "out": "torch.empty(8)"},
                          {"x_ptr": "x", "out_ptr": "out", "n": 8, "BLOCK": 8}, "(1,)", {"out": "x * 2"},
                          device="interpreter"))["error"]
    assert error["type"] == "PlaygroundBug" and error["phase"] == "sandbox"
    assert error["message"].startswith("the playground failed while launching the kernel (IndexError")
    assert "link" in error["hint"]


def test_an_exception_in_the_users_own_code_names_its_phase_and_line_not_a_bug(monkeypatch):
    source = PRINT_AND_ASSERT + "\n\ndef expected(x):\n    return {}['missing']\n"
    raw = spec(source, "checked_double", {"x": "torch.rand(8) + 1", "out": "torch.empty(8)"},
               {"x_ptr": "x", "out_ptr": "out", "n": 8, "BLOCK": 8}, "(1,)", {"out": "expected(x)"},
               device="interpreter")
    error = run_spec(raw)["error"]
    assert error["type"] != "PlaygroundBug" and error["phase"] == "check"
    assert error["field"] == "reference.out" and "missing" in error["message"]
    monkeypatch.setattr(pipeline.Run, "references", lambda self, before: expected_of_user(self))
    error = run_spec(raw)["error"]
    assert error["type"] == "KeyError" and error["phase"] == "check"
    assert error["line"] == line_of(source, "return {}['missing']")


def expected_of_user(run):
    """The user's reference function called directly, so its exception is not a stage's to wrap."""
    import torch
    return {"out": run.namespace["expected"](torch.ones(8))}
