"""Script mode through the real server (Socket.IO, one real worker, Triton's interpreter on this CPU):
whole programs written as people write Triton programs (tests/scripts/: a kernel with its wrapper,
a check against torch, a perf_report benchmark), every launch captured and bounds-checked, one launch
traced, timed and compiled."""
import os
import pathlib
import time

import pytest

from app import socketio
from sandbox.run import pipeline
from sandbox.run.replay import INPUTS_DIR, Ran, ran_name
from sandbox.trace import record as trace
from tests.support import has_gpu
from tests.support.apps import running_app
from tests.test_runs import collect_until_result

SCRIPTS = pathlib.Path(__file__).parent / "scripts"


@pytest.fixture(scope="module")
def app(tmp_path_factory):
    """The server's default time limit (RUN_TIMEOUT_S): each program must run whole within it."""
    with running_app(tmp_path_factory.mktemp("db"), WORKERS=1) as app:
        assert app.config["RUN_TIMEOUT_S"] == 30.0
        yield app


def script_spec(source, **options):
    return {"mode": "script", "source": source, "options": options}


def run_script(app, source, client=None, **options):
    """(result, the events the client got) of one script run over Socket.IO (by `client`, one person,
    else a new one)."""
    client = client or socketio.test_client(app)
    ack = client.emit("run", {"spec": script_spec(source, **options)}, callback=True)
    assert "run_id" in ack, ack
    events = collect_until_result(client, ack["run_id"], timeout_s=90)
    return events[-1]["args"][0]["result"], events


def program(name):
    return (SCRIPTS / name).read_text()


# (file, its kernels in launch order, the launch shown by default, the line of each kernel's call)
PROGRAMS = [
    ("axpy_clamp.py", ["axpy_clamp_kernel"] * 2, 0, {"axpy_clamp_kernel": 24}),
    ("row_logsumexp.py", ["row_logsumexp_kernel"] * 2, 0, {"row_logsumexp_kernel": 47}),
    ("linear_gelu.py", ["linear_gelu_kernel"] * 3, 0, {"linear_gelu_kernel": 55}),
    ("seeded_noise.py", ["jitter_kernel"] + ["salt_and_pepper_kernel"] * 4, 1,
     {"jitter_kernel": 21, "salt_and_pepper_kernel": 43}),
    ("rms_norm_residual.py", ["add_rms_norm_fwd", "rms_norm_bwd", "add_rms_norm_fwd"], 0,
     {"add_rms_norm_fwd": 67, "rms_norm_bwd": 76}),
]


def program_run(app, name, kernels, shown, lines, where=""):
    """(result, events, the launch shown) of a program's run, its launches listed as PROGRAMS says."""
    start = time.monotonic()
    result, events = run_script(app, program(name))
    print(f"\n{name}{where}: {time.monotonic() - start:.1f} s, {result['run_ms']:.0f} ms in the run process")
    assert result["status"] == "ok", result["error"]
    launches = result["launches"]
    assert [launch["kernel"] for launch in launches["list"]] == kernels and launches["total"] == len(kernels)
    assert all(launch["bounds"] == "ok" and launch["ms"] > 0 for launch in launches["list"])
    assert all(launch["line"] == lines[launch["kernel"]] for launch in launches["list"])
    assert launches["selected"] == shown  # the first launch of the kernel launched last
    return result, events, launches["list"][shown]


@pytest.mark.parametrize("name, kernels, shown, lines", PROGRAMS, ids=[t[0] for t in PROGRAMS])
def test_a_program_runs_whole_and_lists_its_launches(app, name, kernels, shown, lines):
    result, events, chosen = program_run(app, name, kernels, shown, lines)
    assert result["trace"]["grid"] == chosen["grid"] and result["trace"]["programs_total"] > 0
    assert result["timings"]["interpreter"] and result["timings"]["kernel_ms"]["median"] == chosen["ms"]
    assert "ttir" in result["ir"] and result["ir"]["target"] == "sm90"
    # The benchmark ran at its first point, said so, and printed its table.
    assert any("ran at its first point only" in note for note in result["notes"])
    assert "(GB/s)" in result["stdout"] or "(TFLOPS)" in result["stdout"]
    assert any(e["name"] == "run_stdout" for e in events)
    assert {e["args"][0]["part"] for e in events if e["name"] == "run_partial"} == {"trace", "timings", "ir"}


