"""The instrumented launch (sandbox.trace.gpu) against the interpreter tracer (sandbox.trace).

Here, without a GPU, the instrumented kernel runs in Triton's interpreter: the rewrite, the probes,
the coverage counters and the decoding are the same code a GPU runs, and its builds must compile
for sm90. On a GPU host (`pytest -m gpu`) the same corpus runs through the real GPU path."""
import math

import pytest
import triton.language as tl

from sandbox.errors import RunError
from sandbox.launch import build
from sandbox.run import launch_pass
from sandbox.launch.ir import compile_ir
from sandbox.launch.kernel import write_source
from sandbox.spec import normalize
from sandbox.trace import gpu as gpu_trace, provenance
from sandbox.trace.patches import interpreter_hygiene, patch_interpreter_compat
from tests.support import needs_block_pointers
from tests.support.kernels import VECTOR_ADD, vector_add_spec
from tests.support.trace_corpus import BUGS, CORPUS

pytestmark = pytest.mark.integration  # the two tracers over the whole trace corpus

LIMITS = {"max_programs": 4096, "max_bytes": 2_000_000}


def launch(raw, tmp_path):
    spec = normalize(raw)
    tmp_path.mkdir(exist_ok=True)
    path = str(tmp_path / "kernel.py")
    write_source(spec["source"], path)
    kernel, namespace, inputs, _, args, grid, _ = build.prepare(spec, path, True, "cpu")
    return spec, path, kernel, namespace, inputs, args, grid


def interpreter_trace(raw, tmp_path):
    spec, path, kernel, _, inputs, args, grid = launch(raw, tmp_path)
    return launch_pass.traced_launch(kernel, grid, args, inputs, path, spec["options"], LIMITS)


def instrumented_trace(raw, tmp_path, light=False):
    """gpu_trace.gpu_trace's trace; with `light`, gpu_trace.bounds_check by the build that neither
    records nor counts coverage (None)."""
    spec, path, kernel, namespace, inputs, _, grid = launch(raw, tmp_path)
    tracer, args = gpu_trace.prepare(spec, path, kernel, inputs, namespace)
    assert tracer.unsupported is None
    patch_interpreter_compat()
    with interpreter_hygiene():
        jit, config = tracer.load(str(tmp_path)), kernel.config(None, 4, 3)
        if light:
            return gpu_trace.bounds_check(tracer, jit, grid, args, config, LIMITS, light=True)
        return gpu_trace.gpu_trace(tracer, jit, grid, args, config, spec["options"], LIMITS)


def light_check(raw, tmp_path):
    return instrumented_trace(raw, tmp_path, light=True)


def same(trace):
    return {k: v for k, v in trace.items() if k not in ("tracer", "bytes_touched")}


@pytest.mark.parametrize("name", CORPUS)
def test_the_light_check_passes_a_launch_in_bounds(name, tmp_path):
    light_check(CORPUS[name], tmp_path)  # raises on an access out of bounds


@pytest.mark.parametrize("name", CORPUS)
def test_the_instrumented_launch_records_what_the_interpreter_sees(name, tmp_path):
    expected = interpreter_trace(CORPUS[name], tmp_path / "a")
    got = instrumented_trace(CORPUS[name], tmp_path / "b")
    assert got["tracer"] == "gpu" and expected["tracer"] == "interpreter"
    assert same(got) == same(expected)
    assert got["programs_traced"] == got["programs_total"]


@pytest.mark.parametrize("name", BUGS)
def test_both_tracers_stop_an_out_of_bounds_access_in_the_same_program(name, tmp_path):
    raw, pid, tensor = BUGS[name]
    errors = []
    for trace, where in ((interpreter_trace, "a"), (instrumented_trace, "b"), (light_check, "c")):
        with pytest.raises(RunError) as caught:
            trace(raw, tmp_path / where)
        errors.append(caught.value)
    for error in errors:
        assert (error.type, error.phase, error.pid) == ("OutOfBounds", "launch", pid)
        assert f"`{tensor}`" in error.message.split(" at ")[0]
        last = error.trace["programs"][-1]
        assert last["pid"] == pid and last["accesses"][-1]["out_of_bounds"]
    assert errors[0].message == errors[1].message and errors[0].line == errors[1].line
    assert errors[0].trace["programs"][-1] == errors[1].trace["programs"][-1]


