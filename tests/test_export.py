"""Export to script: the script runs on its own, with plain triton and torch, and checks itself."""
import os
import subprocess
import sys

import pytest

from app.web.export import export_script
from app.gallery import load_example

pytestmark = pytest.mark.integration  # runs each exported script in its own Python


def run_script(script, tmp_path):
    path = tmp_path / "exported.py"
    path.write_text(script)
    env = {**os.environ, "TRITON_INTERPRET": "1"}
    return subprocess.run([sys.executable, str(path)], capture_output=True, text=True, env=env,
                          cwd=tmp_path, timeout=300)


@pytest.mark.parametrize("name", ["vector_add", "masked_tail"])
def test_exported_example_runs_standalone_and_passes(name, tmp_path):
    example = load_example(name)
    done = run_script(export_script(example["spec"], title=example["title"]), tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "OK" in done.stdout.splitlines()


def test_exported_bug_example_reports_the_mismatch(tmp_path):
    done = run_script(export_script(load_example("find_the_bug")["spec"]), tmp_path)
    assert done.returncode == 1, done.stdout + done.stderr
    assert "MISMATCH in out" in done.stdout
    assert "128 element(s) of out were never written" in done.stdout


def test_arguments_are_evaluated_in_the_kernels_parameter_order(tmp_path):
    # `n` uses the argument `x_ptr`, which comes first in the kernel but last in this dict.
    spec = load_example("masked_tail")["spec"]
    spec["args"] = {"BLOCK_SIZE": 4, "n": "x_ptr.numel()", "out_ptr": "out", "y_ptr": "y", "x_ptr": "x"}
    done = run_script(export_script(spec), tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "OK" in done.stdout.splitlines()


def test_script_embeds_the_source_and_spec_without_running_anything():
    spec = load_example("matmul")["spec"]
    script = export_script(spec, title="Tiled matmul")
    compile(script, "exported.py", "exec")
    assert script.startswith('"""Tiled matmul\n')
    assert spec["source"].split("@triton.jit", 1)[1].strip() in script  # the kernel, whole
    assert repr(spec["grid"]) in script
    assert "'atol': 0.05" in script
    # The interpreter must be chosen before triton is first imported.
    assert script.index("TRITON_INTERPRET") < script.index("import triton")


def test_the_script_imports_each_module_once():
    script = export_script(load_example("vector_add")["spec"])
    imports = [line.split("#")[0].strip() for line in script.splitlines() if line.startswith(("import ", "from "))]
    assert sorted(imports) == ["import math", "import os", "import re", "import sys", "import torch", "import triton",
                               "import triton.language as tl"]
