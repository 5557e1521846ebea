"""A job is one definition (sandbox.protocol.Job): the spec carries only what sandbox.spec defines,
and what the server and the worker add (whose code it is, what was kept for it, a graded run's
hidden check) are the job's own fields, read and checked in one place."""
import ast
import json
import pathlib

import pytest

from app.course import puzzles
from app.dispatch import slot as slot_module
from sandbox import protocol
from sandbox.protocol import Job, JobError
from sandbox.spec import FIELDS
from tests.test_puzzles import graded_run

ROOT = pathlib.Path(__file__).resolve().parent.parent


def test_a_job_has_the_fields_it_declares_and_no_other():
    sent = Job(spec={"source": "x"}, owner="o", provenance=protocol.OWN, sanitized_before=True,
               reference_times={"k": {"median": 1.0}}, peak_gbps=3900.5).message("r1")
    assert Job.read(json.loads(protocol.encode(sent))["content"]) == Job(
        spec={"source": "x"}, owner="o", provenance=protocol.OWN, sanitized_before=True,
        reference_times={"k": {"median": 1.0}}, peak_gbps=3900.5)
    with pytest.raises(JobError, match="'grading_of'"):
        Job.read({"spec": {}, "grading_of": {}})
    with pytest.raises(JobError, match="'sanitized_before' is a str"):
        Job.read({"spec": {}, "sanitized_before": "yes"})
    with pytest.raises(JobError, match="'reference_times' is a list"):
        Job.read({"spec": {}, "reference_times": []})
    with pytest.raises(JobError, match="'peak_gbps' is a str"):
        Job.read({"spec": {}, "peak_gbps": "fast"})


def test_a_graded_runs_hidden_check_is_the_jobs_field_not_the_specs():
    spec = {"source": "s", "kernel": "k", "options": {"puzzle": "p"}}
    job = Job.of_run({**spec, "grading": {"puzzle": "p", "tests": []}}, owner="o")
    assert job.spec == spec and job.grading == {"puzzle": "p", "tests": []}
    assert Job.of_run(spec).grading is None and Job.of_run(spec).spec == spec


def test_every_job_message_is_built_by_the_job():
    """No module writes a job's fields by hand: each `job` and `compile` message is Job.message's."""
    by_hand = []
    for path in [*ROOT.glob("sandbox/**/*.py"), *ROOT.glob("app/**/*.py")]:
        for node in ast.walk(ast.parse(path.read_text())):
            if (isinstance(node, ast.Call) and getattr(node.func, "attr", getattr(node.func, "id", None)) == "message"
                    and node.args and isinstance(node.args[0], ast.Constant) and node.args[0].value in ("job", "compile")):
                by_hand.append(f"{path.relative_to(ROOT)}:{node.lineno}")
    assert by_hand == []


@pytest.fixture
def sent_jobs(app, monkeypatch):
    """The job messages the slots write to their workers (the real write still happens)."""
    lines = []
    real_send = slot_module.WorkerProcess.send

    def send(self, line, deadline):
        lines.append(json.loads(line))
        return real_send(self, line, deadline)

    monkeypatch.setattr(slot_module.WorkerProcess, "send", send)
    return lines


def test_what_the_server_adds_to_a_run_travels_as_the_jobs_fields(app, client, spec, sent_jobs):
    """A reference's kept timing and a graded run's hidden check reach the worker beside the spec,
    whose fields are the spec's own; the runs work as before."""
    spec = {**spec, "options": {**spec["options"], "device": "interpreter", "ir": False, "trace": False}}
    for _ in range(4):  # a later run of the owner's reference, on the worker that timed it, is lent that timing
        response = client.post("/api/run", json={"spec": spec})
        assert response.status_code == 200 and response.get_json()["status"] == "ok"
    puzzle = puzzles.builtin("constant_add")
    graded = graded_run(app, puzzle, puzzle["solution"])
    assert graded["puzzle"]["ok"], graded["puzzle"]
    jobs = [Job.read(job["content"]) for job in sent_jobs if job["type"] == "job"]
    assert all(set(job.spec) <= set(FIELDS) for job in jobs)
    assert jobs[0].reference_times == {} and any(len(job.reference_times) == 1 for job in jobs[1:4])
    assert jobs[-1].grading is not None and jobs[-1].grading["puzzle"] == "constant_add"
    assert jobs[-1].provenance == protocol.FOREIGN
