"""The device side of the GPU tracer (sandbox.trace.gpu): what an instrumented kernel runs at each
memory access site instead of the bare tl.load / tl.store / tl.atomic_* (tl.atomic_cas too).

`probe` judges every lane by the tensor its pointer derives from (`base`, `span` elements of
`1 << SHIFT` bytes), counts the active in-bounds lanes into that tensor's coverage counters, keeps
the first out-of-bounds site of each program, and, for a program that has a record slot, appends
the access to the slot's stream. It returns the mask the real access then uses: the original mask
without the out-of-bounds lanes, so the instrumented launch never touches memory outside its
tensor.

Coverage counters of a tensor (int32, `span` each, one after the other): the lowest and highest
linear program id that stored an element, whether it was loaded, whether an atomic updated it.

A record: [site, lanes, lane...] with lane = element offset * 4 + 2 * out_of_bounds + active, the
block's lanes in row-major order; the host makes runs of them. A site of -1 ends a slot that ran
out of room. (A record of a tile's rows alone would be 64 times smaller, but testing a tile for it
on the device made the build's compile twice as slow: every record is whole.)
"""
import triton
import triton.language as tl

LOWEST, HIGHEST, LOADED, UPDATED = range(4)
COUNTERS = 4
OP_LOAD, OP_STORE, OP_ATOMIC = 0, 1, 2


@triton.jit
def probe(ptr, mask, base, span, cov, rec, cursor, cap, slot, viol, pid,
          SITE: tl.constexpr, SHIFT: tl.constexpr, OP: tl.constexpr, TRACE: tl.constexpr):
    addr = ptr.to(tl.int64)
    if mask is None:
        active = addr == addr
    else:
        active = (addr == addr) & mask
    addr = tl.where(active, addr, addr)  # the access's shape: the pointer's and the mask's, broadcast
    byte = addr - base
    elem = byte >> SHIFT
    inside = (byte >= 0) & (elem < span)
    safe = active & inside
    oob = active & (inside == 0)
    if TRACE:
        if OP == 1:  # which programs stored: two writers differ in the lowest and the highest id
            tl.atomic_min(cov + elem, pid, mask=safe, sem="relaxed")
            tl.atomic_max(cov + span + elem, pid, mask=safe, sem="relaxed")
        elif OP == 0:  # loaded: a flag, set by plain stores (many programs read one element: no contention)
            tl.store(cov + 2 * span + elem, 1, mask=safe)
        else:  # updated by an atomic
            tl.store(cov + 3 * span + elem, 1, mask=safe)
    lanes = elem * 4 + oob.to(tl.int64) * 2 + active.to(tl.int64) + tl.zeros([1], tl.int64)
    if tl.max((lanes >> 1) & 1) > 0:  # a whole-block reduction Triton may reorder: no layout conversion
        tl.atomic_cas(viol + pid, -1, SITE)
    if TRACE:
        if slot >= 0:
            append(rec, cursor, cap, slot, SITE, lanes)
    return safe


@triton.jit
def append(rec, cursor, cap, slot, SITE, body):
    """[SITE, lanes, body...] at the end of the slot's stream, or -1 there if it does not fit. The body
    is stored in row-major order from its own layout (row_major), never reshaped: a reshape that keeps
    the order moves the block through shared memory, which made ptxas several times slower."""
    at = tl.atomic_add(cursor + slot, body.numel + 2)
    out = rec + slot.to(tl.int64) * cap + at
    if at + body.numel + 2 <= cap:
        tl.store(out, SITE)
        tl.store(out + 1, body.numel)
        tl.store(out + 2 + row_major(body), body)
    elif at < cap:
        tl.store(out, -1)  # the end of what fitted: the rest of the slot is not written


@triton.jit
def row_major(block):
    """Each element's position in `block` read in row-major order, in the block's own shape."""
    if len(block.shape) == 1:
        return tl.arange(0, block.shape[0])
    elif len(block.shape) == 2:
        return tl.arange(0, block.shape[0])[:, None] * block.shape[1] + tl.arange(0, block.shape[1])[None, :]
    elif len(block.shape) == 3:
        return ((tl.arange(0, block.shape[0])[:, None, None] * block.shape[1]
                 + tl.arange(0, block.shape[1])[None, :, None]) * block.shape[2]
                + tl.arange(0, block.shape[2])[None, None, :])
    else:
        return tl.reshape(tl.arange(0, block.numel), block.shape)


