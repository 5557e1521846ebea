"""The server's own bounds check of a script's shown launch, made where none of the program runs.

    worker ── script's spec ──▶ run process: the program runs; its result, the program's word
    worker ── the source the server kept + the shown launch's record ──▶ a fresh run process (the
              grader's kind: same zygote, same jail): the kernel taken from the source as text,
              checked as the grader checks a kernel, launched in the interpreter with the bounds
              check, on inputs made from the record ──▶ worker: result.server_check

Nothing of the program runs here: the kernel is read from the source as a graded one is
(sandbox.grading.kept: its `@triton.jit` functions, constexprs and Triton imports as the text states
them, never by running it), and taken only if it is a kernel (sandbox.grading.submission's rules,
which keep the Python the interpreter runs a kernel's). The launch's record is the program's
account of its launch (grid, arguments, the tensors' shapes, dtypes and strides, their values where
a form run can make them again: sandbox.launch_form), so the verdict says: this kernel, launched as
the program says it launched it, stays in bounds, or does not. A kernel the grader would not take
(an autotuner's configs not written out, @triton.heuristics) is `unchecked`, and says why.
"""
import os

from sandbox import launch_form
from sandbox.errors import RunError
from sandbox.grading import grader, kept, submission
from sandbox.launch.kernel import as_run_error, silenced, write_source
from sandbox.trace.record import LIMITS as TRACE_LIMITS


def recheck(job, scratch, limits):
    """{"launch", "bounds": "ok" | "out_of_bounds" | "failed" | "unchecked", "message"} of the launch
    record `job["launch"]` of the program `job["source"]`."""
    record = job["launch"]
    verdict = {"launch": record.get("index") if isinstance(record, dict) else None, "bounds": "ok", "message": None}
    try:
        spec, options = launch_spec(job["source"], record)
        # The autotuner's config is among the launch's arguments: its configs are not tried again.
        package = {**kept.package(job["source"], spec["kernel"]), "autotune": None}
        graded = loaded(package, os.path.join(scratch, "rechecked.py"), options)
    except Exception as e:  # noqa: BLE001  (a kernel it does not take, a record it cannot launch: said, unchecked)
        return {**verdict, "bounds": "unchecked", "message": f"the server could not check it: {message_of(e)}"}
    trace_limits = {name: limits.get(name, default) for name, default in TRACE_LIMITS.items()}
    try:
        with silenced():
            grader.interpreted(graded, grader.test_spec(spec, spec["options"]["seed"]),
                               {"trace": False, "trace_pid": None, **graded.launch}, trace_limits, poison=False)
    except RunError as e:  # a launch that failed, or a record that cannot be launched (no value for an argument)
        bounds = "out_of_bounds" if e.type == "OutOfBounds" else "failed" if e.phase == "launch" else "unchecked"
        return {**verdict, "bounds": bounds, "message": e.message if bounds != "unchecked"
                else f"the server could not check it: {e.message}"}
    except Exception as e:  # noqa: BLE001
        return {**verdict, "bounds": "failed", "message": message_of(as_run_error(e, graded.path, "launch", "launching"))}
    return verdict


def loaded(package, path, options):
    """The kernel checked as the grader checks one (sandbox.grading.submission) and loaded for the
    interpreter: Python that is only a kernel's."""
    checked = submission.check(package)
    write_source(submission.bare_source(checked[0]), path)
    interpreted, _ = submission.load(checked, package["kernel"], path, interpret=True)
    return grader.Graded(interpreted, None, path, options)


def message_of(e):
    return (getattr(e, "message", None) or f"{type(e).__name__}: {e}")[:1000]


def launch_spec(source, record):
    """(the launch as a form spec: kernel, inputs, args, grid, seed; its num_warps and num_stages).
    An autotuner's meta-parameters are the launch's arguments here, as its config set them."""
    config = record.get("config") if isinstance(record, dict) else None
    launch = {**record, "config": None} if isinstance(record, dict) else record
    spec, _ = launch_form.form_of(source, launch)
    chosen = config if isinstance(config, dict) else record
    return spec, {"num_warps": chosen.get("num_warps", 4), "num_stages": chosen.get("num_stages", 3)}


__all__ = ["recheck"]
