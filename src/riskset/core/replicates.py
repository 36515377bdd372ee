"""Replicates: R row weightings of one prepared datafit, fitted as a batch (docs/architecture.md, "Replicates").

Cross-validation folds, bootstrap draws and the points of a grid or of a profile
likelihood share X, the outcome and the family's row order; they differ only in case
weights (0 removes a row) and in their penalties or fixed coefficients. A
:class:`ReplicateBatch` holds the state of all R replicates and sweeps them together;
:func:`riskset.solver.replicates.fit_replicates` drives it with exactly the rules of
the single-fit solver.

On the CPU, :class:`ViewReplicates` batches any family as one reweighted view per
replicate, swept in turn or, given a thread pool, in parallel threads (the kernels
release the GIL, and each state owns every array a sweep writes, so views, even
repeats of one datafit, never share mutable memory); the GPU backend's batch
(:class:`riskset.kernels.gpu.replicates.DeviceReplicates`) keeps all R states on the
device and one kernel launch sweeps them all.
"""
from __future__ import annotations

from abc import ABC, abstractmethod
from concurrent.futures import Executor

import numpy as np

from riskset.core.interface import Datafit


class ReplicateBatch(ABC):
    """State and sweeps of R replicates; coefficients and penalties are (R, P) arrays."""

    n_replicates: int
    n_coef: int
    #: A full sweep's cost in gradients (:attr:`riskset.core.interface.Datafit.sweep_passes`):
    #: whether warm starts open with a polish. A device batch sweeps every replicate in one launch.
    sweep_passes: float = 5.0
    #: Whether :meth:`slopes` of a few coefficients cost less than the gradient (a warm start's
    #: opening then reads those of its likely entrants alone: :func:`riskset.solver.replicates.fit_replicates`).
    cheap_slopes: bool = False

    @abstractmethod
    def new_state(self, beta: np.ndarray):
        """State of every replicate at ``beta`` (R, P)."""

    @abstractmethod
    def sweep(self, state, mask: np.ndarray, beta: np.ndarray, prior: np.ndarray, radius: np.ndarray) -> None:
        """One CCD sweep of replicate r over the coordinates j with ``mask[r, j]``, in
        ascending j, under its penalty table ``prior[r]`` (:class:`riskset.core.penalty.Penalty`),
        updating ``beta``, ``radius`` and ``state`` in place."""

    @abstractmethod
    def loglik(self, state) -> np.ndarray:
        """Log-likelihood of every replicate (R,), computed exactly from the linear predictors."""

    def loglik_at(self, beta: np.ndarray) -> np.ndarray:
        """Log-likelihood of every replicate at ``beta`` (R, P), no state kept (held-out scores)."""
        return self.loglik(self.new_state(beta))

    @abstractmethod
    def gradient(self, state, rows=None) -> np.ndarray:
        """dl/dbeta of the replicates ``rows`` (all by default): (len(rows), P)."""

    def slopes(self, state, r: int, coefs: np.ndarray) -> np.ndarray:
        """dl/dbeta of replicate r at the coefficients ``coefs`` alone (here from its gradient)."""
        return self.gradient(state, [r])[0][coefs]

    @abstractmethod
    def view(self, r: int) -> Datafit:
        """Replicate r as an ordinary datafit (for Newton polishing)."""

    @abstractmethod
    def set_coef(self, state, rows: np.ndarray, beta: np.ndarray) -> None:
        """Recompute the state of replicates ``rows`` at ``beta[rows]``."""

    def view_state(self, state, r: int, beta: np.ndarray):
        """Replicate r's state as a state of its :meth:`view` at ``beta[r]``, for host work on
        the view (Newton polishing) that may change it in place; :meth:`set_states` hands the
        result back. Here a new one: the batch's state is not a view's."""
        return self.view(r).new_state(beta[r])

    def set_states(self, state, rows: np.ndarray, beta: np.ndarray, states: list) -> None:
        """Replicates ``rows`` moved to ``beta[rows]`` by host work on their views, which ended at
        the view states ``states``: make the batch's state current (here: :meth:`set_coef`)."""
        self.set_coef(state, rows, beta)

    def diagnose(self, state, beta: np.ndarray) -> list:
        """Per replicate: what is wrong with its state (:meth:`Datafit.diagnose`: not finite), or None."""
        return [None] * self.n_replicates

    def map(self, fn, rows) -> list:
        """[fn(r) for r in rows]: host work on separate replicates (e.g. Newton polishing on
        their views), which a batch may run in parallel."""
        return [fn(r) for r in rows]


