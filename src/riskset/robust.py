"""The robust (sandwich) covariance of the families that have one: Fine-Gray (``cmprsk::crr``'s,
:func:`riskset.competing_risks.robust_covariance`) and Cox (``coxph(robust = TRUE)``, clustered
by the data's ``subject``: :mod:`riskset.cox_scores`)."""
from __future__ import annotations

import warnings

import numpy as np
import pandas as pd

from riskset import competing_risks, cox_scores
from riskset.exceptions import DataWarning, InputError
from riskset.models.base import get_model

#: Families with a robust covariance.
ROBUST_FAMILIES = ("cox", "fine_gray")


def robust_covariance(fit, data, model=None, columns=None) -> pd.DataFrame:
    """Sandwich covariance of coefficients ``columns`` (positions among ``model``'s
    coefficients of ``data``; default: all but the fit's aliased and fixed ones) of ``fit``,
    the others held at their values. ``model``: the fit's, by default.

    >>> import riskset
    >>> data = riskset.simulate(n=300, p=2, model="cox", seed=3)
    >>> f = riskset.fit(data, "cox")
    >>> robust_covariance(f, data).round(4).shape
    (2, 2)
    """
    model = get_model(fit.model_name, **fit.model_options) if model is None else model
    if columns is None:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DataWarning)
            names = model.coef_names(data)
        columns = [j for j, n in enumerate(names) if n not in fit.aliased and n not in fit.fixed]
    columns = np.asarray(columns, dtype=np.int64)
    if model.name == "fine_gray":
        return competing_risks.robust_covariance(fit, data, model, columns=columns)
    if model.name != "cox":
        raise InputError(f"a robust (sandwich) covariance is implemented for {' and '.join(ROBUST_FAMILIES)} fits, "
                         f"not {model.name}")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DataWarning)
        names = model.coef_names(data)
        datafit = model.datafit(data)
    beta = fit.coef.reindex(names).fillna(0.0).to_numpy(dtype=np.float64)
    information = -datafit.hessian(datafit.new_state(beta), columns)
    cov = cox_scores.robust_covariance(cox_scores.cox_rows(model, data, beta, columns), information)
    kept = [names[j] for j in columns]
    return pd.DataFrame(cov, index=kept, columns=kept)


def robust_se(fit, data, model=None, columns=None) -> pd.Series:
    """Robust standard errors of coefficients ``columns`` (:func:`robust_covariance`): those
    ``riskset.fit`` shows for a Fine-Gray fit by default and for a Cox fit with
    ``variance="robust"`` (``fit.variance == 'robust'``)."""
    cov = robust_covariance(fit, data, model, columns)
    return pd.Series(np.sqrt(np.diag(cov.to_numpy())), index=cov.index)
