"""Before the fit: which covariates alone make the likelihood monotone (separation).

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
    if covariates is None:
        columns = np.arange(len(names))
    else:
        unknown = [c for c in covariates if c not in names]
        if unknown:
            raise ValueError(f"separability: unknown covariate(s) {', '.join(map(repr, unknown))}")
        columns = np.array([names.index(c) for c in covariates], dtype=np.int64)
    direction = univariable_directions(datafit, columns)
    return pd.DataFrame({"name": [names[j] for j in columns], "separable": direction != 0, "direction": direction,
                         "pattern": [datafit.separation_pattern(names[j], d) if d else ""
                                     for j, d in zip(columns, direction)]})
