"""Numba kernels of the Cox family (Breslow and Efron ties, strata, (start, stop] rows).

Notation (see :mod:`riskset.data.risksets`): rows sorted by (stratum, time descending);
per row entry/exit slots ``ks <= ke``; the row is at risk at event slot p iff
``ks <= p < ke``; ``w = c exp(eta - shift)`` with case weight c and the shift of the row's
stratum (:func:`stratum_shifts`: every sum below is a ratio invariant to it). Per event slot: ``d`` = weighted
event count, ``m`` = number of tied event rows, ``wbar = d / m``,
``D = sum_{at risk} w``, ``E = sum_{events at p} w``, ``Z_l = D - (l/m) E`` (Efron,
l = 0..m-1; Breslow is m = 1).

Per-slot aggregates (refreshed in O(n_slots) from the slot sums ``ex/en/ev`` that
``move`` keeps up to date in O(nnz_j))::

    Q1 = wbar sum_l 1/Z_l      Q2 = wbar sum_l 1/Z_l^2
    R1 = wbar sum_l f_l/Z_l    R2 = wbar sum_l f_l/Z_l^2   T2 = wbar sum_l f_l^2/Z_l^2
    A1c[p] = sum of Q1 over earlier slots of the stratum, A2c likewise with Q2

Coordinate j, with N1_p/N2_p = risk-set sums of w x / w x^2 and E1_p the event-row
sum of w x::

    g_j = sum_events c x - sum_nz w x (A1c[ke] - A1c[ks]) + sum_nz,event w x R1[ke-1]
    h_j = - sum_nz w x^2 (A1c[ke] - A1c[ks]) + sum_nz,event w x^2 R1[ke-1]
          + sum_p (Q2 N1^2 - 2 R2 N1 E1 + T2 E1^2)

The last sum is a walk over the column's non-zeros in slot order (O(nnz_j)):
``coordinate_sorted`` for right-censored data (the sorted row order is slot order),
``coordinate_breakpoints`` for (start, stop] data (static per-column breakpoints).
``coordinate_scan`` is the papers' O(N) formulation (full scans per coordinate).

At the bottom, both formulations on the compiled family contract of
:mod:`riskset.core.sweep`: ``SPARSE_KERNELS`` and ``SCAN_KERNELS``.
"""
import math

import numpy as np
from numba import njit, prange

from riskset.core.sweep import compile_family
from riskset.core.prefetch import DISTANCE, prefetch


#: Slots per block of the blocked scans of a large stratum, and rows per block of the
#: O(N) passes: fixed, so the sums (and the fit) do not depend on the thread count.
BLOCK = 4096

#: A stratum with at least this many slots is refreshed by blocked scans (in parallel);
#: a smaller one by one serial scan of its own.
BLOCKED_SLOTS = 4 * BLOCK

#: Slots of small strata to refresh from which their scans run in parallel (chunks of strata per task).
PARALLEL_SLOTS = 1 << 13

#: Strata per task of the parallel refresh of many small strata.
STRATA_CHUNK = 256

#: Stored non-zeros per chunk of a column's parallel walk and move (:func:`walk_chunks`); on
#: more than one thread, a right-censored column with more than two chunks' worth (a few
#: milliseconds of random reads at N = 1M) walks and moves its chunks in parallel.
WALK_CHUNK = 1 << 13


@njit(cache=True, nogil=True, error_model="numpy")
def case_weights(weights, data_rows, event, ke, cw, slot_d, slot_m):
    """A reweighting's case weights cw (``weights`` of the Dataset rows, in datafit row order)
    and, per event slot, its events' weight slot_d and number of positive weight slot_m,
    added in row order (one pass, its scattered reads asked 4 x DISTANCE rows ahead: cheaper
    than NumPy's gather and two bincounts, docs/performance.md)."""
    n = cw.shape[0]
    for r in range(n):
        if r + 4 * DISTANCE < n:
            prefetch(weights, data_rows[r + 4 * DISTANCE])
        c = weights[data_rows[r]]
        cw[r] = c
        if event[r] == 1:
            slot_d[ke[r] - 1] += c
            slot_m[ke[r] - 1] += 1.0 if c > 0.0 else 0.0


def row_pieces(row_stratum, exit_slot=None):
    """(piece_ptr, piece_stratum): the rows (sorted by stratum) cut at every stratum boundary
    and about every :data:`BLOCK` rows; piece i spans rows piece_ptr[i]:piece_ptr[i+1] of stratum
    piece_stratum[i]. The shifted weights' passes (:func:`stratum_shifts`, :func:`row_weights`)
    run over pieces in parallel, reading no per-row stratum. With ``exit_slot`` (per row, its
    runs contiguous: rows in (stratum, time descending) order), each cut every BLOCK rows moves
    to the next change of exit slot, so that each slot's rows lie in one piece: the passes that add
    rows into their exit slots (:func:`new_state`, :func:`hessian_vector_rows`) then run over
    pieces in parallel, each slot's sum in row order as a serial pass adds it (the same bits)."""
    n = row_stratum.shape[0]
    cuts = np.arange(0, n, BLOCK)
    if exit_slot is not None and n:
        changes = np.r_[0, np.flatnonzero(np.diff(exit_slot)) + 1]
        cuts = np.unique(changes[np.minimum(np.searchsorted(changes, cuts), changes.size - 1)])
    cuts = np.union1d(np.flatnonzero(np.diff(row_stratum)) + 1, cuts)
    piece_ptr = np.r_[cuts, n].astype(np.int64) if n else np.zeros(1, np.int64)
    return piece_ptr, np.ascontiguousarray(row_stratum[piece_ptr[:-1]], dtype=np.int64)


#: Pieces per task of the parallel passes over pieces (:func:`row_pieces`).
PIECE_CHUNK = 8


@njit(cache=True, nogil=True, error_model="numpy", inline="always")
def piece_tasks(piece_ptr):
    """The number of tasks of a parallel pass over the pieces ``piece_ptr`` (:data:`PIECE_CHUNK` each)."""
    return (piece_ptr.shape[0] - 1 + PIECE_CHUNK - 1) // PIECE_CHUNK


@njit(cache=True, nogil=True, error_model="numpy", inline="always")
def task_rows(piece_ptr, c):
    """The rows (lo, hi) of task ``c`` of a pass over the pieces ``piece_ptr`` (:func:`piece_tasks`)."""
    return piece_ptr[c * PIECE_CHUNK], piece_ptr[min(piece_ptr.shape[0] - 1, (c + 1) * PIECE_CHUNK)]


