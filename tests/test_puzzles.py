"""Puzzles: every solution passes its own hidden check and every starter fails it (in the
interpreter, graded by real workers' graders); the reference, the solution and the hidden tests'
sizes never reach the client; a teacher's puzzle; the
course in a real browser (solve one wrong, then right)."""
import json
import os

import pytest

from app.course import puzzles
from tests.support.browser import set_source

RUN_TIMEOUT_MS = 60_000
SHOTS = "/tmp/shots"


def graded_run(app, puzzle, source, expected=None):
    """`source` graded as the server grades it: its run and the grader, in real workers."""
    from app.owners import PUZZLE_SOLUTIONS
    spec = puzzles.starter_spec(puzzle)
    spec = {**spec, "source": source, "options": {**spec["options"], "device": "interpreter", "ir": False}}
    return app.extensions["dispatcher"].run({**spec, "grading": puzzles.grading(puzzle, expected)}, PUZZLE_SOLUTIONS,
                                            from_link=True)


def secrets(puzzle):
    """Text that must never leave the server: each reference expression (as written and as each
    test makes it) and every line of the solution that neither the starter nor a hint shows."""
    found = set(puzzle["reference"].values())
    found |= {expr for test in puzzles.tests_of(puzzle) for expr in test["reference"].values()}
    # A hidden test's sizes, as its inputs are written: "torch.randn(6, 301) * 3".
    shown = {expr for test in puzzles.tests_of(puzzle) if not test["hidden"] for expr in test["inputs"].values()}
    found |= {expr for test in puzzles.tests_of(puzzle) if test["hidden"] for expr in test["inputs"].values()
              if expr not in shown}
    starter_lines = {line.strip() for line in puzzle["starter"].splitlines()}
    revealed = " ".join(puzzle["hints"])  # a hint may give a line away: its author chose to
    found |= {line.strip() for line in puzzle["solution"].splitlines()
              if line.strip() and line.strip() not in starter_lines and len(line.strip()) > 12
              and line.strip() not in revealed}
    return found


def assert_hidden(text, puzzle):
    leaked = [secret for secret in secrets(puzzle) if secret in text]
    assert not leaked, f"{puzzle['name']}: {leaked} reached the client"


# ---- every puzzle, in the interpreter ----------------------------------------------------------

@pytest.mark.parametrize("name", puzzles.builtin_names())
def test_solution_passes_and_starter_fails(app, name):
    puzzle = puzzles.builtin(name)
    solved = graded_run(app, puzzle, puzzle["solution"])
    assert solved["status"] == "ok", solved["puzzle"]["tests"]
    assert solved["puzzle"]["ok"] and all(t["ok"] for t in solved["puzzle"]["tests"])
    started = graded_run(app, puzzle, puzzle["starter"], expected=solved["trace"])
    assert started["status"] in ("mismatch", "error")
    assert not started["puzzle"]["ok"]
    # The shown tests, then at least one the page never shows.
    labels = [t["label"] for t in started["puzzle"]["tests"]]
    assert labels[:len(puzzle["tests"])] == puzzles.public(puzzle)["tests"] and len(puzzle["tests"]) >= 3
    assert len(labels) > len(puzzle["tests"]) and all(label.startswith("hidden test") for label in labels[len(puzzle["tests"]):])


# What a statement demands that values on small, tame inputs would not check: each plausible answer
# that skips it passes the tests it used to pass, and must fail one.
SKIPPED_DEMANDS = {
    "softmax": [("z = x - tl.max(x, axis=0)\n    e = tl.exp(z)", "e = tl.exp(x)")],  # overflows at SPREAD=100
    "flash_attention": [("p = tl.exp(s - m_new[:, None])", "p = tl.exp(s)"),
                        ("correction = tl.exp(m - m_new)", "correction = tl.full((BM,), 1.0, tl.float32)")],  # no running maximum
    "scale_rows": [("row * stride_m + cols", "row * N + cols")],  # rows found by N, not the stride
    "atomic_sum": [("tl.atomic_add(out_ptr, partial)", "tl.store(out_ptr, tl.load(out_ptr) + partial)")],  # a race
    "long_row_sum": [("""    for start in range(0, N, BLOCK):
        cols = start + tl.arange(0, BLOCK)
        acc += tl.load(x_ptr + row * N + cols, mask=cols < N, other=0.0)
    tl.store(out_ptr + row, tl.sum(acc, axis=0))""", """    cols = tl.arange(0, 256)
    tl.store(out_ptr + row, tl.sum(tl.load(x_ptr + row * N + cols, mask=cols < N, other=0.0), axis=0))""")],  # no loop
}


