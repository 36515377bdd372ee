"""Replicates as reweighted views of one prepared datafit (DESIGN.md section 4).

Cross-validation folds, bootstrap samples and grid points share X, the outcome and
the model's row order; they differ only in row weights (0 for held-out rows, draw
counts for bootstrap rows) and in the prior. :class:`Context` prepares the datafit
once; each replicate fits a view with its own weights, so nothing is copied or
re-sorted per replicate, and views fit in parallel threads (the kernels release
the GIL). Held-out rows are scored on the complementary view: for Cox that is the
partial likelihood computed within the held-out rows alone, as Cyclops does.
"""
from __future__ import annotations

import warnings
from dataclasses import dataclass, replace

import numpy as np
import pandas as pd

from riskset.models.base import Datafit, Model
from riskset.selection.folds import has_event
from riskset.solver.ccd import SolverOptions, fit_ccd
from riskset.solver.prior import Prior


@dataclass
class Context:
    """What every replicate shares: the data, the model, its prepared datafit, the prior family."""

    data: object
    model: Model
    prior: Prior
    tol: float

    def __post_init__(self):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            self.datafit = self.model.datafit(self.data)
        self.names = self.model.coef_names(self.data)
        self.datafit.names = self.names
        self.base_weights = np.ones(self.data.n_rows) if self.data.weights is None else self.data.weights

    def view(self, weights: np.ndarray) -> Datafit:
        """The datafit with row weights ``weights`` (Dataset row order)."""
        view = self.datafit.reweighted(weights)
        if view is None:  # the family cannot reweight in place: prepare again
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                view = self.model.datafit(replace(self.data, weights=weights))
            view.names = self.names
        return view

    def fit(self, weights: np.ndarray, prior: Prior, warm: pd.Series | None = None) -> pd.Series:
        """Coefficients of the fit with row ``weights`` and ``prior``, warm-started."""
        l1, l2 = prior.penalty_arrays(self.names, self.model.unpenalized_names())
        beta0 = None if warm is None else warm.reindex(self.names).fillna(0.0).to_numpy()
        res = fit_ccd(self.view(weights), l1, l2, beta0=beta0, options=SolverOptions(tol=self.tol))
        return pd.Series(res.beta, index=self.names)

    @property
    def event_code(self) -> int:
        """Status code of the event of interest (Fine-Gray may choose another than 1)."""
        return getattr(self.model, "event_of_interest", 1)

    def score(self, weights: np.ndarray, coef: pd.Series) -> float:
        """Log-likelihood of the rows with positive ``weights`` at ``coef`` (0 without events)."""
        if not np.any((weights > 0) & has_event(self.data, self.event_code)):
            return 0.0
        view = self.view(weights)
        return float(view.loglik(view.new_state(coef.reindex(self.names).fillna(0.0).to_numpy())))


def prior_with_variance(prior: Prior, variance: float) -> Prior:
    """The prior with its variance set (Laplace: gamma = sqrt(2 / variance))."""
    if prior.kind == "laplace":
        return prior.with_strength(float(np.sqrt(2.0 / variance)))
    if prior.kind == "normal":
        return prior.with_strength(float(variance))
    raise ValueError(f"cross-validation varies a Laplace or Normal prior, not {prior.kind!r}")


def default_variances(ctx: Context, n_grid: int) -> np.ndarray:
    """Log-spaced variances from strong to weak: Laplace from gamma_max down 10^2.5-fold."""
    if ctx.prior.kind == "laplace":
        l1, l2 = ctx.prior.with_strength(1e15).penalty_arrays(ctx.names, ctx.model.unpenalized_names())
        gamma_max = fit_ccd(ctx.datafit, l1, l2, options=SolverOptions(tol=ctx.tol)).gamma_max or 1.0
        return 2.0 / (gamma_max * np.logspace(0, -2.5, n_grid)) ** 2
    return np.logspace(-4, 1, n_grid)
