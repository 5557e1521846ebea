"""Who a request is, attacked from the web side: session cookies forged (signed with `dev`, or
naming the server's own work), the server's key made when none is set, a client that drops its
cookie at each request, and a teacher's saves run as the teacher's own runs in the teacher's
share. Through one app with real workers behind one proxy (TRUSTED_PROXY_HOPS=1), each followed by
the server's survival (tests/support/hostile.py, tests/support/hostile_targets.py)."""
import contextlib
import json
import os
import secrets
import subprocess
import sys

import pytest

from tests.support import ROOT
from tests.support import attacks as H
from tests.support.hostile import (NOT_THERE, SECRET, Expect, Returns, check, from_address, graded_run, hostile_spec,
                                   jobs_queued, occupy_workers, owner_of, puzzle_body, result_summary, run_in_thread,
                                   solution_state, wait_for)
from tests.support.hostile_targets import hostile, listeners, survives  # noqa: F401  (fixtures)
from tests.support.kernels import VECTOR_ADD, vector_add_spec

pytestmark = pytest.mark.integration  # every attack runs in a real jailed run process


def session_cookie(key, data):
    """A session cookie holding `data`, signed with `key` as Flask signs one."""
    from flask import Flask
    from flask.sessions import SecureCookieSessionInterface
    forger = Flask("forger")
    forger.secret_key = key
    return SecureCookieSessionInterface().get_signing_serializer(forger).dumps(data)


def forged_session_cookies(h):
    """Sessions are signed with the server's own key, never `dev`: a cookie signed with `dev`
    naming another student's owner id is a new owner's (it sees none of her kernels); a cookie
    signed with the real key names no work of the server's (its key is another space); with no
    SECRET_KEY two web processes starting at once make one key, kept 0600 and out of a run's sight;
    and the server refuses to start with `dev`."""
    app = h.target.app
    alice = h.target.new_client()
    compiled = h.target.run({**vector_add_spec(n=1024, block=256), "options": {"ir": True}}, alice)
    assert compiled["status"] == "ok", result_summary(compiled)
    context = h.context()
    own = h.target.run(hostile_spec(H.LIST_OWN_CACHE, context), alice)
    check(own, Expect({"cache": Returns(lambda names: len(names) > 0, "her own compiled kernels")}), context)
    forger = app.test_client()
    forger.set_cookie("session", session_cookie("dev", {"owner": owner_of(alice)}))
    forged = h.target.run(hostile_spec(H.LIST_OWN_CACHE, context), forger)
    check(forged, Expect({"cache": Returns([])}), context)
    assert owner_of(forger) != owner_of(alice), "a cookie signed with 'dev' was taken"
    from app.owners import PUZZLE_SOLUTIONS, SERVER_PREFIX
    with jobs_queued(app) as (taken, _):
        for claimed in ("puzzle-solution:constant_add", PUZZLE_SOLUTIONS.key, "server-warm-up", owner_of(alice) + "x"):
            client = app.test_client()
            client.set_cookie("session", session_cookie(SECRET, {"owner": claimed}))
            assert h.target.run(vector_add_spec(n=1024, block=256), client)["status"] == "ok"
    assert len(taken) == 4 and not [job.owner for job in taken if job.owner.startswith(SERVER_PREFIX)
                                    or len(job.owner) != 32], [job.owner for job in taken]
    # No SECRET_KEY: two web processes of one host start at once and make one key.
    instance = os.path.join(h.run_root, "..", "instance-" + context["marker"])
    code = ("import hashlib; from app import create_app; app = create_app({'START_WORKERS': False, "
            "'DATABASE': ':memory:', 'INSTANCE_PATH': %r}); print(hashlib.sha256(app.secret_key.encode()).hexdigest())"
            % instance)
    env = {k: v for k, v in os.environ.items() if k != "SECRET_KEY"}
    starts = [subprocess.Popen([sys.executable, "-c", code], cwd=ROOT, env=env, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE) for _ in range(2)]
    keys = [p.communicate(timeout=120)[0].decode().strip() for p in starts]
    assert len(set(keys)) == 1 and len(keys[0]) == 64, keys
    key_file = os.path.join(instance, "secret_key")
    assert os.stat(key_file).st_mode & 0o777 == 0o600
    refused = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env={**env, "SECRET_KEY": "dev"},
                             capture_output=True, timeout=120)
    assert refused.returncode != 0 and b"SECRET_KEY is 'dev'" in refused.stderr, refused.stderr[-2000:]
    look = h.target.run(hostile_spec("attempt('read', read, CONTEXT['key_file'])", h.context(key_file=key_file)))
    check(look, Expect({"read": NOT_THERE}), context)


def get_db_count(app):
    import sqlite3
    with contextlib.closing(sqlite3.connect(app.config["DATABASE"])) as conn:
        return conn.execute("SELECT COUNT(*) FROM puzzle").fetchone()[0]