def test_a_launch_records_its_arguments_config_and_options(app):
    result, _ = run_script(app, program("linear_gelu.py"))
    first = result["launches"]["list"][0]
    args = {arg["name"]: arg for arg in first["args"]}
    assert args["x_ptr"] == {"name": "x_ptr", "kind": "tensor", "shape": [192, 144], "dtype": "float16",
                             "strides": [144, 1], "device": "cpu",
                             "values": {"seed": 0, "draws": ["torch.randn((192, 144), dtype=torch.float16)"]}}
    assert args["M"] == {"name": "M", "kind": "scalar", "value": 192}
    assert args["ACTIVATION"] == {"name": "ACTIVATION", "kind": "constexpr", "value": "none"}
    assert args["BLOCK_M"]["value"] == 64  # the autotuner's config, as the launch received it
    assert first["config"] == {"BLOCK_M": 64, "BLOCK_N": 64, "BLOCK_K": 64, "GROUP": 4,
                               "num_warps": 4, "num_stages": 3}
    assert first["grid"] == [2, 3, 1]  # (cdiv(112, 64), cdiv(192, 64))
    assert result["launches"]["list"][1]["args"][-1] == {"name": "ACTIVATION", "kind": "constexpr",
                                                         "value": "gelu"}
    assert result["timings"]["autotune"][0]["chosen"]
    # @triton.heuristics: the meta-parameter it computed is the launch's
    result, _ = run_script(app, program("seeded_noise.py"))
    seeded = result["launches"]["list"][1]
    assert seeded["kernel"] == "salt_and_pepper_kernel"
    assert {a["name"]: a.get("value") for a in seeded["args"]}["BLOCK"] == 2048
    assert seeded["num_warps"] == 4 and seeded["config"] is None


CHECK = "assert torch.allclose(result, expected, atol=1e-6)"
assert CHECK in program("axpy_clamp.py")  # the line the program's check is made wrong in
ASSERTING = program("axpy_clamp.py").split("\n@triton.testing.perf_report")[0].replace(
    CHECK, "assert torch.allclose(result, expected + 1)")


def test_a_failed_assert_is_the_runs_error_at_its_line(app):
    result, _ = run_script(app, ASSERTING)
    error = result["error"]
    assert result["status"] == "error" and error["phase"] == "program" and error["type"] == "AssertionError"
    assert error["line"] == next(i for i, line in enumerate(ASSERTING.splitlines(), 1)
                                 if line.startswith("assert torch.allclose(result, expected + 1)"))
    assert "largest gap from torch" in result["stdout"]  # what it printed before failing
    assert result["launches"]["total"] == 1 and result["launches"]["list"][0]["bounds"] == "ok"
    assert result["trace"] is not None  # the launch it made is still there to see


def test_an_exception_in_the_program_names_its_line(app):
    source = "import torch\n\nx = torch.zeros(4)\ny = x + undefined_name\n"
    result, _ = run_script(app, source)
    assert result["error"]["type"] == "NameError" and result["error"]["line"] == 4
    assert {key: result["launches"][key] for key in ("total", "selected", "list")} == {"total": 0, "selected": None, "list": []}


def test_a_spec_field_of_the_form_is_refused_in_a_script(app):
    client = app.test_client()
    response = client.post("/api/run", json={**script_spec("x = 1\n"), "grid": "(1,)"})
    assert response.status_code == 400
    assert response.get_json()["error"]["field"] == "grid"
    response = client.post("/api/run", json={"mode": "script", "source": "x = 1\n", "options": {"sweep": {"B": [1]}}})
    assert response.get_json()["error"]["field"] == "options.sweep"
    response = client.post("/api/run", json={"mode": "notebook", "source": "x = 1\n"})
    assert response.get_json()["error"]["field"] == "mode"


OVERRUN = '''import torch
import triton
import triton.language as tl


@triton.jit
def scale_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n)
    tl.store(out_ptr + offs, x * 2, mask=offs < n)


def scale(x, out):
    scale_kernel[(triton.cdiv(x.numel(), 64),)](x, out, x.numel(), BLOCK=64)


torch.manual_seed(0)
for i, size in enumerate([100, 200, 300, 400, 500]):
    x = torch.randn(size)
    out = torch.empty(size - 8 if i == 3 else size)  # launch 3 stores 8 elements past out's end
    CALL
    print("launch", i, "done")
'''


@pytest.mark.parametrize("call", ["scale(x, out)", "try:\n        scale(x, out)\n    except Exception:\n        pass"],
                         ids=["raised", "caught by the program"])
