"""The large-scale propensity model, as CohortMethod's ``createPs``, and the preference score.

The model is an L1-regularized logistic regression of the treatment on every other covariate,
its variance chosen by cross-validation with CohortMethod's defaults (auto search, 10 x 10
folds, :data:`riskset.selection.cv.COHORT_METHOD_CV`). Before it is fitted, a covariate whose
univariable correlation with the treatment is above ``max_correlation`` (0.5) stops the study
with an error naming it: it is most likely part of the exposure definition (createPs'
``errorOnHighCorrelation``). A target or comparator cohort larger than ``max_cohort_size``
(250,000) is sampled down for the fit, and the intercept moved back to the whole population
(King & Zeng 2001, eq. 7), as createPs' ``maxCohortSizeForFitting``.
"""
from __future__ import annotations

import warnings
from dataclasses import dataclass, replace

import numpy as np
import pandas as pd
from scipy.special import expit, logit

from riskset.api import fit as fit_model
from riskset.data.dataset import Dataset
from riskset.exceptions import InputError
from riskset.results import FitResult
from riskset.selection.cv import COHORT_METHOD_CV, CVResult, cross_validate
from riskset.separability import univariable_correlation
from riskset.solver.prior import Laplace, Prior
from riskset.study.population import Population

#: Largest score the preference score takes the logit of (CohortMethod's 0.9999999).
SCORE_CAP = 0.9999999


@dataclass(frozen=True)
class PropensityModel:
    """The fitted propensity model: ``fit`` (coefficients: the covariates that predict treatment),
    ``cv`` (its cross-validation, None with a given prior), the covariates ``excluded`` from it,
    and whether the fit used a sample (``sampled``; its intercept corrected)."""

    fit: FitResult
    cv: CVResult | None
    excluded: list
    sampled: bool

    def coefficients(self) -> pd.DataFrame:
        """The non-zero coefficients, largest first (CohortMethod's ``getPsModel``)."""
        table = self.fit.coef_table()[["name", "estimate"]]
        table = table[(table.estimate != 0) | (table.name == "intercept")]
        return table.reindex(table.estimate.abs().sort_values(ascending=False).index).reset_index(drop=True)


def fit_propensity(data: Dataset, population: Population | None = None, *, treatment: str = "treatment",
                   prior: Prior | None = None, cv: dict | None = None, exclude=(), max_correlation: float = 0.5,
                   max_cohort_size: int = 250_000, seed: int = 1, n_jobs: int | None = None,
                   progress: bool = False) -> tuple[PropensityModel, Population]:
    """Fit the propensity model of ``population`` (default: every row of ``data``) and score it.

    prior : a Laplace prior of fixed variance, or None (cross-validated: ``cv``, keyword
        arguments of :func:`riskset.cross_validate`, default CohortMethod's).
    exclude : covariates left out of the model besides the treatment.
    Returns the model and the population with its ``propensity``.

    >>> from riskset.simulate import simulate_cohort
    >>> data = simulate_cohort(n=2000, p=20, seed=1)
    >>> model, population = fit_propensity(data, prior=Laplace(variance=0.1))
    >>> population.propensity.shape, population.attrition.step.tolist()
    ((2000,), ['original data', 'propensity score'])
    """
    population = Population.of(data, treatment) if population is None else population
    names = [n for n in data.covariate_names if n != population.treatment_name and n not in set(exclude)]
    unknown = sorted(set(exclude) - set(data.covariate_names))
    if unknown:
        raise InputError(f"exclude names unknown covariate(s): {', '.join(map(repr, unknown[:5]))}")
    if not names:
        raise InputError("no covariate is left for the propensity model")
    design = replace(data.subset(population.rows).select(names), y=population.treatment.astype(np.float64),
                     time=None, status=None, start=None, strata=None, strata_labels=None, offset=None,
                     censor_weights=None)
    _refuse_high_correlation(design, max_correlation, population.treatment_name)
    fitted_rows, sampled = _sample(population.treatment, max_cohort_size, seed)
    sample = design if not sampled else design.subset(fitted_rows)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        if prior is None:
            cv_result = cross_validate(sample, "logistic", Laplace(), n_jobs=n_jobs, progress=progress,
                                       **(COHORT_METHOD_CV if cv is None else cv))
            fit = cv_result.fit
        else:
            cv_result, fit = None, fit_model(sample, "logistic", prior, n_jobs=n_jobs)
    if sampled:  # the intercept of the sample moved to the whole population (King & Zeng 2001, eq. 7)
        shift = logit(population.treatment[fitted_rows].mean()) - logit(population.treatment.mean())
        fit = replace(fit, coef=fit.coef.copy())
        fit.coef["intercept"] -= shift
    if np.all(fit.coef.drop("intercept").to_numpy() == 0):
        warnings.warn("every coefficient of the propensity model but the intercept is 0: the covariates are "
                      "uninformative, or predict the treatment completely", stacklevel=2)
    score = expit(fit.linear_predictor(design))
    model = PropensityModel(fit=fit, cv=cv_result, excluded=list(exclude), sampled=sampled)
    return model, replace(population, propensity=score).counted("propensity score")


