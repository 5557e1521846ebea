"""Script mode's timeline: the shown launch of a program (the one its run details, or one selected and
replayed alone) gets the `timeline` part a form run's launch gets (sandbox.timeline.run), streamed
as a part; on a host without a GPU a note says why there is none. The GPU tests run on a GPU host
(`pytest -m gpu`)."""
import pytest

from app import socketio
from sandbox import result as results
from sandbox.launch_form import definitions
from sandbox.run.pipeline import run_spec
from sandbox.timeline import regions
from sandbox.timeline.run import NO_GPU
from sandbox.worker.kept_launches import program_key
from tests.support.apps import running_app
from tests.test_script import run_script
from tests.test_timeline_gpu import check_shape

# Two launches of one kernel whose regions are marked: launch 0 (4 programs) is the one shown by
# default (the first launch of the kernel launched last), launch 1 (16 programs) one to select.
PROGRAM = '''import torch
import triton
import triton.language as tl

DEVICE = triton.runtime.driver.active.get_active_torch_device()


@triton.jit
def scale_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    # region: load
    x = tl.load(x_ptr + offs, mask=mask)
    # endregion
    # region: store
    tl.store(out_ptr + offs, x * 2, mask=mask)
    # endregion


small = torch.arange(4096, dtype=torch.float32, device=DEVICE)
large = torch.arange(16384, dtype=torch.float32, device=DEVICE)
outs = [torch.empty_like(small), torch.empty_like(large)]
scale_kernel[(4,)](small, outs[0], small.numel(), BLOCK=1024)
scale_kernel[(16,)](large, outs[1], large.numel(), BLOCK=1024)
assert torch.equal(outs[0], small * 2) and torch.equal(outs[1], large * 2)
print("scaled")
'''
KEPT = {"kept_inputs_bytes": 1 << 20}


def script(**options):
    return {"mode": "script", "source": PROGRAM, "options": options}


def listed_then_replayed(tmp_path, launch, emitted=None, **options):
    """(the listing run's result, launch `launch` replayed alone from the inputs it kept): as a
    worker does it, the replay's run given the listing run's scratch dir, where the inputs were kept."""
    first = run_spec(script(**options), scratch=str(tmp_path), limits=KEPT)
    assert first["status"] == "ok", first["error"]
    record = first["launches"]["list"][launch]
    emit = (lambda type, content: emitted.append((type, content))) if emitted is not None else None
    shown = run_spec(script(launch=launch, **options), emit, scratch=str(tmp_path), limits=KEPT,
                     replay={"launch": record})
    return first, shown


def line_of(start):
    return next(i for i, line in enumerate(PROGRAM.split("\n"), 1) if line.strip().startswith(start))


def test_a_programs_regions_are_read_from_its_definitions_on_the_programs_own_lines():
    """What a script's timeline instruments (its definitions, as a replay loads them): the kernel's
    regions, the one closed after its last statement too, on the program's lines."""
    for in_place in (True, False):
        kept = definitions(PROGRAM, in_place=in_place)
        assert kept.rstrip().endswith("# endregion") and "scaled" not in kept
    instrumented = regions.instrument(definitions(PROGRAM, in_place=True), "scale_kernel")
    assert [(r.name, r.lines) for r in instrumented.regions] == [
        ("load", [line_of("x = tl.load")] * 2), ("store", [line_of("tl.store")] * 2)]
    # A comment after a definition, not under it, is not the definition's.
    source = PROGRAM.replace("    # endregion\n\n\nsmall", "    # endregion\n# the program\n\nsmall")
    assert source != PROGRAM and definitions(source).rstrip().endswith("    # endregion")


# -- on a host without a GPU


@pytest.mark.cpu_only
def test_on_a_cpu_host_a_scripts_timeline_is_refused_with_the_form_runs_note(capsys):
    result = run_spec(script(timeline=True))
    assert result["status"] == "ok", result["error"]
    assert results.problems(result) == [] and result["timeline"] is None
    assert NO_GPU in result["notes"]
    # The rest of the result as without the option: the program ran whole, its launch traced, timed, compiled.
    assert "scaled" in capsys.readouterr().out and result["launches"]["selected"] == 0
    assert result["trace"]["programs_total"] == 4 and result["timings"] is not None and result["ir"] is not None


def test_the_timeline_option_is_how_a_launch_is_shown_so_a_selection_still_replays():
    assert program_key(script(launch=1, timeline=True)) == program_key(script()) is not None


@pytest.mark.cpu_only
def test_a_replayed_launch_takes_the_option_and_says_why_it_has_no_timeline(tmp_path, capsys):
    first, shown = listed_then_replayed(tmp_path, 1, timeline=True)
    assert capsys.readouterr().out.count("scaled") == 1  # the listing run's: the replay ran no program
    assert shown["status"] == "ok", shown["error"]
    assert any(note.startswith("Launch 1 ") for note in shown["notes"])  # replayed, or shown as the program ran it
    assert NO_GPU in shown["notes"] and shown["timeline"] is None
    assert shown["trace"]["programs_total"] == 16


