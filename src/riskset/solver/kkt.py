"""The Karush-Kuhn-Tucker (KKT) conditions of a fit: the units of a coefficient's violation,
the largest violation (the stated accuracy of "converged"), and the coordinates that
violate them."""
from __future__ import annotations

import numpy as np

from riskset.core.penalty import Penalty

def kkt_unit(datafit, pen: Penalty, free, state=None, beta=None) -> np.ndarray:
    """Per coefficient, the unit of its KKT violation at ``state`` (a new state at ``beta`` if
    not given; only the information needs one). With an L1 prior, the largest L1 rate (a
    violation is a fraction of the penalty rate). Without, the square root of the
    coefficient's information there, sqrt(I_jj + l2_j): a violation is then a score
    statistic, how many standard errors the coordinate is from its optimum, the others held.
    With an L1 prior, a coefficient without an L1 term takes the smaller of the two.

    The information is that of the point checked, not of the start: the slope of a
    coefficient whose estimate does not exist (e.g. an intercept with no event) vanishes as
    it diverges, but its information vanishes as fast, so the score stays large until the
    coefficient is far out (|eta| of order 20), where the existence test sees the divergence;
    measured against the information at the start it passed near -14. A coefficient with no
    information keeps the unit of the others (1 without an L1 prior)."""
    lasso = bool(np.any(pen.l1[free] > 0))
    rate = float(np.max(pen.l1[free])) if lasso else 1.0
    unit = np.full(pen.l1.shape, rate)
    columns = informed_units(pen, free)
    if columns.size:
        state = datafit.new_state(beta) if state is None else state
        info = np.sqrt(np.maximum(datafit.information_scale(state, columns), 0.0) + pen.l2[columns])
        known = np.isfinite(info) & (info > 0)
        unit[columns[known]] = np.minimum(info[known], rate) if lasso else info[known]
    return unit


def informed_units(pen: Penalty, free) -> np.ndarray:
    """The free coefficients whose KKT unit (:func:`kkt_unit`) reads their information, so
    needs a state: all of them without an L1 prior, those without an L1 term with one."""
    return np.flatnonzero(free & (pen.l1 == 0)) if np.any(pen.l1[free] > 0) else np.flatnonzero(free)


def kkt_violation(datafit, state, beta, pen: Penalty, free, grad=None) -> float:
    """The largest KKT violation of the ``free`` coefficients at ``beta`` (``state``), in the
    units of :func:`kkt_unit` there; ``grad``: the log-likelihood's gradient there, if known."""
    grad = datafit.gradient(state) if grad is None else grad
    return pen.kkt_violation(beta, grad, kkt_unit(datafit, pen, free, state), free)


def violators(datafit, beta, state, grad, pen: Penalty, free, kkt_tol) -> np.ndarray:
    """The free coordinates whose KKT violation at ``beta`` (``state``, the log-likelihood's
    gradient ``grad``) exceeds ``kkt_tol`` in the units of :func:`kkt_unit`."""
    unit = kkt_unit(datafit, pen, free, state)
    return np.flatnonzero(free & (pen.kkt_violations(beta, grad) / unit > kkt_tol))
