"""The web server process, attacked: runs that aim at the gunicorn master, the web process, its
control socket, its OOM score and its environment; malformed requests (bodies too big, too deep,
not UTF-8, fields of the wrong type, unknown fields, a teacher's expressions that do not parse)
and malformed, oversized or deeply nested Socket.IO events; the security headers and cookie flags;
and one address opening more Socket.IO connections than it may. Each is answered precisely (the
status, the field named), and the server stays alive with the next normal run working. Through a
real gunicorn server, and the server as `make run` starts it (tests/support/hostile_targets.py)."""
import http.client
import json
import sys
import time

import pytest

from tests.support import attacks as H
from tests.support.hostile import (GONE, JSON, NOT_THERE, NOT_THERE_OR_READ_ONLY, UNREACHABLE, Returns, case,
                                   from_address, puzzle_body, result_summary, sleeper_spec, wait_for)
from tests.support.hostile_targets import (gunicorn_server, listeners, production, production_server,  # noqa: F401
                                           served, survives)
from tests.support.kernels import vector_add_spec

pytestmark = pytest.mark.integration  # every attack reaches a real server subprocess

# Attacks on the web server process itself: through a real gunicorn server.
SERVER_RUN_CASES = [
    case("kill_the_gunicorn_master", H.KILL_GUNICORN_MASTER, alive=("master_pid",),
         servers_seen=Returns([]), kill_master=GONE),
    case("kill_the_web_process", H.KILL_WEB_PROCESS, alive=("server_pid",), kill_web_process=GONE),
    case("gunicorn_control_socket_shutdown", H.CONTROL_SOCKET, alive=("master_pid",),
         server_control_socket=UNREACHABLE, home_control_socket=UNREACHABLE),
    case("server_oom_score_adj", H.SERVER_OOM_SCORE,
         master_oom_score_adj=NOT_THERE_OR_READ_ONLY, web_oom_score_adj=NOT_THERE_OR_READ_ONLY),
    case("server_environment", H.SERVER_ENVIRON,
         master_environ=NOT_THERE, web_environ=NOT_THERE, secret_in_own_environment=Returns(False)),
]


def spec_json(**changes):
    """The vector add spec as a JSON body, with fields replaced (dotted names reach into a member)."""
    spec = vector_add_spec(n=1024, block=256)
    for name, value in changes.items():
        if "." in name:
            member, key = name.split(".")
            spec[member] = {**(spec.get(member) or {}), key: value}
        else:
            spec[name.rstrip("_")] = value
    return json.dumps(spec, allow_nan=True).encode()


def nested_body(depth):
    """A request body whose "ui" (or a spec field) nests `depth` lists deep, beside a valid spec."""
    return (b'{"spec": ' + json.dumps(vector_add_spec(n=1024, block=256)).encode() + b', "ui": '
            + b"[" * depth + b"]" * depth + b"}")