def test_an_overrun_is_judged_by_the_tensor_the_pointer_comes_from(tmp_path):
    """Reading past x into y is x's overrun, reported whole; not a quiet read of y."""
    from sandbox.run.pipeline import run_spec
    n = 98432
    into_y = VECTOR_ADD.replace("x = tl.load(x_ptr + offs, mask=mask)", "x = tl.load(x_ptr + offs + n + 32, mask=mask)")
    result = run_spec(vector_add_spec(n=n, source=into_y, device="interpreter"))
    assert result["status"] == "error" and result["error"]["pid"] == [0, 0, 0]
    assert f"`x` at offsets {n + 32}..{n + 32 + 1023}" in result["error"]["message"]

    unmasked = VECTOR_ADD.replace("x = tl.load(x_ptr + offs, mask=mask)", "x = tl.load(x_ptr + offs)")
    result = run_spec(vector_add_spec(n=n, source=unmasked, device="interpreter"))
    assert result["error"]["pid"] == [96, 0, 0]
    assert f"`x` at offsets {n}..99327" in result["error"]["message"]
    stray = result["trace"]["programs"][-1]["accesses"][-1]
    assert stray["tensor"] == "x" and stray["out_of_bounds"] == [[n, 99328 - n]]


def instrumented_ir(spec, kernel, tracer, args, grid, scratch):
    """(The IR, its launch keywords) of the instrumented build compiled for sm90 as the tracer's first
    launch of a trace compiles it: one program recorded, at the tracer's warps."""
    instrumented = scratch / "kernel_instrumented.py"
    instrumented.write_text(tracer.instrumented_source())
    _, extra = tracer.buffers(math.prod(grid), [0], True)
    config = kernel.config(None, 4, 3)
    arguments = {**args, **extra, **config.kwargs}
    keywords = tracer.keywords(arguments, config)
    return compile_ir(str(instrumented), spec["kernel"], arguments, num_warps=keywords["num_warps"],
                      num_stages=keywords["num_stages"], arch="sm90"), keywords


@pytest.mark.parametrize("name", ["vector_add_masked_tail", "atomics", "loop_over_k_with_dot", "autotuned",
                                  "helper_functions", pytest.param("block_pointers", marks=needs_block_pointers()),
                                  "spin_lock", "optional_pointer_none"])
def test_instrumented_builds_compile_for_a_gpu(name, tmp_path):
    interpreter_trace(CORPUS[name], tmp_path / "interpreted")  # an interpreted launch first, as a GPU run's fallback
    assert not callable(tl.int32)  # the interpreter's patches are undone (a callable dtype does not compile)
    spec, path, kernel, namespace, inputs, _, grid = launch(CORPUS[name], tmp_path)
    tracer, args = gpu_trace.prepare(spec, path, kernel, inputs, namespace)
    ir, keywords = instrumented_ir(spec, kernel, tracer, args, grid, tmp_path)
    assert keywords["num_warps"] == gpu_trace.WIDE_WARPS
    assert "atom.global" in ir["ptx"] and ".target sm_90" in ir["ptx"]
    assert f"ntid {32 * gpu_trace.WIDE_WARPS}" in ir["ptx"]  # .reqntid or .maxntid, as Triton's version writes


def test_a_kernel_that_reads_its_warps_is_instrumented_at_its_own(tmp_path):
    """The instrumented build runs at WIDE_WARPS (a quicker compile; what a program accesses does
    not depend on its warps) unless the kernel asks how many it has."""
    spec, path, kernel, namespace, inputs, _, grid = launch(CORPUS["vector_add_masked_tail"], tmp_path)
    config = kernel.config(None, 4, 3)
    assert gpu_trace.prepare(spec, path, kernel, inputs, namespace)[0].keywords({}, config)["num_warps"] == 32
    asks = spec["source"].replace("pid = tl.program_id(0)", "pid = tl.program_id(0) + 0 * tl.extra.cuda.num_warps()")
    assert asks != spec["source"]
    spec, path, kernel, namespace, inputs, _, grid = launch({**CORPUS["vector_add_masked_tail"], "source": asks},
                                                             tmp_path / "asks")
    assert gpu_trace.prepare(spec, path, kernel, inputs, namespace)[0].keywords({}, config)["num_warps"] == 4


