"""A script's timeline against a program written to defeat it: definitions that never end when they
are loaded again for the timeline (a class body is code), so the timeline step hangs. The step is one
of the page's own, bounded by SCRIPT_STEPS_S: it is stopped and the program's result delivered whole.
On a GPU (`pytest -m gpu`): on a CPU host no timeline is attempted (tests/test_script_timeline.py)."""
import pytest

from tests.support.apps import running_app
from tests.test_script import run_script

pytestmark = pytest.mark.gpu

HANGS_WHEN_LOADED_AGAIN = '''import pathlib
import time

import torch
import triton
import triton.language as tl


class Trap:  # its body runs whenever the definitions are loaded: once the program has run, forever
    while pathlib.Path(__file__).with_name("program-ran").exists():
        time.sleep(0.1)


@triton.jit
def copy_kernel(x_ptr, out_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, tl.load(x_ptr + offs))


x = torch.arange(256, dtype=torch.float32, device="cuda")
out = torch.empty_like(x)
copy_kernel[(1,)](x, out, BLOCK=256)
assert torch.equal(out, x)
pathlib.Path(__file__).with_name("program-ran").write_text("it ran")
print("copied")
'''


def test_definitions_that_hang_when_loaded_for_the_timeline_leave_the_programs_result_whole(tmp_path):
    with running_app(tmp_path, WORKERS=1, SCRIPT_STEPS_S=3.0) as app:
        result, _ = run_script(app, HANGS_WHEN_LOADED_AGAIN, timeline=True)
        again, _ = run_script(app, "print('the worker serves on')")
    assert result["status"] == "ok", result["error"]
    assert "copied" in result["stdout"] and result["launches"]["total"] == 1 and result["trace"] is not None
    assert result["timeline"] is None and result["ir"] is None  # the timeline's step was stopped, the IR's never began
    assert any("recording a timeline of launch 0" in note and "SCRIPT_STEPS_S" in note for note in result["notes"])
    assert again["status"] == "ok" and "the worker serves on" in again["stdout"]
