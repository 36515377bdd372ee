"""Fine-Gray competing risks (cmprsk::crr weights, Breslow ties) on the device.

Mirrors the O(nnz_j) formulation of :mod:`riskset.kernels.cpu.fine_gray` (notation
there): rows sorted by time descending, event slots ``k = 0 .. K-1`` (distinct times
of the event of interest, descending), row slot ``s_r`` in ``0..K``, ``cinv_r =
1 / G(T_r-)`` for competing rows (0 otherwise), ``w = c exp(eta - shift)`` (the largest eta
of a row of positive weight, per replicate). Everything that
depends on the case weights (``c``, ``cinv``, ``Gev = G(te_k-)``, the event counts
``d``, ``gx0``) is per replicate: the censoring Kaplan-Meier G is recomputed for every
row weighting, exactly as the CPU ``reweighted`` does.

The per-slot sums ``W[s] = sum_{s_r = s} w`` and ``Wc[s] = sum_{s_r = s} w cinv`` are
kept current by ``move`` (atomic adds, O(nnz_j)); a refresh rebuilds the aggregates
with unsegmented block scans over the K + 1 slots (:mod:`.blocks`):

1. ``D_k = sum_{s <= k} W[s] + Gev_k sum_{s > k} Wc[s]`` (a forward scan of W and a
   reverse scan of Wc);
2. per slot ``d/D, d Gev/D, d/D^2, d Gev/D^2, d Gev^2/D^2``, reverse-scanned in place
   (two at a time) to ``A1, SB, A2, A2G, A2GG`` (sums over ``k >= s``; ``B1[s] = SB[0] -
   SB[s]``).

For coordinate j the block makes two passes over the column's non-zeros (one thread
per non-zero, chunks of ``blockDim``): the first (``gradient``) gives ``g = gx0 - sum
wx [A1[s] + cinv B1[s]]``, the first Hessian term and ``E = sum_comp wx cinv``; the
persistent sweep (:mod:`.sweep`) stops there for a coordinate at its prior center with
``|g| <= l1`` (it cannot move, as in the CPU sweep). The second pass (in ``terms``)
scans ``c = cumsum(wx)`` and ``cumsum(wx cinv)`` together (one two-value block scan;
``e = E -`` the latter) and adds, at the end of each run of equal slots, ``c^2 dA2 +
2 c e dA2G + e^2 dA2GG``, plus the head term ``E^2 (A2GG[0] - A2GG[s_first])``
(docs/math.md section 3). ``move`` updates the non-zeros and the slot sums and marks the
aggregates stale until the next coordinate needs them (exactly when the CPU kernel
refreshes).
"""
from __future__ import annotations

import math

import numpy as np
from numba import cuda, float64, int32

from .blocks import block_sum2, carried_segscan2, scan2_slots, segscan_slots
from .risk_sets import RiskSetDeviceDatafit, max_shifts, move_weight, reset_shifts
from .device import MAX_THREADS, device_copy
from .gridscan import grid_place, grid_segscan2, grid_sum2, grid_sync, thread_run
from .sweep import compile_gradient, compile_sweep


@cuda.jit(device=True)
def slot_terms(r, k, K, slot_d, Gev, D, C, A1, SB, A2, A2G, A2GG):
    """Step 2 at slot k of replicate r: D_k (from the forward scan of W in ``D`` and the reverse
    scan of Wc in ``C``) and the per-slot terms, before their suffix sums."""
    q = 0.0
    qg = 0.0
    q2 = 0.0
    q2g = 0.0
    q2gg = 0.0
    if k < K:
        g = Gev[r, k]
        Dk = D[r, k] + g * C[r, k + 1]  # + Gev_k sum_{s > k} Wc[s]: competing rows of later slots
        D[r, k] = Dk
        d = slot_d[r, k]
        if d > 0.0:
            inv = 1.0 / Dk
            q = d * inv
            qg = q * g
            q2 = q * inv
            q2g = q2 * g
            q2gg = q2g * g
    A1[r, k] = q
    SB[r, k] = qg
    A2[r, k] = q2
    A2G[r, k] = q2g
    A2GG[r, k] = q2gg


