"""The convergence rule of a fit: when to sweep which coordinates, polish, check the KKT
conditions, and stop. Kept apart from the sweeps so that every replicate of a batch
(:mod:`riskset.solver.replicates`) follows exactly the rule of a single fit."""
from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from riskset.core.penalty import Penalty

if TYPE_CHECKING:
    from riskset.solver.ccd import SolverOptions

#: Cycles between Newton polishes while coordinate descent progresses slowly.
POLISH_EVERY = 5

#: A polish ends the cycles (with a KKT check) only when the gain its Newton steps expect
#: next is below ``tol`` times this; one that settles above it (the steps stop at ``tol``)
#: is followed at once by a polish at ``tol`` times this, which costs less than the full
#: sweep it spares.
POLISH_SETTLED = 1e-2


class CycleControl:
    """The convergence rule of one fit (:class:`riskset.solver.ccd.Solver` holds one; each
    replicate of a batch has its own).

    Full sweeps alternate with active-set sweeps; the fit has converged when a *full*
    sweep changes the objective by less than ``tol`` (relative).
    """

    def __init__(self, objective: float, options: SolverOptions):
        self.objective = objective
        self.tol, self.kkt_tol, self.max_iter = options.tol, options.kkt_tol, options.max_iter
        self.k, self.full, self.after_full, self.change = 0, True, False, np.inf
        self.done, self.converged, self.failed = options.max_iter <= 0, False, False
        self.kkt_due, self.kkt, self.kkt_failed = False, np.nan, False
        self.grad = None  # the gradient of the KKT check that ended the fit (converged: the last step)
        self.reference = None  # the last exact gradient, for screened KKT checks (:mod:`riskset.solver.screening`)
        self.message = f"reached max_iter = {self.max_iter} cycles" if self.done else ""

    def next_sweep(self, coords, beta, pen: Penalty):
        """The coordinates of the next sweep: all of ``coords``, or their active set (off
        their prior center, or without an L1 term)."""
        if self.full:
            return coords
        return coords[(beta[coords] != pen.center[coords]) | (pen.l1[coords] == 0)]

    def cycled(self, objective: float) -> None:
        """Account for one cycle (a sweep) that ended at ``objective``."""
        self.k += 1
        if not np.isfinite(objective):
            self._stop_non_finite(objective, f"at cycle {self.k}")
            return
        self.change = abs(objective - self.objective) / (abs(objective) + 1.0)
        self.objective = objective
        self.after_full = self.full
        self.kkt_failed = False
        if self.change < self.tol:
            if self.full:
                self.kkt_due = True  # the caller computes the KKT violation: :meth:`checked`
                return
            self.full = True  # the active set has converged: check every coordinate
        else:
            self.full = False
        self._cap()

    def swept(self, objective: float, which: str) -> None:
        """Account for a sweep over some coordinates between polishes (``which``: the entrants,
        the violators) that ended at ``objective``; not a cycle, but a non-finite objective ends
        the fit as a cycle does (:meth:`cycled`)."""
        self.objective = objective
        if not np.isfinite(objective):
            self._stop_non_finite(objective, f"after cycle {self.k}, sweeping {which}")

    def _stop_non_finite(self, objective: float, where: str) -> None:
        """End the fit at a non-finite ``objective``, kept as the fit's (not the last finite one),
        the message saying ``where``."""
        self.objective, self.done, self.change, self.failed = objective, True, np.nan, True
        self.message = f"the fit stopped {where}: the objective became {objective}"

    def checked(self, kkt: float, grad: np.ndarray | None = None) -> None:
        """Account for the KKT violation (relative) after a full sweep that met ``tol``, found
        from the gradient ``grad`` (kept if the fit ends here: nothing moves after; None where
        the check screened it, :func:`riskset.solver.screening.kkt_gradient`)."""
        self.kkt_due, self.kkt = False, kkt
        if kkt <= self.kkt_tol:
            self.grad = grad
            self.done, self.converged = True, True
            self.message = (f"KKT violation {kkt:.1e} <= kkt_tol {self.kkt_tol:g} (relative objective change "
                            f"{self.change:.1e} < tol {self.tol:g})")
            return
        self.full, self.kkt_failed = True, True  # not optimal yet: full sweeps and a Newton polish go on
        self._cap()

    def _cap(self) -> None:
        if self.k >= self.max_iter:
            self.done = True
            if self.change >= self.tol:
                self.message = (f"reached max_iter = {self.max_iter} cycles; relative objective change "
                                f"{self.change:.2e} >= tol {self.tol:g}")
            else:
                self.message = (f"reached max_iter = {self.max_iter} cycles; KKT violation {self.kkt:.2e} > "
                                f"kkt_tol {self.kkt_tol:g}")

    @property
    def polish_due(self) -> bool:
        """Time for Newton steps on the active set: after a full sweep that did not converge
        (it has just settled the active set), and every :data:`POLISH_EVERY` cycles of slow
        linear progress (correlated coordinates, e.g. an intercept beside uncentred covariates)."""
        return self.kkt_failed or (self.change >= self.tol and (self.after_full or self.k % POLISH_EVERY == 0))

    def polished(self, objective: float, settled: float | None = None) -> None:
        """Account for a polish that ended at ``objective``: a full sweep checks it next, or
        the KKT conditions (:meth:`checked`, computed by the caller) if its Newton steps
        ``settled`` (the relative gain they expect next) below ``tol`` x :data:`POLISH_SETTLED`."""
        self.objective = objective
        self.full = True
        if settled is not None and settled < self.tol * POLISH_SETTLED:
            self.change, self.kkt_due = settled, True
