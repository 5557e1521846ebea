"""The IR pane's data: triton.compile for an NVIDIA target, with or without a GPU on the host."""
import textwrap

import pytest
import torch
import triton

from sandbox.errors import RunError
from sandbox.launch import ir as ir_module
from sandbox.launch.ir import compile_ir, parse_arch
from tests.support.kernels import VECTOR_ADD, vector_add_spec

LOAD_X_LINE = 10  # `x = tl.load(...)` in VECTOR_ADD

ROW_SUM = textwrap.dedent('''\
    import triton
    import triton.language as tl


    @triton.jit
    def row_sum_kernel(a_ptr, out_ptr, N, BLOCK_N: tl.constexpr):
        row = tl.program_id(0)
        cols = tl.arange(0, BLOCK_N)
        a = tl.load(a_ptr + row * N + cols, mask=cols < N, other=0.0)
        tl.store(out_ptr + row, tl.sum(a, axis=0))
    ''')
SUM_LINE = 10


def write(tmp_path, source, name="kernel.py"):
    path = tmp_path / name
    path.write_text(source)
    return str(path)


def vector_add_args(n=1000, block=1024):
    x = torch.randn(n)
    return {"x_ptr": x, "y_ptr": x, "out_ptr": torch.empty(n), "n": n, "BLOCK_SIZE": block}


@pytest.fixture(scope="module")
def vector_add_sm90(tmp_path_factory):
    path = write(tmp_path_factory.mktemp("ir"), VECTOR_ADD)
    return path, compile_ir(path, "add_kernel", vector_add_args(), arch="sm90")


def test_vector_add_gives_every_stage_for_sm90(vector_add_sm90):
    _, ir = vector_add_sm90
    assert ir["target"] == "sm90"
    for stage in ("ttir", "ttgir", "llir", "ptx"):
        assert "add_kernel" in ir[stage], stage
    assert "tt.load" in ir["ttir"] and "#ttg.blocked" in ir["ttgir"]
    assert ".target sm_90" in ir["ptx"]
    assert ir["shared_bytes"] == 0  # a vector add needs no shared memory
    assert ir["compile_ms"] > 0


@pytest.mark.skipif(ir_module.disassembly_tools() is None, reason="no nvdisasm or cuobjdump")
def test_vector_add_sass_and_registers(vector_add_sm90):
    _, ir = vector_add_sm90
    lines = ir["sass"].split("\n")
    assert lines[0] == ".target sm_90a" and "add_kernel:" in lines and "LDG" in ir["sass"]
    assert "/* 0x" not in ir["sass"] and ".section" not in ir["sass"]  # the code alone
    assert "SYMBOLS" not in ir["sass"] and ".text.add_kernel:" not in lines
    assert 0 < ir["n_regs"] <= 255 and ir["n_spills"] == 0


def test_line_map_points_ir_lines_at_the_source(vector_add_sm90):
    path, ir = vector_add_sm90
    line_map = ir["line_map"]
    assert set(line_map) == {"ttir", "ttgir", "llir", "ptx"}
    for stage, lines in line_map.items():
        assert LOAD_X_LINE in lines.values(), stage
        assert set(lines.values()) <= set(range(5, 13)), stage  # only lines of the kernel
    ttir = ir["ttir"].split("\n")
    first_load = next(i for i, text in enumerate(ttir) if "tt.load" in text)
    assert line_map["ttir"][first_load] == LOAD_X_LINE


def test_code_inlined_from_triton_maps_to_the_users_call(tmp_path):
    ir = compile_ir(write(tmp_path, ROW_SUM), "row_sum_kernel",
                    {"a_ptr": torch.randn(64), "out_ptr": torch.empty(4), "N": 16, "BLOCK_N": 16})
    for stage, lines in ir["line_map"].items():
        assert max(lines.values()) <= SUM_LINE, stage  # nothing from triton's own files
        assert SUM_LINE in lines.values(), stage
    ttir = ir["ttir"].split("\n")
    reduce_line = next(i for i, text in enumerate(ttir) if '"tt.reduce"' in text)
    assert ir["line_map"]["ttir"][reduce_line] == SUM_LINE