def _refuse_high_correlation(design: Dataset, threshold: float, treatment: str) -> None:
    """InputError naming the covariates whose correlation with the treatment exceeds ``threshold``."""
    if threshold >= 1:
        return
    corr = univariable_correlation(design, threshold=max(threshold, 1e-12)).dropna()
    corr = corr[corr.abs() > threshold]
    if len(corr):
        listed = ", ".join(f"{name!r} ({value:+.3f})" for name, value in corr.head(10).items())
        raise InputError(f"covariate(s) correlated with the treatment {treatment!r} beyond {threshold:g}: {listed}. "
                         "Perhaps part of the exposure definition is among the covariates: leave them out "
                         "(exclude=...), or raise max_correlation")


def _sample(treatment: np.ndarray, max_size: int, seed: int) -> tuple[np.ndarray, bool]:
    """Rows to fit on: every row, or each cohort sampled down to ``max_size`` (0: never)."""
    rng = np.random.default_rng(seed)
    rows, sampled = [], False
    for arm in (1, 0):
        members = np.flatnonzero(treatment == arm)
        if max_size and members.size > max_size:
            members, sampled = np.sort(rng.choice(members, max_size, replace=False)), True
        rows.append(members)
    return np.sort(np.concatenate(rows)), sampled


def preference_score(propensity, treatment) -> np.ndarray:
    """Walker et al.'s preference score: the propensity score with the treated share taken out,
    logit(F) = logit(ps) - logit(P), P the share of treated rows (CohortMethod's
    ``computePreferenceScore``; scores above 0.9999999 capped there).

    >>> preference_score([0.5, 0.2], [1, 0]).round(6).tolist()
    [0.5, 0.2]
    """
    ps = np.minimum(np.asarray(propensity, dtype=np.float64), SCORE_CAP)
    share = float(np.mean(np.asarray(treatment) == 1))
    return expit(logit(ps) - logit(share))


def equipoise(population: Population, bounds=(0.3, 0.7)) -> float:
    """The share of the population whose preference score lies within ``bounds`` (CohortMethod's
    ``computeEquipoise``; empirical equipoise is commonly taken as at least half)."""
    lo, hi = _bounds(bounds)
    pref = preference_score(_scores(population), population.treatment)
    return float(np.mean((pref >= lo) & (pref <= hi)))


def _bounds(bounds) -> tuple[float, float]:
    lo, hi = (float(b) for b in bounds)
    if not 0 <= lo < hi <= 1:
        raise InputError(f"equipoise bounds must be two numbers 0 <= lower < upper <= 1, got {tuple(bounds)!r}")
    return lo, hi


def _scores(population: Population) -> np.ndarray:
    if population.propensity is None:
        raise InputError("the population has no propensity scores yet: fit_propensity first")
    return population.propensity
