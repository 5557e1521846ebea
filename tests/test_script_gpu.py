"""Script mode on a GPU (sandbox/run/script_gpu.py), through the real server and one real worker: the
programs of tests/scripts/ run with their kernels compiled, every launch bounds-checked by the GPU
tracer before it runs, one launch traced, replayed for its timings and compiled."""
import time
import urllib.request

import pytest
import socketio as socketio_client

from app import socketio
from tests.support.apps import running_app, served, wait_until_ready
from tests.test_script import OVERRUN, PROGRAMS, program, program_run, run_script

pytestmark = pytest.mark.gpu


@pytest.fixture(scope="module")
def app(tmp_path_factory):
    with running_app(tmp_path_factory.mktemp("db"), WORKERS=1) as app:
        assert app.config["RUN_TIMEOUT_S"] == 30.0  # each program runs whole within the default limit
        yield app


@pytest.mark.parametrize("name, kernels, shown, lines", PROGRAMS, ids=[t[0] for t in PROGRAMS])
def test_a_program_runs_whole_on_the_gpu_and_lists_its_launches(app, name, kernels, shown, lines):
    result, events, chosen = program_run(app, name, kernels, shown, lines, " on the GPU")
    assert result["device"]["kind"] == "gpu"
    assert result["trace"]["grid"] == chosen["grid"] and result["trace"]["tracer"] == "gpu"
    timings = result["timings"]
    assert not timings["interpreter"] and timings["kernel_ms"]["n"] >= 10 and timings["kernel_ms"]["median"] > 0
    assert "ttir" in result["ir"] and "ptx" in result["ir"]
    assert any("ran at its first point only" in note and "do_bench's on the GPU" in note for note in result["notes"])
    assert {e["args"][0]["part"] for e in events if e["name"] == "run_partial"} == {"trace", "timings", "ir"}


def test_the_autotuners_choice_is_the_launchs_config(app):
    result, _ = run_script(app, program("linear_gelu.py"))
    assert result["status"] == "ok", result["error"]
    first = result["launches"]["list"][0]
    config = {k: v for k, v in first["config"].items() if k not in ("num_warps", "num_stages")}
    args = {arg["name"]: arg.get("value") for arg in first["args"]}
    assert all(args[name] == value for name, value in config.items())  # the chosen config, as launched
    table = result["timings"]["autotune"]
    assert len(table) == 3 and sum(row["chosen"] for row in table) == 1
    assert all(row["ms"] is not None for row in table)  # the autotuner timed every config on the GPU
    # Its IR is the kernel the launch compiled, not compiled again
    assert result["ir"]["compile_ms"] == 0.0 and result["ir"]["sass"]
    assert f'"ttg.num-warps" = {first["config"]["num_warps"]}' in result["ir"]["ttgir"]


def test_an_out_of_bounds_store_in_launch_3_is_stopped_before_it_touches_memory(app):
    """The instrumented check runs first: launch 3's stray store is named and drawn, and the real launch
    never runs, so the 8 floats past `out` (the tail of a larger buffer) still hold what they held."""
    source = OVERRUN.replace("torch.randn(size)", "torch.randn(size, device='cuda')").replace(
        "out = torch.empty(size - 8 if i == 3 else size)",
        "buf = torch.full((size,), 7.0, device='cuda')\n    out = buf[:size - 8] if i == 3 else buf").replace(
        "CALL", "try:\n        scale(x, out)\n    finally:\n        print('tail', i, buf[-8:].tolist())")
    result, _ = run_script(app, source)
    error = result["error"]
    assert result["status"] == "error" and error["type"] == "OutOfBounds" and error["phase"] == "launch"
    assert error["launch"] == 3 and error["pid"] == [6, 0, 0]
    assert error["line"] == source.splitlines().index("    tl.store(out_ptr + offs, x * 2, mask=offs < n)") + 1
    assert error["message"].startswith("launch 3 (scale_kernel[7,], called at line 15): ") and "out_ptr" in error["message"]
    assert [launch["bounds"] for launch in result["launches"]["list"]] == ["ok", "ok", "ok", "out_of_bounds"]
    assert result["trace"]["programs"][-1]["accesses"][-1]["out_of_bounds"] == [[392, 8]]
    assert "tail 3 [7.0, 7.0, 7.0, 7.0, 7.0, 7.0, 7.0, 7.0]" in result["stdout"]  # untouched
    assert "launch 3 done" not in result["stdout"]


