"""A script's launch shown again without running its program: the launch replayed alone.

    the run that lists the launches ── each listed launch's tensors, as the launch received them,
        written to its scratch dir (InputKeeper), within SCRIPT_KEPT_INPUTS_MB
    its worker ── collects them into the owner's store (sandbox.worker.kept_launches), with the
        launch records of the result
    a later run of the same program (same source, seed and options) asking for launch N ── its
        worker lends launch N's inputs to a fresh run process, which replays it here: the kernel
        loaded from the program's definitions as the server kept its source (a form run's module:
        sandbox.launch_form.definitions, none of the program's statements), the inputs read back
        as raw bytes into tensors of the record's shapes, dtypes and strides, then checked, traced,
        timed, given its timeline (options.timeline) and compiled as a form run's launch
        (sandbox.run.pipeline.Run); an autotuned kernel with the config the program's autotuner chose
        for it (the record's), its configs not timed again (Kernel.keep_to).

The program's run also keeps, beside the inputs of each of its first RAN_KEPT listed launches, the
launch as it ran (`ran`: its trace and time; InputKeeper.keep_ran). In Triton's interpreter a replay
shows that instead of running the launch again, which there is the whole of its cost (a launch of a
thousand programs takes seconds): its inputs still make its timings' bytes and its IR's
specialisation. On a GPU a replay shows the kept trace instead of the GPU tracer's pass (an
instrumented build to compile, ~0.5 s and more), and launches the kernel, of the config the
program ran, for its timings.

The files are the program's own bytes and the records its own word: read as data only (never
unpickled), sized against the record before a tensor is made of them.
"""
import contextlib
import json
import os
import time

import torch

from sandbox import protocol
from sandbox import result as results
from sandbox.errors import RunError
from sandbox.launch.kernel import as_run_error
from sandbox.launch_form import definitions, form_of

INPUTS_DIR = "launch-inputs"  # in a run's scratch dir
PAGE_STEPS = ("bench", "ir")  # the status phases of a run's steps after its launch and check
# The options a replay takes from its spec: how the launch is shown, never what the program does.
SHOWN_BY = ("trace", "bench", "ir", "trace_pid", "arch", "timeline")
DTYPES = {str(dtype).removeprefix("torch."): dtype for dtype in (
    torch.float16, torch.bfloat16, torch.float32, torch.float64, torch.int8, torch.int16, torch.int32, torch.int64,
    torch.uint8, torch.bool, torch.complex64, torch.complex128)}


RAN_KEPT = 16  # the first listed launches whose run the interpreter keeps for their replay
RAN_BYTES = 16 << 20  # one launch's kept run at most (its trace is bounded by the trace limits)


def file_name(index, name):
    return f"{index}.{name}"


def ran_name(index):
    """The file of launch `index`'s run as the program made it (a tensor's file name has no second dot)."""
    return f"{index}.ran.json"


def span_of(tensor):
    """The elements from a tensor's first to its last, as one flat view of its storage."""
    span = 1 + sum((size - 1) * stride for size, stride in zip(tensor.shape, tensor.stride())) if tensor.numel() else 0
    return tensor.as_strided((span,), (1,))


