"""Batched replicate fits on the device (docs/architecture.md, "Replicates").

R weightings of one X (cross-validation folds, bootstrap draws, grid points) are fitted
at once: the state is (R, N) on the device and each sweep is one launch of the
persistent sweep kernel with R blocks, block r fitting replicate r, so one pass over
column j serves all R replicates (the column's indices and values are read once per
block from the same cache lines). :class:`DeviceReplicates` is the device
:class:`~riskset.core.replicates.ReplicateBatch`; the caller runs the shared driver
:func:`riskset.solver.replicates.fit_replicates` on it (the single-fit rules per
replicate: restricted start, convergence, Newton polish of small active sets on the
host), so the batched coefficients equal the CPU ones to rounding. Per sweep only the
(R, P) coefficients, radii and coordinate mask cross the bus (the (R, P, 3) penalty
table once per fit).
"""
from __future__ import annotations

import numpy as np

from riskset.core.replicates import ReplicateBatch

from .device import device_copy


class DeviceReplicates(ReplicateBatch):
    """R replicates of a device datafit (built by ``DeviceDatafit.replicates(weights)``)."""

    def __init__(self, device):
        self.device = device
        self.n_replicates, self.n_coef = device.n_rep, device.n_coef
        self._coords = device_copy(np.arange(self.n_coef, dtype=np.int64))
        self._prior = None  # (host table, its device copy): uploaded once per fit

    @classmethod
    def repeated(cls, device, n: int) -> "DeviceReplicates":
        """n replicates of ``device`` with its own row weights (points of a profile
        likelihood: they differ only in the coefficients held fixed)."""
        return cls(device.replicates(np.repeat(device.data_weights()[None, :], n, axis=0)))

    def _prior_on_device(self, prior):
        if self._prior is None or self._prior[0] is not prior:
            self._prior = (prior, device_copy(prior, np.float64))
        return self._prior[1]

    def new_state(self, beta):
        return self.device.new_state(beta)

    def sweep(self, state, mask, beta, prior, radius):
        beta_d = device_copy(beta)
        radius_d = device_copy(radius)
        self.device.sweep_batch(state, self._coords, device_copy(mask.astype(np.uint8)), beta_d,
                                self._prior_on_device(prior), radius_d)
        beta[:] = beta_d.copy_to_host()
        radius[:] = radius_d.copy_to_host()
        state.beta = beta.copy()

    def loglik(self, state):
        return np.asarray(self.device._loglik_all(state), dtype=np.float64)

    def gradient(self, state, rows=None):
        """dl/dbeta of the replicates ``rows`` (all by default): (len(rows), P)."""
        return self.device.gradients(state, rows)

    def view(self, r):
        return self.device._cpu_view(r)

    def set_coef(self, state, rows, beta):
        fresh = self.device.new_state(beta)
        state.d, state.kernel, state.beta = fresh.d, fresh.kernel, fresh.beta

    def diagnose(self, state, beta):
        return [self.device._cpu_view(r).diagnose(self.device._host_state(state, r), beta[r])
                for r in range(self.n_replicates)]
