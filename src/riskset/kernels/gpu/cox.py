"""Cox proportional hazards on the device: Breslow and Efron ties, strata, (start, stop] rows.

Mirrors the O(nnz_j) formulation of :mod:`riskset.kernels.cpu.cox` (notation and
formulas in its docstring): rows sorted by (stratum, time descending), per row an entry
slot ``ks`` and an exit slot ``ke`` (at risk at event slot p iff ``ks <= p < ke``), and
per-slot sums that ``move`` keeps current with atomic adds in O(nnz_j): ``ex`` (w by
exit slot), ``en`` (w by entry slot; (start, stop] data only) and ``ev`` (w of the event
rows by event slot; Efron only). The per-slot aggregates are refreshed on the device
by block-level segmented scans over the slots (:mod:`.blocks`, O(n_slots / threads)):

1. ``Sx``, ``Sn`` = reverse inclusive segmented scans of ``ex``, ``en`` (segments =
   strata; ``Sx`` in the array ``S``, ``Sn`` in ``A1c`` until step 3), so the risk-set
   denominator of slot p is ``D_p = Sx[p + 1] - Sn[p + 1]`` (``Sx[p + 1]`` without start
   times), as the CPU's ``sx - sn``;
2. per event slot ``Q1 = d / D``, ``Q2 = Q1 / D``; with Efron ties (m > 1 tied event
   rows) ``Q1, Q2, R1, R2, T2`` are the CPU refresh's sums over ``Z_l = D - (l/m) E``
   (a loop over the ties: O(number of event rows) in all);
3. forward inclusive segmented scans of Q1, Q2 (one pass) shifted by one slot give the
   exclusive cumulative sums ``A1c``, ``A2c``.

For coordinate j the block computes, over the column's non-zeros in chunks of
``blockDim`` (one thread per non-zero), ``g = gx0 - sum wx (A1c[ke] - A1c[ks])
+ sum_events wx R1[ke - 1]`` and the first Hessian term likewise with ``wx x``. The
squared term ``sum_p (Q2 N1^2 - 2 R2 N1 E1 + T2 E1^2)`` is a walk in descending slot
order in which the risk-set sum N1 of ``w x`` is a per-stratum segmented block scan
(a carry between chunks):

* right-censored rows: the column's non-zeros in stored order (descending exit slot);
  at the end of a run of equal exit slot ``kr`` the scan value ``c`` is N1 on the slots
  ``[lo, kr)`` (``lo`` = the next exit slot of the stratum, else its first slot), which
  adds ``c^2 (A2c[kr] - A2c[lo])``;
* (start, stop] rows: the column's entry and exit breakpoints (static; the CPU's
  ``column_breakpoints`` per column reversed), ``+wx`` at an exit and ``-wx`` at an
  entry; at the end of the run of breakpoints at slot ``pos``, ``c`` is N1 on
  ``[pn, pos)`` (``pn`` = the next breakpoint's slot, in the same stratum), which adds
  ``c^2 (A2c[pos] - A2c[pn])``. The CPU walks the same breakpoints upwards; the sums
  are the same.

With Efron ties the event-row sum E1 of a run is a second segmented scan (heads at the
run starts) and the run's end adds ``e (e T2 - 2 c R2)`` at its event slot ``pos - 1``,
where ``c`` is N1 (the CPU's cross term). These are the family's device functions
(``gradient``: the first pass alone; ``terms``: the pass with the squared term;
``move``: the non-zeros and the slot sums, marking the aggregates stale; ``refresh``:
the scans above when stale) of the persistent sweep (:mod:`.sweep`), which screens a
coordinate at its prior center by ``gradient`` before computing its terms.
"""
from __future__ import annotations

import math
import os

import numpy as np
from numba import cuda, float64, int32

from riskset.data.risksets import column_breakpoints

from .base import DeviceDatafit
from .blocks import block_sum2, carried_segscan, segscan2_slots, segscan_slots
from .columns import scatter_block
from .device import MAX_THREADS, device_copy, grid_blocks, row_blocks, simulator_enabled
from .gridscan import grid_place, grid_segscan2, grid_sum2, grid_sync, thread_run
from .sweep import compile_gradient, compile_sweep


