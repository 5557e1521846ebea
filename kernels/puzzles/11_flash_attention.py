"""
Flash attention (one head)
==========================

Compute attention for one head: `out = softmax(q @ k.T * scale) @ v`, with L queries, L keys and
values of D numbers each, without ever writing the L × L score matrix to memory.

Program i owns BM queries. It walks over the keys in blocks of BN, keeping for each of its
queries the running maximum score `m`, the running sum of exponentials `l` and the running
weighted sum of values `acc`. When a new block raises the maximum, what was summed so far is
rescaled by `exp(m_old - m_new)`. At the end, `acc / l` is the answer. Keys past L must get a
score of minus infinity, so that they weigh nothing.

`SPREAD` scales the queries. In the last test scores reach the hundreds, past float32's
`exp(88.7)`: only exponentials taken after subtracting the running maximum stay finite.
"""
# %% Starter
import triton
import triton.language as tl


@triton.jit
def attention(q_ptr, k_ptr, v_ptr, out_ptr, L, scale, D: tl.constexpr, BM: tl.constexpr, BN: tl.constexpr):
    rows = tl.program_id(0) * BM + tl.arange(0, BM)
    dims = tl.arange(0, D)
    q = tl.load(q_ptr + rows[:, None] * D + dims[None, :], mask=rows[:, None] < L, other=0.0)
    m = tl.full((BM,), -float("inf"), tl.float32)
    l = tl.zeros((BM,), dtype=tl.float32)
    acc = tl.zeros((BM, D), dtype=tl.float32)
    for start in range(0, L, BN):
        keys = start + tl.arange(0, BN)
        k = tl.load(k_ptr + keys[:, None] * D + dims[None, :], mask=keys[:, None] < L, other=0.0)
        v = tl.load(v_ptr + keys[:, None] * D + dims[None, :], mask=keys[:, None] < L, other=0.0)
        s = tl.dot(q, tl.trans(k), input_precision="ieee") * scale
        s = tl.where(keys[None, :] < L, s, -float("inf"))
        # Your code: update m, l and acc with this block of scores (the online softmax).
    tl.store(out_ptr + rows[:, None] * D + dims[None, :], acc / l[:, None], mask=rows[:, None] < L)
# %% Solution
import triton
import triton.language as tl


@triton.jit
def attention(q_ptr, k_ptr, v_ptr, out_ptr, L, scale, D: tl.constexpr, BM: tl.constexpr, BN: tl.constexpr):
    rows = tl.program_id(0) * BM + tl.arange(0, BM)
    dims = tl.arange(0, D)
    q = tl.load(q_ptr + rows[:, None] * D + dims[None, :], mask=rows[:, None] < L, other=0.0)
    m = tl.full((BM,), -float("inf"), tl.float32)
    l = tl.zeros((BM,), dtype=tl.float32)
    acc = tl.zeros((BM, D), dtype=tl.float32)
    for start in range(0, L, BN):
        keys = start + tl.arange(0, BN)
        k = tl.load(k_ptr + keys[:, None] * D + dims[None, :], mask=keys[:, None] < L, other=0.0)
        v = tl.load(v_ptr + keys[:, None] * D + dims[None, :], mask=keys[:, None] < L, other=0.0)
        s = tl.dot(q, tl.trans(k), input_precision="ieee") * scale
        s = tl.where(keys[None, :] < L, s, -float("inf"))
        m_new = tl.maximum(m, tl.max(s, axis=1))
        p = tl.exp(s - m_new[:, None])
        correction = tl.exp(m - m_new)
        l = l * correction + tl.sum(p, axis=1)
        acc = acc * correction[:, None] + tl.dot(p, v, input_precision="ieee")
        m = m_new
    tl.store(out_ptr + rows[:, None] * D + dims[None, :], acc / l[:, None], mask=rows[:, None] < L)


# %% The puzzle
PUZZLE = {
    "kernel": "attention",
    "inputs": {"q": "torch.randn(L, D) * SPREAD", "k": "torch.randn(L, D)", "v": "torch.randn(L, D)",
               "out": "torch.empty(L, D)"},
    "args": {"q_ptr": "q", "k_ptr": "k", "v_ptr": "v", "out_ptr": "out", "L": "L", "scale": "D ** -0.5",
             "D": "D", "BM": 16, "BN": 16},
    "grid": "(triton.cdiv(L, meta['BM']),)",
    "reference": {"out": "torch.softmax(q @ k.T * D ** -0.5, dim=1) @ v"},
    "options": {"atol": 1e-4, "rtol": 1e-4},
    "hints": [
        "The new maximum per query: `m_new = tl.maximum(m, tl.max(s, axis=1))`.",
        "This block's weights are `p = tl.exp(s - m_new[:, None])`; what came before shrinks by `alpha = tl.exp(m - m_new)`.",
        "Then `l = l * alpha + tl.sum(p, axis=1)`, `acc = acc * alpha[:, None] + tl.dot(p, v)`, and `m = m_new`.",
    ],
    "tests": [{"L": 20, "D": 16, "SPREAD": 1}, {"L": 32, "D": 16, "SPREAD": 1}, {"L": 45, "D": 16, "SPREAD": 60}],
    "hidden": [{"L": 77, "D": 16, "SPREAD": 60}],
}
