"""cut-cross-entropy's kernels (Apple's linear cross-entropy), each launched as its wrapper launches
it, with the library's fixed configuration (heuristics over heuristics: its autotuning is off
unless CCE_AUTOTUNE is set): the log-sum-exp of a row's logits against the classifier, blocked over
rows and classes with a lock per block of rows, and the negated dot product of each row with its
target's column (an atomic add). B = 20 rows of D = 40 (not a multiple of the blocks), V = 50 classes."""
from tests.corpus import Entry

B, D, V = 20, 40, 50
E, C = f"torch.randn({B}, {D})", f"torch.randn({V}, {D})"

ENTRIES = {
    "cce.lse_forward": Entry(
        "cut_cross_entropy.cce_lse_forward", "_cce_lse_forward_kernel",
        {"E": E, "C": C, "LSE": f"torch.full(({B},), -float('inf'))", "Locks": "torch.zeros(1, dtype=torch.uint32)"},
        {"E": "E", "C": "C", "LSE": "LSE", "LA": None, "Locks": "Locks", "Valids": None, "softcap": None, "B": B,
         "V": V, "D": D, "stride_eb": "E.stride(0)", "stride_ed": "E.stride(1)", "stride_cv": "C.stride(0)",
         "stride_cd": "C.stride(1)", "stride_lse_b": "LSE.stride(0)", "stride_vb": 1, "num_locks": 1, "B_BIN": 128},
        f"lambda META: (triton.cdiv({B}, META['BLOCK_B']) * triton.cdiv({V}, META['BLOCK_V']),)",
        {"LSE": "torch.logsumexp(E @ C.T, -1)"}, "LSE", {"atol": 1e-4}, store_root="lse_ptrs"),
    "cce.indexed_neg_dot_forward": Entry(
        "cut_cross_entropy.indexed_dot", "_indexed_neg_dot_forward_kernel",
        {"E": E, "C": C, "Inds": f"torch.randint(0, {V}, ({B},))", "Out": f"torch.zeros({B})"},
        {"E": "E", "C": "C", "Inds": "Inds", "Valids": None, "Out": "Out", "B": B, "D": D,
         "stride_eb": "E.stride(0)", "stride_ed": "E.stride(1)", "stride_cv": "C.stride(0)",
         "stride_cd": "C.stride(1)", "stride_ib": "Inds.stride(0)", "stride_vb": 1, "B_BIN": 128, "SHIFT": False},
        f"lambda META: (triton.cdiv({B}, META['BLOCK_B']) * triton.cdiv({D}, META['BLOCK_D']),)",
        {"Out": "-(E * C[Inds]).sum(1)"}, "Out", {"atol": 1e-4}, store_root="out_ptrs"),
}
