"""A pass of Triton's compiler that fails is explained: the version, the stage, the pass, its own words
(which it writes to stderr, from C++), the user's line and what to try; never "PassManager::run failed".

Two kernels, written here, that Triton's front end accepts and a pass rejects (for sm90, on this CPU
host; on Triton 3.9.0 and 3.7.1 alike): a loop marked for warp specialization whose tiles are plain
loads (the TTGIR stage's NVGPUWarpSpecialization: "unsupported load type for producer commit"), and a
float64 tensor cast straight to float8 (the LLIR stage's ConvertTritonGPUToLLVM: "Unsupported
conversion from f64 to f8E5M2")."""
import json
import os
import subprocess
import sys
import textwrap
import threading

import pytest
import torch
import triton

from sandbox import tritons
from sandbox.errors import RunError, diagnostic_hint, read_diagnostic
from sandbox.launch import compiler_output
from sandbox.launch.ir import compile_ir
from tests.support.tritons import require_extra

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

WARP_SPECIALIZED = textwrap.dedent('''\
    import triton
    import triton.language as tl


    @triton.jit
    def split_loop(a_ptr, b_ptr, out_ptr, K):
        offs = tl.arange(0, 64)
        acc = tl.zeros((64, 64), dtype=tl.float32)
        for k in tl.range(0, K, 64, warp_specialize=True):
            a = tl.load(a_ptr + offs[:, None] * K + k + offs[None, :])
            b = tl.load(b_ptr + (k + offs[:, None]) * 64 + offs[None, :])
            acc += tl.dot(a, b)
        tl.store(out_ptr + offs[:, None] * 64 + offs[None, :], acc)
    ''')
WARP_SPECIALIZED_DEF = 6  # the diagnostic's location: the kernel's `def`

TO_FP8 = textwrap.dedent('''\
    import triton
    import triton.language as tl


    @triton.jit
    def to_fp8(x_ptr, out_ptr):
        offs = tl.arange(0, 128)
        x = tl.load(x_ptr + offs)
        tl.store(out_ptr + offs, x.to(tl.float8e5).to(tl.float32))
    ''')


def write(tmp_path, source):
    path = tmp_path / "kernel.py"
    path.write_text(source)
    return str(path)


def split_loop_args(k=128):
    a = torch.zeros(64, k, dtype=torch.float16)
    return {"a_ptr": a, "b_ptr": a, "out_ptr": torch.zeros(64, 64), "K": k}


def test_the_launchs_own_compile_is_explained_too(tmp_path, capfd):
    """The compile a launch makes (Triton's JIT, here for the stand-in driver's sm90 target) is
    captured as the IR's is: a GPU run's compile error says the same."""
    from sandbox.launch.kernel import find_kernel, launch_error, load_module
    from sandbox.launch.launcher import compile_launch
    path = write(tmp_path, WARP_SPECIALIZED)
    kernel = find_kernel(load_module(path, interpret=False), "split_loop")
    with pytest.raises(RuntimeError) as caught:
        compile_launch(kernel, (1, 1, 1), split_loop_args(), {"num_warps": 4, "num_stages": 3})
    error = launch_error(caught.value, path, "launch")
    assert_explained(error, triton.__version__, "TTGIR", "NVGPUWarpSpecialization")
    assert error.line == WARP_SPECIALIZED_DEF and "num_warps=8" in error.hint
    assert "reproducer" not in capfd.readouterr().err


def split_loop_spec(**options):
    return {"version": 1, "source": WARP_SPECIALIZED, "kernel": "split_loop",
            "inputs": {"a": "torch.randn(64, 128, dtype=torch.float16)",
                       "b": "torch.randn(128, 64, dtype=torch.float16)", "out": "torch.zeros(64, 64)"},
            "args": {"a_ptr": "a", "b_ptr": "b", "out_ptr": "out", "K": 128}, "grid": "(1,)",
            "reference": {"out": "a.float() @ b.float()"}, "options": {"bench": False, **options}}


def assert_explained(error, version, stage, pass_name):
    assert error.phase == "compile" and error.type == "CompilerPassFailed"
    assert f"Triton {version}'s compiler failed at its {stage} stage (at line " in error.message
    assert f"in its pass {pass_name}: " in error.message
    for text in (error.message, error.hint):
        assert "PassManager" not in text and "Traceback" not in text
    assert f"Triton {version}" in error.hint


def test_a_failed_pass_names_the_version_the_stage_the_pass_its_words_the_line_and_what_to_try(tmp_path, capfd):
    with pytest.raises(RunError) as caught:
        compile_ir(write(tmp_path, WARP_SPECIALIZED), "split_loop", split_loop_args(), arch="sm90")
    error = caught.value
    assert_explained(error, triton.__version__, "TTGIR", "NVGPUWarpSpecialization")
    assert "unsupported load type for producer commit" in error.message  # the pass's own words
    assert error.line == WARP_SPECIALIZED_DEF and error.field is None
    assert "warp_specialize=True" in error.hint and "num_stages=1" in error.hint
    # The compiler's report (its errors, the module it dumps as a reproducer) is the error's, not stderr's.
    assert "reproducer" not in capfd.readouterr().err


