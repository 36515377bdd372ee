"""Grid-level primitives of the cooperative single-fit kernels: a segmented scan and a sum
over the whole grid.

Every thread of the grid calls them (they contain block and grid syncs); the block
size is a power of two and the number of blocks at most the block size. The scan gives
each thread of the grid one contiguous run of the sequence (:func:`thread_run`), so that
a caller that computes the scanned values, or reads the scan, at the same positions needs
no grid sync around it: its own thread wrote them. The scan is reduce-then-scan:

1. each thread reduces its run serially to a segmented total (the value after its last
   segment head, and whether it has one);
2. a block scan of those totals (:func:`~.blocks.chunk_segscan2`) gives each thread the
   total of the runs before it in its block; block totals go to ``part``, a grid sync,
   and a block scan of the block totals gives each block the total before it;
3. each thread rescans its run serially from that carry, writing the result.

Two passes over the sequence, two block scans and one grid sync; ``part`` has four slots of
block totals so that consecutive scans need no grid sync between them (a block still
reading one scan's totals while another block writes the next scan's).
"""
from numba import cuda

from .blocks import block_sum2, chunk_segscan2


@cuda.jit(device=True)
def grid_place():
    """(this thread's index in the grid, threads in the grid)."""
    nt = cuda.blockDim.x
    return cuda.blockIdx.x * nt + cuda.threadIdx.x, cuda.gridDim.x * nt


@cuda.jit(device=True)
def grid_sync():
    cuda.cg.this_grid().sync()


@cuda.jit(device=True)
def thread_run(n):
    """(lo, hi): this thread's contiguous run of positions 0 .. n - 1 in the grid scans."""
    gt, T = grid_place()
    k = (n + T - 1) // T
    lo = gt * k
    hi = lo + k
    if lo > n:  # (not min(): for two integers it fails to type in numba 0.68's CUDA target)
        lo = n
    if hi > n:
        hi = n
    return lo, hi


@cuda.jit(device=True)
def grid_segscan2(src, src2, dst, dst2, r, r2, n, two, heads, hbase, hmask, reverse, exclusive, part, slot, sv, sw,
                  sf):
    """Segmented scans of ``src[r, :n]`` into ``dst[r, :n]`` (and, if ``two``, of
    ``src2[r2, :n]`` into ``dst2[r2, :n]`` in the same pass; in place allowed) over the
    whole grid.

    Position q of the scan order is index ``p = n - 1 - q`` if ``reverse``, else ``q``; a
    segment starts at p where ``heads[hbase + p] & hmask`` (``hmask`` 0: one segment, heads
    not read). Inclusive, or ``exclusive`` (0 at a head). Thread runs are
    :func:`thread_run` (n) in scan order. Leaves ``dst`` written by each thread at its own
    run: a grid sync before others read it. ``part[slot]`` holds the block totals until the
    caller's next grid sync.
    """
    tid = cuda.threadIdx.x
    nt = cuda.blockDim.x
    bx = cuda.blockIdx.x
    lo, hi = thread_run(n)
    v = 0.0
    u = 0.0
    f = 0
    for q in range(lo, hi):
        p = n - 1 - q if reverse else q
        if hmask != 0 and heads[hbase + p] & hmask:
            f = 1
            v = src[r, p]
            if two:
                u = src2[r2, p]
        else:
            v += src[r, p]
            if two:
                u += src2[r2, p]
    s, s2, anyf = chunk_segscan2(sv, sw, sf, v, u, f, tid, nt)
    ev = 0.0  # the segmented total of the runs before this thread's in its block
    eu = 0.0
    ef = 0
    if tid > 0:
        ev = sv[tid - 1]
        eu = sw[tid - 1]
        ef = sf[tid - 1]
    if tid == nt - 1:
        part[slot, 0, bx] = s
        part[slot, 1, bx] = s2
        part[slot, 2, bx] = float(anyf)
    grid_sync()
    bv = 0.0  # the block totals before this block, scanned
    bu = 0.0
    bf = 0
    if tid < bx:
        bv = part[slot, 0, tid]
        bu = part[slot, 1, tid]
        bf = int(part[slot, 2, tid])
    chunk_segscan2(sv, sw, sf, bv, bu, bf, tid, nt)
    cv = 0.0
    cu = 0.0
    if bx > 0:
        cv = sv[bx - 1]
        cu = sw[bx - 1]
    cuda.syncthreads()  # every thread has read the carry before the scratch is reused
    if ef == 0:
        ev += cv
        eu += cu
    for q in range(lo, hi):
        p = n - 1 - q if reverse else q
        x = src[r, p]
        x2 = 0.0
        if two:
            x2 = src2[r2, p]
        if hmask != 0 and heads[hbase + p] & hmask:
            if exclusive:
                dst[r, p] = 0.0
                if two:
                    dst2[r2, p] = 0.0
            ev = x
            eu = x2
        else:
            if exclusive:
                dst[r, p] = ev
                if two:
                    dst2[r2, p] = eu
            ev += x
            eu += x2
        if not exclusive:
            dst[r, p] = ev
            if two:
                dst2[r2, p] = eu


@cuda.jit(device=True)
def grid_sum2(a, b, partial, slot, sa, sb):
    """(sum a, sum b) over the grid, identical in every thread: block partials in
    ``partial[slot]``, a grid sync, then every block sums the partials in the same order.
    ``sa``, ``sb`` are free on return; ``partial[slot]`` until the caller's next grid sync."""
    tid = cuda.threadIdx.x
    nt = cuda.blockDim.x
    bx = cuda.blockIdx.x
    nb = cuda.gridDim.x
    block_sum2(sa, sb, a, b, tid, nt)
    if tid == 0:
        partial[slot, 0, bx] = sa[0]
        partial[slot, 1, bx] = sb[0]
    grid_sync()
    a = 0.0
    b = 0.0
    for q in range(tid, nb, nt):
        a += partial[slot, 0, q]
        b += partial[slot, 1, q]
    block_sum2(sa, sb, a, b, tid, nt)
    a = sa[0]
    b = sb[0]
    cuda.syncthreads()  # every thread has read the totals before the scratch is reused
    return a, b
