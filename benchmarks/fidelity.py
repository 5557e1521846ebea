"""Do the playground's GPU timings match a standalone triton.testing.do_bench? (needs a GPU)

    python -m benchmarks.fidelity [--rounds 3]

For vector add over 2^26 fp32 elements and a 4096 x 4096 x 4096 fp16 matmul (128 x 128 x 64 tiles,
8 warps, 3 stages), runs the spec through sandbox.run.pipeline.run_spec in this process, then launches
the same kernel from the same source by hand and times it with do_bench. The two alternate for
`--rounds` rounds; the table shows the median of each side's medians and their ratio (goal: within
5% of 1), beside the PyTorch reference, the first round's compile time (Triton's disk cache may
already hold the kernel) and the throughput the playground reports.

A GPU run first runs every program in Triton's interpreter over CPU copies of the inputs (the
bounds check and the trace). At these sizes that pass alone would take minutes (65,536 programs
of vector add; 4096^3 multiply-adds through numpy; the server stops it after TRACE_BUDGET_S), so
these specs turn it off (options trace and sanitize). The timings do not depend on it; only
`bytes` then counts the tensors' sizes (for these two kernels the same number as the trace gives).
"""
import argparse
import importlib.util
import os
import statistics
import tempfile

import torch
import triton
import triton.testing

from sandbox.run import pipeline

VECTOR_ADD = '''import triton
import triton.language as tl


@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK_SIZE: tl.constexpr):
    offs = tl.program_id(0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    y = tl.load(y_ptr + offs, mask=mask)
    tl.store(out_ptr + offs, x + y, mask=mask)
'''

MATMUL = '''import triton
import triton.language as tl


@triton.jit
def matmul_kernel(a_ptr, b_ptr, c_ptr, M, N, K,
                  stride_am, stride_ak, stride_bk, stride_bn, stride_cm, stride_cn,
                  BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    # One program a BLOCK_M x BLOCK_N tile of c, on a 2-D grid: axis 0 walks rows of tiles, axis 1 columns.
    row = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)[:, None]
    col = tl.program_id(1) * BLOCK_N + tl.arange(0, BLOCK_N)[None, :]
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k0 in range(0, K, BLOCK_K):
        k_row = k0 + tl.arange(0, BLOCK_K)[None, :]  # the slice of K as a's columns
        k_col = k0 + tl.arange(0, BLOCK_K)[:, None]  # and as b's rows
        a = tl.load(a_ptr + row * stride_am + k_row * stride_ak, mask=(row < M) & (k_row < K), other=0.0)
        b = tl.load(b_ptr + k_col * stride_bk + col * stride_bn, mask=(k_col < K) & (col < N), other=0.0)
        acc = tl.dot(a, b, acc)
    tl.store(c_ptr + row * stride_cm + col * stride_cn, acc.to(tl.float16), mask=(row < M) & (col < N))
'''

N_ADD = 1 << 26
SIZE = 4096
MATMUL_META = {"BLOCK_M": 128, "BLOCK_N": 128, "BLOCK_K": 64}
MATMUL_OPTIONS = {"num_warps": 8, "num_stages": 3}
UNTRACED = {"trace": False, "sanitize": False, "ir": False}


def vector_add_spec():
    return {"source": VECTOR_ADD, "kernel": "add_kernel",
            "inputs": {"x": f"torch.randn({N_ADD})", "y": f"torch.randn({N_ADD})", "out": f"torch.empty({N_ADD})"},
            "args": {"x_ptr": "x", "y_ptr": "y", "out_ptr": "out", "n": "x.numel()", "BLOCK_SIZE": 1024},
            "grid": "(triton.cdiv(n, meta['BLOCK_SIZE']),)",
            "reference": {"out": "x + y"},
            "options": {"device": "gpu", "num_warps": 4, "num_stages": 3, **UNTRACED}}


def vector_add_launch(module):
    x, y, out = (torch.randn(N_ADD, device="cuda") for _ in range(3))
    grid = (triton.cdiv(N_ADD, 1024),)
    return lambda: module.add_kernel[grid](x, y, out, N_ADD, BLOCK_SIZE=1024, num_warps=4, num_stages=3)


