"""Standard errors from the observed information and profile-likelihood intervals."""
from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
from scipy import optimize, stats

from riskset.exceptions import ConvergenceWarning
from riskset.solver.ccd import SolverOptions, fit_ccd

#: Largest number of coefficients whose covariance is computed by a dense inverse.
MAX_SE_COEF = 5000


def standard_errors(datafit, state, columns: np.ndarray) -> np.ndarray:
    """sqrt(diag(inverse observed information)) of the coefficients ``columns``.

    NaN where the information is singular (e.g. a covariate collinear with others).
    """
    if columns.size == 0 or columns.size > MAX_SE_COEF:
        return np.full(columns.size, np.nan)
    info = -datafit.hessian(state, columns)
    try:
        cov = np.linalg.inv(info)
    except np.linalg.LinAlgError:
        warnings.warn("the observed information is singular: standard errors are NaN", ConvergenceWarning,
                      stacklevel=3)
        return np.full(columns.size, np.nan)
    var = np.diag(cov)
    return np.sqrt(np.where(var > 0, var, np.nan))


def profile_intervals(datafit, beta_hat, objective_hat, l1, l2, columns, names, level=0.95,
                      options: SolverOptions | None = None, se=None) -> pd.DataFrame:
    """Profile-likelihood intervals of coefficients ``columns`` (as Cyclops' ``confint``).

    The bound b of coefficient j solves ``max_{beta: beta_j = b} f(beta) = f_hat -
    chi2_1(level) / 2`` where f is the penalized log-likelihood; each evaluation is a
    warm-started fit with beta_j held fixed.
    """
    options = options or SolverOptions()
    drop = stats.chi2.ppf(level, 1) / 2
    rows = []
    for k, j in enumerate(columns):
        fixed = np.zeros(datafit.n_coef, bool)
        fixed[j] = True
        warm = [beta_hat.copy()]

        def deficit(b, j=j, fixed=fixed, warm=warm):
            beta0 = warm[0].copy()
            beta0[j] = b
            r = fit_ccd(datafit, l1, l2, beta0=beta0, fixed=fixed, options=options)
            warm[0] = r.beta
            return objective_hat - r.objective - drop

        scale = se[k] if se is not None and np.isfinite(se[k]) and se[k] > 0 else 0.1 * max(1.0, abs(beta_hat[j]))
        bounds = []
        for direction in (-1.0, 1.0):
            warm[0] = beta_hat.copy()
            inner, outer = beta_hat[j], beta_hat[j] + direction * 2.0 * scale
            for _ in range(60):
                if deficit(outer) > 0:
                    break
                inner, outer = outer, beta_hat[j] + 2.0 * (outer - beta_hat[j])
            else:
                bounds.append(direction * np.inf)
                continue
            bounds.append(optimize.brentq(deficit, inner, outer, xtol=1e-8 * max(1.0, abs(outer))))
        rows.append({"name": names[j], "lower": bounds[0], "upper": bounds[1], "level": level})
    return pd.DataFrame(rows)
