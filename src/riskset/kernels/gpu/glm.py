"""GLM families (logistic, Poisson, least squares) on the device.

Mirrors :mod:`riskset.kernels.cpu.glm`: per row ``resid = w (y - mu)`` and
``curv = w dmu/deta``, ``expeta`` cached and updated by the factor exp(delta x) (one
``exp`` per move for indicator columns). The family's device functions (``refresh``,
``gradient``, ``terms``, ``move``: strided over a column's non-zeros) specialize the
persistent sweep (:mod:`.sweep`) twice: one block per replicate
(:data:`sweep_kernel`), and a single fit over the whole grid
(:data:`sweep_grid_kernel`, cooperative launch); the only host traffic per sweep is
beta and the trust-region radii.
"""
from __future__ import annotations

import math

import numpy as np
from numba import cuda, float64

from riskset.core.interface import ClosedFormStart, ExactSeparation
from riskset.kernels.cpu import glm as cpu_kernels

from .base import DeviceDatafit
from .blocks import block_sum2
from .columns import scale_rows, scatter_columns
from .device import MAX_THREADS, device_copy, row_blocks
from .sweep import compile_gradient, compile_sweep

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
def refresh(data, state, r, tid, nt, sa, sb, sf):
    """Nothing to refresh: every row's state is current after each move."""


@cuda.jit(device=True)
def terms(data, state, r, j, tid, nt, sa, sb, sf):
    """This thread's share (non-zeros tid, tid + nt, ...) of g = sum x resid and
    h = -sum x^2 curv over column j."""
    family, indptr, indices, values, indicator, y, w = data
    eta, expeta, resid, curv = state
    g = 0.0
    h = 0.0
    for k in range(indptr[j] + tid, indptr[j + 1], nt):
        i = indices[k]
        x = float(values[k])
        g += x * resid[r, i]
        h -= x * x * curv[r, i]
    return g, h


@cuda.jit(device=True)
def move(data, state, r, j, step, tid, nt):
    """beta_j += step at this thread's share of column j's non-zeros (one ``exp`` per move
    for an indicator column; exp(eta) anew where it had overflowed or underflowed, as on the CPU)."""
    family, indptr, indices, values, indicator, y, w = data
    eta, expeta, resid, curv = state
    factor = math.exp(step)
    ind = indicator[j] != 0
    for k in range(indptr[j] + tid, indptr[j + 1], nt):
        i = indices[k]
        x = float(values[k])
        e = eta[r, i] + step * x
        eta[r, i] = e
        ee = float(expeta[r, i])
        if not (0.0 < ee < math.inf):  # overflowed or underflowed: no factor brings it back
            ee = math.exp(e)
        elif ind:
            ee *= factor
        else:
            ee *= math.exp(step * x)
        expeta[r, i] = ee
        mu, v = mean_and_curvature(family, e, ee)
        resid[r, i] = float(w[r, i]) * (float(y[i]) - mu)
        curv[r, i] = float(w[r, i]) * v


# no separate screen (g alone is no cheaper to reduce than (g, h)), as on the CPU
#: one block per replicate
sweep_kernel = compile_sweep(refresh, None, terms, move)
#: a single fit over the whole grid (cooperative launch)
sweep_grid_kernel = compile_sweep(refresh, None, terms, move, grid=True)
#: the full gradient, one block per (coefficient, replicate)
gradient_kernel = compile_gradient(None, terms)


