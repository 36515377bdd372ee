"""Per-slot Cox aggregates (Q1, Q2, R1, R2, T2 and the stratum cumsums A1c, A2c) from the
slot sums: the scans of a stratum, blocked and in parallel for large ones, and the
log-likelihood of the slots. Notation: :mod:`riskset.kernels.cpu.cox`."""
import math

import numpy as np
from numba import njit, prange

from riskset.core.prefetch import DISTANCE, prefetch
from riskset.kernels.cpu.cox_rows import BLOCK


#: A stratum with at least this many slots is refreshed by blocked scans (in parallel);
#: a smaller one by one serial scan of its own.
BLOCKED_SLOTS = 4 * BLOCK

#: Slots of small strata to refresh from which their scans run in parallel (chunks of strata per task).
PARALLEL_SLOTS = 1 << 13

#: Strata per task of the parallel refresh of many small strata.
STRATA_CHUNK = 256


@njit(cache=True, nogil=True, error_model="numpy", inline="always")
def slot_terms(d, Dp, m, E, efron):
    """(Q1, Q2, R1, R2, T2) of one slot with weighted event count d, denominator D = Dp, m
    tied event rows and event weight E (all zero without an event)."""
    q = 0.0
    q2 = 0.0
    r1 = 0.0
    r2 = 0.0
    t2 = 0.0
    if d > 0.0:
        if not efron or m <= 1.0:
            inv = 1.0 / Dp
            q = d * inv
            q2 = q * inv
        else:
            wbar = d / m
            for l in range(int(m)):
                f = l / m
                zi = 1.0 / (Dp - f * E)
                q += zi
                q2 += zi * zi
                r1 += f * zi
                r2 += f * zi * zi
                t2 += f * f * zi * zi
            q *= wbar
            q2 *= wbar
            r1 *= wbar
            r2 *= wbar
            t2 *= wbar
    return q, q2, r1, r2, t2


@njit(cache=True, nogil=True, error_model="numpy", inline="always")
def block_sum(x, a, z):
    """sum of x[a:z] by four interleaved partial sums (a fixed order, not a serial chain)."""
    s0 = 0.0
    s1 = 0.0
    s2 = 0.0
    s3 = 0.0
    p = a
    while p + 4 <= z:
        s0 += x[p]
        s1 += x[p + 1]
        s2 += x[p + 2]
        s3 += x[p + 3]
        p += 4
    while p < z:
        s0 += x[p]
        p += 1
    return (s0 + s1) + (s2 + s3)


@njit(cache=True, nogil=True, error_model="numpy", inline="always")
def scan_denominators(lo, hi, sx, sn, ex, en, has_start, keep_D, D, ev, slot_d, slot_m, efron, inv):
    """D[p] = sum over the slots q > p of ex[q] - en[q], for p = hi-1 .. lo (descending),
    ``sx, sn``: the sums of ex, en over the slots of the stratum from ``hi`` on. Without
    start times en is never read (every row enters at its stratum's first slot). Returns the
    sums of Q1 and Q2 over the slots (in the same pass: independent chains of additions);
    with Breslow's ties it stores each event slot's 1 / D in ``inv`` (0 elsewhere), so that
    :func:`scan_aggregates` divides nothing again. D is stored only with ``keep_D`` (a sweep's
    Breslow refresh reads 1 / D alone: 8 bytes a slot not written). Called inside the parallel loops of
    :func:`refresh_blocked`, where Numba passes only arrays and scalars: flat arguments."""
    t1 = 0.0
    t2 = 0.0
    for p in range(hi - 1, lo - 1, -1):
        Dp = sx - sn if has_start else sx
        if keep_D:
            D[p] = Dp
        sx += ex[p]
        if has_start:
            sn += en[p]
        if not efron:
            d = slot_d[p]
            i = 1.0 / Dp if d > 0.0 else 0.0
            inv[p] = i
            q = d * i
            t1 += q
            t2 += q * i
        else:
            q, q2, r1, r2, tt = slot_terms(slot_d[p], Dp, slot_m[p], ev[p], efron)
            t1 += q
            t2 += q2
    return t1, t2


