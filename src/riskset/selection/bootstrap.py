"""Nonparametric bootstrap by resampling units (subjects, matched sets, rows).

Percentile intervals, and the proportion of replicates in which each coefficient is
non-zero — the "poor man's posterior probability" of Suchard et al. (2013). A
replicate is the full data with row weights equal to how often its unit was drawn.
"""
from __future__ import annotations

import warnings
from dataclasses import dataclass, field, replace

import numpy as np
import pandas as pd

from riskset.api import fit
from riskset import validation as check
from riskset.backend import Backend
from riskset.data.dataset import check_dataset
from riskset.data.normalize import normalized
from riskset.exceptions import DataWarning, InputError
from riskset.models.base import Model, as_model
from riskset.results import FitResult
from riskset.selection.common import Context
from riskset.selection.executors import run_tasks
from riskset.selection.folds import bootstrap_weights
from riskset.sharded import ShardedData
from riskset.sharded.sources import refuse_options
from riskset.solver.prior import HierarchicalPrior, Prior, as_prior
from riskset.core.memory import returns_freed_memory


@dataclass
class BootstrapResult:
    """Replicate estimates (one row per replicate) and the summary table.

    table : name, estimate (full data), lower and upper percentile bounds at
        ``level``, proportion of replicates in which the coefficient is non-zero; a
        ``covariate_name`` column after ``name`` when the data have covariate labels.
    uninformative : replicates whose draw carries no information (e.g. no event drawn):
        their estimates are NaN and they are left out of the table. Without a prior, a
        coefficient aliased in a draw (e.g. its covariate was not drawn) is NaN in that
        draw, as in :func:`riskset.fit`.
    not_converged : replicates whose fit did not converge (``max_iter``, a numerical
        failure): NaN, left out of the table, with a warning. A coefficient whose estimate
        does not exist in a draw (separation within the draw) is +-inf there, its true
        value, so that the percentile bounds say when such draws are frequent.
    """

    estimates: pd.DataFrame
    table: pd.DataFrame
    fit: FitResult
    level: float
    uninformative: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    not_converged: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))

    def rescaled(self, scale: pd.Series, normalize: str) -> "BootstrapResult":
        """These draws of normalized covariates on the original scale (coefficient times its
        covariate's scale: :meth:`riskset.results.FitResult.rescaled`)."""
        factor = scale.reindex(self.estimates.columns).fillna(1.0)
        by_row = factor.reindex(self.table["name"]).to_numpy()
        table = self.table.assign(estimate=self.table["estimate"] * by_row, lower=self.table["lower"] * by_row,
                                  upper=self.table["upper"] * by_row)
        return replace(self, estimates=self.estimates * factor, table=table, fit=self.fit.rescaled(scale, normalize))

    def plot(self, path=None, ax=None, names=None, **options):
        """Forest plot of the percentile intervals, coefficients shown by their ``covariate_name``
        where the table has one; ``options`` go to :func:`riskset.plots.selection.plot_forest`."""
        from riskset.plots.selection import plot_forest

        return plot_forest(self.table if names is None else self.table[self.table["name"].isin(names)],
                           path=path, ax=ax, title=f"Bootstrap {self.level:.0%} percentile intervals", **options)