@cuda.jit(device=True)
def move_weight(r, row, x, step, factor, ind, eta, w):
    """beta_j += step at one non-zero x of replicate r: eta += step x and w *= exp(step x)
    (``factor`` = exp(step) for an indicator column, one exp per move as on the CPU);
    returns the change of the stored w."""
    eta[r, row] += step * x
    wo = float(w[r, row])
    if ind:
        w[r, row] = wo * factor
    else:
        w[r, row] = wo * math.exp(step * x)
    return float(w[r, row]) - wo


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
def reset_shifts(r, shift, fill, tid, nt):
    """shift[r, s] = fill where it is -inf (``fill`` -inf: every s), at this thread's strata."""
    for s in range(tid, shift.shape[1], nt):
        if fill == -math.inf or shift[r, s] == -math.inf:
            shift[r, s] = fill


@cuda.jit(device=True)
def max_shifts(r, eta, cw, row_stratum, shift, tid, nt):
    """shift[r, s] = max(shift[r, s], eta of this thread's rows of positive weight in stratum s):
    one atomic max per run of the thread's rows in one stratum (rows are sorted by stratum).
    Between :func:`reset_shifts` to -inf and to 0 (for strata without such a row), the CPU's
    :func:`~riskset.kernels.cpu.cox.stratum_shifts`."""
    cur = -1
    top = -math.inf
    for i in range(tid, eta.shape[1], nt):
        if cw[r, i] > 0:
            s = row_stratum[i]
            e = eta[r, i]
            if s != cur:
                if cur >= 0:
                    cuda.atomic.max(shift, (r, cur), top)
                cur = s
                top = e
            elif e > top:
                top = e
    if cur >= 0:
        cuda.atomic.max(shift, (r, cur), top)


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


@cuda.jit(device=True)
def walk_breakpoints(r, j, indptr, indices, values, w, evn, bcode, bpos, bhead, A2c, R2, T2, efron, sv, sf, tid,
                     nt):
    """This thread's share of the squared Hessian term of column j for (start, stop] rows."""
    lo = 2 * indptr[j]
    hi = 2 * indptr[j + 1]
    h = 0.0
    carry = 0.0
    ecarry = 0.0
    for c0 in range(lo, hi, nt):
        k = c0 + tid
        v = 0.0
        e = 0.0
        fs = 0
        fr = 0
        pos = 0
        if k < hi:
            code = bcode[k]
            nz = code >> 1
            pos = bpos[k]
            wx = float(w[r, indices[nz]]) * float(values[nz])
            if code & 1:
                v = wx
                if efron and evn[nz] != 0:
                    e = wx
            else:
                v = -wx
            fs = bhead[k]
            if k == lo:
                fr = 1
            elif bpos[k - 1] != pos:
                fr = 1
        csum, carry = carried_segscan(sv, sf, v, fs, carry, tid, nt)
        esum = 0.0
        if efron:
            esum, ecarry = carried_segscan(sv, sf, e, fr, ecarry, tid, nt)
        if k < hi:
            if k + 1 == hi or bpos[k + 1] != pos:  # the end of the run of breakpoints at slot pos
                if esum != 0.0:
                    p = pos - 1
                    h += esum * (esum * T2[r, p] - 2.0 * csum * R2[r, p])
                if k + 1 < hi:
                    if bhead[k + 1] == 0:
                        h += csum * csum * (A2c[r, pos] - A2c[r, bpos[k + 1]])
    return h


@cuda.jit(device=True)
def refresh(data, state, r, tid, nt, sv, sb, sf):
    """The per-slot aggregates of replicate r, if a move made them stale."""
    (has_start, efron, indptr, indices, values, indicator, ksn, ken, evn, bcode, bpos, bhead, gx0, slot_d, slot_m,
     slot_first, slot_last, nzf) = data
    eta, w, ex, en, ev, S, Q1, Q2, A1c, A2c, R1, R2, T2, dirty, gpart, tmp = state
    if dirty[r] != 0:
        refresh_block(r, ex.shape[1], ex, en, ev, slot_d, slot_m, slot_first, slot_last, S, Q1, Q2, A1c, A2c, R1,
                      R2, T2, has_start, efron, False, sv, sb, sf, tid, nt)
        if tid == 0:  # after the syncs of refresh_block: every thread has read the flag
            dirty[r] = 0