def test_an_out_of_bounds_store_in_launch_3_is_named_and_stopped(app, call):
    source = OVERRUN.replace("CALL", call)
    result, _ = run_script(app, source)
    error = result["error"]
    assert result["status"] == "error" and error["type"] == "OutOfBounds" and error["phase"] == "launch"
    assert error["launch"] == 3 and error["pid"] == [6, 0, 0]
    assert error["line"] == source.splitlines().index("    tl.store(out_ptr + offs, x * 2, mask=offs < n)") + 1
    assert error["message"].startswith("launch 3 (scale_kernel[7,], called at line 15): ")
    assert "out_ptr" in error["message"]
    launches = result["launches"]
    # The program stops there, even one that catches exceptions: launch 4 never happens.
    assert [launch["bounds"] for launch in launches["list"]] == ["ok", "ok", "ok", "out_of_bounds"]
    assert launches["selected"] == 3
    # The diagram of the failing launch: its trace up to the offending access, the stray lanes named.
    last = result["trace"]["programs"][-1]
    assert result["trace"]["grid"] == [7, 1, 1] and last["pid"] == [6, 0, 0]
    assert last["accesses"][-1]["tensor"] == "out_ptr" and last["accesses"][-1]["out_of_bounds"] == [[392, 8]]
    assert "launch 2 done" in result["stdout"] and "launch 3 done" not in result["stdout"]


def test_options_launch_picks_the_launch_that_is_traced_timed_and_compiled(app):
    result, _ = run_script(app, program("axpy_clamp.py"), launch=1, trace_pid=[2])
    assert result["status"] == "ok" and result["launches"]["selected"] == 1
    chosen = result["launches"]["list"][1]
    assert chosen["grid"] == [16, 1, 1] and chosen["args"][0]["shape"] == [8192]
    assert result["trace"]["grid"] == [16, 1, 1]
    assert [p["pid"] for p in result["trace"]["programs"]] == [[2, 0, 0]]  # options.trace_pid: that program whole
    assert result["trace"]["tensors"]["out_ptr"] == {"shape": [8192], "dtype": "float32", "role": "output"}
    assert result["timings"]["kernel_ms"]["median"] == chosen["ms"]
    assert "ttir" in result["ir"]
    # a launch the program never made: said in the notes, nothing shown
    result, _ = run_script(app, program("axpy_clamp.py"), launch=7, ir=False)
    assert result["status"] == "ok" and result["launches"]["selected"] is None and result["trace"] is None
    assert any("options.launch is 7" in note for note in result["notes"])


@pytest.mark.parametrize("name", [t[0] for t in PROGRAMS])
def test_a_launch_becomes_a_form_run_of_the_same_launch(app, name):
    """Make a form from a launch: the form run launches the same kernel on inputs of the captured
    shapes, dtypes and strides, with the same arguments and grid, and its bounds check passes."""
    source = program(name)
    result, _ = run_script(app, source, ir=False, bench=False)
    client = app.test_client()
    for launch in result["launches"]["list"][:2]:
        response = client.post("/api/launch-form", json={"source": source, "launch": launch, "seed": 3})
        assert response.status_code == 200, response.get_json()
        spec = response.get_json()["spec"]
        assert spec["kernel"] == launch["kernel"] and "mode" not in spec
        form = client.post("/api/run", json={**spec, "options": {**spec["options"], "ir": False}}).get_json()
        assert form["status"] == "ok", form["error"]
        assert form["trace"]["grid"] == launch["grid"]
        shapes = {name: info["shape"] for name, info in form["trace"]["tensors"].items()}
        assert sorted(shapes.values()) == sorted(a["shape"] for a in launch["args"] if a["kind"] == "tensor")


def test_a_launchs_form_makes_the_programs_values_again(app):
    """The form's inputs are drawn again from the program's seed in the program's order (a draw no
    argument kept is made and dropped), its fills made by the same call: the same values."""
    import torch
    from sandbox.launch.build import build_inputs
    source = program("axpy_clamp.py")
    result, _ = run_script(app, source, ir=False, bench=False)
    client = app.test_client()
    torch.manual_seed(0)
    program_values = [torch.randn(30000), torch.randn(30000), torch.randn(8192), torch.randn(8192)]
    for launch, (x, y) in zip(result["launches"]["list"], [program_values[:2], program_values[2:]]):
        body = client.post("/api/launch-form", json={"source": source, "launch": launch, "seed": 3}).get_json()
        spec = body["spec"]
        assert spec["options"]["seed"] == 0  # the program's, not the one asked for
        inputs, poisoned = build_inputs(spec, {"torch": torch}, "cpu")
        assert torch.equal(inputs["x"], x) and torch.equal(inputs["y"], y)
        assert poisoned == {"out"}  # torch.empty_like, as the program made it
        assert body["notes"][0] == "x, y: drawn again from seed 0 as the program drew them, the same values."
    assert spec["inputs"]["x"] == ("(torch.randn((30000,), dtype=torch.float32), torch.randn((30000,), "
                                   "dtype=torch.float32), torch.randn((8192,), dtype=torch.float32))[-1]")


