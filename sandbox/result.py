"""The result of a run: its one definition. Built here, by the run pipeline, the worker (for a run
that timed out, crashed or broke a limit) and the server's dispatcher; documented in docs/result.md;
`problems(result)` checks a result against this definition (the tests check every result they meet).

A run process builds its result once and encodes it once; its worker checks the line's shape and
passes it on unchanged; the dispatcher decodes it once and adds what only it knows (`run_id`, and
`stdout`, which it has relayed as the run printed).

The sections in PARTS also travel on their own, each as soon as the run has it (a `partial`
message, Socket.IO `run_partial`: docs/events.md), so the verdict and the diagram never wait for
the timings or the IR; the result still carries every section once, at the end.
"""
from sandbox.errors import PHASES, RunError

STATUSES = ("ok", "mismatch", "error")
NUMBER = (int, float)
OPTIONAL_NUMBER = (int, float, type(None))
OPTIONAL_STR = (str, type(None))

# key: allowed types (a tuple), or a nested definition (a dict, for an object that may be null)
ERROR = {"phase": (str,), "type": (str,), "message": (str,), "hint": OPTIONAL_STR,
         "line": (int, type(None)), "pid": (list, type(None)), "field": OPTIONAL_STR,
         "launch": (int, type(None))}
SUMMARY = {"median": NUMBER, "p20": NUMBER, "p80": NUMBER, "n": (int,)}
TIMINGS = {"compile_ms": OPTIONAL_NUMBER, "kernel_ms": SUMMARY, "reference_ms": SUMMARY,
           "interpreter": (bool,), "speedup": OPTIONAL_NUMBER, "bytes": OPTIONAL_NUMBER,
           "bytes_source": OPTIONAL_STR, "gbps": OPTIONAL_NUMBER, "peak_gbps": OPTIONAL_NUMBER,
           "flops": OPTIONAL_NUMBER, "tflops": OPTIONAL_NUMBER, "peak_tflops": OPTIONAL_NUMBER,
           "peak_tflops_kind": OPTIONAL_STR, "autotune": (list, type(None)), "notes": (list,)}
CHECK = {"ok": (bool,), "outputs": (dict,)}
OUTPUT_CHECK = {"ok": (bool,), "max_abs_err": OPTIONAL_NUMBER, "max_rel_err": OPTIONAL_NUMBER,
                "mismatched": (int,), "unwritten": (int,), "atol": NUMBER, "rtol": NUMBER, "numel": (int,)}
TRACE = {"grid": (list,), "programs_total": (int,), "programs_traced": (int,), "sampled": (bool,),
         "sample": (dict, type(None)), "tensors": (dict,), "programs": (list,), "coverage": (dict,),
         "tracer": (str,), "bytes_touched": (int, type(None))}
PUZZLE = {"name": (str,), "ok": (bool,), "tests": (list,), "expected": (dict, type(None)), "diff": (dict, type(None)),
          "timing": (dict, type(None))}
SWEEP = {"params": (list,), "rows": (list,), "best": (int, type(None)), "clear": (bool,), "interpreter": (bool,)}
STEPS = {"pid": (list,), "grid": (list,), "function": (str,), "initial": (dict,), "steps": (list,), "values": (list,), "accesses": (list,),
         "tensors": (dict,), "truncated": (bool,)}
LAUNCHES = {"total": (int,), "selected": (int, type(None)), "list": (list,), "program_ms": OPTIONAL_NUMBER,
            "replay": (dict, type(None))}
LAUNCH = {"index": (int,), "kernel": (str,), "line": (int, type(None)), "grid": (list,), "args": (list,),
          "num_warps": (int,), "num_stages": (int,), "config": (dict, type(None)), "ms": OPTIONAL_NUMBER,
          "bounds": (str,)}
BOUNDS = ("ok", "out_of_bounds", "failed", "unchecked")
# The timeline run's part (sandbox.timeline): bars per program on its SM, regions per warp of a sample.
TIMELINE = {"grid": (list,), "num_warps": (int,), "sm_count": (int,), "programs_total": (int,), "sampled": (bool,),
            "regions": (list,), "bars": (list,), "programs": (list,), "clock": (dict,), "resolution": (dict,),
            "total_ns": (int,), "kernel_ns": (int, type(None)), "overhead": OPTIONAL_NUMBER, "summary": (dict,),
            "notes": (list,)}
CHART = {"name": (str,), "x": (str,), "y": (str,), "x_log": (bool,), "y_log": (bool,), "lines": (list,),
         "styles": (list, type(None)), "points": (list,), "points_total": (int,)}