@njit(cache=True, nogil=True, error_model="numpy", inline="always")
def scan_aggregates(lo, hi, c1, c2, D, ev, slot_d, slot_m, efron, full, inv, Q1, Q2, R1, R2, T2, A1c, A2c):
    """A1c[p] = c1 + the sum of Q1 over the slots lo .. p-1, A2c likewise with Q2 and c2
    (ascending); stores Q1, Q2 when ``full`` or ``efron`` and R1, R2, T2 when ``efron``
    (:func:`slot_terms`; Breslow's slot terms from the 1 / D that :func:`scan_denominators`
    stored in ``inv``, which may be Q1 itself: each slot reads it before it stores Q1). Flat
    arguments, as :func:`scan_denominators`'s."""
    if not efron:  # Breslow: the tight loop of most fits, no division
        for p in range(lo, hi):
            A1c[p] = c1
            A2c[p] = c2
            i = inv[p]
            q = slot_d[p] * i
            q2 = q * i
            c1 += q
            c2 += q2
            if full:
                Q1[p] = q
                Q2[p] = q2
        return
    for p in range(lo, hi):
        A1c[p] = c1
        A2c[p] = c2
        q, q2, r1, r2, t2 = slot_terms(slot_d[p], D[p], slot_m[p], ev[p], efron)
        c1 += q
        c2 += q2
        Q1[p] = q
        Q2[p] = q2
        R1[p] = r1
        R2[p] = r2
        T2[p] = t2


@njit(cache=True, nogil=True, error_model="numpy")
def scan_strata(strata, first, last, below, slot_ptr, ex, en, ev, slot_d, slot_m, has_start, efron, full, D, Q1,
                Q2, R1, R2, T2, A1c, A2c):
    """The aggregates of each stratum ``strata[first:last]`` of fewer than ``below`` slots, by
    two serial scans per stratum (descending for D, ascending for A1c, A2c); flat arguments
    (:func:`refresh_strata` takes the records): it runs inside the parallel loop of
    :func:`refresh_small_parallel`, and a parallel function compiles faster on arrays and
    scalars than on records it unpacks.

    The loops are written out here, not called per stratum: an (inlined) call with the state
    arrays as arguments costs about 100 ns, ten times the scans of a stratum of a few slots."""
    for i in range(first, last):
        s = strata[i]
        lo = slot_ptr[s]
        hi = slot_ptr[s + 1]
        if hi - lo >= below:
            continue
        sx = 0.0
        if has_start:
            sn = 0.0
            for p in range(hi - 1, lo - 1, -1):
                D[p] = sx - sn
                sx += ex[p]
                sn += en[p]
        else:
            for p in range(hi - 1, lo - 1, -1):
                D[p] = sx
                sx += ex[p]
        c1 = 0.0
        c2 = 0.0
        if not efron:  # Breslow: one division per event slot
            for p in range(lo, hi):
                A1c[p] = c1
                A2c[p] = c2
                d = slot_d[p]
                if d > 0.0:
                    inv = 1.0 / D[p]
                    q = d * inv
                    q2 = q * inv
                    c1 += q
                    c2 += q2
                    if full:
                        Q1[p] = q
                        Q2[p] = q2
                elif full:
                    Q1[p] = 0.0
                    Q2[p] = 0.0
            continue
        for p in range(lo, hi):
            A1c[p] = c1
            A2c[p] = c2
            q, q2, r1, r2, t2 = slot_terms(slot_d[p], D[p], slot_m[p], ev[p], efron)
            c1 += q
            c2 += q2
            Q1[p] = q
            Q2[p] = q2
            R1[p] = r1
            R2[p] = r2
            T2[p] = t2


@njit(cache=True, nogil=True, error_model="numpy", inline="always")
def refresh_strata(strata, first, last, below, slots, sums, full):
    """:func:`scan_strata` on the records."""
    scan_strata(strata, first, last, below, slots.slot_ptr, sums.ex, sums.en, sums.ev, slots.slot_d, slots.slot_m,
                slots.has_start, slots.efron, full, sums.D, sums.Q1, sums.Q2, sums.R1, sums.R2, sums.T2, sums.A1c,
                sums.A2c)