@pytest.mark.parametrize("name", ["axpy_clamp.py", "linear_gelu.py"])
def test_selecting_a_launch_shows_its_diagram_within_a_second(app, name):
    """As the page does it: a program's run, then (its list read, the worker ready again) a click on
    launch 1, which runs it again with options.launch, over real Socket.IO from an outside client
    with its session's cookie (its kernels compiled by its first run): the time from the click to
    the launch's trace. Long-polling: the test's server speaks no websocket."""
    # The test client of the tests before replaced these on the app's Socket.IO server; the replacements
    # drop every packet for another client (as tests/conftest.py's live_server_socketio says).
    for replaced in ("_send_packet", "_send_eio_packet"):
        socketio.server.__dict__.pop(replaced, None)
    with served(app) as url:
        cookie = urllib.request.urlopen(url + "/").headers["Set-Cookie"].split(";")[0]
        client = socketio_client.Client(reconnection=False)
        heard = []
        client.on("*", lambda event, data: heard.append((time.monotonic(), event, data)))
        client.connect(url, transports=["polling"], headers={"Cookie": cookie}, wait_timeout=10)
        try:
            def run(spec):
                """(seconds from the run's request to its trace, the trace) once its result is in."""
                heard.clear()
                start = time.monotonic()
                run_id = client.call("run", {"spec": spec}, timeout=30)["run_id"]
                while time.monotonic() < start + 60:
                    mine = [(at, event, data) for at, event, data in list(heard) if data.get("run_id") == run_id]
                    if any(event == "run_result" for _, event, _ in mine):
                        [result] = [data["result"] for _, event, data in mine if event == "run_result"]
                        assert result["status"] == "ok", result["error"]
                        [(at, trace)] = [(at, data["content"]) for at, event, data in mine
                                         if event == "run_partial" and data["part"] == "trace"]
                        print("\n".join(f"  {seen - start:6.2f} s {event} {data.get('part') or data.get('message') or ''}"
                                         for seen, event, data in mine if event != "run_stdout"))  # where the time went
                        return at - start, trace, result
                    time.sleep(0.005)
                raise AssertionError("no result within 60 s")

            source = program(name)
            first_s, _, first = run({"mode": "script", "source": source, "options": {}})
            wait_until_ready(app)
            time.sleep(2)  # the person reads the list of launches; the worker's next run process warms
            selected_s, trace, selected = run({"mode": "script", "source": source, "options": {"launch": 1}})
            print(f"\n{name}: the first run's trace after {first_s:.2f} s; launch 1 selected: its trace "
                  f"{selected_s:.2f} s after the click")
            assert trace["programs_total"] > 0
            assert selected_s <= 1.0
            # The list is the program's; the launch clicked is replayed alone, as a form run of it: an
            # autotuned one with the config the program's autotuner chose, not timed again, and it says so.
            configs = lambda result: [launch["config"] for launch in result["launches"]["list"]]  # noqa: E731
            assert configs(selected) == configs(first)
            assert any("with its trace" in note for note in selected["notes"])  # its program's: no tracer pass
            ran = first["launches"]["list"][1]["config"]
            assert bool(ran) == any("the program's autotuner chose" in note for note in selected["timings"]["notes"])
            if ran:
                [chosen] = [row for row in selected["timings"]["autotune"] if row["chosen"]]
                assert chosen["config"] == ran and chosen["ms"] is None
                assert len(selected["timings"]["autotune"]) > 1  # the configs it did not time again, listed
        finally:
            client.disconnect()


def test_make_a_form_from_a_gpu_launch_runs_the_same_values(app):
    """The form's inputs, built as a form run builds them on the GPU, hold the program's values."""
    import torch
    from sandbox.launch.build import build_inputs
    source = program("axpy_clamp.py")
    result, _ = run_script(app, source, ir=False, bench=False)
    launch = result["launches"]["list"][0]
    client = app.test_client()
    spec = client.post("/api/launch-form", json={"source": source, "launch": launch}).get_json()["spec"]
    torch.manual_seed(0)
    x, y = torch.randn(30000, device="cuda"), torch.randn(30000, device="cuda")
    inputs, _ = build_inputs(spec, {"torch": torch}, "cuda")
    assert torch.equal(inputs["x"], x) and torch.equal(inputs["y"], y)
    form = client.post("/api/run", json={**spec, "options": {**spec["options"], "ir": False}}).get_json()
    assert form["status"] == "ok" and form["device"]["kind"] == "gpu", form["error"]
    assert form["trace"]["grid"] == launch["grid"]
