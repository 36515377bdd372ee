"""What every replicate of cross-validation, the bootstrap or a path shares (docs/architecture.md, "Replicates").

Cross-validation folds, bootstrap samples and grid points share X, the outcome and
the model's row order; they differ only in row weights (0 for held-out rows, draw
counts for bootstrap rows) and in the prior. :class:`Context` prepares the datafit
once; a *batch* of replicates, built by its :class:`~riskset.backend.Backend`, is fitted by
:func:`riskset.solver.replicates.fit_replicates`, with the rules of a single fit:

* on the CPU: one reweighted view per replicate (nothing copied or re-sorted);
  batches of one replicate run in parallel threads (the kernels release the GIL) or
  on a Dask cluster.
* on the GPU: all replicates in one device batch (state R x N on the device, one
  kernel launch per sweep for all of them).

Held-out rows are scored on the complementary weighting: for Cox that is the partial
likelihood computed within the held-out rows alone, as Cyclops does.
"""
from __future__ import annotations

import warnings
from dataclasses import dataclass, replace

import numpy as np
import pandas as pd

from riskset import validation as check
from riskset.backend import Backend
from riskset.core.interface import Reweightable
from riskset.core.penalty import Penalty
from riskset.core.replicates import ReplicateBatch
from riskset.exceptions import InputError
from riskset.models.base import Datafit, Model
from riskset.progress import preparing
from riskset.selection.folds import has_event, resampling_units
from riskset.solver.ccd import SolverOptions, SolverResult, fit_ccd
from riskset.solver.entrants import likely_entrants
from riskset.solver.prior import Prior, as_prior
from riskset.solver.prior_kinds import KINDS
from riskset.solver.replicates import ReplicateResult, fit_replicates


