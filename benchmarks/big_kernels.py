"""Big real kernels as an engineer pastes them, written here: a persistent matmul (one program per SM
walking the output's tiles in groups) and a fused attention forward (online softmax over key blocks).
Run specs at a size of `n` (the sequence length for attention); the GPU's test sizes by default, and
small ones for the interpreter. Used by `benchmarks.edit_loop` and the tests of big kernels."""

PERSISTENT_MATMUL = '''import triton
import triton.language as tl


@triton.jit
def persistent_matmul(a_ptr, b_ptr, c_ptr, M, N, K, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
                      BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr, PROGRAMS: tl.constexpr):
    tiles_m = tl.cdiv(M, BLOCK_M)
    tiles_n = tl.cdiv(N, BLOCK_N)
    per_group = GROUP_M * tiles_n
    for tile in range(tl.program_id(0), tiles_m * tiles_n, PROGRAMS):
        # Tiles in groups of GROUP_M rows, so that programs running together share strips of A and B.
        first_m = (tile // per_group) * GROUP_M
        group_rows = min(tiles_m - first_m, GROUP_M)
        tile_m = first_m + (tile % per_group) % group_rows
        tile_n = (tile % per_group) // group_rows
        rows = tile_m * BLOCK_M + tl.arange(0, BLOCK_M)
        cols = tile_n * BLOCK_N + tl.arange(0, BLOCK_N)
        acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
        for k in range(0, K, BLOCK_K):
            ks = k + tl.arange(0, BLOCK_K)
            a = tl.load(a_ptr + rows[:, None] * K + ks[None, :], mask=(rows[:, None] < M) & (ks[None, :] < K), other=0.0)
            b = tl.load(b_ptr + ks[:, None] * N + cols[None, :], mask=(ks[:, None] < K) & (cols[None, :] < N), other=0.0)
            acc = tl.dot(a, b, acc)
        tl.store(c_ptr + rows[:, None] * N + cols[None, :], acc.to(tl.float16),
                 mask=(rows[:, None] < M) & (cols[None, :] < N))
'''

ATTENTION_FORWARD = '''import triton
import triton.language as tl


@triton.jit
def attention_forward(q_ptr, k_ptr, v_ptr, o_ptr, seq_len, scale, HEAD_DIM: tl.constexpr,
                      BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    head = tl.program_id(1)
    base = head * seq_len * HEAD_DIM
    rows = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    dims = tl.arange(0, HEAD_DIM)
    q = tl.load(q_ptr + base + rows[:, None] * HEAD_DIM + dims[None, :], mask=rows[:, None] < seq_len, other=0.0)
    best = tl.full((BLOCK_M,), float("-inf"), dtype=tl.float32)  # each row's largest score so far
    total = tl.zeros((BLOCK_M,), dtype=tl.float32)               # its sum of exp(score - best)
    acc = tl.zeros((BLOCK_M, HEAD_DIM), dtype=tl.float32)
    for start in range(0, seq_len, BLOCK_N):
        cols = start + tl.arange(0, BLOCK_N)
        kt = tl.load(k_ptr + base + cols[None, :] * HEAD_DIM + dims[:, None], mask=cols[None, :] < seq_len, other=0.0)
        scores = tl.where(cols[None, :] < seq_len, tl.dot(q, kt) * scale, float("-inf"))
        new_best = tl.maximum(best, tl.max(scores, axis=1))
        p = tl.exp(scores - new_best[:, None])
        rescale = tl.exp(best - new_best)
        total = total * rescale + tl.sum(p, axis=1)
        v = tl.load(v_ptr + base + cols[:, None] * HEAD_DIM + dims[None, :], mask=cols[:, None] < seq_len, other=0.0)
        acc = acc * rescale[:, None] + tl.dot(p.to(v.dtype), v)
        best = new_best
    out = acc / total[:, None]
    tl.store(o_ptr + base + rows[:, None] * HEAD_DIM + dims[None, :], out.to(o_ptr.dtype.element_ty),
             mask=rows[:, None] < seq_len)
'''

PAGE_OPTIONS = {"check": True, "trace": True, "bench": True, "ir": True}


def persistent_matmul_spec(n=2048, programs=132, block=128):
    """C = A @ B in fp16 over n x n x n, `programs` programs (an H100's SMs by default)."""
    return {"version": 1, "source": PERSISTENT_MATMUL, "kernel": "persistent_matmul",
            "inputs": {"a": f"torch.randn({n}, {n}, dtype=torch.float16)",
                       "b": f"torch.randn({n}, {n}, dtype=torch.float16)",
                       "c": f"torch.empty({n}, {n}, dtype=torch.float16)"},
            "args": {"a_ptr": "a", "b_ptr": "b", "c_ptr": "c", "M": n, "N": n, "K": n, "BLOCK_M": block,
                     "BLOCK_N": block, "BLOCK_K": 64 if block >= 64 else 16, "GROUP_M": 8, "PROGRAMS": programs},
            "grid": f"(min({programs}, triton.cdiv(M, BLOCK_M) * triton.cdiv(N, BLOCK_N)),)",
            "reference": {"c": "(a.float() @ b.float()).half()"},
            "options": {**PAGE_OPTIONS, "atol": 0.5, "rtol": 0.02, "num_warps": 8, "num_stages": 3}}


def attention_spec(n=1024, heads=16, head_dim=64, block_m=128, block_n=64):
    """softmax(Q K^T * scale) V in fp16 for `heads` heads (batch and heads as one) of n rows each."""
    shape = f"{heads}, {n}, {head_dim}"
    return {"version": 1, "source": ATTENTION_FORWARD, "kernel": "attention_forward",
            "inputs": {"q": f"torch.randn({shape}, dtype=torch.float16)",
                       "k": f"torch.randn({shape}, dtype=torch.float16)",
                       "v": f"torch.randn({shape}, dtype=torch.float16)",
                       "o": f"torch.empty({shape}, dtype=torch.float16)"},
            "args": {"q_ptr": "q", "k_ptr": "k", "v_ptr": "v", "o_ptr": "o", "seq_len": n, "scale": head_dim ** -0.5,
                     "HEAD_DIM": head_dim, "BLOCK_M": block_m, "BLOCK_N": block_n},
            "grid": f"(triton.cdiv(seq_len, BLOCK_M), {heads})",
            "reference": {"o": f"(torch.softmax((q.float() @ k.float().transpose(1, 2)) * {head_dim ** -0.5}, -1)"
                               f" @ v.float()).half()"},
            "options": {**PAGE_OPTIONS, "atol": 0.02, "rtol": 0.02, "num_warps": 4, "num_stages": 2}}
