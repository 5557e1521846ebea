import math

import torch

from sandbox.run.check import compare, tolerances


def test_exact_match_is_ok():
    x = torch.randn(100)
    report = compare({"out": x.clone()}, {"out": x}, poisoned=set())
    assert report["ok"] and report["outputs"]["out"]["mismatched"] == 0


def test_unwritten_poisoned_elements_are_counted_apart():
    expected = torch.randn(10)
    actual = expected.clone()
    actual[7:] = float("nan")  # poison left in place: the kernel never wrote them
    out = compare({"out": actual}, {"out": expected}, poisoned={"out"})["outputs"]["out"]
    assert not out["ok"]
    assert out["unwritten"] == 3 and out["mismatched"] == 3
    assert out["max_abs_err"] == 0.0  # the written part is right


def test_errors_and_tolerances_by_dtype():
    expected = torch.ones(4, dtype=torch.float16)
    actual = expected + torch.tensor([0, 0, 0, 0.01], dtype=torch.float16)
    out = compare({"o": actual}, {"o": expected}, poisoned=set())["outputs"]["o"]
    assert out["mismatched"] == 1 and math.isclose(out["max_abs_err"], 0.01, rel_tol=0.05)
    assert tolerances(torch.float32) == (1e-5, 1.3e-6)
    loose = compare({"o": actual}, {"o": expected}, poisoned=set(), atol=0.1)["outputs"]["o"]
    assert loose["ok"] and loose["atol"] == 0.1


def test_integer_outputs_use_a_sentinel():
    expected = torch.arange(6, dtype=torch.int32)
    actual = expected.clone()
    actual[0] = torch.iinfo(torch.int32).min
    out = compare({"o": actual}, {"o": expected}, poisoned={"o"})["outputs"]["o"]
    assert out["unwritten"] == 1 and not out["ok"]
