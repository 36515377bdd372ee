"""Before the fit: which covariates alone make the likelihood monotone (separation), and
which are strongly correlated with the outcome (Cyclops' ``getUnivariableCorrelation``,
which CohortMethod's propensity step calls to name covariates that predict the treatment
almost perfectly).

As Cyclops' ``getUnivariableSeparability``: for each covariate, the model with that
covariate alone (and the model's intercept, if any) has no finite maximum. Such a
covariate, left unpenalized, makes the estimate of the full model fail to exist too
(the same direction of recession, the other coefficients held). The converse does not
hold (several covariates may separate together), which the solver's own test
(:mod:`riskset.solver.separation`) catches during the fit.
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from riskset.core.design import canonical_csc
from riskset.data.dataset import check_dataset
from riskset.exceptions import InputError
from riskset.kernels.cpu import separability as separability_kernels
from riskset.models.base import Model, get_model
from riskset.solver.separation import univariable_directions


def separability(data, model: str | Model = "logistic", covariates=None, **model_options) -> pd.DataFrame:
    """One row per covariate: does it alone separate the outcome?

    Parameters
    ----------
    data : Dataset
    model : a registered model name or a Model instance (options as in :func:`riskset.fit`).
    covariates : names to check (default: every coefficient of the model).

    Returns
    -------
    DataFrame with columns ``name``, ``separable`` (bool), ``direction`` (+1: the
    likelihood increases for ever as the coefficient -> +inf, -1: -> -inf, 0) and
    ``pattern`` (what the data look like, e.g. every event among the exposed).

    Cost: O(nnz) per covariate for logistic / Poisson (a Numba kernel); O(rows + nnz)
    per covariate for the risk-set families (one state each).

    Examples
    --------
    >>> import numpy as np, riskset
    >>> x = np.c_[[0, 0, 1, 1, 0, 1], [0.5, -1, 0.2, 0.1, 0.4, -0.3]]
    >>> riskset.separability(riskset.from_arrays(x, y=x[:, 0]), "logistic")[["name", "separable", "direction"]]
            name  separable  direction
    0  intercept      False          0
    1         x0       True          1
    2         x1      False          0
    """
    m = model if isinstance(model, Model) else get_model(model, **model_options)
    datafit = m.datafit(data)
    names = m.coef_names(data)
    datafit.names = names
    columns = _columns(names, covariates, "separability: unknown covariate(s)")
    direction = univariable_directions(datafit, columns)
    return pd.DataFrame({"name": [names[j] for j in columns], "separable": direction != 0, "direction": direction,
                         "pattern": [datafit.separation_pattern(names[j], d) if d else ""
                                     for j, d in zip(columns, direction)]})


def univariable_correlation(data, covariates=None, threshold: float = 0.0) -> pd.Series:
    """Pearson correlation of each covariate with the outcome ``y`` over the rows (unweighted,
    as Cyclops' ``getUnivariableCorrelation``), indexed by covariate name in the data's order;
    with ``threshold`` > 0, only those with |correlation| >= threshold. NaN for a constant
    covariate. Survival outcomes (time, status) have no ``y``: refused, as Cyclops does.

    Computed from column sums of the sparse matrix: O(nnz).

    >>> import numpy as np, riskset
    >>> x = np.c_[[0, 0, 1, 1, 0, 1], [0.5, -1, 0.2, 0.1, 0.4, -0.3]]
    >>> univariable_correlation(riskset.from_arrays(x, y=x[:, 0]), threshold=0.9).round(6).to_dict()
    {'x0': 1.0}
    """
    check_dataset("data", data)
    if data.y is None:
        raise InputError("univariable_correlation needs an outcome y (a treatment or outcome indicator, a count); "
                         "the data have none (time-to-event data: not implemented, as in Cyclops)")
    names = list(data.covariate_names)
    columns = _columns(names, covariates, "covariates names unknown covariate(s):")
    if not (np.isfinite(threshold) and 0 <= threshold <= 1):
        raise InputError(f"threshold must be a correlation between 0 and 1, got {threshold!r}")
    X = canonical_csc(data.X)  # the data's own matrix where it is canonical: no copy of X
    y = np.asarray(data.y, dtype=np.float64)
    n = y.size
    moments = np.empty((columns.shape[0], 3))
    separability_kernels.column_moments(X.indptr.astype(np.int64), X.indices, X.data, columns.astype(np.int64), y,
                                        moments)
    mean_x = moments[:, 0] / n
    var_x = moments[:, 1] / n - mean_x ** 2
    cov = moments[:, 2] / n - mean_x * y.mean()
    with np.errstate(divide="ignore", invalid="ignore"):
        corr = cov / np.sqrt(np.maximum(var_x, 0.0) * y.var())
    corr = np.where(var_x > 0, np.clip(corr, -1.0, 1.0), np.nan)
    out = pd.Series(corr, index=pd.Index([names[j] for j in columns], name="covariate"), name="correlation")
    return out[np.abs(out) >= threshold] if threshold > 0 else out


def _columns(names: list, covariates, unknown_message: str) -> np.ndarray:
    """Positions in ``names`` of ``covariates`` (all of them for None); an InputError (a
    ValueError) starting with ``unknown_message`` names those not in ``names``."""
    if covariates is None:
        return np.arange(len(names))
    unknown = [c for c in covariates if c not in names]
    if unknown:
        raise InputError(f"{unknown_message} {', '.join(map(repr, unknown))}")
    return np.array([names.index(c) for c in covariates], dtype=np.int64)
