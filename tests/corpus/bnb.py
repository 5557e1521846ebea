"""bitsandbytes' Triton kernels (bitsandbytes/backends/triton: blockwise 8-bit and 4-bit quantization),
each launched as its wrapper there launches it: the flat tensor in blocks of Q = 64 values, each
with its absmax. N = 300 values, so that the last block is partial and every kernel's last program
has masked-off lanes. The modules import only torch and triton; bitsandbytes itself is not imported."""
from tests.corpus import Entry

Q4, Q8 = "bitsandbytes.backends.triton.kernels_4bit", "bitsandbytes.backends.triton.kernels_8bit_quant"
N, Q = 300, 64
BLOCKS = -(-N // Q)  # 5, the last one partial
PADDED = f"torch.nn.functional.pad(A, (0, {BLOCKS * Q - N})).view({BLOCKS}, {Q})"
ABSMAX = f"{PADDED}.abs().amax(1)"
NORMALIZED = f"({PADDED} / {ABSMAX}[:, None]).clamp(-1, 1).flatten()[:{N}]"
# The 4-bit data types' 16 levels, indexed by their code (the NormalFloat levels are sorted; the FP4
# code is a sign bit over 3 bits of magnitude).
NF4 = ("torch.tensor([-1.0, -0.6961928009986877, -0.5250730514526367, -0.39491748809814453, -0.28444138169288635, "
       "-0.18477343022823334, -0.09105003625154495, 0.0, 0.07958029955625534, 0.16093020141124725, "
       "0.24611230194568634, 0.33791524171829224, 0.44070982933044434, 0.5626170039176941, 0.7229568362236023, "
       "1.0])")
FP4_MAGNITUDES = [0.0, 0.005208333333, 0.66666667, 1.0, 0.33333333, 0.5, 0.16666667, 0.25]
FP4 = f"torch.tensor({FP4_MAGNITUDES + [-m for m in FP4_MAGNITUDES]})"
SCALES = f"torch.rand({BLOCKS}) + 0.5"


def nearest(values, levels):
    """The index of the level nearest each value."""
    return f"({values}[:, None] - {levels}).abs().argmin(1)"


def packed(codes):
    """4-bit codes two to a byte, the first in the high half."""
    return f"(lambda c: (c[0::2] << 4 | c[1::2]).to(torch.uint8))({codes})"


def unpacked(table):
    """Bytes of two 4-bit codes, each code's level times its block's absmax: the dequantized values."""
    return (f"torch.stack(({table}[a.long() >> 4], {table}[a.long() & 15]), 1).flatten()"
            f" * absmax.repeat_interleave({Q})[:{N}]")


def dequantize_4bit(kernel, table, takes_code=False):
    """A 4-bit dequantizer: one byte a pair of values; the levels are an input (made on the run's
    device, as the reference indexes them), passed to the kernel only where it takes a code."""
    return Entry(Q4, kernel, {"a": f"torch.randint(0, 256, ({N // 2},), dtype=torch.uint8)", "absmax": SCALES,
                              "out": f"torch.empty({N})", "levels": table},
                 {"a_ptr": "a", "c_ptr": "out", **({"quant_ptr": "levels"} if takes_code else {}),
                  "absmax_ptr": "absmax", "num_paired_elements": N // 2, "num_output_elements": N, "QUANT_BLOCK": Q,
                  "SPLIT_SIZE": 64}, f"(triton.cdiv({N // 2}, 64),)", {"out": unpacked("levels")}, "out",
                 {"atol": 1e-6})


def quantize_4bit(kernel, table, codes):
    """A 4-bit quantizer: two blocks a program (SPLIT_NUM_BLOCKS 1), the last program's second all padding."""
    return Entry(Q4, kernel, {"A": f"torch.randn({N})", "absmax": f"torch.empty({BLOCKS})",
                              "out": f"torch.empty({N // 2}, dtype=torch.uint8)", "levels": table},
                 {"A_ptr": "A", "absmax_ptr": "absmax", "out_ptr": "out", "n_elements": N, "absmax_elements": BLOCKS,
                  "BLOCK_SIZE": Q, "SPLIT_NUM_BLOCKS": 1}, f"(triton.cdiv({BLOCKS}, 2),)",
                 {"absmax": ABSMAX, "out": packed(codes)}, "out")


ENTRIES = {
    "bnb.dequant_8bit": Entry(
        Q8, "dequant_8bit_kernel",
        {"a": f"torch.randint(0, 256, ({N},), dtype=torch.uint8)", "out": f"torch.empty({N})",
         "code": "torch.linspace(-1, 1, 256)", "absmax": SCALES},
        {"a_ptr": "a", "out_ptr": "out", "code_ptr": "code", "absmax_ptr": "absmax", "n": N, "QUANT_BLOCK": Q,
         "SPLIT_SIZE": 128}, f"(triton.cdiv({N}, 128),)",
        {"out": f"code[a.long()] * absmax.repeat_interleave({Q})[:{N}]"}, "out", {"atol": 1e-6}),
    "bnb.quantize_8bit_blockwise": Entry(
        Q8, "quantize_8bit_blockwise_kernel",
        {"A": f"torch.randn({N})", "code": "torch.linspace(-1, 1, 256)", "absmax": f"torch.empty({BLOCKS})",
         "out": f"torch.empty({N}, dtype=torch.uint8)"},
        {"A_ptr": "A", "code_ptr": "code", "absmax_ptr": "absmax", "out_ptr": "out", "n_elements": N,
         "BLOCK_SIZE": Q, "CODE_SIZE": 256, "SPLIT_NUM_BLOCKS": 1}, f"({BLOCKS},)",
        {"absmax": ABSMAX, "out": f"{nearest(NORMALIZED, 'code')}.to(torch.uint8)"}, "out"),
    "bnb.quantize_nf4_blockwise": quantize_4bit("quantize_nf4_blockwise_kernel", NF4, nearest(NORMALIZED, "levels")),
    "bnb.quantize_fp4_blockwise": quantize_4bit(
        "quantize_fp4_blockwise_kernel", FP4,
        f"(lambda x: {nearest('x.abs()', 'levels[:8]')} | (x < 0) * 8)({NORMALIZED})"),
    "bnb.quantize_4bit_blockwise": Entry(
        Q4, "quantize_4bit_blockwise_kernel",
        {"A": f"torch.randn({N})", "code": NF4, "absmax": f"torch.empty({BLOCKS + 1})",
         "out": f"torch.empty({N // 2}, dtype=torch.uint8)"},
        {"A_ptr": "A", "code_ptr": "code", "absmax_ptr": "absmax", "out_ptr": "out", "n_elements": N,
         "BLOCK_SIZE": Q, "CODE_SIZE": 16, "SPLIT_NUM_BLOCKS": 1}, f"(triton.cdiv({BLOCKS}, 2),)",
        # its absmax store is unmasked: one value for each block of the grid, the padding's 0 among them
        {"absmax": f"torch.cat(({ABSMAX}, torch.zeros(1)))", "out": packed(nearest(NORMALIZED, "code"))}, "out"),
    "bnb.dequant_4bit": dequantize_4bit("dequant_4bit_kernel", NF4, takes_code=True),
    "bnb.dequant_nf4": dequantize_4bit("dequant_nf4_kernel", NF4),
    "bnb.dequant_fp4": dequantize_4bit("dequant_fp4_kernel", FP4),
}