@pytest.mark.parametrize("name", sorted(SKIPPED_DEMANDS))
def test_a_statements_demand_is_checked(app, name):
    puzzle = puzzles.builtin(name)
    source = puzzle["solution"]
    for right, wrong in SKIPPED_DEMANDS[name]:
        assert right in source
        source = source.replace(right, wrong)
    expected = graded_run(app, puzzle, puzzle["solution"])["trace"]
    tests = graded_run(app, puzzle, source, expected)["puzzle"]["tests"]
    assert tests[0]["ok"] == (name != "atomic_sum")  # the first, shown test stays tame: it teaches the layout
    assert not all(t["ok"] for t in tests), tests
    if name == "atomic_sum":
        assert tests[0]["raced"] == 1 and tests[0]["mismatched"] == 0  # right values, one at a time


def test_masked_off_lanes_loaded_without_other_fail_a_graded_test(app):
    """The interpreter fills a load's masked-off lanes with 0 where no `other` is given; on a GPU they
    are undefined. Graded, they read a poison value: the row sum without `other=0.0` fails, and says why."""
    puzzle = puzzles.builtin("row_sum")
    solved = graded_run(app, puzzle, puzzle["solution"])
    assert solved["puzzle"]["ok"], solved["puzzle"]["tests"]
    assert not any(t["undefined_loads"] for t in solved["puzzle"]["tests"])
    assert ", other=0.0)" in puzzle["solution"]
    forgot = graded_run(app, puzzle, puzzle["solution"].replace(", other=0.0)", ")"), solved["trace"])
    tests = forgot["puzzle"]["tests"]
    assert forgot["status"] == "mismatch" and not forgot["puzzle"]["ok"]
    # N = 64 fills its block: no lane is masked off and the test passes; the others fail, every row wrong.
    assert [t["ok"] for t in tests] == [False, True, False, False], tests
    assert tests[0]["mismatched"] == tests[0]["numel"] == 6 and tests[0]["undefined_loads"]
    assert tests[0]["unwritten"] == 0  # every row was stored: its NaN is not the never-written poison
    assert "a load without `other` read masked-off lanes: they are undefined" in puzzles.failure(tests[0])
    assert tests[3]["numel"] is None and tests[3]["undefined_loads"]  # a hidden test says why, not how big
    assert [t["failures"] for t in tests] == [["mismatched", "undefined_loads"], [], ["mismatched", "undefined_loads"],
                                              ["hidden", "undefined_loads"]]
    assert puzzles.failure(tests[0]).startswith("6 of 6 elements wrong, a load without")


def test_course_covers_the_topics():
    names = puzzles.builtin_names()
    assert len(names) >= 12
    for topic in ("constant_add", "outer_sum", "softmax", "matmul", "flash_attention", "quantized_matmul"):
        assert topic in names
    for name in names:  # each puzzle has a test whose size is not a multiple of its block
        puzzle = puzzles.builtin(name)
        assert puzzle["hints"] and puzzle["statement"] and len(puzzle["tests"]) >= 3