@cuda.jit(device=True)
def first_terms(r, i, g, h, indices, values, ksn, ken, evn, w, A1c, R1, efron):
    """(g, h) with non-zero i's share of the gradient and of the first Hessian term added,
    its ``wx``, and Efron's event-row ``wx`` (0 off the event rows)."""
    x = float(values[i])
    wx = float(w[r, indices[i]]) * x
    kr = ken[i]
    a1 = A1c[r, kr] - A1c[r, ksn[i]]
    g -= wx * a1
    h -= wx * x * a1
    ewx = 0.0
    if efron and evn[i] != 0:
        rr = R1[r, kr - 1]
        g += wx * rr
        h += wx * x * rr
        ewx = wx
    return g, h, wx, ewx


@cuda.jit(device=True)
def run_end_terms(r, i, b, h, csum, esum, ksn, ken, A2c, R2, T2):
    """h with the squared term of right-censored rows added where non-zeros i < b of a column
    end a run of equal exit slot kr (``csum``: the scan N1 on the slots [lo, kr); ``esum``:
    Efron's scan of the run's event rows, 0 without)."""
    kr = ken[i]
    k0 = ksn[i]
    same_stratum = False
    same_run = False
    if i + 1 < b:
        same_stratum = ksn[i + 1] == k0
        same_run = same_stratum and ken[i + 1] == kr
    if not same_run:
        if esum != 0.0:
            p = kr - 1
            h += esum * (esum * T2[r, p] - 2.0 * csum * R2[r, p])
        lo = k0
        if same_stratum:
            lo = ken[i + 1]
        h += csum * csum * (A2c[r, kr] - A2c[r, lo])
    return h


@cuda.jit(device=True)
def column_pass(data, state, r, j, tid, nt, sv, sf, square):
    """This thread's share of g_j (with the static ``gx0`` in thread 0's) and of the first
    Hessian term, over the column's non-zeros in chunks of ``nt``; with ``square`` and
    right-censored rows also of the squared term (the segmented scans of the walk)."""
    (has_start, efron, indptr, indices, values, indicator, ksn, ken, evn, bcode, bpos, bhead, gx0, slot_d, slot_m,
     slot_first, slot_last, nzf) = data
    eta, w, ex, en, ev, S, Q1, Q2, A1c, A2c, R1, R2, T2, dirty, gpart, tmp = state
    a = indptr[j]
    b = indptr[j + 1]
    g = gx0[r, j] if tid == 0 else 0.0
    h = 0.0
    carry = 0.0
    ecarry = 0.0
    for c0 in range(a, b, nt):
        i = c0 + tid
        wx = 0.0
        ewx = 0.0
        f = 0
        fr = 0
        kr = 0
        k0 = 0
        if i < b:
            g, h, wx, ewx = first_terms(r, i, g, h, indices, values, ksn, ken, evn, w, A1c, R1, efron)
            kr = ken[i]
            k0 = ksn[i]
            if i == a:
                f = 1
                fr = 1
            elif ksn[i - 1] != k0:
                f = 1
                fr = 1
            elif ken[i - 1] != kr:
                fr = 1
        if has_start or not square:
            continue  # (start, stop]: the squared term is the breakpoint walk
        # right-censored: the squared term, walking the non-zeros (descending exit slot)
        csum, carry = carried_segscan(sv, sf, wx, f, carry, tid, nt)
        esum = 0.0
        if efron:
            esum, ecarry = carried_segscan(sv, sf, ewx, fr, ecarry, tid, nt)
        if i < b:
            h = run_end_terms(r, i, b, h, csum, esum, ksn, ken, A2c, R2, T2)
    return g, h


@cuda.jit(device=True)
def gradient(data, state, r, j, tid, nt, sv, sb, sf):
    """This thread's share of g_j."""
    return column_pass(data, state, r, j, tid, nt, sv, sf, False)[0]


@cuda.jit(device=True)
def terms(data, state, r, j, tid, nt, sv, sb, sf):
    """This thread's share of (g_j, h_j): the column pass, and for (start, stop] rows the walk
    over the column's breakpoints."""
    (has_start, efron, indptr, indices, values, indicator, ksn, ken, evn, bcode, bpos, bhead, gx0, slot_d, slot_m,
     slot_first, slot_last, nzf) = data
    eta, w, ex, en, ev, S, Q1, Q2, A1c, A2c, R1, R2, T2, dirty, gpart, tmp = state
    g, h = column_pass(data, state, r, j, tid, nt, sv, sf, True)
    if has_start:
        h += walk_breakpoints(r, j, indptr, indices, values, w, evn, bcode, bpos, bhead, A2c, R2, T2, efron, sv, sf,
                              tid, nt)
    return g, h