@triton.jit
def load(ptr, mask, other, cache_modifier: tl.constexpr, eviction_policy: tl.constexpr, volatile: tl.constexpr,
         base, span, cov, rec, cursor, cap, slot, viol, pid,
         SITE: tl.constexpr, SHIFT: tl.constexpr, TRACE: tl.constexpr):
    safe = probe(ptr, mask, base, span, cov, rec, cursor, cap, slot, viol, pid, SITE, SHIFT, 0, TRACE)
    return tl.load(ptr, mask=safe, other=other, cache_modifier=cache_modifier, eviction_policy=eviction_policy,
                   volatile=volatile)


@triton.jit
def store(ptr, value, mask, cache_modifier: tl.constexpr, eviction_policy: tl.constexpr,
          base, span, cov, rec, cursor, cap, slot, viol, pid,
          SITE: tl.constexpr, SHIFT: tl.constexpr, TRACE: tl.constexpr):
    safe = probe(ptr, mask, base, span, cov, rec, cursor, cap, slot, viol, pid, SITE, SHIFT, 1, TRACE)
    tl.store(ptr, value, mask=safe, cache_modifier=cache_modifier, eviction_policy=eviction_policy)


@triton.jit
def atomic(ptr, val, mask, sem: tl.constexpr, scope: tl.constexpr, base, span, cov, rec, cursor, cap, slot, viol, pid,
           SITE: tl.constexpr, SHIFT: tl.constexpr, TRACE: tl.constexpr, NAME: tl.constexpr):
    safe = probe(ptr, mask, base, span, cov, rec, cursor, cap, slot, viol, pid, SITE, SHIFT, 2, TRACE)
    if NAME == "add":
        return tl.atomic_add(ptr, val, mask=safe, sem=sem, scope=scope)
    elif NAME == "max":
        return tl.atomic_max(ptr, val, mask=safe, sem=sem, scope=scope)
    elif NAME == "min":
        return tl.atomic_min(ptr, val, mask=safe, sem=sem, scope=scope)
    elif NAME == "and":
        return tl.atomic_and(ptr, val, mask=safe, sem=sem, scope=scope)
    elif NAME == "or":
        return tl.atomic_or(ptr, val, mask=safe, sem=sem, scope=scope)
    elif NAME == "xor":
        return tl.atomic_xor(ptr, val, mask=safe, sem=sem, scope=scope)
    else:
        return tl.atomic_xchg(ptr, val, mask=safe, sem=sem, scope=scope)


@triton.jit
def cas(ptr, cmp, val, sem: tl.constexpr, scope: tl.constexpr, base, span, cov, rec, cursor, cap, slot, viol, pid,
        SITE: tl.constexpr, SHIFT: tl.constexpr, TRACE: tl.constexpr):
    """tl.atomic_cas takes no mask: an out-of-bounds lane compares and swaps at its tensor's first
    element instead, swapping in the value it compares with, so that memory keeps its value."""
    safe = probe(ptr, None, base, span, cov, rec, cursor, cap, slot, viol, pid, SITE, SHIFT, 2, TRACE)
    elem = (ptr.to(tl.int64) - base) >> SHIFT
    return tl.atomic_cas(tl.where(safe, ptr, ptr - elem), cmp, tl.where(safe, val, cmp), sem=sem, scope=scope)


@triton.jit
def i32(x):
    """A block pointer's offsets, as tl.make_block_ptr and tl.advance keep them."""
    return tl.cast(x, tl.int32)


@triton.jit
def i64(x):
    """A block pointer's shape and strides, as tl.make_block_ptr keeps them."""
    return tl.cast(x, tl.int64)


@triton.jit
def product_left_out(a, b, acc, out_dtype: tl.constexpr):
    """What an instrumented build has in place of a tl.dot whose value is only stored
    (sandbox.trace.stored_values): the accumulator, or zeros of the product's shape and type."""
    if acc is not None:
        return acc
    elif len(a.shape) == 3:
        return tl.zeros([a.shape[0], a.shape[1], b.shape[2]], tl.int32 if a.dtype.is_int() else out_dtype)
    else:
        return tl.zeros([a.shape[0], b.shape[1]], tl.int32 if a.dtype.is_int() else out_dtype)
