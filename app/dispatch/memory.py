"""The runs' memory against the host's: each worker has a run and up to sandbox.protocol.MAX_COMPILES_AHEAD
compiles or checks ahead at once, each limited to RUN_MEMORY_MB, and the sum of those limits must fit in the
host's memory, or the runs of several people at their limits together would take the host down (the
kernel's OOM killer choosing among the server's processes) instead of being stopped, each, at its
own limit.

At start the embedded dispatch clamps RUN_MEMORY_MB to the host's share of every run at once
(RUNS_SHARE of its memory: the rest for the web process, the workers and the system), logs why, and
/healthz says so (`run_memory`). The host's memory is the smaller of its RAM and the limit of the
server's own cgroup.
"""
import logging
import os

from sandbox.protocol import MAX_COMPILES_AHEAD

log = logging.getLogger(__name__)
RUNS_PER_WORKER = 1 + MAX_COMPILES_AHEAD  # a run and its worker's compiles (and checks) ahead
RUNS_SHARE = 0.75  # of the host's memory, for the runs' limits together


def host_memory_mb():
    """The host's RAM, or the server's cgroup limit where smaller (v2's memory.max, v1's limit)."""
    ram = os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    limits = [ram]
    for path in ("/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"):
        try:
            with open(path) as f:
                text = f.read().strip()
        except OSError:
            continue
        if text.isdigit():
            limits.append(int(text))
    return min(limits) >> 20


def run_memory(asked_mb, workers, host_mb=None):
    """What /healthz reports as `run_memory`: the memory limit of one run (`asked_mb` or less), the
    host's, how many runs may hold theirs at once, and why the limit is less than asked, if it is."""
    host_mb = host_memory_mb() if host_mb is None else host_mb
    at_once = workers * RUNS_PER_WORKER
    fits_mb = int(host_mb * RUNS_SHARE) // at_once
    clamped = asked_mb > fits_mb
    report = {"limit_mb": min(asked_mb, fits_mb), "asked_mb": asked_mb, "host_mb": host_mb, "runs_at_once": at_once,
              "note": None}
    if clamped:
        report["note"] = (f"RUN_MEMORY_MB is {asked_mb} MB, but {at_once} runs at once ({workers} workers, each a run "
                          f"and {MAX_COMPILES_AHEAD} compiles or checks ahead) would hold {asked_mb * at_once:,} MB "
                          f"of a host of {host_mb:,} MB: each run is limited to {report['limit_mb']} MB ({RUNS_SHARE:.0%} of the "
                          f"host's memory shared out). Fewer WORKERS, or more memory, leave each run more.")
    return report


def apply(config, workers):
    """Clamp config["RUN_MEMORY_MB"] (what the workers are started with) to the host's share; returns
    the report for /healthz."""
    report = run_memory(config["RUN_MEMORY_MB"], workers)
    if report["note"]:
        log.warning(report["note"])
    config["RUN_MEMORY_MB"] = report["limit_mb"]
    return report