class ViewReplicates(ReplicateBatch):
    """Any family, batched as one datafit (view) per replicate.

    The views may repeat one datafit (the points of a profile likelihood share their
    weights). With ``pool`` (a ``concurrent.futures`` executor, owned by the caller) the
    replicates' sweeps, states, log-likelihoods and Newton polishing run in its threads;
    without it, one after another.

    Examples
    --------
    >>> from concurrent.futures import ThreadPoolExecutor
    >>> import numpy as np, riskset
    >>> from riskset.solver.replicates import fit_replicates
    >>> datafit = riskset.models.get_model("cox").datafit(riskset.simulate(n=300, p=4, model="cox", seed=1))
    >>> free = np.ones((2, 4), bool)
    >>> free[:, 0] = False  # coefficient 0 held at 0.1 and at 0.2
    >>> beta0 = np.zeros((2, 4))
    >>> beta0[:, 0] = [0.1, 0.2]
    >>> with ThreadPoolExecutor(2) as pool:
    ...     fit = fit_replicates(ViewReplicates([datafit, datafit], pool), 0.0, 0.0, beta0, free)
    >>> fit.beta[:, 0].tolist()
    [0.1, 0.2]
    """

    cheap_slopes = True

    def __init__(self, views: list[Datafit], pool: Executor | None = None):
        if not views:
            raise ValueError("a replicate batch needs at least one replicate")
        self.views = views
        self.pool = pool
        self.n_replicates = len(views)
        self.n_coef = views[0].n_coef
        self.sweep_passes = views[0].sweep_passes

    def map(self, fn, rows):
        """[fn(r) for r in rows], on the pool's threads if there is one."""
        rows = list(rows)
        if self.pool is None or len(rows) < 2:
            return [fn(r) for r in rows]
        return list(self.pool.map(fn, rows))

    def _each(self, fn) -> list:
        return self.map(fn, range(self.n_replicates))

    def new_state(self, beta):
        return self._each(lambda r: self.views[r].new_state(beta[r]))

    def sweep(self, state, mask, beta, prior, radius):
        def one(r):
            coords = np.flatnonzero(mask[r])
            if coords.size:
                self.views[r].sweep(state[r], coords, beta[r], prior[r], radius[r])

        self._each(one)

    def loglik(self, state):
        return np.array(self._each(lambda r: self.views[r].loglik(state[r])))

    def loglik_at(self, beta):
        return np.array(self._each(lambda r: self.views[r].loglik_at(beta[r])))

    def gradient(self, state, rows=None):
        rows = range(self.n_replicates) if rows is None else rows
        return np.array(self.map(lambda r: self.views[r].gradient(state[r]), rows)).reshape(len(rows), self.n_coef)

    def slopes(self, state, r, coefs):
        return self.views[r].slopes(state[r], coefs)

    def view(self, r):
        return self.views[r]

    def set_coef(self, state, rows, beta):
        for r, fresh in zip(rows, self.map(lambda r: self.views[r].new_state(beta[r]), rows)):
            state[r] = fresh

    def view_state(self, state, r, beta):
        """The batch's own state of replicate r: it is its view's (no state rebuilt, O(nnz), per polish)."""
        return state[r]

    def set_states(self, state, rows, beta, states):
        for r, fresh in zip(rows, states):
            state[r] = fresh

    def diagnose(self, state, beta):
        return [v.diagnose(s, b) for v, s, b in zip(self.views, state, beta)]