def test_what_the_hint_proposes_compiles(tmp_path):
    """Measured: the same loop compiles with num_stages=1, and with num_warps=8."""
    path = write(tmp_path, WARP_SPECIALIZED)
    assert "warp_specialize" in compile_ir(path, "split_loop", split_loop_args(), arch="sm90", num_stages=1)["ttir"]
    assert compile_ir(path, "split_loop", split_loop_args(), arch="sm90", num_warps=8)["ptx"]


def test_a_conversion_the_gpu_lowering_lacks_is_named_with_the_way_around_it(tmp_path):
    args = {"x_ptr": torch.zeros(128, dtype=torch.float64), "out_ptr": torch.zeros(128)}
    with pytest.raises(RunError) as caught:
        compile_ir(write(tmp_path, TO_FP8), "to_fp8", args, arch="sm90")
    error = caught.value
    assert_explained(error, triton.__version__, "LLIR", "ConvertTritonGPUToLLVM")
    assert "Unsupported conversion from f64 to f8E5M2" in error.message
    assert "convert through float32" in error.hint
    fixed = TO_FP8.replace("x.to(tl.float8e5)", "x.to(tl.float32).to(tl.float8e5)")
    assert compile_ir(write(tmp_path, fixed), "to_fp8", args, arch="sm90")["ptx"]


def test_a_run_on_this_host_shows_the_failed_pass_as_its_ir(tmp_path):
    """The interpreter runs the kernel (it has no warp specializer); the IR pane's compile for sm90 fails
    and says why, beside an otherwise good run."""
    from sandbox.run.pipeline import run_spec
    result = run_spec(split_loop_spec(ir=True, device="interpreter", arch="sm90"))
    assert result["status"] == "ok", result["error"]
    error = result["ir"]["error"]
    assert error["type"] == "CompilerPassFailed" and error["line"] == WARP_SPECIALIZED_DEF
    assert "TTGIR stage" in error["message"] and "NVGPUWarpSpecialization" in error["message"]
    assert "PassManager" not in error["message"]


@pytest.mark.integration
def test_a_jailed_run_shows_the_failed_pass_and_prints_none_of_its_report(client):
    """Through the server: the run process, in its jail, keeps the report for the error, not its output."""
    response = client.post("/api/run", json=split_loop_spec(ir=True, device="interpreter", arch="sm90"))
    result = response.get_json()
    assert result["status"] == "ok", result["error"]
    error = result["ir"]["error"]
    assert error["type"] == "CompilerPassFailed" and "NVGPUWarpSpecialization" in error["message"]
    assert error["line"] == WARP_SPECIALIZED_DEF
    assert "reproducer" not in result["stdout"] and "LLVM ERROR" not in result["stdout"]


def test_the_other_triton_version_is_explained_and_named_too(tmp_path):
    """A worker of an added version runs with its directory first on Python's path: so does this compile."""
    version = require_extra()
    path = write(tmp_path, TO_FP8)
    code = textwrap.dedent(f'''\
        import json, torch
        from sandbox.errors import RunError
        from sandbox.launch.ir import compile_ir
        try:
            compile_ir({path!r}, "to_fp8", {{"x_ptr": torch.zeros(128, dtype=torch.float64),
                       "out_ptr": torch.zeros(128)}}, arch="sm90")
        except RunError as e:
            print(json.dumps(e.to_dict()))
        ''')
    environ = {**os.environ, "PYTHONPATH": os.pathsep.join([tritons.directory(version), ROOT])}
    done = subprocess.run([sys.executable, "-c", code], env=environ, cwd=ROOT, capture_output=True, text=True,
                          timeout=300)
    error = RunError(**{k: v for k, v in json.loads(done.stdout.strip().splitlines()[-1]).items()
                        if k in ("phase", "message", "type", "hint", "line", "field")})
    assert_explained(error, version, "LLIR", "ConvertTritonGPUToLLVM")
    assert "f64 to f8E5M2" in error.message


@pytest.mark.gpu
def test_a_form_run_whose_launch_fails_in_a_pass_is_explained_on_a_gpu():
    from sandbox.run.pipeline import run_spec
    if torch.cuda.get_device_capability() != (9, 0):
        pytest.skip("the warp specializer fails this loop on sm90 (Hopper)")
    error = run_spec(split_loop_spec(ir=False, device="gpu"))["error"]
    assert error["phase"] == "compile" and error["type"] == "CompilerPassFailed"
    assert "TTGIR stage" in error["message"] and "NVGPUWarpSpecialization" in error["message"]
    assert error["line"] == WARP_SPECIALIZED_DEF and "PassManager" not in error["message"]
    assert f"Triton {triton.__version__}" in error["hint"] and "warp_specialize=True" in error["hint"]


