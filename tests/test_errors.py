"""One error body everywhere: every HTTP endpoint (found in Flask's url_map, so a new one cannot
escape) and the Socket.IO acks answer a bad request with {phase, type, message, hint, line, pid,
field}, the error of a run's result (sandbox.result.ERROR). No worker is started: a bad request
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