# (path, body, content type, HTTP status, words the error names)
REQUEST_CASES = [
    pytest.param("/api/run", b'{"source": "' + b"x" * (3 << 20) + b'"}', JSON, 413, (), id="body_of_3_mb"),
    pytest.param("/api/run", b"[" * 100_000 + b"]" * 100_000, JSON, 400, ("depth limit is 32",), id="json_nested_100000_deep"),
    pytest.param("/api/run", b'{"source": "\xff\xfe\xfd", "kernel": "\xc3("}', JSON, 400, (), id="body_not_utf8"),
    pytest.param("/api/run", spec_json(**{"options.atol": float("nan")}), JSON, 400, ("options.atol",), id="nan_tolerance"),
    pytest.param("/api/run", spec_json(**{"options.rtol": float("inf")}), JSON, 400, ("options.rtol",), id="infinite_tolerance"),
    pytest.param("/api/run", spec_json(**{"options.flops": float("-inf")}), JSON, 400, ("options.flops",), id="minus_infinity_flops"),
    pytest.param("/api/run", spec_json(**{"args.n": float("nan")}), JSON, 400, ("args.n",), id="nan_argument"),
    pytest.param("/api/run", spec_json(version="1"), JSON, 400, ("version",), id="version_a_string"),
    pytest.param("/api/run", spec_json(source=12), JSON, 400, ("'source'",), id="source_a_number"),
    pytest.param("/api/run", spec_json(kernel=["add_kernel"]), JSON, 400, ("'kernel'",), id="kernel_a_list"),
    pytest.param("/api/run", spec_json(inputs=["torch.randn(8)"]), JSON, 400, ("'inputs'",), id="inputs_a_list"),
    pytest.param("/api/run", spec_json(args="x_ptr=x"), JSON, 400, ("'args'",), id="args_a_string"),
    pytest.param("/api/run", spec_json(grid=4), JSON, 400, ("'grid'",), id="grid_a_number"),
    pytest.param("/api/run", spec_json(reference=["x + y"]), JSON, 400, ("'reference'",), id="reference_a_list"),
    pytest.param("/api/run", spec_json(options="fast"), JSON, 400, ("'options'",), id="options_a_string"),
    # malformed input: nesting, unknown fields, a teacher's expression that does not parse
    *[pytest.param(path, body, JSON, 400, ("nested more than 32 levels", "depth limit is 32"), id=f"{name}_on_{where}")
      for path, where in (("/api/run", "run"), ("/api/snippets", "snippets"), ("/api/puzzles", "puzzles"))
      for name, body in (("json_nested_600_deep", nested_body(600)), ("json_nested_100000_deep_beside_the_spec",
                                                                       nested_body(100_000)))],
    pytest.param("/api/run", spec_json(referenec={"out": "x + y"}), JSON, 400, ("'referenec'",),
                 id="unknown_spec_field_on_run"),
    pytest.param("/api/snippets", json.dumps({"spec": {**vector_add_spec(), "grading": None, "extra": 1}}).encode(), JSON,
                 400, ("'extra'",), id="unknown_spec_field_on_snippets"),
    pytest.param("/api/run", json.dumps({"spec": vector_add_spec(), "form_link": True}).encode(), JSON, 400,
                 ("'form_link'",), id="unknown_field_beside_the_spec"),
    pytest.param("/api/puzzles", puzzle_body(reference={"out": "x + ("}), JSON, 400, ("reference.out", "not a Python expression"),
                 id="teacher_puzzle_reference_that_does_not_tokenize"),
    pytest.param("/api/puzzles", puzzle_body(inputs={"x": "torch.randn(N", "y": "torch.randn(N)", "out": "torch.empty(N)"}),
                 JSON, 400, ("inputs.x",), id="teacher_puzzle_input_that_does_not_parse"),
    pytest.param("/api/puzzles", puzzle_body(grid="(triton.cdiv(n, 256),) if"), JSON, 400, ("grid",),
                 id="teacher_puzzle_grid_that_does_not_parse"),
    pytest.param("/api/puzzles", puzzle_body(source="def broken(:\n"), JSON, 400, ("source",),
                 id="teacher_puzzle_solution_that_does_not_parse"),
    pytest.param("/api/puzzles", json.dumps({**json.loads(puzzle_body()), "answer": "x"}).encode(), JSON, 400,
                 ("'answer'",), id="teacher_puzzle_with_an_unknown_field"),
]


@pytest.mark.parametrize("attack, expect", SERVER_RUN_CASES)
def test_a_hostile_run_cannot_touch_the_web_server(served, attack, expect):
    served.attack(attack, expect)


