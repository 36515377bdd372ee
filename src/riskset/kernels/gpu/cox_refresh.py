"""Cox on the device, the exact state and the per-slot aggregates: Breslow and Efron ties,
strata, (start, stop] rows.

Mirrors the O(nnz_j) formulation of :mod:`riskset.kernels.cpu.cox` (notation and
formulas in its docstring): rows sorted by (stratum, time descending), per row an entry
slot ``ks`` and an exit slot ``ke`` (at risk at event slot p iff ``ks <= p < ke``), and
per-slot sums that a move (:mod:`.cox_sweep`) keeps current with atomic adds in O(nnz_j):
``ex`` (w by exit slot), ``en`` (w by entry slot; (start, stop] data only) and ``ev`` (w of
the event rows by event slot; Efron only). The per-slot aggregates are refreshed on the
device by block-level segmented scans over the slots (:mod:`.blocks`, O(n_slots / threads)):

1. ``Sx``, ``Sn`` = reverse inclusive segmented scans of ``ex``, ``en`` (segments =
   strata; ``Sx`` in the array ``S``, ``Sn`` in ``A1c`` until step 3), so the risk-set
   denominator of slot p is ``D_p = Sx[p + 1] - Sn[p + 1]`` (``Sx[p + 1]`` without start
   times), as the CPU's ``sx - sn``;
2. per event slot ``Q1 = d / D``, ``Q2 = Q1 / D``; with Efron ties (m > 1 tied event
   rows) ``Q1, Q2, R1, R2, T2`` are the CPU refresh's sums over ``Z_l = D - (l/m) E``
   (a loop over the ties: O(number of event rows) in all);
3. forward inclusive segmented scans of Q1, Q2 (one pass) shifted by one slot give the
   exclusive cumulative sums ``A1c``, ``A2c``.

:func:`refresh_block` runs the steps in the block of one replicate, :func:`refresh_grid`
over the whole grid for a single fit; :func:`sync_kernel` and :func:`sync_grid_kernel`
recompute the whole state from eta (stratum shifts, w, the slot sums, the aggregates and
the log partial likelihood).
"""
from __future__ import annotations

import math

from numba import cuda, float64, int32

from .blocks import block_sum2, segscan2_slots, segscan_slots
from .device import MAX_THREADS
from .gridscan import grid_place, grid_segscan2, grid_sum2, grid_sync
from .risk_sets import max_shifts, reset_shifts


@cuda.jit(device=True)
def slot_terms(r, p, ex_sum, en_sum, ev, slot_d, slot_m, slot_last, Q1, Q2, R1, R2, T2, has_start, efron, want_ll):
    """Step 2 at slot p of replicate r from the reverse scans (``ex_sum`` of ex, ``en_sum`` of
    en): Q1, Q2 (and Efron's R1, R2, T2); returns ``-sum_l wbar log Z_l`` if ``want_ll``."""
    d = slot_d[r, p]
    q = 0.0
    q2 = 0.0
    r1 = 0.0
    r2 = 0.0
    t2 = 0.0
    part = 0.0
    if d > 0.0 and slot_last[p] == 0:
        if has_start:
            Dp = ex_sum[r, p + 1] - en_sum[r, p + 1]
        else:
            Dp = ex_sum[r, p + 1]
        m = 1.0
        if efron:
            m = slot_m[r, p]
        if m <= 1.0:
            inv = 1.0 / Dp
            q = d * inv
            q2 = q * inv
            if want_ll:
                part -= d * math.log(Dp)
        else:
            wbar = d / m
            E = ev[r, p]
            for l in range(int(m)):
                f = l / m
                Z = Dp - f * E
                zi = 1.0 / Z
                q += zi
                q2 += zi * zi
                r1 += f * zi
                r2 += f * zi * zi
                t2 += f * f * zi * zi
                if want_ll:
                    part -= wbar * math.log(Z)
            q *= wbar
            q2 *= wbar
            r1 *= wbar
            r2 *= wbar
            t2 *= wbar
    Q1[r, p] = q
    Q2[r, p] = q2
    if efron:
        R1[r, p] = r1
        R2[r, p] = r2
        T2[r, p] = t2
    return part


@cuda.jit(device=True)
def refresh_block(r, ns, ex, en, ev, slot_d, slot_m, slot_first, slot_last, S, Q1, Q2, A1c, A2c, R1, R2, T2,
                  has_start, efron, want_ll, sv, sw, sf, tid, nt):
    """Per-slot aggregates of replicate r from the slot sums (whole block).

    Returns this thread's share of ``-sum_p wbar sum_l log Z_l`` when ``want_ll`` (else 0).
    With start times ``A1c`` holds the reverse scan of ``en`` until step 3 overwrites it.
    """
    segscan_slots(ex, S, r, ns, slot_last, True, sv, sf, tid, nt)
    if has_start:
        segscan_slots(en, A1c, r, ns, slot_last, True, sv, sf, tid, nt)
    part = 0.0
    for p in range(tid, ns, nt):
        part += slot_terms(r, p, S, A1c, ev, slot_d, slot_m, slot_last, Q1, Q2, R1, R2, T2, has_start, efron,
                           want_ll)
    cuda.syncthreads()
    segscan2_slots(Q1, Q2, r, ns, slot_first, sv, sw, sf, tid, nt)
    for p in range(tid, ns, nt):
        if slot_first[p] != 0:
            A1c[r, p] = 0.0
            A2c[r, p] = 0.0
        else:
            A1c[r, p] = Q1[r, p - 1]
            A2c[r, p] = Q2[r, p - 1]
    cuda.syncthreads()
    return part


