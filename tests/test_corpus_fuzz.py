"""Mutations of kernels we did not write (tests/corpus), as a person's mistakes make them: each run
ends `ok` (or with a check's mismatch) or with an error a person can act on (a phase, a message in
words, and the line or the form's field it concerns); never an exception of the playground itself.
In the interpreter, and with `pytest -m gpu` on a GPU, where the GPU tracer bounds-checks them."""
import re

import pytest

from sandbox.run.pipeline import run_spec
from tests.corpus import without_store_mask
from tests.test_corpus import DEVICES, ENTRIES

pytestmark = pytest.mark.integration  # runs the mutated corpus

# A few kernels of each library, of each shape: a row kernel moving its pointers, a 2-D grid, a flat
# autotuned activation with a grid of meta, a row reduction, a lookup through loaded codes, and
# heuristics over heuristics with optional tensors left None, a spin lock and tl.dot.
KERNELS = ["liger.rms_norm_forward", "liger.swiglu_forward_tiled", "liger.softmax_multi_block_backward",
           "fla.elu_p1_fwd", "fla.softmax_fwd", "fla.l2norm_fwd_row", "bnb.dequant_nf4", "cce.lse_forward"]
BLOCKS = ("BLOCK_SIZE", "B", "BD", "SPLIT_SIZE")


def first_input(spec):
    return next(iter(spec["inputs"]))


def off_by_one_grid(spec, entry):
    bump = "(lambda g: (g[0] + 1,) + tuple(g[1:]))"
    spec["grid"] = (f"lambda meta: {bump}(({spec['grid']})(meta))" if spec["grid"].startswith("lambda")
                    else f"{bump}({spec['grid']})")


def stride_argument(spec):
    """A stride; else fla's row kernels' row length D (their row stride); else a flat kernel's first size."""
    args = spec["args"]
    return next((n for n in args if "stride" in n), None) or ("D" if "D" in args else
                                                            next(n for n, v in args.items() if type(v) is int))


def wrong_stride(spec, entry):
    name = stride_argument(spec)
    spec["args"][name] = f"{spec['args'][name]} + 7"


def overflowing_stride(spec, entry):
    name = stride_argument(spec)
    spec["args"][name] = 2 ** 31 + 1  # row * stride past int32 in the offsets


def wrong_dtype(dtype):
    def mutate(spec, entry):
        name = first_input(spec)
        spec["inputs"][name] = f"({spec['inputs'][name]}).to({dtype})"
    return mutate


def nan_input(spec, entry):
    name = first_input(spec)
    spec["inputs"][name] = f"torch.full_like({spec['inputs'][name]}, float('nan'))"


def empty_input(spec, entry):
    name = first_input(spec)
    spec["inputs"][name] = f"({spec['inputs'][name]})[:0]"


def block_not_power_of_2(spec, entry):
    name = next((n for n in BLOCKS if n in spec["args"]), None)
    if name is None:  # an autotuned block: the launch names it anyway
        name = "B"
    spec["args"][name] = 48


def missing_argument(spec, entry):
    spec["args"].pop(next(iter(spec["args"])))


def extra_argument(spec, entry):
    spec["args"]["unused_flag"] = 1


def dropped_mask(spec, entry):
    spec["source"], _ = without_store_mask(spec["source"], entry.kernel, entry.store_pointer())


MUTATIONS = {"off_by_one_grid": off_by_one_grid, "wrong_stride": wrong_stride,
             "overflowing_stride": overflowing_stride, "fp16_input": wrong_dtype("torch.float16"),
             "int32_input": wrong_dtype("torch.int32"), "nan_input": nan_input, "empty_input": empty_input,
             "block_not_power_of_2": block_not_power_of_2, "missing_argument": missing_argument,
             "extra_argument": extra_argument, "dropped_mask": dropped_mask}


def is_clear(error):
    """An error a person can act on: not the playground's own failure, a phase, a message in words
    (not a bare exception's repr or a number), and where: a line of the kernel or a field of the form."""
    message = error.get("message") or ""
    return (error.get("type") != "PlaygroundBug" and bool(error.get("phase"))
            and len(re.findall(r"[A-Za-z]{2,}", message)) >= 3
            and (error.get("line") is not None or error.get("field") is not None))


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("mutation", MUTATIONS)
@pytest.mark.parametrize("name", KERNELS)
def test_a_mutated_library_kernel_runs_or_fails_clearly(name, mutation, device):
    entry = ENTRIES[name]
    spec = entry.spec(trace=True, check=True, device=device)
    MUTATIONS[mutation](spec, entry)
    result = run_spec(spec)
    error = result["error"]
    assert error is None or is_clear(error), error
