"""A/B compare and the sweep: options.sweep in the spec and the run process (a row per
configuration, checked and timed, the fastest beyond the noise), and the Compare tab in a browser
(pin, change BLOCK_SIZE, see the differences; sweep and see the table)."""
import os

import pytest

from sandbox import sweep as sweeps
from sandbox.spec import SpecError, normalize
from tests.helpers import vector_add_spec

RUN_TIMEOUT_MS = 60_000
SHOTS = "/tmp/shots"


def timed(median, p20, p80, status="ok"):
    return {"config": {}, "status": status, "kernel_ms": {"median": median, "p20": p20, "p80": p80, "n": 20},
            "gbps": None, "error": None}


def test_sweep_is_checked_in_the_spec():
    spec = vector_add_spec()
    assert normalize({**spec, "options": {"sweep": {"BLOCK_SIZE": [256, 1024], "num_warps": [2, 4]}}})["options"]["sweep"]
    for sweep, field, words in [
        ({"num_warps": [3]}, "options.sweep.num_warps", "power of 2"),
        ({"num_stages": [0]}, "options.sweep.num_stages", "from 1 to 8"),
        ({"BLOCK_SIZE": []}, "options.sweep.BLOCK_SIZE", "non-empty list"),
        ({"BLOCK_SIZE": [1, 2, 3, 4, 5], "num_warps": [1, 2, 4, 8]}, "options.sweep", "20 configurations"),
        ([256], "options.sweep", "must map"),
    ]:
        with pytest.raises(SpecError, match=words) as raised:
            normalize({**spec, "options": {"sweep": sweep}})
        assert raised.value.field == field


def test_best_is_the_fastest_matching_row_and_says_if_it_is_beyond_the_noise():
    assert sweeps.best([timed(2.0, 1.9, 2.1), timed(1.0, 0.9, 1.1), timed(0.5, 0.4, 0.6, status="mismatch")]) == (1, True)
    assert sweeps.best([timed(1.02, 0.95, 1.1), timed(1.0, 0.97, 1.05)]) == (1, False)
    assert sweeps.best([{**timed(1.0, 1.0, 1.0), "kernel_ms": {"median": 1.0, "p20": 1.0, "p80": 1.0, "n": 1}}]) == (None, False)


def test_a_sweep_in_the_interpreter_checks_every_configuration():
    from sandbox.pipeline import run_spec
    spec = vector_add_spec(n=1000, block=256, device="interpreter")
    result = run_spec({**spec, "options": {**spec["options"], "sweep": {"BLOCK_SIZE": [128, 3], "num_warps": [2, 4]}}})
    assert result["status"] == "ok" and result["trace"]["grid"] == [4, 1, 1]  # the spec's own launch, traced
    sweep = result["sweep"]
    assert sweep["params"] == ["BLOCK_SIZE", "num_warps"] and sweep["interpreter"] and sweep["best"] is None
    assert [r["config"] for r in sweep["rows"]] == [{"BLOCK_SIZE": 128, "num_warps": 2}, {"BLOCK_SIZE": 128, "num_warps": 4},
                                                    {"BLOCK_SIZE": 3, "num_warps": 2}, {"BLOCK_SIZE": 3, "num_warps": 4}]
    assert [r["status"] for r in sweep["rows"]] == ["ok", "ok", "error", "error"]
    assert "power of 2" in sweep["rows"][2]["error"]["message"]