class InputKeeper:
    """Writes each listed launch's tensors, before the launch, while `max_bytes` allow; `why` says why
    a launch's were not kept (the first reason met), for the page to say before a click re-runs."""

    def __init__(self, scratch, max_bytes):
        self.dir, self.left, self.why = os.path.join(scratch, INPUTS_DIR), max_bytes, {}
        self.kept = set()
        os.makedirs(self.dir, exist_ok=True)

    def keep(self, index, tensors):
        """Keep launch `index`'s tensors ({parameter: tensor}); returns whether they were kept."""
        spans = {name: span_of(t) for name, t in tensors.items()}
        size = sum(s.numel() * s.element_size() for s in spans.values())
        why = self.cannot_keep(tensors, size)
        if why is not None:
            self.why[index] = why
            return False
        self.left -= size
        for name, span in spans.items():
            with open(os.path.join(self.dir, file_name(index, name)), "wb") as f:
                f.write(span.detach().contiguous().cpu().view(torch.uint8).numpy().tobytes())
        self.kept.add(index)
        return True

    def keeps_ran(self, index):
        """Whether launch `index`'s run is worth tracing to keep (keep_ran): its inputs were kept."""
        return index < RAN_KEPT and index in self.kept

    def keep_ran(self, index, trace, ms, trace_pid):
        """Keep launch `index`'s run as the program made it: its trace (as `trace_pid` chose its
        programs) and its time, within the bytes left; a replay of it shows them (read_ran)."""
        data = protocol.encode({"trace": trace, "ms": ms, "trace_pid": trace_pid}, nan_to_null=True)
        if len(data) <= min(self.left, RAN_BYTES):
            self.left -= len(data)
            with open(os.path.join(self.dir, ran_name(index)), "wb") as f:
                f.write(data)

    def cannot_keep(self, tensors, size):
        if any(str(t.dtype).removeprefix("torch.") not in DTYPES for t in tensors.values()):
            return "an argument's dtype cannot be kept"
        if size > self.left:
            return "its inputs were past the bytes kept of one run (SCRIPT_KEPT_INPUTS_MB)"
        storages = [t.untyped_storage().data_ptr() for t in tensors.values()]
        if len(set(storages)) < len(storages):
            return "its arguments share memory, which a replay would not"
        return None


def read_inputs(scratch, index, record, device):
    """{parameter: tensor} of launch `index` from the files its worker lent, as the record describes
    them; RunError where a file does not fit its record."""
    inputs = {}
    for arg in record["args"]:
        if arg.get("kind") != "tensor":
            continue
        name, shape, strides = arg["name"], arg["shape"], arg["strides"]
        dtype = DTYPES.get(arg["dtype"])
        path = os.path.join(scratch, INPUTS_DIR, file_name(index, name))
        span = 1 + sum((size - 1) * stride for size, stride in zip(shape, strides)) if all(shape) else 0
        if dtype is None or not os.path.isfile(path) or os.path.getsize(path) != span * torch.empty(0, dtype=dtype).element_size():
            raise RunError("build", f"the kept inputs of launch {index} do not fit its record ('{name}')")
        with open(path, "rb") as f:
            data = bytearray(f.read())
        flat = torch.frombuffer(data, dtype=torch.uint8).view(dtype) if data else torch.empty(0, dtype=dtype)
        inputs[name] = flat.as_strided(shape, strides).to(device)
    return inputs


class Ran:
    """A launch as the program ran it: its trace and its time (ms)."""
    doing = "showing the launch as the program ran it (kept from that run): not running it again"

    def __init__(self, trace, ms):
        self.trace, self.ms = trace, ms

    def launched(self, kernel):
        """Its trace, the kernel (sandbox.launch.kernel.Kernel) left as its launch leaves it: an autotuner
        having chosen the config the interpreter runs (sandbox.launch.launcher.launch)."""
        if kernel.autotuner is not None:
            kernel.autotuner.best_config = kernel.first
        return self.trace


def read_ran(scratch, index, options):
    """Launch `index` as the program ran it (Ran), where its run kept it for these options (a trace, of
    the same programs), else None. The program's word: read as data, checked for shape."""
    try:
        with open(os.path.join(scratch, INPUTS_DIR, ran_name(index)), "rb") as f:
            ran = json.loads(f.read(RAN_BYTES + 1))
        trace, ms, kept_for = ran["trace"], ran["ms"], ran["trace_pid"]
    except (OSError, ValueError, TypeError, KeyError):
        return None
    if (not options["trace"] or kept_for != options["trace_pid"] or results.part_problems("trace", trace)
            or type(ms) is not float or not 0 <= ms < 1e9):
        return None
    return Ran(trace, ms)


