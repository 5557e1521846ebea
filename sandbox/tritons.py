"""The Triton versions a server runs: the default (the one its Python environment holds) and those
an operator adds (TRITON_VERSIONS), each installed on its own into TRITONS_DIR/<version> (`make run
TRITON_VERSIONS="3.8.0 3.7.1"` installs them). A worker runs one version: its Python finds that
directory before its environment's packages, and its runs see that directory read-only (the jail
binds what the worker's Python imports from). Pure Python: the web process imports no Triton.
"""
import importlib.metadata
import os
import re

from sandbox import settings

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
VERSION = re.compile(r"^\d{1,3}\.\d{1,3}\.\d{1,3}$")  # a release, as pip names it: 3.9.0
# When each release came out (PyPI's first upload), for the page's picker; a release missing here
# is shown without its date.
RELEASED = {"3.0.0": "2024-07-19", "3.1.0": "2024-10-14", "3.2.0": "2025-01-22", "3.3.0": "2025-04-09",
            "3.3.1": "2025-05-29", "3.4.0": "2025-07-30", "3.5.0": "2025-10-13", "3.5.1": "2025-11-11",
            "3.6.0": "2026-01-20", "3.7.0": "2026-05-07", "3.7.1": "2026-06-17", "3.8.0": "2026-08-28",
            "3.9.0": "2026-10-27"}


def default_version():
    """The Triton of this process's Python environment: the server's default, and a worker's that is
    given no directory."""
    try:
        return importlib.metadata.version("triton")
    except importlib.metadata.PackageNotFoundError:
        return None


def added_versions(environ=os.environ):
    """The versions TRITON_VERSIONS names ("3.8.0 3.7.1", or comma-separated), in order, each once;
    a malformed one is refused with a message naming it (the server does not start)."""
    names = [name for name in re.split(r"[\s,]+", settings.value("TRITON_VERSIONS", environ) or "") if name]
    for name in names:
        if not VERSION.match(name):
            raise ValueError(f"TRITON_VERSIONS: {name!r} is not a Triton release such as 3.8.0")
    return list(dict.fromkeys(names))


def tritons_dir(environ=os.environ):
    return os.path.abspath(settings.value("TRITONS_DIR", environ) or os.path.join(ROOT, "instance", "tritons"))


def directory(version, environ=os.environ):
    """Where `version` is installed (TRITONS_DIR/<version>): what its worker's Python finds first. Its
    real path: the jail binds a directory where it really is, and a run's Python must find it there."""
    return os.path.realpath(os.path.join(tritons_dir(environ), version))


def installed(version, environ=os.environ):
    """Is `version` installed in its directory (pip's record of it is there)?"""
    return os.path.isdir(os.path.join(directory(version, environ), f"triton-{version}.dist-info"))


def server_versions(environ=os.environ):
    """[(version, its directory, or None for the default)]: the default first, then the added ones
    (one that is the default already is the default)."""
    default = default_version()
    return [(default, None)] + [(v, directory(v, environ)) for v in added_versions(environ) if v != default]


def describe(version, default):
    """A version as GET /api/spec lists it."""
    return {"version": version, "released": RELEASED.get(version), "default": version == default}


def check_installed(version, directory, error):
    """Raise `error` (a line saying why) where `version`, to be found in `directory`, is not installed there."""
    if directory is not None and not os.path.isdir(os.path.join(directory, f"triton-{version}.dist-info")):
        raise error(f"Triton {version} is not installed in {directory}: `make run TRITON_VERSIONS=\"{version}\"` "
                    f"(or `make tritons`) installs it")


def imported_another(version, directory, announced):
    """Why a worker started for `version` cannot serve it, having imported Triton `announced` (its
    directory holds no whole install: its Python found another); None where it imported `version`."""
    if announced == version:
        return None
    return f"the worker for Triton {version} imported Triton {announced}: {directory or 'its environment'} holds no whole install of it"


def kept_dir(run_root, kind, version):
    """Where a worker keeps data of `kind` ("kernel-caches", "shared-kernels") compiled by Triton
    `version`: one directory per version, so that no version reads another's compiled kernels."""
    return os.path.join(run_root, kind, version)