@njit(cache=True, nogil=True, error_model="numpy", parallel=True)
def stratum_shifts(eta, cw, piece_ptr, piece_stratum, shift):
    """shift[s] = the largest eta of a row of positive weight in stratum s (0 if none): the
    pieces' maxima in parallel, then per stratum.

    The likelihood is invariant to adding a constant to eta within a stratum, and so are
    the score and the information; the sums are not. With w = c exp(eta - shift) the
    largest weight of each stratum is its case weight: exp cannot overflow, and the
    denominators' squares in Q2 = d / D^2 stay in range. Unshifted, a stratum whose eta
    is ~350 (an uncentered covariate: a calendar year times 0.2) underflows Q2 to 0 and
    loses the information's second term: a wrong Hessian, hence wrong steps and standard
    errors, and an aliased covariate (constant within strata) that seems informative."""
    n_pieces = piece_stratum.shape[0]
    top = np.empty(n_pieces)
    for c in prange(piece_tasks(piece_ptr)):
        for i in range(c * PIECE_CHUNK, min(n_pieces, (c + 1) * PIECE_CHUNK)):
            t = -np.inf
            for r in range(piece_ptr[i], piece_ptr[i + 1]):
                if cw[r] > 0.0 and eta[r] > t:
                    t = eta[r]
            top[i] = t
    shift[:] = -np.inf
    for i in range(n_pieces):
        s = piece_stratum[i]
        if top[i] > shift[s]:
            shift[s] = top[i]
    for s in range(shift.shape[0]):
        if shift[s] == -np.inf:
            shift[s] = 0.0


@njit(cache=True, nogil=True, error_model="numpy", parallel=True)
def row_weights(eta, cw, piece_ptr, piece_stratum, shift, w):
    """w = c exp(eta - shift of the row's stratum) (:func:`stratum_shifts`), in parallel over
    the pieces of rows (each w_r depends on row r alone)."""
    n_pieces = piece_stratum.shape[0]
    for c in prange(piece_tasks(piece_ptr)):
        for i in range(c * PIECE_CHUNK, min(n_pieces, (c + 1) * PIECE_CHUNK)):
            sh = shift[piece_stratum[i]]
            for r in range(piece_ptr[i], piece_ptr[i + 1]):
                w[r] = cw[r] * math.exp(eta[r] - sh)


@njit(cache=True, nogil=True, error_model="numpy", parallel=True)
def new_state(eta, cw, w, ks, ke, event, has_start, piece_ptr, piece_stratum, shift, ex, en, ev):
    """The stratum shifts, w = c exp(eta - shift) (:func:`stratum_shifts`, :func:`row_weights`)
    and the slot sums ex (w by exit slot), en (w by entry slot; only with start times:
    without, every row enters at its stratum's first slot and en is never read), ev
    (events), added in row order: ex and ev over the pieces in parallel (a slot's rows lie in
    one piece, :func:`row_pieces`), en in one pass (entry slots are not in row order).

    Returns the log-likelihood's row part, sum_events c (eta - shift) (:func:`loglik_slots`
    adds the rest), read in the same pass: partial sums per task, added in task order."""
    stratum_shifts(eta, cw, piece_ptr, piece_stratum, shift)
    row_weights(eta, cw, piece_ptr, piece_stratum, shift, w)
    ex[:] = 0.0
    en[:] = 0.0
    ev[:] = 0.0
    if has_start:
        for r in range(eta.shape[0]):
            en[ks[r]] += w[r]
    n_pieces = piece_stratum.shape[0]
    part = np.zeros(piece_tasks(piece_ptr))
    for c in prange(piece_tasks(piece_ptr)):
        t = 0.0
        for i in range(c * PIECE_CHUNK, min(n_pieces, (c + 1) * PIECE_CHUNK)):
            sh = shift[piece_stratum[i]]
            for r in range(piece_ptr[i], piece_ptr[i + 1]):
                wr = w[r]
                ex[ke[r]] += wr
                if event[r]:
                    ev[ke[r] - 1] += wr
                    t += cw[r] * (eta[r] - sh)
        part[c] = t
    total = 0.0
    for c in range(part.shape[0]):
        total += part[c]
    return total


@njit(cache=True, nogil=True, error_model="numpy", inline="always")
def moved_weight(eta, w, r, x, delta, factor, indicator):
    """eta_r += delta x and w_r *= exp(delta x) (``factor`` = exp(delta), reused for an
    indicator column: one exp per move); returns the change of w_r. The risk-set families'
    moves add it to their slot sums; their log-likelihood recomputes w = c exp(eta - shift) exactly."""
    eta[r] += delta * x
    wo = w[r]
    wn = wo * (factor if indicator else math.exp(delta * x))
    w[r] = wn
    return wn - wo


@njit(cache=True, nogil=True, error_model="numpy")
def move_sparse(indptr, indices, values, value_shift, indicator, j, delta, eta, w, ksn, ken, evn, has_start, ex, en,
                ev):
    """beta_j += delta: eta, w and the slot sums at the non-zeros of column j
    (:func:`moved_weight`). Without start times the entry sums ``en`` are never read
    (every row enters at its stratum's first slot)."""
    ind = indicator[j]
    vs = value_shift[j]
    factor = math.exp(delta)
    end = indptr[j + 1]
    for i in range(indptr[j], end):
        if i + DISTANCE < end:
            prefetch(w, indices[i + DISTANCE])
            prefetch(eta, indices[i + DISTANCE])
        dw = moved_weight(eta, w, indices[i], values[i + vs], delta, factor, ind)
        ex[ken[i]] += dw
        if has_start:
            en[ksn[i]] += dw
        if evn[i]:
            ev[ken[i] - 1] += dw