def replay(spec, record, emit, scratch, limits, device, run_class, ahead=False):
    """The result of launch `record["index"]` of the program `spec` replayed alone (see the module's
    docstring); `run_class`: the form run's (sandbox.run.pipeline.Run). `ahead`: compiled only, as a
    form run compiles ahead (Run.compile_ahead), launching nothing: what a selection of it needs."""
    index = record["index"]
    emit("status", {"phase": "compiling", "message": f"launch {index} alone, from the inputs kept when it ran"})
    form, _ = form_of(spec["source"], record, spec["options"]["seed"])
    options = {**form["options"], **{k: spec["options"][k] for k in SHOWN_BY},
               "device": "gpu" if device["kind"] == "gpu" else "interpreter"}
    form = {**form, "options": options, "source": definitions(spec["source"], in_place=True)}
    try:
        inputs = read_inputs(scratch, index, record, "cuda" if device["kind"] == "gpu" else "cpu")
    except RunError as e:
        return results.failed(e, device)
    # Each tensor named by its parameter, as the program's run named it (a form names `x_ptr`'s `x`);
    # an autotuned one's, set by the config, left out.
    given = {name: tensor for name, tensor in inputs.items() if name in form["args"]}
    form["args"] = {**form["args"], **{name: name for name in given}}
    gpu = device["kind"] == "gpu"
    # On a GPU the config the program's autotuner chose for it; the interpreter runs an autotuner's first
    # config, the program's run too.
    run = run_class(form, FinishedBeforeSteps(emit, lambda: run.result), scratch, limits, given_inputs=given,
                    given_run=read_ran(scratch, index, options), given_config=record.get("config") if gpu else None)
    if ahead:
        run.compile_ahead()  # its errors are the caller's: a compile ahead only ever helps
        return run.result
    run.result["notes"].append(
        f"Launch {index} as the program ran it: its trace and time kept from that run, its inputs for the rest; "
        f"neither the program nor the launch ran again." if run.given_run and not gpu else
        f"Launch {index} replayed alone from the inputs it received when the program ran (kept from that run"
        f"{', with its trace' if run.given_run else ''}): the program did not run again.")
    try:
        run.execute()
    except Exception as e:  # noqa: BLE001  (the run's error, as a form run's)
        results.fail(run.result, as_run_error(e, run.path, run.phase, run.doing))
    return run.result


def replay_ahead(spec, records, emit, scratch, limits, device, run_class, shown):
    """Replay a script's kept launches whole, one after the other, as their selections would, each part
    to `shown(index, part=, content=)` when ready, the result to `shown(index, result=)`. On a GPU, where
    a replay is mostly compiling (the IR; the tracer's build where no trace was kept), each is compiled
    first, launching nothing: a click that ends them early finds its own compiles done."""
    for record in records if device["kind"] == "gpu" else ():
        with contextlib.suppress(Exception):
            replay(spec, record, emit, scratch, limits, device, run_class, ahead=True)
    for record in records:
        index = record["index"]
        parts = lambda type, content: shown(index, **content) if type == "partial" else emit(type, content)  # noqa: E731
        with contextlib.suppress(Exception):
            start = time.perf_counter()
            result = replay(spec, record, parts, scratch, limits, device, run_class)
            shown(index, result={**result, "run_ms": (time.perf_counter() - start) * 1e3})
    return results.new(device)


class FinishedBeforeSteps:
    """A replayed run's `emit`: what it emits passed on, its result so far going to the worker
    (`finished`) as the page's own steps begin (timing, timeline, IR: their status phases), as a
    program's does (sandbox.run.script): a step that runs past SCRIPT_STEPS_S never takes the
    launch's result with it."""

    def __init__(self, emit, result):
        self.emit, self.result, self.sent = emit, result, False

    def __call__(self, type, content):
        if type == "status" and content["phase"] in PAGE_STEPS and not self.sent:
            self.sent = True
            self.emit("finished", {"result": self.result()})
        self.emit(type, content)