def test_an_instrumented_build_that_does_not_compile_wide_compiles_at_the_kernels_own_warps(tmp_path):
    """A wide build Triton refuses costs one compile, then the kernel's own warps, for every later
    launch of the tracer; an error at the kernel's own warps is the kernel's, raised."""
    spec, path, kernel, namespace, inputs, _, grid = launch(CORPUS["vector_add_masked_tail"], tmp_path)
    tracer, _ = gpu_trace.prepare(spec, path, kernel, inputs, namespace)
    config = kernel.config(None, 4, 3)

    class Compiler:  # stands in for a JITFunction's warmup: what Triton refuses is the test's to say
        def __init__(self, refused):
            self.refused, self.warps = refused, []

        def warmup(self, grid, **keywords):
            self.warps.append(keywords["num_warps"])
            if keywords["num_warps"] in self.refused:
                raise RuntimeError(f"PassManager::run failed at {keywords['num_warps']} warps")
            return "compiled"

    wide_refused = Compiler({gpu_trace.WIDE_WARPS})
    keywords, compiled = tracer.compile(wide_refused, grid, {"n": 50}, config)
    assert (keywords["num_warps"], compiled, wide_refused.warps) == (4, "compiled", [gpu_trace.WIDE_WARPS, 4])
    later = Compiler(set())
    assert tracer.compile(later, grid, {"n": 50}, config)[0]["num_warps"] == 4 and later.warps == [4]
    fresh, _ = gpu_trace.prepare(spec, path, kernel, inputs, namespace)
    with pytest.raises(RuntimeError, match="at 4 warps"):
        fresh.compile(Compiler({4, gpu_trace.WIDE_WARPS}), grid, {}, config)


def test_an_instrumented_build_specializes_on_nothing(tmp_path):
    """One build per kernel's constexprs and types: no argument of the user's or of the tracer's is
    specialized on (an integer's divisibility, a pointer's alignment), so the next size of a program or
    an autotuner's next key does not compile the slow instrumented build again."""
    from sandbox.launch.kernel import find_kernel, load_module
    spec, path, kernel, namespace, inputs, _, grid = launch(CORPUS["loop_over_k_with_dot"], tmp_path)
    tracer, _ = gpu_trace.prepare(spec, path, kernel, inputs, namespace)
    instrumented = tmp_path / "kernel_instrumented.py"
    instrumented.write_text(tracer.instrumented_source())
    jit = find_kernel(load_module(str(instrumented), False), spec["kernel"]).jit  # compiled, not interpreted
    dynamic = [p for p in jit.params if not p.is_constexpr]
    assert {p.name for p in dynamic} >= {"a_ptr", "M", "K", "_tp_cap", "_tp_base_0"}
    assert all(p.do_not_specialize and p.do_not_specialize_on_alignment for p in dynamic)
    assert not any(p.do_not_specialize for p in jit.params if p.is_constexpr)


MOVING = """
import triton
import triton.language as tl

@triton.jit
def row_of(P, row, stride):
    return tl.load(P + row * stride + tl.arange(0, 8))

@triton.jit
def k(X, Y, Z, W, stride, n):
    row = tl.program_id(0)
    X += row * stride
    Y = Y + row * stride
    z = Z + tl.arange(0, 8)
    for i in range(n):
        tl.store(z, tl.load(X + tl.arange(0, 8)))
        z += stride
    w = tl.make_block_ptr(W, (n, 8), (stride, 1), (row, 0), (1, 8), (1, 0))
    w = tl.advance(w, (1, 0))
    tl.store(Y + tl.arange(0, 8), row_of(X, row, stride) + row_of(Z, 0, stride) + tl.sum(tl.load(w), axis=0))
"""


def test_provenance_follows_moved_pointers_helpers_and_block_pointers():
    analysis = provenance.analyze(MOVING, "k")
    assert analysis.unsupported == []
    sites = {(site.name, site.line, tuple(sorted(site.roots - {"row", "stride"})), len(site.path), site.block)
             for site in analysis.sites}
    assert sites == {("load", 7, ("X",), 1, None), ("load", 7, ("Z",), 1, None),  # the helper, once per call
                     ("store", 16, ("Z",), 0, None), ("load", 16, ("X",), 0, None),
                     ("store", 20, ("Y",), 0, None), ("load", 20, ("W",), 0, "w")}
    assert [f.name for f in analysis.functions] == ["k", "row_of", "row_of"]
    assert analysis.functions[0].blocks == {"w": 2}