# ---------------------------------------------------------------- the capture of stderr

def test_compiles_at_once_each_keep_their_own_failure_and_nothing_else_is_swallowed(capfd):
    """Two compiles overlap on threads; the first fails and ends while the second runs on, and the
    person's program prints (to stdout and stderr) meanwhile."""
    both_in, printed = threading.Barrier(2), threading.Event()
    caught = {}

    def failing():
        try:
            with compiler_output.captured():
                both_in.wait()
                os.write(2, b"kernel.py:7:3: error: the failing compile's diagnostic\n")
                raise RuntimeError("PassManager::run failed")
        except RuntimeError as e:
            caught["failing"] = e

    def succeeding():
        with compiler_output.captured():
            both_in.wait()
            threads[0].join()
            os.write(2, b"a warning of the compile that succeeded\n")
            printed.wait()

    threads = [threading.Thread(target=failing), threading.Thread(target=succeeding)]
    for thread in threads:
        thread.start()
    threads[0].join()
    print("a print of the program's", flush=True)
    sys.stderr.write("the program's own line on stderr\n")
    printed.set()
    threads[1].join()
    report = caught["failing"].compiler_report
    assert "the failing compile's diagnostic" in report and "succeeded" not in report and "program" not in report
    out, err = capfd.readouterr()
    assert out == "a print of the program's\n"
    assert "a warning of the compile that succeeded" in err and "the program's own line on stderr" in err
    assert "the failing compile's diagnostic" not in err
    os.write(2, b"after\n")
    assert capfd.readouterr().err == "after\n"  # fd 2 is back


def test_every_compile_a_launch_makes_is_captured():
    compiler_output.install()
    compiler_output.install()
    import triton.compiler
    assert triton.compiler.compile.captured and not hasattr(triton.compiler.compile.__wrapped__, "captured")


# ---------------------------------------------------------------- reading the diagnostic

KERNEL = "/runs/r1/kernel.py"


def test_a_pass_error_at_the_users_line_comes_before_mlirs_generic_words():
    report = textwrap.dedent(f'''\
        loc("{KERNEL}":14:20): error: failed to legalize operation 'tt.fancy_op' that was explicitly marked illegal
        {KERNEL}:5:0: error: Failures have been detected while processing an MLIR pass pipeline
        {KERNEL}:5:0: note: Pipeline failed while executing [`ConvertTritonGPUToLLVM` on 'builtin.module' operation]: reproducer generated at `std::errs, please share the reproducer above with Triton project.`
        ''')
    found = read_diagnostic(report, KERNEL)
    assert found.errors == ["failed to legalize operation 'tt.fancy_op' that was explicitly marked illegal"]
    assert found.line == 14 and found.failed_pass == "ConvertTritonGPUToLLVM"
    assert "no lowering of tt.fancy_op for this target" in diagnostic_hint(found)


def test_llvms_fatal_error_keeps_the_line_that_said_what_it_was_about():
    report = textwrap.dedent(f'''\
        Unsupported conversion from f64 to f8E5M2 with rounding mode rtne
        LLVM ERROR: Unsupported rounding mode for conversion.
        module {{
          tt.func public @to_fp8(%arg0: !tt.ptr<f64>) {{
            tt.return loc(#loc1)
          }}
        }}
        #loc1 = loc("{KERNEL}":9:4)
        {KERNEL}:6:1: error: Failures have been detected while processing an MLIR pass pipeline
        def to_fp8(x_ptr, out_ptr):
        ^
        ''')
    found = read_diagnostic(report, KERNEL)
    assert found.errors == ["Unsupported conversion from f64 to f8E5M2 with rounding mode rtne",
                            "LLVM ERROR: Unsupported rounding mode for conversion."]
    assert found.line == 6  # the generic error's, the only one located, in the kernel
    assert found.failed_pass is None


def test_a_location_in_another_file_names_no_line_of_the_users():
    report = ('/usr/lib/python3/site-packages/triton/language/standard.py:40:8: error: a helper of Triton\'s failed\n'
              f'{KERNEL}:12:4: note: called from\n')
    found = read_diagnostic(report, KERNEL)
    assert found.errors == ["a helper of Triton's failed"] and found.line is None


def test_the_generic_words_stand_alone_when_nothing_else_is_said_and_long_words_are_cut():
    only_generic = f"{KERNEL}:3:1: error: Failures have been detected while processing an MLIR pass pipeline\n"
    found = read_diagnostic(only_generic, KERNEL)
    assert found.said.startswith("Failures have been detected") and found.line == 3
    assert read_diagnostic("", KERNEL).said is None
    long = read_diagnostic("error: " + "x" * 5000 + "\n", KERNEL).said
    assert len(long) <= 600 and long.endswith("…")
