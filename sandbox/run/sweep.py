"""A sweep: the spec's launch, then the same launch with each combination of a few values of its
meta-parameters, num_warps and num_stages (options.sweep), each checked and timed as a run of its
own. The result is the spec's own run with `result.sweep` (docs/result.md): a row per
configuration and the fastest whose outputs match, judged beyond the timing noise.

On a GPU each row is timed as the autotuner times a config (sandbox.run.bench: do_bench's median and
p20/p80, L2 flushed); Triton's interpreter has no clock worth comparing, so there a sweep checks
each configuration and names no best.
"""
import itertools

LAUNCH_OPTIONS = ("num_warps", "num_stages")


def configs(grid):
    """Every combination of the sweep's values, in order: [{name: value}]."""
    names = list(grid)
    return [dict(zip(names, values)) for values in itertools.product(*(grid[name] for name in names))]


def config_spec(spec, config):
    """The spec launched with `config`: its meta-parameters as arguments, its num_warps and
    num_stages as options; checked and timed, not traced, no IR, no timeline."""
    args = {**spec["args"], **{k: v for k, v in config.items() if k not in LAUNCH_OPTIONS}}
    options = {**spec["options"], **{k: v for k, v in config.items() if k in LAUNCH_OPTIONS},
               "sweep": None, "trace": False, "ir": False, "bench": True, "timeline": False}
    return {**spec, "args": args, "options": options}


def row(config, result):
    timings = result.get("timings") or {}
    error = result.get("error")
    return {"config": config, "status": result["status"], "kernel_ms": timings.get("kernel_ms"),
            "gbps": timings.get("gbps"),
            "error": None if error is None else {"phase": error["phase"], "message": error["message"]}}


def best(rows):
    """The index of the fastest row whose outputs match, and whether it is faster than the runner-up
    beyond both rows' noise (p20..p80); None without timed rows."""
    timed = [(i, r) for i, r in enumerate(rows) if r["status"] == "ok" and r["kernel_ms"] and r["kernel_ms"]["n"] > 1]
    if not timed:
        return None, False
    timed.sort(key=lambda item: item[1]["kernel_ms"]["median"])
    first = timed[0][1]["kernel_ms"]
    clear = len(timed) == 1 or first["p80"] < timed[1][1]["kernel_ms"]["p20"]
    return timed[0][0], clear


def sweep(spec, run_base, run_config):
    """`run_base(spec)`, `run_config(spec)` -> result: run the spec's own launch and a configuration's
    (sandbox.run.pipeline.run_spec)."""
    grid = spec["options"]["sweep"]
    base = run_base({**spec, "options": {**spec["options"], "sweep": None}})
    rows = [row(config, run_config(config_spec(spec, config))) for config in configs(grid)]
    index, clear = best(rows)
    interpreter = (base.get("device") or {}).get("kind") == "interpreter"
    base["sweep"] = {"params": list(grid), "rows": rows, "best": index, "clear": clear, "interpreter": interpreter}
    return base
