"""Block-level primitives: tree reductions and chunked segmented scans in shared memory.

All functions are called by every thread of a block (they contain ``syncthreads``);
the block size ``nt`` is a power of two.
"""
from numba import cuda


@cuda.jit(device=True)
def block_sum2(sa, sb, a, b, tid, nt):
    """Sum a and b over the block; the totals are in sa[0], sb[0] on return (after a sync)."""
    sa[tid] = a
    sb[tid] = b
    cuda.syncthreads()
    s = nt // 2
    while s > 0:
        if tid < s:
            sa[tid] += sa[tid + s]
            sb[tid] += sb[tid + s]
        cuda.syncthreads()
        s //= 2


@cuda.jit(device=True)
def chunk_segscan(sv, sf, v, f, tid, nt):
    """Inclusive segmented scan of (head flag f, value v) over the block (Hillis-Steele).

    Returns (scan value, any head at or before this thread) for this thread; leaves the
    chunk totals in sv[nt-1], sf[nt-1] (valid until the caller's next sync).
    """
    sv[tid] = v
    sf[tid] = f
    cuda.syncthreads()
    off = 1
    while off < nt:
        pv = 0.0
        pf = 0
        if tid >= off:
            pv = sv[tid - off]
            pf = sf[tid - off]
        cuda.syncthreads()
        if tid >= off:
            if sf[tid] == 0:
                sv[tid] = pv + sv[tid]
            if pf != 0:
                sf[tid] = 1
        cuda.syncthreads()
        off *= 2
    return sv[tid], sf[tid]


@cuda.jit(device=True)
def carried_segscan(sv, sf, v, f, carry, tid, nt):
    """:func:`chunk_segscan` of one chunk of a longer sequence: this thread's scan value with
    the running ``carry`` of earlier chunks added (unless a head precedes it in the chunk),
    and the carry for the next chunk."""
    s, anyf = chunk_segscan(sv, sf, v, f, tid, nt)
    if anyf == 0:
        s += carry
    lastv = sv[nt - 1]
    lastf = sf[nt - 1]
    cuda.syncthreads()
    if lastf == 0:
        return s, carry + lastv
    return s, lastv


@cuda.jit(device=True)
def segscan_slots(src, dst, r, n, heads, reverse, sv, sf, tid, nt):
    """dst[r, :] = inclusive segmented scan of src[r, :] (in place allowed).

    Forward: segments start where ``heads[p]`` is set. ``reverse``: the scan runs from
    the last index down and segments start where ``heads[p]`` is set (pass the
    terminal-slot flags). Chunks of ``nt`` elements, carrying the running sum.
    """
    carry = 0.0
    for c0 in range(0, n, nt):
        i = c0 + tid
        v = 0.0
        f = 0
        p = 0
        if i < n:
            p = n - 1 - i if reverse else i
            v = src[r, p]
            f = heads[p]
        s, carry = carried_segscan(sv, sf, v, f, carry, tid, nt)
        if i < n:
            dst[r, p] = s
    cuda.syncthreads()


@cuda.jit(device=True)
def chunk_segscan2(sv, sw, sf, v, u, f, tid, nt):
    """:func:`chunk_segscan` of two value arrays sharing the head flags."""
    sv[tid] = v
    sw[tid] = u
    sf[tid] = f
    cuda.syncthreads()
    off = 1
    while off < nt:
        pv = 0.0
        pu = 0.0
        pf = 0
        if tid >= off:
            pv = sv[tid - off]
            pu = sw[tid - off]
            pf = sf[tid - off]
        cuda.syncthreads()
        if tid >= off:
            if sf[tid] == 0:
                sv[tid] = pv + sv[tid]
                sw[tid] = pu + sw[tid]
            if pf != 0:
                sf[tid] = 1
        cuda.syncthreads()
        off *= 2
    return sv[tid], sw[tid], sf[tid]


@cuda.jit(device=True)
def carried_segscan2(sv, sw, sf, v, u, f, carry, carry2, tid, nt):
    """:func:`carried_segscan` of two value sequences sharing the head flags: this thread's two
    scan values and the two carries for the next chunk."""
    s, s2, anyf = chunk_segscan2(sv, sw, sf, v, u, f, tid, nt)
    if anyf == 0:
        s += carry
        s2 += carry2
    lastv = sv[nt - 1]
    lastu = sw[nt - 1]
    lastf = sf[nt - 1]
    cuda.syncthreads()
    if lastf == 0:
        return s, s2, carry + lastv, carry2 + lastu
    return s, s2, lastv, lastu


@cuda.jit(device=True)
def scan2_slots(src, src2, r, n, heads, reverse, sv, sw, sf, tid, nt):
    """Inclusive segmented scans of src[r, :] and src2[r, :] in place, in one pass;
    ``heads`` and ``reverse`` as in :func:`segscan_slots`."""
    carry = 0.0
    carry2 = 0.0
    for c0 in range(0, n, nt):
        i = c0 + tid
        v = 0.0
        u = 0.0
        f = 0
        p = 0
        if i < n:
            p = n - 1 - i if reverse else i
            v = src[r, p]
            u = src2[r, p]
            f = heads[p]
        s, s2, carry, carry2 = carried_segscan2(sv, sw, sf, v, u, f, carry, carry2, tid, nt)
        if i < n:
            src[r, p] = s
            src2[r, p] = s2
    cuda.syncthreads()


@cuda.jit(device=True)
def segscan2_slots(src, src2, r, n, heads, sv, sw, sf, tid, nt):
    """Forward inclusive segmented scans of src[r, :] and src2[r, :] in place (one pass)."""
    scan2_slots(src, src2, r, n, heads, False, sv, sw, sf, tid, nt)
