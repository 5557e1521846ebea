"""Graded runs: a puzzle's verdict, made by the grader (sandbox.grading.grader).

The server (app.course.puzzles) turns a spec that names a puzzle into a graded run: `grading` beside it,
the puzzle's tests (each a launch of the puzzle's own inputs, arguments, grid, hidden reference and
tolerance; some of its sizes hidden from the page) and the solution's trace of the first test. The
worker keeps `grading` from the student's run process, hands the spec's source as the server sent
it (sandbox.grading.kept reads the kernel from it) and the tests to the grader, and returns the
student's run with the grader's `result.puzzle` (docs/result.md): pass/fail per test and where the
kernel's stores differ from the solution's.
"""

MAX_DIFF_RUNS = 4096  # run-length runs per list: a display test is small, but a result must stay bounded


def failures(summary):
    """The sandbox.result.FAILURE_WORDS that say why a test failed, in order; [] for a test that
    passed or whose run ended in an error (its error says why)."""
    if summary["ok"] or summary["error"]:
        return []
    if summary["numel"] is None:  # a hidden test says no more
        reasons = ["hidden"]
    else:
        reasons = ["mismatched"] if summary["mismatched"] or not summary["raced"] else []
    reasons += [key for key in ("unwritten", "raced", "undefined_loads") if summary[key]]
    return reasons


def summary(label, result, hidden=False):
    """One test's line of the verdict. A hidden test says only whether it passed, and an error's
    phase and line: its counts and an error's message would give its size away. `undefined_loads`:
    it fails only because masked-off lanes loaded without `other` are poisoned (sandbox.grading.grader)."""
    check = result.get("check") or {}
    outputs = check.get("outputs") or {}
    error = result.get("error")
    if error is not None and hidden:
        error = {**error, "message": f"the kernel failed on a hidden test (in its {error['phase']} phase)"}
    counts = {key: None if hidden else sum(o[key] for o in outputs.values()) for key in ("mismatched", "unwritten", "numel")}
    return {"label": label, "ok": result["status"] == "ok" and bool(check.get("ok")), "status": result["status"],
            "error": None if error is None else {"phase": error["phase"], "message": error["message"], "line": error["line"]},
            **counts, "raced": 0, "undefined_loads": bool(result.get("undefined_loads"))}


def with_races(summary, trace, expected, outputs):
    """A test whose trace shows output elements stored by more than one program with plain stores
    (a race: on a GPU only one of them survives, in any order), where the solution has none, fails:
    the interpreter runs programs one after another, so its values alone would pass."""
    def raced(coverage, name):
        return ((coverage or {}).get(name) or {}).get("multiply_written", 0)

    count = sum(raced(trace["coverage"], name) for name in outputs
                if not (expected and raced(expected.get("coverage"), name))) if trace else 0
    return {**summary, "raced": count, "ok": summary["ok"] and not count}


def with_failures(summary):
    return {**summary, "failures": failures(summary)}


def stores(trace, tensor):
    """{element: times stored} of `tensor` over every traced program (atomics count as stores once
    per program: they are meant to meet). The out-of-bounds access that stopped a run wrote nothing."""
    counts = {}
    for program in trace["programs"]:
        atomic_seen = set()
        for access in program["accesses"]:
            if access["tensor"] != tensor or access["op"] not in ("store", "atomic") or access.get("out_of_bounds"):
                continue
            for start, length in access["offsets"]:
                for element in range(start, start + length):
                    if access["op"] == "atomic":
                        if element in atomic_seen:
                            continue
                        atomic_seen.add(element)
                        counts[element] = 1  # any number of programs may meet in an atomic
                    else:
                        counts[element] = counts.get(element, 0) + 1
    return counts


def runs(elements):
    """Sorted elements as [[start, length], ...], at most MAX_DIFF_RUNS runs."""
    found = []
    for element in sorted(elements):
        if found and found[-1][0] + found[-1][1] == element:
            found[-1][1] += 1
        elif len(found) < MAX_DIFF_RUNS:
            found.append([element, 1])
    return found


def diff(expected, yours, outputs):
    """Per checked output: the elements the solution stores and yours never does (`missed`), those
    yours stores and the solution does not (`extra`), and those yours stores more than once
    (`twice`, where the solution stores it once), as runs; each with its count."""
    found = {}
    for name in outputs:
        want, got = stores(expected, name), stores(yours, name)
        sets = {"missed": set(want) - set(got), "extra": set(got) - set(want),
                "twice": {e for e, n in got.items() if n > 1 and want.get(e, 0) <= 1}}
        found[name] = {key: {"count": len(elements), "runs": runs(elements)} for key, elements in sets.items()}
    return found