@cuda.jit(device=True)
def refresh_block(r, K, W, Wc, slot_d, Gev, no_heads, D, C, A1, SB, A2, A2G, A2GG, sv, sw, sf, tid, nt):
    """Denominators D and the suffix aggregates of replicate r from the slot sums (whole block).

    ``no_heads`` is an all-zero head array of length K + 1 (the scans are unsegmented).
    """
    n = K + 1
    segscan_slots(W, D, r, n, no_heads, False, sv, sf, tid, nt)  # D[k] = sum_{s <= k} W[s]
    segscan_slots(Wc, C, r, n, no_heads, True, sv, sf, tid, nt)  # C[k] = sum_{s >= k} Wc[s]
    for k in range(tid, n, nt):
        slot_terms(r, k, K, slot_d, Gev, D, C, A1, SB, A2, A2G, A2GG)
    cuda.syncthreads()
    # suffix sums over k >= s (zero at s = K), two at a time
    scan2_slots(A1, SB, r, n, no_heads, True, sv, sw, sf, tid, nt)
    scan2_slots(A2, A2G, r, n, no_heads, True, sv, sw, sf, tid, nt)
    segscan_slots(A2GG, A2GG, r, n, no_heads, True, sv, sf, tid, nt)


@cuda.jit(device=True)
def add_rows(r, eta, cw, cinv, w, slot, event, shift, W, Wc, tid, nt):
    """w = c exp(eta - shift) at this thread's rows, added to the (zeroed) slot sums W, Wc; returns
    this thread's share of ``sum_events c (eta - shift)``."""
    part = 0.0
    for i in range(tid, eta.shape[1], nt):
        c = float(cw[r, i])
        e = eta[r, i] - shift[r, 0]
        wi = c * math.exp(e)
        w[r, i] = wi
        cuda.atomic.add(W, (r, slot[i]), wi)  # float64 sums even when w is stored in float32
        ig = float(cinv[r, i])
        if ig != 0.0:
            cuda.atomic.add(Wc, (r, slot[i]), wi * ig)
        if event[i] != 0:
            part += c * e
    return part


@cuda.jit(device=True)
def log_denominators(r, slot_d, D, tid, nt):
    """This thread's share of ``-sum_k d_k log D_k``."""
    part = 0.0
    for k in range(tid, slot_d.shape[1], nt):
        d = slot_d[r, k]
        if d > 0.0:
            part -= d * math.log(D[r, k])
    return part


@cuda.jit
def sync_kernel(eta, cw, cinv, w, slot, event, one_stratum, shift, W, Wc, slot_d, Gev, no_heads, D, C, A1, SB, A2, A2G,
                A2GG, dirty, llout):
    """Exact state of replicate blockIdx.x from eta: its shift (the largest eta of a row of positive
    weight, as the CPU's ``sync``: ``one_stratum`` is zeros per row), w = c exp(eta - shift), W, Wc,
    the aggregates and the log pseudo-likelihood ``sum_events c (eta - shift) - sum_k d_k log D_k``
    (written to llout[r])."""
    sv = cuda.shared.array(MAX_THREADS, float64)
    sf = cuda.shared.array(MAX_THREADS, int32)
    sb = cuda.shared.array(MAX_THREADS, float64)
    r = cuda.blockIdx.x
    tid = cuda.threadIdx.x
    nt = cuda.blockDim.x
    K = slot_d.shape[1]
    for s in range(tid, K + 1, nt):
        W[r, s] = 0.0
        Wc[r, s] = 0.0
    reset_shifts(r, shift, -math.inf, tid, nt)
    cuda.syncthreads()
    max_shifts(r, eta, cw, one_stratum, shift, tid, nt)
    cuda.syncthreads()
    reset_shifts(r, shift, 0.0, tid, nt)
    cuda.syncthreads()
    part = add_rows(r, eta, cw, cinv, w, slot, event, shift, W, Wc, tid, nt)
    cuda.syncthreads()
    refresh_block(r, K, W, Wc, slot_d, Gev, no_heads, D, C, A1, SB, A2, A2G, A2GG, sv, sb, sf, tid, nt)
    part += log_denominators(r, slot_d, D, tid, nt)
    block_sum2(sv, sb, part, 0.0, tid, nt)
    if tid == 0:
        llout[r] = sv[0]
        dirty[r] = 0


