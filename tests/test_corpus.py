"""Kernels we did not write: those of installed Triton libraries (tests/corpus), each launched as its
library's wrapper launches it. Each runs `ok`, checked against PyTorch and traced; and with the mask
of one of its stores removed (at test time, in the source's text) it stops with the out-of-bounds
error that names the program, the tensor and the line. In the interpreter here, and on a GPU host
(`pytest -m gpu`) on the GPU, traced by the GPU tracer (sandbox.trace.gpu) with no fallback."""
from pathlib import Path

import pytest

from sandbox.errors import RunError
from sandbox.launch import build
from sandbox.launch.kernel import write_source
from sandbox.run.pipeline import run_spec
from sandbox.spec import normalize
from sandbox.trace import gpu as gpu_trace
from tests.corpus import bnb, cce, fla, liger, without_store_mask
from tests.test_gpu_trace import instrumented_ir, instrumented_trace, interpreter_trace, same

pytestmark = pytest.mark.integration  # runs the libraries' kernels: the corpus

ENTRIES = {**liger.ENTRIES, **fla.ENTRIES, **bnb.ENTRIES, **cce.ENTRIES}

# Kernels that cannot run as written, and why: each test of theirs is expected to fail.
GAPS = {
    "liger.softmax_multi_block_forward": "calls tl.max(m, blk_max), a reduction whose axis is a tensor (the "
                                         "maximum of two values is tl.maximum): an error in the kernel itself",
}
# ... and on a GPU, where Triton's own compiler takes them (the interpreter is more lenient).
GPU_GAPS = {
    "liger.softmax_multi_block_backward": "sets acc = tl.float32(0.0), a dtype called as a constructor, which "
                                          "Triton's compiler refuses ('dtype' object is not callable, line 98)",
}
NAMES = [pytest.param(name, marks=pytest.mark.xfail(reason=GAPS[name], strict=True)) if name in GAPS else name
         for name in ENTRIES]
DEVICES = ["interpreter", pytest.param("gpu", marks=pytest.mark.gpu)]
FALLBACK = "Traced by Triton's interpreter on CPU copies"


def launches():
    """(name, device) of each kernel in the interpreter and on a GPU, each expected to fail where it cannot run."""
    for name in ENTRIES:
        for device in ("interpreter", "gpu"):
            gap = GAPS.get(name) or (GPU_GAPS.get(name) if device == "gpu" else None)
            marks = ([pytest.mark.gpu] if device == "gpu" else []) + (
                [pytest.mark.xfail(reason=gap, strict=True)] if gap else [])
            yield pytest.param(name, device, marks=marks, id=f"{name}-{device}")


def traced_by(result, device):
    """The tracer a device's run must use: the GPU's own, with no fallback to the interpreter."""
    assert result["trace"]["tracer"] == ("gpu" if device == "gpu" else "interpreter")
    assert not any(note.startswith(FALLBACK) for note in result["notes"]), result["notes"]


@pytest.mark.parametrize("name, device", launches())
def test_a_library_kernel_runs_ok_checked_and_traced(name, device):
    result = run_spec(ENTRIES[name].spec(trace=True, check=True, device=device))
    assert result["error"] is None, result["error"]
    assert result["status"] == "ok", result["check"]
    assert result["trace"]["programs"] and result["check"]["ok"]
    traced_by(result, device)


@pytest.mark.parametrize("name, device", launches())
def test_a_library_kernel_without_a_store_mask_is_a_named_out_of_bounds_error(name, device):
    entry = ENTRIES[name]
    source, line = without_store_mask(entry.source(), entry.kernel, entry.store_pointer())
    result = run_spec(entry.spec(source, device=device))
    error = result["error"]
    assert error is not None and error["type"] == "OutOfBounds", error
    assert error["phase"] == "launch" and error["line"] == line
    assert f"`{entry.overrun}`" in error["message"] and isinstance(error["pid"], list)
    traced_by(result, device)


@pytest.mark.parametrize("name", NAMES)
def test_the_instrumented_build_of_a_library_kernel_records_what_the_interpreter_sees(name, tmp_path):
    """The GPU tracer's rewrite of the kernel, run here by the interpreter: the same trace."""
    raw = ENTRIES[name].spec(trace=True)
    assert same(instrumented_trace(raw, tmp_path / "b")) == same(interpreter_trace(raw, tmp_path / "a"))


def gpu_tracer_fallback(entry, scratch):
    """Why the GPU tracer would hand this launch to the interpreter (None: it would not): what an
    instrumented build cannot see (read from the source and the launch's arguments), or its compile
    for a GPU (sm90, as the run's first launch compiles it) failing."""
    spec = normalize(entry.spec(trace=True))
    scratch.mkdir()
    path = str(scratch / "kernel.py")
    write_source(spec["source"], path)
    kernel, namespace, inputs, _, _, grid, _ = build.prepare(spec, path, True, "cpu")
    tracer, args = gpu_trace.prepare(spec, path, kernel, inputs, namespace)
    if tracer.unsupported:
        return f"the GPU tracer cannot see {tracer.unsupported}"
    try:
        instrumented_ir(spec, kernel, tracer, args, grid, scratch)
    except RunError as e:
        return f"its instrumented build does not compile for a GPU: {e.message}"
    return None


def test_the_gpu_tracer_takes_most_library_kernels_without_a_fallback(tmp_path):
    reasons = {name: gpu_tracer_fallback(entry, tmp_path / name) for name, entry in ENTRIES.items()}
    fallbacks = {name: reason for name, reason in reasons.items() if reason}
    taken = len(reasons) - len(fallbacks)
    print(f"GPU tracer: {taken} of {len(reasons)} library kernels without a fallback; the others: {fallbacks}")
    assert taken >= 0.8 * len(reasons), fallbacks
    assert set(fallbacks) <= set(GAPS) | set(GPU_GAPS), fallbacks  # each a kernel that cannot run there as written


DOCS = Path(__file__).resolve().parent.parent / "docs" / "how-it-works.md"


def corpus_table():
    """The docs' table of the corpus, from the entries and the installed libraries: per library and
    version, its kernels, those `ok` here with their named out-of-bounds error, and its named
    limitations (in the interpreter; on a GPU, where Triton's compiler refuses the kernel)."""
    libraries = {}
    for name, entry in ENTRIES.items():
        libraries.setdefault(entry.library(), []).append(name)
    rows = [("library", "version", "kernels", "`ok` in the interpreter", "expected failures: interpreter",
             "expected failures: GPU compiler")]
    for (library, version), names in libraries.items():
        counts = [sum(name in gaps for name in names) for gaps in (GAPS, GPU_GAPS)]
        rows.append((library, version, len(names), len(names) - counts[0], *counts))
    rows.append(("all", "", *(sum(row[i] for row in rows[1:]) for i in range(2, 6))))
    lines = ["| " + " | ".join(map(str, row)) + " |" for row in rows]
    lines[1:1] = ["|---|---|---:|---:|---:|---:|"]
    return "\n".join("  " + line for line in lines)


def test_the_docs_count_the_corpus_per_library_and_version():
    assert len(ENTRIES) >= 60 and len(set(entry.library() for entry in ENTRIES.values())) >= 4
    assert corpus_table() in DOCS.read_text(), "docs/how-it-works.md's table of the corpus, as it stands:\n" + corpus_table()
