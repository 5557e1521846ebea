"""Every GPU of a host: the web process counts them without CUDA (sandbox.gpus), starts one warm worker
per GPU pinned to it (CUDA_VISIBLE_DEVICES, PCI bus order), a run's /dev holds only its worker's
GPU, and the result and /healthz say which GPU (index and name)."""
import json
import os
import threading
import time

import pytest

from app import create_app
from app.dispatch import pool as dispatcher_module
from app.dispatch.slot import worker_env
from sandbox import gpus
from sandbox.jail import isolation
from sandbox.run import pipeline
from tests.support.kernels import VECTOR_ADD, vector_add_spec

H100 = "NVIDIA H100 80GB HBM3"


def fake_driver(root, cards):
    """/proc/driver/nvidia/gpus as the driver writes it: a directory per GPU, named by its bus id."""
    for bus, minor, uuid in cards:
        os.makedirs(root / bus)
        (root / bus / "information").write_text(
            f"Model: \t\t {H100}\nIRQ:   \t\t 42\nGPU UUID: \t {uuid}\nBus Location: \t {bus}\n"
            f"Device Minor: \t {minor}\nGPU Excluded:\t No\n")
    return str(root)


CARDS = [("0000:c8:00.0", 3, "GPU-cccc"), ("0000:18:00.0", 1, "GPU-aaaa"), ("0000:3b:00.0", 0, "GPU-bbbb")]


def test_gpus_are_indexed_in_bus_order_with_the_drivers_minor(tmp_path):
    found = gpus.host_gpus(proc=fake_driver(tmp_path / "proc", CARDS), dev=str(tmp_path))
    assert [(g.index, g.minor, g.uuid) for g in found] == [(0, 1, "GPU-aaaa"), (1, 0, "GPU-bbbb"), (2, 3, "GPU-cccc")]
    assert {g.name for g in found} == {H100}


def test_inside_a_jail_a_gpu_keeps_its_index_among_the_covered_others(tmp_path):
    """A run's jail covers the other GPUs' entries (empty directories, their names still listed): its
    own GPU keeps the index it has on the host, which the result's device.index reports."""
    proc = fake_driver(tmp_path / "proc", CARDS)
    for bus, _, _ in CARDS[1:]:  # as the jail leaves them: 0000:18 and 0000:3b covered
        os.remove(os.path.join(proc, bus, "information"))
    assert [(g.index, g.uuid) for g in gpus.host_gpus(proc=proc, dev=str(tmp_path))] == [(2, "GPU-cccc")]


def test_without_the_drivers_entries_the_device_nodes_count(tmp_path):
    for name in ("nvidia0", "nvidia1", "nvidiactl", "nvidia-uvm", "nvidia10"):
        (tmp_path / name).touch()
    found = gpus.host_gpus(proc=str(tmp_path / "absent"), dev=str(tmp_path))
    assert [(g.index, g.minor) for g in found] == [(0, 0), (1, 1), (2, 10)]
    assert gpus.host_gpus(proc=str(tmp_path / "absent"), dev=str(tmp_path / "absent")) == []


def test_cuda_visible_devices_entries_are_placed_by_index_or_uuid(tmp_path):
    host = gpus.host_gpus(proc=fake_driver(tmp_path / "proc", CARDS), dev=str(tmp_path))
    assert [g.minor for g in gpus.selected(host, "2,0")] == [3, 1]
    assert [g.index for g in gpus.selected(host, "GPU-bbbb")] == [1]
    assert [g.index for g in gpus.selected(host, "GPU-c")] == [2]  # a unique prefix, as CUDA takes it
    assert gpus.selected(host, None) is None  # unset: every GPU
    assert gpus.selected(host, "MIG-1234") is None and gpus.selected(host, "7") is None  # cannot place: every GPU


