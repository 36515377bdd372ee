"""Batched replicate fits on the device (docs/architecture.md, "Replicates").

R weightings of one X (cross-validation folds, bootstrap draws, grid points) are fitted
at once: the state is (R, N) on the device and each sweep is one launch of the
persistent sweep kernel with R blocks, block r fitting replicate r, so one pass over
column j serves all R replicates (the column's indices and values are read once per
block from the same cache lines). :class:`DeviceReplicates` is the device
:class:`~riskset.core.replicates.ReplicateBatch`; the host runs the shared driver
:func:`riskset.solver.replicates.fit_replicates` (the single-fit rules per replicate:
restricted start, convergence, Newton polish of small active sets on the host), so the
batched coefficients equal the CPU ones to rounding. Per sweep only the (R, P)
coefficients, radii and coordinate mask cross the bus.
"""
from __future__ import annotations

import numpy as np
from numba import cuda

from riskset.core.replicates import ReplicateBatch
from riskset.solver.ccd import SolverOptions
from riskset.solver.replicates import ReplicateResult, fit_replicates as _drive


class DeviceReplicates(ReplicateBatch):
    """R replicates of a device datafit (built by ``DeviceDatafit.replicates(weights)``)."""

    def __init__(self, device):
        self.device = device
        self.n_replicates, self.n_coef = device.n_rep, device.n_coef
        self._coords = cuda.to_device(np.arange(self.n_coef, dtype=np.int64))
        self._penalties = {}  # "l1" / "l2" -> (host array, its device copy): uploaded once per fit

    @classmethod
    def repeated(cls, device, n: int) -> "DeviceReplicates":
        """n replicates of ``device`` with its own row weights (points of a profile
        likelihood: they differ only in the coefficients held fixed)."""
        return cls(device.replicates(np.repeat(device.data_weights()[None, :], n, axis=0)))

    def _on_device(self, name, a):
        cached = self._penalties.get(name)
        if cached is None or cached[0] is not a:
            cached = (a, cuda.to_device(np.ascontiguousarray(a, dtype=np.float64)))
            self._penalties[name] = cached
        return cached[1]

    def new_state(self, beta):
        return self.device.new_state(beta)

    def sweep(self, state, mask, beta, l1, l2, radius):
        beta_d = cuda.to_device(np.ascontiguousarray(beta))
        radius_d = cuda.to_device(np.ascontiguousarray(radius))
        self.device._sweep(state, self._coords, cuda.to_device(mask.astype(np.uint8)), beta_d,
                           self._on_device("l1", l1), self._on_device("l2", l2), radius_d, 0, None, None)
        beta[:] = beta_d.copy_to_host()
        radius[:] = radius_d.copy_to_host()
        state.beta = beta.copy()

    def loglik(self, state):
        return np.asarray(self.device._loglik_all(state), dtype=np.float64)

    def gradient(self, state):
        return np.array([self.device._cpu_view(r).gradient(self.device._host_state(state, r))
                         for r in range(self.n_replicates)])

    def view(self, r):
        return self.device._cpu_view(r)

    def set_coef(self, state, rows, beta):
        fresh = self.device.new_state(beta)
        state.d, state.beta = fresh.d, fresh.beta

    def diagnose(self, state, beta):
        return [self.device._cpu_view(r).diagnose(self.device._host_state(state, r), beta[r])
                for r in range(self.n_replicates)]


def fit_replicates(datafit, weights, l1, l2=None, beta0=None, tol: float = 1e-10, max_iter: int = 1000,
                   dtype: str = "float64", polish_max_active: int = 100) -> ReplicateResult:
    """Fit R row weightings of one datafit at once on the device.

    Parameters
    ----------
    datafit : a CPU datafit (GLM, Cox, Fine-Gray, conditional) or a device datafit from ``to_device``.
    weights : (R, n) row weights in Dataset row order (as ``Datafit.reweighted``); 0 removes
        a row (a held-out fold), counts give bootstrap draws.
    l1, l2 : (P,) or (R, P) penalty weights (e.g. per-replicate grid points).
    beta0 : (P,) or (R, P) warm starts.
    """
    from . import to_device

    weights = np.atleast_2d(np.asarray(weights, dtype=np.float64))
    batch = DeviceReplicates(to_device(datafit, dtype=dtype).replicates(weights))
    opts = SolverOptions(tol=tol, max_iter=max_iter, polish_max_active=polish_max_active)
    return _drive(batch, l1, l2, beta0=beta0, options=opts)
