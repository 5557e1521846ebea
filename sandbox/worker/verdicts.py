"""The checkers' verdicts as a worker reads them (a grader's, the server's check of a script's
launch: sandbox.grading) and how they join the result of the run they judge."""
from sandbox import result as results


def grader_outcome_ok(content):
    """The grader's verdict: {"puzzle": {name, ok, tests, diff, timing}, "check"}."""
    outcome = content.get("grade") if set(content) == {"grade"} else None
    puzzle = outcome.get("puzzle") if isinstance(outcome, dict) and set(outcome) == {"puzzle", "check"} else None
    return (isinstance(puzzle, dict) and isinstance(puzzle.get("ok"), bool) and isinstance(puzzle.get("tests"), list)
            and (outcome["check"] is None or isinstance(outcome["check"], dict)))


def failed_grading(grading, error):
    """The verdict when there is none from the grader: every test failed with `error`."""
    summary = {"ok": False, "status": "error", "mismatched": 0, "unwritten": 0, "numel": 0, "raced": 0, "undefined_loads": False,
               "error": {"phase": error.phase, "message": error.message, "line": error.line}}
    return {"puzzle": {"name": grading["puzzle"], "ok": False, "diff": None, "timing": None,
                       "tests": [{**summary, "label": test["label"]} for test in grading["tests"]]},
            "check": None}


def graded_result(shown, outcome, expected):
    """The student's run (what it showed: its trace, output, timings, IR) with the grader's verdict:
    `puzzle`, `check`, and a status that is `ok` only when the grader passed every test."""
    shown["puzzle"] = {**outcome["puzzle"], "expected": expected}
    shown["check"] = outcome["check"]
    if shown["status"] != "error":
        shown["status"] = "ok" if outcome["puzzle"]["ok"] else "mismatch"
    return shown


def shown_launch(result):
    """The record of the launch a script's result shows (the program's account of it), or None."""
    launches = result.get("launches") if isinstance(result.get("launches"), dict) else {}
    listed = launches.get("list") if isinstance(launches.get("list"), list) else []
    selected = launches.get("selected")
    return next((launch for launch in listed if isinstance(launch, dict) and selected is not None
                 and launch.get("index") == selected), None)


def recheck_ok(content):
    """The server's check of a launch (sandbox.grading.recheck): {launch, bounds, message}."""
    outcome = content.get("recheck") if set(content) == {"recheck"} else None
    return isinstance(outcome, dict) and not results.server_check_problems(outcome)
