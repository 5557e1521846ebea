"""After a program's run, its other kept launches are compiled ahead (sandbox.worker.ahead) while its
person reads the result: a click on one finds its kernel and its IR built."""
import time

import pytest

from tests.support.apps import running_app
from tests.test_shared_kernels import owner_cache

PROGRAM = '''import torch
import triton
import triton.language as tl


@triton.jit
def doubled(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=offs < n) * 2, mask=offs < n)


@triton.jit
def negated(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, -tl.load(x_ptr + offs, mask=offs < n), mask=offs < n)


x = torch.randn(300)
out = torch.empty_like(x)
doubled[(3,)](x, out, 300, BLOCK=128)
negated[(5,)](x, out, 300, BLOCK=64)
'''


@pytest.fixture(scope="module")
def app(tmp_path_factory):
    root = tmp_path_factory.mktemp("ahead")
    with running_app(root, WORKERS=1, RUN_ROOT=str(root / "runs")) as app:
        yield app


def run(client, **options):
    spec = {"version": 1, "mode": "script", "source": PROGRAM,
            "options": {"check": True, "trace": True, "bench": True, "ir": True, **options}}
    result = client.post("/api/run", json=spec).get_json()
    assert result["status"] == "ok", result["error"]
    return result


def settled(app, client, timeout_s=90, quiet_s=3.0):
    """The owner's kernels once nothing has been added to them for `quiet_s`."""
    entries, since, deadline = owner_cache(app, client), time.monotonic(), time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        time.sleep(0.5)
        now = owner_cache(app, client)
        if now != entries:
            entries, since = now, time.monotonic()
        elif time.monotonic() - since >= quiet_s:
            return entries
    raise AssertionError("the owner's kernels kept changing")


def test_a_click_on_another_launch_finds_it_compiled_ahead(app):
    person = app.test_client()
    shown = run(person)["launches"]["selected"]
    kept = settled(app, person)
    other = 1 - shown
    clicked = run(person, launch=other)
    assert clicked["launches"]["replay"]["replayed"] and clicked["ir"] is not None
    assert owner_cache(app, person) == kept  # nothing left for the click to compile


def test_a_run_of_a_foreign_program_compiles_nothing_ahead(app):
    person = app.test_client()
    spec = {"version": 1, "mode": "script", "source": PROGRAM.replace("* 2", "* 3"),
            "options": {"check": True, "trace": True, "bench": True, "ir": True}}
    result = person.post("/api/run", json={"spec": spec, "from_link": True}).get_json()
    assert result["status"] == "ok", result["error"]
    time.sleep(3)
    assert owner_cache(app, person) == []
