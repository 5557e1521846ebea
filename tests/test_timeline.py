"""The timeline: regions read from the source and turned into Proton's scopes, the option refused
where there is no GPU (a script's: tests/test_script_timeline.py), and a record made on a GPU
(checked in under tests/data/timeline) decoded into the result's part."""
import ast
import gzip
import json
import os

import pytest

from sandbox import result as results
from sandbox.spec import SpecError, normalize
from sandbox.timeline import part, record, regions
from tests.support.kernels import VECTOR_ADD, vector_add_spec

DATA = os.path.join(os.path.dirname(__file__), "data", "timeline")
MARKED = VECTOR_ADD.replace("    x = tl.load(", "    # region: loads\n    x = tl.load(").replace(
    "    tl.store(", "    # endregion\n    # region: store\n    tl.store(") + "    # endregion\n"


def line_of(source, start):
    return next(i for i, line in enumerate(source.split("\n"), 1) if line.strip().startswith(start))


def test_markers_become_scopes_on_their_own_lines():
    instrumented = regions.instrument(MARKED, "add_kernel")
    assert [(r.name, r.lines, r.marked) for r in instrumented.regions] == [
        ("loads", [line_of(MARKED, "x = tl.load"), line_of(MARKED, "y = tl.load")], True),
        ("store", [line_of(MARKED, "tl.store")] * 2, True)]
    before, after = MARKED.split("\n"), instrumented.source.split("\n")
    assert after[:len(before)] != before and len(after) == len(before) + 2  # the import, at the end
    for number, text in enumerate(before, 1):
        if "region" not in text:
            assert after[number - 1] == text  # every other line where it was: the compiler's lines are the source's
    assert after[line_of(MARKED, "# region: loads") - 1].strip() == f"{regions.PROTON}.enter_scope('loads')"
    ast.parse(instrumented.source)


def test_a_source_without_markers_times_the_kernel_and_its_top_level_loops():
    source = VECTOR_ADD.replace("    tl.store(", "    for i in range(2):\n        x += 1\n    tl.store(")
    instrumented = regions.instrument(source, "add_kernel")
    loop = line_of(source, "for i in")
    assert [(r.name, r.lines, r.marked) for r in instrumented.regions] == [
        ("kernel", [line_of(source, "pid ="), line_of(source, "tl.store")], False),
        (f"loop at line {loop}", [loop, loop + 1], False)]
    tree = ast.parse(instrumented.source)
    calls = [node.value.func.attr for node in ast.walk(tree) if isinstance(node, ast.Expr)
             and isinstance(node.value, ast.Call) and isinstance(node.value.func, ast.Attribute)
             and node.value.func.attr.endswith("_scope")]
    assert calls == ["enter_scope", "enter_scope", "exit_scope", "exit_scope"]


def test_an_early_return_stays_before_the_kernel_region():
    source = VECTOR_ADD.replace("    offs = pid", "    if pid >= n:\n        return\n    offs = pid")
    kernel, = regions.instrument(source, "add_kernel").regions
    assert kernel.lines[0] == line_of(source, "offs = pid")


@pytest.mark.parametrize("source, words", [
    (VECTOR_ADD.replace("    x = tl.load(", "    # region: a\n    x = tl.load("), "has no '# endregion'"),
    (VECTOR_ADD.replace("    x = tl.load(", "    # endregion\n    x = tl.load("), "closes no region"),
    (VECTOR_ADD + "# region: outside\n", "outside a @triton.jit function"),
    (VECTOR_ADD.replace("    x = tl.load(", "    # region: a\n    if n > 0:\n        x = tl.load(")
     .replace("    y = tl.load(", "        # endregion\n    y = tl.load("), "must end in the block it begins in"),
])
def test_markers_that_cannot_be_timed_are_refused_naming_the_problem(source, words):
    with pytest.raises(regions.RegionError, match=words):
        regions.instrument(source, "add_kernel")