@returns_freed_memory
def bootstrap(data, model: str | Model, prior: Prior | None = None, *, n_boot: int = 200, seed: int = 0,
              level: float = 0.95, executor=None, n_jobs: int | None = None, progress: bool = True,
              tol: float = 1e-8,
              backend: str = "cpu", dtype: str = "float64", normalize: str | None = None,
              **model_options) -> BootstrapResult:
    """Bootstrap the fit ``riskset.fit(data, model, prior)`` over ``n_boot`` replicates.

    Replicate i draws its units with ``numpy.random.SeedSequence(seed).spawn(n_boot)[i]``,
    so results do not depend on the executor or on the order replicates finish in. Sharded
    data (:class:`riskset.sharded.ShardedData`, ``executor`` the Dask client or scheduler
    address) are bootstrapped by Poisson draws where the rows are
    (:func:`riskset.selection.sharded_bootstrap.bootstrap_sharded`).
    ``backend="gpu"`` fits all replicates in one device batch. With a :func:`riskset.BAR` or
    :func:`riskset.IHT` prior each draw repeats the selection (on the CPU), and
    ``nonzero_proportion`` is how often each coefficient was selected. ``normalize``: the
    covariate normalization of :func:`riskset.fit`, every draw fitted on the normalized
    covariates and reported on the original scale. With
    :func:`riskset.Jeffreys` each draw is a Jeffreys fit (finite where a draw separates).

    Examples
    --------
    >>> import riskset
    >>> d = riskset.simulate(n=1000, p=5, model="poisson", seed=2)
    >>> b = riskset.bootstrap(d, "poisson", n_boot=20, progress=False)
    >>> list(b.table.columns)
    ['name', 'estimate', 'lower', 'upper', 'nonzero_proportion']
    """
    if isinstance(data, ShardedData):  # (the sharded bootstrap builds this module's result: imported here)
        from riskset.selection.sharded_bootstrap import bootstrap_sharded

        refuse_options(backend=(backend, "cpu"), dtype=(dtype, "float64"), n_jobs=(n_jobs, None),
                          normalize=(normalize, None))
        return bootstrap_sharded(data, model, prior, n_boot=n_boot, seed=seed, level=level, executor=executor,
                                 progress=progress, tol=tol, **model_options)
    check_dataset("data", data)
    m = as_model(model, **model_options)
    if normalize is not None:
        scaled, scales = normalized(data, normalize)
        result = bootstrap(scaled, m, prior, n_boot=n_boot, seed=seed, level=level, executor=executor, n_jobs=n_jobs,
                           progress=progress, tol=tol, backend=backend, dtype=dtype)
        return result.rescaled(coefficient_scales(m, data, scales), normalize)
    n_boot, seed = check.positive_int("n_boot", n_boot), check.seed("seed", seed)
    check.probability("level", level)
    check.positive_number("tol", tol)
    where = Backend.of(backend, dtype, n_jobs)
    where.check_executor(executor)
    prior = as_prior(prior)
    if isinstance(prior, HierarchicalPrior):
        raise InputError("the bootstrap of a hierarchical prior is not implemented (riskset.fit and "
                         "riskset.cross_validate take it)")
    ctx = Context(data, m, prior, tol, where, progress)
    if not isinstance(ctx.prior, Prior) and where.on_device:
        raise InputError(f"the bootstrap of a {ctx.prior.kind} prior runs on the CPU (each draw a fit of its own): "
                         f"use backend='cpu'")
    full = fit(data, m, ctx.prior, tol=tol, backend=backend, dtype=dtype, n_jobs=n_jobs)
    seeds = np.random.SeedSequence(seed).spawn(n_boot)
    size = ctx.backend.batch_size or n_boot
    tasks = [(seeds[a:a + size], full.coef) for a in range(0, n_boot, size)]
    coefs = run_tasks(_replicates, ctx, tasks, executor=executor, n_jobs=n_jobs, progress=progress,
                      desc="bootstrap")
    estimates = pd.DataFrame(np.concatenate([c for c, _, _ in coefs]), columns=ctx.names)
    uninformative = _left_out([p for _, problems, _ in coefs for p in problems], "draws carry no information",
                              "none of the {n} bootstrap draws can be fitted ({first}): the data hold too little "
                              "information to bootstrap")
    not_converged = _left_out([m for _, _, messages in coefs for m in messages], "fits did not converge",
                              "none of the {n} bootstrap fits converged (first: {first})")
    table = percentile_table(estimates.drop(index=np.union1d(uninformative, not_converged)), full, level)
    return BootstrapResult(estimates, table, full, level, uninformative, not_converged)


