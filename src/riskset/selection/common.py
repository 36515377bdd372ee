"""Pieces shared by cross-validation, paths and the bootstrap."""
from __future__ import annotations

import warnings
from dataclasses import dataclass

import numpy as np

from riskset.api import fit
from riskset.exceptions import InputError
from riskset.models.base import Model
from riskset.selection.folds import has_event
from riskset.solver.prior import Prior


@dataclass(frozen=True)
class Context:
    """What every replicate shares: the data, the model and the prior family."""

    data: object
    model: Model
    prior: Prior
    tol: float


def prior_with_variance(prior: Prior, variance: float) -> Prior:
    """The prior with its variance set (Laplace: gamma = sqrt(2 / variance))."""
    if prior.kind == "laplace":
        return prior.with_strength(float(np.sqrt(2.0 / variance)))
    if prior.kind == "normal":
        return prior.with_strength(float(variance))
    raise ValueError(f"cross-validation varies a Laplace or Normal prior, not {prior.kind!r}")


def prior_variance(prior: Prior) -> float:
    return 2.0 / prior.gamma**2 if prior.kind == "laplace" else prior.variance


def default_variances(ctx: Context, n_grid: int) -> np.ndarray:
    """Log-spaced variances from strong to weak: Laplace from gamma_max down 10^2.5-fold."""
    if ctx.prior.kind == "laplace":
        gamma_max = quiet_fit(ctx, ctx.data, ctx.prior.with_strength(1e15)).gamma_max or 1.0
        gammas = gamma_max * np.logspace(0, -2.5, n_grid)
        return 2.0 / gammas**2
    return np.logspace(-4, 1, n_grid)


def quiet_fit(ctx: Context, data, prior, warm_start=None):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return fit(data, ctx.model, prior, tol=ctx.tol, warm_start=warm_start)


def heldout_loglik(model: Model, test, coef) -> float:
    """Log-likelihood of held-out rows at ``coef`` (for Cox: the partial likelihood
    computed within the held-out rows alone, as Cyclops does). Zero without events."""
    if not np.any(has_event(test)):
        return 0.0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            datafit = model.datafit(test)
        except InputError:
            if model.name in ("cox", "fine_gray") and np.all(test.status != 1):
                return 0.0
            raise
        names = model.coef_names(test)
        beta = coef.reindex(names).fillna(0.0).to_numpy()
        return float(datafit.loglik(datafit.new_state(beta)))
