"""One error body everywhere: every HTTP endpoint (found in Flask's url_map, so a new one cannot
escape) and the Socket.IO acks answer a bad request with {phase, type, message, hint, line, pid,
field, launch}, the error of a run's result (sandbox.result.ERROR). No worker is started: a bad request
never reaches one."""
import pytest

from sandbox.errors import PHASES
from sandbox.result import ERROR

JSON = {"Accept": "application/json"}
BAD_BODY = {"spec": {"source": "x", "kernel": "k"}, "referenec": 1}  # a field beside the spec no endpoint takes
ANY_ARGUMENT = {"editor.plotly_js"}  # serves its one file whatever the version in its name (a cache key)


@pytest.fixture(scope="module")
def web(tmp_path_factory):
    """The web app alone: no worker is started (a bad request never reaches one)."""
    from app import create_app
    directory = tmp_path_factory.mktemp("errors")
    return create_app({"TESTING": True, "START_WORKERS": False, "DATABASE": str(directory / "db.sqlite"),
                       "RUN_ROOT": str(directory / "runs")})


def assert_error_body(body, where):
    assert isinstance(body, dict) and set(body) == {"error"}, f"{where}: {body!r}"
    error = body["error"]
    assert set(error) == set(ERROR), f"{where}: {sorted(error)} is not {sorted(ERROR)}"
    assert error["phase"] in PHASES, f"{where}: phase {error['phase']!r}"
    assert error["type"] and error["message"], where
    return error


def bad_requests(rule):
    """What each rule is sent: a method it does not take, and, for one that reads a body or a name,
    a bad one."""
    url = rule.rule
    for arg in rule.arguments:
        url = url.replace(f"<{arg}>", "no-such-thing").replace(f"<path:{arg}>", "no-such-thing")
    yield "PUT", url, None, 405
    if "POST" in rule.methods:
        yield "POST", url, BAD_BODY, 400
    elif rule.arguments and rule.endpoint not in ANY_ARGUMENT:
        yield "GET", url, None, 404


def test_every_endpoint_answers_a_bad_request_with_the_one_error_body(web):
    client = web.test_client()
    rules = list(web.url_map.iter_rules())
    assert len(rules) >= 15  # the url_map is read, not an empty list
    for rule in rules:
        for method, url, body, status in bad_requests(rule):
            response = client.open(url, method=method, json=body, headers=JSON)
            where = f"{method} {url} ({rule.endpoint})"
            assert response.status_code == status, f"{where}: {response.status_code}"
            error = assert_error_body(response.get_json(), where)
            if status == 400:
                assert error["phase"] == "parse" and error["field"] == "referenec", f"{where}: {error}"


def test_a_malformed_spec_names_its_field_in_every_api_that_takes_one(web):
    client = web.test_client()
    for url in ("/api/run", "/api/snippets", "/api/export", "/api/puzzles"):
        response = client.post(url, json={"spec": {"source": "x", "kernel": "k", "grid": "(1,)",
                                                   "options": {"num_warps": 3}}})
        error = assert_error_body(response.get_json(), url)
        assert response.status_code == 400 and error["field"] == "options.num_warps", f"{url}: {error}"
        assert error["type"] == "SpecError" and error["phase"] == "parse"


def test_a_refusal_by_a_limit_is_phase_limit(web):
    response = web.test_client().post("/api/snippets", data=b"x" * (5 * web.config["MAX_SNIPPET_BYTES"]),
                                      content_type="application/json")
    error = assert_error_body(response.get_json(), "a body past MAX_CONTENT_LENGTH")
    assert response.status_code == 413 and error["phase"] == "limit" and error["type"] == "RequestEntityTooLarge"


def test_a_browser_still_gets_the_error_page(web):
    response = web.test_client().get("/s/no-such-thing", headers={"Accept": "text/html"})
    assert response.status_code == 404 and b"there is no shared snippet" in response.data
    assert response.mimetype == "text/html"


