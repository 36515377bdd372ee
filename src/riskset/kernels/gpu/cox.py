"""Cox proportional hazards (Breslow ties, optionally stratified) on the device.

Mirrors the O(nnz_j) formulation of :mod:`riskset.kernels.cpu.cox` for right-censored
rows sorted by (stratum, time descending), with per-slot sums (``ex`` = w summed by
exit slot) kept current by ``move`` (atomic adds, O(nnz_j)) and the per-slot
aggregates refreshed on the device by block-level segmented scans over the slots
(O(n_slots / threads) per refresh):

1. ``S = reverse inclusive segmented scan of ex`` (segments = strata), so the risk-set
   denominator of slot p is ``D_p = S[p + 1]`` (0 at the terminal slot);
2. ``Q1 = d / D``, ``Q2 = Q1 / D``;
3. forward inclusive segmented scans of Q1, Q2 (one pass) shifted by one slot give the
   exclusive cumulative sums ``A1c``, ``A2c``.

For coordinate j the block computes, over the column's non-zeros in chunks of
``blockDim`` (one thread per non-zero), ``g = gx0 - sum wx (A1c[ke] - A1c[ks])``, the
first Hessian term, and the squared term ``sum c^2 (A2c[ke] - A2c[lo])`` at the ends of
runs of equal exit slots, where ``c`` is a segmented prefix sum of ``w x`` within the
stratum (a block scan with a carry between chunks). Thread 0 takes the bounded Newton
step, every thread moves its non-zeros, and the block marks its aggregates stale; the
next coordinate refreshes them first (exactly when the CPU kernel does).
"""
from __future__ import annotations

import copy
import dataclasses
import math
import os

import numpy as np
from numba import cuda, float64, int32

from .base import DeviceDatafit
from .blocks import block_sum2, carried_segscan, segscan2_slots, segscan_slots
from .device import MAX_THREADS, simulator_enabled
from .step import coordinate_step


@cuda.jit(device=True)
def refresh_block(r, ns, ex, slot_d, slot_first, slot_last, S, Q1, Q2, A1c, A2c, sv, sw, sf, tid, nt):
    """Per-slot aggregates of replicate r from the slot sums ``ex`` (whole block)."""
    segscan_slots(ex, S, r, ns, slot_last, True, sv, sf, tid, nt)
    for p in range(tid, ns, nt):
        d = slot_d[r, p]
        if d > 0.0 and slot_last[p] == 0:
            inv = 1.0 / S[r, p + 1]
            q = d * inv
            Q1[r, p] = q
            Q2[r, p] = q * inv
        else:
            Q1[r, p] = 0.0
            Q2[r, p] = 0.0
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


@cuda.jit
def sync_kernel(eta, cw, w, ke, event, ex, slot_d, slot_first, slot_last, S, Q1, Q2, A1c, A2c, dirty, llout):
    """Exact state of replicate blockIdx.x from eta: w = c exp(eta), ex, the aggregates and
    the log partial likelihood (written to llout[r])."""
    sv = cuda.shared.array(MAX_THREADS, float64)
    sf = cuda.shared.array(MAX_THREADS, int32)
    sb = cuda.shared.array(MAX_THREADS, float64)
    r = cuda.blockIdx.x
    tid = cuda.threadIdx.x
    nt = cuda.blockDim.x
    n = eta.shape[1]
    ns = ex.shape[1]
    for p in range(tid, ns, nt):
        ex[r, p] = 0.0
    cuda.syncthreads()
    part = 0.0
    for i in range(tid, n, nt):
        c = float(cw[r, i])
        e = eta[r, i]
        wi = c * math.exp(e)
        w[r, i] = wi
        cuda.atomic.add(ex, (r, ke[i]), wi)  # exact (float64) even when w is stored in float32
        if event[i] != 0:
            part += c * e
    cuda.syncthreads()
    refresh_block(r, ns, ex, slot_d, slot_first, slot_last, S, Q1, Q2, A1c, A2c, sv, sb, sf, tid, nt)
    for p in range(tid, ns, nt):
        d = slot_d[r, p]
        if d > 0.0 and slot_last[p] == 0:
            part -= d * math.log(S[r, p + 1])
    block_sum2(sv, sb, part, 0.0, tid, nt)
    if tid == 0:
        llout[r] = sv[0]
        dirty[r] = 0


