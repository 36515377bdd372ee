"""Broken adaptive ridge (BAR) and iterative hard thresholding (IHT): sparse selection by
iterated ridge fits, as OHDSI's BrokenAdaptiveRidge and IterativeHardThresholding packages
drive Cyclops.

Start from a ridge fit (variance ``initial_variance``); then repeat, from the previous
estimate b (Li, Suchard et al., BAR: Dai et al. 2018, eq. 2.2):

1. coefficients with |b_j| <= ``threshold`` are set to 0 and held there (fixed);
2. the others are refitted under a normal prior of variance |b_j|^(2 - delta) / penalty
   (L2 weight penalty / |b_j|^(2 - delta): a coefficient near 0 is pushed to 0, a large
   one barely shrunk, so the fixed point approximates an L0-penalized fit);
3. IHT only: the coefficients smaller in absolute value than the ``max_nonzero``-th largest
   of *all* coefficients are set to 0, the unpenalized ones kept (the package's rule: an
   intercept or excluded coefficient among the largest counts towards the K);

until no coefficient moves by ``tolerance`` or more (the packages' rule: the largest
absolute change from the previous, unthresholded estimate). ``penalty`` "bic" is
log(N) / 2, N the rows of the data (the packages' rule, also for stratified models).
With ``fit_best_subset`` the selected coefficients are refitted without a prior.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from riskset.core.interface import Datafit
from riskset.solver.ccd import SolverOptions, SolverResult, fit_ccd


@dataclass(frozen=True)
class AdaptiveRidgeSettings:
    """What a BAR / IHT fit iterates with (:class:`riskset.solver.prior.AdaptiveRidge`
    resolved against a fit's coefficients and rows)."""

    penalty: float              # the L0-like weight: L2 weight penalty / |b_j|^(2 - delta)
    initial_variance: float
    threshold: float
    tolerance: float
    max_iterations: int
    delta: float
    max_nonzero: int | None     # IHT's K; None for BAR
    fit_best_subset: bool


@dataclass
class AdaptiveRidgeResult:
    """The last fit of the iterations (``fit``), how many there were, whether they settled,
    and the final per-coefficient prior variances (inf: unpenalized; 0: held at 0)."""

    fit: SolverResult
    iterations: int
    converged: bool
    variances: np.ndarray


def fit_adaptive_ridge(datafit: Datafit, settings: AdaptiveRidgeSettings, penalized: np.ndarray,
                       options: SolverOptions | None = None, fixed: np.ndarray | None = None,
                       beta0: np.ndarray | None = None) -> AdaptiveRidgeResult:
    """Iterate ridge fits of ``datafit`` (module docstring). ``penalized`` (mask): the
    coefficients the prior selects among (the others: unpenalized, never thresholded);
    ``fixed`` (mask): coefficients held at their ``beta0`` value throughout (Cyclops'
    ``fixedCoefficients``)."""
    p = datafit.n_coef
    penalized = np.asarray(penalized, bool)
    held = np.zeros(p, bool) if fixed is None else np.asarray(fixed, bool)
    selecting = penalized & ~held
    start = np.zeros(p) if beta0 is None else np.asarray(beta0, np.float64)
    l2 = np.where(selecting, 1.0 / settings.initial_variance, 0.0)
    fit = fit_ccd(datafit, np.zeros(p), l2, beta0=start, fixed=held if held.any() else None, options=options)
    previous = fit.beta
    variances = np.where(selecting, settings.initial_variance, np.inf)
    for iteration in range(1, settings.max_iterations + 1):
        if not fit.converged:
            return AdaptiveRidgeResult(fit, iteration - 1, False, variances)
        working = np.where(selecting & (np.abs(previous) <= settings.threshold), 0.0, previous)
        zero = selecting & (working == 0.0)
        weight = np.abs(np.where(zero, 1.0, working)) ** (2.0 - settings.delta)
        variances = np.where(selecting, np.where(zero, 0.0, weight / settings.penalty), np.inf)
        l2 = np.where(selecting & ~zero, settings.penalty / weight, 0.0)
        fit = fit_ccd(datafit, np.zeros(p), l2, beta0=working, fixed=held | zero, options=options)
        beta = fit.beta
        if settings.max_nonzero is not None:
            beta = _keep_largest(beta, selecting, settings.max_nonzero)
        moved = float(np.max(np.abs(beta - previous))) if p else 0.0
        previous = beta
        if moved < settings.tolerance:
            break
    else:
        return AdaptiveRidgeResult(fit, settings.max_iterations, False, variances)
    if settings.fit_best_subset:  # the last iteration's selection, refitted without a prior
        fit = fit_ccd(datafit, np.zeros(p), np.zeros(p), beta0=working, fixed=held | zero, options=options)
    return AdaptiveRidgeResult(fit, iteration, True, variances)


def _keep_largest(beta, selecting, k: int) -> np.ndarray:
    """``beta`` with the coefficients of ``selecting`` below the k-th largest |value| of all
    of ``beta`` set to 0 (ties at the k-th value kept)."""
    values = np.abs(beta)
    if values.size <= k:
        return beta
    kth = np.partition(values, values.size - k)[values.size - k]
    return np.where(selecting & (values < kth), 0.0, beta)