def percentile_table(valid: pd.DataFrame, full: FitResult, level: float) -> pd.DataFrame:
    """The summary of the ``valid`` draws' estimates around the ``full`` fit
    (:attr:`BootstrapResult.table`)."""
    alpha = (1 - level) / 2
    estimate = full.coef.copy()
    for name, direction in full.diverging.items():
        estimate[name] = direction * np.inf
    table = pd.DataFrame({"name": full.coef.index, "estimate": estimate.to_numpy(),
                          "lower": _quantile(valid, alpha).reindex(full.coef.index).to_numpy(),
                          "upper": _quantile(valid, 1 - alpha).reindex(full.coef.index).to_numpy(),
                          "nonzero_proportion": (valid != 0).where(valid.notna()).mean()
                          .reindex(full.coef.index).to_numpy()})
    if full.labels:
        table.insert(1, "covariate_name", full.display_names(table["name"]))
    return table


def coefficient_scales(model: Model, data, scales) -> pd.Series:
    """Each coefficient's covariate scale (:func:`riskset.data.normalize.column_scales`; 1 for
    the intercept and other coefficients of no covariate)."""
    by_covariate = dict(zip(data.covariate_names, scales))
    names = model.coef_names(data)
    return pd.Series([by_covariate.get(model.covariate_of(n), 1.0) for n in names], index=names)


def _left_out(problems: list, some: str, every: str) -> np.ndarray:
    """Replicates with a problem (``problems[i]`` not None), with a DataWarning that ``some``
    of them (e.g. 'draws carry no information') are left out; InputError ``every`` (a format
    of ``n`` and ``first``) if that is every replicate."""
    bad = np.flatnonzero([p is not None for p in problems])
    if bad.size == 0:
        return bad
    first = problems[bad[0]]
    if bad.size == len(problems):
        raise InputError(every.format(n=len(problems), first=first))
    warnings.warn(f"{bad.size} of {len(problems)} bootstrap {some} (first, replicate {bad[0]}: {first}); their "
                  "estimates are NaN and left out of the intervals and proportions", DataWarning, stacklevel=3)
    return bad


#: Stand-in for +-inf while interpolating quantiles (inf - inf is NaN); larger results are infinite.
_HUGE = 1e300


def _quantile(estimates: pd.DataFrame, q: float) -> pd.Series:
    """Column quantiles (linear interpolation, as pandas) that keep +-inf estimates
    (coefficients whose estimate does not exist in a draw) infinite instead of NaN."""
    qs = estimates.clip(-_HUGE, _HUGE).quantile(q)
    return qs.mask(qs >= _HUGE / 10, np.inf).mask(qs <= -_HUGE / 10, -np.inf)


def _replicates(ctx: Context, task):
    """Coefficients (replicates, P) of a batch of bootstrap replicates, warm-started at the full
    fit; per replicate why its draw carries no information (its row NaN), or None; and per
    replicate why its fit did not converge (its row NaN), or None. A coefficient whose
    estimate does not exist in a draw is +-inf there."""
    seeds, warm = task
    weights = np.array([bootstrap_weights(ctx.data, np.random.default_rng(s), ctx.model) * ctx.base_weights
                        for s in seeds])
    problems = [ctx.missing_information(w) for w in weights]
    ok = np.array([p is None for p in problems])
    coefs = np.full((len(seeds), len(ctx.names)), np.nan)
    failed = [None] * len(seeds)
    if ok.any():
        start = np.tile(warm.reindex(ctx.names).fillna(0.0).to_numpy(), (int(ok.sum()), 1))
        if not isinstance(ctx.prior, Prior):  # BAR, IHT, Jeffreys: fits of their own, one by one
            res = ctx.fit_one_by_one(weights[ok], start)
        else:
            batch = ctx.batch(weights[ok])
            res = ctx.fit_batch(batch, [ctx.prior] * int(ok.sum()), start)
        coefs[ok] = res.beta
        if ctx.unpenalized:
            coefs[ok] = ctx.without_aliased(batch, coefs[ok])
        for r, converged, diverging, message in zip(np.flatnonzero(ok), res.converged, res.diverging, res.messages):
            for j, direction in diverging.items():
                coefs[r, j] = direction * np.inf
            if not converged and not diverging:
                coefs[r], failed[r] = np.nan, message
    return coefs, problems, failed