@njit(cache=True, nogil=True, error_model="numpy")
def move_scan(indptr, indices, values, value_shift, j, delta, eta, w):
    """beta_j += delta for the scan formulation: eta and w only (w_r *= exp(delta x), as
    :func:`moved_weight`: w carries its stratum's shift, see :func:`stratum_shifts`)."""
    vs = value_shift[j]
    for i in range(indptr[j], indptr[j + 1]):
        r = indices[i]
        x = values[i + vs]
        eta[r] += delta * x
        w[r] *= math.exp(delta * x)


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
def scan_denominators(lo, hi, sx, sn, ex, en, has_start, D, ev, slot_d, slot_m, efron, sums):
    """D[p] = sum over the slots q > p of ex[q] - en[q], for p = hi-1 .. lo (descending),
    ``sx, sn``: the sums of ex, en over the slots of the stratum from ``hi`` on. Without
    start times en is never read (every row enters at its stratum's first slot). With
    ``sums``, returns the sums of Q1 and Q2 over the slots (in the same pass: independent
    chains of additions), else (0, 0)."""
    t1 = 0.0
    t2 = 0.0
    for p in range(hi - 1, lo - 1, -1):
        Dp = sx - sn if has_start else sx
        D[p] = Dp
        sx += ex[p]
        if has_start:
            sn += en[p]
        if sums:
            q, q2, r1, r2, tt = slot_terms(slot_d[p], Dp, slot_m[p], ev[p], efron)
            t1 += q
            t2 += q2
    return t1, t2


