"""Age and season as smooth effects in a self-controlled case series, as SelfControlledCaseSeries
models them.

Every case's observation period is cut at the first day of every calendar month; in the
month that starts at day m (or at the observation start, if later) a case of birth date b
has age ``a = max(m, observation start) - b`` (days) and the month of the year s in 1..12.
The era's log-rate gains

- an age term: the quadratic B-spline basis of R's ``bs`` at ``a`` (clipped to the boundary
  knots), knots by default at the 1%, 25.5%, 50%, 74.5% and 99% quantiles of the cases' ages
  at their outcomes (SelfControlledCaseSeries' ``ageKnots = 5``);
- a season term: the periodic quadratic B-spline basis (``mgcv::cSplineDes``) at s, knots by
  default evenly spread over the year, ``0.5 + 12 (0:4) / 4`` (``seasonKnots = 5``). Its m - 1
  functions sum to one, a constant that the case's own intercept already is; the last one is
  left out (SelfControlledCaseSeries keeps all and lets the fit pick one of the equivalent
  optima), which leaves the fitted curve unchanged.

Times are days since 1970-01-01 (what :func:`riskset.data.sccs_builder.build_sccs` makes of
dates), so that months are calendar months.
"""
from __future__ import annotations

import warnings
from typing import NamedTuple

import numpy as np
import pandas as pd
import scipy.sparse as sp

from riskset.data.splines import bspline_basis, cyclic_bspline_basis
from riskset.exceptions import DataWarning, InputError
from riskset.validation import finite_numbers

SEASON_PERIOD = (0.5, 12.5)


class TimeEffects(NamedTuple):
    """The knots of the age and season splines of an era table and the names of their columns."""
    age_knots: tuple
    age_columns: tuple
    season_knots: tuple
    season_columns: tuple


def month_index(days):
    """Months since January 1970 of the days ``days`` since 1970-01-01."""
    d = np.floor(np.asarray(days, dtype=np.float64)).astype(np.int64).astype("datetime64[D]")
    return d.astype("datetime64[M]").astype(np.int64)


def month_start(months):
    """Day (since 1970-01-01) on which the month ``months`` (since January 1970) starts."""
    return np.asarray(months, dtype=np.int64).astype("datetime64[M]").astype("datetime64[D]").astype(np.float64)


def month_cuts(start, end):
    """The first days of the months strictly inside each period [start, end): (period index, day)."""
    first = month_index(start) + 1
    last = month_index(end)
    last = np.where(month_start(last) < end, last, last - 1)
    count = np.maximum(last - first + 1, 0)
    period = np.repeat(np.arange(start.size), count)
    offset = np.arange(count.sum()) - np.repeat(np.cumsum(count) - count, count)
    return period, month_start(np.repeat(first, count) + offset)


def age_knots_at(outcome_ages, knots) -> np.ndarray | None:
    """Age knots: given, or ``knots`` quantiles (from 1% to 99%) of the ages at the outcomes,
    without repeats; None (with a DataWarning) where the cases are too few for them."""
    if np.ndim(knots) == 0:
        n = int(knots)
        if n < 2:
            raise InputError(f"age_knots must be at least 2 (or a list of ages), got {knots!r}")
        if n > outcome_ages.size:
            warnings.warn(f"sccs: {n} age knots but only {outcome_ages.size} outcome(s); age left out of the "
                          "model", DataWarning, stacklevel=3)
            return None
        k = np.unique(np.quantile(outcome_ages, np.linspace(0.01, 0.99, n)))
        if k.size < 2:
            warnings.warn("sccs: every outcome at one age; age left out of the model", DataWarning, stacklevel=3)
            return None
        return k
    k = np.sort(finite_numbers("age_knots", knots))
    if k.size < 2 or np.any(np.diff(k) <= 0):
        raise InputError(f"age_knots must be at least 2 distinct ages, got {k.tolist()}")
    return k


def season_knots_at(knots) -> np.ndarray:
    """Season knots on the month scale [0.5, 12.5]: ``knots`` evenly spread, or given."""
    lo, hi = SEASON_PERIOD
    if np.ndim(knots) == 0:
        n = int(knots)
        if n < 3:
            raise InputError(f"season_knots must be at least 3 (or a list of months), got {knots!r}")
        return lo + np.linspace(0, hi - lo, n)
    k = np.sort(finite_numbers("season_knots", knots))
    if k.size < 3 or np.any(np.diff(k) <= 0) or k[0] > 1 or k[-1] < 12 or k[-1] - k[0] != hi - lo:
        raise InputError(f"season_knots must be at least 3 distinct months spanning one year (the last 12 after "
                         f"the first, covering 1..12, e.g. 0.5 ... 12.5), got {k.tolist()}")
    return k


def time_effect_columns(era_case, era_start, case_start, case_birth, age_knots, season_knots):
    """Age and season spline columns of the eras (CSR blocks) and their :class:`TimeEffects`.

    ``era_case``/``era_start``: each era's case and start day; ``case_start``/``case_birth``:
    each case's observation start and birth day (``case_birth`` None without age).
    """
    blocks, age_columns, season_columns = [], (), ()
    if age_knots is None and season_knots is None:
        return blocks, TimeEffects((), (), (), ())
    month = month_index(era_start)
    anchor = np.maximum(month_start(month), case_start[era_case])
    if age_knots is not None:
        age = np.clip(anchor - case_birth[era_case], age_knots[0], age_knots[-1])
        blocks.append(sp.csr_matrix(bspline_basis(age, age_knots)))
        age_columns = tuple(f"age_spline_{k + 1}" for k in range(blocks[-1].shape[1]))
    if season_knots is not None:
        month_of_year = (month % 12 + 1).astype(np.float64)
        basis = cyclic_bspline_basis(month_of_year, season_knots)[:, :-1]  # the last is the reference
        blocks.append(sp.csr_matrix(basis))
        season_columns = tuple(f"season_spline_{k + 1}" for k in range(basis.shape[1]))
    knots = [() if k is None else tuple(map(float, k)) for k in (age_knots, season_knots)]
    return blocks, TimeEffects(age_knots=knots[0], age_columns=age_columns, season_knots=knots[1],
                               season_columns=season_columns)


def time_effect_curves(coef, effects: TimeEffects) -> dict[str, pd.DataFrame]:
    """The fitted age and season effects as rate ratios, centred on their mean log (as
    SelfControlledCaseSeries plots them): ``{"season": month 1..12, "age": ages (days, and
    ``age_years``) from the first to the last knot}``, each with ``log_rr`` and ``rr``."""
    coef = pd.Series(coef, dtype=float)
    out = {}
    if effects.season_columns:
        months = np.arange(1, 13, dtype=np.float64)
        basis = cyclic_bspline_basis(months, effects.season_knots)[:, :-1]
        log_rr = basis @ coef[list(effects.season_columns)].to_numpy()
        out["season"] = _curve("month", months.astype(int), log_rr)
    if effects.age_columns:
        lo, hi = effects.age_knots[0], effects.age_knots[-1]
        ages = np.linspace(lo, hi, 101)
        log_rr = bspline_basis(ages, effects.age_knots) @ coef[list(effects.age_columns)].to_numpy()
        out["age"] = _curve("age", ages, log_rr)
        out["age"].insert(1, "age_years", ages / 365.25)
    return out


def _curve(name, x, log_rr):
    log_rr = log_rr - log_rr.mean()
    return pd.DataFrame({name: x, "log_rr": log_rr, "rr": np.exp(log_rr)})


__all__ = ["TimeEffects", "month_cuts", "age_knots_at", "season_knots_at", "time_effect_columns",
           "time_effect_curves"]