HELPER = """
@triton.jit
def first(p):
    return tl.load(p, boundary_check=(0,))

@triton.jit
def twice(p):
    return tl.load(p) + twice(p)
"""


@pytest.mark.parametrize("source, reason", [
    ("tl.store(out_ptr + tl.arange(0, 8), tl.load(tl.make_block_ptr(x_ptr, (n,), (1,), (0,), (8,), (0,))))",
     "a block pointer made or advanced at line 14 other than by assigning it to a name"),
    ("p = tl.make_block_ptr(x_ptr, (n,), (1,), (0,), (8,), (0,))\n    tl.store(out_ptr + tl.arange(0, 8), first(p))",
     "the call of first() at line 15 (a block pointer or an unpacked argument passed to a helper)"),
    ("s = (n,)\n    p = tl.make_block_ptr(x_ptr, s, (1,), (0,), (8,), (0,))\n    tl.store(out_ptr, tl.load(p))",
     "a block pointer at line 15 whose shape, strides, offsets or block shape is not a tuple written out"),
    ("p = tl.make_block_ptr(x_ptr, (n,), (1,), (0,), (8,), (0,))\n    q = p\n    tl.store(out_ptr, tl.load(q))",
     "the block pointer p assigned or copied at line 15 other than by tl.make_block_ptr or tl.advance"),
    ("tl.store(out_ptr, twice(x_ptr))", "a recursive call of twice()"),
    ("p = tl.where(n > 3, x_ptr, out_ptr)\n    tl.store(out_ptr + tl.arange(0, 8), tl.load(p + tl.arange(0, 8)))",
     "not derived from exactly one tensor"),
])
def test_what_instrumentation_cannot_see_is_named(source, reason, tmp_path):
    raw = {"version": 1, "source": f"import triton\nimport triton.language as tl\n{HELPER}\n@triton.jit\n"
                                   f"def k(x_ptr, out_ptr, n):\n    {source}\n",
           "kernel": "k", "inputs": {"x": "torch.randn(8)", "out": "torch.empty(8)"},
           "args": {"x_ptr": "x", "out_ptr": "out", "n": 8}, "grid": "(1,)"}
    spec, path, kernel, namespace, inputs, _, _ = launch(raw, tmp_path)
    tracer, _ = gpu_trace.prepare(spec, path, kernel, inputs, namespace)
    assert reason in tracer.unsupported


def test_a_selected_program_is_recorded_on_demand(tmp_path):
    raw = CORPUS["vector_add_masked_tail"]
    raw = {**raw, "options": {**raw["options"], "trace_pid": [2]}}
    for trace in (interpreter_trace(raw, tmp_path / "a"), instrumented_trace(raw, tmp_path / "b")):
        assert [p["pid"] for p in trace["programs"]] == [[2, 0, 0]]
        assert trace["programs"][0]["accesses"][0]["offsets"] == [[32, 16]]
        assert trace["coverage"]["out"]["unwritten"] == 0  # coverage still covers the whole launch


def test_programs_too_big_for_their_slots_are_recorded_whole_by_a_second_launch(tmp_path, monkeypatch):
    """Record slots share a fixed buffer: where a program outgrows its share, fewer programs are
    recorded again, each whole, rather than every one cut short."""
    raw = CORPUS["loop_over_k_with_dot"]
    expected = {tuple(p["pid"]): p for p in interpreter_trace(raw, tmp_path / "a")["programs"]}
    monkeypatch.setattr(gpu_trace, "RECORD_LANES", 2048)
    launches = []
    run = gpu_trace.InstrumentedTracer.run
    monkeypatch.setattr(gpu_trace.InstrumentedTracer, "run", lambda self, *a, **k: launches.append(a) or run(self, *a, **k))
    got = instrumented_trace(raw, tmp_path / "b")
    assert len(launches) == 2 and len(got["programs"]) < len(expected)
    for program in got["programs"]:
        assert "truncated" not in program and program == expected[tuple(program["pid"])]


