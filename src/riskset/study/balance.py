"""Covariate balance: standardized mean differences before and after adjustment, by
CohortMethod's formulas (``computeCovariateBalance``, ``computeMeansPerGroup``).

Per cohort (target, comparator) and covariate, a weighted mean and standard deviation with
weights normalized to 1 in each cohort:

* no adjustment, or 1:1 matching: every row weight 1: mean = sum x / n, sd = sqrt((sum x^2 -
  (sum x)^2 / n) / n);
* strata with more than one row of a cohort (1:n matching, propensity strata): a row weighs
  1 / (rows of its cohort in its stratum); inverse-probability weighting: its weight;
  mean = sum w x, sd = sqrt(|sum w x^2 - mean^2| / (1 - sum w^2)).

The standardized difference is (mean_target - mean_comparator) / sqrt((sd_target^2 +
sd_comparator^2) / 2); NaN where both standard deviations are 0. Computed with two sparse
products per cohort: O(nnz).
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from riskset.data.dataset import Dataset
from riskset.exceptions import InputError
from riskset.study.population import Population

#: Absolute standardized difference above which a covariate counts as imbalanced.
THRESHOLD = 0.1


def cohort_moments(data: Dataset, population: Population) -> pd.DataFrame:
    """Mean and standard deviation of each covariate (the treatment excluded) in the target and
    comparator cohorts of ``population``, weighted as the module says; indexed by covariate."""
    names = [n for n in data.covariate_names if n != population.treatment_name]
    X = data.X[population.rows][:, data.covariate_index(names)].tocsc()
    w = row_weights(population)
    out = {}
    for arm, label in ((1, "target"), (0, "comparator")):
        rows = population.treatment == arm
        if not rows.any():
            raise InputError(f"the {label} cohort of the population is empty: no balance to compute")
        Xa, wa = X[rows], w[rows] / w[rows].sum()
        mean = Xa.T @ wa
        second = Xa.multiply(Xa).T @ wa
        if np.all(w == 1.0):
            var = np.maximum(second - mean ** 2, 0.0)          # (sum x^2 - (sum x)^2 / n) / n
        else:
            var = np.abs(second - mean ** 2) / (1.0 - np.sum(wa ** 2))
        out[f"mean_{label}"], out[f"sd_{label}"] = mean, np.sqrt(var)
    return pd.DataFrame(out, index=pd.Index(names, name="covariate"))


def row_weights(population: Population) -> np.ndarray:
    """Each row's weight in the balance: 1, 1 / (its cohort's rows in its stratum), or its IPTW."""
    if population.weights is not None:
        return np.asarray(population.weights, dtype=np.float64)
    if population.strata is None:
        return np.ones(population.size)
    cell = population.strata * 2 + population.treatment
    _, inverse, counts = np.unique(cell, return_inverse=True, return_counts=True)
    if counts.max() == 1:  # 1:1 matching: no weighting (CohortMethod's rule)
        return np.ones(population.size)
    return 1.0 / counts[inverse]


def standardized_difference(moments: pd.DataFrame) -> pd.Series:
    """(mean_target - mean_comparator) / sqrt((sd_target^2 + sd_comparator^2) / 2); NaN where undefined."""
    denominator = np.sqrt((moments.sd_target ** 2 + moments.sd_comparator ** 2) / 2.0)
    with np.errstate(divide="ignore", invalid="ignore"):
        diff = (moments.mean_target - moments.mean_comparator) / denominator
    return diff.where(np.isfinite(diff))


def covariate_balance(data: Dataset, before: Population, after: Population,
                      threshold: float = THRESHOLD) -> pd.DataFrame:
    """Balance of every covariate before and after adjustment: the cohort means and standard
    deviations, ``std_diff_before``, ``std_diff_after`` and ``balanced`` (|after| <=
    ``threshold``, or undefined), sorted by |std_diff_after|, largest first. Covariate labels
    of the data, where it has them, in ``label``.

    >>> import riskset
    >>> from riskset.simulate import simulate_cohort
    >>> from riskset.study import fit_propensity, match_on_ps
    >>> data = simulate_cohort(n=3000, p=20, seed=2)
    >>> _, scored = fit_propensity(data, prior=riskset.Laplace(variance=1.0))
    >>> table = covariate_balance(data, scored, match_on_ps(scored))
    >>> bool(table.std_diff_before.abs().max() > 0.1), bool(table.balanced.all())
    (True, True)
    """
    b, a = cohort_moments(data, before), cohort_moments(data, after)
    table = pd.concat([b.add_suffix("_before"), a.add_suffix("_after")], axis=1)
    table["std_diff_before"] = standardized_difference(b)
    table["std_diff_after"] = standardized_difference(a)
    table["balanced"] = ~(table.std_diff_after.abs() > threshold)
    if data.covariate_labels:
        table.insert(0, "label", [data.covariate_labels.get(n, n) for n in table.index])
    order = table.std_diff_after.abs().fillna(-1).sort_values(ascending=False, kind="stable").index
    return table.loc[order].reset_index()


def balance_summary(table: pd.DataFrame, threshold: float = THRESHOLD) -> dict:
    """The largest |standardized difference| before and after (with the covariate), and the
    share of covariates above ``threshold`` before and after."""
    out = {}
    for when in ("before", "after"):
        col = table[f"std_diff_{when}"].abs()
        i = col.idxmax() if col.notna().any() else None
        out[f"max_{when}"] = float(col.max()) if i is not None else float("nan")
        out[f"max_{when}_covariate"] = table.covariate[i] if i is not None else None
        out[f"share_above_{when}"] = float(np.mean(col > threshold))
    return out
