import os

from app.config import SETTINGS
from tests.helpers import ROOT


def test_every_setting_is_documented_in_the_readme():
    with open(os.path.join(ROOT, "README.md")) as f:
        readme = f.read()
    missing = [s.name for s in SETTINGS if f"`{s.name}`" not in readme]
    assert not missing, f"settings missing from README.md: {missing}"


def test_settings_come_from_the_environment(monkeypatch):
    from app import create_app
    monkeypatch.setenv("RUN_TIMEOUT_S", "7.5")
    monkeypatch.setenv("WORKERS", "3")
    app = create_app({"START_WORKERS": False, "DATABASE": ":memory:"})
    assert app.config["RUN_TIMEOUT_S"] == 7.5 and app.config["WORKERS"] == 3
