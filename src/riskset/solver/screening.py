"""The gradient of a KKT check, reading only the columns that a bound cannot clear.

Where every slope is a product of its column with one row vector r
(:meth:`~riskset.core.interface.SlopeRows.slope_rows`: dl/dbeta_j = a_j - x_j' r), slope j
moves between two states by x_j' (r_ref - r), at most ||x_j|| ||r - r_ref|| (Cauchy-Schwarz).
From the last exact gradient g_ref of a fit (its :class:`Reference`), a free coordinate at
its prior center whose |g_ref_j| plus that bound stays below its L1 rate meets its KKT
condition at the new state, whatever its slope there: only the other columns are read (the
active set and the few near their rates): after a Newton step most coefficients at their
centers are cleared, and a KKT check reads a fifth of the columns (docs/performance.md).

The gradient handed back holds g_ref_j at the cleared coordinates: like their true slopes,
below their rates, so every decision taken against a rate (the violation, the entrants, the
violators) is the one the exact gradient gives; their values are not exact, and it is not
kept as the fit's gradient (:meth:`riskset.solver.control.CycleControl.checked`).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from riskset.core.interface import SlopeRows
from riskset.core.penalty import Penalty

#: Relative slack under the rate for the rounding of g_ref and of the bound (far below any
#: KKT tolerance: a cleared coordinate's violation is 0).
SLACK = 1e-6


@dataclass
class Reference:
    """An exact gradient of a fit and the slopes' row vector at its state."""

    grad: np.ndarray
    rows: np.ndarray


def reference(datafit, state, grad) -> Reference | None:
    """The reference of the exact gradient ``grad`` at ``state``, or None where the family's
    slopes have no row vector."""
    return Reference(grad, datafit.slope_rows(state)[0]) if isinstance(datafit, SlopeRows) else None


def kkt_gradient(datafit, state, beta, pen: Penalty, free, ref: Reference | None) -> tuple[np.ndarray, bool]:
    """(the gradient for a KKT check at ``state``, whether it is exact): exact where less than
    half of the coefficients can be cleared from ``ref`` (the rest would then cost about a
    full gradient)."""
    if ref is None or not isinstance(datafit, SlopeRows):
        return datafit.gradient(state), True
    rows, norms = datafit.slope_rows(state)
    bound = norms * float(np.linalg.norm(rows - ref.rows))
    clear = free & pen.at_center(beta) & (pen.l1 > 0) & (np.abs(ref.grad) + bound <= (1.0 - SLACK) * pen.l1)
    read = np.flatnonzero(~clear)
    if 2 * read.size > clear.size:
        return datafit.gradient(state), True
    grad = ref.grad.copy()
    grad[read] = datafit.slopes(state, read)
    return grad, False