UNREPEATABLE = '''import torch
import triton
import triton.language as tl


@triton.jit
def add_one(x_ptr, y_ptr, z_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    s = tl.load(x_ptr + offs, mask=offs < n) + tl.load(y_ptr + offs, mask=offs < n) + tl.load(z_ptr + offs, mask=offs < n)
    tl.store(out_ptr + offs, s, mask=offs < n)


torch.manual_seed(5)
x = torch.randn(64) * 2                  # an expression over a draw
y = torch.randn(64)
y.add_(1)                                # changed since it was made
torch.randperm(10)                       # a draw the form does not repeat
z = torch.rand(64)
out = torch.zeros(64)
add_one[(1,)](x, y, z, out, 64, BLOCK=64)
'''


def test_a_launchs_form_says_which_values_it_cannot_make_again(app):
    result, _ = run_script(app, UNREPEATABLE, ir=False, bench=False)
    [launch] = result["launches"]["list"]
    values = {a["name"]: a["values"] for a in launch["args"] if a["kind"] == "tensor"}
    assert "expression" in values["x_ptr"]["why"] and "changed" in values["y_ptr"]["why"]
    assert "drawn from by more than" in values["z_ptr"]["why"]
    assert values["out_ptr"] == {"expression": "torch.zeros((64,), dtype=torch.float32)"}
    body = app.test_client().post("/api/launch-form", json={"source": UNREPEATABLE, "launch": launch}).get_json()
    assert body["spec"]["inputs"]["out"] == "torch.zeros((64,), dtype=torch.float32)"
    assert body["spec"]["inputs"]["x"] == "torch.randn((64,), dtype=torch.float32)"
    assert [note.split(":")[0] for note in body["notes"]] == ["out", "x", "y", "z"]
    assert all("not the program's" in note for note in body["notes"][1:])


def test_a_strided_launch_becomes_inputs_of_the_same_strides(app):
    source = '''import torch
import triton
import triton.language as tl


@triton.jit
def copy_rows(src_ptr, dst_ptr, stride_src, stride_dst, N: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, N)
    tl.store(dst_ptr + row * stride_dst + cols, tl.load(src_ptr + row * stride_src + cols))


SCALE = torch.ones(1)  # computed at import: not a definition a form run may execute
src = torch.randn(16, 12)[:, :8]           # a slice: strides (12, 1)
dst = torch.empty(16, 8)
copy_rows[(16,)](src, dst, src.stride(0), dst.stride(0), N=8)
assert torch.equal(src, dst)
'''
    result, _ = run_script(app, source)
    launch = result["launches"]["list"][0]
    assert launch["args"][0]["strides"] == [12, 1]
    spec = app.test_client().post("/api/launch-form", json={"source": source, "launch": launch}).get_json()["spec"]
    assert spec["inputs"]["src"] == "torch.randn((188,), dtype=torch.float32).as_strided((16, 8), (12, 1))"
    assert "SCALE" not in spec["source"] and "copy_rows[" not in spec["source"]  # definitions only
    assert app.test_client().post("/api/run", json=spec).get_json()["status"] == "ok"


def test_a_launch_form_request_names_what_is_wrong(app):
    client = app.test_client()
    launch = {"kernel": "k", "args": [{"name": "x", "kind": "tensor", "shape": [4], "strides": [1], "dtype": "nope"}],
              "grid": [1]}
    for body, field in [({"source": "x = 1\n", "launch": launch}, "launch.args.x.dtype"),
                        ({"source": "x = 1\n", "launch": {**launch, "args": [{**launch["args"][0], "dtype": "float32"}],
                                                           "grid": [0]}}, "launch.grid"),
                        ({"source": "x = 1\n", "launch": {**launch, "args": [], "grid": []}}, "launch.grid"),
                        ({"source": "x = 1\n", "launch": "k"}, "launch"),
                        ({"source": "x = 1\n", "launch": {**launch, "args": [
                            {**launch["args"][0], "dtype": "float32", "values": {"expression": "open('f')"}}]}},
                         "launch.args.x.values"),
                        ({"launch": launch}, "source"),
                        ({"source": "x = 1\n", "launch": launch, "extra": 1}, "extra")]:
        response = client.post("/api/launch-form", json=body)
        assert response.status_code == 400 and response.get_json()["error"]["field"] == field, body