def test_arch_sm80_changes_the_ptx_target(tmp_path):
    ir = compile_ir(write(tmp_path, VECTOR_ADD), "add_kernel", vector_add_args(), arch="sm80")
    assert ir["target"] == "sm80"
    assert ".target sm_80" in ir["ptx"] and ".target sm_90" not in ir["ptx"]


def test_num_warps_reaches_the_layout(tmp_path):
    ir = compile_ir(write(tmp_path, VECTOR_ADD), "add_kernel", vector_add_args(), num_warps=8, arch="sm90")
    assert '"ttg.num-warps" = 8' in ir["ttgir"]


def test_int_arguments_divisible_by_16_are_specialised_as_the_jit_does(tmp_path):
    path = write(tmp_path, VECTOR_ADD)
    aligned = compile_ir(path, "add_kernel", vector_add_args(n=1024), arch="sm90")["ttir"]
    unaligned = compile_ir(path, "add_kernel", vector_add_args(n=1000), arch="sm90")["ttir"]
    assert "%n: i32 {tt.divisibility = 16 : i32}" in aligned
    assert "%n: i32 {tt.divisibility" not in unaligned
    assert "%x_ptr: !tt.ptr<f32> {tt.divisibility = 16 : i32}" in unaligned


def test_arange_of_3_is_refused_with_the_beginner_hint_and_line(tmp_path):
    source = VECTOR_ADD.replace("tl.arange(0, BLOCK_SIZE)", "tl.arange(0, 3)")
    with pytest.raises(RunError) as caught:
        compile_ir(write(tmp_path, source), "add_kernel", vector_add_args(block=3), arch="sm90")
    error = caught.value
    assert error.phase == "compile"
    assert error.line == 8  # offs = pid * BLOCK_SIZE + tl.arange(0, 3)
    assert "power of 2" in error.message and "triton.next_power_of_2" in error.hint


def test_error_in_a_helper_reports_the_helpers_line(tmp_path):
    source = VECTOR_ADD.replace("@triton.jit\ndef add_kernel", textwrap.dedent('''\
        @triton.jit
        def block_offsets(pid, BLOCK_SIZE: tl.constexpr):
            return pid * BLOCK_SIZE + tl.arange(0, 3)


        @triton.jit
        def add_kernel''')).replace("pid * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)", "block_offsets(pid, BLOCK_SIZE)")
    with pytest.raises(RunError) as caught:
        compile_ir(write(tmp_path, source), "add_kernel", vector_add_args(), arch="sm90")
    assert caught.value.line == 7 and "power of 2" in caught.value.message


def test_compiles_a_real_kernel_while_the_interpreter_is_on(tmp_path):
    before = triton.knobs.runtime.interpret
    triton.knobs.runtime.interpret = True
    try:
        ir = compile_ir(write(tmp_path, VECTOR_ADD), "add_kernel", vector_add_args(), arch="sm90")
        assert triton.knobs.runtime.interpret is True
    finally:
        triton.knobs.runtime.interpret = before
    assert "tt.load" in ir["ttir"]


def test_an_autotuned_kernels_ir_is_that_of_the_config_that_ran():
    # In the interpreter the first config runs: its BLOCK_SIZE and its num_warps, not options.num_warps.
    from sandbox.run.pipeline import run_spec
    spec = vector_add_spec(n=1000, source=VECTOR_ADD.replace("@triton.jit", textwrap.dedent('''\
        @triton.autotune(configs=[triton.Config({"BLOCK_SIZE": 256}, num_warps=2),
                                  triton.Config({"BLOCK_SIZE": 512}, num_warps=8)], key=["n"])
        @triton.jit''')), ir=True, bench=False, device="interpreter", num_warps=4)
    del spec["args"]["BLOCK_SIZE"]
    spec["grid"] = "lambda meta: (triton.cdiv(meta['n'], meta['BLOCK_SIZE']),)"
    result = run_spec(spec)
    assert result["status"] == "ok", result["error"]
    assert "tensor<256xf32" in result["ir"]["ttir"] and '"ttg.num-warps" = 2' in result["ir"]["ttgir"]