# The server's own bounds check of a script's shown launch (sandbox.grading.recheck): `bounds` as a launch's.
SERVER_CHECK = {"launch": (int, type(None)), "bounds": (str,), "message": OPTIONAL_STR}
# A warning the run raised (sandbox.launch.warned): at the user's `line`, else `where` in Triton (file:line).
WARNING = {"category": (str,), "message": (str,), "line": (int, type(None)), "where": OPTIONAL_STR, "count": (int,)}
DEVICE = {"kind": (str,), "name": (str,), "index": (int, type(None)), "triton": (str,), "torch": (str,)}
RESULT = {"run_id": OPTIONAL_STR, "status": (str,), "device": DEVICE, "error": ERROR, "stdout": (str,),
          "check": CHECK, "timings": TIMINGS, "trace": TRACE, "ir": (dict, type(None)), "notes": (list,),
          "warnings": (list,), "run_ms": OPTIONAL_NUMBER, "puzzle": PUZZLE,
          "sweep": SWEEP, "steps": STEPS, "launches": LAUNCHES, "benchmarks": (list, type(None)),
          "claims": (list, type(None)), "server_check": SERVER_CHECK, "timeline": TIMELINE}

# The sections of a script's result that are its program's own report, which no one checked (`claims`).
# A script's program runs in the process that captures its launches and builds its result: anything
# there (the capture's hooks and records, the result, the pipe it leaves by) the program can reach,
# so what that process says is the program's word. Its worker, a process the program cannot reach,
# marks it so; the rest is the server's: `run_id`, `stdout`, relayed as the program printed it, and
# `server_check`, the shown launch checked again where none of the program runs.
PROGRAM_CLAIMS = tuple(key for key in RESULT if key not in ("run_id", "stdout", "claims", "server_check"))

# result.ir's stages, in the compiler's order (SASS: the cubin disassembled), each shown on the IR tab.
IR_STAGES = ("ttir", "ttgir", "llir", "ptx", "sass")

# Why a puzzle's test failed, in words: a test's `failures` (sandbox.grading.verdict.failures) name
# these, each filled with the test's counts ({mismatched}, {numel}, ...). GET /api/spec serves them.
FAILURE_WORDS = {
    "hidden": "its outputs differ from the reference",
    "mismatched": "{mismatched} of {numel} elements wrong",
    "unwritten": "{unwritten} never written",
    "raced": "{raced} stored by several programs without an atomic (a race: on a GPU one store wins)",
    "undefined_loads": "a load without `other` read masked-off lanes: they are undefined (garbage on a GPU; "
                       "NaN, or 23130 for integers, when graded), so say what they hold with `other=`",
}


def failure_text(summary):
    """A failed test's `failures` (result.puzzle.tests) in words, its counts written 1,024."""
    counts = {key: f"{value:,}" for key, value in summary.items() if isinstance(value, int) and not isinstance(value, bool)}
    return ", ".join(FAILURE_WORDS[key].format_map(counts) for key in summary["failures"])


# The sections of a result a run sends ahead, each once and as it is ready: a part's content is
# exactly what the result's section of that name holds at the end.
PARTS = ("check", "trace", "timings", "ir", "timeline")


def new(device=None):
    """A result with every field, as a run starts: nothing to show yet."""
    return {"run_id": None, "status": "ok", "device": device, "error": None, "stdout": "", "check": None,
            "timings": None, "trace": None, "ir": None, "notes": [], "warnings": [], "run_ms": None,
            "puzzle": None, "sweep": None, "steps": None, "launches": None,
            "benchmarks": None, "claims": None, "server_check": None, "timeline": None}


def failed(error, device=None):
    """The result of a run that ended with `error` (a RunError) and nothing else to show."""
    return fail(new(device), error)


def fail(result, error):
    """`error` ends the run; an out-of-bounds error brings the trace up to its offending access."""
    result["status"], result["error"] = "error", error.to_dict()
    if error.trace is not None:
        result["trace"] = error.trace
    return result


def timings(*, kernel_ms, interpreter, compile_ms=None, reference_ms=None, bytes_moved=None, bytes_source=None,
            gbps=None, peak_gbps=None, flops=None, tflops=None, peak_tflops=None, peak_tflops_kind=None,
            autotune=None, notes=()):
    """The timings of a run: one builder for the interpreter's wall clock and the GPU's CUDA events."""
    return {"compile_ms": compile_ms, "kernel_ms": kernel_ms, "reference_ms": reference_ms, "interpreter": interpreter,
            "speedup": (reference_ms["median"] / kernel_ms["median"]  # the interpreter's clock says nothing of speed
                        if reference_ms and kernel_ms["median"] and not interpreter else None),
            "bytes": bytes_moved, "bytes_source": bytes_source, "gbps": gbps, "peak_gbps": peak_gbps,
            "flops": flops, "tflops": tflops, "peak_tflops": peak_tflops, "peak_tflops_kind": peak_tflops_kind,
            "autotune": autotune, "notes": list(notes)}


def claimed_by_program(result, server_check=None):
    """Mark a script's result, as it leaves its run process, as its program's word (PROGRAM_CLAIMS),
    whatever the process wrote there, beside the server's own check of its shown launch (or None)."""
    result["claims"], result["server_check"] = list(PROGRAM_CLAIMS), server_check
    return result