def test_an_exported_form_run_runs_in_script_mode_unchanged(app):
    from tests.support.kernels import vector_add_spec
    spec = vector_add_spec(n=5000, block=256)
    exported = app.test_client().post("/api/export", json=spec).get_data(as_text=True)
    result, _ = run_script(app, exported)
    assert result["status"] == "ok", result["error"]
    assert "OK: out matches the reference" in result["stdout"]
    [launch] = result["launches"]["list"]
    assert launch["kernel"] == "add_kernel" and launch["grid"] == [20, 1, 1] and launch["bounds"] == "ok"
    assert {a["name"]: a.get("value") for a in launch["args"]}["n"] == 5000
    # and a script's own export is its program
    assert app.test_client().post("/api/export", json=script_spec(exported)).get_data(as_text=True) == exported


def test_a_tensor_off_the_cpu_is_refused_at_its_launch(app):
    source = OVERRUN.replace("CALL", "scale(x.to('meta'), out)")
    result, _ = run_script(app, source)
    error = result["error"]
    assert (error["type"], error["launch"], error["line"]) == ("DeviceMismatch", 0, 15)
    assert "argument 'x_ptr' is a tensor on meta" in error["message"]
    assert result["launches"]["list"][0]["bounds"] == "failed"


def test_a_script_is_not_compiled_ahead(app):
    """Compiling ahead would import the source, that is run the program: a script is refused there."""
    client = socketio.test_client(app)
    ack = client.emit("compile", {"spec": script_spec(program("axpy_clamp.py"))}, callback=True)
    assert ack["error"]["field"] == "mode" and "compiles its kernels as it runs" in ack["error"]["message"]
    from sandbox.run.pipeline import compile_spec
    assert compile_spec(script_spec("print(1)\n"))["error"]["field"] == "mode"


BENCHMARKED = '''import torch
import triton


@triton.testing.perf_report(triton.testing.Benchmark(
    x_names=["size"], x_vals=[64, 128, 256], x_log=True, line_arg="provider", line_vals=["ok", "broken"],
    line_names=["Torch", "Broken"], styles=[("tab:orange", "-"), ("green", "--")], ylabel="GB/s", plot_name="sizes",
    args={}))
def benchmark(size, provider):
    x = torch.randn(size)
    ms = triton.testing.do_bench(lambda: x * 2)
    return size / ms if provider == "ok" else float("nan")


benchmark.run(print_data=True, show_plots=True)
'''


@pytest.mark.parametrize("points", ["first", "all"])
def test_a_benchmark_plot_is_the_results_data(app, points):
    result, _ = run_script(app, BENCHMARKED, benchmarks=points)
    assert result["status"] == "ok", result["error"]
    [chart] = result["benchmarks"]
    assert {k: chart[k] for k in ("name", "x", "y", "x_log", "y_log", "lines", "styles", "points_total")} == {
        "name": "sizes", "x": "size", "y": "GB/s", "x_log": True, "y_log": False, "lines": ["Torch", "Broken"],
        "styles": [["#ff7f0e", "solid"], ["green", "dash"]], "points_total": 3}
    sizes = [64] if points == "first" else [64, 128, 256]
    assert [x for x, _ in chart["points"]] == sizes
    assert all(ys[0] > 0 and ys[1] is None for _, ys in chart["points"])  # a NaN is no point
    assert result["stdout"].count("\n") == len(sizes) + 2  # the table: its name, its header, a row per point


def test_a_benchmarks_styles_are_kept_as_the_page_draws_them_and_nothing_else():
    """matplotlib's colours and line styles, as CSS and plotly name them; what is neither is null,
    never passed on (the program wrote it)."""
    from sandbox.run.benchmarks import styles
    assert styles(None, 2) is None and styles([], 2) is None
    assert styles([("b", "-."), ("C0", ":"), ((1.0, 0.5, 0), "dotted"), ("#A0B0C0", "solid")], 4) == [
        ["#0000ff", "dashdot"], ["#1f77b4", "dot"], ["#ff8000", "dot"], ["#a0b0c0", "solid"]]
    assert styles([("url(javascript:alert(1))", "x"), ("red;fill:url(#a)", 3), "blue", ((2, 0, 0), None)], 4) == [
        [None, None], [None, None], [None, None], [None, None]]
    assert styles([("red", "-"), ("blue", "--"), ("green", ":")], 2) == [["red", "solid"], ["blue", "dash"]]


