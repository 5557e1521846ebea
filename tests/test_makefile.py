"""The Makefile's setup, read with `make -n` (what it would run, nothing installed): what each target
installs into a fresh checkout's virtual environment."""
import os
import shutil
import subprocess

import pytest

from tests.support import ROOT

pytestmark = pytest.mark.skipif(shutil.which("make") is None, reason="needs make")


PIP_SOURCES = ("PIP_FIND_LINKS", "PIP_INDEX_URL", "PIP_EXTRA_INDEX_URL")


def planned(target, tmp_path, path=None, plain_pip=False, **variables):
    """The commands `make TARGET` would run for a fresh virtual environment under tmp_path;
    `plain_pip`: as on a host whose pip has no sources of its own (no wheelhouse, index or mirror)."""
    env = {**os.environ, "PATH": path or os.environ["PATH"]}
    # Not what an outer make (`make test`) passes down: its variables would be this make's too.
    for name in ("REDIS_URL", "DATABASE_URL", "MAKEFLAGS", "MFLAGS", "MAKELEVEL", "MAKEOVERRIDES"):
        env.pop(name, None)
    if plain_pip:
        for name in PIP_SOURCES:
            env.pop(name, None)
        env["PIP_CONFIG_FILE"] = os.devnull
    argv = ["make", "-n", target, f"VENV={tmp_path / 'venv'}", *(f"{k}={v}" for k, v in variables.items())]
    return subprocess.run(argv, cwd=ROOT, env=env, capture_output=True, text=True, check=True).stdout


def requirements(name):
    with open(os.path.join(ROOT, name)) as f:
        return [line.strip().split("==")[0] for line in f if line.strip() and not line.startswith("#")]


def test_celery_redis_and_psycopg_are_installed_for_scale_out_only(tmp_path):
    assert not {"celery", "redis", "psycopg[binary]"} & set(requirements("requirements.txt"))
    assert requirements("requirements-scale.txt") == ["celery", "redis", "psycopg[binary]"]
    assert "-r requirements-scale.txt" in requirements("requirements-dev.txt")  # the tests run Celery workers
    assert "requirements-scale.txt" not in planned("run", tmp_path)
    assert "requirements-scale.txt" in planned("run", tmp_path, REDIS_URL="redis://localhost:6379/0")
    assert "requirements-scale.txt" in planned("run", tmp_path, DATABASE_URL="postgresql://db-host/playground")
    assert "-r requirements-scale.txt" in planned("worker", tmp_path)
    test = planned("test", tmp_path)
    assert "-r requirements-dev.txt" in test and "pytest" in test.splitlines()[-1]


def test_a_host_without_nvidias_driver_installs_torchs_cpu_build(tmp_path):
    gpu_host = tmp_path / "bin"  # where a GPU host has nvidia-smi
    system = os.pathsep.join(p for p in ("/usr/local/bin", "/usr/bin", "/bin")  # a host without nvidia-smi
                             if not os.path.exists(os.path.join(p, "nvidia-smi")))
    pip = [line for line in planned("install", tmp_path, path=system, plain_pip=True).splitlines()
           if "pip install" in line]
    assert pip and all("--extra-index-url https://download.pytorch.org/whl/cpu" in line for line in pip)
    assert not any(" -q" in line for line in pip)  # the first install shows its progress
    # A host whose pip has a wheelhouse of its own (as this one may): its sources decide, and an index it
    # may not reach is never asked (pip would retry it for every package).
    wheelhouse = planned("install", tmp_path, path=system, plain_pip=True, PIP_FIND_LINKS=str(tmp_path))
    assert "pip install" in wheelhouse and "whl/cpu" not in wheelhouse
    gpu_host.mkdir()
    smi = gpu_host / "nvidia-smi"
    smi.write_text("#!/bin/sh\nexit 0\n")
    smi.chmod(0o755)
    pip = [line for line in planned("install", tmp_path, path=f"{gpu_host}{os.pathsep}{system}",
                                    plain_pip=True).splitlines()
           if "pip install" in line]
    assert pip and not any("whl/cpu" in line for line in pip)  # a GPU host: torch as requirements.txt pins it


def test_added_triton_versions_are_installed_each_into_a_directory_of_its_own_and_make_test_installs_a_second(tmp_path):
    with open(os.path.join(ROOT, "requirements.txt")) as f:
        default = next(line.strip().split("==")[1] for line in f if line.startswith("triton=="))
    tritons_dir = tmp_path / "tritons"
    run = planned("run", tmp_path, TRITONS_DIR=tritons_dir, TRITON_VERSIONS=f"3.8.0 {default}")
    assert f"pip install --no-deps --target {tritons_dir}/3.8.0 triton==3.8.0" in run
    assert f"--target {tritons_dir}/{default}" not in run  # the default is the environment's own
    assert "--target" not in planned("run", tmp_path, TRITONS_DIR=tritons_dir)  # no version added, none installed
    worker = planned("worker", tmp_path, TRITONS_DIR=tritons_dir, WORKER_TRITON="3.8.0")
    assert f"--target {tritons_dir}/3.8.0 triton==3.8.0" in worker
    test = planned("test", tmp_path, TRITONS_DIR=tritons_dir)
    second = "3.9.0" if default == "3.7.1" else "3.7.1"  # the other of the two
    assert f"--target {tritons_dir}/{second} triton=={second}" in test
    assert f"TEST_TRITON={second}" in test.splitlines()[-1]
