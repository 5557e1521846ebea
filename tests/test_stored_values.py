"""The instrumented build leaves out a matrix product whose value is only stored
(sandbox.trace.stored_values): the analysis, which refuses wherever the value could reach an address,
a mask, a branch, an atomic, a print, a helper or a tensor read back; the build, which still compiles
for a GPU and traces what the interpreter sees."""
import textwrap

import pytest

from benchmarks import big_kernels
from sandbox.trace import gpu as gpu_trace, provenance, stored_values
from tests.support.trace_corpus import CORPUS
from tests.test_gpu_trace import instrumented_ir, instrumented_trace, interpreter_trace, launch, same

MATMUL = """
import triton
import triton.language as tl

@triton.jit
def k(a_ptr, b_ptr, c_ptr, K, B: tl.constexpr):
    offs = tl.arange(0, B)
    acc = tl.zeros((B, B), tl.float32)
    for k0 in range(0, K, B):
        a = tl.load(a_ptr + offs[:, None] * K + k0 + offs[None, :])
        b = tl.load(b_ptr + (k0 + offs[:, None]) * B + offs[None, :])
        acc += tl.dot(a, b)
    c = acc.to(tl.float16)
    tl.store(c_ptr + offs[:, None] * B + offs[None, :], c, mask=offs[:, None] < B)

@triton.jit
def helper(x):
    return x
"""
STORE = "tl.store(c_ptr + offs[:, None] * B + offs[None, :], c, mask=offs[:, None] < B)"
CONVERT = "    c = acc.to(tl.float16)\n"


def left_out(source, name="k"):
    kernel = provenance.analyze(textwrap.dedent(source), name)
    owners = {site.index: next(iter(sorted(site.roots & {p for p in kernel.params if p.endswith("_ptr")})), None)
              for site in kernel.sites}
    return stored_values.products_left_out(kernel, owners)


def test_a_product_that_is_only_stored_is_left_out():
    assert len(left_out(MATMUL)) == 1
    assert left_out(MATMUL.replace(CONVERT, "    c = tl.where(acc > 0, acc, 0.0).to(tl.float16)\n"))  # a value still


@pytest.mark.parametrize("where, source", [
    ("a mask", MATMUL.replace("mask=offs[:, None] < B", "mask=c > 0")),
    ("a branch", MATMUL.replace(CONVERT, CONVERT + "    if tl.sum(acc) > 0:\n        c = c * 2\n")),
    ("a loop's range", MATMUL.replace(CONVERT, CONVERT + "    for i in range(tl.sum(acc).to(tl.int32)):\n        c = c * 2\n")),
    ("an address", MATMUL.replace("tl.store(c_ptr + offs[:, None]", "tl.store(c_ptr + acc.to(tl.int32)")),
    ("an atomic", MATMUL.replace(STORE, "tl.atomic_add(c_ptr + offs[:, None] * B + offs[None, :], c)")),
    ("a tensor read back", MATMUL.replace(CONVERT, "    c = acc.to(tl.float16)\n    tl.store(c_ptr, c)\n"
                                          "    c = tl.load(c_ptr + offs)\n")),
    ("a print", MATMUL.replace(CONVERT, CONVERT + "    tl.device_print('c', c)\n")),
    ("a helper of the source", MATMUL.replace(CONVERT, "    c = helper(acc)\n")),
    ("a subscripted target", MATMUL.replace(CONVERT, "    c = acc\n    c[0] = acc\n")),
])
def test_a_product_that_may_reach_more_than_a_stored_value_is_computed(where, source):
    assert not left_out(source), where


def test_the_big_kernels_products_are_left_out():
    assert len(left_out(big_kernels.ATTENTION_FORWARD, "attention_forward")) == 2
    assert len(left_out(big_kernels.PERSISTENT_MATMUL, "persistent_matmul")) == 1


def test_the_instrumented_build_without_its_product_traces_what_the_interpreter_sees(tmp_path):
    raw = CORPUS["loop_over_k_with_dot"]
    spec, path, kernel, namespace, inputs, _, grid = launch(raw, tmp_path / "source")
    tracer, _ = gpu_trace.prepare(spec, path, kernel, inputs, namespace)
    assert "_tp_probes.product_left_out(" in tracer.instrumented_source()
    assert same(instrumented_trace(raw, tmp_path / "b")) == same(interpreter_trace(raw, tmp_path / "a"))


INT8 = """
import triton
import triton.language as tl

@triton.jit
def k(a_ptr, b_ptr, c_ptr, d_ptr, B: tl.constexpr):
    offs = tl.arange(0, B)
    tile = offs[:, None] * B + offs[None, :]
    a = tl.load(a_ptr + tile)
    b = tl.load(b_ptr + tile)
    tl.store(c_ptr + tile, tl.dot(a, b))
    tl.store(d_ptr + tile, tl.dot(a.to(tl.float16), b.to(tl.float16), out_dtype=tl.float16))
"""


def test_a_left_out_product_keeps_its_type_and_the_build_compiles_for_a_gpu(tmp_path):
    raw = {"version": 1, "source": INT8, "kernel": "k", "grid": "(1,)",
           "inputs": {"a": "torch.randint(-4, 4, (32, 32), dtype=torch.int8)",
                      "b": "torch.randint(-4, 4, (32, 32), dtype=torch.int8)",
                      "c": "torch.empty(32, 32, dtype=torch.int32)", "d": "torch.empty(32, 32, dtype=torch.float16)"},
           "args": {"a_ptr": "a", "b_ptr": "b", "c_ptr": "c", "d_ptr": "d", "B": 32}}
    spec, path, kernel, namespace, inputs, _, grid = launch(raw, tmp_path)
    tracer, args = gpu_trace.prepare(spec, path, kernel, inputs, namespace)
    assert tracer.instrumented_source().count("_tp_probes.product_left_out(") == 2
    ir, _ = instrumented_ir(spec, kernel, tracer, args, grid, tmp_path)
    assert ".target sm_90" in ir["ptx"] and "mma" not in ir["ptx"]  # no product left in the build
