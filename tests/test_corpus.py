"""Kernels we did not write: those of installed Triton libraries (tests/corpus), each launched as its
library's wrapper launches it. Each runs `ok`, checked against PyTorch and traced; and with the mask
of one of its stores removed (at test time, in the source's text) it stops with the out-of-bounds
error that names the program, the tensor and the line."""
import pytest

from sandbox.pipeline import run_spec
from tests.corpus import fla, liger, without_store_mask

ENTRIES = {**liger.ENTRIES, **fla.ENTRIES}

# Kernels that cannot run as written, and why: each test of theirs is expected to fail.
GAPS = {
    "liger.softmax_multi_block_forward": "calls tl.max(m, blk_max), a reduction whose axis is a tensor (the "
                                         "maximum of two values is tl.maximum): an error in the kernel itself",
}
NAMES = [pytest.param(name, marks=pytest.mark.xfail(reason=GAPS[name], strict=True)) if name in GAPS else name
         for name in ENTRIES]


@pytest.mark.parametrize("name", NAMES)
def test_a_library_kernel_runs_ok_checked_and_traced(name):
    result = run_spec(ENTRIES[name].spec(trace=True, check=True))
    assert result["error"] is None, result["error"]
    assert result["status"] == "ok", result["check"]
    assert result["trace"]["programs"] and result["check"]["ok"]


@pytest.mark.parametrize("name", NAMES)
def test_a_library_kernel_without_a_store_mask_is_a_named_out_of_bounds_error(name):
    entry = ENTRIES[name]
    source, line = without_store_mask(entry.source(), entry.kernel, entry.store_pointer())
    error = run_spec(entry.spec(source))["error"]
    assert error is not None and error["type"] == "OutOfBounds", error
    assert error["phase"] == "launch" and error["line"] == line
    assert f"`{entry.overrun}`" in error["message"] and isinstance(error["pid"], list)