def test_a_replay_hands_its_result_to_the_worker_before_the_pages_steps(tmp_path):
    """As a program's run does: the launch's result goes to the worker (`finished`) once its launch is
    traced and checked, before its timings, timeline and IR, which SCRIPT_STEPS_S then bounds."""
    emitted = []
    _, shown = listed_then_replayed(tmp_path, 1, emitted, timeline=True)
    kinds = [type if type != "status" else content["phase"] for type, content in emitted]
    assert kinds.count("finished") == 1 and kinds.index("finished") < kinds.index("ir")
    finished = next(content["result"] for type, content in emitted if type == "finished")
    assert finished["trace"]["programs_total"] == 16 and results.problems(finished) == []
    assert any(note.startswith("Launch 1 ") for note in finished["notes"])
    assert shown["ir"] is not None  # the steps went on to their end


@pytest.mark.integration
def test_a_replayed_launchs_result_survives_its_steps_running_long(tmp_path):
    """A launch selected and replayed alone, its steps (timing, timeline, IR) past SCRIPT_STEPS_S
    (made tiny here): stopped, the launch's result delivered whole, saying which step was cut short."""
    with running_app(tmp_path, WORKERS=1, SCRIPT_STEPS_S=0.05) as app:
        client = socketio.test_client(app)
        first, _ = run_script(app, PROGRAM, client)
        assert first["launches"]["replay"]["kept"] == [0, 1]
        # The timeline asked for only now: how a launch is shown, not what the program does, so replayed.
        shown, _ = run_script(app, PROGRAM, client, launch=1, timeline=True)
    assert shown["status"] == "ok", shown["error"]
    assert shown["launches"]["replay"]["replayed"] and shown["launches"]["selected"] == 1
    assert shown["trace"]["programs_total"] == 16 and shown["ir"] is None and "scaled" not in shown["stdout"]
    assert any("SCRIPT_STEPS_S" in note and "result is whole" in note for note in shown["notes"])


# -- on a GPU


def timeline_regions_on_their_lines(timeline, programs):
    check_shape(timeline, programs, ["load", "store"])
    load, store = (region["lines"] for region in timeline["regions"])
    assert load == [line_of("x = tl.load")] * 2 and store == [line_of("tl.store")] * 2
    assert all(region["marked"] for region in timeline["regions"])


@pytest.mark.gpu
def test_a_scripts_shown_launch_gets_its_timeline_on_the_gpu_streamed_as_a_part():
    emitted = []
    result = run_spec(script(timeline=True), lambda type, content: emitted.append((type, content)))
    assert result["status"] == "ok", result["error"]
    assert results.problems(result) == []
    timeline = result["timeline"]
    assert timeline is not None, result["notes"]
    timeline_regions_on_their_lines(timeline, 4)
    assert timeline["grid"] == [4, 1, 1] and timeline["num_warps"] == result["launches"]["list"][0]["num_warps"]
    assert timeline["kernel_ns"] == round(result["timings"]["kernel_ms"]["median"] * 1e6)
    parts = [content["part"] for type, content in emitted if type == "partial"]
    assert "timeline" in parts and parts.index("timeline") < parts.index("ir")
    # After the program's result went to the worker: a timeline that runs long never takes it along.
    kinds = [type for type, _ in emitted]
    assert kinds.index("finished") < next(i for i, (type, content) in enumerate(emitted)
                                          if type == "partial" and content["part"] == "timeline")


@pytest.mark.gpu
def test_a_selected_launch_replayed_alone_gets_its_own_timeline_on_the_gpu(tmp_path):
    first, shown = listed_then_replayed(tmp_path, 1, timeline=True)
    assert first["timeline"]["programs_total"] == 4  # the launch the listing run showed
    assert shown["status"] == "ok", shown["error"]
    assert any("replayed alone" in note for note in shown["notes"])
    timeline_regions_on_their_lines(shown["timeline"], 16)
    assert shown["timeline"]["grid"] == first["launches"]["list"][1]["grid"]


@pytest.mark.gpu
def test_a_launch_that_cannot_be_instrumented_leaves_a_note_and_the_rest_as_it_was():
    """Markers the timeline cannot time (a region left open): no timeline, a note naming why, and the
    program's result, its trace, timings and IR, as without the option."""
    source = PROGRAM.replace("    # endregion\n    # region: store", "    # region: store", 1)
    result = run_spec({"mode": "script", "source": source, "options": {"timeline": True}})
    assert result["status"] == "ok", result["error"]
    assert result["timeline"] is None
    assert any(note.startswith("No timeline: ") for note in result["notes"]), result["notes"]
    assert result["trace"] is not None and result["timings"] is not None and result["ir"] is not None


@pytest.mark.gpu
def test_a_timeline_running_past_the_pages_steps_bound_leaves_the_programs_result_whole(tmp_path):
    """The timeline is one of the page's steps after the program (here the only one: no timing, no
    IR): past SCRIPT_STEPS_S (made tiny here) it is stopped, and the program's result is delivered
    whole."""
    with running_app(tmp_path, WORKERS=1, SCRIPT_STEPS_S=0.05) as app:
        result, _ = run_script(app, PROGRAM, bench=False, ir=False, timeline=True)
    assert result["status"] == "ok", result["error"]
    assert "scaled" in result["stdout"] and result["trace"] is not None and result["timeline"] is None
    cut = [note for note in result["notes"] if "SCRIPT_STEPS_S" in note]
    print(cut)
    assert cut and "the program's result is whole" in cut[0]
