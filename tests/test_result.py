"""The result's one definition (sandbox.result) catches a result that drifts from it."""
import copy

from sandbox import result as results
from sandbox.errors import RunError
from sandbox.run.pipeline import run_spec
from tests.support.kernels import vector_add_spec


def test_a_real_result_conforms_and_every_drift_is_named():
    result = run_spec(vector_add_spec(n=64, block=16, device="interpreter"))
    assert result["status"] == "ok" and results.problems(result) == []
    drifted = copy.deepcopy(result)
    del drifted["timings"]["gbps"]
    drifted["trace"]["extra"] = 1
    drifted["check"]["outputs"]["out"]["mismatched"] = "0"
    assert results.problems(drifted) == ["result.timings.gbps is missing", "result.trace.extra is not part of the result",
                                         "result.check.outputs.out.mismatched is a str"]


def test_an_error_result_carries_its_fields_not_text():
    result = results.failed(RunError("build", "argument 'n' of add_kernel is not mapped", field="args.n"))
    assert results.problems(result) == []
    assert result["error"] == {"phase": "build", "type": "RunError", "message": "argument 'n' of add_kernel is not mapped",
                               "hint": None, "line": None, "pid": None, "field": "args.n", "launch": None}
    result["status"] = "ok"
    assert results.problems(result) == ["result.error must be set exactly when result.status is 'error'"]


def test_a_build_error_names_its_field_and_line():
    spec = vector_add_spec(n=64, block=16, device="interpreter")
    spec["args"]["n"] = "x.numel() + missing"
    error = run_spec(spec)["error"]
    assert (error["phase"], error["field"], error["type"]) == ("build", "args.n", "NameError")
    spec = vector_add_spec(n=64, block=16, device="interpreter", source="def broken(:\n")
    error = run_spec(spec)["error"]
    assert (error["phase"], error["field"], error["line"]) == ("parse", "source", 1)


def test_the_browser_tests_fake_results_conform_too():
    from tests.support.results_by_hand import ALL_RESULTS, ALL_TRACES, OLD_SHAPE_ERROR
    for fake in ALL_RESULTS:
        assert results.problems(fake) == [], fake
    for trace in ALL_TRACES:
        assert results.problems({**results.new(), "trace": trace}) == []
    assert results.problems(OLD_SHAPE_ERROR)  # kept to show the page copes with an older server