# -- the cooperative single fit (R = 1) over the whole grid: the same steps through grid scans --
@cuda.jit(device=True)
def refresh_grid(K, W, Wc, slot_d, Gev, no_heads, D, C, A1, SB, A2, A2G, A2GG, gpart, sv, sw, sf):
    """:func:`refresh_block` of the single fit over the whole grid (called by every thread)."""
    tid, nt = grid_place()
    n = K + 1
    grid_segscan2(W, W, D, D, 0, 0, n, False, no_heads, 0, 0, False, False, gpart, 0, sv, sw, sf)
    grid_segscan2(Wc, Wc, C, C, 0, 0, n, False, no_heads, 0, 0, True, False, gpart, 1, sv, sw, sf)
    grid_sync()
    for k in range(tid, n, nt):
        slot_terms(0, k, K, slot_d, Gev, D, C, A1, SB, A2, A2G, A2GG)
    grid_sync()
    grid_segscan2(A1, SB, A1, SB, 0, 0, n, True, no_heads, 0, 0, True, False, gpart, 2, sv, sw, sf)
    grid_segscan2(A2, A2G, A2, A2G, 0, 0, n, True, no_heads, 0, 0, True, False, gpart, 3, sv, sw, sf)
    grid_segscan2(A2GG, A2GG, A2GG, A2GG, 0, 0, n, False, no_heads, 0, 0, True, False, gpart, 0, sv, sw, sf)
    grid_sync()


@cuda.jit
def sync_grid_kernel(eta, cw, cinv, w, slot, event, one_stratum, shift, W, Wc, slot_d, Gev, no_heads, D, C, A1, SB, A2,
                     A2G, A2GG, dirty, llout, gpart, partial):
    """:func:`sync_kernel` of the single fit over the whole grid (cooperative launch)."""
    sv = cuda.shared.array(MAX_THREADS, float64)
    sf = cuda.shared.array(MAX_THREADS, int32)
    sb = cuda.shared.array(MAX_THREADS, float64)
    tid, nt = grid_place()
    K = slot_d.shape[1]
    for s in range(tid, K + 1, nt):
        W[0, s] = 0.0
        Wc[0, s] = 0.0
    reset_shifts(0, shift, -math.inf, tid, nt)
    grid_sync()
    max_shifts(0, eta, cw, one_stratum, shift, tid, nt)
    grid_sync()
    reset_shifts(0, shift, 0.0, tid, nt)
    grid_sync()
    part = add_rows(0, eta, cw, cinv, w, slot, event, shift, W, Wc, tid, nt)
    grid_sync()
    refresh_grid(K, W, Wc, slot_d, Gev, no_heads, D, C, A1, SB, A2, A2G, A2GG, gpart, sv, sb, sf)
    part += log_denominators(0, slot_d, D, tid, nt)
    total, _ = grid_sum2(part, 0.0, partial, 0, sv, sb)
    if tid == 0:
        llout[0] = total
        dirty[0] = 0


@cuda.jit(device=True)
def refresh(data, state, r, tid, nt, sv, sb, sf):
    """The denominators and suffix aggregates of replicate r, if a move made them stale."""
    indptr, indices, values, indicator, slotn, gx0, cinv, slot_d, Gev, no_heads = data
    eta, w, W, Wc, D, C, A1, SB, A2, A2G, A2GG, dirty, gpart, tmp = state
    if dirty[r] != 0:
        refresh_block(r, slot_d.shape[1], W, Wc, slot_d, Gev, no_heads, D, C, A1, SB, A2, A2G, A2GG, sv, sb, sf, tid,
                      nt)
        if tid == 0:  # after the syncs of refresh_block: every thread has read the flag
            dirty[r] = 0


