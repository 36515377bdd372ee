"""Nonparametric bootstrap by resampling units (subjects, matched sets, rows).

Percentile intervals, and the proportion of replicates in which each coefficient is
non-zero — the "poor man's posterior probability" of Suchard et al. (2013). A
replicate is the full data with row weights equal to how often its unit was drawn.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from riskset.api import fit
from riskset import validation as check
from riskset.models.base import Model, as_model
from riskset.results import FitResult
from riskset.selection.common import Context
from riskset.selection.executors import run_tasks
from riskset.selection.folds import bootstrap_weights
from riskset.solver.prior import Prior


@dataclass
class BootstrapResult:
    """Replicate estimates (one row per replicate) and the summary table.

    table : name, estimate (full data), lower and upper percentile bounds at
        ``level``, proportion of replicates in which the coefficient is non-zero; a
        ``covariate_name`` column after ``name`` when the data have covariate labels.
    """

    estimates: pd.DataFrame
    table: pd.DataFrame
    fit: FitResult
    level: float

    def plot(self, path=None, ax=None, names=None, **options):
        """Forest plot of the percentile intervals, coefficients shown by their ``covariate_name``
        where the table has one; ``options`` go to :func:`riskset.plots.selection.plot_forest`."""
        from riskset.plots.selection import plot_forest

        return plot_forest(self.table if names is None else self.table[self.table["name"].isin(names)],
                           path=path, ax=ax, title=f"Bootstrap {self.level:.0%} percentile intervals", **options)


def bootstrap(data, model: str | Model, prior: Prior | None = None, *, n_boot: int = 200, seed: int = 0,
              level: float = 0.95, executor=None, n_jobs: int = 1, progress: bool = True, tol: float = 1e-8,
              backend: str = "cpu", dtype: str = "float64", **model_options) -> BootstrapResult:
    """Bootstrap the fit ``riskset.fit(data, model, prior)`` over ``n_boot`` replicates.

    Replicate i draws its units with ``numpy.random.SeedSequence(seed).spawn(n_boot)[i]``,
    so results do not depend on the executor or on the order replicates finish in.
    ``backend="gpu"`` fits all replicates in one device batch.

    Examples
    --------
    >>> import riskset
    >>> d = riskset.simulate(n=1000, p=5, model="poisson", seed=2)
    >>> b = riskset.bootstrap(d, "poisson", n_boot=20, progress=False)
    >>> list(b.table.columns)
    ['name', 'estimate', 'lower', 'upper', 'nonzero_proportion']
    """
    check.dataset("data", data)
    m = as_model(model, **model_options)
    n_boot, seed = check.positive_int("n_boot", n_boot), check.seed("seed", seed)
    check.probability("level", level)
    check.positive_number("tol", tol)
    check.device_settings(backend, dtype, n_jobs)
    ctx = Context(data, m, check.prior(prior), tol, backend, dtype)
    ctx.check_executor(executor)
    full = fit(data, m, ctx.prior, tol=tol, backend=backend, dtype=dtype)
    seeds = np.random.SeedSequence(seed).spawn(n_boot)
    size = ctx.batch_size or n_boot
    tasks = [(seeds[a:a + size], full.coef) for a in range(0, n_boot, size)]
    coefs = run_tasks(_replicates, ctx, tasks, executor=executor, n_jobs=n_jobs, progress=progress,
                      desc="bootstrap")
    estimates = pd.DataFrame(np.concatenate(coefs), columns=ctx.names)
    alpha = (1 - level) / 2
    table = pd.DataFrame({"name": full.coef.index, "estimate": full.coef.to_numpy(),
                          "lower": estimates.quantile(alpha).reindex(full.coef.index).to_numpy(),
                          "upper": estimates.quantile(1 - alpha).reindex(full.coef.index).to_numpy(),
                          "nonzero_proportion": (estimates != 0).mean().reindex(full.coef.index).to_numpy()})
    if full.labels:
        table.insert(1, "covariate_name", full.display_names(table["name"]))
    return BootstrapResult(estimates, table, full, level)


def _replicates(ctx: Context, task):
    """Coefficients (replicates, P) of a batch of bootstrap replicates, warm-started at the full fit."""
    seeds, warm = task
    weights = np.array([bootstrap_weights(ctx.data, np.random.default_rng(s), ctx.model.name) * ctx.base_weights
                        for s in seeds])
    start = np.tile(warm.reindex(ctx.names).fillna(0.0).to_numpy(), (len(seeds), 1))
    return ctx.fit_batch(ctx.batch(weights), [ctx.prior] * len(seeds), start).beta
