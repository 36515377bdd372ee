"""Covariate normalization before a penalized fit, as Cyclops' ``createCyclopsData(normalize=)``:
each column that is not an indicator is multiplied by a scale so that a prior treats the
covariates alike; coefficients are reported on the original scale (Cyclops' ``coef(fit,
rescale = TRUE)``).

Scales (1 / the statistic of the column): ``stdev`` its standard deviation over all rows
(zeros included, divisor N), ``max`` its largest |value|, ``median`` and ``q95`` the median
and 95% quantile (linear interpolation) of its |non-zero values| (the stored values of a
sparse column, as Cyclops' sparse covariates from OHDSI's FeatureExtraction). A column whose
non-zero values are all 1 (an indicator), or that is all zeros, keeps scale 1.
"""
from __future__ import annotations

from dataclasses import replace

import numpy as np
import scipy.sparse as sp

from riskset.core.design import stores_no_values
from riskset.validation import one_of

NORMALIZATIONS = ("stdev", "max", "median", "q95")


def column_scales(X, kind: str) -> np.ndarray:
    """The multiplier of each column of ``X`` (module docstring), vectorized over the non-zeros."""
    one_of("normalize", kind, NORMALIZATIONS)
    X = sp.csc_matrix(X)
    if not stores_no_values(X):  # (an indicator matrix stores no zeros, and no value to change)
        X.eliminate_zeros()
    n, p = X.shape
    counts = np.diff(X.indptr)
    column = np.repeat(np.arange(p), counts)
    values = np.abs(X.data)
    if kind == "stdev":
        mean = np.bincount(column, weights=X.data, minlength=p) / n
        statistic = np.sqrt(np.maximum(np.bincount(column, weights=X.data ** 2, minlength=p) / n - mean ** 2, 0.0))
    elif kind == "max":
        statistic = np.zeros(p)
        np.maximum.at(statistic, column, values)
    else:  # quantile q of each column's |values|, linear interpolation (numpy's, Cyclops')
        q = 0.5 if kind == "median" else 0.95
        ordered = values[np.lexsort((values, column))]
        at = np.maximum(counts - 1, 0) * q
        lo, hi = np.floor(at).astype(np.int64), np.ceil(at).astype(np.int64)
        start = X.indptr[:-1]
        safe = counts > 0
        statistic = np.zeros(p)
        low, high = ordered[(start + lo)[safe]], ordered[(start + hi)[safe]]
        statistic[safe] = low + (at - lo)[safe] * (high - low)
    indicator = np.bincount(column, weights=(values != 1.0).astype(float), minlength=p) == 0
    scales = np.ones(p)
    use = ~indicator & (statistic > 0)
    scales[use] = 1.0 / statistic[use]
    return scales


def normalized(data, kind: str):
    """(``data`` with its covariate columns scaled, the scales): :func:`column_scales`."""
    scales = column_scales(data.X, kind)
    return replace(data, X=sp.csc_matrix(data.X @ sp.diags(scales))), scales