def test_a_run_is_shown_only_its_own_gpus_driver_entries(tmp_path):
    """The driver's entries of every GPU whose node the run is not given are covered in its jail:
    gpus/<bus>/ and MIG's capabilities/gpu<minor>/; one whose minor cannot be read is covered too."""
    driver = tmp_path / "nvidia"
    fake_driver(driver / "gpus", CARDS)
    for minor in (0, 1):
        os.makedirs(driver / "capabilities" / f"gpu{minor}" / "mig")
    os.makedirs(driver / "gpus" / "0000:e0:00.0")  # its information unreadable: whose it is, unknown
    control = ["nvidia-caps", "nvidia-uvm", "nvidiactl"]
    hidden = lambda nodes: [os.path.relpath(p, driver) for p in gpus.others_entries(nodes, str(driver))]  # noqa: E731
    assert hidden(control + ["nvidia1"]) == ["gpus/0000:3b:00.0", "capabilities/gpu0", "gpus/0000:c8:00.0",
                                             "gpus/0000:e0:00.0"]
    assert hidden(control + ["nvidia0", "nvidia3"]) == ["gpus/0000:18:00.0", "capabilities/gpu1", "gpus/0000:e0:00.0"]
    assert hidden(control) == ["gpus/0000:18:00.0", "capabilities/gpu1", "gpus/0000:3b:00.0", "capabilities/gpu0",
                               "gpus/0000:c8:00.0", "gpus/0000:e0:00.0"]  # a run with no GPU node sees no GPU's
    assert hidden(["nvidia10", "nvidia1"]) == hidden(["nvidia1"])  # nvidia10 is not nvidia1
    assert gpus.others_entries(["nvidia0"], str(tmp_path / "absent")) == []  # no driver: nothing to cover


@pytest.fixture
def two_gpus(tmp_path, monkeypatch):
    """A host with two GPUs, as the web process would find them."""
    host = gpus.host_gpus(proc=fake_driver(tmp_path / "proc", CARDS[1:]), dev=str(tmp_path))
    monkeypatch.setattr(gpus, "host_gpus", lambda *a, **k: host)
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    return host


def dispatcher_of(**config):
    return create_app({"START_WORKERS": False, "DATABASE": ":memory:", **config}).extensions["dispatcher"]


def test_one_worker_per_gpu_by_default_each_pinned_to_its_gpu(two_gpus):
    dispatcher = dispatcher_of()
    assert [slot.gpu for slot in dispatcher.slots] == ["0", "1"]
    env = worker_env(dispatcher.config, dispatcher.slots[1].gpu)
    assert env["CUDA_VISIBLE_DEVICES"] == "1" and env["CUDA_DEVICE_ORDER"] == "PCI_BUS_ID"


def test_workers_beyond_the_gpus_are_pinned_round_robin(two_gpus):
    assert [slot.gpu for slot in dispatcher_of(WORKERS=5).slots] == ["0", "1", "0", "1", "0"]


def test_the_servers_own_cuda_visible_devices_chooses_the_gpus(two_gpus, monkeypatch):
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "GPU-bbbb,MIG-5")
    assert [slot.gpu for slot in dispatcher_of().slots] == ["1", "MIG-5"]


def test_a_host_without_a_gpu_starts_two_workers_and_pins_none(monkeypatch):
    monkeypatch.setattr(gpus, "host_gpus", lambda *a, **k: [])
    dispatcher = dispatcher_of()
    assert len(dispatcher.slots) == dispatcher_module.CPU_WORKERS and {s.gpu for s in dispatcher.slots} == {None}