def delivered(result, run_id, stdout):
    """What the dispatcher adds before a result leaves the server."""
    result["run_id"], result["stdout"] = run_id, stdout
    return result


def problems_at_top(result):
    """The cheap part of `problems`, for every result on its way: its fields and their types, not
    what they hold (a trace can be megabytes)."""
    found = [f"result.{key} is missing" for key in RESULT if key not in result]
    found += [f"result.{key} is not part of the result" for key in result if key not in RESULT]
    if result.get("status") not in STATUSES:
        found.append(f"result.status is {result.get('status')!r}")
    return found


def part_problems(part, content):
    """The cheap check of a part on its way (as problems_at_top for a result): a section of the
    result by name, of its section's type, its fields present and typed one level down."""
    if part not in PARTS:
        return [f"{part!r} is not a part of the result (one of {PARTS})"]
    kind = RESULT[part]
    if isinstance(kind, dict):
        return _problems(content, kind, f"result.{part}")
    return [] if isinstance(content, kind) else [f"result.{part} is a {type(content).__name__}"]


def summary_problems(summary):
    """Where a timing summary ({"median", "p20", "p80", "n"}) departs from its definition."""
    return _problems(summary, SUMMARY, "summary") if isinstance(summary, dict) else ["summary must be an object"]


def timed_ok(content):
    """A run's `timed` message (sandbox.protocol): a reference's timing under its key (a sha256 hex
    digest), a summary of numbers, and nothing else."""
    key, summary = content.get("key"), content.get("reference_ms")
    return (set(content) == {"key", "reference_ms"} and isinstance(key, str) and len(key) == 64
            and isinstance(summary, dict) and not summary_problems(summary))


def positive_number(value):
    """A finite number above zero (not a bool): what a measured rate such as `peak_gbps` must be."""
    return isinstance(value, (int, float)) and not isinstance(value, bool) and 0 < value < float("inf")


def server_check_problems(check):
    """Where a server's check of a launch ({"launch", "bounds", "message"}) departs from its definition."""
    if not isinstance(check, dict):
        return ["server_check must be an object"]
    found = _problems(check, SERVER_CHECK, "server_check")
    return found + ([] if check.get("bounds") in BOUNDS else [f"server_check.bounds is not one of {BOUNDS}"])


def problems(result):
    """Where `result` departs from this definition: a list of sentences, empty when it conforms."""
    found = _problems(result, RESULT, "result")
    if isinstance(result, dict):
        if result.get("status") not in STATUSES:
            found.append(f"result.status is {result.get('status')!r}, not one of {STATUSES}")
        error = result.get("error")
        if (result.get("status") == "error") != isinstance(error, dict):
            found.append("result.error must be set exactly when result.status is 'error'")
        if isinstance(error, dict) and error.get("phase") not in PHASES:
            found.append(f"result.error.phase is {error.get('phase')!r}, not one of {PHASES}")
        claims = result.get("claims")
        if isinstance(claims, list) and not set(claims) <= set(PROGRAM_CLAIMS):
            found.append(f"result.claims names sections a program cannot claim: {sorted(set(claims) - set(PROGRAM_CLAIMS))}")
        if result.get("server_check") is not None:
            found += [f"result.{problem}" for problem in server_check_problems(result["server_check"])]
        for name, output in ((result.get("check") or {}).get("outputs") or {}).items():
            found += _problems(output, OUTPUT_CHECK, f"result.check.outputs.{name}")
        for i, warning in enumerate(result.get("warnings") or []):
            found += _problems(warning, WARNING, f"result.warnings[{i}]")
        for i, chart in enumerate(result.get("benchmarks") or []):
            found += _problems(chart, CHART, f"result.benchmarks[{i}]")
        for i, launch in enumerate((result.get("launches") or {}).get("list") or []):
            found += _problems(launch, LAUNCH, f"result.launches.list[{i}]")
            if isinstance(launch, dict) and launch.get("bounds") not in BOUNDS:
                found.append(f"result.launches.list[{i}].bounds is {launch.get('bounds')!r}, not one of {BOUNDS}")
    return found


def _problems(value, definition, path):
    if value is None:
        return []
    if not isinstance(value, dict):
        return [f"{path} must be an object"]
    found = [f"{path}.{key} is missing" for key in definition if key not in value]
    found += [f"{path}.{key} is not part of the result" for key in value if key not in definition]
    for key, kind in definition.items():
        if key not in value:
            continue
        if isinstance(kind, dict):
            found += _problems(value[key], kind, f"{path}.{key}")
        elif not isinstance(value[key], kind) or (isinstance(value[key], bool) and bool not in kind):
            found.append(f"{path}.{key} is a {type(value[key]).__name__}")
    return found


__all__ = ["RunError", "PARTS", "PROGRAM_CLAIMS", "new", "failed", "fail", "timings", "claimed_by_program", "delivered", "part_problems", "summary_problems", "server_check_problems", "problems"]
