"""The end of a fit (single or a replicate of a batch): a non-finite state fails it and
names where, so does an objective that ended below where it started (lost precision);
otherwise the test that the estimate exists (:mod:`riskset.solver.separation`)."""
from __future__ import annotations

import numpy as np

from riskset.core.penalty import Penalty
from riskset.solver.separation import diverging_coefficients, nonexistence_message


def verdict(datafit, beta, objective: float, diagnosis: str | None, where: str, pen: Penalty, free, converged: bool,
            start_objective: float | None = None) -> tuple[str | None, dict]:
    """(the message that fails a fit, or None; its diverging coefficients) of a fit that ended at
    ``beta`` with ``objective`` and ``converged`` as the cycles left it, whose state
    ``datafit.diagnose`` found ``diagnosis`` (None: finite) ``where`` (e.g. after which cycle).
    A converged fit whose start was at ``start_objective`` fails if it lost ground
    (:func:`lost_ground`). Single fits (:func:`riskset.solver.ccd.finish`) and every replicate
    (:mod:`riskset.solver.replicates`) end here."""
    problem = state_problem(datafit, beta, diagnosis, where)
    if problem is None and start_objective is not None and converged:
        problem = lost_ground(datafit, beta, start_objective, pen)
    if problem:
        return problem, {}
    if not np.isfinite(objective):  # the cycles that met it have said where; a converged fit has not
        return (f"the fit stopped: the objective became {objective} (a numerical overflow)" if converged
                else None), {}
    diverging = diverging_coefficients(datafit, beta, pen.l1, pen.l2, free)
    return (nonexistence_message(datafit, diverging) if diverging else None), diverging


def lost_ground(datafit, beta, start_objective: float, pen: Penalty) -> str | None:
    """Coordinate descent only climbs: the message of a fit whose penalized log-likelihood,
    recomputed from scratch at ``beta``, ended below ``start_objective`` (its value at the
    start), or None. It happens when the sums a sweep updates in place (risk-set or stratum
    sums of w exp(eta)) lose their precision to cancellation: one row's weight 1e12 times
    the others', or linear predictors spanning many orders of magnitude."""
    end = datafit.loglik(datafit.new_state(beta)) - pen.value(beta)
    if end >= start_objective - 1e-9 * (abs(start_objective) + 1.0):
        return None
    return (f"the fit lost its numerical precision: the penalized log-likelihood fell from {start_objective:.8g} "
            f"at the start to {end:.8g}; case weights or covariate values spanning many orders of magnitude "
            "make the sums cancel: rescale them (e.g. bound the weights' ratio) or put a prior on the coefficients")


def state_problem(datafit, beta, problem: str | None, where: str) -> str | None:
    """The message of a fit that reached non-finite coefficients or a state with ``problem``
    (from ``datafit.diagnose``), naming ``where`` (e.g. the cycle) and the first non-finite
    coefficient; None if all is finite."""
    bad = np.flatnonzero(~np.isfinite(beta))
    if bad.size:
        return (f"the fit stopped {where}: coefficient {datafit.coef_label(int(bad[0]))!r} became "
                f"{beta[bad[0]]} (a numerical overflow; check the covariate's scale or put a prior on it)")
    return f"the fit stopped {where}: {problem}" if problem else None