def test_diff_marks_missed_extra_and_twice(app):
    puzzle = puzzles.builtin("constant_add")
    expected = graded_run(app, puzzle, puzzle["solution"])["trace"]
    # Shifted by one: element 0 missed, element 20 (past the end) is refused by the bounds check,
    # so keep it in range: the last program's mask cuts one real element and one program writes twice.
    shifted = puzzle["solution"].replace("tl.store(out_ptr + offsets, x + 10.0, mask=mask)",
                                         "tl.store(out_ptr + offsets, x + 10.0, mask=offsets < n - 1)\n"
                                         "    tl.store(out_ptr + offsets, x + 10.0, mask=offsets < 2)")
    result = graded_run(app, puzzle, shifted, expected)
    diff = result["puzzle"]["diff"]["out"]
    assert diff["missed"] == {"count": 1, "runs": [[19, 1]]}
    assert diff["twice"] == {"count": 2, "runs": [[0, 2]]}
    assert diff["extra"]["count"] == 0
    tests = result["puzzle"]["tests"]
    assert [t["ok"] for t in tests] == [False] * 5
    assert tests[0]["unwritten"] == 1 and tests[0]["label"] == "N=20"
    assert not tests[0]["undefined_loads"]  # its load without `other` is not why it fails


def test_substitute_replaces_names_only():
    assert puzzles.substitute("torch.randn(N, x.N) + NUM * N", {"N": 7}) == "torch.randn(7, x.N) + NUM * 7"
    assert puzzles.substitute("'N' if N else M", {"N": 3, "M": 4}) == "'N' if 3 else 4"


def test_a_spec_cannot_bring_its_own_grading():
    from sandbox.spec import SpecError, normalize
    spec = puzzles.starter_spec(puzzles.builtin("constant_add"))
    with pytest.raises(SpecError, match="grading"):
        normalize({**spec, "grading": {"tests": []}})
    with pytest.raises(SpecError, match="options.puzzle"):
        normalize({**spec, "options": {"puzzle": "../etc"}})


# ---- the server: what reaches the client ------------------------------------------------------

def test_pages_and_api_keep_the_check_hidden(client):
    listing = client.get("/api/puzzles")
    course = client.get("/puzzles")
    assert listing.status_code == course.status_code == 200
    for name in puzzles.builtin_names():
        puzzle = puzzles.builtin(name)
        page, api = client.get(f"/puzzles/{name}"), client.get(f"/api/puzzles/{name}")
        assert page.status_code == api.status_code == 200
        assert api.json["spec"]["reference"] == {} and api.json["spec"]["options"]["puzzle"] == name
        for text in (page.get_data(as_text=True), api.get_data(as_text=True), listing.get_data(as_text=True),
                     course.get_data(as_text=True)):
            assert_hidden(text, puzzle)
    assert client.get("/puzzles/no_such_puzzle").status_code == 404
    assert client.get("/api/puzzles/no_such_puzzle").json["error"]["message"] == "there is no puzzle named 'no_such_puzzle'"


def test_graded_run_over_socketio_and_share_link_keep_it_hidden(make_app):
    from app import socketio
    app = make_app(WORKERS=1)  # its own: Socket.IO's test client takes over its server's sending
    client = app.test_client()
    puzzle = puzzles.builtin("softmax")
    spec = client.get("/api/puzzles/softmax").json["spec"]
    sio = socketio.test_client(app, flask_test_client=client)
    ack = sio.emit("run", {"spec": spec}, callback=True)
    assert "run_id" in ack, ack
    events = []
    for _ in range(600):
        events += sio.get_received()
        if any(e["name"] == "run_result" for e in events):
            break
        socketio.sleep(0.1)
    result = next(e for e in events if e["name"] == "run_result")["args"][0]["result"]
    assert result["status"] == "mismatch" and result["puzzle"]["name"] == "softmax"
    assert [t["label"] for t in result["puzzle"]["tests"]] == ["M=5, N=10, SPREAD=3", "M=4, N=32, SPREAD=3",
                                                               "M=3, N=77, SPREAD=100", "hidden test 1"]
    assert result["puzzle"]["expected"]["grid"] == [5, 1, 1]  # the solution's trace came back, not its source
    assert_hidden(json.dumps(events), puzzle)
    shared = client.post("/api/snippets", json={"spec": spec, "ui": {"pane": None, "pid": None}})
    link = client.get(f"/s/{shared.json['id']}").get_data(as_text=True)
    stored = client.get(f"/api/snippets/{shared.json['id']}").get_data(as_text=True)
    assert "softmax" in stored
    assert_hidden(link + stored, puzzle)
    sio.disconnect()


