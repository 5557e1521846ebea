"""The jail of a run on an added Triton version: its worker's Python finds that version's directory
first, so the run's root holds that directory, read-only, and nothing more of where it lies (no
other version, nothing else of the instance folder or the checkout). Attacked from inside a run."""
import errno
import json
import os
import shutil
import tempfile

import pytest

from tests.support import ROOT
from tests.support.kernels import vector_add_spec
from tests.support.tritons import app_of_two_versions, require_extra

pytestmark = pytest.mark.integration

LOOK_AROUND = '''
import json as _json, os as _os, triton as _triton
_here = _os.path.dirname(_os.path.dirname(_triton.__file__))
def _listing(path):
    try:
        return sorted(_os.listdir(path))
    except OSError as e:
        return e.errno
def _write(path):
    try:
        with open(path, "w") as f:
            f.write("planted")
        return "wrote"
    except OSError as e:
        return e.errno
_tritons = _os.path.dirname(_here)
_instance = _os.path.dirname(_tritons)
print("FOUND " + _json.dumps({"here": _here, "tritons": _listing(_tritons), "instance": _listing(_instance),
                              "project": _listing(_os.path.dirname(_instance)),
                              "seen": [p for p in PROBES if _os.path.exists(p)],
                              "plant": _write(_os.path.join(_here, "triton", "language", "__init__.py")),
                              "new_file": _write(_os.path.join(_here, "planted.py"))}))
'''


@pytest.fixture(scope="module")
def app(tmp_path_factory):
    with app_of_two_versions(tmp_path_factory.mktemp("hostile-tritons")) as app:
        yield app


def test_a_run_on_an_added_version_reads_its_directory_and_nothing_beside_it(app):
    from sandbox import tritons
    extra = require_extra()
    beside = tempfile.mkdtemp(dir=tritons.tritons_dir())  # as another version's directory would be
    with open(os.path.join(beside, "kept.txt"), "w") as f:
        f.write("another version's")
    probes = [beside, os.path.join(beside, "kept.txt"), os.path.join(ROOT, "app"), os.path.join(ROOT, "README.md"),
              os.path.join(tritons.tritons_dir(), os.pardir, "secret_key"), app.config["DATABASE"]]
    probes += [os.path.join(tritons.tritons_dir(), name) for name in os.listdir(tritons.tritons_dir()) if name != extra]
    spec = vector_add_spec(n=1024, triton=extra)
    spec["source"] += f"PROBES = {json.dumps(probes)}\n" + LOOK_AROUND
    try:
        result = app.test_client().post("/api/run", json=spec).get_json()
    finally:
        shutil.rmtree(beside)
    assert result["status"] == "ok", result
    found = json.loads(next(line for line in result["stdout"].splitlines() if line.startswith("FOUND "))[6:])
    assert found["here"] == tritons.directory(extra)  # its Triton is the version's own
    # Its parents can be passed through, not listed; nothing beside it is there.
    assert found["tritons"] == found["instance"] == found["project"] == errno.EACCES
    assert found["seen"] == []  # no other version, no database, no secret key, nothing of the checkout
    assert found["plant"] == errno.EROFS and found["new_file"] == errno.EROFS
    # The next run of the version finds its Triton as it was.
    again = app.test_client().post("/api/run", json=vector_add_spec(n=1024, triton=extra)).get_json()
    assert again["status"] == "ok" and again["device"]["triton"] == extra