@cuda.jit(device=True)
def move(data, state, r, j, step, tid, nt):
    """beta_j += step at this thread's share of the column: eta, w and the slot sums (atomic
    adds); the aggregates become stale."""
    (has_start, efron, indptr, indices, values, indicator, ksn, ken, evn, bcode, bpos, bhead, gx0, slot_d, slot_m,
     slot_first, slot_last, nzf) = data
    eta, w, ex, en, ev, S, Q1, Q2, A1c, A2c, R1, R2, T2, dirty, gpart, tmp = state
    factor = math.exp(step)
    ind = indicator[j] != 0
    for i in range(indptr[j] + tid, indptr[j + 1], nt):
        dw = move_weight(r, indices[i], float(values[i]), step, factor, ind, eta, w)
        kx = ken[i]
        cuda.atomic.add(ex, (r, kx), dw)
        if has_start:
            cuda.atomic.add(en, (r, ksn[i]), dw)
        if efron and evn[i] != 0:
            cuda.atomic.add(ev, (r, kx - 1), dw)
    if tid == 0:
        dirty[r] = 1


sweep_kernel = compile_sweep(refresh, gradient, terms, move)
#: the full gradient, one block per (coefficient, replicate)
gradient_kernel = compile_gradient(gradient, terms)


@cuda.jit(device=True)
def refresh_whole(data, state, r, tid, nt, sv, sb, sf):
    """:func:`refresh` of the single fit over the whole grid."""
    (has_start, efron, indptr, indices, values, indicator, ksn, ken, evn, bcode, bpos, bhead, gx0, slot_d, slot_m,
     slot_first, slot_last, nzf) = data
    eta, w, ex, en, ev, S, Q1, Q2, A1c, A2c, R1, R2, T2, dirty, gpart, tmp = state
    if dirty[0] != 0:
        refresh_grid(ex.shape[1], ex, en, ev, slot_d, slot_m, slot_first, slot_last, S, Q1, Q2, A1c, A2c, R1, R2,
                     T2, has_start, efron, False, gpart, sv, sb, sf)
        if tid == 0:  # after the grid syncs of refresh_grid: every thread has read the flag
            dirty[0] = 0


#: ``nzf`` flags of a column's non-zeros: the first of its stratum, the first of its run of equal exit slot
STRATUM_HEAD, RUN_HEAD = 1, 2


@cuda.jit(device=True)
def terms_whole(data, state, r, j, tid, nt, sv, sb, sf):
    """:func:`terms` of the single fit (right-censored rows) over the whole grid: each thread
    takes one contiguous run of the column's non-zeros (:func:`~.gridscan.thread_run`),
    computes their first-pass terms and ``wx`` (``tmp[0]``; Efron's event-row ``wx`` in
    ``tmp[1]``), the grid scans them in place (segments: strata; Efron: runs of equal exit
    slot), and the thread adds the squared term at the run ends among its non-zeros."""
    (has_start, efron, indptr, indices, values, indicator, ksn, ken, evn, bcode, bpos, bhead, gx0, slot_d, slot_m,
     slot_first, slot_last, nzf) = data
    eta, w, ex, en, ev, S, Q1, Q2, A1c, A2c, R1, R2, T2, dirty, gpart, tmp = state
    a = indptr[j]
    b = indptr[j + 1]
    lo, hi = thread_run(b - a)
    g = gx0[0, j] if tid == 0 else 0.0
    h = 0.0
    for q in range(lo, hi):
        g, h, wx, ewx = first_terms(0, a + q, g, h, indices, values, ksn, ken, evn, w, A1c, R1, efron)
        tmp[0, q] = wx
        if efron:
            tmp[1, q] = ewx
    grid_segscan2(tmp, tmp, tmp, tmp, 0, 0, b - a, False, nzf, a, STRATUM_HEAD, False, False, gpart, 2, sv, sb, sf)
    if efron:
        grid_segscan2(tmp, tmp, tmp, tmp, 1, 1, b - a, False, nzf, a, RUN_HEAD, False, False, gpart, 3, sv, sb, sf)
    for q in range(lo, hi):
        esum = tmp[1, q] if efron else 0.0
        h = run_end_terms(0, a + q, b, h, tmp[0, q], esum, ksn, ken, A2c, R2, T2)
    return g, h


#: the single fit (R = 1, right-censored rows) over the whole grid (cooperative launch)
sweep_grid_kernel = compile_sweep(refresh_whole, gradient, terms_whole, move, grid=True)


