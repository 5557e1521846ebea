"""The launch pass (sandbox.run.launch_pass): a form run and script mode make their launches by the
same steps, with one set of fallbacks, each overriding only what differs for it."""
import types

import pytest

from sandbox.errors import RunError
from sandbox.run.capture import Capture
from sandbox.run.launch_pass import GPU_TRACER_OFF, INSTRUMENTED_BUILD_FAILED, Launch, LaunchPass
from sandbox.run.pipeline import Run
from sandbox.run.script_gpu import GpuCapture

SHARED_STEPS = ("unseen_by_gpu", "sanitize_on_gpu", "launch_failed", "ir_of")


class CompilationError(Exception):
    """Named as Triton's: what a build that does not compile raises."""


class Recorded(LaunchPass):
    """A pass whose fallback says what it was given."""

    def __init__(self, limits=None):
        super().__init__("/nowhere/kernel.py", {"trace": True, "trace_pid": None}, limits or {})
        self.unseen = []

    def unseen_on_gpu(self, why, launch):
        self.unseen.append((why, launch))
        return "fallback"


def tracer(unsupported=None):
    return types.SimpleNamespace(unsupported=unsupported)


def raising(exc):
    def check():
        raise exc
    return check


LAUNCH = Launch(kernel=None, arguments={}, tensors={}, grid=(1, 1, 1))


def test_every_run_makes_its_launch_by_the_one_pass_and_overrides_only_its_fallback():
    for run in (Run, Capture, GpuCapture):
        assert issubclass(run, LaunchPass)
        assert not any(step in vars(run) for step in SHARED_STEPS), run
    assert "unseen_on_gpu" in vars(Run) and "unseen_on_gpu" in vars(GpuCapture)


def test_a_launch_the_gpu_tracer_checks_returns_its_trace_with_the_real_compile_beside_it():
    compiled = []
    run = Recorded()
    assert run.sanitize_on_gpu(tracer(), lambda: "trace", LAUNCH, lambda: compiled.append(True)) == ("trace", True)
    assert compiled == [True] and run.unseen == []


@pytest.mark.parametrize("limits, tracer_of, check, why", [
    ({"gpu_tracer": False}, tracer(), lambda: "trace", GPU_TRACER_OFF),
    ({}, tracer("tl.inline_asm_elementwise at line 4"), lambda: "trace",
     "the GPU tracer cannot see tl.inline_asm_elementwise at line 4"),
    ({}, tracer(), raising(CompilationError("no")), INSTRUMENTED_BUILD_FAILED),
])
def test_a_launch_the_gpu_tracer_cannot_check_goes_to_the_runs_fallback_saying_why(limits, tracer_of, check, why):
    run = Recorded(limits)
    assert run.sanitize_on_gpu(tracer_of, check, LAUNCH) == ("fallback", False)
    assert run.unseen == [(why, LAUNCH)]


def test_an_out_of_bounds_check_stops_the_launch_and_any_other_failure_is_the_launchs():
    run = Recorded()
    out = RunError("launch", "out of bounds", type="OutOfBounds")
    with pytest.raises(RunError) as raised:
        run.sanitize_on_gpu(tracer(), raising(out), LAUNCH)
    assert raised.value is out
    with pytest.raises(RunError) as raised:
        run.sanitize_on_gpu(tracer(), raising(ZeroDivisionError("division by zero")), LAUNCH)
    assert raised.value.phase == "launch" and raised.value.type == "ZeroDivisionError"
    assert run.unseen == []


def test_the_real_launchs_compile_error_is_the_compiles_and_an_ir_that_fails_is_shown():
    run = Recorded()
    assert run.launch_failed(CompilationError("bad")).phase == "compile"
    assert run.launch_failed(ValueError("bad")).phase == "launch"
    assert run.ir_of(lambda: {"ttir": "..."}) == {"ttir": "..."}
    failed = run.ir_of(raising(RunError("compile", "unknown GPU architecture 'sm7'")))
    assert failed["error"]["phase"] == "compile" and "sm7" in failed["error"]["message"]
