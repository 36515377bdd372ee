"""Self-controlled case series (SCCS; Farrington 1995, Suchard et al. 2013).

Each case (stratum) is cut into *eras* of constant exposure; era r of case i has
length L_r, event count y_r and covariates x_r (drug indicators, age and season
groups). The event rate is ``exp(alpha_i + x_r beta)``; conditioning on the case's
total n_i = sum y_r removes alpha_i and leaves the multinomial likelihood::

    l = sum_i [ sum_r y_r (x_r beta + log L_r) - n_i log sum_r L_r exp(x_r beta) ]

i.e. conditional Poisson regression with offset log(L). exp(beta_j) is the
incidence rate ratio (IRR) of drug j. CCD with per-case sums costs O(nnz_j) per
coordinate (see :mod:`riskset.models.conditional`); any prior works (Laplace /
Normal on thousands of drugs, as in the paper), on the CPU or with ``backend="gpu"``
(the conditional Poisson device datafit).

Build the era table from person-level data with
:func:`riskset.data.sccs_builder.build_sccs`.
"""
from __future__ import annotations

import numpy as np
import pandas as pd
from scipy import special

from riskset.data.dataset import Dataset
from riskset.exceptions import InputError
from riskset.models.conditional import ConditionalPoisson


class SCCS(ConditionalPoisson):
    """Self-controlled case series: conditional Poisson on eras, offset = log(era length).

    Needs ``y`` (events per era), ``strata`` (the case) and ``offset`` = log(length)
    (``exposure=<length column>`` in :func:`riskset.data.ingest.from_frame`).
    Cases without events are dropped (DataWarning).
    """

    name = "sccs"
    ratio_name = "incidence_rate_ratio"

    def _build(self, data: Dataset, shard: bool):
        if data.offset is None:
            raise InputError("the sccs model needs the era lengths: give exposure=<era length column> "
                             "(offset = log(length)); without them every era would count as equally long")
        return super()._build(data, shard)


def incidence_rate_ratios(fit, level: float = 0.95) -> pd.DataFrame:
    """Table of incidence rate ratios exp(coef) with Wald intervals (where se is known).

    ``fit`` is a :class:`riskset.results.FitResult` (coef and se as pandas Series).
    """
    coef = pd.Series(fit.coef, dtype=float)
    se = pd.Series(getattr(fit, "se", pd.Series(np.nan, index=coef.index)), dtype=float).reindex(coef.index)
    z = special.ndtri(0.5 + level / 2)
    return pd.DataFrame({
        "name": coef.index,
        "coef": coef.to_numpy(),
        "se": se.to_numpy(),
        "irr": np.exp(coef.to_numpy()),
        "irr_lower": np.exp(coef.to_numpy() - z * se.to_numpy()),
        "irr_upper": np.exp(coef.to_numpy() + z * se.to_numpy()),
    })


__all__ = ["SCCS", "incidence_rate_ratios"]
