"""Replicates: R row weightings of one prepared datafit, fitted as a batch (DESIGN.md section 4).

Cross-validation folds, bootstrap draws and the points of a grid or of a profile
likelihood share X, the outcome and the family's row order; they differ only in case
weights (0 removes a row) and in their penalties or fixed coefficients. A
:class:`ReplicateBatch` holds the state of all R replicates and sweeps them together;
:func:`riskset.solver.replicates.fit_replicates` drives it with exactly the rules of
the single-fit solver.

On the CPU, :class:`ViewReplicates` batches any family as one reweighted view per
replicate, swept in turn (batches run in parallel threads); the GPU backend's batch
(:class:`riskset.kernels.gpu.replicates.DeviceReplicates`) keeps all R states on the
device and one kernel launch sweeps them all.
"""
from __future__ import annotations

from abc import ABC, abstractmethod

import numpy as np

from riskset.models.base import Datafit
from riskset.solver.ccd import sweep_function


class ReplicateBatch(ABC):
    """State and sweeps of R replicates; coefficients and penalties are (R, P) arrays."""

    n_replicates: int
    n_coef: int

    @abstractmethod
    def new_state(self, beta: np.ndarray):
        """State of every replicate at ``beta`` (R, P)."""

    @abstractmethod
    def sweep(self, state, mask: np.ndarray, beta: np.ndarray, l1: np.ndarray, l2: np.ndarray,
              radius: np.ndarray) -> None:
        """One CCD sweep of replicate r over the coordinates j with ``mask[r, j]``, in
        ascending j, updating ``beta``, ``radius`` and ``state`` in place."""

    @abstractmethod
    def loglik(self, state) -> np.ndarray:
        """Log-likelihood of every replicate (R,), computed exactly from the linear predictors."""

    @abstractmethod
    def gradient(self, state) -> np.ndarray:
        """dl/dbeta of every replicate (R, P)."""

    @abstractmethod
    def view(self, r: int) -> Datafit:
        """Replicate r as an ordinary datafit (for Newton polishing)."""

    @abstractmethod
    def set_coef(self, state, rows: np.ndarray, beta: np.ndarray) -> None:
        """Recompute the state of replicates ``rows`` at ``beta[rows]``."""

    def diagnose(self, state, beta: np.ndarray) -> list:
        """Per replicate: a message if the fit is degenerate (e.g. separation), else None."""
        return [None] * self.n_replicates


class ViewReplicates(ReplicateBatch):
    """Any family, batched as one reweighted view per replicate, swept one after another."""

    def __init__(self, views: list[Datafit]):
        if not views:
            raise ValueError("a replicate batch needs at least one replicate")
        self.views = views
        self.n_replicates = len(views)
        self.n_coef = views[0].n_coef

    def new_state(self, beta):
        return [v.new_state(b) for v, b in zip(self.views, beta)]

    def sweep(self, state, mask, beta, l1, l2, radius):
        for r, view in enumerate(self.views):
            coords = np.flatnonzero(mask[r])
            if coords.size:
                sweep_function(view)(state[r], coords, beta[r], l1[r], l2[r], radius[r])

    def loglik(self, state):
        return np.array([v.loglik(s) for v, s in zip(self.views, state)])

    def gradient(self, state):
        return np.array([v.gradient(s) for v, s in zip(self.views, state)])

    def view(self, r):
        return self.views[r]

    def set_coef(self, state, rows, beta):
        for r in rows:
            state[r] = self.views[r].new_state(beta[r])

    def diagnose(self, state, beta):
        return [getattr(v, "diagnose", lambda s, b: None)(s, b) for v, s, b in zip(self.views, state, beta)]