@cuda.jit(device=True)
def first_pass(data, state, r, j, tid, nt):
    """This thread's share of g_j (with the static ``gx0`` in thread 0's), of the first Hessian
    term (bracket A1[s] + cinv B1[s]) and of E = sum_comp wx cinv."""
    indptr, indices, values, indicator, slotn, gx0, cinv, slot_d, Gev, no_heads = data
    eta, w, W, Wc, D, C, A1, SB, A2, A2G, A2GG, dirty, gpart, tmp = state
    sb0 = SB[r, 0]
    g = gx0[r, j] if tid == 0 else 0.0
    h = 0.0
    e = 0.0
    for i in range(indptr[j] + tid, indptr[j + 1], nt):
        row = indices[i]
        x = float(values[i])
        wx = float(w[r, row]) * x
        s = slotn[i]
        br = A1[r, s]
        ig = float(cinv[r, row])
        if ig != 0.0:
            br += (sb0 - SB[r, s]) * ig
            e += wx * ig
        g -= wx * br
        h -= wx * x * br
    return g, h, e


@cuda.jit(device=True)
def gradient(data, state, r, j, tid, nt, sv, sb, sf):
    """This thread's share of g_j."""
    return first_pass(data, state, r, j, tid, nt)[0]


@cuda.jit(device=True)
def run_end_terms(r, i, b, K, h, csum, ee, slotn, A2, A2G, A2GG):
    """h with the squared risk-set term added where non-zeros i < b of a column end a run of
    equal slots (``csum`` = cumsum(wx) and ``ee`` = E - cumsum(wx cinv) there): differences
    of the suffix aggregates against the next run's slot (K after the last)."""
    s = slotn[i]
    s2 = K
    if i + 1 < b:
        s2 = slotn[i + 1]
    if s2 != s:
        h += (csum * csum * (A2[r, s] - A2[r, s2]) + 2.0 * csum * ee * (A2G[r, s] - A2G[r, s2])
              + ee * ee * (A2GG[r, s] - A2GG[r, s2]))
    return h


@cuda.jit(device=True)
def terms(data, state, r, j, tid, nt, sv, sb, sf):
    """This thread's share of (g_j, h_j): the first pass, E summed over the block, then the
    squared risk-set term S_j by a two-value block scan of the non-zeros."""
    indptr, indices, values, indicator, slotn, gx0, cinv, slot_d, Gev, no_heads = data
    eta, w, W, Wc, D, C, A1, SB, A2, A2G, A2GG, dirty, gpart, tmp = state
    K = slot_d.shape[1]
    a = indptr[j]
    b = indptr[j + 1]
    g, h, e = first_pass(data, state, r, j, tid, nt)
    block_sum2(sv, sb, e, 0.0, tid, nt)
    E = sv[0]
    cuda.syncthreads()  # every thread has read the sum before the scans reuse sv
    if tid == 0 and a < b:
        h += E * E * (A2GG[r, 0] - A2GG[r, slotn[a]])
    carry_c = 0.0
    carry_u = 0.0
    for c0 in range(a, b, nt):
        i = c0 + tid
        wx = 0.0
        u = 0.0
        if i < b:
            row = indices[i]
            wx = float(w[r, row]) * float(values[i])
            u = wx * float(cinv[r, row])
        csum, usum, carry_c, carry_u = carried_segscan2(sv, sb, sf, wx, u, 0, carry_c, carry_u, tid, nt)
        if i < b:
            h = run_end_terms(r, i, b, K, h, csum, E - usum, slotn, A2, A2G, A2GG)
    return g, h


