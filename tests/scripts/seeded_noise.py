"""Noise injection with Triton's counter-based random numbers: Gaussian jitter (tl.randn), then
salt-and-pepper corruption (tl.rand) whose block a @triton.heuristics sizes from the length. Each
lane draws from (seed, its index) alone, so one seed gives one noise, whatever the launch."""
import torch
import triton
import triton.language as tl

DEVICE = triton.runtime.driver.active.get_active_torch_device()
UNTOUCHED, PEPPER, SALT = 0, 1, 2


@triton.jit
def jitter_kernel(x_ptr, out_ptr, n, sigma, seed, BLOCK: tl.constexpr):
    idx = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    live = idx < n
    tl.store(out_ptr + idx, tl.load(x_ptr + idx, mask=live) + sigma * tl.randn(seed, idx), mask=live)


def jitter(x, sigma, seed, block=256):
    out = torch.empty_like(x)
    jitter_kernel[(triton.cdiv(x.numel(), block),)](x, out, x.numel(), sigma, seed, BLOCK=block)
    return out


@triton.heuristics({"BLOCK": lambda args: min(2048, triton.next_power_of_2(args["n"]))})
@triton.jit
def salt_and_pepper_kernel(x_ptr, out_ptr, kind_ptr, n, rate, low, high, seed, BLOCK: tl.constexpr):
    """Each element becomes `low` (pepper) with probability rate/2, `high` (salt) with rate/2; `kind`
    says which."""
    idx = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    live = idx < n
    u = tl.rand(seed, idx)
    kind = tl.where(u < 0.5 * rate, 1, tl.where(u < rate, 2, 0))
    x = tl.load(x_ptr + idx, mask=live)
    tl.store(out_ptr + idx, tl.where(kind == 1, low, tl.where(kind == 2, high, x)), mask=live)
    tl.store(kind_ptr + idx, kind.to(tl.int8), mask=live)


def salt_and_pepper(x, rate, seed, low=0.0, high=1.0):
    out = torch.empty_like(x)
    kind = torch.empty(x.shape, device=x.device, dtype=torch.int8)
    n = x.numel()
    salt_and_pepper_kernel[lambda meta: (triton.cdiv(n, meta["BLOCK"]),)](x, out, kind, n, rate, low, high, seed)
    return out, kind


torch.manual_seed(0)
pixels = torch.rand(6000, device=DEVICE)

z = (jitter(pixels, sigma=0.1, seed=7) - pixels) / 0.1
print(f"jitter / sigma: mean {z.mean().item():.3f}, std {z.std().item():.3f}")
assert abs(z.mean().item()) < 0.05 and abs(z.std().item() - 1.0) < 0.05

noisy, kind = salt_and_pepper(pixels, rate=0.2, seed=42)
again, kind_again = salt_and_pepper(pixels, rate=0.2, seed=42)
other, _ = salt_and_pepper(pixels, rate=0.2, seed=43)
assert torch.equal(noisy, again) and torch.equal(kind, kind_again), "one seed, one noise"
assert not torch.equal(noisy, other), "another seed, another noise"
assert torch.equal(noisy, torch.where(kind == PEPPER, 0.0, torch.where(kind == SALT, 1.0, pixels)))
hit = (kind != UNTOUCHED).float().mean().item()
print(f"corrupted {hit:.3f} of the pixels at rate 0.2")
assert abs(hit - 0.2) < 0.03


@triton.testing.perf_report(
    triton.testing.Benchmark(
        x_names=["n"],
        x_vals=[2**i for i in range(12, 24)],
        x_log=True,
        line_arg="impl",
        line_vals=["triton", "torch"],
        line_names=["Triton, seeded", "torch.rand, then where"],
        ylabel="GB/s",
        plot_name="salt-and-pepper",
        args={},
    ))
def bandwidth(n, impl):
    x = torch.rand(n, device=DEVICE)

    def with_torch():
        u = torch.rand_like(x)
        return torch.where(u < 0.1, 0.0, torch.where(u < 0.2, 1.0, x))

    ms = triton.testing.do_bench((lambda: salt_and_pepper(x, 0.2, seed=1)) if impl == "triton" else with_torch)
    return n * (4 + 4 + 1) / ms * 1e-6  # x read, out and kind written


bandwidth.run(print_data=True)