@pytest.mark.parametrize("path, body, content_type, code, words", REQUEST_CASES)
def test_a_hostile_request_is_refused(served, path, body, content_type, code, words):
    server = served.target
    status, answer = server.request("POST", path, body, {"Content-Type": content_type})
    problems = []
    try:
        message = json.loads(answer)["error"]["message"]
    except (ValueError, KeyError, TypeError):
        message = None
        problems.append(f"the refusal is not a JSON error: {answer[:300]!r}")
    if status != code:
        problems.append(f"expected {code}, got {status}: {answer[:300]!r}")
    missing = [w for w in words if w not in (message or "")]
    if missing:
        problems.append(f"the message does not name {missing}: {message!r}")
    problems += server.survival_problems()
    assert not problems, "\n".join(problems)


# ---------------------------------------------------------------- the attacks of more than one step

def socketio_client(server):
    import socketio
    client = socketio.Client(reconnection=True, reconnection_delay=0.2)
    events = []
    for name in ("run_status", "run_result", "run_stdout"):
        client.on(name, lambda data, name=name: events.append((name, data)))
    client.on("disconnect", lambda *reason: events.append(("disconnect", reason)))
    client.connect(f"http://127.0.0.1:{server.port}", transports=["websocket"], wait_timeout=10)
    return client, events


def socketio_run_ok(client, events, timeout_s=60):
    ack = client.call("run", {"spec": vector_add_spec(n=1024, block=256)}, timeout=30)
    assert ack and "run_id" in ack, f"a normal run was refused: {ack}"
    results = wait_for(lambda: [d for n, d in events if n == "run_result" and d["run_id"] == ack["run_id"]], timeout_s)
    assert results, f"no result for the normal run {ack['run_id']}"
    assert results[0]["result"]["status"] == "ok", result_summary(results[0]["result"])


def malformed_socketio_run_events(h):
    """100 malformed `run` events from one client (not an object, no spec, a spec that is a string,
    a list, the wrong shape, a huge one, no argument, two arguments): no run starts, every event
    that reaches the handler gets an error ack, and the same connection then runs normally."""
    client, events = socketio_client(h.target)
    sid, acks = client.sid, []
    good = vector_add_spec(n=1024, block=256)
    shapes = [1, "run", [1, 2], True, {}, {"spec": None}, {"spec": "a string"}, {"spec": []},
              {"spec": {"source": 5}}, {"spec": {**good, "grid": 5}}, {"spec": {**good, "source": "x" * 600_000}},
              None, ("two", "arguments")]
    try:
        expected_acks = 0
        for i in range(100):
            shape = shapes[i % len(shapes)]
            client.emit("run", shape, callback=lambda *ack: acks.append(ack))
            expected_acks += not isinstance(shape, tuple) and shape is not None
        wait_for(lambda: len(acks) >= expected_acks, 20)
        problems = []
        started = [a for a in acks if a and isinstance(a[0], dict) and "run_id" in a[0]]
        if started:
            problems.append(f"malformed events started runs: {started[:3]}")
        if len(acks) < expected_acks:
            problems.append(f"{expected_acks - len(acks)} malformed events got no error ack")
        refused = lambda ack: ack and isinstance(ack[0], dict) and (ack[0].get("error") or {}).get("message")  # noqa: E731
        if not all(refused(a) for a in acks):
            problems.append(f"an ack without an error message: {[a for a in acks if not refused(a)][:3]}")
        if any(name == "disconnect" for name, _ in events) or client.sid != sid:
            problems.append("the server dropped the client's connection")
        if not problems:
            socketio_run_ok(client, events)
        assert not problems, "\n".join(problems)
    finally:
        client.disconnect()


def oversized_socketio_event(h):
    """A 3 MB `run` event (over the transport's limit): no run starts, and the client, reconnected
    if the server dropped it, runs normally."""
    client, events = socketio_client(h.target)
    acks = []
    try:
        client.emit("run", {"spec": {**vector_add_spec(), "source": "x" * (3 << 20)}},
                    callback=lambda *ack: acks.append(ack))
        wait_for(lambda: acks or any(n == "disconnect" for n, _ in events), 10)
        assert not [a for a in acks if a and isinstance(a[0], dict) and "run_id" in a[0]], f"it started a run: {acks}"
        assert acks or any(n == "disconnect" for n, _ in events), "neither refused nor dropped"
        assert wait_for(lambda: client.connected, 15), "the client could not connect again"
        socketio_run_ok(client, events)
    finally:
        client.disconnect()