@cuda.jit(device=True)
def move(data, state, r, j, step, tid, nt):
    """beta_j += step at this thread's share of the column: eta, w and the slot sums W, Wc
    (atomic adds); the aggregates become stale."""
    indptr, indices, values, indicator, slotn, gx0, cinv, slot_d, Gev, no_heads = data
    eta, w, W, Wc, D, C, A1, SB, A2, A2G, A2GG, dirty, gpart, tmp = state
    factor = math.exp(step)
    ind = indicator[j] != 0
    for i in range(indptr[j] + tid, indptr[j + 1], nt):
        row = indices[i]
        dw = move_weight(r, row, float(values[i]), step, factor, ind, eta, w)
        s = slotn[i]
        cuda.atomic.add(W, (r, s), dw)
        ig = float(cinv[r, row])
        if ig != 0.0:
            cuda.atomic.add(Wc, (r, s), dw * ig)
    if tid == 0:
        dirty[r] = 1


sweep_kernel = compile_sweep(refresh, gradient, terms, move)
#: the full gradient, one block per (coefficient, replicate)
gradient_kernel = compile_gradient(gradient, terms)


@cuda.jit(device=True)
def refresh_whole(data, state, r, tid, nt, sv, sb, sf):
    """:func:`refresh` of the single fit over the whole grid."""
    indptr, indices, values, indicator, slotn, gx0, cinv, slot_d, Gev, no_heads = data
    eta, w, W, Wc, D, C, A1, SB, A2, A2G, A2GG, dirty, gpart, tmp = state
    if dirty[0] != 0:
        refresh_grid(slot_d.shape[1], W, Wc, slot_d, Gev, no_heads, D, C, A1, SB, A2, A2G, A2GG, gpart, sv, sb, sf)
        if tid == 0:  # after the grid syncs of refresh_grid: every thread has read the flag
            dirty[0] = 0


@cuda.jit(device=True)
def terms_whole(data, state, r, j, tid, nt, sv, sb, sf):
    """:func:`terms` of the single fit over the whole grid: the first pass and E summed over the
    grid, then each thread takes one contiguous run of the column's non-zeros
    (:func:`~.gridscan.thread_run`), stores their ``wx`` and ``wx cinv`` in ``tmp``, the grid
    scans both in place, and the thread adds the squared term at the run ends among them."""
    indptr, indices, values, indicator, slotn, gx0, cinv, slot_d, Gev, no_heads = data
    eta, w, W, Wc, D, C, A1, SB, A2, A2G, A2GG, dirty, gpart, tmp = state
    K = slot_d.shape[1]
    a = indptr[j]
    b = indptr[j + 1]
    g, h, e = first_pass(data, state, 0, j, tid, nt)
    E, _ = grid_sum2(e, 0.0, gpart, 0, sv, sb)
    if tid == 0 and a < b:
        h += E * E * (A2GG[0, 0] - A2GG[0, slotn[a]])
    lo, hi = thread_run(b - a)
    for q in range(lo, hi):
        row = indices[a + q]
        wx = float(w[0, row]) * float(values[a + q])
        tmp[0, q] = wx
        tmp[1, q] = wx * float(cinv[0, row])
    grid_segscan2(tmp, tmp, tmp, tmp, 0, 1, b - a, True, no_heads, 0, 0, False, False, gpart, 1, sv, sb, sf)
    for q in range(lo, hi):
        h = run_end_terms(0, a + q, b, K, h, tmp[0, q], E - tmp[1, q], slotn, A2, A2G, A2GG)
    return g, h


#: the single fit (R = 1) over the whole grid (cooperative launch)
sweep_grid_kernel = compile_sweep(refresh_whole, gradient, terms_whole, move, grid=True)