def run_on_gpu(raw, gpu_tracer, cpu_first=0, **run):
    from sandbox.run.pipeline import run_spec
    return run_spec({**raw, "options": {**raw["options"], "device": "gpu"}},
                    limits={"gpu_tracer": gpu_tracer, "max_programs": 4096, "max_bytes": 2_000_000,
                            "trace_on_cpu_first": cpu_first}, **run)


@pytest.mark.gpu
def test_on_a_gpu_a_small_new_launch_is_traced_by_the_interpreter_first_and_a_checked_one_by_the_gpu():
    """TRACE_ON_CPU_FIRST: the interpreter traces a small launch while its real compile runs beside it;
    the same trace as the GPU tracer's. A launch checked before, or compiled ahead, or bigger than the
    setting, gets the GPU tracer (its instrumented build is at hand, or the interpreter too slow)."""
    raw = CORPUS["vector_add_masked_tail"]
    first, on_gpu = run_on_gpu(raw, True, cpu_first=256), run_on_gpu(raw, True)
    assert first["status"] == on_gpu["status"] == "ok", first["error"]
    assert first["trace"]["tracer"] == "interpreter" and any("sooner" in note for note in first["notes"])
    assert same(first["trace"]) == same(on_gpu["trace"])
    for run in ({"sanitized_before": True}, {"compiled_ahead": True}):
        assert run_on_gpu(raw, True, cpu_first=256, **run)["trace"]["tracer"] == "gpu", run
    assert run_on_gpu(raw, True, cpu_first=1)["trace"]["tracer"] == "gpu"


@pytest.mark.gpu
@pytest.mark.parametrize("name", BUGS)
def test_on_a_gpu_a_small_launch_out_of_bounds_is_stopped_by_the_interpreter_first_as_by_the_gpu_tracer(name):
    raw, pid, tensor = BUGS[name]
    first, on_gpu = run_on_gpu(raw, True, cpu_first=1 << 20), run_on_gpu(raw, True)
    assert first["status"] == "error" and first["error"]["pid"] == pid, first["error"]
    assert first["error"]["message"] == on_gpu["error"]["message"]


@pytest.mark.gpu
@pytest.mark.parametrize("name", CORPUS)
def test_on_a_gpu_the_instrumented_launch_equals_the_interpreter_pass(name):
    """The same GPU inputs, traced on the GPU and by the interpreter on their CPU copies."""
    on_gpu, interpreted = run_on_gpu(CORPUS[name], True), run_on_gpu(CORPUS[name], False)
    assert on_gpu["status"] == interpreted["status"] == "ok", (on_gpu["error"], interpreted["error"])
    assert on_gpu["trace"]["tracer"] == "gpu" and not on_gpu["notes"], on_gpu["notes"]
    if name in CONTENDED:  # how often a program spins on a lock another holds is the GPU's timing
        assert spins_collapsed(same(on_gpu["trace"])) == spins_collapsed(same(interpreted["trace"]))
    else:
        assert same(on_gpu["trace"]) == same(interpreted["trace"])


CONTENDED = {"spin_lock"}  # programs wait on each other: the interpreter runs them one after another


def spins_collapsed(trace):
    """`trace` with each run of a program's identical consecutive accesses (a lock's compare-and-swap
    tried again while another program holds it) as one access."""
    programs = []
    for program in trace["programs"]:
        accesses = [a for i, a in enumerate(program["accesses"]) if i == 0 or a != program["accesses"][i - 1]]
        programs.append({**program, "accesses": accesses})
    return {**trace, "programs": programs}


@pytest.mark.gpu
@pytest.mark.parametrize("name", BUGS)
def test_on_a_gpu_an_out_of_bounds_access_is_stopped_before_the_real_launch(name):
    raw, pid, tensor = BUGS[name]
    on_gpu, interpreted = run_on_gpu(raw, True), run_on_gpu(raw, False)
    for result in (on_gpu, interpreted):
        assert result["status"] == "error" and result["error"]["pid"] == pid
        assert f"`{tensor}`" in result["error"]["message"]
    assert on_gpu["error"]["message"] == interpreted["error"]["message"]
    assert on_gpu["trace"]["programs"][-1]["accesses"][-1]["out_of_bounds"]
    assert run_on_gpu(CORPUS["vector_add_masked_tail"], True)["status"] == "ok"  # the process is fine


