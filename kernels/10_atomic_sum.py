"""
Atomic reduction: many programs, one total
==========================================

Sum all 5,000 elements of a vector into a single number. Each of the 10 programs sums its block
of 512 with `tl.sum`, and then all of them need to add their partial sum into the same output
element. Plain loads and stores would race: two programs could read the same old total and one
of the additions would be lost. `tl.atomic_add` does the read, the add and the write as one
indivisible step, so every partial sum lands.

The output is a one-element tensor made with `torch.zeros`, since the programs add into it.
In the diagram every program has an atomic access on the same element of `out`.

Atomics have a price you can see: on a GPU the programs finish in no fixed order, so the partial
sums are added in a different order from run to run. Floating-point addition is not associative,
and the last bits of the total change between runs. That is why this run's tolerance is a little
looser than exact fp32, and why libraries offer deterministic reductions (a second pass over
the partial sums) for training code that must be reproducible.

Try: BLOCK_SIZE 64 (more programs, more atomics), or a vector of a million elements on a GPU.
"""
# %% The kernel
import triton
import triton.language as tl


@triton.jit
def sum_kernel(x_ptr,  # pointer to the input vector
               out_ptr,  # pointer to the total, one element; must start at zero
               n,  # number of elements in x
               BLOCK_SIZE: tl.constexpr,  # elements summed by each program
               ):
    offsets = tl.program_id(axis=0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    x = tl.load(x_ptr + offsets, mask=offsets < n, other=0.0)
    tl.atomic_add(out_ptr, tl.sum(x, axis=0))  # one indivisible add per program


# %% The run spec
RUN = {
    "kernel": "sum_kernel",
    "inputs": {
        "x": "torch.randn(5000)",
        "out": "torch.zeros(1)",
    },
    "args": {"x_ptr": "x", "out_ptr": "out", "n": "x.numel()", "BLOCK_SIZE": 512},
    "grid": "(triton.cdiv(n, meta['BLOCK_SIZE']),)",
    "reference": {"out": "x.sum().reshape(1)"},
    "options": {"atol": 1e-4, "rtol": 1e-5},
}
