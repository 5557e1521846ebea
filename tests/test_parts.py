"""A run's parts on their way through its worker (sandbox.worker.main.Worker.relay): a part of the result
is passed on as the run encoded it, at most once, only when it is one of the result's sections of
the right shape, and all of them together no bigger than a result may be. The run process is user
code's: what it writes on its message pipe is checked like anything else it writes."""
import io
import json

from sandbox import protocol
from sandbox.worker.main import PartsSent, Worker

RUN = "run-1"
LIMIT = 1 << 20


def relaying_worker():
    """A worker's relay alone: its channel to the server is a buffer (no run process is involved)."""
    worker = Worker.__new__(Worker)
    worker.channel, worker.parts = io.BytesIO(), PartsSent()
    return worker


def line(part, content, run_id=RUN, **extra):
    msg = protocol.message("partial", run_id, part=part, content=content)
    msg["content"].update(extra)
    return protocol.encode(msg).rstrip(b"\n")


def sent(worker):
    return [json.loads(text) for text in worker.channel.getvalue().splitlines()]


CHECK = {"ok": True, "outputs": {}}


def test_a_part_is_passed_on_as_encoded_and_charges_nothing_to_the_output():
    worker = relaying_worker()
    encoded = line("check", CHECK)
    assert worker.relay(RUN, encoded, 0, LIMIT) == (None, None, 0)
    assert worker.channel.getvalue() == encoded + b"\n"


def test_a_part_twice_malformed_or_of_another_run_is_dropped_and_counts_as_output():
    worker = relaying_worker()
    worker.relay(RUN, line("check", CHECK), 0, LIMIT)
    for bad in (line("check", {"ok": False, "outputs": {}}),      # a second verdict
                line("stdout", "x"),                               # not a section of the result
                line("timings", {"kernel_ms": 1}),                 # not the shape of its section
                line("ir", {}, run_id="another"),                  # not this run's
                line("trace", None, run_id=RUN, run_id_too=RUN)):  # more than a part
        _, error, charged = worker.relay(RUN, bad, 0, LIMIT)
        assert error is None and charged == len(bad)
    assert [m["content"]["part"] for m in sent(worker)] == ["check"]


def test_parts_bigger_together_than_a_result_may_be_stop_the_run():
    worker = relaying_worker()
    worker.parts = PartsSent(RUN)
    worker.parts.bytes = protocol.MAX_LINE_BYTES - 10
    _, error, _ = worker.relay(RUN, line("check", CHECK), 0, LIMIT)
    assert error.phase == "limit" and "16 MB" in error.message
    assert sent(worker) == []


def test_the_next_run_may_send_the_same_parts_again():
    worker = relaying_worker()
    worker.relay(RUN, line("check", CHECK), 0, LIMIT)
    worker.relay("run-2", line("check", CHECK, run_id="run-2"), 0, LIMIT)
    assert [m["run_id"] for m in sent(worker)] == [RUN, "run-2"]


def test_a_launch_a_program_is_making_goes_to_its_check_and_nowhere_else():
    worker, checked = relaying_worker(), []
    record = {"index": 0, "kernel": "doubled", "grid": [3, 1, 1], "args": []}
    launched = protocol.encode(protocol.message("launched", RUN, launch=record)).rstrip(b"\n")
    _, error, charged = worker.relay(RUN, launched, 0, LIMIT, script=True, launched=checked.append)
    assert error is None and charged == len(launched) and checked == [record]  # it counts as output
    worker.relay(RUN, launched, 0, LIMIT, script=True)  # a program not its owner's own: nothing checked
    bad = protocol.encode(protocol.message("launched", RUN, launch=[record])).rstrip(b"\n")
    worker.relay(RUN, bad, 0, LIMIT, script=True, launched=checked.append)  # not a record's shape
    assert checked == [record] and sent(worker) == []  # never passed on to the server