def test_the_option_is_a_boolean_of_form_runs_and_scripts_alike():
    assert normalize(vector_add_spec())["options"]["timeline"] is False
    with pytest.raises(SpecError, match="options.timeline must be true or false"):
        normalize(vector_add_spec(timeline="yes"))
    assert normalize({"mode": "script", "source": "print(1)", "options": {"timeline": True}})["options"]["timeline"]
    with pytest.raises(SpecError, match="options.timeline must be true or false"):
        normalize({"mode": "script", "source": "print(1)", "options": {"timeline": 1}})


@pytest.mark.cpu_only
def test_without_a_gpu_the_timeline_is_refused_with_a_note_and_the_run_goes_on():
    from sandbox.run.pipeline import run_spec
    result = run_spec(vector_add_spec(n=10, block=4, source=MARKED, timeline=True))
    assert result["status"] == "ok" and result["timeline"] is None and results.problems(result) == []
    assert any(note.startswith("No timeline: a timeline needs a GPU") for note in result["notes"])
    assert result["check"]["ok"]  # the markers are comments: the interpreter runs the kernel as written


def recorded():
    with gzip.open(os.path.join(DATA, "layer_norm.rawbuf.gz")) as f:
        raw = f.read()
    with open(os.path.join(DATA, "layer_norm.json")) as f:
        return raw, json.load(f)


def test_a_record_made_on_a_gpu_decodes_into_every_program_with_its_warps():
    raw, made = recorded()
    programs = record.decode(raw)
    timeline = made["timeline"]
    assert len(programs) == timeline["programs_total"] == 264
    assert sorted(p.block for p in programs) == list(range(264))
    assert all(0 <= p.sm < timeline["sm_count"] and p.end_ns > p.start_ns for p in programs)
    for p in programs:
        assert len(p.warps) == timeline["num_warps"] and p.dropped == 0
        assert all([scope for scope, _, _ in warp] == [0, 1, 2] and all(s < e for _, s, e in warp) for warp in p.warps)


def test_the_part_built_from_the_record_is_the_one_the_run_sent():
    raw, made = recorded()
    timeline = made["timeline"]
    again = part.build(record.decode(raw), [regions.Region(r["name"], r["lines"], r["marked"]) for r in timeline["regions"]],
                       timeline["grid"], timeline["num_warps"], timeline["clock"]["ghz"], timeline["sm_count"],
                       timeline["kernel_ns"] / 1e6)
    assert results._problems(again, results.TIMELINE, "timeline") == []
    assert again["bars"] == timeline["bars"] and again["summary"]["slowest"] == timeline["summary"]["slowest"]
    assert abs(sum(r["share"] for r in again["summary"]["regions"]) - 1) < 0.25  # the marked regions cover the body


def test_past_the_limits_programs_are_sampled_and_the_slowest_kept(monkeypatch):
    raw, _ = recorded()
    programs = record.decode(raw)
    monkeypatch.setattr(part, "MAX_BARS", 100)
    monkeypatch.setattr(part, "MAX_DETAILED", 10)
    timeline = part.build(programs, [regions.Region(n, [1, 1]) for n in "abc"], [264, 1, 1], 4, 1.98, 132, None)
    assert timeline["sampled"] and len(timeline["bars"]) <= 100 and len(timeline["programs"]) <= 10
    slowest = timeline["summary"]["slowest"]["block"]
    assert slowest in {bar[0] for bar in timeline["bars"]} and slowest in {p["block"] for p in timeline["programs"]}
    assert timeline["overhead"] is None and "264 programs" in timeline["notes"][0]


def test_a_record_of_another_layout_is_refused():
    with pytest.raises(record.RecordError):
        record.decode(b"\x02\x00\x00\x00" + bytes(60))


def test_a_sweeps_configurations_record_no_timeline_only_the_specs_own_launch_does():
    from sandbox.run import sweep
    spec = normalize(vector_add_spec(timeline=True, sweep={"BLOCK_SIZE": [256, 512]}))
    assert all(sweep.config_spec(spec, config)["options"]["timeline"] is False for config in sweep.configs(spec["options"]["sweep"]))