@pytest.mark.gpu
def test_on_a_gpu_a_big_launch_is_traced_whole():
    n = 1 << 24
    raw = vector_add_spec(n=n, bench=False)
    result = run_on_gpu(raw, True)
    assert result["status"] == "ok", result["error"]
    trace = result["trace"]
    assert trace["tracer"] == "gpu" and trace["programs_total"] == n // 1024
    assert trace["coverage"]["out"] == {**trace["coverage"]["out"], "unwritten": 0, "multiply_written": 0}
    assert trace["bytes_touched"] == 3 * 4 * n
    assert trace["programs_traced"] >= 1000


MOVED_POINTERS = """
@triton.jit
def k(X, Y, stride, N, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    X += row * stride
    Y += row * stride
    cols = tl.arange(0, BLOCK)
    x = tl.load(X + cols, mask=cols < N, other=0.0)
    tl.store(Y + cols, x * 2)
"""


@pytest.mark.parametrize("record_lanes, offsets", [(2048, "offsets 6400..6427"), (256, "offsets outside it")])
def test_an_overrun_whose_record_did_not_fit_its_slot_is_still_named(record_lanes, offsets, tmp_path, monkeypatch):
    # Pointer arguments moved with `X += row * stride`, the store's mask removed: the last row writes
    # past the end. With many programs sharing the record buffer, that program's slot is too small for
    # its stray store: it is recorded again alone (or, past any buffer, named without its offsets).
    from tests.support.trace_corpus import spec
    raw = spec("k", MOVED_POINTERS, {"x": "torch.randn(64, 100)", "y": "torch.empty(64, 100)"},
               {"X": "x", "Y": "y", "stride": "x.stride(0)", "N": 100, "BLOCK": 128}, "(64,)")
    monkeypatch.setattr(gpu_trace, "RECORD_LANES", record_lanes)
    with pytest.raises(RunError) as caught:
        instrumented_trace(raw, tmp_path)
    error = caught.value
    assert (error.type, error.pid, error.line) == ("OutOfBounds", [63, 0, 0], 11)
    assert error.message.startswith(f"program (63, 0, 0) stores `y` at {offsets}")


def test_a_jit_function_imported_from_a_library_is_named(tmp_path):
    """Its accesses are not in the source, so no instrumented build sees them; a libdevice call is no access."""
    source = ("import triton\nimport triton.language as tl\nfrom triton.language.extra import libdevice\n"
              "from liger_kernel.ops.utils import element_mul_kernel\n\n@triton.jit\n"
              "def k(x_ptr, g_ptr, n):\n    element_mul_kernel(x_ptr, 0, g_ptr, n, 8)\n"
              "    tl.store(x_ptr + tl.arange(0, 8), libdevice.exp(tl.load(x_ptr + tl.arange(0, 8))))\n")
    raw = {"version": 1, "source": source, "kernel": "k", "inputs": {"x": "torch.randn(8)", "g": "torch.ones(1)"},
           "args": {"x_ptr": "x", "g_ptr": "g", "n": 8}, "grid": "(1,)"}
    spec, path, kernel, namespace, inputs, _, _ = launch(raw, tmp_path)
    tracer, _ = gpu_trace.prepare(spec, path, kernel, inputs, namespace)
    assert tracer.unsupported == ("memory accesses inside element_mul_kernel() called at line 8, a @triton.jit "
                                  "function of liger_kernel.ops.utils (not of the source)")


JITTED_BY_ASSIGNMENT = {
    "version": 1, "kernel": "scaled_copy", "grid": "(triton.cdiv(100, 32),)", "reference": {"out": "x.half().float() * 2"},
    "inputs": {"x": "torch.randn(100)", "out": "torch.empty(100)"},
    "args": {"x_ptr": "x", "out_ptr": "out", "n": 100, "BLOCK": 32},
    "options": {"ir": False, "bench": False, "device": "interpreter"},
    "source": """import torch
import triton
import triton.language as tl

as_type = tl.cast


def twice(x):
    return x * 2


twice = triton.jit(twice)


def scaled_copy(x_ptr, out_ptr, n, BLOCK: tl.constexpr, DOUBLE: tl.constexpr):
    lanes = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = as_type(tl.load(x_ptr + lanes, mask=lanes < n), tl.float16).to(tl.float32)
    tl.store(out_ptr + lanes, twice(x) if DOUBLE else x, mask=lanes < n)


scaled_copy = triton.jit(do_not_specialize=["n"])(scaled_copy)
scaled_copy = triton.heuristics({"DOUBLE": lambda args: True})(scaled_copy)
"""}