def test_a_runs_dev_holds_the_control_nodes_and_its_own_gpu_only(two_gpus, monkeypatch):
    nodes = ["nvidia0", "nvidia1", "nvidiactl", "nvidia-uvm", "nvidia-uvm-tools", "nvidia-caps", "nvidia-modeset",
             "null", "zero"]
    real_listdir = os.listdir
    monkeypatch.setattr(os, "listdir", lambda path=".": nodes if path == "/dev" else real_listdir(path))
    control = ["nvidia-caps", "nvidia-uvm", "nvidia-uvm-tools", "nvidiactl"]
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "1")  # the second GPU: minor 0 (CARDS[2])
    assert isolation.gpu_devices() == sorted(control + ["nvidia0"])
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "0")
    assert isolation.gpu_devices() == sorted(control + ["nvidia1"])
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "MIG-5")  # cannot be placed: every GPU's node
    assert isolation.gpu_devices() == sorted(control + ["nvidia0", "nvidia1"])


def test_a_jailed_run_is_given_its_gpus_by_uuid(two_gpus, monkeypatch):
    # In a jail whose /dev holds only /dev/nvidia1, CUDA counts one GPU: index 1 names none (measured
    # on a two-GPU host: CUDA_ERROR_NO_DEVICE), its UUID names it.
    assert gpus.by_uuid(two_gpus, "1") == "GPU-bbbb" and gpus.by_uuid(two_gpus, "1,0") == "GPU-bbbb,GPU-aaaa"
    assert gpus.by_uuid(two_gpus, "GPU-b") == "GPU-bbbb"
    assert gpus.by_uuid(two_gpus, None) is None and gpus.by_uuid(two_gpus, "MIG-5") == "MIG-5"
    without_uuids = [gpus.Gpu(0, 0, "NVIDIA GPU"), gpus.Gpu(1, 1, "NVIDIA GPU")]  # found from /dev alone
    assert gpus.by_uuid(without_uuids, "1") == "1"
    from sandbox.worker.run_process import Settings
    monkeypatch.setenv("TRITON_CACHE_DIR", "/tmp/cache")
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "1")
    assert Settings.from_environment(False, True).cuda_visible_devices == "GPU-bbbb"
    assert Settings.from_environment(False, False).cuda_visible_devices is None


def test_a_runs_device_index_is_its_workers_gpu(two_gpus, monkeypatch):
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "3")
    assert pipeline.gpu_index() == 3
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "GPU-bbbb")  # as a jailed run sees it: the driver's entries place it
    assert pipeline.gpu_index() == 1
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "MIG-5")
    assert pipeline.gpu_index() is None
    assert pipeline.device_info("interpreter")["index"] is None


def test_healthz_names_each_workers_device(client):
    workers = client.get("/healthz").get_json()["workers"]
    assert all(set(w["device"]) == {"kind", "name", "index", "triton", "torch"} for w in workers)
    if workers[0]["device"]["kind"] == "interpreter":
        assert {w["device"]["index"] for w in workers} == {None}


# --- on a host with two GPUs or more: `pytest -m gpu` ----------------------------------------------------

def cuda_devices():
    import torch  # the test process may; the web process never does
    return torch.cuda.device_count() if torch.cuda.is_available() else 0


# A run's own report of the GPUs it sees: CUDA's count and the GPU nodes in its /dev.
SEEING = '''
import os, time
import torch
print("sees", torch.cuda.device_count(), sorted(n for n in os.listdir("/dev") if n[len("nvidia"):].isdigit()))
time.sleep(2)  # both runs at once: the second worker's run starts while the first still runs
'''
SEES = VECTOR_ADD + SEEING


def two_owners_at_once(dispatcher, source):
    """The results of two people's runs of `source` (a vector add and what it prints), sent at once."""
    results, done = [], threading.Event()

    def listener(_run_id, type, content):
        if type == "result":
            results.append(content["result"])
            if len(results) == 2:
                done.set()

    for owner in ("alice", "bob"):
        dispatcher.submit(vector_add_spec(n=1 << 16, source=source, trace=False), owner, listener=listener)
    assert done.wait(120)
    return results


