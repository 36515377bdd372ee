"""Fine-Gray competing risks (cmprsk::crr weights, Breslow ties) on the device.

Mirrors the O(nnz_j) formulation of :mod:`riskset.kernels.cpu.fine_gray` (notation
there): rows sorted by time descending, event slots ``k = 0 .. K-1`` (distinct times
of the event of interest, descending), row slot ``s_r`` in ``0..K``, ``cinv_r =
1 / G(T_r-)`` for competing rows (0 otherwise), ``w = c exp(eta)``. Everything that
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
per non-zero, chunks of ``blockDim``): the first reduces ``g = gx0 - sum wx [A1[s] +
cinv B1[s]]``, the first Hessian term and ``E = sum_comp wx cinv``; a zero coordinate
with ``|g| <= l1`` stops there (it cannot move, as in the CPU sweep). The second pass
scans ``c = cumsum(wx)`` and ``cumsum(wx cinv)`` together (one two-value block scan;
``e = E -`` the latter) and adds, at the end of each run of equal slots, ``c^2 dA2 +
2 c e dA2G + e^2 dA2GG``, plus the head term ``E^2 (A2GG[0] - A2GG[s_first])``
(docs/math.md section 3). Thread 0 takes the bounded Newton step, every thread moves its
non-zeros, and the aggregates are marked stale until the next coordinate needs them
(exactly when the CPU kernel refreshes).
"""
from __future__ import annotations

import math

import numpy as np
from numba import cuda, float64, int32

from .blocks import block_sum2, carried_segscan2, scan2_slots, segscan_slots
from .cox import RiskSetDeviceDatafit, move_weight
from .device import MAX_THREADS
from .step import coordinate_step


@cuda.jit(device=True)
def refresh_block(r, K, W, Wc, slot_d, Gev, none, D, C, A1, SB, A2, A2G, A2GG, sv, sw, sf, tid, nt):
    """Denominators D and the suffix aggregates of replicate r from the slot sums (whole block).

    ``none`` is an all-zero head array of length K + 1 (the scans are unsegmented).
    """
    n = K + 1
    segscan_slots(W, D, r, n, none, False, sv, sf, tid, nt)  # D[k] = sum_{s <= k} W[s]
    segscan_slots(Wc, C, r, n, none, True, sv, sf, tid, nt)  # C[k] = sum_{s >= k} Wc[s]
    for k in range(tid, n, nt):
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
    cuda.syncthreads()
    # suffix sums over k >= s (zero at s = K), two at a time
    scan2_slots(A1, SB, r, n, none, True, sv, sw, sf, tid, nt)
    scan2_slots(A2, A2G, r, n, none, True, sv, sw, sf, tid, nt)
    segscan_slots(A2GG, A2GG, r, n, none, True, sv, sf, tid, nt)


@cuda.jit
def sync_kernel(eta, cw, cinv, w, slot, event, W, Wc, slot_d, Gev, none, D, C, A1, SB, A2, A2G, A2GG, dirty,
                llout):
    """Exact state of replicate blockIdx.x from eta: w = c exp(eta), W, Wc, the aggregates and
    the log pseudo-likelihood ``sum_events c eta - sum_k d_k log D_k`` (written to llout[r])."""
    sv = cuda.shared.array(MAX_THREADS, float64)
    sf = cuda.shared.array(MAX_THREADS, int32)
    sb = cuda.shared.array(MAX_THREADS, float64)
    r = cuda.blockIdx.x
    tid = cuda.threadIdx.x
    nt = cuda.blockDim.x
    n = eta.shape[1]
    K = slot_d.shape[1]
    for s in range(tid, K + 1, nt):
        W[r, s] = 0.0
        Wc[r, s] = 0.0
    cuda.syncthreads()
    part = 0.0
    for i in range(tid, n, nt):
        c = float(cw[r, i])
        e = eta[r, i]
        wi = c * math.exp(e)
        w[r, i] = wi
        cuda.atomic.add(W, (r, slot[i]), wi)  # float64 sums even when w is stored in float32
        ig = float(cinv[r, i])
        if ig != 0.0:
            cuda.atomic.add(Wc, (r, slot[i]), wi * ig)
        if event[i] != 0:
            part += c * e
    cuda.syncthreads()
    refresh_block(r, K, W, Wc, slot_d, Gev, none, D, C, A1, SB, A2, A2G, A2GG, sv, sb, sf, tid, nt)
    for k in range(tid, K, nt):
        d = slot_d[r, k]
        if d > 0.0:
            part -= d * math.log(D[r, k])
    block_sum2(sv, sb, part, 0.0, tid, nt)
    if tid == 0:
        llout[r] = sv[0]
        dirty[r] = 0