@pytest.mark.gpu
def test_on_a_gpu_the_ir_is_the_kernel_the_launch_compiled_not_a_compile_of_its_own():
    """The autotuner's chosen config's own CompiledKernel: nothing compiled again for the IR pane."""
    from sandbox.run.pipeline import run_spec
    spec = vector_add_spec(n=100_000, source=VECTOR_ADD.replace("@triton.jit", textwrap.dedent('''\
        @triton.autotune(configs=[triton.Config({"BLOCK_SIZE": 256}, num_warps=2),
                                  triton.Config({"BLOCK_SIZE": 512}, num_warps=8)], key=["n"])
        @triton.jit''')), ir=True, bench=True, device="gpu")
    del spec["args"]["BLOCK_SIZE"]
    spec["grid"] = "lambda meta: (triton.cdiv(meta['n'], meta['BLOCK_SIZE']),)"
    result = run_spec(spec)
    assert result["status"] == "ok", result["error"]
    [chosen] = [row["config"] for row in result["timings"]["autotune"] if row["chosen"]]
    assert result["ir"]["compile_ms"] == 0.0 and result["ir"]["sass"]
    assert f"tensor<{chosen['BLOCK_SIZE']}xf32" in result["ir"]["ttir"]
    assert f'"ttg.num-warps" = {chosen["num_warps"]}' in result["ir"]["ttgir"]


def test_heuristics_fill_their_meta_parameter(tmp_path):
    source = VECTOR_ADD.replace("@triton.jit", textwrap.dedent('''\
        @triton.heuristics({"BLOCK_SIZE": lambda args: triton.next_power_of_2(args["n"]) // 4})
        @triton.jit'''))
    args = vector_add_args(n=1000)
    del args["BLOCK_SIZE"]
    ir = compile_ir(write(tmp_path, source), "add_kernel", args, arch="sm90")
    assert "tensor<256xf32" in ir["ttir"]


def test_unknown_kernel_name_is_a_compile_error(tmp_path):
    with pytest.raises(RunError) as caught:
        compile_ir(write(tmp_path, VECTOR_ADD), "no_such_kernel", {}, arch="sm90")
    assert caught.value.phase == "compile" and "no_such_kernel" in caught.value.message


def test_arch_spellings():
    assert parse_arch("sm90") == parse_arch("sm_90a") == parse_arch("90") == 90
    assert parse_arch("sm100") == 100
    with pytest.raises(RunError):
        parse_arch("hopper")


