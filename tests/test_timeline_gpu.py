"""The timeline run on a GPU (`pytest -m gpu`): Proton's record of a real launch, through the real
server and its jailed workers, and through the run pipeline."""
import pytest
import torch

from app.gallery import load_example
from sandbox import result as results
from sandbox.run.pipeline import run_spec
from tests.support.kernels import VECTOR_ADD, vector_add_spec
from tests.test_timings import AUTOTUNED_ADD, HEURISTIC_ADD, without_block_size

pytestmark = pytest.mark.gpu

MARKED = VECTOR_ADD.replace("    x = tl.load(", "    # region: loads\n    x = tl.load(").replace(
    "    tl.store(", "    # endregion\n    # region: store\n    tl.store(") + "    # endregion\n"


def timeline_of(result):
    assert result["status"] == "ok", result["error"]
    assert results.problems(result) == []
    timeline = result["timeline"]
    assert timeline is not None, result["notes"]
    return timeline


def check_shape(timeline, programs, regions):
    """Every program recorded, each on an SM the device has, each detailed one with one list of
    spans per warp; the regions those of the source."""
    assert timeline["programs_total"] == programs
    assert [r["name"] for r in timeline["regions"]] == regions
    sm_count = torch.cuda.get_device_properties(0).multi_processor_count
    assert timeline["sm_count"] == sm_count
    assert all(0 <= sm < sm_count for _, sm, _, _ in timeline["bars"])
    assert {block for block, _, _, _ in timeline["bars"]} <= set(range(programs))
    for program in timeline["programs"]:
        assert len(program["warps"]) == timeline["num_warps"]
        for warp in program["warps"]:
            assert {span[0] for span in warp} == set(range(len(regions)))
            for _, start, end, start_ns, end_ns in warp:
                assert 0 <= start <= end and start_ns <= end_ns
    assert timeline["total_ns"] > 0 and timeline["clock"]["ghz"] > 0.3
    assert abs(sum(r["share"] for r in timeline["summary"]["regions"])) > 0


def test_a_marked_kernel_has_its_regions_on_their_lines_through_the_server(client):
    spec = vector_add_spec(n=1 << 20, source=MARKED, timeline=True)
    response = client.post("/api/run", json=spec)
    timeline = timeline_of(response.get_json())
    check_shape(timeline, 1024, ["loads", "store"])
    lines = MARKED.split("\n")
    loads, store = (r["lines"] for r in timeline["regions"])
    assert lines[loads[0] - 1].strip().startswith("x = tl.load") and lines[loads[1] - 1].strip().startswith("y = tl.load")
    assert lines[store[0] - 1].strip().startswith("tl.store") and store[0] == store[1]
    assert timeline["kernel_ns"] > 0 and timeline["overhead"] is not None


def test_without_markers_the_kernel_and_its_loop_are_timed():
    spec = load_example("matmul")["spec"]
    spec["inputs"] = {"a": "torch.randn(512, 256)", "b": "torch.randn(256, 512)", "c": "torch.empty(512, 512)"}
    spec["options"] = {**spec.get("options", {}), "timeline": True}
    timeline = timeline_of(run_spec(spec))
    loop = next(i for i, line in enumerate(spec["source"].split("\n"), 1) if line.strip().startswith("for k in"))
    check_shape(timeline, 256, ["kernel", f"loop at line {loop}"])
    kernel, looped = timeline["regions"]
    assert looped["lines"][0] == loop and kernel["lines"][0] < loop <= kernel["lines"][1]
    assert not kernel["marked"] and timeline["grid"] == [16, 16, 1]
    assert timeline["programs"][0]["pid"] == [0, 0, 0]


def test_an_early_return_stays_outside_the_kernel_region():
    source = VECTOR_ADD.replace("    offs = pid", "    if pid * BLOCK_SIZE >= n:\n        return\n    offs = pid")
    timeline = timeline_of(run_spec(vector_add_spec(n=4096, block=256, source=source, timeline=True)))
    check_shape(timeline, 16, ["kernel"])
    lines = source.split("\n")
    assert lines[timeline["regions"][0]["lines"][0] - 1].strip().startswith("offs = pid")


def test_past_its_limit_the_programs_are_sampled_and_the_summary_covers_all():
    timeline = timeline_of(run_spec(vector_add_spec(n=1 << 24, source=MARKED, timeline=True)))
    assert timeline["programs_total"] == 16384 and timeline["sampled"]
    assert 8000 <= len(timeline["bars"]) <= 8192 and 40 <= len(timeline["programs"]) <= 48
    assert any("drawn" in note for note in timeline["notes"])
    assert timeline["clock"]["source"] == "measured"  # many programs ran one after another on each SM


@pytest.mark.parametrize("source", [AUTOTUNED_ADD, HEURISTIC_ADD], ids=["autotuned", "heuristics"])
def test_the_config_that_ran_is_the_one_timed(source):
    """An autotuned kernel's timeline is of the config the autotuner chose (not tuned again under
    the instrumentation); a heuristic's meta-parameter is the one it gives."""
    spec = without_block_size(vector_add_spec(n=1 << 16, source=source, timeline=True))
    result = run_spec(spec)
    timeline = timeline_of(result)
    if source is AUTOTUNED_ADD:
        chosen = next(row for row in result["timings"]["autotune"] if row["chosen"])["config"]
        block, warps = chosen["BLOCK_SIZE"], chosen["num_warps"]
    else:
        block, warps = (1 << 16) // 4, 4
    assert timeline["num_warps"] == warps
    check_shape(timeline, (1 << 16) // block, ["kernel"])