@njit(cache=True, nogil=True, error_model="numpy", parallel=True)
def refresh_blocked(lo, hi, slots, sums, full):
    """The aggregates of a large stratum (slots lo .. hi-1) by blocked scans over fixed blocks
    of :data:`BLOCK` slots, the blocks in parallel:

    1. per block, the sums of ex, en; serially, their suffix sums (the carry of each block);
    2. per block, the descending scan of D from its carry and the block's sums of the slot
       terms Q1, Q2; serially, their prefix sums;
    3. per block, the ascending scan of A1c, A2c from its carry. With Breslow's ties, step 2
       keeps each slot's 1 / D in Q1 and step 3 reads it (divided once: a refresh at 500k
       slots took 1.04 ms on two threads with the division in both, 0.85 with it once);
       Efron's slot terms are computed again.

    Without ``full``, Q1 and Q2 are left stale (Breslow's Q1 holds 1 / D) and so is D with
    Breslow's ties (the scans are bound by memory traffic: 8 bytes a slot fewer, 6% of a
    refresh at 500k slots on two threads); a full refresh (a synced state) stores them.

    The blocks and the order of every sum are fixed by the data, so the result does not
    depend on the number of threads (it differs from :func:`refresh_strata` by rounding).
    """
    # the loops below read arrays and scalars only (Numba's parallel loops take no records)
    slot_d, slot_m, has_start, efron = slots.slot_d, slots.slot_m, slots.has_start, slots.efron
    ex, en, ev, D, Q1, Q2 = sums.ex, sums.en, sums.ev, sums.D, sums.Q1, sums.Q2
    R1, R2, T2, A1c, A2c = sums.R1, sums.R2, sums.T2, sums.A1c, sums.A2c
    keep_D = full or efron
    nb = (hi - lo + BLOCK - 1) // BLOCK
    carry = np.empty((nb, 4))
    for b in prange(nb):
        a = lo + b * BLOCK
        z = min(hi, a + BLOCK)
        carry[b, 0] = block_sum(ex, a, z)
        carry[b, 1] = block_sum(en, a, z) if has_start else 0.0
    sx = 0.0
    sn = 0.0
    for b in range(nb - 1, -1, -1):  # exclusive suffix sums
        tx = carry[b, 0]
        tn = carry[b, 1]
        carry[b, 0] = sx
        carry[b, 1] = sn
        sx += tx
        sn += tn
    for b in prange(nb):
        a = lo + b * BLOCK
        z = min(hi, a + BLOCK)
        carry[b, 2], carry[b, 3] = scan_denominators(a, z, carry[b, 0], carry[b, 1], ex, en, has_start, keep_D, D, ev,
                                                     slot_d, slot_m, efron, Q1)
    c1 = 0.0
    c2 = 0.0
    for b in range(nb):  # exclusive prefix sums
        t1 = carry[b, 2]
        t2 = carry[b, 3]
        carry[b, 2] = c1
        carry[b, 3] = c2
        c1 += t1
        c2 += t2
    for b in prange(nb):
        a = lo + b * BLOCK
        z = min(hi, a + BLOCK)
        scan_aggregates(a, z, carry[b, 2], carry[b, 3], D, ev, slot_d, slot_m, efron, full, Q1, Q1, Q2, R1, R2, T2,
                        A1c, A2c)


@njit(cache=True, nogil=True, error_model="numpy", inline="always")
def refresh_small_parallel(strata, count, slots, sums, full):
    """:func:`scan_strata` of the strata ``strata[:count]`` below :data:`BLOCKED_SLOTS` slots,
    in fixed chunks of :data:`STRATA_CHUNK` strata per task (strata are independent: the
    result is the serial one)."""
    scan_small_strata(strata, count, slots.slot_ptr, sums.ex, sums.en, sums.ev, slots.slot_d, slots.slot_m,
                      slots.has_start, slots.efron, full, sums.D, sums.Q1, sums.Q2, sums.R1, sums.R2, sums.T2,
                      sums.A1c, sums.A2c)


