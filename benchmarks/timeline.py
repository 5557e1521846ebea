"""What a timeline costs and how far its regions can be trusted (needs a GPU)

    python -m benchmarks.timeline

For the gallery's matmul at 4096^3 (fp32 through tf32, 128 x 128 x 32 tiles, 8 warps), its fused
softmax and layer norm over 4096 x 4096, and vector add over 2^20 elements, runs each spec through
sandbox.run.pipeline.run_spec twice without the timeline and twice with it (the second of each
counted: compiles cached) and prints, per kernel, the uninstrumented median, the instrumented
launch's span (first program's start to last program's end), their ratio less 1 (the overhead the
page shows), the extra wall time of a run with the timeline, and the part's size.

Then a layer norm written with three loops over a row (mean, variance, normalise), the mean's loop
marked as a region: the region's share of the programs' time against the share measured by timing
the kernel with and without that loop's work (the mean set to 0 instead).

`--save DIR` writes each kernel's timeline as the run sent it (spec, device, timings, timeline: the
layout of tests/data/timeline/layer_norm.json) for `benchmarks.timeline_draw`, which times the page
drawing it on a machine with a browser.

The specs leave the trace and the bounds check off (at these sizes the interpreter's pass would
take minutes, as in benchmarks.fidelity); the timeline does not depend on them.
"""
import argparse
import copy
import json
import os
import re
import time

from app.gallery import load_example
from sandbox.run.pipeline import run_spec

LOOPED_LAYER_NORM = '''import triton
import triton.language as tl


@triton.jit
def layer_norm_loops(x_ptr, y_ptr, w_ptr, b_ptr, N, stride, eps, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    x_row = x_ptr + row * stride
    y_row = y_ptr + row * stride
    # region: mean loop
    acc = tl.zeros([BLOCK], dtype=tl.float32)
    for off in range(0, N, BLOCK):
        cols = off + tl.arange(0, BLOCK)
        acc += tl.load(x_row + cols, mask=cols < N, other=0.0)
    mean = tl.sum(acc, axis=0) / N
    # endregion
    # region: variance loop
    acc = tl.zeros([BLOCK], dtype=tl.float32)
    for off in range(0, N, BLOCK):
        cols = off + tl.arange(0, BLOCK)
        x = tl.load(x_row + cols, mask=cols < N, other=0.0)
        d = tl.where(cols < N, x - mean, 0.0)
        acc += d * d
    rstd = 1 / tl.sqrt(tl.sum(acc, axis=0) / N + eps)
    # endregion
    # region: normalize loop
    for off in range(0, N, BLOCK):
        cols = off + tl.arange(0, BLOCK)
        mask = cols < N
        x = tl.load(x_row + cols, mask=mask, other=0.0)
        w = tl.load(w_ptr + cols, mask=mask)
        b = tl.load(b_ptr + cols, mask=mask)
        tl.store(y_row + cols, (x - mean) * rstd * w + b, mask=mask)
    # endregion
'''
MEAN_LOOP = LOOPED_LAYER_NORM[LOOPED_LAYER_NORM.index("    acc = tl.zeros"):LOOPED_LAYER_NORM.index("    # endregion")]


def gallery(name, inputs, args=None, **options):
    spec = load_example(name)["spec"]
    spec["inputs"] = inputs
    spec["args"].update(args or {})
    spec["options"] = {**spec.get("options", {}), "ir": False, "trace": False, "sanitize": False, **options}
    return spec


def looped(source):
    return {"source": source, "kernel": "layer_norm_loops",
            "inputs": {"x": "torch.randn(4096, 4096)", "w": "torch.rand(4096) + 0.5", "b": "torch.randn(4096)",
                       "y": "torch.empty(4096, 4096)"},
            "args": {"x_ptr": "x", "y_ptr": "y", "w_ptr": "w", "b_ptr": "b", "N": "x.shape[1]", "stride": "x.stride(0)",
                     "eps": 1e-5, "BLOCK": 1024},
            "grid": "(x.shape[0],)", "reference": {},
            "options": {"ir": False, "trace": False, "sanitize": False}}