class GLMDeviceDatafit(DeviceDatafit, ClosedFormStart, ExactSeparation):
    """:class:`~riskset.models.glm.GLMDatafit` with X and the state on the device."""

    family_name = "glm"
    sweep_kernel = staticmethod(sweep_kernel)  # a dispatcher binds like a function: no self
    gradient_kernel = staticmethod(gradient_kernel)
    sweep_grid_kernel = staticmethod(sweep_grid_kernel)
    device_quadratic = True
    state_fields = ("eta", "expeta", "resid", "curv")

    def __init__(self, cpu, dtype="float64", weights=None):
        super().__init__(cpu, dtype, weights)
        #: what the device copies besides the design (:class:`~riskset.kernels.cpu.glm.Device`)
        self.record = cpu.device_record()
        self.family = int(self.record.data.family)
        self.family_name = {LOGISTIC: "logistic", POISSON: "poisson", GAUSSIAN: "least_squares"}[self.family]

    # the CPU datafit's closed-form start and exact separation test (questions about the data)
    def unpenalized_start(self, beta, coefs):
        return self._cpu_view(0).unpenalized_start(beta, coefs)

    def univariable_separation(self, columns):
        return self.cpu.univariable_separation(columns)

    def recedes(self, direction):
        return self._cpu_view(0).recedes(direction)

    def _make_static(self):
        """Device copies of the record's kernel record and outcomes, and of the design's values (one
        per non-zero: the device kernels read no value shift)."""
        data = self.record.data
        indptr, indices, values = data.indptr.astype(np.int64), data.indices, self.design.full_values()
        indicator = np.asarray(data.indicator, np.uint8)
        if data.first:  # implicit intercept: an explicit column of ones on the device
            n = self.n_rows
            indptr = np.r_[0, indptr + n]
            indices = np.r_[np.arange(n), indices]
            values = np.r_[np.ones(n), values]
            indicator = np.r_[np.uint8(1), indicator]
        return dict(indptr=device_copy(indptr), indices=device_copy(indices.astype(self.itype)),
                    values=device_copy(values.astype(self.dtype)), indicator=device_copy(indicator),
                    y=device_copy(self.record.y.astype(self.dtype)))

    def _weights_dev(self):
        if self._per_rep is None:
            w = self.cpu.data_weights()[None, :] if self.weights is None else self.weights
            self._per_rep = device_copy(w, self.dtype)
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

    def kernel_data(self):
        s = self._dev_static()
        return (self.family, s["indptr"], s["indices"], s["values"], s["indicator"], s["y"], self._weights_dev())

    def local_quadratic(self, state, columns):
        """:meth:`riskset.models.glm.GLMDatafit.local_quadratic` on the device for a single fit
        over the whole grid in float64 (the host's from a rebuilt CPU state otherwise):
        gradient X_A' resid and diagonal (X_A ** 2)' curv by one block per column (with the
        intercept in A, its column of -H, X_A' curv, from the same pass), each product
        ``-X_A' (curv X_A b)`` by atomic adds, a row scaling and one block per column."""
        if not self._polish_on_device():
            return super().local_quadratic(state, columns)
        from riskset.core.interface import LocalQuadratic

        s, d = self._dev_static(), state.d
        self._refresh(state)  # exact resid and curv from eta
        cols_h = np.ascontiguousarray(columns, dtype=np.int64)
        cols, m, n = device_copy(cols_h), cols_h.shape[0], self.n_rows
        dots = cuda.device_array((m, 2), dtype=np.float64)
        grad = self._column_dots(cols, d["resid"], dots)[:, 0]
        coupling, curvature = self._column_dots(cols, d["curv"], dots).T
        zeros = device_copy(np.zeros((1, n)))
        u = cuda.device_array((1, n), dtype=np.float64)

        def hessian_times(b):
            u.copy_to_device(zeros)
            scatter_columns[max(1, min(m, 4096)), self.helper_threads](s["indptr"], s["indices"], s["values"],
                                                                       cols, device_copy(b, np.float64), u)
            scale_rows[row_blocks(n, self.helper_threads, 4096), self.helper_threads](u, d["curv"])
            return -self._column_dots(cols, u, dots)[:, 0]

        ones = np.flatnonzero(cols_h == 0) if self.record.data.first else ()  # device column 0: the intercept's ones
        if not len(ones):
            return LocalQuadratic(grad, curvature, hessian_times)
        return LocalQuadratic(grad, curvature, hessian_times, intercept=int(ones[0]), coupling=coupling)

    def information_scale(self, state, columns):
        """(X_A ** 2)' curv on the device where the polish runs there: the curvature alone, as
        the CPU's (no gradient pass); the host's otherwise."""
        if not self._polish_on_device():
            return super().information_scale(state, columns)
        self._refresh(state)  # exact curv from eta
        cols = device_copy(np.ascontiguousarray(columns, dtype=np.int64))
        return self._column_dots(cols, state.d["curv"], cuda.device_array((cols.shape[0], 2), dtype=np.float64))[:, 1]

    def _check_weights(self, weights):
        if weights.shape[1] != self.n_rows:  # the device reads them as the (R, N) row weights
            raise ValueError(f"replicate weights must have {self.n_rows} columns (one per row), not {weights.shape[1]}")

    def _cpu_reweight(self, w):
        return self.cpu.reweighted(w)