@njit(cache=True, nogil=True, error_model="numpy", parallel=True)
def scan_small_strata(strata, count, slot_ptr, ex, en, ev, slot_d, slot_m, has_start, efron, full, D, Q1, Q2, R1,
                      R2, T2, A1c, A2c):
    """:func:`refresh_small_parallel` on flat arguments (a parallel loop, see :func:`scan_strata`)."""
    for c in prange((count + STRATA_CHUNK - 1) // STRATA_CHUNK):
        scan_strata(strata, c * STRATA_CHUNK, min(count, (c + 1) * STRATA_CHUNK), BLOCKED_SLOTS, slot_ptr, ex, en, ev,
                    slot_d, slot_m, has_start, efron, full, D, Q1, Q2, R1, R2, T2, A1c, A2c)


@njit(cache=True, nogil=True, error_model="numpy")
def refresh(strata, count, slots, sums, full, parallel):
    """Per-slot denominators and the cumulative aggregates of the strata ``strata[:count]``,
    O(their slots (+ tied events for Efron)).

    Stratum s owns slots ``slot_ptr[s] .. slot_ptr[s+1] - 1`` (the last one terminal).
    ``full`` also stores the per-slot Q1, Q2 (needed by the Hessian and the baseline
    hazard, not by the coordinates); R1, R2, T2 are stored whenever ``efron``.

    Without ``parallel`` (one thread: ``numba.get_num_threads()``, read by the caller: a
    compiled read would keep the sweep out of the disk cache), one serial scan per stratum.
    With it, a stratum of :data:`BLOCKED_SLOTS` slots or more takes the blocked scans
    (:func:`refresh_blocked`: the same result on 2 or 16 threads, equal to the serial one up
    to rounding), and the smaller ones run one per task when together they have
    :data:`PARALLEL_SLOTS` slots or more (the serial result).
    """
    slot_ptr = slots.slot_ptr
    small = 0
    for i in range(count):
        s = strata[i]
        lo = slot_ptr[s]
        hi = slot_ptr[s + 1]
        if parallel and hi - lo >= BLOCKED_SLOTS:
            refresh_blocked(lo, hi, slots, sums, full)
        else:
            small += hi - lo
    if parallel and small >= PARALLEL_SLOTS:
        refresh_small_parallel(strata, count, slots, sums, full)
    elif small > 0:
        refresh_strata(strata, 0, count, BLOCKED_SLOTS if parallel else slot_ptr[-1] + 1, slots, sums, full)


@njit(cache=True, nogil=True, error_model="numpy")
def rows_denominators(listed, eta, rows, slots, shift, ex, en, ev, D):
    """The slot sums of :func:`~riskset.kernels.cpu.cox_rows.weights_and_slot_sums` and the
    denominators D (as :func:`refresh_strata`'s) of the rows ``listed`` alone (ascending;
    ``eta[q]`` is row ``listed[q]``'s linear predictor), every other row's weight taken as 0: a
    view's rows of positive weight where they are few (the held-out rows of a fold), in
    O(len(listed) + slots). The stratum shifts are the listed rows' largest eta. Returns the
    log-likelihood's row part (:func:`loglik_slots` adds the rest)."""
    cw, ks, ke, event, row_stratum = rows.cw, rows.ks, rows.ke, rows.event, rows.row_stratum
    has_start, slot_ptr = slots.has_start, slots.slot_ptr
    n = listed.shape[0]
    shift[:] = -np.inf
    for q in range(n):
        if q + DISTANCE < n:  # scattered rows: their reads asked ahead (prefetch.py)
            prefetch(row_stratum, listed[q + DISTANCE])
        s = row_stratum[listed[q]]
        shift[s] = max(shift[s], eta[q])
    ex[:] = 0.0
    en[:] = 0.0
    ev[:] = 0.0
    t = 0.0
    for q in range(n):
        if q + DISTANCE < n:
            r = listed[q + DISTANCE]
            prefetch(cw, r)
            prefetch(ke, r)
            prefetch(event, r)
            if has_start:
                prefetch(ks, r)
        if q + DISTANCE // 2 < n:
            prefetch(ex, ke[listed[q + DISTANCE // 2]])
        r = listed[q]
        sh = shift[row_stratum[r]]
        wr = cw[r] * math.exp(eta[q] - sh)
        ex[ke[r]] += wr
        if has_start:
            en[ks[r]] += wr
        if event[r]:
            ev[ke[r] - 1] += wr
            t += cw[r] * (eta[q] - sh)
    for s in range(slot_ptr.shape[0] - 1):
        sx = 0.0
        sn = 0.0
        for p in range(slot_ptr[s + 1] - 1, slot_ptr[s] - 1, -1):  # at risk at p: exit slot > p, entry <= p
            D[p] = sx - sn
            sx += ex[p]
            if has_start:
                sn += en[p]
    return t


@njit(cache=True, nogil=True, error_model="numpy", parallel=True)
def loglik_slots(D, ev, slot_d, slot_m, efron):
    """- sum_p wbar sum_l log Z_l, the log-likelihood's slot part (D and ev must be current; the
    row part, sum_events c (eta - shift), is
    :func:`~riskset.kernels.cpu.cox_rows.weights_and_slot_sums`'s: the shifts of
    :func:`~riskset.kernels.cpu.cox_rows.stratum_shifts` cancel, a stratum's event weight is its slots' d): partial sums
    over fixed blocks of :data:`BLOCK` slots in parallel, added in block order."""
    blocks = (D.shape[0] + BLOCK - 1) // BLOCK
    part = np.zeros(blocks)
    for b in prange(blocks):
        t = 0.0
        for p in range(b * BLOCK, min(D.shape[0], (b + 1) * BLOCK)):
            d = slot_d[p]
            if d > 0.0:
                if not efron or slot_m[p] <= 1.0:
                    t -= d * math.log(D[p])
                else:
                    m = slot_m[p]
                    wbar = d / m
                    for l in range(int(m)):
                        t -= wbar * math.log(D[p] - (l / m) * ev[p])
        part[b] = t
    ll = 0.0
    for b in range(blocks):
        ll += part[b]
    return ll