@cuda.jit
def sweep_kernel(mode, indptr, indices, values, indicator, slotn, coords, mask, beta, l1, l2, radius, fixed, out,
                 gx0, eta, w, cinv, W, Wc, slot_d, Gev, none, D, C, A1, SB, A2, A2G, A2GG, dirty):
    """One CCD sweep over ``coords`` for replicate blockIdx.x (persistent block); modes as
    in :func:`riskset.kernels.gpu.glm.sweep_kernel`. ``slotn`` is the slot of each non-zero."""
    sv = cuda.shared.array(MAX_THREADS, float64)
    sb = cuda.shared.array(MAX_THREADS, float64)
    sf = cuda.shared.array(MAX_THREADS, int32)
    sstep = cuda.shared.array(1, float64)
    r = cuda.blockIdx.x
    tid = cuda.threadIdx.x
    nt = cuda.blockDim.x
    K = slot_d.shape[1]
    stale = dirty[r]
    for c in range(coords.shape[0]):
        j = coords[c]
        if mask[r, j] == 0:
            continue
        a = indptr[j]
        b = indptr[j + 1]
        g = 0.0
        h = 0.0
        if mode != 2:
            if stale != 0:
                refresh_block(r, K, W, Wc, slot_d, Gev, none, D, C, A1, SB, A2, A2G, A2GG, sv, sb, sf, tid, nt)
                stale = 0
            # pass 1: g, the first Hessian term (bracket A1[s] + cinv B1[s]) and E
            sb0 = SB[r, 0]
            e = 0.0
            for i in range(a + tid, b, nt):
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
            block_sum2(sv, sb, g, e, tid, nt)
            g = gx0[r, j] + sv[0]
            E = sb[0]
            cuda.syncthreads()  # every thread has read the sums before the scans reuse sv
            if mode == 0 and beta[r, j] == 0.0 and l1[r, j] > 0.0 and math.fabs(g) <= l1[r, j]:
                continue  # a zero coordinate with |g| <= l1 does not move, whatever h is
            # pass 2: the squared risk-set term S_j
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
                    s = slotn[i]
                    s2 = K
                    if i + 1 < b:
                        s2 = slotn[i + 1]
                    if s2 != s:  # end of a run of equal slots: differences against the next run
                        ee = E - usum
                        h += (csum * csum * (A2[r, s] - A2[r, s2]) + 2.0 * csum * ee * (A2G[r, s] - A2G[r, s2])
                              + ee * ee * (A2GG[r, s] - A2GG[r, s2]))
            block_sum2(sv, sb, h, 0.0, tid, nt)
            h = sv[0]
        if tid == 0:
            sstep[0] = coordinate_step(mode, g, h, beta, l1, l2, radius, fixed, out, r, j)
        cuda.syncthreads()
        step = sstep[0]
        if step != 0.0:
            factor = math.exp(step)
            ind = indicator[j] != 0
            for i in range(a + tid, b, nt):
                row = indices[i]
                dw = move_weight(r, row, float(values[i]), step, factor, ind, eta, w)
                s = slotn[i]
                cuda.atomic.add(W, (r, s), dw)
                ig = float(cinv[r, row])
                if ig != 0.0:
                    cuda.atomic.add(Wc, (r, s), dw * ig)
            stale = 1
        cuda.syncthreads()
    if tid == 0:
        dirty[r] = stale


class FineGrayDeviceDatafit(RiskSetDeviceDatafit):
    """:class:`~riskset.models.fine_gray.FineGrayDatafit` on the device (either CPU formulation:
    the device always runs the O(nnz_j) one); every replicate weighting gets its own
    censoring Kaplan-Meier.
    """

    family_name = "fine_gray"

    def _make_static(self):
        cpu = self.cpu
        K = cpu.n_slots
        st = np.int32 if K < 2**31 - 1 else np.int64
        slot = np.asarray(cpu.slot, st)
        return dict(indptr=cuda.to_device(cpu.indptr.astype(np.int64)),
                    indices=cuda.to_device(cpu.indices.astype(self.itype)),
                    values=cuda.to_device(cpu.values.astype(self.dtype)),
                    indicator=cuda.to_device(np.asarray(cpu.indicator, np.uint8)),
                    slot=cuda.to_device(slot),
                    slotn=cuda.to_device(slot[cpu.indices]),
                    event=cuda.to_device(np.asarray(cpu.event, np.uint8)),
                    none=cuda.to_device(np.zeros(K + 1, np.uint8)))

    def _rep(self):
        """Weight-dependent device arrays (R rows each): c, cinv, Gev, d, gx0 from the CPU
        datafit reweighted by each replicate's weights."""
        if self._per_rep is None:
            views = [self.cpu] if self.weights is None else [self.cpu.reweighted(w) for w in self.weights]
            types = dict(cw=self.dtype, cinv=self.dtype, Gev=np.float64, slot_d=np.float64, gx0=np.float64)
            self._per_rep = {name: cuda.to_device(np.ascontiguousarray(np.stack([getattr(v, name) for v in views]),
                                                                       dtype=dt))
                             for name, dt in types.items()}
        return self._per_rep

    def _allocate(self, state):
        R, n, K = self.n_rep, self.n_rows, self.cpu.n_slots
        state.d["w"] = cuda.device_array((R, n), dtype=self.dtype)
        for name in ("W", "Wc", "D", "C", "A1", "SB", "A2", "A2G", "A2GG"):
            state.d[name] = cuda.device_array((R, K + 1), dtype=np.float64)
        state.d["dirty"] = cuda.to_device(np.ones(R, np.int32))
        state.d["ll"] = cuda.device_array(R, dtype=np.float64)

    def _aggregates(self, state):
        """The device arguments shared by both kernels, from W on."""
        s, p, d = self._dev_static(), self._rep(), state.d
        return (d["W"], d["Wc"], p["slot_d"], p["Gev"], s["none"], d["D"], d["C"], d["A1"], d["SB"], d["A2"],
                d["A2G"], d["A2GG"], d["dirty"])

    def _refresh(self, state):
        s, p, d = self._dev_static(), self._rep(), state.d
        self._launch(sync_kernel, d["eta"], p["cw"], p["cinv"], d["w"], s["slot"], s["event"],
                     *self._aggregates(state), d["ll"])

    def _sweep(self, state, coords, mask, beta, l1, l2, radius, mode, fixed, out):
        s, p, d = self._dev_static(), self._rep(), state.d
        fixed, out = self._mode_arrays(fixed, out)
        self._launch(sweep_kernel, mode, s["indptr"], s["indices"], s["values"], s["indicator"], s["slotn"], coords,
                     mask, beta, l1, l2, radius, fixed, out, p["gx0"], d["eta"], d["w"], p["cinv"],
                     *self._aggregates(state))