def nested(depth):
    value = []
    for _ in range(depth - 1):
        value = [value]
    return value


def socketio_run_event_nested_deep(h):
    """A `run` event nested 600 deep gets an error ack naming the depth limit (not a server
    error); one with a field beside the spec is refused naming it; a raw event nested 100,000 deep
    (deeper than any encoder writes) is dropped; the connection then runs normally."""
    client, events = socketio_client(h.target)
    try:
        spec = vector_add_spec(n=1024, block=256)
        limit = sys.getrecursionlimit()
        sys.setrecursionlimit(5000)  # the client's own encoder walks the event twice as deep as it nests
        try:
            ack = client.call("run", {"spec": {**spec, "args": {**spec["args"], "n": nested(600)}}}, timeout=30)
        finally:
            sys.setrecursionlimit(limit)
        assert "depth limit is 32" in ((ack or {}).get("error") or {}).get("message", ""), ack
        ack = client.call("run", {"spec": spec, "form_link": True}, timeout=30)
        assert "'form_link'" in ((ack or {}).get("error") or {}).get("message", ""), ack
        client.eio.send('2["run",' + "[" * 100_000 + "]" * 100_000 + "]")
        time.sleep(1)
        assert client.connected, "the server dropped the connection"
        socketio_run_ok(client, events)
    finally:
        client.disconnect()


def http_exchange(server, path, headers=None):
    connection = http.client.HTTPConnection("127.0.0.1", server.port, timeout=60)
    try:
        connection.request("GET", path, headers=headers or {})
        response = connection.getresponse()
        return response.status, response.headers, response.read().decode(errors="replace")
    finally:
        connection.close()


def csp_directives(header):
    return {part.split()[0]: part.split()[1:] for part in (header or "").split(";") if part.strip()}


def security_headers(h):
    """Every response says nosniff and a Referrer-Policy; every page a Content-Security-Policy
    that allows scripts from the server only (the editor's one inline import map by the response's
    nonce: no inline handler, no unmarked inline script, no eval), frames it only from itself (the
    embed from FRAME_ANCESTORS); the session cookie is SameSite=Lax and HttpOnly, and Secure when the
    proxy says the request came over https."""
    import re
    problems = []
    pages = ["/", "/examples/vector_add", "/new", "/puzzles", "/puzzles/constant_add", "/examples/vector_add?embed=1",
             "/no/such/page"]
    for path in pages + ["/api/spec", "/healthz", "/static/js/main.js"]:
        status, headers, body = http_exchange(h.target, path)
        if headers.get("X-Content-Type-Options") != "nosniff" or headers.get("Referrer-Policy") != "same-origin":
            problems.append(f"{path}: {dict(headers)}")
        if path not in pages:
            continue
        csp = csp_directives(headers.get("Content-Security-Policy"))
        nonces = [s[len("'nonce-"):-1] for s in csp.get("script-src", []) if s.startswith("'nonce-")]
        if set(csp.get("script-src", [])) - {"'self'"} - {f"'nonce-{n}'" for n in nonces} or len(nonces) != 1:
            problems.append(f"{path}: script-src {csp.get('script-src')}")
        if csp.get("object-src") != ["'none'"] or csp.get("base-uri") != ["'none'"]:
            problems.append(f"{path}: {csp}")
        if csp.get("frame-ancestors") != (["*"] if "embed=1" in path else ["'self'"]):
            problems.append(f"{path}: frame-ancestors {csp.get('frame-ancestors')}")
        for tag in re.findall(r"<script\b[^>]*>", body):
            if "src=" not in tag and 'type="application/json"' not in tag and f'nonce="{nonces[0] if nonces else "-"}"' not in tag:
                problems.append(f"{path}: an inline script without the nonce: {tag}")
        handlers = re.findall(r"<[^>]*\son[a-z]+\s*=[^>]*>", body) + re.findall(r"javascript:", body)
        if handlers:
            problems.append(f"{path}: inline handlers {handlers[:3]}")
    _, headers, _ = http_exchange(h.target, "/")
    cookie = headers.get("Set-Cookie") or ""
    if "SameSite=Lax" not in cookie or "HttpOnly" not in cookie or "Secure" in cookie:
        problems.append(f"the session cookie over http: {cookie}")
    _, headers, _ = http_exchange(h.target, "/", {"X-Forwarded-Proto": "https", "X-Forwarded-For": "192.0.2.44"})
    cookie = headers.get("Set-Cookie") or ""
    if "Secure" not in cookie or "SameSite=Lax" not in cookie:
        problems.append(f"the session cookie over https: {cookie}")
    assert not problems, "\n".join(problems)


