"""The vector add most tests run: its source, its run spec, and a run that only its timeout (or Stop) ends."""

VECTOR_ADD = '''import triton
import triton.language as tl


@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK_SIZE: tl.constexpr):
    pid = tl.program_id(axis=0)
    offs = pid * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    y = tl.load(y_ptr + offs, mask=mask)
    tl.store(out_ptr + offs, x + y, mask=mask)
'''


def vector_add_spec(n=98432, block=1024, source=VECTOR_ADD, **options):
    return {
        "version": 1, "source": source, "kernel": "add_kernel",
        "inputs": {"x": f"torch.randn({n})", "y": f"torch.randn({n})", "out": f"torch.empty({n})"},
        "args": {"x_ptr": "x", "y_ptr": "y", "out_ptr": "out", "n": "x.numel()", "BLOCK_SIZE": block},
        "grid": "(triton.cdiv(n, meta['BLOCK_SIZE']),)",
        "reference": {"out": "x + y"},
        "options": {"ir": False, **options},
    }


ENDLESS = VECTOR_ADD + "\nwhile True:\n    pass\n"  # a run that only its timeout (or Stop) ends