@njit(cache=True, nogil=True, error_model="numpy", inline="always")
def scan_aggregates(lo, hi, c1, c2, D, ev, slot_d, slot_m, efron, full, Q1, Q2, R1, R2, T2, A1c, A2c):
    """A1c[p] = c1 + the sum of Q1 over the slots lo .. p-1, A2c likewise with Q2 and c2
    (ascending); stores Q1, Q2 when ``full`` or ``efron`` and R1, R2, T2 when ``efron``
    (:func:`slot_terms`, whose Breslow case is written out: the loop of most fits)."""
    if not efron:  # Breslow: the tight loop of one division per event slot
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
def refresh_strata(strata, first, last, below, slot_ptr, ex, en, ev, slot_d, slot_m, has_start, efron, full, D, Q1,
                   Q2, R1, R2, T2, A1c, A2c):
    """The aggregates of each stratum ``strata[first:last]`` of fewer than ``below`` slots, by
    two serial scans per stratum (descending for D, ascending for A1c, A2c).

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


@njit(cache=True, nogil=True, error_model="numpy", parallel=True)
def refresh_blocked(lo, hi, ex, en, ev, slot_d, slot_m, has_start, efron, full, D, Q1, Q2, R1, R2, T2, A1c,
                    A2c):
    """The aggregates of a large stratum (slots lo .. hi-1) by blocked scans over fixed blocks
    of :data:`BLOCK` slots, the blocks in parallel:

    1. per block, the sums of ex, en; serially, their suffix sums (the carry of each block);
    2. per block, the descending scan of D from its carry and the block's sums of the slot
       terms Q1, Q2; serially, their prefix sums;
    3. per block, the ascending scan of A1c, A2c from its carry (the slot terms recomputed:
       a division costs less than storing and reloading them).

    The blocks and the order of every sum are fixed by the data, so the result does not
    depend on the number of threads (it differs from :func:`refresh_strata` by rounding).
    """
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
        carry[b, 2], carry[b, 3] = scan_denominators(a, z, carry[b, 0], carry[b, 1], ex, en, has_start, D, ev, slot_d,
                                                     slot_m, efron, True)
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
        scan_aggregates(a, z, carry[b, 2], carry[b, 3], D, ev, slot_d, slot_m, efron, full, Q1, Q2, R1, R2, T2,
                        A1c, A2c)


@njit(cache=True, nogil=True, error_model="numpy", parallel=True)
def refresh_small_parallel(strata, count, slot_ptr, ex, en, ev, slot_d, slot_m, has_start, efron, full, D, Q1,
                           Q2, R1, R2, T2, A1c, A2c):
    """:func:`refresh_strata` of the strata ``strata[:count]`` below :data:`BLOCKED_SLOTS`
    slots, in fixed chunks of :data:`STRATA_CHUNK` strata per task (strata are independent:
    the result is the serial one)."""
    for c in prange((count + STRATA_CHUNK - 1) // STRATA_CHUNK):
        refresh_strata(strata, c * STRATA_CHUNK, min(count, (c + 1) * STRATA_CHUNK), BLOCKED_SLOTS, slot_ptr, ex,
                       en, ev, slot_d, slot_m, has_start, efron, full, D, Q1, Q2, R1, R2, T2, A1c, A2c)


@njit(cache=True, nogil=True, error_model="numpy")
def refresh(strata, count, slot_ptr, ex, en, ev, slot_d, slot_m, has_start, efron, full, parallel, D, Q1, Q2, R1,
            R2, T2, A1c, A2c):
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
    small = 0
    for i in range(count):
        s = strata[i]
        lo = slot_ptr[s]
        hi = slot_ptr[s + 1]
        if parallel and hi - lo >= BLOCKED_SLOTS:
            refresh_blocked(lo, hi, ex, en, ev, slot_d, slot_m, has_start, efron, full, D, Q1, Q2, R1, R2, T2,
                            A1c, A2c)
        else:
            small += hi - lo
    if parallel and small >= PARALLEL_SLOTS:
        refresh_small_parallel(strata, count, slot_ptr, ex, en, ev, slot_d, slot_m, has_start, efron, full, D, Q1,
                               Q2, R1, R2, T2, A1c, A2c)
    elif small > 0:
        refresh_strata(strata, 0, count, BLOCKED_SLOTS if parallel else slot_ptr[-1] + 1, slot_ptr, ex, en, ev,
                       slot_d, slot_m, has_start, efron, full, D, Q1, Q2, R1, R2, T2, A1c, A2c)


@njit(cache=True, nogil=True, error_model="numpy")
def rows_denominators(rows, eta, cw, ks, ke, event, has_start, row_stratum, slot_ptr, shift, ex, en, ev, D):
    """:func:`new_state`'s slot sums and the denominators D (as :func:`refresh_strata`'s) of the
    rows ``rows`` alone (ascending; ``eta[q]`` is row ``rows[q]``'s linear predictor), every
    other row's weight taken as 0: a view's rows of positive weight where they are few (the
    held-out rows of a fold), in O(len(rows) + slots). The stratum shifts are the listed
    rows' largest eta. Returns the log-likelihood's row part (:func:`loglik_slots` adds the rest)."""
    n = rows.shape[0]
    shift[:] = -np.inf
    for q in range(n):
        if q + DISTANCE < n:  # scattered rows: their reads asked ahead (prefetch.py)
            prefetch(row_stratum, rows[q + DISTANCE])
        s = row_stratum[rows[q]]
        shift[s] = max(shift[s], eta[q])
    ex[:] = 0.0
    en[:] = 0.0
    ev[:] = 0.0
    t = 0.0
    for q in range(n):
        if q + DISTANCE < n:
            r = rows[q + DISTANCE]
            prefetch(cw, r)
            prefetch(ke, r)
            prefetch(event, r)
            if has_start:
                prefetch(ks, r)
        if q + DISTANCE // 2 < n:
            prefetch(ex, ke[rows[q + DISTANCE // 2]])
        r = rows[q]
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
    row part, sum_events c (eta - shift), is :func:`new_state`'s: the shifts of
    :func:`stratum_shifts` cancel, a stratum's event weight is its slots' d): partial sums
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


@njit(cache=True, nogil=True, error_model="numpy")
def coordinate_sorted(indptr, indices, values, value_shift, j, gx0, w, ksn, ken, evn,
                      A1c, A2c, R1, R2, T2, efron):
    """(g_j, h_j) in O(nnz_j) for right-censored rows (sorted order = descending exit slot).

    ``ksn, ken, evn``: entry slot (= the stratum's first slot), exit slot and status of
    the row of each stored non-zero (static, so the walk reads them sequentially).
    """
    out = np.empty(8)
    walk_chunk(indptr[j], indptr[j + 1], indptr[j + 1], gx0, indices, values, value_shift[j], w, ksn, ken, evn, A1c,
               A2c, R1, R2, T2, efron, out)
    return out[0], out[1] + out[2]


@njit(cache=True, nogil=True, error_model="numpy")
def coordinate_breakpoints(indptr, indices, values, value_shift, j, gx0, w, ksn, ken, evn, slot_stratum, codes,
                           A1c, A2c, R1, R2, T2, efron):
    """(g_j, h_j) in O(nnz_j) for (start, stop] rows, walking the column's sorted breakpoints."""
    a = indptr[j]
    b = indptr[j + 1]
    vs = value_shift[j]
    g = gx0
    h = 0.0
    for i in range(a, b):
        r = indices[i]
        x = values[i + vs]
        wx = w[r] * x
        a1 = A1c[ken[i]] - A1c[ksn[i]]
        g -= wx * a1
        h -= wx * x * a1
        if efron and evn[i]:
            rr = R1[ken[i] - 1]
            g += wx * rr
            h += wx * x * rr
    S = 0.0
    c = 0.0
    i = 2 * a
    end = 2 * b
    while i < end:
        code = codes[i]
        nz = code >> 1
        pos = ken[nz] if code & 1 else ksn[nz]
        # the run of breakpoints at this slot
        k = i
        e = 0.0
        while k < end:
            ck = codes[k]
            nzk = ck >> 1
            pk = ken[nzk] if ck & 1 else ksn[nzk]
            if pk != pos:
                break
            if efron and (ck & 1) and evn[nzk]:
                e += w[indices[nzk]] * values[nzk + vs]
            k += 1
        if e != 0.0:
            p = pos - 1
            S += e * (e * T2[p] - 2.0 * c * R2[p])
        for q in range(i, k):
            cq = codes[q]
            nzq = cq >> 1
            wx = w[indices[nzq]] * values[nzq + vs]
            if cq & 1:
                c -= wx
            else:
                c += wx
        if k < end:
            cn = codes[k]
            pn = ken[cn >> 1] if cn & 1 else ksn[cn >> 1]
            if slot_stratum[pn] == slot_stratum[pos]:
                S += c * c * (A2c[pn] - A2c[pos])
            else:
                c = 0.0
        i = k
    return g, h + S


@njit(cache=True, nogil=True, error_model="numpy")
def coordinate_scan(indptr, indices, values, value_shift, j, xd, w, cw, ks, ke, event, slot_d, slot_m, slot_last,
                    efron):
    """(g_j, h_j) by full O(N + n_slots) scans (the papers' formulation); independent of the
    cached aggregates. ``xd`` is a zero work vector of length N (restored on return)."""
    a = indptr[j]
    b = indptr[j + 1]
    vs = value_shift[j]
    for i in range(a, b):
        xd[indices[i]] = values[i + vs]
    ns = slot_d.shape[0]
    ex0 = np.zeros(ns)
    en0 = np.zeros(ns)
    ex1 = np.zeros(ns)
    en1 = np.zeros(ns)
    ex2 = np.zeros(ns)
    en2 = np.zeros(ns)
    E0 = np.zeros(ns)
    E1 = np.zeros(ns)
    E2 = np.zeros(ns)
    g = 0.0
    for r in range(xd.shape[0]):
        wr = w[r]
        x = xd[r]
        u = wr * x
        v = u * x
        k1 = ke[r]
        k0 = ks[r]
        ex0[k1] += wr
        en0[k0] += wr
        ex1[k1] += u
        en1[k0] += u
        ex2[k1] += v
        en2[k0] += v
        if event[r]:
            g += cw[r] * x
            E0[k1 - 1] += wr
            E1[k1 - 1] += u
            E2[k1 - 1] += v
    h = 0.0
    s0 = s1 = s2 = t0 = t1 = t2 = 0.0
    for p in range(ns - 1, -1, -1):
        if slot_last[p]:
            s0 = s1 = s2 = t0 = t1 = t2 = 0.0
        d = slot_d[p]
        if d > 0.0:
            D = s0 - t0
            N1 = s1 - t1
            N2 = s2 - t2
            if not efron or slot_m[p] <= 1.0:
                q = d / D
                g -= N1 * q
                h -= N2 * q - N1 * N1 * q / D
            else:
                m = slot_m[p]
                wbar = d / m
                for l in range(int(m)):
                    f = l / m
                    Z = D - f * E0[p]
                    Z1 = N1 - f * E1[p]
                    Z2 = N2 - f * E2[p]
                    g -= wbar * Z1 / Z
                    h -= wbar * (Z2 / Z - Z1 * Z1 / (Z * Z))
        s0 += ex0[p]
        s1 += ex1[p]
        s2 += ex2[p]
        t0 += en0[p]
        t1 += en1[p]
        t2 += en2[p]
    for i in range(a, b):
        xd[indices[i]] = 0.0
    return g, h


@njit(cache=True, nogil=True, error_model="numpy")
def walk_chunks(a, b, ksn, ken, size):
    """Boundaries of the chunks of a column's stored non-zeros a .. b-1 (right-censored rows,
    in slot order): one every ``size``, each moved forward to the end of its run (non-zeros
    of one stratum and exit slot), so that no slot sum is touched by two chunks. Fixed by
    the data, not by the threads."""
    n = (b - a + size - 1) // size
    out = np.empty(n + 1, np.int64)
    out[0] = a
    m = 1
    for c in range(1, n):
        k = max(a + c * size, out[m - 1] + 1)
        while k < b and ken[k] == ken[k - 1] and ksn[k] == ksn[k - 1]:
            k += 1
        if k < b:
            out[m] = k
            m += 1
    out[m] = b
    return out[:m + 1]


@njit(cache=True, nogil=True, error_model="numpy", inline="always")
def walk_chunk(lo, hi, b, g0, indices, values, vs, w, ksn, ken, evn, A1c, A2c, R1, R2, T2, efron, out):
    """:func:`coordinate_sorted`'s sums over the whole runs lo .. hi-1 of a column ending at
    ``b``, its running risk-set sum c started at 0 and g at ``g0``. ``out`` = (g, h, S, K0, K1, K2, c, reset):
    K0, K1, K2 are the sums of dA2, c dA2 and e R2 over the runs before the chunk's first
    change of stratum (``reset``), where a carry C of the chunks before adds
    C^2 K0 + 2 C (K1 - K2) to S (S's terms c^2 dA2 and -2 e c R2 with c -> C + c)."""
    g = g0
    h = 0.0
    S = 0.0
    c = 0.0
    e = 0.0
    k0 = 0.0
    k1 = 0.0
    k2 = 0.0
    first = True
    for i in range(lo, hi):
        if i + DISTANCE < hi:
            prefetch(w, indices[i + DISTANCE])
        x = values[i + vs]
        wx = w[indices[i]] * x
        kr = ken[i]
        a1 = A1c[kr] - A1c[ksn[i]]
        g -= wx * a1
        h -= wx * x * a1
        if efron and evn[i]:
            rr = R1[kr - 1]
            g += wx * rr
            h += wx * x * rr
            e += wx
        c += wx
        same_stratum = False
        same_run = False
        if i + 1 < b:
            same_stratum = ksn[i + 1] == ksn[i]
            same_run = same_stratum and ken[i + 1] == kr
        if not same_run:
            if e != 0.0:
                p = kr - 1
                S += e * (e * T2[p] - 2.0 * c * R2[p])
                if first:
                    k2 += e * R2[p]
                e = 0.0
            d2 = A2c[kr] - A2c[ken[i + 1] if same_stratum else ksn[i]]
            S += c * c * d2
            if first:
                k0 += d2
                k1 += c * d2
            if not same_stratum:
                c = 0.0
                first = False
    out[0] = g
    out[1] = h
    out[2] = S
    out[3] = k0
    out[4] = k1
    out[5] = k2
    out[6] = c
    out[7] = 0.0 if first else 1.0


@njit(cache=True, nogil=True, error_model="numpy", parallel=True)
def coordinate_chunked(indptr, indices, values, value_shift, j, gx0, w, ksn, ken, evn, A1c, A2c, R1, R2, T2, efron,
                       size, gradient_only):
    """(g_j, h_j) of :func:`coordinate_sorted` by chunks of :func:`walk_chunks` in parallel,
    then their carries added in chunk order (the same bits on 2 or 16 threads; equal to the
    serial walk up to rounding); ``gradient_only``: (g_j, 0) from the chunks' g alone, bit
    for bit the g of the full walk (the screen of a coordinate at its center)."""
    a = indptr[j]
    b = indptr[j + 1]
    vs = value_shift[j]
    bounds = walk_chunks(a, b, ksn, ken, size)
    n = bounds.shape[0] - 1
    part = np.empty((n, 8))
    for k in prange(n):
        if gradient_only:
            g = 0.0
            end = bounds[k + 1]
            for i in range(bounds[k], end):
                if i + DISTANCE < end:
                    prefetch(w, indices[i + DISTANCE])
                wx = w[indices[i]] * values[i + vs]
                g -= wx * (A1c[ken[i]] - A1c[ksn[i]])
                if efron and evn[i]:
                    g += wx * R1[ken[i] - 1]
            part[k, 0] = g
        else:
            walk_chunk(bounds[k], bounds[k + 1], b, 0.0, indices, values, vs, w, ksn, ken, evn, A1c, A2c, R1, R2, T2,
                       efron, part[k])
    g = gx0
    if gradient_only:
        for k in range(n):
            g += part[k, 0]
        return g, 0.0
    h = 0.0
    S = 0.0
    C = 0.0
    for k in range(n):
        g += part[k, 0]
        h += part[k, 1]
        S += part[k, 2] + C * C * part[k, 3] + 2.0 * C * (part[k, 4] - part[k, 5])
        C = part[k, 6] if part[k, 7] != 0.0 else C + part[k, 6]
    return g, h + S


@njit(cache=True, nogil=True, error_model="numpy", parallel=True)
def move_chunked(indptr, indices, values, value_shift, indicator, j, delta, eta, w, ksn, ken, evn, ex, ev, size):
    """:func:`move_sparse` of a right-censored column by chunks of :func:`walk_chunks` in
    parallel: every row and slot sum takes the same additions in the same order (no slot
    is shared by two chunks), so the result is the serial one, bit for bit."""
    ind = indicator[j]
    vs = value_shift[j]
    factor = math.exp(delta)
    bounds = walk_chunks(indptr[j], indptr[j + 1], ksn, ken, size)
    for k in prange(bounds.shape[0] - 1):
        end = bounds[k + 1]
        for i in range(bounds[k], end):
            if i + DISTANCE < end:
                prefetch(w, indices[i + DISTANCE])
                prefetch(eta, indices[i + DISTANCE])
            dw = moved_weight(eta, w, indices[i], values[i + vs], delta, factor, ind)
            ex[ken[i]] += dw
            if evn[i]:
                ev[ken[i] - 1] += dw


@njit(cache=True, nogil=True, error_model="numpy")
def gradient_column(indptr, indices, values, value_shift, j, gx0, w, ksn, ken, evn, A1c, R1, efron):
    """dl/dbeta_j alone in O(nnz_j) (the g of :func:`coordinate_sorted`, bit for bit)."""
    g = gx0
    vs = value_shift[j]
    end = indptr[j + 1]
    for i in range(indptr[j], end):
        if i + DISTANCE < end:
            prefetch(w, indices[i + DISTANCE])
        wx = w[indices[i]] * values[i + vs]
        g -= wx * (A1c[ken[i]] - A1c[ksn[i]])
        if efron and evn[i]:
            g += wx * R1[ken[i] - 1]
    return g


@njit(cache=True, nogil=True, error_model="numpy", parallel=True)
def row_hazard_terms(w, ks, ke, event, A1c, R1, efron, has_start, piece_ptr, out):
    """Per-row weight of the first Hessian term: w (A1c[ke] - A1c[ks]) - event w R1[ke-1]
    (without start times A1c[ks] is 0: ks is the stratum's first slot, not read); over the
    pieces of rows (:func:`row_pieces`) in parallel."""
    for c in prange(piece_tasks(piece_ptr)):
        lo, hi = task_rows(piece_ptr, c)
        for r in range(lo, hi):
            v = w[r] * (A1c[ke[r]] - A1c[ks[r]]) if has_start else w[r] * A1c[ke[r]]
            if efron and event[r]:
                v -= w[r] * R1[ke[r] - 1]
            out[r] = v


@njit(cache=True, nogil=True, error_model="numpy", parallel=True)
def hessian_vector_rows(u, w, v, ks, ke, event, slot_ptr, efron, has_start, piece_ptr, Q2, R2, T2, U1, E1u, C, z):
    """Row weights z with ``H_AA b = X_A' z`` for ``u = X_A b`` (the dense block of
    ``CoxDatafit.hessian`` applied to b, O(N + n_slots)); ``v`` from :func:`row_hazard_terms`.

    With U1_p / E1u_p the risk-set / event sums of w u at slot p (the numerators N1 / E1
    of the "column" u) and the slot terms c = Q2 U1 - R2 E1u, e = T2 E1u - R2 U1::

        z = -v u + w (C[ke] - C[ks]) + event w e[ke-1]      (C = exclusive cumsum of c)

    Without start times ``ks`` is not read: every row enters at its stratum's first slot,
    where C is 0, and no entry leaves a risk set (one pass over the rows less). The passes
    over rows run over the pieces of rows (:func:`row_pieces`) in parallel (the sums by
    exit slot too: a slot's rows lie in one piece), the scans over slots in one thread
    (blocked parallel scans, as :func:`refresh_blocked`'s, were no faster here).
    """
    U1[:] = 0.0
    E1u[:] = 0.0
    C[:] = 0.0
    if has_start:
        for r in range(u.shape[0]):  # C <- w u by entry slot
            C[ks[r]] += w[r] * u[r]
    for c in prange(piece_tasks(piece_ptr)):  # slot sums: U1 <- w u by exit slot, E1u <- events' by theirs
        lo, hi = task_rows(piece_ptr, c)
        for r in range(lo, hi):
            wu = w[r] * u[r]
            U1[ke[r]] += wu
            if efron and event[r]:
                E1u[ke[r] - 1] += wu
    for s in range(slot_ptr.shape[0] - 1):
        lo = slot_ptr[s]
        hi = slot_ptr[s + 1]
        sx = 0.0
        sn = 0.0
        for p in range(hi - 1, lo - 1, -1):  # at risk at p: exit slot > p, entry slot <= p
            ex = U1[p]
            en = C[p]
            U1[p] = sx - sn
            sx += ex
            sn += en
        c = 0.0
        for p in range(lo, hi):
            cp = Q2[p] * U1[p] - R2[p] * E1u[p]
            e = T2[p] * E1u[p] - R2[p] * U1[p]
            C[p] = c
            E1u[p] = e
            c += cp
    for c in prange(piece_tasks(piece_ptr)):
        lo, hi = task_rows(piece_ptr, c)
        for r in range(lo, hi):
            zr = -v[r] * u[r] + (w[r] * (C[ke[r]] - C[ks[r]]) if has_start else w[r] * C[ke[r]])
            if efron and event[r]:
                zr += w[r] * E1u[ke[r] - 1]
            z[r] = zr


@njit(cache=True, nogil=True, error_model="numpy", inline="always")
def accumulate_row(rowptr, rcol, rval, r, weight, acc, listed, touched, n_touched):
    """acc += weight x_r, a sparse accumulator whose touched positions are listed; returns
    the new count of listed positions."""
    for i in range(rowptr[r], rowptr[r + 1]):
        a = rcol[i]
        if not listed[a]:
            listed[a] = True
            touched[n_touched] = a
            n_touched += 1
        acc[a] += weight * rval[i]
    return n_touched


@njit(cache=True, nogil=True, error_model="numpy", inline="always")
def add_outer(H, scale, acc, touched, n_touched, S, touched_s, n_touched_s):
    """H[a, b] += scale acc[a] S[b] for the listed positions a of ``acc`` and b of ``S``."""
    for t in range(n_touched):
        a = touched[t]
        sa = scale * acc[a]
        for u in range(n_touched_s):
            b = touched_s[u]
            H[a, b] += sa * S[b]


@njit(cache=True, nogil=True, error_model="numpy", inline="always")
def add_inner(H, scale, acc, touched, n_touched):
    """H[a, b] += scale acc[a] acc[b] for the listed positions a, b."""
    for t in range(n_touched):
        a = touched[t]
        sa = scale * acc[a]
        for u in range(n_touched):
            b = touched[u]
            H[a, b] += sa * acc[b]


@njit(cache=True, nogil=True, error_model="numpy", inline="always")
def add_listed(dst, listed, touched, n_touched, scale, acc, acc_touched, n_acc):
    """dst += scale acc over the listed positions of ``acc``, listing them in ``dst``'s
    accumulator; returns its new count."""
    for u in range(n_acc):
        a = acc_touched[u]
        if not listed[a]:
            listed[a] = True
            touched[n_touched] = a
            n_touched += 1
        dst[a] += scale * acc[a]
    return n_touched


@njit(cache=True, nogil=True, error_model="numpy", inline="always")
def clear_listed(acc, listed, touched, n_touched):
    for t in range(n_touched):
        a = touched[t]
        acc[a] = 0.0
        listed[a] = False


@njit(cache=True, nogil=True, error_model="numpy", inline="always")
def add_row_square(H, rowptr, rcol, rval, r, scale):
    """H += scale x_r x_r' over the non-zeros of row r."""
    for p in range(rowptr[r], rowptr[r + 1]):
        sx = scale * rval[p]
        a = rcol[p]
        for q in range(rowptr[r], rowptr[r + 1]):
            H[a, rcol[q]] += sx * rval[q]


@njit(cache=True, nogil=True, error_model="numpy", inline="always")
def fold_halves(H):
    """H <- H + H' (the block walks accumulate half of each symmetric term)."""
    for a in range(H.shape[0]):
        H[a, a] *= 2.0
        for b in range(a + 1, H.shape[0]):
            h = H[a, b] + H[b, a]
            H[a, b] = h
            H[b, a] = h


@njit(cache=True, nogil=True, error_model="numpy")
def hessian_block(rowptr, rcol, rval, w, v, ks, ke, event, entry, slot_stratum, efron, A2c, R2, T2, H):
    """The dense Hessian block of ``CoxDatafit.hessian`` on the columns of the row-major
    ``(rowptr, rcol, rval)`` (:meth:`~riskset.core.columns.ColumnProducts.rows_of`) in O(nnz x |A| + N),
    never forming the risk-set sums N1 per slot and column (an n_slots x |A| matrix).

    H = -X' diag(v) X + sum_p [Q2 N1 N1' - R2 (N1 E1' + E1 N1') + T2 E1 E1']_p. Risk-set sums
    are suffix sums over *points* in (stratum, slot descending) order: every row is a point
    +w x at its exit slot ke, and one with a start time after its stratum's first slot is
    also a point -w x at its entry slot ks (``entry``: those rows in that order), so
    ``N1_p = sum of the points of slot > p``. For two points i, j of one stratum the slots p
    with both counted are those below min(slot_i, slot_j), hence, with A2c[k] = sum of Q2
    over the stratum's slots below k::

        sum_p Q2_p N1_p N1_p' = sum_{i, j} v_i v_j' A2c[min(slot_i, slot_j)]
                              = sum_groups A2c[k] (R S' + S R' - R R')

    over the groups of points of one slot k in walk order, R the group's sum, S the running
    sum (after the group: N1_{k-1}). The Efron terms of slot k - 1 pair S with E1_{k-1}, the
    group's event rows. Each group costs (its non-zero columns) x |A|.
    """
    m = H.shape[0]
    n = rowptr.shape[0] - 1
    n_entry = entry.shape[0]
    S = np.zeros(m)
    R = np.zeros(m)
    E = np.zeros(m)
    in_s = np.zeros(m, np.bool_)
    in_r = np.zeros(m, np.bool_)
    in_e = np.zeros(m, np.bool_)
    touched_s = np.empty(m, np.int64)
    touched_r = np.empty(m, np.int64)
    touched_e = np.empty(m, np.int64)
    ns = 0
    H[:, :] = 0.0
    i = 0
    t = 0
    stratum = -1
    while True:
        while i < n and rowptr[i] == rowptr[i + 1]:
            i += 1
        while t < n_entry and rowptr[entry[t]] == rowptr[entry[t] + 1]:
            t += 1
        if i == n and t == n_entry:
            break
        if t == n_entry:
            key = ke[i]
        elif i == n:
            key = ks[entry[t]]
        else:  # the next point in (stratum ascending, slot descending) order
            k1 = ke[i]
            k2 = ks[entry[t]]
            s1 = slot_stratum[k1]
            s2 = slot_stratum[k2]
            key = k1 if s1 < s2 or (s1 == s2 and k1 >= k2) else k2
        if slot_stratum[key] != stratum:  # S restarts (and stays sparse within small strata)
            stratum = slot_stratum[key]
            clear_listed(S, in_s, touched_s, ns)
            ns = 0
        nr = 0
        ne = 0
        while i < n and ke[i] == key:
            wr = w[i]
            nr = accumulate_row(rowptr, rcol, rval, i, wr, R, in_r, touched_r, nr)
            if efron and event[i]:
                ne = accumulate_row(rowptr, rcol, rval, i, wr, E, in_e, touched_e, ne)
            add_row_square(H, rowptr, rcol, rval, i, -0.5 * v[i])  # -X' diag(v) X, halved
            i += 1
        while t < n_entry and ks[entry[t]] == key:
            r = entry[t]
            nr = accumulate_row(rowptr, rcol, rval, r, -w[r], R, in_r, touched_r, nr)
            t += 1
        ns = add_listed(S, in_s, touched_s, ns, 1.0, R, touched_r, nr)
        c = A2c[key]  # halves of the terms of H + H' (R S' + S R' - R R' -> R S' - R R' / 2)
        if c != 0.0:
            add_outer(H, c, R, touched_r, nr, S, touched_s, ns)
            add_inner(H, -0.5 * c, R, touched_r, nr)
        if ne > 0:
            add_outer(H, -R2[key - 1], E, touched_e, ne, S, touched_s, ns)
            add_inner(H, 0.5 * T2[key - 1], E, touched_e, ne)
        clear_listed(R, in_r, touched_r, nr)
        clear_listed(E, in_e, touched_e, ne)
    fold_halves(H)


# -- the compiled family contract (riskset.core.sweep) ---------------------------------
# "sparse" formulation, O(nnz_j) per coordinate:
#   data  = (indptr, indices, values, value_shift, indicator, gx0, ksn, ken, evn, has_start, codes, slot_stratum,
#            slot_d, slot_m, slot_ptr, efron, strata_ptr, col_strata, parallel, walk_chunk)
#   state = (eta, w, ex, en, ev, D, Q1, Q2, R1, R2, T2, A1c, A2c, moved)
# ``codes`` (the column breakpoints) are read only with start times. ``col_strata[strata_ptr[j]
# : strata_ptr[j+1]]`` are the strata of column j's rows: a move of column j leaves only
# their aggregates stale. ``moved`` lists the columns moved since the last refresh
# (``moved[0]`` of them, then their indices; :data:`ALL_MOVED` when more than fit): the
# next refresh makes those strata current, and only those; ``parallel``: more than one
# kernel thread (see :func:`refresh`), when right-censored columns of more than two
# ``walk_chunk``s of non-zeros also walk and move by chunks in parallel (:func:`chunked`).

#: ``moved[0]`` once more columns moved than ``moved`` holds: the next refresh takes every stratum.
ALL_MOVED = -1

#: Columns ``moved`` holds (a sweep refreshes after each move: one is enough there).
MOVED_COLUMNS = 8


@njit(cache=True, nogil=True, error_model="numpy", inline="always")
def sparse_refresh(data, state):
    """The aggregates of the strata that moves left stale, from the slot sums (O(their slots))."""
    (indptr, indices, values, value_shift, indicator, gx0, ksn, ken, evn, has_start, codes, slot_stratum,
     slot_d, slot_m, slot_ptr, efron, strata_ptr, col_strata, parallel, walk_chunk) = data
    eta, w, ex, en, ev, D, Q1, Q2, R1, R2, T2, A1c, A2c, moved = state
    count = moved[0]
    if count == ALL_MOVED:
        n = slot_ptr.shape[0] - 1
        refresh(np.arange(n), n, slot_ptr, ex, en, ev, slot_d, slot_m, has_start, efron, False, parallel, D, Q1, Q2,
                R1, R2, T2, A1c, A2c)
    for c in range(1, count + 1):
        j = moved[c]
        a = strata_ptr[j]
        refresh(col_strata[a:], strata_ptr[j + 1] - a, slot_ptr, ex, en, ev, slot_d, slot_m, has_start, efron, False,
                parallel, D, Q1, Q2, R1, R2, T2, A1c, A2c)
    moved[0] = 0


@njit(cache=True, nogil=True, error_model="numpy", inline="always")
def chunked(data, j):
    """Whether column j walks and moves by chunks in parallel: more than one thread, no start
    times (whose entry sums two chunks could share), more than two chunks of non-zeros."""
    (indptr, indices, values, value_shift, indicator, gx0, ksn, ken, evn, has_start, codes, slot_stratum,
     slot_d, slot_m, slot_ptr, efron, strata_ptr, col_strata, parallel, walk_chunk) = data
    return parallel and not has_start and indptr[j + 1] - indptr[j] > 2 * walk_chunk


@njit(cache=True, nogil=True, error_model="numpy", inline="always")
def sparse_gradient(data, state, j):
    (indptr, indices, values, value_shift, indicator, gx0, ksn, ken, evn, has_start, codes, slot_stratum,
     slot_d, slot_m, slot_ptr, efron, strata_ptr, col_strata, parallel, walk_chunk) = data
    eta, w, ex, en, ev, D, Q1, Q2, R1, R2, T2, A1c, A2c, moved = state
    if chunked(data, j):
        return coordinate_chunked(indptr, indices, values, value_shift, j, gx0[j], w, ksn, ken, evn, A1c, A2c, R1, R2,
                                  T2, efron, walk_chunk, True)[0]
    return gradient_column(indptr, indices, values, value_shift, j, gx0[j], w, ksn, ken, evn, A1c, R1, efron)


@njit(cache=True, nogil=True, error_model="numpy", inline="always")
def sparse_terms(data, state, j):
    """The walk over the column's non-zeros in slot order: sorted rows, or breakpoints with start times."""
    (indptr, indices, values, value_shift, indicator, gx0, ksn, ken, evn, has_start, codes, slot_stratum,
     slot_d, slot_m, slot_ptr, efron, strata_ptr, col_strata, parallel, walk_chunk) = data
    eta, w, ex, en, ev, D, Q1, Q2, R1, R2, T2, A1c, A2c, moved = state
    if has_start:
        return coordinate_breakpoints(indptr, indices, values, value_shift, j, gx0[j], w, ksn, ken, evn, slot_stratum,
                                      codes, A1c, A2c, R1, R2, T2, efron)
    if chunked(data, j):
        return coordinate_chunked(indptr, indices, values, value_shift, j, gx0[j], w, ksn, ken, evn, A1c, A2c, R1, R2,
                                  T2, efron, walk_chunk, False)
    return coordinate_sorted(indptr, indices, values, value_shift, j, gx0[j], w, ksn, ken, evn, A1c, A2c, R1, R2, T2,
                             efron)


@njit(cache=True, nogil=True, error_model="numpy", inline="always")
def sparse_move(data, state, j, delta):
    (indptr, indices, values, value_shift, indicator, gx0, ksn, ken, evn, has_start, codes, slot_stratum,
     slot_d, slot_m, slot_ptr, efron, strata_ptr, col_strata, parallel, walk_chunk) = data
    eta, w, ex, en, ev, D, Q1, Q2, R1, R2, T2, A1c, A2c, moved = state
    if chunked(data, j):
        move_chunked(indptr, indices, values, value_shift, indicator, j, delta, eta, w, ksn, ken, evn, ex, ev,
                     walk_chunk)
    else:
        move_sparse(indptr, indices, values, value_shift, indicator, j, delta, eta, w, ksn, ken, evn, has_start, ex,
                    en, ev)
    count = moved[0]
    if count != ALL_MOVED:
        if count + 1 < moved.shape[0]:
            moved[count + 1] = j
            moved[0] = count + 1
        else:
            moved[0] = ALL_MOVED


SPARSE_KERNELS = compile_family("cox_sparse", sparse_refresh, sparse_gradient, sparse_terms, sparse_move)


# "scan" formulation, O(N + n_slots) per coordinate (the scan costs the same with or
# without h_j, so no separate screen):
#   data  = (indptr, indices, values, value_shift, cw, ks, ke, event, slot_d, slot_m, slot_last, efron)
#   state = (eta, w, xd)

@njit(cache=True, nogil=True, error_model="numpy", inline="always")
def scan_refresh(data, state):
    """Nothing to refresh: every scan starts from w alone."""


@njit(cache=True, nogil=True, error_model="numpy", inline="always")
def scan_terms(data, state, j):
    indptr, indices, values, value_shift, cw, ks, ke, event, slot_d, slot_m, slot_last, efron = data
    eta, w, xd = state
    return coordinate_scan(indptr, indices, values, value_shift, j, xd, w, cw, ks, ke, event, slot_d, slot_m, slot_last,
                           efron)


@njit(cache=True, nogil=True, error_model="numpy", inline="always")
def scan_move(data, state, j, delta):
    indptr, indices, values, value_shift, cw, ks, ke, event, slot_d, slot_m, slot_last, efron = data
    eta, w, xd = state
    move_scan(indptr, indices, values, value_shift, j, delta, eta, w)


SCAN_KERNELS = compile_family("cox_scan", scan_refresh, None, scan_terms, scan_move)