@dataclass
class Context:
    """What every replicate shares: the data, the model, its prepared datafit (``datafit``;
    ``prepared``: as the backend sweeps it), the prior family, where the fits run; with
    ``progress``, a line while the datafit is prepared."""

    data: object
    model: Model
    prior: Prior
    tol: float
    backend: Backend = Backend()
    progress: bool = False

    def __post_init__(self):
        self.model.check_roles(self.data)
        with warnings.catch_warnings(), preparing(self.progress, self.model, self.data):
            warnings.simplefilter("ignore")
            self.datafit = self.model.datafit(self.data)
        self.names = self.model.coef_names(self.data)
        self.datafit.names = self.names
        self.base_weights = np.ones(self.data.n_rows) if self.data.weights is None else self.data.weights
        self.prepared = self.backend.prepare(self.datafit)

    def view(self, weights: np.ndarray) -> Datafit:
        """The datafit with row weights ``weights`` (Dataset row order)."""
        view = self.datafit.reweighted(weights) if isinstance(self.datafit, Reweightable) else None
        if view is None:  # the family cannot reweight in place: prepare again
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                view = self.model.datafit(replace(self.data, weights=weights))
            view.names = self.names
        return view

    def missing_information(self, weights: np.ndarray) -> str | None:
        """Why the replicate with row ``weights`` carries no information (e.g. a training
        set or a bootstrap draw without an event), or None
        (:meth:`~riskset.models.base.Datafit.missing_information`)."""
        try:
            view = self.view(weights)
        except InputError as err:  # a family without in-place reweighting prepares again, and refuses
            return str(err)
        return view.missing_information()

    def n_event_units(self) -> int:
        """Number of resampling units (rows, subjects, strata) holding an event."""
        units = resampling_units(self.data, self.model)
        return int(np.unique(units[has_event(self.data, self.model.event_of_interest)]).size)

    def batch(self, weights: np.ndarray) -> ReplicateBatch:
        """The replicates with row weights ``weights`` (R, n_rows) on this context's backend."""
        return self.backend.replicates(self.prepared, weights, view=self.view)

    def fit_batch(self, batch: ReplicateBatch, priors: list[Prior], warm: np.ndarray | None = None,
                  likely: np.ndarray | None = None) -> ReplicateResult:
        """Fit replicate r of ``batch`` (from :meth:`batch`, reusable across grid points) with
        prior ``priors[r]``, warm-started at ``warm[r]`` (datafit coefficient order) whose likely
        entrants are ``likely[r]`` (:meth:`likely_entrants`; None: unknown)."""
        unpenalized = self.model.unpenalized_names()
        pen = Penalty.stack([p.penalty(self.names, unpenalized) for p in priors])
        return fit_replicates(batch, pen.l1, pen.l2, beta0=warm, options=SolverOptions(tol=self.tol), center=pen.center,
                              likely=likely)

    def fit_one_by_one(self, weights: np.ndarray, warm: np.ndarray) -> ReplicateResult:
        """Fits of the replicates with row weights ``weights`` (R, n_rows) under a prior that
        is not one penalty table (BAR, IHT, Jeffreys: ``prior.solve``), each started at
        ``warm[r]``: one after another, on the CPU (they share no batch)."""
        options, unpenalized = SolverOptions(tol=self.tol), self.model.unpenalized_names()
        held = np.zeros(len(self.names), bool)
        fits = [self.prior.solve(self.view(w), self.names, unpenalized, self.data.n_rows, options, held, start).result
                for w, start in zip(weights, warm)]
        nan = np.full(len(fits), np.nan)
        return ReplicateResult(np.array([f.beta for f in fits]), np.array([f.loglik for f in fits]),
                               np.array([f.objective for f in fits]), np.array([f.converged for f in fits]),
                               np.array([f.n_iter for f in fits]), [f.message for f in fits], nan,
                               [f.diverging for f in fits], nan)

    def likely_entrants(self, beta: np.ndarray, variance: float) -> np.ndarray:
        """The coordinates that may enter the active set of a replicate warm-started at the
        full-data fit ``beta`` at ``variance`` (:func:`riskset.solver.entrants.likely_entrants`, from
        the full data's gradient there: one gradient, shared by every split)."""
        pen = prior_with_variance(self.prior, variance).penalty(self.names, self.model.unpenalized_names())
        return likely_entrants(beta, self.datafit.gradient(self.datafit.new_state(beta)), pen)

    @property
    def unpenalized(self) -> bool:
        """No coefficient is penalized by the prior (the fits then have standard errors)."""
        return isinstance(self.prior, Prior) and not self.prior.penalty(
            self.names, self.model.unpenalized_names()).is_penalized

    def without_aliased(self, batch: ReplicateBatch, beta: np.ndarray) -> np.ndarray:
        """Unpenalized replicates' coefficients ``beta`` (R, P) as :func:`riskset.fit` gives
        them: where a replicate's information aliases a coefficient (e.g. a covariate absent
        from a bootstrap draw, which would otherwise keep its warm start), that coefficient
        is NaN and the others are refitted without it."""
        from riskset.inference import refit_without_aliased

        zero, options = np.zeros(len(self.names)), SolverOptions(tol=self.tol)

        def one(r):
            view = batch.view(r)
            state = view.new_state(beta[r])
            loglik = view.loglik(state)
            fitted = SolverResult(beta[r], state, loglik, loglik, True, 0, "")
            refit, aliased = refit_without_aliased(view, fitted, Penalty(zero, zero), options, warn=False)
            return np.where(aliased, np.nan, refit.beta)

        return np.array(batch.map(one, range(beta.shape[0]))).reshape(beta.shape)

    def path(self, grid: np.ndarray, progress: bool = False, desc: str = "regularization path") -> np.ndarray:
        """Full-data coefficients (len(grid), P) along ``grid`` (ascending variance: strongest
        penalty first), each fit warm-started from the previous one."""
        batch = self.batch(self.base_weights)
        out, warm = np.zeros((len(grid), len(self.names))), None
        iterator = grid
        if progress:
            from tqdm.auto import tqdm

            iterator = tqdm(grid, desc=desc, unit="fit")
        for g, v in enumerate(iterator):
            warm = self.fit_batch(batch, [prior_with_variance(self.prior, v)], warm).beta
            out[g] = warm[0]
        return out

    def fit(self, weights: np.ndarray, prior: Prior, warm: pd.Series | None = None) -> pd.Series:
        """Coefficients of the fit with row ``weights`` and ``prior``, warm-started."""
        beta0 = None if warm is None else warm.reindex(self.names).fillna(0.0).to_numpy()[None, :]
        return pd.Series(self.fit_batch(self.batch(weights), [prior], beta0).beta[0], index=self.names)

    def scorer(self, weights: np.ndarray):
        """``score(beta)``: per replicate, the log-likelihood of the rows with positive
        ``weights[r]`` at ``beta[r]`` (0 where those rows hold no event). The held-out batch
        is built once, for every grid point."""
        weights = np.atleast_2d(weights)
        events = has_event(self.data, self.model.event_of_interest)
        scored = np.flatnonzero([np.any((w > 0) & events) for w in weights])
        batch = self.batch(weights[scored]) if scored.size else None

        def score(beta: np.ndarray) -> np.ndarray:
            out = np.zeros(weights.shape[0])
            if batch is not None:
                out[scored] = batch.loglik_at(beta[scored])
            return out

        return score


