"""Adjusting a population on its propensity score, as CohortMethod does: trimming, matching,
stratification and inverse-probability-of-treatment weights. Each function takes a
:class:`~riskset.study.population.Population` with propensity scores and returns the adjusted
one, with its attrition row.
"""
from __future__ import annotations

import warnings

import numpy as np
from scipy.special import logit

from riskset import validation as check
from riskset.exceptions import DataWarning, InputError
from riskset.kernels.cpu.matching import greedy_match
from riskset.study.population import Population
from riskset.study.propensity import _bounds, _scores, preference_score

CALIPER_SCALES = ("standardized logit", "standardized", "propensity score")
TRIM_METHODS = ("symmetric", "asymmetric")
STRATUM_BASES = {"all": "ate", "target": "att", "comparator": "atu"}
IPTW_ESTIMANDS = ("ate", "att", "ato")


def trim_by_ps(population: Population, fraction: float = 0.05, method: str = "symmetric") -> Population:
    """Drop rows of extreme propensity scores (CohortMethod's ``trimByPs``): ``"symmetric"`` keeps
    fraction < ps < 1 - fraction; ``"asymmetric"`` first keeps the scores both cohorts share,
    then drops the target rows below the ``fraction`` quantile of the target's scores and the
    comparator rows above the 1 - ``fraction`` quantile of the comparator's (Stürmer et al. 2010)."""
    ps = _scores(population)
    if not 0 < fraction < 0.5:
        raise InputError(f"fraction must lie in (0, 0.5), got {fraction!r}")
    check.one_of("method", method, TRIM_METHODS)
    if method == "symmetric":
        return _kept(population.keep((ps > fraction) & (ps < 1 - fraction), "trimmed by propensity score"))
    t = population.target_rows()
    lower, upper = max(ps[t].min(), ps[~t].min()), min(ps[t].max(), ps[~t].max())
    overlap = population.keep((ps >= lower) & (ps <= upper), "trimmed to the overlap of the scores")
    ps, t = overlap.propensity, overlap.target_rows()
    cut_t, cut_c = np.quantile(ps[t], fraction), np.quantile(ps[~t], 1 - fraction)
    return _kept(overlap.keep((t & (ps >= cut_t)) | (~t & (ps <= cut_c)), "trimmed by propensity score"))


def trim_to_equipoise(population: Population, bounds=(0.3, 0.7)) -> Population:
    """Keep the rows whose preference score lies within ``bounds`` (CohortMethod's
    ``trimByPs(equipoiseBounds=)``; the preference score of the population as it is)."""
    lo, hi = _bounds(bounds)
    pref = preference_score(_scores(population), population.treatment)
    return _kept(population.keep((pref >= lo) & (pref <= hi), "trimmed to equipoise"))


def match_on_ps(population: Population, caliper: float = 0.2, caliper_scale: str = "standardized logit",
                max_ratio: int = 1, allow_reverse: bool = False) -> Population:
    """Match comparators to target rows on the propensity score (CohortMethod's ``matchOnPs``):
    greedy nearest-neighbour matching (:mod:`riskset.kernels.cpu.matching`), up to ``max_ratio``
    comparators per target row (0: no limit), each pair closer than the caliper: ``caliper``
    standard deviations of the logit of the score (``"standardized logit"``, the default), of
    the score (``"standardized"``), or an absolute distance on the score (``"propensity
    score"``); 0: no caliper. Unmatched rows are dropped; ``strata`` holds the matched sets.
    With ``allow_reverse``, and more target than comparator rows, comparators are matched to
    target rows instead (the estimand becomes ATU).

    >>> import numpy as np
    >>> p = Population(rows=np.arange(4), treatment=np.array([1, 0, 1, 0]), treatment_name="t",
    ...                propensity=np.array([0.30, 0.32, 0.60, 0.90]))
    >>> match_on_ps(p, caliper=0.05, caliper_scale="propensity score").rows.tolist()
    [0, 1]
    """
    ps = _scores(population)
    check.one_of("caliper_scale", caliper_scale, CALIPER_SCALES)
    if not (np.isfinite(caliper) and caliper >= 0):
        raise InputError(f"caliper must be a number >= 0 (0: no caliper), got {caliper!r}")
    max_ratio = check.positive_int("max_ratio", max_ratio, minimum=0)
    treatment = population.treatment
    reverse = allow_reverse and np.sum(treatment == 1) > np.sum(treatment == 0)
    if reverse:
        treatment = 1 - treatment
    order = np.argsort(ps, kind="stable")
    score = ps[order]
    if caliper == 0 or score[0] == score[-1]:
        width = np.inf
    elif caliper_scale == "standardized logit":
        score = logit(score)
        width = caliper * np.std(score[np.isfinite(score)], ddof=1)
    elif caliper_scale == "standardized":
        width = caliper * np.std(score, ddof=1)
    else:
        width = caliper
    sets = greedy_match(np.ascontiguousarray(score), np.ascontiguousarray(treatment[order], dtype=np.int64),
                        max_ratio or population.size, float(width))
    strata = np.empty(population.size, np.int64)
    strata[order] = sets
    matched = population.keep(strata >= 0, "matched on propensity score", strata=strata[strata >= 0],
                              estimand="atu" if reverse else "att", strata_kind="matched set")
    if matched.size == 0:
        raise InputError(f"no target row has a comparator within the caliper ({caliper:g}, {caliper_scale}): the "
                         "propensity scores of the two cohorts do not overlap")
    return matched