def test_the_socketio_acks_carry_the_one_error_body(web):
    from app import socketio
    browser = socketio.test_client(web)
    ack = browser.emit("run", {"spec": {"source": "x", "kernel": "k", "grid": "(1,)", "options": {"num_warps": 3}}},
                       callback=True)
    error = assert_error_body(ack, "the run ack")
    assert error["phase"] == "parse" and error["field"] == "options.num_warps" and error["type"] == "SpecError"
    ack = browser.emit("run", {"spec": {}, "referenec": 1}, callback=True)
    assert assert_error_body(ack, "the run ack")["field"] == "referenec"
    ack = browser.emit("compile", {"spec": {"source": "x", "kernel": "k", "grid": "(1,)", "options": {"num_warps": 3}}},
                       callback=True)
    assert assert_error_body(ack, "the compile ack")["field"] == "options.num_warps"
    ack = browser.emit("stop", {}, callback=True)
    assert ack["stopped"] is False
    assert assert_error_body({"error": ack["error"]}, "the stop ack")["field"] == "run_id"


# --- one status and one type per refusal, on every route ----------------------------------------------

SPEC = {"source": "import triton\n\n@triton.jit\ndef k(x_ptr):\n    pass\n", "kernel": "k",
        "inputs": {"x": "torch.zeros(4)"}, "args": {"x_ptr": "x"}, "grid": "(1,)", "reference": {"x": "x"}}
PUZZLE = {"spec": SPEC, "title": "T", "statement": "S", "starter": SPEC["source"]}
# endpoint -> its refusals: (who asks, method, url, body, status, type). `teacher` teaches the class
# {code}, `stranger` does not; `limited` is an app whose limits are spent (limited_web). Every route
# also answers a method it does not take with 405 MethodNotAllowed. A new route needs its entry.
REFUSALS = {
    "api.run": [("stranger", "POST", "/api/run", BAD_BODY, 400, "SpecError"),
                ("limited", "POST", "/api/run", {"spec": SPEC}, 429, "OwnerQueueFull")],
    "api.export": [("stranger", "POST", "/api/export", {"spec": {}}, 400, "SpecError")],
    "api.save_snippet": [("stranger", "POST", "/api/snippets", BAD_BODY, 400, "SpecError"),
                         ("stranger", "POST", "/api/snippets", {"spec": SPEC, "ui": {"pane": "nope"}}, 400, "UiError"),
                         ("limited", "POST", "/api/snippets", {"spec": {**SPEC, "source": SPEC["source"] * 40}}, 413,
                          "SnippetTooLarge"),
                         ("limited", "POST", "/api/snippets", {"spec": {**SPEC, "kernel": "j"}}, 429, "TooManyWrites")],
    "api.get_snippet": [("stranger", "GET", "/api/snippets/nothing", None, 404, "NotFound")],
    "api.launch_form": [("stranger", "POST", "/api/launch-form", {"source": 1}, 400, "SpecError")],
    "api.example": [("stranger", "GET", "/api/examples/nothing", None, 404, "NotFound")],
    "api.examples": [], "api.spec_schema": [], "api.healthz": [],
    "metrics.metrics": [("limited", "GET", "/metrics", None, 403, "Forbidden")],
    "classes.create_class": [("stranger", "POST", "/api/classes", {"title": "A", "puzzles": ["nope"]}, 400, "ClassError"),
                             ("limited", "POST", "/api/classes", {"title": "A", "puzzles": ["constant_add"]}, 429,
                              "TooManyWrites")],
    "classes.get_class": [("stranger", "GET", "/api/classes/NOPE", None, 404, "ClassNotFound"),
                          ("limited", "GET", "/api/classes/NOPE", None, 429, "RateLimited")],
    "classes.class_page": [("stranger", "GET", "/classes/NOPE", None, 404, "ClassNotFound")],
    "classes.teacher_link": [("stranger", "GET", "/classes/{code}/teach/wrong", None, 403, "ClassForbidden")],
    "classes.join_class": [("stranger", "POST", "/api/classes/{code}/join", {"name": ""}, 400, "ClassError")],
    "classes.class_progress": [("stranger", "GET", "/api/classes/{code}/progress", None, 403, "ClassForbidden")],
    "classes.edit_class": [("teacher", "PATCH", "/api/classes/{code}", {"title": 5}, 400, "ClassError"),
                           ("stranger", "PATCH", "/api/classes/{code}", {"title": "B"}, 403, "ClassForbidden")],
    "classes.get_student": [("teacher", "GET", "/api/classes/{code}/students/nobody", None, 404, "ClassNotFound")],
    "classes.rename_student": [("teacher", "PATCH", "/api/classes/{code}/students/nobody", {"name": "Bo"}, 404,
                                "ClassNotFound")],
    "classes.remove_student": [("teacher", "DELETE", "/api/classes/{code}/students/nobody", None, 404, "ClassNotFound")],
    "classes.push": [("teacher", "POST", "/api/classes/{code}/push", {"text": ""}, 400, "ClassError"),
                     ("stranger", "POST", "/api/classes/{code}/push", {"text": "hi"}, 403, "ClassForbidden")],
    "classes.latest_submission": [("teacher", "GET", "/api/classes/{code}/students/nobody/latest/constant_add", None,
                                   404, "ClassNotFound")],
    "classes.class_leaderboard": [("stranger", "GET", "/api/classes/{code}/leaderboard/constant_add", None, 403,
                                   "ClassForbidden")],
    "classes.export_class": [("stranger", "GET", "/api/classes/{code}/export.csv", None, 403, "ClassForbidden")],
    "classes.new_class_page": [],
    "inbox.inbox": [],
    "inbox.one_message": [("stranger", "GET", "/api/inbox/1", None, 404, "ClassNotFound")],
    "inbox.dismiss": [("stranger", "DELETE", "/api/inbox/1", None, 404, "ClassNotFound")],
    "course.get_puzzle": [("stranger", "GET", "/api/puzzles/nothing", None, 404, "NotFound")],
    "course.puzzle_page": [("stranger", "GET", "/puzzles/nothing", None, 404, "NotFound")],
    "course.make_puzzle": [("stranger", "POST", "/api/puzzles", {**PUZZLE, "bogus": 1}, 400, "PuzzleError"),
                           ("limited", "POST", "/api/puzzles", PUZZLE, 429, "OwnerQueueFull")],
    "course.list_puzzles": [], "course.course": [],
    "editor.index": [("stranger", "GET", "/?embed=1&panes=nope", None, 400, "BadRequest")],
    "editor.new": [], "editor.example": [("stranger", "GET", "/examples/nothing", None, 404, "NotFound")],
    "editor.snippet": [("stranger", "GET", "/s/nothing", None, 404, "NotFound")],
    "editor.fork": [("stranger", "GET", "/fork/nothing", None, 404, "NotFound")],
    "static": [("stranger", "GET", "/static/nothing.js", None, 404, "NotFound")],
}
# Socket.IO event -> its refused acks: (who, data, type).
ACK_REFUSALS = {
    "run": [("stranger", {"spec": {}}, "SpecError"), ("limited", {"spec": SPEC}, "OwnerQueueFull")],
    "compile": [("stranger", {"spec": SPEC, "bogus": 1}, "SpecError"),
                ("stranger", {"spec": SPEC, "from_link": True}, "NotCompiledAhead")],
    "stop": [("stranger", {}, "SpecError")],
    "watch_class": [], "connect": [], "disconnect": [],
}