def test_unknown_puzzle_is_refused(client, spec):
    response = client.post("/api/run", json={**spec, "options": {"puzzle": "nope"}})
    assert response.status_code == 400
    assert response.json["error"]["message"] == "there is no puzzle named 'nope'"


def test_teacher_turns_a_spec_into_a_puzzle(client, spec):
    from tests.support.kernels import VECTOR_ADD
    body = {"spec": {**spec, "source": VECTOR_ADD, "reference": {"out": "x + y + 0.0"}},
            "title": "Add two vectors", "statement": "Write `out` as the sum of the inputs.",
            "hints": ["Load both.", "Mask the tail."],
            "starter": VECTOR_ADD.replace("tl.store(out_ptr + offs, x + y, mask=mask)", "pass  # store the sum")}
    made = client.post("/api/puzzles", json=body)
    assert made.status_code == 200, made.json
    name = made.json["name"]
    assert name.startswith("t-") and made.json["url"].endswith(f"/puzzles/{name}")
    assert client.post("/api/puzzles", json=body).json["name"] == name  # the same content, the same link
    public = client.get(f"/api/puzzles/{name}").json
    assert public["title"] == "Add two vectors" and public["hints"] == ["Load both.", "Mask the tail."]
    assert public["spec"]["reference"] == {} and "pass  # store the sum" in public["spec"]["source"]
    text = json.dumps(public) + client.get(f"/puzzles/{name}").get_data(as_text=True)
    assert "x + y + 0.0" not in text and "tl.store(out_ptr + offs, x + y, mask=mask)" not in text
    wrong = client.post("/api/run", json=public["spec"]).json
    assert wrong["status"] == "mismatch" and wrong["puzzle"]["diff"]["out"]["missed"]["count"] == 4096
    right = client.post("/api/run", json={**public["spec"], "source": VECTOR_ADD}).json
    assert right["status"] == "ok" and right["puzzle"]["ok"]
    refused = client.post("/api/puzzles", json={**body, "spec": {**body["spec"], "reference": {}}})
    assert refused.status_code == 400 and refused.json["error"]["field"] == "reference"


def test_a_teachers_puzzle_is_checked_before_it_is_saved(client, spec):
    """Saving runs the solution and the starter on every test size, in run processes: a starter that
    passes, a solution that fails, test sizes the launch never uses are refused on their field."""
    from app.db import get_db
    from tests.support.kernels import VECTOR_ADD
    sized = {**spec, "source": VECTOR_ADD, "inputs": {"x": "torch.randn(N)", "y": "torch.randn(N)", "out": "torch.empty(N)"}}
    body = {"spec": sized, "title": "Add with a tail", "statement": "Write `out = x + y`.", "hints": [],
            "starter": VECTOR_ADD.replace("mask = offs < n", "mask = offs < offs + 1"), "tests": [{"N": 7}, {"N": 1000}]}

    def refused(**changes):
        answer = client.post("/api/puzzles", json={**body, **changes})
        assert answer.status_code == 400, answer.json
        return answer.json["error"]

    def stored():
        with client.application.app_context():
            return get_db().execute("SELECT COUNT(*) FROM puzzle").fetchone()[0]

    before = stored()
    error = refused(starter=VECTOR_ADD)  # (a) the starter is the solution: Run alone passes
    assert error["field"] == "starter" and "passes every test" in error["message"]
    error = refused(spec={**spec, "source": VECTOR_ADD})  # (b) N given, the shapes literal
    assert error["field"] == "tests" and "no input, argument, grid or reference uses it" in error["message"]
    assert error["message"].startswith("the test sizes give N")
    broken = VECTOR_ADD.replace("x + y, mask", "x + z, mask")  # (c) a solution that does not run
    error = refused(spec={**sized, "source": broken})
    assert error["field"] == "solution" and "fails the test N=7" in error["message"] and "z" in error["message"]
    error = refused(spec={**sized, "source": VECTOR_ADD.replace("x + y, mask", "x - y, mask")})
    assert error["field"] == "solution" and "elements wrong" in error["message"]
    assert refused(starter="def (:")["field"] == "starter"
    assert stored() == before  # nothing refused was kept
    made = client.post("/api/puzzles", json=body)
    assert made.status_code == 200, made.json
    solutions = client.application.extensions["puzzle_solutions"]
    with client.application.app_context():
        outcome = solutions.outcome(puzzles.find(made.json["name"]))  # kept from the check: no run under way
    assert outcome["state"] == "ok" and json.loads(outcome["trace"])["grid"] == [1, 1, 1]
    # Sizes the page never shows: graded, never named.
    hidden = client.post("/api/puzzles", json={**body, "title": "Add, with a hidden size", "hidden": [{"N": 5000}]})
    assert hidden.status_code == 200, hidden.json
    public = client.get(f"/api/puzzles/{hidden.json['name']}").json
    assert public["tests"] == ["N=7", "N=1000"] and public["hidden_tests"] == 1 and "5000" not in json.dumps(public)
    only_shown = VECTOR_ADD.replace("mask = offs < n", "mask = (offs < n) & (n < 2000)")
    result = client.post("/api/run", json={**public["spec"], "source": only_shown}).json
    assert [t["ok"] for t in result["puzzle"]["tests"]] == [True, True, False] and not result["puzzle"]["ok"]
    assert "5000" not in json.dumps(result["puzzle"]["tests"])


