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
from riskset.models.base import Model, get_model
from riskset.results import FitResult
from riskset.selection.common import Context
from riskset.selection.executors import run_tasks
from riskset.selection.folds import bootstrap_weights
from riskset.solver.prior import NoPrior, Prior


@dataclass
class BootstrapResult:
    """Replicate estimates (one row per replicate) and the summary table.

    table : name, estimate (full data), lower and upper percentile bounds at
        ``level``, proportion of replicates in which the coefficient is non-zero.
    """

    estimates: pd.DataFrame
    table: pd.DataFrame
    fit: FitResult
    level: float

    def plot(self, path=None, ax=None, names=None):
        """Forest plot of the percentile intervals."""
        from riskset.plots.selection import plot_forest

        return plot_forest(self.table if names is None else self.table[self.table["name"].isin(names)],
                           path=path, ax=ax, title=f"Bootstrap {self.level:.0%} percentile intervals")


def bootstrap(data, model: str | Model, prior: Prior | None = None, *, n_boot: int = 200, seed: int = 0,
              level: float = 0.95, executor=None, n_jobs: int = 1, progress: bool = True, tol: float = 1e-8,
              **model_options) -> BootstrapResult:
    """Bootstrap the fit ``riskset.fit(data, model, prior)`` over ``n_boot`` replicates.

    Replicate i draws its units with ``numpy.random.SeedSequence(seed).spawn(n_boot)[i]``,
    so results do not depend on the executor or on the order replicates finish in.

    Examples
    --------
    >>> import riskset
    >>> d = riskset.simulate(n=1000, p=5, model="poisson", seed=2)
    >>> b = riskset.bootstrap(d, "poisson", n_boot=20, progress=False)
    >>> list(b.table.columns)
    ['name', 'estimate', 'lower', 'upper', 'nonzero_proportion']
    """
    m = model if isinstance(model, Model) else get_model(model, **model_options)
    ctx = Context(data, m, prior or NoPrior(), tol)
    full = fit(data, m, ctx.prior, tol=tol)
    seeds = np.random.SeedSequence(seed).spawn(n_boot)
    tasks = [(s, full.coef) for s in seeds]
    coefs = run_tasks(_replicate, ctx, tasks, executor=executor, n_jobs=n_jobs, progress=progress, desc="bootstrap")
    estimates = pd.DataFrame(coefs).reset_index(drop=True)
    alpha = (1 - level) / 2
    table = pd.DataFrame({"name": full.coef.index, "estimate": full.coef.to_numpy(),
                          "lower": estimates.quantile(alpha).reindex(full.coef.index).to_numpy(),
                          "upper": estimates.quantile(1 - alpha).reindex(full.coef.index).to_numpy(),
                          "nonzero_proportion": (estimates != 0).mean().reindex(full.coef.index).to_numpy()})
    return BootstrapResult(estimates, table, full, level)


def _replicate(ctx: Context, task):
    seed, warm = task
    counts = bootstrap_weights(ctx.data, np.random.default_rng(seed), ctx.model.name)
    return ctx.fit(counts * ctx.base_weights, ctx.prior, warm)
