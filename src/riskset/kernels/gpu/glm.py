"""GLM families (logistic, Poisson, least squares) on the device.

Mirrors :mod:`riskset.kernels.cpu.glm`: per row ``resid = w (y - mu)`` and
``curv = w dmu/deta``, ``expeta`` cached and updated by the factor exp(delta x) (one
``exp`` per move for indicator columns). One block per replicate runs a whole CCD
sweep (:func:`sweep_kernel`): for each coordinate its threads reduce g and h over the
column's non-zeros (strided, then a shared-memory tree), thread 0 takes the bounded
Newton step (:mod:`.step`), and all threads apply the move; the only host traffic
per sweep is beta and the trust-region radii.
"""
from __future__ import annotations

import math
import warnings

import numpy as np
from numba import cuda, float64

from riskset.kernels.cpu import glm as cpu_kernels

from .base import DeviceDatafit
from .blocks import block_sum2
from .device import MAX_THREADS, row_blocks, simulator_enabled
from .step import clipped_step, coordinate_step

LOGISTIC, POISSON, GAUSSIAN = cpu_kernels.LOGISTIC, cpu_kernels.POISSON, cpu_kernels.GAUSSIAN


@cuda.jit(device=True)
def mean_and_curvature(family, eta, expeta):
    if family == 0:
        if expeta > 1.0:
            mu = 1.0 / (1.0 + 1.0 / expeta)
        else:
            mu = expeta / (1.0 + expeta)
        return mu, mu * (1.0 - mu)
    if family == 1:
        return expeta, expeta
    return eta, 1.0


@cuda.jit
def refresh_kernel(family, eta, y, w, expeta, resid, curv):
    """expeta, resid, curv from eta for every (replicate, row); grid-stride over rows."""
    r = cuda.blockIdx.y
    n = eta.shape[1]
    start = cuda.blockIdx.x * cuda.blockDim.x + cuda.threadIdx.x
    stride = cuda.gridDim.x * cuda.blockDim.x
    for i in range(start, n, stride):
        e = float(eta[r, i])
        ee = math.exp(e)
        expeta[r, i] = ee
        mu, v = mean_and_curvature(family, e, ee)
        resid[r, i] = float(w[r, i]) * (float(y[i]) - mu)
        curv[r, i] = float(w[r, i]) * v


@cuda.jit
def loglik_kernel(family, eta, y, w, partial):
    """partial[r, block] = this block's share of the weighted log-likelihood of replicate r."""
    sa = cuda.shared.array(MAX_THREADS, float64)
    sb = cuda.shared.array(MAX_THREADS, float64)
    r = cuda.blockIdx.y
    tid = cuda.threadIdx.x
    nt = cuda.blockDim.x
    n = eta.shape[1]
    total = 0.0
    for i in range(cuda.blockIdx.x * nt + tid, n, cuda.gridDim.x * nt):
        e = float(eta[r, i])
        wi = float(w[r, i])
        yi = float(y[i])
        if wi != 0.0:
            if family == 0:
                if e > 0:
                    sp = e + math.log1p(math.exp(-e))
                else:
                    sp = math.log1p(math.exp(e))
                total += wi * (yi * e - sp)
            elif family == 1:
                total += wi * (yi * e - math.exp(e) - math.lgamma(yi + 1.0))
            else:
                res = yi - e
                total -= 0.5 * wi * res * res
    block_sum2(sa, sb, total, 0.0, tid, nt)
    if tid == 0:
        partial[r, cuda.blockIdx.x] = sa[0]


@cuda.jit(device=True)
def column_terms(r, a, b, start, stride, indices, values, resid, curv):
    """This thread's share (non-zeros a + start, a + start + stride, ...) of the column's
    g = sum x resid and h = -sum x^2 curv, for replicate r."""
    g = 0.0
    h = 0.0
    for k in range(a + start, b, stride):
        i = indices[k]
        x = float(values[k])
        g += x * resid[r, i]
        h -= x * x * curv[r, i]
    return g, h


@cuda.jit(device=True)
def move_column(family, r, a, b, start, stride, step, ind, indices, values, eta, y, w, expeta, resid, curv):
    """beta_j += step at this thread's share of the column's non-zeros (``ind``: 0/1 column)."""
    factor = math.exp(step)
    for k in range(a + start, b, stride):
        i = indices[k]
        x = float(values[k])
        e = eta[r, i] + step * x
        eta[r, i] = e
        if ind:
            ee = float(expeta[r, i]) * factor
        else:
            ee = float(expeta[r, i]) * math.exp(step * x)
        expeta[r, i] = ee
        mu, v = mean_and_curvature(family, e, ee)
        resid[r, i] = float(w[r, i]) * (float(y[i]) - mu)
        curv[r, i] = float(w[r, i]) * v