@pytest.fixture(scope="module")
def limited_web(tmp_path_factory):
    """An app whose limits are spent: no run may wait (QUEUE_PER_OWNER 0), one write a minute (spent
    here), one look-up of a missing class code a minute (spent here), small snippets, metrics for
    another address than the tests' clients'."""
    from app import create_app
    directory = tmp_path_factory.mktemp("limited")
    app = create_app({"TESTING": True, "START_WORKERS": False, "DATABASE": str(directory / "db.sqlite"),
                      "RUN_ROOT": str(directory / "runs"), "QUEUE_PER_OWNER": 0, "WRITES_PER_MINUTE": 1,
                      "CLASS_LOOKUPS_PER_MINUTE": 1, "MAX_SNIPPET_BYTES": 2048,
                      "METRICS_ALLOW": "192.0.2.1"})
    client = app.test_client()
    assert client.post("/api/snippets", json={"spec": SPEC}).status_code == 200
    assert client.get("/api/classes/SPENT").status_code == 404
    return app


@pytest.fixture(scope="module")
def askers(web, limited_web):
    teacher = web.test_client()
    created = teacher.post("/api/classes", json={"title": "A", "puzzles": ["constant_add"]})
    assert created.status_code == 200, created.get_json()
    return {"teacher": teacher, "stranger": web.test_client(), "limited": limited_web.test_client()}, created.get_json()["code"]


