"""Spline bases for smooth time effects (the age and season terms of a case series).

Two bases, evaluated on arrays by SciPy's B-splines:

- :func:`bspline_basis` is R's ``splines::bs(x, knots, Boundary.knots, degree)`` without
  the intercept column (the first basis function dropped), which SelfControlledCaseSeries
  uses for age (degree 2);
- :func:`cyclic_bspline_basis` is the periodic B-spline basis of ``mgcv::cSplineDes``
  (SelfControlledCaseSeries' ``cyclicSplineDesign``, for the month of the year): B-splines
  of order ``order`` on the knots ``k_1 < ... < k_m`` wrapped around the period
  ``k_m - k_1``, m - 1 functions that sum to one everywhere.
"""
from __future__ import annotations

import numpy as np
from scipy.interpolate import BSpline

from riskset.exceptions import InputError


def bspline_basis(x, knots, degree: int = 2) -> np.ndarray:
    """B-spline basis at ``x`` with boundary knots ``knots[0]``, ``knots[-1]`` and the others
    inner, without the intercept column: ``len(knots) - 2 + degree`` columns, as R's
    ``bs(x, knots = knots[2:(m-1)], Boundary.knots = knots[c(1, m)], degree)``. ``x`` must lie
    within the boundary knots (clip it first).

    >>> bspline_basis([0.0, 5.0, 10.0], [0, 5, 10]).round(3).tolist()
    [[0.0, 0.0, 0.0], [0.5, 0.5, 0.0], [0.0, 0.0, 1.0]]
    """
    knots = _sorted_knots(knots, 2)
    x = np.asarray(x, dtype=np.float64)
    if x.size and (x.min() < knots[0] or x.max() > knots[-1]):
        raise InputError(f"spline arguments must lie within the boundary knots [{knots[0]:g}, {knots[-1]:g}]")
    t = np.concatenate([np.repeat(knots[0], degree + 1), knots[1:-1], np.repeat(knots[-1], degree + 1)])
    if x.size == 0:
        return np.zeros((0, t.size - degree - 2))
    basis = BSpline.design_matrix(x, t, degree).toarray()
    return basis[:, 1:]


def cyclic_bspline_basis(x, knots, order: int = 3) -> np.ndarray:
    """Periodic B-spline basis of order ``order`` (degree ``order - 1``) on ``knots``, period
    ``knots[-1] - knots[0]``: ``len(knots) - 1`` columns summing to one (``mgcv::cSplineDes``).

    >>> B = cyclic_bspline_basis(np.arange(1, 13), 0.5 + np.linspace(0, 12, 5))
    >>> B.shape, bool(np.allclose(B.sum(axis=1), 1))
    ((12, 4), True)
    """
    knots = _sorted_knots(knots, order)
    x = np.asarray(x, dtype=np.float64)
    if x.size and (x.min() < knots[0] or x.max() > knots[-1]):
        raise InputError(f"cyclic spline arguments must lie within [{knots[0]:g}, {knots[-1]:g}]")
    m, period = knots.size, knots[-1] - knots[0]
    # order - 1 knots before the first, copied one period back, so that m - 1 B-splines
    # start at knots[0] - ..., knots[m - 2]; a function reaching past knots[-1] wraps to the start
    ext = np.concatenate([knots[m - order:m - 1] - period, knots])
    n_basis = m - 1
    basis = np.zeros((x.size, n_basis))
    for shift in (0.0, -period):  # the point itself, and its image one period back
        for i in range(n_basis):
            piece = BSpline.basis_element(ext[i:i + order + 1], extrapolate=False)(x + shift)
            basis[:, i] += np.nan_to_num(piece, nan=0.0)
    return basis


def _sorted_knots(knots, at_least):
    k = np.sort(np.asarray(knots, dtype=np.float64).ravel())
    if k.size < at_least or not np.all(np.isfinite(k)):
        raise InputError(f"a spline needs at least {at_least} finite knots, got {k.tolist()}")
    if np.any(np.diff(k) <= 0):
        raise InputError(f"spline knots must be distinct, got {k.tolist()}")
    return k


__all__ = ["bspline_basis", "cyclic_bspline_basis"]