@cuda.jit
def sweep_kernel(mode, family, indptr, indices, values, indicator, coords, mask, beta, l1, l2, radius, fixed, out,
                 eta, y, w, expeta, resid, curv):
    """One CCD sweep over ``coords`` for replicate ``blockIdx.x`` (persistent block).

    mode 0: CCD steps; mode 1: write (g, h) of the (single) coordinate to out[r];
    mode 2: apply the step fixed[r] to the coordinate.
    """
    sa = cuda.shared.array(MAX_THREADS, float64)
    sb = cuda.shared.array(MAX_THREADS, float64)
    sstep = cuda.shared.array(1, float64)
    r = cuda.blockIdx.x
    tid = cuda.threadIdx.x
    nt = cuda.blockDim.x
    for c in range(coords.shape[0]):
        j = coords[c]
        if mask[r, j] == 0:
            continue
        a = indptr[j]
        b = indptr[j + 1]
        if mode != 2:
            g, h = column_terms(r, a, b, tid, nt, indices, values, resid, curv)
            block_sum2(sa, sb, g, h, tid, nt)
        if tid == 0:
            sstep[0] = coordinate_step(mode, sa[0], sb[0], beta, l1, l2, radius, fixed, out, r, j)
        cuda.syncthreads()
        step = sstep[0]
        if step != 0.0:
            move_column(family, r, a, b, tid, nt, step, indicator[j] != 0, indices, values, eta, y, w, expeta,
                        resid, curv)
        cuda.syncthreads()


@cuda.jit
def sweep_grid_kernel(mode, family, indptr, indices, values, indicator, coords, mask, beta, l1, l2, radius, fixed,
                      out, partial, eta, y, w, expeta, resid, curv):
    """One CCD sweep of a single fit spread over the whole grid (cooperative launch).

    Each block reduces its share of the column's non-zeros and writes a partial (g, h);
    after a grid-wide sync every block sums the partials in the same order (so all
    blocks take the identical step), block 0 stores beta and the trust region, every
    block moves its share, and a second grid sync orders the move before the next
    coordinate's reads. beta[0, j] and radius[0, j] are read before the first sync, so
    block 0's writes cannot race them. Replicate 0 only (gridDim.y == 1).
    """
    grid = cuda.cg.this_grid()
    sa = cuda.shared.array(MAX_THREADS, float64)
    sb = cuda.shared.array(MAX_THREADS, float64)
    sstep = cuda.shared.array(1, float64)
    bx = cuda.blockIdx.x
    nb = cuda.gridDim.x
    tid = cuda.threadIdx.x
    nt = cuda.blockDim.x
    start = bx * nt + tid
    stride = nb * nt
    for c in range(coords.shape[0]):
        j = coords[c]
        if mask[0, j] == 0:
            continue
        a = indptr[j]
        b = indptr[j + 1]
        b0 = beta[0, j]
        rad0 = radius[0, j]
        if mode != 2:
            g, h = column_terms(0, a, b, start, stride, indices, values, resid, curv)
            block_sum2(sa, sb, g, h, tid, nt)
            if tid == 0:
                partial[0, bx] = sa[0]
                partial[1, bx] = sb[0]
            grid.sync()
            g = 0.0
            h = 0.0
            for q in range(tid, nb, nt):
                g += partial[0, q]
                h += partial[1, q]
            block_sum2(sa, sb, g, h, tid, nt)
        if tid == 0:
            step = 0.0
            if mode == 0:
                step, rad = clipped_step(sa[0], sb[0], b0, l1[0, j], l2[0, j], rad0)
                if bx == 0 and step != 0.0:
                    beta[0, j] = b0 + step
                    radius[0, j] = rad
            elif mode == 1:
                if bx == 0:
                    out[0, 0] = sa[0]
                    out[0, 1] = sb[0]
            else:
                step = fixed[0]
            sstep[0] = step
        cuda.syncthreads()
        step = sstep[0]
        if step != 0.0:
            move_column(family, 0, a, b, start, stride, step, indicator[j] != 0, indices, values, eta, y, w, expeta,
                        resid, curv)
        grid.sync()


