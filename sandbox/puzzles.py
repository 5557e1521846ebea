"""Graded runs: a puzzle's hidden check, inside a run process.

The server (app.puzzles) turns a spec that names a puzzle into a graded run: it adds `grading`, the
puzzle's tests (each a launch of the student's source with the puzzle's own inputs, arguments, grid
and hidden reference) and the solution's trace of the first test. The run process gets `grading`
beside the spec (sandbox.pipeline pops it before the spec is normalized), runs every test, and
returns the first test's result with `result.puzzle` (docs/result.md): pass/fail per test and where
the student's stores differ from the solution's.
"""

MAX_DIFF_RUNS = 4096  # run-length runs per list: a display test is small, but a result must stay bounded


def grade(spec, grading, run_one):
    """`run_one(spec) -> result` runs one test (sandbox.pipeline.run_spec); returns the graded result."""
    tests = [test_spec(spec, test) for test in grading["tests"]]
    results = [run_one(tests[0])]
    # Later tests only grade: no timing, no IR, no trace (the diagram shows the first).
    for test in tests[1:]:
        test["options"].update(bench=False, ir=False, trace=False)
        results.append(run_one(test))
    shown = results[0]
    expected = grading.get("expected")
    summaries = [summary(test["label"], result) for test, result in zip(grading["tests"], results)]
    summaries[0] = with_races(summaries[0], shown.get("trace"), expected, list(grading["tests"][0]["reference"]))
    shown["puzzle"] = {
        "name": grading["puzzle"], "ok": all(s["ok"] for s in summaries), "tests": summaries,
        "expected": expected,
        "diff": diff(expected, shown["trace"], list(grading["tests"][0]["reference"])) if expected and shown["trace"] else None,
    }
    if shown["status"] == "ok" and not shown["puzzle"]["ok"]:
        shown["status"] = "mismatch"  # the shown test passed, another did not
    return shown


def test_spec(spec, test):
    """The student's source launched as one of the puzzle's tests: the test's launch and reference,
    the student's options (a test may tighten or loosen tolerances), the check always on."""
    options = {**spec["options"], **test.get("options", {}), "check": True, "puzzle": None, "sweep": None}
    return {**spec, "kernel": test["kernel"], "inputs": dict(test["inputs"]), "args": dict(test["args"]),
            "grid": test["grid"], "reference": dict(test["reference"]), "options": options}


def summary(label, result):
    check = result.get("check") or {}
    outputs = check.get("outputs") or {}
    error = result.get("error")
    return {"label": label, "ok": result["status"] == "ok" and bool(check.get("ok")), "status": result["status"],
            "error": None if error is None else {"phase": error["phase"], "message": error["message"], "line": error["line"]},
            "mismatched": sum(o["mismatched"] for o in outputs.values()),
            "unwritten": sum(o["unwritten"] for o in outputs.values()),
            "numel": sum(o["numel"] for o in outputs.values()), "raced": 0}


def with_races(summary, trace, expected, outputs):
    """A test whose trace shows output elements stored by more than one program with plain stores
    (a race: on a GPU only one of them survives, in any order), where the solution has none, fails:
    the interpreter runs programs one after another, so its values alone would pass."""
    def raced(coverage, name):
        return ((coverage or {}).get(name) or {}).get("multiply_written", 0)

    count = sum(raced(trace["coverage"], name) for name in outputs
                if not (expected and raced(expected.get("coverage"), name))) if trace else 0
    return {**summary, "raced": count, "ok": summary["ok"] and not count}


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