@pytest.mark.gpu
def test_default_arch_is_the_local_gpu_and_registers_match_a_launch(tmp_path):
    path = write(tmp_path, VECTOR_ADD)
    args = {k: v.cuda() if isinstance(v, torch.Tensor) else v for k, v in vector_add_args().items()}
    ir = compile_ir(path, "add_kernel", args)
    major, minor = torch.cuda.get_device_capability()
    assert ir["target"] == f"sm{major}{minor}"

    import importlib.util
    spec = importlib.util.spec_from_file_location("launched_kernel", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    compiled = module.add_kernel[(1,)](**args)
    assert ir["n_regs"] == compiled.n_regs and ir["n_spills"] == compiled.n_spills


def test_line_map_survives_triton_serving_the_ir_from_its_cache(tmp_path):
    (tmp_path / "first").mkdir()
    (tmp_path / "second").mkdir()
    compile_ir(write(tmp_path / "first", VECTOR_ADD), "add_kernel", vector_add_args(), arch="sm90")
    # Same source elsewhere: triton's cache answers with IR that names the first file.
    ir = compile_ir(write(tmp_path / "second", VECTOR_ADD, "job.py"), "add_kernel", vector_add_args(), arch="sm90")
    for stage, lines in ir["line_map"].items():
        assert LOAD_X_LINE in lines.values(), stage


def test_ir_names_the_users_file_without_its_scratch_directory(tmp_path):
    path = write(tmp_path, VECTOR_ADD)
    ir = compile_ir(path, "add_kernel", vector_add_args(), arch="sm90")
    for stage in ("ttir", "ttgir", "llir", "ptx"):
        assert "/kernel.py" not in ir[stage] and str(tmp_path) not in ir[stage], stage
    assert 'loc("kernel.py":' in ir["ttir"] and '.file\t1 "kernel.py"' in ir["ptx"]
    assert 'DIFile(filename: "kernel.py", directory: ".")' in ir["llir"]
    assert LOAD_X_LINE in ir["line_map"]["ptx"].values()  # the map still reads the full paths


def test_ir_served_from_the_cache_hides_the_first_runs_directory_too(tmp_path):
    (tmp_path / "first").mkdir()
    (tmp_path / "second").mkdir()
    compile_ir(write(tmp_path / "first", VECTOR_ADD), "add_kernel", vector_add_args(), arch="sm90")
    ir = compile_ir(write(tmp_path / "second", VECTOR_ADD), "add_kernel", vector_add_args(), arch="sm90")
    for stage in ("ttir", "ttgir", "llir", "ptx"):  # the cached IR names an earlier run's file
        assert "/kernel.py" not in ir[stage], stage


# ---- what is derived from a compiled kernel, kept by the digest of its bytes ----

def test_the_sass_and_line_maps_of_a_kernel_compiled_before_come_from_the_cache(tmp_path, monkeypatch):
    import sandbox.launch.ir as ir
    monkeypatch.setenv("TRITON_CACHE_DIR", str(tmp_path / "cache"))
    path = write(tmp_path, VECTOR_ADD + "\n# derived once\n")
    first = compile_ir(path, "add_kernel", vector_add_args(), arch="sm90")
    if first["notes"]:
        pytest.skip(f"no SASS on this host: {first['notes']}")

    def no_tool(*_):
        raise AssertionError("cuobjdump ran again for a kernel it had listed")

    monkeypatch.setattr(ir, "inspect_cubin", no_tool)
    again = compile_ir(path, "add_kernel", vector_add_args(), arch="sm90")
    for field in ("sass", "n_regs", "n_spills", "line_map", "ttir", "ptx"):
        assert again[field] == first[field], field


def test_a_kept_entry_that_is_not_one_is_derived_again(tmp_path, monkeypatch):
    import sandbox.launch.ir as ir
    monkeypatch.setenv("TRITON_CACHE_DIR", str(tmp_path / "cache"))
    path = write(tmp_path, VECTOR_ADD + "\n# derived twice\n")
    first = compile_ir(path, "add_kernel", vector_add_args(), arch="sm90")
    kept = list((tmp_path / "cache").glob(f"*/{ir.DERIVED_FILE}"))
    if first["notes"]:
        assert kept == []  # a tool that failed is never remembered
        return
    assert len(kept) == 1
    kept[0].write_text('{"sass": "forged", "usage": {"REG": "many"}}')
    again = compile_ir(path, "add_kernel", vector_add_args(), arch="sm90")
    assert again["sass"] == first["sass"] and again["n_regs"] == first["n_regs"]


BOGUS_ASM = textwrap.dedent('''\
    import triton
    import triton.language as tl


    @triton.jit
    def bogus_asm(x_ptr, out_ptr):
        offs = tl.arange(0, 32)
        x = tl.load(x_ptr + offs)
        y = tl.inline_asm_elementwise("bogus.op $0, $1;", "=r,r", [x], dtype=tl.int32, is_pure=True, pack=1)
        tl.store(out_ptr + offs, y)
    ''')


def int_args():
    return {"x_ptr": torch.zeros(32, dtype=torch.int32), "out_ptr": torch.zeros(32, dtype=torch.int32)}


def test_a_failure_inside_tritons_compiler_names_the_version_the_stage_and_what_to_try(tmp_path):
    """The front end accepts inline assembly it cannot read; ptxas, at the end of the pipeline, refuses it."""
    with pytest.raises(RunError) as caught:
        compile_ir(write(tmp_path, BOGUS_ASM), "bogus_asm", int_args(), arch="sm90")
    error = caught.value
    assert error.phase == "compile" and error.type == "PTXASError"
    assert f"Triton {triton.__version__}'s compiler failed at its SASS (ptxas) stage" in error.message
    assert "bogus" in error.message  # ptxas's own words stay
    assert "ptxas refused the PTX" in error.hint and f"Triton {triton.__version__}" in error.hint


@pytest.mark.gpu
def test_a_launch_that_fails_inside_tritons_compiler_is_explained_on_a_gpu():
    from sandbox.run.pipeline import run_spec
    raw = {"version": 1, "source": BOGUS_ASM, "kernel": "bogus_asm",
           "inputs": {"x": "torch.zeros(32, dtype=torch.int32)", "y": "torch.zeros(32, dtype=torch.int32)"},
           "args": {"x_ptr": "x", "out_ptr": "y"}, "grid": "(1,)", "reference": {"y": "x"},
           "options": {"ir": False, "bench": False, "device": "gpu"}}
    error = run_spec(raw)["error"]
    assert error["phase"] == "compile" and "SASS (ptxas) stage" in error["message"]
    assert f"Triton {triton.__version__}" in error["hint"]


def test_a_disassembly_started_as_the_kernel_compiled_is_the_one_the_ir_shows(tmp_path, monkeypatch):
    """A run starts nvdisasm on the cubin its launch's compile made (~0.5 s, beside the check and the
    timing); the IR step collects that one instead of starting another, and shows the same."""
    from sandbox.launch import ir
    if ir.disassembly_tools() is None:
        pytest.skip("no nvdisasm or cuobjdump")
    monkeypatch.setenv("TRITON_CACHE_DIR", str(tmp_path / "cache"))  # nothing derived and kept yet
    kernel = ir.find_kernel(ir.load_module(write(tmp_path, VECTOR_ADD), interpret=False), "add_kernel")
    signature, constexprs, attrs = ir.specialize(kernel.jit, vector_add_args())
    compiled = triton.compile(ir.ASTSource(kernel.jit, signature, constexprs=constexprs, attrs=attrs),
                              target=ir.GPUTarget("cuda", 90, 32))
    ir.disassemble_early(compiled)
    assert len(ir._early) == 1
    started = next(iter(ir._early.values()))
    sass, usage = ir.inspect_cubin(compiled.asm["cubin"], [])
    assert not ir._early and started.file.closed  # collected, not started again
    assert sass == ir.Disassembly(ir.disassembly_tools(), compiled.asm["cubin"]).result([])[0]
    assert sass and "LDG" in sass and usage["REG"] > 0


def test_a_one_is_compiled_in_only_where_its_parameter_may_be_specialized(tmp_path):
    """As Triton's JIT: an int argument of 1 becomes a constant, but not for a do_not_specialize
    parameter (the GPU tracer's builds keep every integer dynamic), whose signature stays i32."""
    from sandbox.launch import ir
    source = textwrap.dedent("""
        import triton
        import triton.language as tl

        @triton.jit(do_not_specialize=["n"])
        def scale(x_ptr, n, stride, BLOCK: tl.constexpr):
            offs = tl.arange(0, BLOCK)
            tl.store(x_ptr + offs * stride, tl.load(x_ptr + offs * stride, mask=offs < n) * 2, mask=offs < n)
        """)
    kernel = ir.find_kernel(ir.load_module(write(tmp_path, source), interpret=False), "scale")
    signature, constexprs, _ = ir.specialize(kernel.jit, {"x_ptr": torch.zeros(4), "n": 1, "stride": 1, "BLOCK": 4})
    assert signature["n"] == "i32" and (1,) not in constexprs
    assert signature["stride"] == "constexpr" and constexprs[(2,)] == 1