def test_the_gpu_paths_check_runs_on_copies_and_stops_a_stray_store(tmp_path):
    """Script mode's check on a GPU (sandbox.run.script_gpu.GpuCapture.check), here with the instrumented
    build run by the interpreter over CPU tensors: the instrumented kernel is defined beside the
    running program (the program is not run again), it runs over copies that keep a slice's strides,
    and a stray store is the named error while the program's tensors stay as they were."""
    import torch
    from triton import Config
    from sandbox.launch.kernel import Kernel, interpreter_mode
    from sandbox.run.launch_record import bind, resolve_grid
    from sandbox.run.script_gpu import GpuCapture, restore, snapshot
    from sandbox.spec import normalize
    from sandbox.trace.patches import interpreter_hygiene, patch_interpreter_compat
    source = OVERRUN.split("torch.manual_seed(0)")[0] + "calls = []\ncalls.append('the program ran')\n"
    path = tmp_path / "program.py"
    path.write_text(source)
    options = normalize({"mode": "script", "source": source, "options": {}})["options"]
    capture = GpuCapture(options, str(path), {}, str(tmp_path), lambda *_: None)
    config = Config({}, num_warps=4, num_stages=3)
    namespace = {"__name__": "__main__"}
    patch_interpreter_compat()
    with interpreter_mode(True), interpreter_hygiene():
        exec(compile(source, str(path), "exec"), namespace)
        fn = namespace["scale_kernel"]
        kernel = Kernel(fn.__name__, fn, fn)
        base = torch.arange(300.0).view(20, 15)
        x = base[:, :10]  # a slice, strides (15, 1): its 290 first elements lie within its span (295)
        for out, stray in [(torch.full((290,), 7.0), False), (torch.full((282,), 7.0), True)]:
            arguments = bind(kernel, (x, out, 290), {"BLOCK": 64})
            tensors = {"x_ptr": x, "out_ptr": out}
            grid = resolve_grid((5,), arguments)
            saved = snapshot(tensors)
            if stray:
                with pytest.raises(Exception) as stopped:
                    capture.check(kernel, arguments, tensors, grid, config, True)
                assert stopped.value.type == "OutOfBounds" and stopped.value.pid == [4, 0, 0]
                assert stopped.value.trace["programs"][-1]["accesses"][-1]["out_of_bounds"] == [[282, 8]]
            else:
                checked, trace = capture.check(kernel, arguments, tensors, grid, config, True)
                assert checked and trace["coverage"]["out_ptr"]["unwritten"] == 0
            assert torch.equal(out, torch.full_like(out, 7.0))  # the copies were written, not the program's
            out.fill_(1.0)
            restore(saved)
            assert torch.equal(out, torch.full_like(out, 7.0))
    assert len(capture.instrumented) == 1  # defined once, beside the program, which did not run again:
    assert namespace["calls"] == ["the program ran"]


@pytest.mark.integration
def test_a_finished_programs_result_survives_the_pages_steps_running_long(tmp_path):
    """The program uses most of its time limit; the page's own steps after it (timing, the IR's
    compile) have a bound of their own (SCRIPT_STEPS_S, made tiny here), and running past it they
    are stopped, the program's result delivered whole, saying which step was cut short."""
    source = program("axpy_clamp.py") + "\nimport time\ntime.sleep(7)\nprint('the program ended')\n"
    with running_app(tmp_path, WORKERS=1, RUN_TIMEOUT_S=9.0, SCRIPT_STEPS_S=0.05) as app:
        result, events = run_script(app, source)
    assert result["status"] == "ok", result["error"]
    assert "the program ended" in result["stdout"] and result["launches"]["total"] == 2
    assert result["trace"] is not None and result["launches"]["selected"] == 0
    assert result["ir"] is None
    assert any("SCRIPT_STEPS_S" in note and "the program's result is whole" in note for note in result["notes"])
    assert result["server_check"]["bounds"] == "ok"  # the server's check has a bound of its own