@pytest.mark.gpu
@pytest.mark.skipif(cuda_devices() < 2, reason="needs two GPUs")
def test_two_concurrent_runs_land_on_different_gpus_each_seeing_only_its_own(make_app):
    app = make_app(RUN_TIMEOUT_S=60.0)  # WORKERS by default: one per GPU
    dispatcher = app.extensions["dispatcher"]
    assert len(dispatcher.slots) == cuda_devices()
    devices = [w["device"] for w in app.test_client().get("/healthz").get_json()["workers"]]
    assert [d["index"] for d in devices] == list(range(cuda_devices())) and all(d["kind"] == "gpu" for d in devices)
    results = two_owners_at_once(dispatcher, SEES)
    assert [r["status"] for r in results] == ["ok", "ok"], [r["error"] for r in results]
    indices = {r["device"]["index"] for r in results}
    assert len(indices) == 2 and indices <= set(range(cuda_devices()))
    for result in results:
        assert result["device"]["name"] == devices[result["device"]["index"]]["name"]
        line = next(line for line in result["stdout"].splitlines() if line.startswith("sees"))
        assert line.startswith("sees 1 ") and line.count("'nvidia") == 1, line  # one GPU, one GPU node


@pytest.mark.gpu
def test_a_worker_whose_runs_find_no_gpu_makes_healthz_say_which_gpu_and_why(make_app, monkeypatch):
    """The server's CUDA_VISIBLE_DEVICES names a GPU this host lacks (an operator's slip): that
    worker's run processes find no GPU in their warm-up, for real. /healthz is not ok and says which
    worker, which GPU and CUDA's own words, in a line; the other worker serves meanwhile."""
    missing = str(cuda_devices() + 3)
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", f"0,{missing}")
    app = make_app(wait=False)
    dispatcher = app.extensions["dispatcher"]
    assert [slot.gpu for slot in dispatcher.slots] == ["0", missing]
    deadline = time.monotonic() + 180
    while time.monotonic() < deadline and not (dispatcher.health()["workers"][0]["state"] == "ready"
                                               and dispatcher.health()["workers"][1]["failed_starts"] >= 1):
        time.sleep(0.2)
    response = app.test_client().get("/healthz")
    body = response.get_json()
    assert response.status_code == 503 and body["ok"] is False and body["workers"][0]["state"] == "ready"
    problem, = body["problems"]
    assert problem.startswith(f"worker 1 (GPU {missing}) cannot start: a run process failed to warm up: "
                              f"RuntimeError: No CUDA GPUs are available ("), problem


DRIVER_ENTRIES = '''
import json, os
import torch
shown = [bus for bus in sorted(os.listdir("/proc/driver/nvidia/gpus"))
         if os.path.exists(f"/proc/driver/nvidia/gpus/{bus}/information")]
mine = "GPU-" + str(torch.cuda.get_device_properties(0).uuid)
print("entries", json.dumps({"shown": shown, "own": [mine in open(f"/proc/driver/nvidia/gpus/{bus}/information").read()
                                                   for bus in shown]}))
'''


@pytest.mark.gpu
@pytest.mark.skipif(cuda_devices() < 2, reason="needs two GPUs")
def test_a_run_reads_only_its_own_gpus_driver_entries(make_app):
    """Two runs at once, one per GPU, through the real jail: each reads the driver's entries of its
    own GPU only (the other's gpus/<bus>/ is covered), and the two are different GPUs."""
    app = make_app(RUN_TIMEOUT_S=60.0)
    dispatcher = app.extensions["dispatcher"]
    results = two_owners_at_once(dispatcher, SEES + DRIVER_ENTRIES)
    assert [r["status"] for r in results] == ["ok", "ok"], [r["error"] for r in results]
    assert {r["device"]["index"] for r in results} == {0, 1}
    seen = []
    for result in results:
        line = next(line for line in result["stdout"].splitlines() if line.startswith("entries"))
        entries = json.loads(line[len("entries "):])
        assert len(entries["shown"]) == 1 and entries["own"] == [True], line
        seen += entries["shown"]
    assert len(set(seen)) == 2