@cuda.jit
def sweep_kernel(mode, indptr, indices, values, indicator, ksn, ken, coords, mask, beta, l1, l2, radius, fixed, out,
                 gx0, eta, w, ex, slot_d, slot_first, slot_last, S, Q1, Q2, A1c, A2c, dirty):
    """One CCD sweep over ``coords`` for replicate blockIdx.x (persistent block); modes as
    in :func:`riskset.kernels.gpu.glm.sweep_kernel`."""
    sv = cuda.shared.array(MAX_THREADS, float64)
    sb = cuda.shared.array(MAX_THREADS, float64)
    sf = cuda.shared.array(MAX_THREADS, int32)
    sstep = cuda.shared.array(1, float64)
    r = cuda.blockIdx.x
    tid = cuda.threadIdx.x
    nt = cuda.blockDim.x
    ns = ex.shape[1]
    stale = dirty[r]
    for c in range(coords.shape[0]):
        j = coords[c]
        if mask[r, j] == 0:
            continue
        a = indptr[j]
        b = indptr[j + 1]
        if mode != 2:
            if stale != 0:
                refresh_block(r, ns, ex, slot_d, slot_first, slot_last, S, Q1, Q2, A1c, A2c, sv, sb, sf, tid, nt)
                stale = 0
            g = 0.0
            h = 0.0
            carry = 0.0
            for c0 in range(a, b, nt):
                i = c0 + tid
                wx = 0.0
                x = 0.0
                f = 0
                kr = 0
                k0 = 0
                if i < b:
                    x = float(values[i])
                    wx = float(w[r, indices[i]]) * x
                    kr = ken[i]
                    k0 = ksn[i]
                    a1 = A1c[r, kr] - A1c[r, k0]
                    g -= wx * a1
                    h -= wx * x * a1
                    if i == a:
                        f = 1
                    elif ksn[i - 1] != k0:
                        f = 1
                csum, carry = carried_segscan(sv, sf, wx, f, carry, tid, nt)
                if i < b:
                    same_stratum = False
                    same_run = False
                    if i + 1 < b:
                        same_stratum = ksn[i + 1] == k0
                        same_run = same_stratum and ken[i + 1] == kr
                    if not same_run:
                        lo = k0
                        if same_stratum:
                            lo = ken[i + 1]
                        h += csum * csum * (A2c[r, kr] - A2c[r, lo])
            block_sum2(sv, sb, g, h, tid, nt)
        if tid == 0:
            sstep[0] = coordinate_step(mode, gx0[r, j] + sv[0], sb[0], beta, l1, l2, radius, fixed, out, r, j)
        cuda.syncthreads()
        step = sstep[0]
        if step != 0.0:
            factor = math.exp(step)
            ind = indicator[j] != 0
            for i in range(a + tid, b, nt):
                row = indices[i]
                x = float(values[i])
                eta[r, row] += step * x
                wo = float(w[r, row])
                if ind:
                    w[r, row] = wo * factor
                else:
                    w[r, row] = wo * math.exp(step * x)
                cuda.atomic.add(ex, (r, ken[i]), float(w[r, row]) - wo)
            stale = 1
        cuda.syncthreads()
    if tid == 0:
        dirty[r] = stale