def socketio_connections_from_one_address(h):
    """One address opens 30 Socket.IO connections: CONNECTIONS_PER_ADDRESS (20) are let in,
    the rest refused at the handshake; a run from each of the 20 (each its own owner, no cookie)
    puts at most QUEUE_PER_ADDRESS in line; a bystander at another address connects and runs; once
    they close, the address connects again."""
    import socketio
    server, clients, refused = h.target, [], 0
    spec = vector_add_spec(n=1024, block=256)

    def connect(address):
        client = socketio.Client(reconnection=False)
        events = []
        client.on("run_result", lambda data: events.append(data))
        client.connect(server.url, transports=["websocket"], headers=from_address(address), wait_timeout=10)
        return client, events

    try:
        for _ in range(30):
            try:
                clients.append(connect("203.0.113.8"))
            except socketio.exceptions.ConnectionError:
                refused += 1
        assert (len(clients), refused) == (20, 10), (len(clients), refused)
        first, _ = clients[0]
        assert "run_id" in first.call("run", {"spec": sleeper_spec(h)}, timeout=30)
        assert wait_for(lambda: server.health().get("queued") == 0 and server.health()["workers"][0]["state"] == "busy", 30)
        acks = [client.call("run", {"spec": spec}, timeout=30) for client, _ in clients[1:]]
        queued = [a for a in acks if "run_id" in a]
        full = [a for a in acks if "QUEUE_PER_ADDRESS" in (a.get("error") or {}).get("message", "")]
        assert len(queued) == 6 and len(full) == len(acks) - 6, acks
        bystander, events = connect("192.0.2.10")
        clients.append((bystander, events))
        ack = bystander.call("run", {"spec": spec}, timeout=30)
        assert "run_id" in ack, ack
        assert wait_for(lambda: events, 120) and events[0]["result"]["status"] == "ok", events
    finally:
        for client, _ in clients:
            client.disconnect()
    assert wait_for(lambda: server.health().get("queued") == 0, 120)

    def connects_again():
        try:
            connect("203.0.113.8")[0].disconnect()
            return True
        except socketio.exceptions.ConnectionError:
            return False
    assert wait_for(connects_again, 20, 0.5), "the address could not connect again once its connections closed"


SCENARIOS = [
    pytest.param(malformed_socketio_run_events, "served", id="socketio_100_malformed_run_events"),
    pytest.param(oversized_socketio_event, "served", id="socketio_oversized_run_event"),
    pytest.param(socketio_run_event_nested_deep, "served", id="socketio_run_event_nested_600_and_100000_deep"),
    pytest.param(security_headers, "served", id="security_headers_and_cookie_flags"),
    pytest.param(socketio_connections_from_one_address, "production", id="thirty_socketio_connections_from_one_address"),
]


@pytest.mark.parametrize("scenario, target", SCENARIOS)
def test_a_hostile_scenario_is_denied(request, scenario, target):
    survives(request.getfixturevalue(target), scenario)