def test_a_selected_launch_is_replayed_alone_not_the_program_again(app):
    """Another launch of the listed ones is shown from the inputs kept from the run that listed it:
    the program does not run again (it prints nothing), and the launch is traced, timed, compiled and
    checked by the server as it was (in the interpreter, its trace and time as the program ran it).
    Someone else's selection finds nothing of the first person's."""
    client, source = socketio.test_client(app), program("axpy_clamp.py")
    start = time.monotonic()
    first, _ = run_script(app, source, client)
    first_s = time.monotonic() - start
    # In the interpreter each launch's run is kept too (its trace and time): a GPU host replays the launch.
    as_ran = [] if has_gpu() else [0, 1]
    assert first["launches"]["replay"] == {"kept": [0, 1], "as_ran": as_ran, "why": None, "replayed": False}
    assert first["stdout"].count("largest gap from torch") == 1 and first["launches"]["program_ms"] > 0
    start = time.monotonic()
    shown, events = run_script(app, source, client, launch=1)
    shown_s = time.monotonic() - start
    print(f"\nfirst run {first_s:.2f} s, launch 1 selected {shown_s:.2f} s ({shown_s / first_s:.2f}x)")
    assert shown["status"] == "ok", shown["error"]
    assert "largest gap from torch" not in shown["stdout"]  # the program did not run again
    assert any(note.startswith("Launch 1 ") and "the program did not run again" in note
               or "neither the program nor the launch ran again" in note for note in shown["notes"])
    assert shown["launches"]["selected"] == 1 and shown["launches"]["list"] == first["launches"]["list"]
    assert shown["launches"]["replay"] == {**first["launches"]["replay"], "replayed": True}
    listed = first["launches"]["list"][1]
    assert shown["trace"]["grid"] == listed["grid"] and shown["trace"]["tensors"]["out_ptr"]["shape"] == [8192]
    assert shown["trace"]["coverage"]["out_ptr"]["unwritten"] == 0
    assert shown["timings"] is not None and "ttir" in shown["ir"]
    assert shown["server_check"] == {"launch": 1, "bounds": "ok", "message": None}
    assert shown["claims"] == first["claims"]
    # Back to the first launch: replayed too, and the server's check of it, made once, not made again.
    back, events = run_script(app, source, client, launch=0)
    statuses = [e["args"][0]["message"] for e in events if e["name"] == "run_status"]
    assert "largest gap from torch" not in back["stdout"] and back["launches"]["replay"]["replayed"]
    assert back["server_check"] == first["server_check"] and not any("checks launch 0" in s for s in statuses)

    # Someone else's selection of the same program runs it whole, and says so before it does.
    other, events = run_script(app, source, launch=1)
    assert other["stdout"].count("largest gap from torch") == 1 and other["launches"]["selected"] == 1
    statuses = [e["args"][0]["message"] for e in events if e["name"] == "run_status"]
    assert any(message.startswith("re-running the whole program to show launch 1") for message in statuses)
    assert other["trace"]["coverage"] == shown["trace"]["coverage"]


@pytest.mark.cpu_only
def test_in_the_interpreter_a_selected_launch_is_shown_as_its_program_ran_it(tmp_path):
    """The program's run keeps each listed launch's trace and time beside its inputs: a replay of it
    in the interpreter shows those and does not run the launch again (its whole cost there), and
    shows what a replay that runs it shows. Only for the options they were made under."""
    scratch, limits = str(tmp_path), {**trace.LIMITS, "kept_inputs_bytes": 64 << 20}
    source = program("axpy_clamp.py")
    first = pipeline.run_spec(script_spec(source), None, scratch, limits)
    assert first["status"] == "ok", first["error"]
    record = first["launches"]["list"][1]

    def replayed(**options):
        statuses = []
        result = pipeline.run_spec(script_spec(source, launch=1, **options),
                                   lambda type, content: type == "status" and statuses.append(content["message"]),
                                   scratch, limits, replay={"launch": record})
        assert result["status"] == "ok", result["error"]
        as_ran = any("neither the program nor the launch ran again" in note for note in result["notes"])
        assert as_ran == (Ran.doing in statuses) != any(s.startswith("running ") for s in statuses)
        return result, as_ran

    shown, as_ran = replayed()
    assert as_ran and shown["trace"]["grid"] == record["grid"]
    assert replayed(trace_pid=[3])[1] is False  # another program of the trace asked for: launched
    assert replayed(trace=False)[1] is False
    os.unlink(os.path.join(scratch, INPUTS_DIR, ran_name(1)))
    launched, as_ran = replayed()
    assert not as_ran
    assert shown["trace"] == launched["trace"] and shown["timings"]["bytes"] == launched["timings"]["bytes"]
    assert shown["ir"]["ptx"] == launched["ir"]["ptx"]


