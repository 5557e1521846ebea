"""Dropout in the style of Triton's fourth tutorial: a dropout with a mask tensor, then the
low-memory seeded one whose mask is tl.rand(seed, offsets), so the same seed drops the same lanes."""
import torch
import triton
import triton.language as tl

DEVICE = triton.runtime.driver.active.get_active_torch_device()


@triton.jit
def _dropout(x_ptr, x_keep_ptr, output_ptr, n_elements, p, BLOCK_SIZE: tl.constexpr):
    pid = tl.program_id(axis=0)
    block_start = pid * BLOCK_SIZE
    offsets = block_start + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    x = tl.load(x_ptr + offsets, mask=mask)
    x_keep = tl.load(x_keep_ptr + offsets, mask=mask)
    output = tl.where(x_keep, x / (1 - p), 0.0)
    tl.store(output_ptr + offsets, output, mask=mask)


def dropout(x, x_keep, p):
    output = torch.empty_like(x)
    assert x.is_contiguous()
    n_elements = x.numel()
    grid = lambda meta: (triton.cdiv(n_elements, meta['BLOCK_SIZE']), )
    _dropout[grid](x, x_keep, output, n_elements, p, BLOCK_SIZE=1024)
    return output


@triton.heuristics({"BLOCK_SIZE": lambda args: min(1024, triton.next_power_of_2(args["n_elements"]))})
@triton.jit
def _seeded_dropout(x_ptr, output_ptr, n_elements, p, seed, BLOCK_SIZE: tl.constexpr):
    pid = tl.program_id(axis=0)
    block_start = pid * BLOCK_SIZE
    offsets = block_start + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    x = tl.load(x_ptr + offsets, mask=mask)
    random = tl.rand(seed, offsets)
    x_keep = random > p
    output = tl.where(x_keep, x / (1 - p), 0.0)
    tl.store(output_ptr + offsets, output, mask=mask)


def seeded_dropout(x, p, seed):
    output = torch.empty_like(x)
    assert x.is_contiguous()
    n_elements = x.numel()
    grid = lambda meta: (triton.cdiv(n_elements, meta['BLOCK_SIZE']), )
    _seeded_dropout[grid](x, output, n_elements, p, seed)
    return output


torch.manual_seed(0)
x = torch.randn(size=(10, ), device=DEVICE)
p = 0.5
x_keep = (torch.rand(size=(10, ), device=DEVICE) > p).to(torch.int32)
output = dropout(x, x_keep=x_keep, p=p)
assert torch.allclose(output, torch.where(x_keep.bool(), x / (1 - p), 0.0))

x = torch.randn(size=(5000, ), device=DEVICE)
output = seeded_dropout(x, p=0.5, seed=123)
output2 = seeded_dropout(x, p=0.5, seed=123)
output3 = seeded_dropout(x, p=0.5, seed=512)
assert torch.equal(output, output2), "the same seed must drop the same elements"
assert not torch.equal(output, output3)
kept = output != 0
assert torch.allclose(output[kept], x[kept] * 2)
print(f"kept {kept.float().mean().item():.3f} of the elements")


@triton.testing.perf_report(
    triton.testing.Benchmark(
        x_names=['size'],
        x_vals=[2**i for i in range(12, 24)],
        x_log=True,
        line_arg='provider',
        line_vals=['seeded', 'torch'],
        line_names=['Seeded (Triton)', 'Torch'],
        ylabel='GB/s',
        plot_name='dropout-performance',
        args={},
    ))
def benchmark(size, provider):
    x = torch.randn(size, device=DEVICE)
    if provider == 'seeded':
        ms = triton.testing.do_bench(lambda: seeded_dropout(x, p=0.5, seed=123))
    if provider == 'torch':
        ms = triton.testing.do_bench(lambda: torch.nn.functional.dropout(x, p=0.5))
    return 2 * x.numel() * x.element_size() * 1e-9 / (ms * 1e-3)


benchmark.run(print_data=True)
