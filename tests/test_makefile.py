"""The Makefile's setup, read with `make -n` (what it would run, nothing installed): what each target
installs into a fresh checkout's virtual environment."""
import os
import shutil
import subprocess

import pytest

from tests.helpers import ROOT

pytestmark = [pytest.mark.unit, pytest.mark.skipif(shutil.which("make") is None, reason="needs make")]


def planned(target, tmp_path, path=None, **variables):
    """The commands `make TARGET` would run for a fresh virtual environment under tmp_path."""
    env = {**os.environ, "PATH": path or os.environ["PATH"]}
    env.pop("REDIS_URL", None)
    argv = ["make", "-n", target, f"VENV={tmp_path / 'venv'}", *(f"{k}={v}" for k, v in variables.items())]
    return subprocess.run(argv, cwd=ROOT, env=env, capture_output=True, text=True, check=True).stdout


def requirements(name):
    with open(os.path.join(ROOT, name)) as f:
        return [line.strip().split("==")[0] for line in f if line.strip() and not line.startswith("#")]


def test_celery_and_redis_are_installed_for_scale_out_only(tmp_path):
    assert "celery" not in requirements("requirements.txt") and "redis" not in requirements("requirements.txt")
    assert requirements("requirements-scale.txt") == ["celery", "redis"]
    assert "-r requirements-scale.txt" in requirements("requirements-dev.txt")  # the tests run Celery workers
    assert "requirements-scale.txt" not in planned("run", tmp_path)
    assert "requirements-scale.txt" in planned("run", tmp_path, REDIS_URL="redis://localhost:6379/0")
    assert "-r requirements-scale.txt" in planned("worker", tmp_path)
    test = planned("test", tmp_path)
    assert "-r requirements-dev.txt" in test and "pytest" in test.splitlines()[-1]