@cuda.jit
def nz_flags_kernel(indptr, ksn, ken, nzf):
    """``nzf`` of every non-zero, one block per column (strided)."""
    for j in range(cuda.blockIdx.x, indptr.shape[0] - 1, cuda.gridDim.x):
        a = indptr[j]
        for i in range(a + cuda.threadIdx.x, indptr[j + 1], cuda.blockDim.x):
            head = i == a
            if not head:
                head = ksn[i - 1] != ksn[i]
            run = head
            if not run:
                run = ken[i - 1] != ken[i]
            nzf[i] = STRATUM_HEAD * head + RUN_HEAD * run


# -- the Newton polish of the single fit on the device: O(nnz_A + N + n_slots) per product --
@cuda.jit(device=True)
def row_hazard(i, efron, w, ks, ke, event, A1c, R1):
    """v_i of :func:`riskset.kernels.cpu.cox.row_hazard_terms` (R = 1): g = gx0 - X' v and the
    first Hessian term is -X' diag(v) X."""
    wi = float(w[0, i])
    v = wi * (A1c[0, ke[i]] - A1c[0, ks[i]])
    if efron and event[i] != 0:
        v -= wi * R1[0, ke[i] - 1]
    return v


@cuda.jit
def row_hazards_kernel(efron, w, ks, ke, event, A1c, R1, v):
    for i in range(cuda.grid(1), w.shape[1], cuda.gridsize(1)):
        v[0, i] = row_hazard(i, efron, w, ks, ke, event, A1c, R1)


@cuda.jit
def hessian_rows_kernel(has_start, efron, indptr, indices, values, cols, b, ks, ke, event, w, A1c, R1, Q2, R2, T2,
                        slot_first, slot_last, u, U1, Cn, E1u, z, gpart):
    """Row weights z with ``H_AA b = X_A' z`` for the single fit over the whole grid
    (cooperative launch): :func:`riskset.kernels.cpu.cox.hessian_vector_rows` step by step,
    u = X_A b by atomic adds, its slot sums by atomic adds, the risk-set sums U1 (and the
    entries after each slot) by exclusive reverse grid scans, the slot terms c (and Efron's
    e), the exclusive forward grid scan of c, then per row
    ``z = -v u + w (C[ke] - C[ks]) + event w e[ke-1]``."""
    sv = cuda.shared.array(MAX_THREADS, float64)
    sf = cuda.shared.array(MAX_THREADS, int32)
    sb = cuda.shared.array(MAX_THREADS, float64)
    tid, nt = grid_place()
    n = w.shape[1]
    ns = U1.shape[1]
    for i in range(tid, n, nt):
        u[0, i] = 0.0
    for p in range(tid, ns, nt):
        U1[0, p] = 0.0
        Cn[0, p] = 0.0
        E1u[0, p] = 0.0
    grid_sync()
    scatter_block(indptr, indices, values, cols, b, u, cuda.blockIdx.x, cuda.gridDim.x, cuda.threadIdx.x,
                  cuda.blockDim.x)
    grid_sync()
    for i in range(tid, n, nt):
        wu = float(w[0, i]) * u[0, i]
        cuda.atomic.add(U1, (0, ke[i]), wu)
        if has_start:
            cuda.atomic.add(Cn, (0, ks[i]), wu)
        if efron and event[i] != 0:
            cuda.atomic.add(E1u, (0, ke[i] - 1), wu)
    grid_sync()
    grid_segscan2(U1, Cn, U1, Cn, 0, 0, ns, has_start, slot_last, 0, 1, True, True, gpart, 0, sv, sb, sf)
    grid_sync()
    for p in range(tid, ns, nt):
        at_risk = U1[0, p]  # sum of w u over the rows at risk at slot p
        if has_start:
            at_risk -= Cn[0, p]
        c = Q2[0, p] * at_risk
        if efron:
            e = E1u[0, p]
            c -= R2[0, p] * e
            E1u[0, p] = T2[0, p] * e - R2[0, p] * at_risk
        Cn[0, p] = c
    grid_sync()
    grid_segscan2(Cn, Cn, Cn, Cn, 0, 0, ns, False, slot_first, 0, 1, False, True, gpart, 1, sv, sb, sf)
    grid_sync()
    for i in range(tid, n, nt):
        wi = float(w[0, i])
        zi = wi * (Cn[0, ke[i]] - Cn[0, ks[i]]) - row_hazard(i, efron, w, ks, ke, event, A1c, R1) * u[0, i]
        if efron and event[i] != 0:
            zi += wi * E1u[0, ke[i] - 1]
        z[0, i] = zi