class CoxDeviceDatafit(DeviceDatafit):
    """:class:`~riskset.models.cox.CoxDatafit` (Breslow, right-censored, strata) on the device.

    Replicate weights (:meth:`replicates`, :meth:`reweighted`) are given in Dataset row
    order, as for the CPU datafit's ``reweighted``, and mapped through ``data_rows``.
    """

    family_name = "cox"

    def __init__(self, cpu, dtype="float64", weights=None):
        super().__init__(cpu, dtype, weights)
        # The slot scans of a refresh run in one block per replicate: on a device use the
        # largest block (fewer chunks per scan), falling back to 256 threads if the kernel
        # needs too many registers for 1024.
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

    def _make_static(self):
        cpu, rs = self.cpu, self.cpu.rs
        ks, ke = np.asarray(cpu.ks, np.int64), np.asarray(cpu.ke, np.int64)
        idx = cpu.indices
        return dict(indptr=cuda.to_device(cpu.indptr.astype(np.int64)),
                    indices=cuda.to_device(idx.astype(self.itype)),
                    values=cuda.to_device(cpu.values.astype(self.dtype)),
                    indicator=cuda.to_device(np.asarray(cpu.indicator, np.uint8)),
                    ksn=cuda.to_device(ks[idx].astype(np.int32 if rs.n_slots < 2**31 - 1 else np.int64)),
                    ken=cuda.to_device(ke[idx].astype(np.int32 if rs.n_slots < 2**31 - 1 else np.int64)),
                    ke=cuda.to_device(ke),
                    event=cuda.to_device(np.asarray(cpu.event, np.uint8)),
                    slot_first=cuda.to_device(np.asarray(rs.slot_first, np.uint8)),
                    slot_last=cuda.to_device(np.asarray(rs.slot_last, np.uint8)))

    def _data_rows(self):
        """Dataset row of each sorted datafit row (``order`` for datafits without ``data_rows``)."""
        rows = getattr(self.cpu, "data_rows", None)
        return self.cpu.order if rows is None else rows

    def _sorted_weights(self):
        """(R, N) case weights in sorted (datafit) row order."""
        if self.weights is None:
            return np.asarray(self.cpu.cw, np.float64)[None, :]
        return self.weights[:, self._data_rows()]

    def _rep(self):
        """Weight-dependent device arrays: case weights, slot event counts, gx0."""
        if self._per_rep is None:
            cpu = self.cpu
            cw = self._sorted_weights()
            ev = np.asarray(cpu.event, bool)
            ns = cpu.rs.n_slots
            eslot = np.asarray(cpu.ke, np.int64)[ev] - 1
            slot_d = np.stack([np.bincount(eslot, weights=c[ev], minlength=ns) for c in cw])
            gx0 = np.asarray((cpu.X.T @ (cw * ev[None, :]).T).T)
            self._per_rep = dict(cw=cuda.to_device(np.ascontiguousarray(cw, dtype=self.dtype)),
                                 slot_d=cuda.to_device(np.ascontiguousarray(slot_d, dtype=np.float64)),
                                 gx0=cuda.to_device(np.ascontiguousarray(gx0, dtype=np.float64)))
        return self._per_rep

    def _allocate(self, state):
        R, n, ns = self.n_rep, self.n_rows, self.cpu.rs.n_slots
        state.d["w"] = cuda.device_array((R, n), dtype=self.dtype)
        for name in ("ex", "S", "Q1", "Q2", "A1c", "A2c"):
            state.d[name] = cuda.device_array((R, ns), dtype=np.float64)
        state.d["dirty"] = cuda.to_device(np.ones(R, np.int32))
        state.d["ll"] = cuda.device_array(R, dtype=np.float64)

    def _refresh(self, state):
        s, p, d = self._dev_static(), self._rep(), state.d
        self._launch(sync_kernel, d["eta"], p["cw"], d["w"], s["ke"], s["event"], d["ex"], p["slot_d"],
                     s["slot_first"], s["slot_last"], d["S"], d["Q1"], d["Q2"], d["A1c"], d["A2c"], d["dirty"],
                     d["ll"])

    def _loglik_all(self, state):
        self._refresh(state)  # exact recomputation from eta, as the CPU datafit does
        return state.d["ll"].copy_to_host()

    def _sweep(self, state, coords, mask, beta, l1, l2, radius, mode, fixed, out):
        s, p, d = self._dev_static(), self._rep(), state.d
        fixed, out = self._mode_arrays(fixed, out)
        self._launch(sweep_kernel, mode, s["indptr"], s["indices"], s["values"], s["indicator"], s["ksn"], s["ken"],
                     coords, mask, beta, l1, l2, radius, fixed, out, p["gx0"], d["eta"], d["w"], d["ex"], p["slot_d"],
                     s["slot_first"], s["slot_last"], d["S"], d["Q1"], d["Q2"], d["A1c"], d["A2c"], d["dirty"])

    def _check_weights(self, weights):
        if weights.shape[1] <= int(np.max(self._data_rows(), initial=-1)):
            raise ValueError(f"weights have {weights.shape[1]} columns; the data set has more rows")

    def _cpu_reweight(self, w):
        """A CPU Cox datafit with case weights ``w`` (Dataset row order), sharing X and the sort."""
        view = self.cpu.reweighted(w)
        if view is not None:
            return view
        # older CoxDatafit without reweighted(): the same construction here
        cpu = self.cpu
        cw = np.ascontiguousarray(np.asarray(w, np.float64)[self._data_rows()])
        view = copy.copy(cpu)
        ev = np.asarray(cpu.event, bool)
        ns = cpu.rs.n_slots
        slot_d = np.bincount(np.asarray(cpu.ke, np.int64)[ev] - 1, weights=cw[ev], minlength=ns).astype(np.float64)
        view.rs = dataclasses.replace(cpu.rs, slot_d=slot_d)
        view.cw = cw
        view.gx0 = np.ascontiguousarray(cpu.X.T @ (cw * cpu.event), dtype=np.float64)
        return view