@pytest.mark.gpu
def test_on_a_gpu_a_selected_launch_shows_the_trace_its_program_made_and_is_timed_again(tmp_path):
    """On a GPU the program's run keeps each listed launch's trace (the GPU tracer checks every launch):
    a replay shows it, skipping the tracer's pass, and launches the kernel, with the config the program's
    autotuner chose, only for its timings; what it shows is what a replay that traces shows."""
    scratch, limits = str(tmp_path), {**trace.LIMITS, "kept_inputs_bytes": 64 << 20}
    source = program("linear_gelu.py")
    first = pipeline.run_spec(script_spec(source), None, scratch, limits)
    assert first["status"] == "ok", first["error"]
    record = first["launches"]["list"][1]

    def replayed():
        result = pipeline.run_spec(script_spec(source, launch=1), None, scratch, limits, replay={"launch": record})
        assert result["status"] == "ok", result["error"]
        [chosen] = [row["config"] for row in result["timings"]["autotune"] if row["chosen"]]
        assert chosen == record["config"] and result["timings"]["kernel_ms"]["median"] > 0
        return result, any("with its trace" in note for note in result["notes"])

    shown, kept_trace = replayed()
    assert kept_trace and shown["trace"]["grid"] == record["grid"]
    os.unlink(os.path.join(scratch, INPUTS_DIR, ran_name(1)))
    traced, kept_trace = replayed()
    assert not kept_trace
    assert shown["trace"]["coverage"] == traced["trace"]["coverage"]
    assert shown["timings"]["bytes"] == traced["timings"]["bytes"] and shown["ir"]["ptx"] == traced["ir"]["ptx"]


def test_a_tutorial_sized_program_runs_whole_within_the_default_limit(app):
    """A program the size of Triton's fused-softmax tutorial (a 256 x 391 check, a benchmark's first
    point of 4096 rows; row_log_softmax.py, written here) within RUN_TIMEOUT_S on this CPU: its tl.max
    and tl.sum no longer re-patch the language at each call (most of its benchmark launch's time went there)."""
    start = time.monotonic()
    result, _ = run_script(app, program("row_log_softmax.py"))
    print(f"\nrow_log_softmax.py: {time.monotonic() - start:.1f} s, {result['run_ms']} ms in the run process")
    assert result["status"] == "ok", result["error"]
    assert [launch["bounds"] for launch in result["launches"]["list"]] == ["ok", "ok"]
    assert result["benchmarks"][0]["points"][0][0] == 256 and result["ir"] is not None


def test_a_programs_library_base_exception_is_its_error_at_its_line(app):
    """A program that stops on a BaseException of a library's (pytest.skip's, not an Exception): the
    program's error at that line, the run not lost."""
    source = "import pytest\nprint('before')\npytest.skip('needs a GPU', allow_module_level=True)\n"
    result, _ = run_script(app, source)
    assert result["status"] == "error", result
    assert (result["error"]["phase"], result["error"]["type"], result["error"]["line"]) == ("program", "Skipped", 3)
    assert "before" in result["stdout"]


def test_a_program_that_asks_for_input_is_told_a_run_has_no_keyboard(app):
    result, _ = run_script(app, "n = int(input('how many? '))\nprint(n)\n")
    assert (result["error"]["type"], result["error"]["line"]) == ("EOFError", 1)
    assert "no keyboard" in result["error"]["hint"]


@pytest.mark.cpu_only
def test_a_programs_kernel_the_compiler_refuses_is_said_so(app):
    """A program whose kernel calls a plain Python function runs in the interpreter; its notes say
    Triton's compiler refuses the kernel."""
    stored = "tl.store(out_ptr + idx, tl.minimum(tl.maximum(value, low), high), mask=inside)"
    source = program("axpy_clamp.py")
    assert stored in source
    jit = source.index("@triton.jit")
    source = (source[:jit] + "def same(v):\n    return v\n\n\n" + source[jit:]).replace(
        stored, "tl.store(out_ptr + idx, same(tl.minimum(tl.maximum(value, low), high)), mask=inside)")
    result, _ = run_script(app, source)
    assert result["status"] == "ok", result["error"]
    assert "@triton.jit" in result["ir"]["error"]["hint"]
    assert any("compiler refuses this kernel" in note for note in result["notes"]), result["notes"]