class RiskSetDeviceDatafit(DeviceDatafit):
    """What the risk-set families (Cox, Fine-Gray) share on the device: one block per
    replicate (the slot scans of a refresh run within it) or, for a single fit, the whole
    grid with its scratch arrays (:meth:`_allocate_grid_scratch`); replicate weights given in
    Dataset row order, as for the CPU datafit's ``reweighted``; :meth:`_cpu_reweight` is the
    CPU view of one weighting."""

    def __init__(self, cpu, dtype="float64", weights=None):
        super().__init__(cpu, dtype, weights)
        # On a device use the largest block (fewer chunks per scan), falling back to 256
        # threads if the kernel needs too many registers for 1024.
        if not simulator_enabled() and not os.environ.get("RISKSET_GPU_THREADS"):
            self.nt = 1024

    def _launch(self, kernel, *args):
        try:
            kernel[self.n_rep, self.nt](*args)
        except Exception:
            if simulator_enabled() or self.nt <= 256:
                raise
            self.nt = 256  # e.g. CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES at 1024 threads
            kernel[self.n_rep, self.nt](*args)

    def _allocate_grid_scratch(self, state):
        """``gpart`` and ``tmp`` of the whole-grid kernels: the grid scans' block totals (four
        slots) and a column's scanned values (two rows); placeholders where the fit has no grid."""
        if self._grid():
            nnz = int(np.diff(self.cpu.indptr).max(initial=1))
            state.d["gpart"] = cuda.device_array((4, 3, grid_blocks(self.nt)), dtype=np.float64)
            state.d["tmp"] = cuda.device_array((2, max(nnz, 1)), dtype=np.float64)
        else:
            state.d["gpart"] = cuda.device_array((1, 1, 1), dtype=np.float64)
            state.d["tmp"] = cuda.device_array((1, 1), dtype=np.float64)

    def _loglik_all(self, state):
        self._refresh(state)  # exact recomputation from eta, as the CPU datafit does
        return state.d["ll"].copy_to_host()

    def _cpu_reweight(self, w):
        """The CPU datafit with case weights ``w`` (Dataset row order), sharing X and the sort."""
        return self.cpu.reweighted(w)


