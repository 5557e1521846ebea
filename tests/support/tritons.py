"""The second Triton version the tests run beside the default: TEST_TRITON (`make test` installs it
into TRITONS_DIR, the project's instance/tritons), else one installed there already. Tests of several
versions skip without it, saying how to install it."""
import os

import pytest

from sandbox import tritons

NOT_INSTALLED = "needs a second Triton version: `make test` installs TEST_TRITON into instance/tritons"


def extra_version():
    """The installed version beside the default the tests use, or None."""
    wanted = os.environ.get("TEST_TRITON")
    if wanted:
        return wanted if tritons.installed(wanted) else None
    found = sorted(name for name in os.listdir(tritons.tritons_dir()) if tritons.VERSION.match(name)
                   and name != tritons.default_version() and tritons.installed(name)) if os.path.isdir(tritons.tritons_dir()) else []
    return found[-1] if found else None


def require_extra():
    version = extra_version()
    if version is None:
        pytest.skip(NOT_INSTALLED)
    return version


def app_of_two_versions(directory):
    """A real app (one worker per version) running the default Triton and the extra one, its runs under
    `directory`; skips where no extra version is installed."""
    from tests.support.apps import running_app
    return running_app(directory, WORKERS=1, RUN_ROOT=str(directory / "runs"), TRITON_VERSIONS=require_extra())


def as_tuple(version):
    return tuple(int(part) for part in version.split("."))


def newer_and_older():
    """(the newer of the two versions, the older)."""
    pair = sorted([tritons.default_version(), require_extra()], key=as_tuple)
    return pair[1], pair[0]


# tl.atomic_load came in Triton 3.9: on an older one the kernel fails, naming the version.
ATOMIC_LOAD = '''import torch
import triton
import triton.language as tl


@triton.jit
def copy_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    first = tl.atomic_load(x_ptr)
    tl.store(out_ptr + offsets, first, mask=offsets < n)
'''


def atomic_load_spec(**options):
    return {"version": 1, "source": ATOMIC_LOAD, "kernel": "copy_kernel",
            "inputs": {"x": "torch.arange(1, 65, dtype=torch.float32)", "out": "torch.empty(64)"},
            "args": {"x_ptr": "x", "out_ptr": "out", "n": "x.numel()", "BLOCK": 64},
            "grid": "(1,)", "reference": {"out": "torch.full((64,), 1.0)"}, "options": {"ir": False, **options}}


def kept_dir(run_root, kind):
    """Where the default version's workers keep data of `kind` ("kernel-caches", "shared-kernels")."""
    return tritons.kept_dir(run_root, kind, tritons.default_version())