def stratify_by_ps(population: Population, n_strata: int = 10, base: str = "all") -> Population:
    """Strata of the propensity score (CohortMethod's ``stratifyByPs``): cut at the quantiles
    1/K .. (K-1)/K of the scores of ``base`` (``"all"``: ATE, ``"target"``: ATT,
    ``"comparator"``: ATU); tied quantiles merge strata (with a warning). Every row is kept."""
    ps = _scores(population)
    n_strata = check.positive_int("n_strata", n_strata)
    estimand = STRATUM_BASES[check.one_of("base", base, tuple(STRATUM_BASES))]
    basis = {"all": ps, "target": ps[population.target_rows()], "comparator": ps[~population.target_rows()]}[base]
    cuts = np.unique(np.quantile(basis, np.arange(1, n_strata) / n_strata)) if n_strata > 1 else np.array([])
    if cuts.size + 1 < n_strata:
        warnings.warn(f"asked for {n_strata} strata, but tied propensity scores allow only {cuts.size + 1}",
                      DataWarning, stacklevel=2)
    strata = np.searchsorted(cuts, ps, side="left")  # right-closed intervals (R's cut)
    return population.keep(np.ones(population.size, bool), "stratified by propensity score",
                           strata=strata.astype(np.int64), estimand=estimand, strata_kind="PS stratum")


def iptw(population: Population, estimand: str = "ate") -> Population:
    """Stabilized inverse-probability-of-treatment weights (CohortMethod's ``computeIptw``):
    ``"ate"`` P / ps (target) and (1 - P) / (1 - ps) (comparator), P the target share;
    ``"att"`` P and (1 - P) ps / (1 - ps); ``"ato"`` (overlap weights) 1 - ps and ps."""
    ps = _scores(population)
    check.one_of("estimand", estimand, IPTW_ESTIMANDS)
    t = population.target_rows()
    share = float(np.mean(t))
    with np.errstate(divide="ignore"):
        if estimand == "ate":
            w = np.where(t, share / ps, (1 - share) / (1 - ps))
        elif estimand == "att":
            w = np.where(t, share, (1 - share) * ps / (1 - ps))
        else:
            w = np.where(t, 1 - ps, ps)
    if not np.all(np.isfinite(w)):
        raise InputError("a propensity score of exactly 0 or 1 gives an infinite weight: trim the population "
                         "(trim_by_ps) before weighting")
    return population.keep(np.ones(population.size, bool), f"weighted ({estimand.upper()})", weights=w,
                           estimand=estimand)


def truncate_iptw(population: Population, max_weight: float = 10.0) -> Population:
    """Weights above ``max_weight`` set to it (CohortMethod's ``truncateIptw``)."""
    if population.weights is None:
        raise InputError("the population has no weights to truncate: iptw first")
    check.positive_number("max_weight", max_weight)
    return population.keep(np.ones(population.size, bool), f"weights truncated at {max_weight:g}",
                           weights=np.minimum(population.weights, max_weight))


def _kept(population: Population) -> Population:
    """``population``, with a warning if a step left one cohort empty."""
    t = population.target_rows()
    if t.all() or not t.any():
        warnings.warn(f"after '{population.attrition.step.iloc[-1]}' the {'comparator' if t.all() else 'target'} "
                      "cohort is empty", DataWarning, stacklevel=3)
    return population