def test_each_route_answers_each_refusal_with_its_own_status_and_type(web, askers):
    clients, code = askers
    endpoints = {rule.endpoint for rule in web.url_map.iter_rules()}
    assert endpoints == set(REFUSALS), "a route without its refusals here, or an entry for a route that is gone"
    for endpoint, cases in REFUSALS.items():
        for who, method, url, body, status, kind in cases:
            url = url.format(code=code)
            response = clients[who].open(url, method=method, json=body, headers=JSON)
            where = f"{who}: {method} {url} ({endpoint})"
            error = assert_error_body(response.get_json(), where)
            assert (response.status_code, error["type"]) == (status, kind), f"{where}: {error}"
            assert error["phase"] == ("limit" if status in (413, 429, 503, 507) else "parse"), f"{where}: {error}"
            if status == 429:
                assert int(response.headers.get("Retry-After", 0)) >= 1 or kind == "OwnerQueueFull", where


def test_each_socketio_event_acks_each_refusal_with_its_own_type(web, limited_web):
    from app import socketio
    assert set(socketio.server.handlers["/"]) == set(ACK_REFUSALS), "an event without its refusals here"
    browsers = {"stranger": socketio.test_client(web), "limited": socketio.test_client(limited_web)}
    for event, cases in ACK_REFUSALS.items():
        for who, data, kind in cases:
            ack = browsers[who].emit(event, data, callback=True)
            error = assert_error_body({"error": ack["error"]}, f"{who}: {event}")
            assert error["type"] == kind, f"{who}: {event}: {error}"


def test_the_documents_list_the_error_fields_the_code_has():
    """Every list of the error body's fields, in the docs, the README, the code's docstrings and the
    page's comments, is the fields of sandbox.result.ERROR (RunError.to_dict), in their order."""
    import pathlib
    import re

    from sandbox.errors import RunError
    root = pathlib.Path(__file__).resolve().parent.parent
    fields = list(ERROR)
    assert list(RunError("parse", "m").to_dict()) == fields
    # A list of them: "phase", "type", "message", ... between braces or parentheses, quoted or not.
    listing = re.compile(r"[{(]\s*[`\"']?phase[`\"']?\s*,\s*[`\"']?type[`\"']?\s*,\s*[`\"']?message[^})]*[})]")
    paths = [root / "README.md", *(root / "docs").glob("*.md"), *(root / "app").rglob("*.py"),
             *(root / "sandbox").rglob("*.py"), *(root / "static" / "js").rglob("*.js"), pathlib.Path(__file__)]
    found = 0
    for path in paths:
        for match in listing.finditer(path.read_text()):
            names = re.findall(r"\w+", match.group(0))
            found += 1
            assert names == fields, f"{path.relative_to(root)}: {match.group(0)!r} is not {fields}"
    assert found >= 5  # the interfaces', the events', the result's, the handler's, this test's


@pytest.mark.unit
def test_an_exception_that_escapes_a_runs_handling_is_its_error_naming_where_not_a_traceback():
    from sandbox.errors import escaped
    from sandbox.result import failed, problems

    def deep():
        return {}["launch"]

    try:
        deep()
    except KeyError as e:
        error = escaped(e)
    assert (error.phase, error.type) == ("sandbox", "PlaygroundBug")
    assert "KeyError: 'launch', at test_errors.py:" in error.message and "Traceback" not in error.message
    assert problems(failed(error)) == []


def test_a_sigint_to_a_runs_process_is_its_error_and_the_next_run_is_served(client):
    """A SIGINT reaching the run's process while its kernel runs (here sent by a timer the module
    starts; under load on a GPU host, by a sender never found): the run's result says it was
    interrupted and where, its output holds no traceback, and the server serves on. So too where the
    server was started with SIGINT ignored (a shell's background job), as its processes inherit."""
    from tests.support.kernels import vector_add_spec
    spec = vector_add_spec(n=256, block=64, check=True, bench=False, trace=False, ir=False)
    slow = vector_add_spec(n=1 << 22, block=64, check=True, bench=False, trace=True, ir=False)  # 65536 programs
    source = slow["source"] + "\nimport os, signal, threading\nthreading.Timer(2.0, os.kill, (os.getpid(), signal.SIGINT)).start()\n"
    interrupted = client.post("/api/run", json={**slow, "source": source}).get_json()
    assert interrupted["status"] == "error"
    assert interrupted["error"]["type"] == "Interrupted", interrupted["error"]
    assert "KeyboardInterrupt at " in interrupted["error"]["message"] and "Traceback" not in interrupted["stdout"]
    assert client.post("/api/run", json=spec).get_json()["status"] == "ok"