def matmul_spec():
    matrix = f"torch.randn({SIZE}, {SIZE}, dtype=torch.float16)"
    return {"source": MATMUL, "kernel": "matmul_kernel",
            "inputs": {"a": matrix, "b": matrix, "c": f"torch.empty({SIZE}, {SIZE}, dtype=torch.float16)"},
            "args": {"a_ptr": "a", "b_ptr": "b", "c_ptr": "c", "M": "a.shape[0]", "N": "b.shape[1]", "K": "a.shape[1]",
                     "stride_am": "a.stride(0)", "stride_ak": "a.stride(1)", "stride_bk": "b.stride(0)",
                     "stride_bn": "b.stride(1)", "stride_cm": "c.stride(0)", "stride_cn": "c.stride(1)", **MATMUL_META},
            "grid": "(triton.cdiv(M, meta['BLOCK_M']), triton.cdiv(N, meta['BLOCK_N']))",
            "reference": {"c": "a @ b"},
            "options": {"device": "gpu", **MATMUL_OPTIONS, **UNTRACED, "atol": 0.25, "rtol": 0.02,
                        "flops": "2 * M * N * K"}}


def matmul_launch(module):
    a, b = (torch.randn(SIZE, SIZE, device="cuda", dtype=torch.float16) for _ in range(2))
    c = torch.empty(SIZE, SIZE, device="cuda", dtype=torch.float16)
    grid = (triton.cdiv(SIZE, MATMUL_META["BLOCK_M"]), triton.cdiv(SIZE, MATMUL_META["BLOCK_N"]))
    return lambda: module.matmul_kernel[grid](a, b, c, SIZE, SIZE, SIZE, a.stride(0), a.stride(1), b.stride(0),
                                              b.stride(1), c.stride(0), c.stride(1), **MATMUL_META, **MATMUL_OPTIONS)


CASES = [("vector add 2^26 fp32", vector_add_spec, vector_add_launch),
         ("matmul 4096^3 fp16", matmul_spec, matmul_launch)]


def playground_run(spec):
    result = pipeline.run_spec(spec)
    if result["status"] == "error":
        raise SystemExit(f"the playground run failed: {result['error']}")
    return result


def import_source(source, scratch):
    """The kernel's module from a real file, as the playground does (@triton.jit reads its source)."""
    path = os.path.join(scratch, "standalone_kernel.py")
    with open(path, "w") as f:
        f.write(source)
    module_spec = importlib.util.spec_from_file_location("standalone_kernel", path)
    module = importlib.util.module_from_spec(module_spec)
    module_spec.loader.exec_module(module)
    return module


def measure(spec_of, launch_of, rounds, scratch):
    """Alternate the playground's run and do_bench; returns ([results], [do_bench medians])."""
    launch = launch_of(import_source(spec_of()["source"], scratch))
    results, standalone = [], []
    for _ in range(rounds):
        results.append(playground_run(spec_of()))
        standalone.append(triton.testing.do_bench(launch, return_mode="median"))
    return results, standalone


def throughput(timings):
    if timings["tflops"]:
        peak = f" of {timings['peak_tflops']:.0f} peak" if timings["peak_tflops"] else ""
        return f"{timings['tflops']:.0f} TFLOP/s{peak}"
    return f"{timings['gbps']:.0f} GB/s of {timings['peak_gbps']:.0f} peak"


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    if not torch.cuda.is_available():
        raise SystemExit("needs a CUDA GPU")
    print(f"{torch.cuda.get_device_name()} · triton {triton.__version__} · torch {torch.__version__}; "
          f"kernel medians in ms, median of {args.rounds} alternating rounds")
    print(f"{'':22}{'playground':>11}{'do_bench':>10}{'ratio':>8}{'in 5%':>7}{'torch ref':>11}  "
          f"{'check':9}{'compile':>9}  throughput (playground)")
    with tempfile.TemporaryDirectory() as scratch:
        for name, spec_of, launch_of in CASES:
            results, standalone = measure(spec_of, launch_of, args.rounds, scratch)
            playground = statistics.median(r["timings"]["kernel_ms"]["median"] for r in results)
            ratio = playground / statistics.median(standalone)
            timings = results[-1]["timings"]
            compile_ms = results[0]["timings"]["compile_ms"]  # the first round's first launch compiles
            print(f"{name:22}{playground:11.4f}{statistics.median(standalone):10.4f}{ratio:8.3f}"
                  f"{'yes' if abs(ratio - 1) <= 0.05 else 'NO':>7}{timings['reference_ms']['median']:11.4f}  "
                  f"{results[-1]['status']:9}{compile_ms:7.0f}ms  {throughput(timings)}")


if __name__ == "__main__":
    main()