@cuda.jit(device=True)
def zero_slot_sums(r, ex, en, ev, has_start, efron, tid, nt):
    for p in range(tid, ex.shape[1], nt):
        ex[r, p] = 0.0
        if has_start:
            en[r, p] = 0.0
        if efron:
            ev[r, p] = 0.0



@cuda.jit(device=True)
def add_rows(r, eta, cw, w, ks, ke, event, row_stratum, shift, ex, en, ev, has_start, efron, tid, nt):
    """w = c exp(eta - shift of the row's stratum) at this thread's rows, added to the
    (zeroed) slot sums; returns this thread's share of ``sum_events c (eta - shift)``."""
    part = 0.0
    for i in range(tid, eta.shape[1], nt):
        c = float(cw[r, i])
        e = eta[r, i] - shift[r, row_stratum[i]]
        wi = c * math.exp(e)
        w[r, i] = wi
        cuda.atomic.add(ex, (r, ke[i]), wi)  # exact (float64) even when w is stored in float32
        if has_start:
            cuda.atomic.add(en, (r, ks[i]), wi)
        if event[i] != 0:
            part += c * e
            if efron:
                cuda.atomic.add(ev, (r, ke[i] - 1), wi)
    return part


@cuda.jit
def sync_kernel(has_start, efron, eta, cw, w, ks, ke, event, row_stratum, shift, ex, en, ev, slot_d, slot_m,
                slot_first, slot_last, S, Q1, Q2, A1c, A2c, R1, R2, T2, dirty, llout):
    """Exact state of replicate blockIdx.x from eta: the stratum shifts, w = c exp(eta - shift),
    the slot sums, the aggregates and the log partial likelihood (written to llout[r])."""
    sv = cuda.shared.array(MAX_THREADS, float64)
    sf = cuda.shared.array(MAX_THREADS, int32)
    sb = cuda.shared.array(MAX_THREADS, float64)
    r = cuda.blockIdx.x
    tid = cuda.threadIdx.x
    nt = cuda.blockDim.x
    zero_slot_sums(r, ex, en, ev, has_start, efron, tid, nt)
    reset_shifts(r, shift, -math.inf, tid, nt)
    cuda.syncthreads()
    max_shifts(r, eta, cw, row_stratum, shift, tid, nt)
    cuda.syncthreads()
    reset_shifts(r, shift, 0.0, tid, nt)
    cuda.syncthreads()
    part = add_rows(r, eta, cw, w, ks, ke, event, row_stratum, shift, ex, en, ev, has_start, efron, tid, nt)
    cuda.syncthreads()
    part += refresh_block(r, ex.shape[1], ex, en, ev, slot_d, slot_m, slot_first, slot_last, S, Q1, Q2, A1c, A2c,
                          R1, R2, T2, has_start, efron, True, sv, sb, sf, tid, nt)
    block_sum2(sv, sb, part, 0.0, tid, nt)
    if tid == 0:
        llout[r] = sv[0]
        dirty[r] = 0


# -- the cooperative single fit (R = 1) over the whole grid: the same steps through grid scans --
@cuda.jit(device=True)
def refresh_grid(ns, ex, en, ev, slot_d, slot_m, slot_first, slot_last, S, Q1, Q2, A1c, A2c, R1, R2, T2,
                 has_start, efron, want_ll, gpart, sv, sw, sf):
    """:func:`refresh_block` of the single fit over the whole grid (called by every thread);
    returns this thread's share of the log-likelihood term if ``want_ll``."""
    tid, nt = grid_place()
    # steps 1 and 3 as in refresh_block: the reverse scans of ex (and en, into A1c), the
    # exclusive forward scans of Q1, Q2 straight into A1c, A2c
    grid_segscan2(ex, en, S, A1c, 0, 0, ns, has_start, slot_last, 0, 1, True, False, gpart, 0, sv, sw, sf)
    grid_sync()
    part = 0.0
    for p in range(tid, ns, nt):
        part += slot_terms(0, p, S, A1c, ev, slot_d, slot_m, slot_last, Q1, Q2, R1, R2, T2, has_start, efron,
                           want_ll)
    grid_sync()
    grid_segscan2(Q1, Q2, A1c, A2c, 0, 0, ns, True, slot_first, 0, 1, False, True, gpart, 1, sv, sw, sf)
    grid_sync()
    return part


@cuda.jit
def sync_grid_kernel(has_start, efron, eta, cw, w, ks, ke, event, row_stratum, shift, ex, en, ev, slot_d, slot_m,
                     slot_first, slot_last, S, Q1, Q2, A1c, A2c, R1, R2, T2, dirty, llout, gpart, partial):
    """:func:`sync_kernel` of the single fit over the whole grid (cooperative launch)."""
    sv = cuda.shared.array(MAX_THREADS, float64)
    sf = cuda.shared.array(MAX_THREADS, int32)
    sb = cuda.shared.array(MAX_THREADS, float64)
    tid, nt = grid_place()
    zero_slot_sums(0, ex, en, ev, has_start, efron, tid, nt)
    reset_shifts(0, shift, -math.inf, tid, nt)
    grid_sync()
    max_shifts(0, eta, cw, row_stratum, shift, tid, nt)
    grid_sync()
    reset_shifts(0, shift, 0.0, tid, nt)
    grid_sync()
    part = add_rows(0, eta, cw, w, ks, ke, event, row_stratum, shift, ex, en, ev, has_start, efron, tid, nt)
    grid_sync()
    part += refresh_grid(ex.shape[1], ex, en, ev, slot_d, slot_m, slot_first, slot_last, S, Q1, Q2, A1c, A2c, R1,
                         R2, T2, has_start, efron, True, gpart, sv, sb, sf)
    total, _ = grid_sum2(part, 0.0, partial, 0, sv, sb)
    if tid == 0:
        llout[0] = total
        dirty[0] = 0
