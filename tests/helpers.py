"""What tests share besides fixtures: the project's paths, the vector-add spec most tests run, the
browser's launch settings, waiting for an app's workers. Tests import from here, never from conftest."""
import os
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync"]

VECTOR_ADD = '''import triton
import triton.language as tl


@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK_SIZE: tl.constexpr):
    pid = tl.program_id(axis=0)
    offs = pid * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    y = tl.load(y_ptr + offs, mask=mask)
    tl.store(out_ptr + offs, x + y, mask=mask)
'''


def vector_add_spec(n=98432, block=1024, source=VECTOR_ADD, **options):
    return {
        "version": 1, "source": source, "kernel": "add_kernel",
        "inputs": {"x": f"torch.randn({n})", "y": f"torch.randn({n})", "out": f"torch.empty({n})"},
        "args": {"x_ptr": "x", "y_ptr": "y", "out_ptr": "out", "n": "x.numel()", "BLOCK_SIZE": block},
        "grid": "(triton.cdiv(n, meta['BLOCK_SIZE']),)",
        "reference": {"out": "x + y"},
        "options": {"ir": False, **options},
    }


def has_gpu():
    try:
        import torch
        return torch.cuda.is_available()
    except ImportError:
        return False


def wait_until_ready(app, timeout_s=180):
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if all(w["state"] == "ready" for w in app.extensions["dispatcher"].health()["workers"]):
            return
        time.sleep(0.2)
    raise RuntimeError("workers did not start")


def wait_until_warmed(app, timeout_s=300):
    """Until every worker's warm-up (the gallery compiled into the shared kernels) has finished;
    returns the workers' warm-up reports."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        reports = [w.get("shared_kernels") or {} for w in app.extensions["dispatcher"].health()["workers"]]
        if all(r.get("state") == "ready" for r in reports):
            return reports
        time.sleep(0.3)
    raise RuntimeError(f"the workers' warm-up did not finish: {reports}")
