"""Empirical calibration with negative controls (Schuemie et al. 2014, 2018), as OHDSI's
EmpiricalCalibration computes it.

The estimates ``log RR_i`` (standard errors ``se_i``) of negative-control outcomes, known not
to be caused by the treatment, show the study's systematic error: the empirical null
distribution N(mu, tau^2) is fitted by maximum likelihood, each estimate drawn from
N(mu, tau^2 + se_i^2) (EmpiricalCalibration's ``fitNull``; riskset maximizes exactly where
the package runs Nelder-Mead). An estimate's calibrated p-value compares it with that null
(``calibrateP``); its calibrated interval shifts it by mu and widens its standard error to
sqrt(tau^2 + se^2) (``calibrateConfidenceInterval`` with ``convertNullToErrorModel``: the
systematic error taken as the same at every true effect size).
"""
from __future__ import annotations

import warnings
from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy.special import ndtr, ndtri

from riskset.exceptions import DataWarning, InputError

#: Estimates beyond this |log RR| are left out of the null (EmpiricalCalibration's log(100)).
EXTREME = np.log(100.0)


@dataclass(frozen=True)
class EmpiricalNull:
    """The empirical null distribution N(``mean``, ``sd``^2) of log effect estimates, fitted on
    ``n`` negative controls."""

    mean: float
    sd: float
    n: int

    def __str__(self) -> str:
        return f"empirical null: mean {self.mean:.4f}, sd {self.sd:.4f} ({self.n} negative controls)"


def _usable(log_rr, se):
    log_rr, se = np.asarray(log_rr, dtype=np.float64), np.asarray(se, dtype=np.float64)
    if log_rr.shape != se.shape or log_rr.ndim != 1:
        raise InputError(f"log_rr and se must be vectors of one length, got shapes {log_rr.shape} and {se.shape}")
    keep = np.isfinite(log_rr) & np.isfinite(se) & (se > 0) & (np.abs(log_rr) <= EXTREME)
    if not keep.all():
        warnings.warn(f"{int((~keep).sum())} negative-control estimate(s) left out of the null: not finite, without "
                      f"a positive standard error, or beyond |log RR| = log(100)", DataWarning, stacklevel=3)
    return log_rr[keep], se[keep]


def null_loglik(mean: float, sd: float, log_rr, se) -> float:
    """Log-likelihood of the null N(mean, sd^2) for estimates ``log_rr`` with errors ``se``."""
    var = sd ** 2 + np.asarray(se, dtype=np.float64) ** 2
    return float(-0.5 * np.sum(np.log(2 * np.pi * var) + (np.asarray(log_rr) - mean) ** 2 / var))


def fit_null(log_rr, se) -> EmpiricalNull:
    """Maximum-likelihood empirical null from negative-control estimates (EmpiricalCalibration's
    ``fitNull``). For a given sd the best mean is the precision-weighted mean; the sd is found
    by a bounded one-dimensional search (sd = 0 included).

    >>> null = fit_null([0.1, 0.3, -0.2, 0.5, 0.25], [0.1, 0.2, 0.15, 0.1, 0.3])
    >>> round(null.mean, 4), round(null.sd, 4)
    (0.1895, 0.2109)
    """
    from scipy.optimize import minimize_scalar

    x, s = _usable(log_rr, se)
    if x.size == 0:
        raise InputError("no usable negative-control estimate: the empirical null needs at least one")

    def best_mean(sd):
        w = 1.0 / (sd ** 2 + s ** 2)
        return float(np.sum(w * x) / np.sum(w))

    def objective(log_sd):
        sd = np.exp(log_sd)
        return -null_loglik(best_mean(sd), sd, x, s)

    search = minimize_scalar(objective, bounds=(np.log(1e-8), np.log(10.0)), method="bounded",
                             options={"xatol": 1e-10})
    sd = float(np.exp(search.x))
    if null_loglik(best_mean(0.0), 0.0, x, s) >= -search.fun:  # no systematic error beyond the sampling error
        sd = 0.0
    return EmpiricalNull(mean=best_mean(sd), sd=sd, n=int(x.size))


def calibrate_p(null: EmpiricalNull, log_rr, se, two_sided: bool = True) -> np.ndarray:
    """Calibrated p-values of estimates ``log_rr`` (errors ``se``) against ``null``
    (EmpiricalCalibration's ``calibrateP``); NaN where an estimate is not finite.

    >>> calibrate_p(EmpiricalNull(0.0, 0.0, 10), [0.0], [0.5]).tolist()
    [1.0]
    """
    x, s = np.asarray(log_rr, dtype=np.float64), np.asarray(se, dtype=np.float64)
    z = (x - null.mean) / np.sqrt(null.sd ** 2 + s ** 2)
    p = 2 * np.minimum(ndtr(z), ndtr(-z)) if two_sided else ndtr(-z)
    return np.where(np.isfinite(x) & np.isfinite(s), p, np.nan)


def calibrate_ci(null: EmpiricalNull, log_rr, se, level: float = 0.95) -> pd.DataFrame:
    """Calibrated estimates and intervals (EmpiricalCalibration's ``calibrateConfidenceInterval``
    with the null as its error model): ``log_rr`` - mean, the interval +- z sqrt(sd^2 + se^2),
    and that standard error. Columns ``log_rr``, ``lower``, ``upper``, ``se`` (log scale)."""
    if not 0 < level < 1:
        raise InputError(f"level must lie in (0, 1), got {level!r}")
    x, s = np.asarray(log_rr, dtype=np.float64), np.asarray(se, dtype=np.float64)
    z = ndtri(0.5 + level / 2)
    width = np.sqrt(null.sd ** 2 + s ** 2)
    centre = x - null.mean
    return pd.DataFrame({"log_rr": centre, "lower": centre - z * width, "upper": centre + z * width, "se": width})