class CoxDeviceDatafit(RiskSetDeviceDatafit):
    """:class:`~riskset.models.cox.CoxDatafit` (Breslow or Efron ties, strata, (start, stop]
    rows, hence step-function time-varying coefficients) on the device; each replicate
    has its own slot event counts ``d`` and (Efron) tie counts ``m``.
    """

    family_name = "cox"
    sweep_kernel = staticmethod(sweep_kernel)  # a dispatcher binds like a function: no self
    gradient_kernel = staticmethod(gradient_kernel)
    sweep_grid_kernel = staticmethod(sweep_grid_kernel)
    device_quadratic = True
    state_fields = ("eta", "w", "ex", "en", "ev", "S", "Q1", "Q2", "A1c", "A2c", "R1", "R2", "T2", "dirty", "gpart",
                    "tmp")

    def __init__(self, cpu, dtype="float64", weights=None):
        super().__init__(cpu, dtype, weights)
        self.has_start = bool(cpu.has_start)
        # Efron terms wherever the data have tied events (a reweighting never adds ties; in a
        # replicate whose slots all have m <= 1 they are exactly the Breslow terms)
        self.efron = bool(cpu.efron)

    def _make_static(self):
        cpu, rs = self.cpu, self.cpu.rs
        ks, ke = np.asarray(cpu.ks, np.int64), np.asarray(cpu.ke, np.int64)
        idx = cpu.indices
        stype = np.int32 if rs.n_slots < 2**31 - 1 else np.int64
        ev = np.asarray(cpu.event, np.uint8)
        one8 = np.zeros(1, np.uint8)
        static = dict(indptr=device_copy(cpu.indptr.astype(np.int64)),
                      indices=device_copy(idx.astype(self.itype)),
                      values=device_copy(cpu.design.full_values(self.dtype)),
                      indicator=device_copy(np.asarray(cpu.indicator, np.uint8)),
                      ksn=device_copy(ks[idx].astype(stype)),
                      ken=device_copy(ke[idx].astype(stype)),
                      evn=device_copy(ev[idx] if self.efron else one8),
                      ke=device_copy(ke),
                      ks=device_copy(ks),
                      event=device_copy(ev),
                      row_stratum=device_copy(np.asarray(rs.row_stratum, np.int32)),
                      slot_first=device_copy(np.asarray(rs.slot_first, np.uint8)),
                      slot_last=device_copy(np.asarray(rs.slot_last, np.uint8)))
        bcode, bpos, bhead = self._breakpoints(stype)
        static.update(bcode=device_copy(bcode), bpos=device_copy(bpos), bhead=device_copy(bhead))
        return static

    def _grid(self) -> bool:
        return super()._grid() and not self.has_start  # the breakpoint walk has no grid version yet

    def _nz_flags(self):
        """``nzf`` of every non-zero (:data:`STRATUM_HEAD`, :data:`RUN_HEAD` within its column),
        on the device, for the whole-grid sweep."""
        s = self._dev_static()
        if "nzf" not in s:
            s["nzf"] = cuda.device_array(max(len(self.cpu.indices), 1), dtype=np.uint8)
            nz_flags_kernel[max(1, min(self.n_coef, 4096)), self.helper_threads](s["indptr"], s["ksn"], s["ken"],
                                                                                 s["nzf"])
        return s["nzf"]

    def _breakpoints(self, stype):
        """(start, stop] rows: per column its entry and exit breakpoints in descending slot order
        (the CPU's ``column_breakpoints`` per column reversed): the code ``2 e + exit`` of
        non-zero e, its slot, and whether it starts a stratum within the column. Placeholders
        of length 1 for right-censored data."""
        if not self.has_start:
            return np.zeros(1, np.int32), np.zeros(1, stype), np.zeros(1, np.uint8)
        cpu = self.cpu
        indptr = np.asarray(cpu.indptr, np.int64)
        codes = cpu.codes
        if codes is None:  # formulation='scan' builds none
            codes = column_breakpoints(indptr, cpu.indices, cpu.ks, cpu.ke)
        nb = 2 * (indptr[1:] - indptr[:-1])
        lo = np.repeat(2 * indptr[:-1], nb)
        k = np.arange(lo.shape[0], dtype=np.int64)
        bcode = np.ascontiguousarray(codes[lo + (lo + np.repeat(nb, nb) - 1 - k)])  # reverse within each column
        rows = np.asarray(cpu.indices, np.int64)[bcode >> 1]
        exits = (bcode & 1) != 0
        bpos = np.where(exits, np.asarray(cpu.ke, np.int64)[rows], np.asarray(cpu.ks, np.int64)[rows])
        stratum = np.asarray(cpu.rs.slot_stratum, np.int64)[bpos]
        bhead = np.ones(bpos.shape[0], np.uint8)
        bhead[1:] = stratum[1:] != stratum[:-1]
        bhead[2 * indptr[:-1][nb > 0]] = 1  # the first breakpoint of every column
        return bcode, bpos.astype(stype), bhead

    def _sorted_weights(self):
        """(R, N) case weights in sorted (datafit) row order."""
        if self.weights is None:
            return np.asarray(self.cpu.cw, np.float64)[None, :]
        return self.weights[:, self.cpu.data_rows]

    def _rep(self):
        """Weight-dependent device arrays: case weights, slot event counts (and tie counts), gx0.

        As the CPU's ``reweighted``: ``d`` = weighted events per slot, ``m`` = event rows
        with positive weight per slot."""
        if self._per_rep is None:
            cpu = self.cpu
            cw = self._sorted_weights()
            ev = np.asarray(cpu.event, bool)
            ns = cpu.rs.n_slots
            eslot = np.asarray(cpu.ke, np.int64)[ev] - 1
            slot_d = np.stack([np.bincount(eslot, weights=c[ev], minlength=ns) for c in cw])
            if self.efron:
                slot_m = np.stack([np.bincount(eslot, weights=(c[ev] > 0), minlength=ns) for c in cw])
            else:
                slot_m = np.zeros((1, 1))
            gx0 = np.stack([cpu.products.dot(np.arange(cpu.n_coef), c * ev) for c in cw])
            self._per_rep = dict(cw=device_copy(cw, self.dtype),
                                 slot_d=device_copy(slot_d, np.float64),
                                 slot_m=device_copy(slot_m, np.float64),
                                 gx0=device_copy(gx0, np.float64), gx0_host=gx0)
        return self._per_rep

    def _allocate(self, state):
        R, n, ns = self.n_rep, self.n_rows, self.cpu.rs.n_slots
        state.d["w"] = cuda.device_array((R, n), dtype=self.dtype)
        names = ["ex", "S", "Q1", "Q2", "A1c", "A2c"]
        names += ["en"] if self.has_start else []
        names += ["ev", "R1", "R2", "T2"] if self.efron else []
        for name in names:
            state.d[name] = cuda.device_array((R, ns), dtype=np.float64)
        unused = cuda.device_array((1, 1), dtype=np.float64)  # never read without its feature
        for name in ("en", "ev", "R1", "R2", "T2"):
            state.d.setdefault(name, unused)
        state.d["shift"] = cuda.device_array((R, self.cpu.n_strata), dtype=np.float64)  # sync_kernel
        state.d["dirty"] = device_copy(np.ones(R, np.int32))
        state.d["ll"] = cuda.device_array(R, dtype=np.float64)
        self._allocate_grid_scratch(state)

    def local_quadratic(self, state, columns):
        """:meth:`riskset.models.cox.CoxDatafit.local_quadratic` on the device for a single fit
        over the whole grid in float64 (the host's from a rebuilt CPU state otherwise): g and
        the diagonal scale by one block per column, each product ``H_AA b`` by the cooperative
        :func:`hessian_rows_kernel` and one block per column."""
        if not self._polish_on_device():
            return super().local_quadratic(state, columns)
        from riskset.core.interface import LocalQuadratic

        s, d = self._dev_static(), state.d
        self._refresh(state)  # exact per-slot Q2, R2, T2 and cumulative A1c from eta
        cols_h = np.ascontiguousarray(columns, dtype=np.int64)
        cols, m, n, ns = device_copy(cols_h), cols_h.shape[0], self.n_rows, self.cpu.rs.n_slots
        rows = cuda.device_array((1, n), dtype=np.float64)
        threads = self.helper_threads
        row_hazards_kernel[row_blocks(n, threads, 4096), threads](int(self.efron), d["w"], s["ks"], s["ke"], s["event"],
                                                                  d["A1c"], d["R1"], rows)
        dots = cuda.device_array((m, 2), dtype=np.float64)
        xv, x2v = self._column_dots(cols, rows, dots).T
        u, z = cuda.device_array((1, n), dtype=np.float64), rows  # the hazards are not read again
        U1, Cn, E1u = (cuda.device_array((1, ns), dtype=np.float64) for _ in range(3))

        def hessian_times(b):
            if not self._launch_grid(hessian_rows_kernel, int(self.has_start), int(self.efron), s["indptr"],
                                     s["indices"], s["values"], cols, device_copy(b, np.float64), s["ks"], s["ke"],
                                     s["event"], d["w"], d["A1c"], d["R1"], d["Q2"], d["R2"], d["T2"], s["slot_first"],
                                     s["slot_last"], u, U1, Cn, E1u, z, d["gpart"]):
                raise RuntimeError("the cooperative Hessian-vector kernel could not be launched")
            return self._column_dots(cols, z, dots)[:, 0]

        return LocalQuadratic(self._rep()["gx0_host"][0, cols_h] - xv, x2v, hessian_times)

    def _slot_args(self, p, d):
        s = self._dev_static()
        return (d["ex"], d["en"], d["ev"], p["slot_d"], p["slot_m"], s["slot_first"], s["slot_last"], d["S"],
                d["Q1"], d["Q2"], d["A1c"], d["A2c"], d["R1"], d["R2"], d["T2"], d["dirty"])

    def _refresh(self, state):
        s, p, d = self._dev_static(), self._rep(), state.d
        args = (int(self.has_start), int(self.efron), d["eta"], p["cw"], d["w"], s["ks"], s["ke"], s["event"],
                s["row_stratum"], d["shift"], *self._slot_args(p, d), d["ll"])
        if not self._launch_grid(sync_grid_kernel, *args, d["gpart"], self._grid_partial()):
            self._launch(sync_kernel, *args)

    def kernel_data(self):
        s, p = self._dev_static(), self._rep()
        return (int(self.has_start), int(self.efron), s["indptr"], s["indices"], s["values"], s["indicator"],
                s["ksn"], s["ken"], s["evn"], s["bcode"], s["bpos"], s["bhead"], p["gx0"], p["slot_d"], p["slot_m"],
                s["slot_first"], s["slot_last"], self._nz_flags() if self._grid() else s["slot_first"])