def grid_blocks() -> int:
    """Blocks of the cooperative single-fit sweep: one per multiprocessor (always co-resident)."""
    if simulator_enabled():  # the simulator supports grid sync with one block only
        return 1
    return int(cuda.get_current_device().MULTIPROCESSOR_COUNT)


class GLMDeviceDatafit(DeviceDatafit):
    """:class:`~riskset.models.glm.GLMDatafit` with X and the state on the device."""

    family_name = "glm"
    #: a single fit (R = 1) sweeps with the cooperative whole-grid kernel; replicates use one block each
    single_fit_grid = True

    def __init__(self, cpu, dtype="float64", weights=None):
        super().__init__(cpu, dtype, weights)
        self.family = int(cpu.family)
        self.family_name = {LOGISTIC: "logistic", POISSON: "poisson", GAUSSIAN: "least_squares"}[self.family]

    def _make_static(self):
        cpu = self.cpu
        indptr, indices, values = cpu.indptr.astype(np.int64), cpu.indices, cpu.values
        indicator = np.asarray(cpu.indicator, np.uint8)
        if cpu.first:  # implicit intercept: an explicit column of ones on the device
            n = self.n_rows
            indptr = np.r_[0, indptr + n]
            indices = np.r_[np.arange(n), indices]
            values = np.r_[np.ones(n), values]
            indicator = np.r_[np.uint8(1), indicator]
        return dict(indptr=cuda.to_device(indptr), indices=cuda.to_device(indices.astype(self.itype)),
                    values=cuda.to_device(values.astype(self.dtype)), indicator=cuda.to_device(indicator),
                    y=cuda.to_device(cpu.y.astype(self.dtype)))

    def _weights_dev(self):
        if self._per_rep is None:
            w = self.cpu.data_weights()[None, :] if self.weights is None else self.weights
            self._per_rep = cuda.to_device(np.ascontiguousarray(w, dtype=self.dtype))
        return self._per_rep

    def _allocate(self, state):
        shape = (self.n_rep, self.n_rows)
        for name in ("expeta", "resid", "curv"):
            state.d[name] = cuda.device_array(shape, dtype=self.dtype)

    def _refresh(self, state):
        s, d = self._dev_static(), state.d
        bx = row_blocks(self.n_rows, self.nt, 256)
        refresh_kernel[(bx, self.n_rep), self.nt](self.family, d["eta"], s["y"], self._weights_dev(), d["expeta"],
                                                  d["resid"], d["curv"])

    def _loglik_all(self, state):
        s = self._dev_static()
        bx = row_blocks(self.n_rows, self.nt, 64)
        partial = cuda.device_array((self.n_rep, bx), dtype=np.float64)
        loglik_kernel[(bx, self.n_rep), self.nt](self.family, state.d["eta"], s["y"], self._weights_dev(), partial)
        return partial.copy_to_host().sum(axis=1)

    def _sweep(self, state, coords, mask, beta, l1, l2, radius, mode, fixed, out):
        s, d = self._dev_static(), state.d
        fixed, out = self._mode_arrays(fixed, out)
        if self.n_rep == 1 and self.single_fit_grid:
            nb = grid_blocks()
            partial = cuda.device_array((2, nb), dtype=np.float64)
            try:
                sweep_grid_kernel[nb, self.nt](mode, self.family, s["indptr"], s["indices"], s["values"],
                                               s["indicator"], coords, mask, beta, l1, l2, radius, fixed, out,
                                               partial, d["eta"], s["y"], self._weights_dev(), d["expeta"],
                                               d["resid"], d["curv"])
                return
            except Exception as err:  # e.g. no cooperative launch (cudadevrt missing): one block instead
                if simulator_enabled():
                    raise
                warnings.warn(f"cooperative whole-grid sweep unavailable ({type(err).__name__}: {err}); "
                              "sweeping in one block", RuntimeWarning, stacklevel=2)
                type(self).single_fit_grid = False
        sweep_kernel[self.n_rep, self.nt](mode, self.family, s["indptr"], s["indices"], s["values"], s["indicator"],
                                          coords, mask, beta, l1, l2, radius, fixed, out, d["eta"], s["y"],
                                          self._weights_dev(), d["expeta"], d["resid"], d["curv"])

    def _check_weights(self, weights):
        if weights.shape[1] != self.n_rows:  # the device reads them as the (R, N) row weights
            raise ValueError(f"replicate weights must have {self.n_rows} columns (one per row), not {weights.shape[1]}")

    def _cpu_reweight(self, w):
        return self.cpu.reweighted(w)