def puzzle_checks_run_as_the_teachers_runs(h):
    """Saving a teacher's puzzle runs its solution and its starter as the teacher's own runs (lent
    no kernels), never as the server's work: a failing solution is refused and stored nowhere; a
    saved puzzle's check is its solution's outcome, so four concurrent first graded runs and three
    after them run the solution no more. A teacher saving puzzles while the workers are busy waits
    in the teacher's own share: past QUEUE_PER_OWNER saves at once one is refused (429), and a
    bystander still gets in."""
    from app.owners import PUZZLE_SOLUTIONS
    from app.owners import key as owner_key
    app = h.target.app
    teacher = app.test_client()
    teacher.get("/")  # its session: the owner of its saves' runs
    address = from_address("198.18.7.7")
    failing = VECTOR_ADD.replace("x + y, mask=mask", "x - y, mask=mask")
    with jobs_queued(app) as (taken, refused):
        count = get_db_count(app)
        answer = teacher.post("/api/puzzles", json=json.loads(puzzle_body(source=failing)), headers=address)
        assert answer.status_code == 400 and answer.json["error"]["field"] == "solution", answer.get_data(as_text=True)
        assert get_db_count(app) == count, "a refused puzzle was stored"
        assert [job.owner for job in taken] == [owner_key(owner_of(teacher))] and taken[0].store is None, \
            "the failing solution's check did not run once, as the teacher's run"
        made = teacher.post("/api/puzzles", json={**json.loads(puzzle_body()), "title": "Checked " + secrets.token_hex(4)},
                            headers=address)
        assert made.status_code == 200, made.get_data(as_text=True)
        name = made.json["name"]
        results = []
        threads = [run_in_thread(graded_run, h, name) for _ in range(4)]
        for thread, box in threads:
            thread.join(120)
            results.append(box.get("value") or {})
        results += [graded_run(h, name) for _ in range(3)]
        assert all(r.get("puzzle") and r["puzzle"]["expected"] for r in results), [result_summary(r) for r in results]
        assert not [job for job in taken if job.owner == PUZZLE_SOLUTIONS.key], "the server ran a solution its check had run"
        assert solution_state(h, name)["state"] == "ok"
    per_owner = app.config["QUEUE_PER_OWNER"]
    with jobs_queued(app) as (taken, refused):
        sleepers = occupy_workers(h)

        def save(i):
            source = VECTOR_ADD.replace("pid = tl.program_id", f"# puzzle {i} {secrets.token_hex(4)}\n    pid = tl.program_id")
            return teacher.post("/api/puzzles", json=json.loads(puzzle_body(source=source)), headers=address).status_code
        saves = [run_in_thread(save, i) for i in range(per_owner + 1)]
        assert wait_for(lambda: refused, 30), "no save was refused past the teacher's share"
        bystander = h.target.run(vector_add_spec(n=1024, block=256), h.target.new_client())
        for thread, _ in sleepers + saves:
            thread.join(120)
        statuses = sorted(box.get("value") for _, box in saves)
        assert statuses == [200] * per_owner + [429], statuses
        assert bystander["status"] == "ok", result_summary(bystander)


def cookieless_runs_from_one_address(h):
    """A client that drops its cookie is a new owner at each request, not a new address: of 12
    runs sent at once without cookies from one address, QUEUE_PER_ADDRESS wait and the rest are
    refused (429) naming the limit; a bystander at another address still gets in."""
    app = h.target.app
    per_address = app.config["QUEUE_PER_ADDRESS"]
    sleepers = occupy_workers(h)
    spec = vector_add_spec(n=1024, block=256)

    def post():
        return app.test_client(use_cookies=False).post("/api/run", json=spec, headers=from_address("203.0.113.7"))

    flood = [run_in_thread(post) for _ in range(12)]
    answered = lambda: [box["value"] for _, box in flood if "value" in box]  # noqa: E731
    assert wait_for(lambda: len(answered()) >= 12 - per_address, 30), [a.status_code for a in answered()]
    bystander = app.test_client().post("/api/run", json=spec, headers=from_address("192.0.2.9"))
    for thread, _ in flood + sleepers:
        thread.join(120)
    answers = [box["value"] for _, box in flood]
    refused = [a for a in answers if a.status_code == 429]
    ran = [a for a in answers if a.status_code == 200]
    assert len(ran) == per_address and len(refused) == 12 - per_address, [a.status_code for a in answers]
    assert all("QUEUE_PER_ADDRESS" in a.json["error"]["message"] for a in refused), refused[0].json
    assert all(a.json["status"] == "ok" for a in ran)
    assert bystander.status_code == 200 and bystander.json["status"] == "ok", bystander.get_data(as_text=True)[:500]


SCENARIOS = [
    pytest.param(forged_session_cookies, "hostile", id="session_cookie_signed_with_dev_or_naming_the_server"),
    pytest.param(puzzle_checks_run_as_the_teachers_runs, "hostile", id="teacher_puzzle_checked_as_the_teachers_runs"),
    pytest.param(cookieless_runs_from_one_address, "hostile", id="twelve_cookieless_runs_from_one_address"),
]


@pytest.mark.parametrize("scenario, target", SCENARIOS)
def test_a_hostile_scenario_is_denied(request, scenario, target):
    survives(request.getfixturevalue(target), scenario)
