"""The interpreter's own speed, for comparing Triton releases: gallery examples run whole (built,
traced, checked; no IR, no timing) in this process, by the Triton of the Python that runs it.

    OMP_NUM_THREADS=1 python -m benchmarks.interpreter [--runs 7] [--examples vector_add,matmul]
    OMP_NUM_THREADS=1 other-venv/bin/python -m benchmarks.interpreter   # another Triton, side by side

Prints per example the CPU time of the run (this process's, so that a loaded host's other work
counts less than by the wall clock): the least and the median of N runs after one warm-up.
"""
import argparse
import statistics
import time

import triton

from app.gallery import load_example
from sandbox.run.pipeline import run_spec

EXAMPLES = "vector_add,fused_softmax,layer_norm,matmul,transpose"


def cpu_ms(spec, runs):
    run_spec(spec)  # the warm-up: Triton's imports, the interpreter's first patches
    times = []
    for _ in range(runs):
        start = time.process_time()
        result = run_spec(spec)
        times.append((time.process_time() - start) * 1e3)
        assert result["status"] == "ok", result["error"]
    return min(times), statistics.median(times)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--examples", default=EXAMPLES)
    args = parser.parse_args()
    print(f"Triton {triton.__version__}, CPU ms of a run (least / median of {args.runs})")
    for name in args.examples.split(","):
        spec = load_example(name)["spec"]
        spec["options"].update(ir=False, bench=False, trace=True, device="interpreter")
        least, median = cpu_ms(spec, args.runs)
        print(f"  {name:<16} {least:8.1f} {median:8.1f}")


if __name__ == "__main__":
    main()