def test_an_exit_in_a_form_runs_code_names_where_and_the_next_run_is_served(client):
    """sys.exit at a module's top level (argparse's error does it) is the build's error at its line,
    saying why a form run cannot exit there; exit() in an expression is that field's error."""
    from tests.support.kernels import vector_add_spec
    spec = vector_add_spec(n=256, block=64, check=True, bench=False, trace=False, ir=False)
    source = spec["source"] + "\nimport argparse\nargparse.ArgumentParser().parse_args(['--nope'])\n"
    exited = client.post("/api/run", json={**spec, "source": source}).get_json()["error"]
    assert (exited["phase"], exited["type"], exited["field"]) == ("build", "SystemExit", "source"), exited
    assert exited["line"] == source.splitlines().index("argparse.ArgumentParser().parse_args(['--nope'])") + 1
    assert "sys.exit(2)" in exited["message"] and "if __name__ ==" in exited["message"]
    exited = client.post("/api/run", json={**spec, "reference": {"out": "exit(5)"}}).get_json()["error"]
    assert (exited["phase"], exited["type"], exited["field"]) == ("check", "SystemExit", "reference.out"), exited
    assert client.post("/api/run", json=spec).get_json()["status"] == "ok"


def test_a_librarys_own_base_exception_is_the_runs_error_at_its_line(client):
    """pytest.skip at a module's top level raises a BaseException of pytest's (not an Exception): the
    build's error at that line, not a lost run."""
    from tests.support.kernels import vector_add_spec
    spec = vector_add_spec(n=256, block=64, check=True, bench=False, trace=False, ir=False)
    source = spec["source"] + "\nimport pytest\npytest.skip('needs a GPU', allow_module_level=True)\n"
    error = client.post("/api/run", json={**spec, "source": source}).get_json()["error"]
    assert (error["phase"], error["type"], error["line"]) == ("build", "Skipped", len(source.splitlines())), error
    assert "needs a GPU" in error["message"]


def test_a_run_whose_code_closed_its_output_still_gets_its_result(client):
    from tests.support.kernels import vector_add_spec
    spec = vector_add_spec(n=256, block=64, check=True, bench=False, trace=False, ir=False)
    for tail in ("\nimport sys\nsys.stdout.close()\n", "\nimport sys\nsys.stderr = None\n"):
        result = client.post("/api/run", json={**spec, "source": spec["source"] + tail}).get_json()
        assert result["status"] == "ok" and result["check"]["ok"], result["error"]


def test_a_reference_that_gives_no_tensor_is_that_references_error(client):
    from tests.support.kernels import vector_add_spec
    spec = vector_add_spec(n=256, block=64, check=True, bench=False, trace=False, ir=False)
    error = client.post("/api/run", json={**spec, "reference": {"out": "'x + y'"}}).get_json()["error"]
    assert (error["phase"], error["field"]) == ("check", "reference.out"), error
    assert "gave a str, not a tensor" in error["message"]
    assert client.post("/api/run", json={**spec, "reference": {"out": "(x + y).tolist()"}}).get_json()["status"] == "ok"


@pytest.mark.cpu_only
def test_a_kernel_the_interpreter_runs_but_the_compiler_refuses_says_so(client):
    """A plain Python helper called from a kernel runs in Triton's interpreter, which a CPU host runs;
    Triton's compiler refuses it. The run passes its check, and its notes and the IR tab say it would
    not compile, at the call's line, with what to do."""
    from tests.support.kernels import VECTOR_ADD, vector_add_spec
    spec = vector_add_spec(n=256, block=64, check=True, bench=False, trace=False, ir=True)
    source = "def plus_zero(a):\n    return a + 0\n\n" + VECTOR_ADD.replace("x + y, mask", "plus_zero(x) + y, mask")
    result = client.post("/api/run", json={**spec, "source": source}).get_json()
    assert result["status"] == "ok" and result["check"]["ok"], result["error"]
    error = result["ir"]["error"]
    assert error["line"] == source.splitlines().index("    tl.store(out_ptr + offs, plus_zero(x) + y, mask=mask)") + 1
    assert "@triton.jit" in error["hint"]
    assert any("compiler refuses this kernel" in note for note in result["notes"]), result["notes"]
    clean = client.post("/api/run", json=spec).get_json()
    assert not any("compiler refuses" in note for note in clean["notes"])
