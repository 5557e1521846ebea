"""A GPU run process's warm-up, before its job: CUDA init and the first use of the torch kernels every
run needs, off the run's critical path."""
import torch

from sandbox.run import check


def warm_cuda():
    """CUDA init, and the first use of the torch kernels every run needs (random inputs, the poison
    fill, arithmetic, copies back to the host, the output check): CUDA loads each kernel's module
    lazily, ~5 ms apiece. And cuBLAS, whose first call (a matmul's reference) sets it up."""
    x = torch.randn(1024, device="cuda")
    torch.rand(1024, device="cuda").fill_(float("nan"))
    (x + x * x - x).clone().cpu()
    warm_gpu_tracer()
    for dtype in (torch.float32, torch.float16):
        check.compare_one("warm", x.to(dtype), x.to(dtype), True, None, None)
        square = x.to(dtype).view(32, 32)
        square @ square
    torch.cuda.synchronize()


def warm_gpu_tracer():
    """The torch kernels of the GPU tracer's buffers and its coverage arithmetic, as sandbox.trace.gpu
    uses them (index_put, fill, comparisons, where, maximum, any, sum on int32): ~60 ms of first uses
    on an H100, which a rerun's trace pass spent before the verdict."""
    on = {"device": "cuda"}
    slots = torch.full((64,), -1, dtype=torch.int32, **on)
    slots[torch.tensor([1, 2], **on)] = torch.arange(2, dtype=torch.int32, **on)
    torch.empty(64, dtype=torch.int64, **on).zero_()
    cov = torch.zeros(4 * 16, dtype=torch.int32, **on)
    cov[:16].fill_(torch.iinfo(torch.int32).max)
    cov[16:32].fill_(-1)
    lowest, highest, loads, atomics = cov.view(4, -1)
    stored, loaded, updated = highest >= 0, loads > 0, atomics > 0
    bool((loaded | updated).any())
    int(((loaded | updated).sum() + (stored | updated).sum()).item())
    writers = torch.where(highest < 0, 0, torch.where(lowest == highest, 1, 2))
    torch.maximum(writers, updated.to(writers.dtype)).to(torch.uint8).cpu().numpy()
    slots.cpu().numpy()