CASES = {
    "matmul 4096³ (tf32)": gallery("matmul", {"a": "torch.randn(4096, 4096)", "b": "torch.randn(4096, 4096)",
                                              "c": "torch.empty(4096, 4096)"},
                                   {"BLOCK_M": 128, "BLOCK_N": 128, "BLOCK_K": 32}, num_warps=8, check=False),
    "fused softmax 4096²": gallery("fused_softmax", {"x": "torch.randn(4096, 4096)", "out": "torch.empty(4096, 4096)"}),
    "layer norm 4096²": gallery("layer_norm", {"x": "torch.randn(4096, 4096)", "w": "torch.rand(4096) + 0.5",
                                               "b": "torch.randn(4096)", "y": "torch.empty(4096, 4096)"}),
    "vector add 2^20": gallery("vector_add", {"x": "torch.randn(1 << 20)", "y": "torch.randn(1 << 20)",
                                              "out": "torch.empty(1 << 20)"}),
    "layer norm, 3 loops": looped(LOOPED_LAYER_NORM),
}


def timed(spec):
    """(the second run's result, its wall seconds)."""
    run_spec(spec)
    start = time.perf_counter()
    result = run_spec(spec)
    return result, time.perf_counter() - start


def with_timeline(spec):
    spec = copy.deepcopy(spec)
    spec["options"]["timeline"] = True
    return spec


def save(directory, name, spec, result):
    os.makedirs(directory, exist_ok=True)
    slug = re.sub(r"[^a-z0-9]+", "_", name.lower()).strip("_")
    with open(os.path.join(directory, f"{slug}.json"), "w") as f:
        json.dump({key: result[key] for key in ("device", "timings", "timeline")} | {"spec": spec}, f)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--save", default=None, help="a directory for each kernel's timeline, as the run sent it")
    args = parser.parse_args()
    print("| kernel | programs | uninstrumented | instrumented span | overhead | clock | run + timeline | part |")
    print("|---|---|---|---|---|---|---|---|")
    shares = None
    for name, spec in CASES.items():
        plain, plain_s = timed(spec)
        result, timeline_s = timed(with_timeline(spec))
        t = result["timeline"]
        if t is None:
            print(f"| {name} | no timeline: {result['error'] or result['notes']} |")
            continue
        kernel_ms = plain["timings"]["kernel_ms"]["median"]
        if args.save:
            save(args.save, name, with_timeline(spec), result)
        print(f"| {name} | {t['programs_total']:,} | {kernel_ms * 1e3:.1f} µs | {t['total_ns'] / 1e3:.1f} µs | "
              f"{100 * (t['total_ns'] / (kernel_ms * 1e6) - 1):+.1f}% | {t['clock']['ghz']:.2f} GHz {t['clock']['source']} | "
              f"+{timeline_s - plain_s:.2f} s | {len(json.dumps(t)) / 1024:.0f} KB |")
        if name == "layer norm, 3 loops":
            shares = {t["regions"][r["region"]]["name"]: r["share"] for r in t["summary"]["regions"]}
            full_ms = kernel_ms
    if shares is None:
        return
    without = looped(LOOPED_LAYER_NORM.replace(MEAN_LOOP, "    mean = 0.0\n"))
    without_ms = timed(without)[0]["timings"]["kernel_ms"]["median"]
    measured = (full_ms - without_ms) / full_ms
    print(f"\nlayer norm, 3 loops: the mean loop's region share {100 * shares['mean loop']:.1f}% of the programs' time "
          f"(variance {100 * shares['variance loop']:.1f}%, normalize {100 * shares['normalize loop']:.1f}%); "
          f"timed without it: {full_ms * 1e3:.1f} µs → {without_ms * 1e3:.1f} µs, a share of {100 * measured:.1f}%")


if __name__ == "__main__":
    main()