# ---- the course in a browser ------------------------------------------------------------------

def shot(page, name):
    os.makedirs(SHOTS, exist_ok=True)
    page.screenshot(path=f"{SHOTS}/{name}.png")



def run_puzzle(page):
    page.evaluate("document.querySelector('#puzzle-verdict')?.remove()")  # the last run's verdict
    page.click("#run-button")
    page.wait_for_selector("#puzzle-verdict", timeout=RUN_TIMEOUT_MS)
    return page.inner_text("#puzzle-verdict")


@pytest.mark.browser
def test_solve_a_puzzle_wrong_then_right(browser, live_server):
    puzzle = puzzles.builtin("constant_add")
    context = browser.new_context(viewport={"width": 1440, "height": 900})
    page = context.new_page()
    errors = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    page.goto(f"{live_server}/puzzles")
    assert page.inner_text('.course-item[data-name="constant_add"] .course-status') == "not yet"
    page.click('.course-item[data-name="constant_add"] a')
    page.wait_for_selector(".puzzle-statement")
    assert page.is_visible('[data-tab="puzzle"]') and "Constant add" in page.inner_text(".puzzle-head")
    page.click("#puzzle-hint-button")
    assert page.locator(".puzzle-hint").count() == 1
    page.click("#puzzle-hint-button")
    assert page.locator(".puzzle-hint").count() == 2
    shot(page, "puzzle-start")
    # Wrong: the mask cuts one real element.
    set_source(page, puzzle["solution"].replace("mask = offsets < n", "mask = offsets < n - 1"))
    assert "Not yet" in run_puzzle(page)
    assert page.locator(".puzzle-test.bad").count() == 5  # 3 shown, 2 hidden
    page.wait_for_selector('.puzzle-plot[data-output="out"] .main-svg')
    assert "1 missed" in page.inner_text(".puzzle-marks")
    shot(page, "puzzle-wrong")
    # Right.
    set_source(page, puzzle["solution"])
    assert "Solved" in run_puzzle(page)
    assert page.locator(".puzzle-test.ok").count() == 5
    assert "exactly the elements" in page.inner_text(".puzzle-figure")
    shot(page, "puzzle-right")
    page.goto(f"{live_server}/puzzles")
    assert page.inner_text('.course-item[data-name="constant_add"] .course-status') == "done"
    assert page.inner_text('.course-item[data-name="softmax"] .course-status') == "not yet"
    shot(page, "course")
    context.close()
    assert not errors, errors


