"""Warnings are part of the result: Python's and Triton's warnings raised while a run compiles and
runs the user's code reach `result.warnings` at the user's line (else Triton's file and line), one
entry per warning and place with its count, bounded in number and length (sandbox.launch.warned)."""
import torch

from sandbox import result as results
from sandbox.launch.ir import compile_ir
from sandbox.launch.kernel import write_source
from sandbox.run.pipeline import run_spec
from sandbox.launch.warned import MAX_MESSAGE, MAX_WARNINGS, Warned
from tests.support import ROOT, needs_block_pointers

HEADER = "import torch\nimport triton\nimport triton.language as tl\n"
DEPRECATED = HEADER + """
@triton.jit
def double(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n, other=0.0)
    y = tl.view(x, (BLOCK,))
    tl.store(out_ptr + offs, y * 2, mask=offs < n)
"""
VIEW_LINE = DEPRECATED.splitlines().index("    y = tl.view(x, (BLOCK,))") + 1


def spec(source=DEPRECATED, **options):
    return {"version": 1, "source": source, "kernel": "double", "inputs": {"x": "torch.randn(40)", "out": "torch.empty(40)"},
            "args": {"x_ptr": "x", "out_ptr": "out", "n": 40, "BLOCK": 16}, "grid": "(3,)",
            "reference": {"out": "x * 2"},
            "options": {"device": "interpreter", "ir": False, "bench": False, **options}}


def test_a_deprecated_call_in_the_kernel_is_a_warning_at_its_line_once_with_its_count():
    result = run_spec(spec())
    assert result["status"] == "ok" and not results.problems(result)
    [warning] = result["warnings"]
    assert warning["category"] == "UserWarning" and "view is deprecated" in warning["message"]
    assert warning["line"] == VIEW_LINE and warning["where"] is None
    assert warning["count"] == 3  # once per program: the interpreter runs the call three times


def test_a_run_without_warnings_has_none():
    result = run_spec(spec(DEPRECATED.replace("tl.view(x, (BLOCK,))", "tl.reshape(x, (BLOCK,))")))
    assert result["status"] == "ok" and result["warnings"] == []


def test_a_warning_of_the_compiler_is_at_the_line_it_was_compiling(tmp_path, monkeypatch):
    monkeypatch.setenv("TRITON_CACHE_DIR", str(tmp_path / "cache"))  # compiled afresh: a cached kernel warns of nothing
    path = str(tmp_path / "kernel.py")
    write_source(DEPRECATED, path)
    warned = Warned(path)
    with warned.catching():
        compile_ir(path, "double", {"x_ptr": torch.empty(40), "out_ptr": torch.empty(40), "n": 40, "BLOCK": 16})
    [warning] = warned.entries()
    assert "view is deprecated" in warning["message"] and warning["line"] == VIEW_LINE


def test_a_warning_whose_stack_never_reaches_the_users_file_is_triton_s_at_its_place_or_none(tmp_path):
    import warnings
    import triton
    warned = Warned(str(tmp_path / "kernel.py"))
    with warned.catching():
        warnings.warn_explicit("from Triton", DeprecationWarning, triton.language.core.__file__, 7)
        warnings.warn_explicit("from a library at the playground's call", UserWarning, torch.__file__, 9)
        warnings.warn_explicit("from the playground", UserWarning, f"{ROOT}/sandbox/trace/record.py", 9)
    [warning] = warned.entries()  # the others are none of the person's business
    assert warning["category"] == "DeprecationWarning" and warning["line"] is None
    assert warning["where"] == "triton/language/core.py:7"  # no server path


def test_warnings_are_bounded_in_number_and_length():
    source = DEPRECATED + "\nimport warnings\nfor i in range(30):\n    warnings.warn(f'{i} ' + 'x' * 2000)\n"
    result = run_spec(spec(source.replace("tl.view(x, (BLOCK,))", "tl.reshape(x, (BLOCK,))")))
    assert result["status"] == "ok" and not results.problems(result)
    assert len(result["warnings"]) == MAX_WARNINGS
    assert all(len(w["message"]) == MAX_MESSAGE and w["message"].endswith("…") for w in result["warnings"])
    assert "10 more warnings raised" in " ".join(result["notes"])


def test_a_script_programs_warnings_reach_its_result():
    source = DEPRECATED + """
x = torch.randn(40)
out = torch.empty(40)
double[(3,)](x, out, 40, BLOCK=16)
"""
    result = run_spec({"version": 1, "mode": "script", "source": source,
                       "options": {"device": "interpreter", "ir": False, "bench": False}})
    assert result["error"] is None, result["error"]
    [warning] = result["warnings"]
    assert warning["line"] == VIEW_LINE and warning["count"] == 3


def test_a_program_replayed_step_by_step_raises_its_warning_once():
    result = run_spec(spec(step_pid=[1, 0, 0]))
    assert result["error"] is None and result["steps"]["steps"]
    [warning] = result["warnings"]
    assert warning["line"] == VIEW_LINE and warning["count"] == 1


@needs_block_pointers()
def test_a_block_pointer_warns_of_its_deprecation_at_its_line_where_triton_still_has_them():
    from tests.test_semantics import BLOCK_POINTERS, block_pointer_spec, line_of
    result = run_spec(block_pointer_spec())
    assert result["status"] == "ok"
    [warning] = [w for w in result["warnings"] if "make_block_ptr is deprecated" in w["message"]]
    assert warning["line"] == line_of(BLOCK_POINTERS, "block = tl.make_block_ptr(") and warning["count"] == 3


def test_the_interpreters_arithmetic_warns_of_no_overflow_a_gpu_computes_silently():
    result = run_spec(spec(DEPRECATED.replace("tl.view(x, (BLOCK,))", "tl.exp(x * 1000.0) - tl.exp(x * 1000.0)"),
                           check=False))
    assert result["status"] == "ok" and result["warnings"] == []  # inf - inf: NaN, as on a GPU, unremarked