def prior_with_variance(prior: Prior, variance: float) -> Prior:
    """The prior with its variance set (Laplace: gamma = sqrt(2 / variance))."""
    return prior.with_variance(variance)


def varied_prior(prior) -> Prior:
    """The prior whose variance cross-validation or the path varies: Laplace or Normal."""
    prior = as_prior(prior)
    if not (isinstance(prior, Prior) and prior.is_varied):
        raise InputError(f"prior must be a Laplace or Normal prior (its variance is varied), got {prior.to_dict()}")
    return prior


def checked_grid(variances, n_grid: int) -> np.ndarray | None:
    """``variances`` (each > 0) ascending, or None for the default grid, whose ``n_grid`` must be
    >= 1: checked before any work (:func:`variance_grid` makes the default grid)."""
    if variances is None:
        check.positive_int("n_grid", n_grid)
        return None
    grid = check.finite_numbers("variances", variances)
    if grid.size == 0 or np.any(grid <= 0):
        raise InputError(f"variances must be prior variances > 0, got {grid.tolist()}")
    return np.sort(grid)


def variance_grid(ctx: Context, grid: np.ndarray | None, n_grid: int) -> np.ndarray:
    """The variances to fit at, ascending: ``grid`` (from :func:`checked_grid`) or the default grid of ``n_grid``."""
    return np.sort(default_variances(ctx, n_grid)) if grid is None else grid


def default_variances(ctx: Context, n_grid: int) -> np.ndarray:
    """Log-spaced variances from strong to weak: Laplace from gamma_max down 10^2.5-fold."""
    if KINDS[ctx.prior.kind].path_from_gamma_max:
        pen = ctx.prior.with_strength(1e15).penalty(ctx.names, ctx.model.unpenalized_names())
        gamma_max = fit_ccd(ctx.datafit, pen.l1, pen.l2, options=SolverOptions(tol=ctx.tol),
                            center=pen.center).gamma_max
        return variances_below(gamma_max, n_grid)
    return np.logspace(-4, 1, n_grid)


def variances_below(gamma_max: float | None, n_grid: int) -> np.ndarray:
    """``n_grid`` Laplace variances from the one at ``gamma_max`` (every penalized coefficient
    zero; 1 if unknown) down 10^2.5-fold in gamma, strongest first."""
    return 2.0 / ((gamma_max or 1.0) * np.logspace(0, -2.5, n_grid)) ** 2