def test_a_kernel_jitted_by_assignment_is_instrumented_once(tmp_path):
    """`kernel = triton.jit(kernel)` after a plain `def` (as some libraries write kernels), with a
    module-level alias of a builtin: the instrumented module jits the rewritten kernel itself."""
    expected = interpreter_trace(JITTED_BY_ASSIGNMENT, tmp_path / "a")
    got = instrumented_trace(JITTED_BY_ASSIGNMENT, tmp_path / "b")
    assert same(got) == same(expected) and got["programs_traced"] == 4


ALIASED_ACCESSES = {
    "version": 1, "kernel": "copy_shifted", "grid": "(triton.cdiv(100, 32),)", "reference": {"out": "x + 1"},
    "inputs": {"x": "torch.randn(100)", "out": "torch.empty(100)"},
    "args": {"x_ptr": "x", "out_ptr": "out", "n": 100, "BLOCK": 32},
    "options": {"ir": False, "bench": False, "device": "interpreter"},
    "source": """import torch
import triton
import triton.language as tl
from triton.language import store as put

fetch = tl.load


@triton.jit
def copy_shifted(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    lanes = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    put(out_ptr + lanes, fetch(x_ptr + lanes, mask=lanes < n) + 1, mask=lanes < n)
"""}


def test_accesses_through_aliases_of_tl_load_and_store_are_instrumented(tmp_path):
    """`fetch = tl.load`, `from triton.language import store as put`: accesses the instrumented build
    must see, as the interpreter does, or a GPU run's bounds check would miss them."""
    expected = interpreter_trace(ALIASED_ACCESSES, tmp_path / "a")
    got = instrumented_trace(ALIASED_ACCESSES, tmp_path / "b")
    assert same(got) == same(expected) and expected["programs"][0]["accesses"]


def test_a_streams_lanes_make_the_runs_an_access_by_access_reading_makes():
    """stream_runs reads every recorded event at once (on the GPU where the lanes are many): its runs
    of active, masked and out-of-bounds lanes are those of each event's lanes read on their own."""
    import numpy as np
    import torch
    from sandbox.trace.record import runs_of
    rng = np.random.default_rng(7)
    for _ in range(100):
        stream, starts, events = [], [], []
        for _ in range(int(rng.integers(1, 6))):
            n = int(rng.integers(0, 40))  # an access with no lanes too
            elements = int(rng.integers(0, 100)) + np.arange(n) + (rng.random(n) < 0.2) * rng.integers(-3, 5, n)
            lanes = elements * 4 + (rng.random(n) < 0.1) * 2 + (rng.random(n) < 0.8)
            stream += [3, n]
            starts.append(len(stream))
            stream += lanes.tolist()
            events.append(lanes)
        found = zip(*gpu_trace.stream_runs(torch.tensor(stream), np.array(starts), np.array([e.size for e in events])))
        for lanes, runs in zip(events, found):
            elements, active = lanes >> 2, (lanes & 1).astype(bool)
            out = active & ((lanes >> 1) & 1).astype(bool)
            assert tuple(runs) == (runs_of(elements[active]), runs_of(elements[~active]), runs_of(elements[out]))


def test_coverage_from_a_tensor_is_the_coverage_from_an_array():
    """The GPU tracer's counters stay on the device: coverage_result finds the same runs in a tensor
    as in an array, for a tensor and for a strided view."""
    import numpy as np
    import torch
    from sandbox.trace.record import coverage_result, TensorRange
    for tensor in (torch.empty(64, 48), torch.empty(64, 64)[:, 8:40]):
        seen = TensorRange("t", tensor)
        writers = np.random.default_rng(1).integers(0, 3, seen.span).astype(np.uint8)
        assert coverage_result(torch.from_numpy(writers), seen) == coverage_result(writers, seen)
        assert coverage_result(writers, seen)["unwritten"] == int((torch.as_strided(
            torch.from_numpy(writers), tensor.shape, tensor.stride()) == 0).sum())
