"""The examples gallery: every example lists, loads, normalizes, runs and passes its check."""
import pytest

from app.gallery import list_examples, load_example
from sandbox.result import problems
from sandbox.run.pipeline import run_spec
from sandbox.spec import normalize

EXAMPLES = [example["name"] for example in list_examples()]
# Examples whose point is a failing check: the learner has to find out why.
BUGGY = {"find_the_bug"}


def test_gallery_lists_at_least_eleven_titled_examples_in_order():
    examples = list_examples()
    assert len(examples) >= 11
    assert len(set(EXAMPLES)) == len(EXAMPLES)
    assert EXAMPLES[:2] == ["vector_add", "masked_tail"]
    for example in examples:
        assert example["title"] and not set(example["title"]) <= set("=")
        assert len(example["summary"]) > 40, example["name"]


@pytest.mark.parametrize("name", EXAMPLES)
def test_example_loads_with_its_source_and_a_normalized_spec(name):
    example = load_example(name)
    listed = next(e for e in list_examples() if e["name"] == name)
    assert {k: example[k] for k in ("name", "title", "summary")} == listed
    spec = example["spec"]
    assert normalize(spec) == spec
    assert f"def {spec['kernel']}(" in spec["source"]
    assert "RUN = {" not in spec["source"]
    assert spec["source"].endswith("\n") and not spec["source"].endswith("\n\n")


@pytest.mark.parametrize("name", ["no_such_example", "../app/gallery", "01_vector_add", "vector_add.py",
                                  "kernels/vector_add", "", None])
def test_unknown_or_unsafe_names_give_none(name):
    assert load_example(name) is None


@pytest.mark.parametrize("name", EXAMPLES)
def test_example_runs_and_passes_its_check(name):
    result = run_spec(load_example(name)["spec"])
    assert result["error"] is None, result["error"]
    assert problems(result) == []  # trace, check, timings and IR as the result's definition says
    if name in BUGGY:
        assert result["status"] == "mismatch"
        assert not result["check"]["ok"]
        assert sum(o["unwritten"] for o in result["check"]["outputs"].values()) > 0
    else:
        assert result["status"] == "ok", result["check"]
        assert result["check"]["ok"]


def test_masked_tail_shows_the_last_program_with_two_masked_lanes():
    result = run_spec(load_example("masked_tail")["spec"])
    trace = result["trace"]
    assert trace["grid"] == [3, 1, 1]
    last = next(p for p in trace["programs"] if p["pid"] == [2, 0, 0])
    store = next(a for a in last["accesses"] if a["op"] == "store" and a["tensor"] == "out")
    assert store["offsets"] == [[8, 2]]
    assert store["masked"] == [[10, 2]]


def test_fused_relu_moves_the_bytes_of_the_matmul_alone():
    # The lesson of matmul_relu: fusing the ReLU adds no memory traffic (unfused: C twice more).
    moved = {name: run_spec(load_example(name)["spec"])["timings"] for name in ("matmul", "matmul_relu")}
    assert moved["matmul"]["bytes_source"] == moved["matmul_relu"]["bytes_source"] == "trace"
    assert moved["matmul_relu"]["bytes"] == moved["matmul"]["bytes"] == 163840