@pytest.mark.browser
def test_a_load_without_other_says_why_it_failed(browser, live_server):
    puzzle = puzzles.builtin("row_sum")
    context = browser.new_context(viewport={"width": 1440, "height": 900})
    page = context.new_page()
    page.goto(f"{live_server}/puzzles/row_sum")
    page.wait_for_selector(".puzzle-statement")
    set_source(page, puzzle["solution"].replace(", other=0.0)", ")"))
    assert "Not yet" in run_puzzle(page)
    failing = page.locator(".puzzle-test.bad")
    assert failing.count() == 3  # N = 64 fills its block: nothing masked off
    assert "6 of 6 elements wrong, a load without other read masked-off lanes" in failing.first.inner_text()
    shot(page, "puzzle-undefined-lanes")
    context.close()


@pytest.mark.browser
def test_a_solved_puzzle_reopens_on_the_solution_that_passed(browser, live_server):
    """1280 x 720: solved, a puzzle offers the next one; reloaded or opened again from the course it
    shows the passing kernel (not the starter, and no "unsaved edits" offer); Start over brings the
    starter back."""
    from tests.support.browser import page_without_errors
    puzzle = puzzles.builtin("constant_add")
    with page_without_errors(browser, width=1280, height=720) as page:
        page.goto(f"{live_server}/puzzles/constant_add")
        page.wait_for_selector(".puzzle-statement")
        assert page.inner_text("#puzzle-progress") == "Start over"  # not solved yet: only the way back
        solution = puzzle["solution"].replace("x + 10.0", "10.0 + x")  # the student's own words
        set_source(page, solution)
        assert "Solved" in run_puzzle(page)
        assert page.inner_text("#puzzle-next") == "Next puzzle: Outer sum →"
        shot(page, "puzzle-solved-next")
        for opening in (page.reload, lambda: (page.goto(f"{live_server}/puzzles"),
                                              page.click('.course-item[data-name="constant_add"] a'))):
            opening()
            page.wait_for_selector("#puzzle-progress")
            assert page.evaluate("window.playground.getSpec().source") == solution
            assert "the editor shows the solution that passed" in page.inner_text("#puzzle-progress")
            assert page.inner_text("#puzzle-done") == "done"
            assert page.locator("#draft-banner .draft-offer").count() == 0
        shot(page, "puzzle-reopened-solved")
        page.once("dialog", lambda dialog: dialog.accept())  # the passing kernel is replaced only when asked
        page.click("#puzzle-start-over")
        assert page.evaluate("window.playground.getSpec().source") == puzzle["starter"]
        assert page.inner_text("#puzzle-progress").startswith("Solved in this browser.")
        page.evaluate("window.playground.editorView.dispatch({changes: {from: 0, insert: '# '}})")
        page.once("dialog", lambda dialog: dialog.dismiss())  # edits are not replaced without asking
        page.click("#puzzle-start-over")
        assert page.evaluate("window.playground.getSpec().source") == "# " + puzzle["starter"]
        page.goto(f"{live_server}/puzzles/softmax")
        page.wait_for_selector(".puzzle-statement")
        assert page.evaluate("window.playground.getSpec().source") == puzzles.builtin("softmax")["starter"]


