"""Cox on the device, the coordinate steps: the family's device functions of the persistent
sweep (:mod:`.sweep`) and the compiled sweeps (one block per replicate; the whole grid for
a single fit of right-censored rows).

Over the per-slot aggregates of :mod:`.cox_refresh` (notation there and in
:mod:`riskset.kernels.cpu.cox`), for coordinate j the block computes, over the column's
non-zeros in chunks of ``blockDim`` (one thread per non-zero),
``g = gx0 - sum wx (A1c[ke] - A1c[ks]) + sum_events wx R1[ke - 1]`` and the first Hessian
term likewise with ``wx x``. The squared term ``sum_p (Q2 N1^2 - 2 R2 N1 E1 + T2 E1^2)`` is a walk in descending slot
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
the scans of :mod:`.cox_refresh` when stale) of the persistent sweep (:mod:`.sweep`), which screens a
coordinate at its prior center by ``gradient`` before computing its terms.
"""
from __future__ import annotations

import math

from numba import cuda

from .blocks import carried_segscan
from .cox_refresh import refresh_block, refresh_grid
from .gridscan import grid_segscan2, thread_run
from .risk_sets import move_weight
from .sweep import compile_gradient, compile_sweep


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