class FineGrayDeviceDatafit(RiskSetDeviceDatafit):
    """:class:`~riskset.models.fine_gray.FineGrayDatafit` on the device (either CPU formulation:
    the device always runs the O(nnz_j) one); every replicate weighting gets its own
    censoring Kaplan-Meier.
    """

    family_name = "fine_gray"
    sweep_kernel = staticmethod(sweep_kernel)  # a dispatcher binds like a function: no self
    gradient_kernel = staticmethod(gradient_kernel)
    sweep_grid_kernel = staticmethod(sweep_grid_kernel)
    state_fields = ("eta", "w", "W", "Wc", "D", "C", "A1", "SB", "A2", "A2G", "A2GG", "dirty", "gpart", "tmp")

    def _make_static(self):
        """Device copies of the CPU datafit's device record (its kernels' record,
        :meth:`~riskset.core.interface.RunsOnDevice.device_record`) and of the design's values, one
        per non-zero (the device kernels read no value shift), with each non-zero's slot."""
        data = self.cpu.device_record()
        K = data.slot_d.shape[0]
        st = np.int32 if K < 2**31 - 1 else np.int64
        slot = np.asarray(data.slot, st)
        return dict(indptr=device_copy(data.indptr.astype(np.int64)),
                    indices=device_copy(data.indices.astype(self.itype)),
                    values=device_copy(self.design.full_values(self.dtype)),
                    indicator=device_copy(np.asarray(data.indicator, np.uint8)),
                    slot=device_copy(slot),
                    slotn=device_copy(slot[data.indices]),
                    event=device_copy(np.asarray(data.event, np.uint8)),
                    one_stratum=device_copy(np.zeros(self.n_rows, np.uint8)),
                    no_heads=device_copy(np.zeros(K + 1, np.uint8)))

    def _rep(self):
        """Weight-dependent device arrays (R rows each): c, cinv, Gev, d, gx0 from the record of
        the CPU datafit reweighted by each replicate's weights."""
        if self._per_rep is None:
            views = [self.cpu] if self.weights is None else [self.cpu.reweighted(w) for w in self.weights]
            records = [v.kernel_data() for v in views]
            self._per_rep = dict(cw=device_copy(np.stack([d.cw for d in records]), self.dtype),
                                 cinv=device_copy(np.stack([d.cinv for d in records]), self.dtype),
                                 Gev=device_copy(np.stack([d.Gev for d in records]), np.float64),
                                 slot_d=device_copy(np.stack([d.slot_d for d in records]), np.float64),
                                 gx0=device_copy(np.stack([d.gx0 for d in records]), np.float64))
        return self._per_rep

    def _allocate(self, state):
        R, n, K = self.n_rep, self.n_rows, self._rep()["slot_d"].shape[1]  # (R, K): d_k of each replicate
        state.d["w"] = cuda.device_array((R, n), dtype=self.dtype)
        for name in ("W", "Wc", "D", "C", "A1", "SB", "A2", "A2G", "A2GG"):
            state.d[name] = cuda.device_array((R, K + 1), dtype=np.float64)
        state.d["shift"] = cuda.device_array((R, 1), dtype=np.float64)  # sync_kernel
        state.d["dirty"] = device_copy(np.ones(R, np.int32))
        state.d["ll"] = cuda.device_array(R, dtype=np.float64)
        self._allocate_grid_scratch(state)

    def _aggregates(self, state):
        """The device arguments shared by both kernels, from W on."""
        s, p, d = self._dev_static(), self._rep(), state.d
        return (d["W"], d["Wc"], p["slot_d"], p["Gev"], s["no_heads"], d["D"], d["C"], d["A1"], d["SB"], d["A2"],
                d["A2G"], d["A2GG"], d["dirty"])

    def _refresh(self, state):
        s, p, d = self._dev_static(), self._rep(), state.d
        args = (d["eta"], p["cw"], p["cinv"], d["w"], s["slot"], s["event"], s["one_stratum"], d["shift"],
                *self._aggregates(state), d["ll"])
        if not self._launch_grid(sync_grid_kernel, *args, d["gpart"], self._grid_partial()):
            self._launch(sync_kernel, *args)

    def kernel_data(self):
        s, p = self._dev_static(), self._rep()
        return (s["indptr"], s["indices"], s["values"], s["indicator"], s["slotn"], p["gx0"], p["cinv"], p["slot_d"],
                p["Gev"], s["no_heads"])