@pytest.mark.browser
def test_teacher_makes_a_puzzle_in_the_page(browser, live_server):
    """1280 x 720: the dialog fits the window (Save and Close in view); its starter is a code editor
    holding the kernel without the lesson; a starter left as the solution and test sizes the launch
    never uses are refused on their fields; the student preview; then the link."""
    from tests.support.browser import page_without_errors
    # console=False: the refusals are 400 answers, which the console reports; script errors still fail the test
    with page_without_errors(browser, width=1280, height=720, console=False) as page:
        page.goto(f"{live_server}/examples/vector_add")
        page.wait_for_function("window.playground !== undefined")
        page.click("#teach-button")
        page.wait_for_selector("#teach-starter .cm-content")
        for button in ("#teach-save", "#teach-close", "#teach-preview-button"):
            box = page.locator(button).bounding_box()
            assert box and 0 <= box["y"] and box["y"] + box["height"] <= 720, (button, box)
        page.fill("#teach-title", "My vector add")
        page.fill("#teach-statement", "Add `x` and `y`, and mask the tail.")
        page.fill("#teach-hints", "Load both vectors.\nMask the tail.")
        shot(page, "teacher-dialog")
        page.click("#teach-preview-button")
        starter = page.inner_text("#teach-starter-preview")
        assert starter.startswith("import triton") and '"""' not in starter and "# %%" not in starter
        assert "def add_kernel(" in starter and "Mask the tail." in page.inner_text("#teach-preview")
        assert page.inner_text("#teach-preview .puzzle-head h2").startswith("My vector add")
        shot(page, "teacher-preview")
        page.click("#teach-preview-button")
        # Saved as prefilled, the starter is the solution: refused on the starter.
        page.click("#teach-save")
        page.wait_for_selector("#teach-problem-starter", timeout=RUN_TIMEOUT_MS)
        assert "passes every test" in page.inner_text("#teach-problem-starter")
        assert page.get_attribute("#teach-starter", "aria-invalid") == "true"
        shot(page, "teacher-starter-refused")
        store = next(line for line in starter.splitlines() if "tl.store(" in line)
        page.click("#teach-starter .cm-content")
        page.keyboard.press("Control+A")
        page.keyboard.insert_text(starter.replace(store, "    # store the sum here"))
        page.fill("#teach-tests", '[{"N": 7}, {"N": 1000}]')
        page.click("#teach-save")
        page.wait_for_selector("#teach-problem-tests", timeout=RUN_TIMEOUT_MS)
        assert "no input, argument, grid or reference uses it" in page.inner_text("#teach-problem-tests")
        assert page.locator("#teach-problem-starter").count() == 0
        page.fill("#teach-tests", "not json")
        page.click("#teach-save")
        assert "must be JSON" in page.inner_text("#teach-problem-tests")
        page.fill("#teach-tests", "")
        page.click("#teach-save")
        link = page.wait_for_selector("#teach-link", timeout=RUN_TIMEOUT_MS).inner_text()
        shot(page, "teacher-saved")
        page.goto(link)
        page.wait_for_selector(".puzzle-statement")
        assert "My vector add" in page.inner_text(".puzzle-head")
        source = page.evaluate("window.playground.getSpec().source")
        assert "# store the sum here" in source and '"""' not in source
        assert "x + y" not in json.dumps(page.evaluate("window.playground.getSpec().reference"))


def solutions_of(tmp_path, dispatcher, **config):
    from app.config import SETTINGS
    from app.course.solutions import Solutions
    from app.db import init_db
    config = {**{s.name: s.default for s in SETTINGS}, "DATABASE": str(tmp_path / "solutions.sqlite"), "TRACE_MAX_BYTES": 2_000_000, "QUEUE_WAIT_S": 5.0,
              "RUN_TIMEOUT_S": 5.0, "DATABASE_MAX_MB": 64, **config}
    init_db(config["DATABASE"])
    return Solutions(config, dispatcher)


def test_a_solution_that_cannot_start_is_tried_again_and_one_that_fails_is_not(tmp_path):
    """A full queue runs nothing and keeps nothing: the next graded run tries again. A solution that
    fails its own check is run once: its failure is kept, graded runs go without the picture."""
    from app.dispatch.interface import QueueFull
    from app.owners import PUZZLE_SOLUTIONS
    from sandbox import result as results
    from sandbox.errors import RunError

    class Dispatcher:
        calls, busy = 0, True

        def run(self, spec, owner, from_link=False):
            Dispatcher.calls += 1
            assert "grading" in spec and from_link and owner == PUZZLE_SOLUTIONS
            if Dispatcher.busy:
                raise QueueFull("the server is busy")
            return results.failed(RunError("check", "the outputs differ"))

    solutions = solutions_of(tmp_path, Dispatcher())
    puzzle = puzzles.builtin("constant_add")
    assert solutions.expected(puzzle, wait_s=5) is None and Dispatcher.calls == 1
    Dispatcher.busy = False
    assert solutions.expected(puzzle, wait_s=5) is None and Dispatcher.calls == 2
    for _ in range(3):
        assert solutions.expected(puzzle, wait_s=5) is None
    assert Dispatcher.calls == 2
    assert solutions.outcome(puzzle)["state"] == "failed"
