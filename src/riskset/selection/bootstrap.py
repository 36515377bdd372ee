"""Nonparametric bootstrap by resampling units (subjects, matched sets, rows).

Percentile intervals, and the proportion of replicates in which each coefficient is
non-zero — the "poor man's posterior probability" of Suchard et al. (2013). A
replicate is the full data with row weights equal to how often its unit was drawn.
"""
from __future__ import annotations

import warnings
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from riskset.api import fit
from riskset import validation as check
from riskset.exceptions import DataWarning, InputError
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
        ``level``, proportion of replicates in which the coefficient is non-zero.
    uninformative : replicates whose draw carries no information (e.g. no event drawn):
        their estimates are NaN and they are left out of the table. Without a prior, a
        coefficient aliased in a draw (e.g. its covariate was not drawn) is NaN in that
        draw, as in :func:`riskset.fit`.
    """

    estimates: pd.DataFrame
    table: pd.DataFrame
    fit: FitResult
    level: float
    uninformative: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))

    def plot(self, path=None, ax=None, names=None):
        """Forest plot of the percentile intervals."""
        from riskset.plots.selection import plot_forest

        return plot_forest(self.table if names is None else self.table[self.table["name"].isin(names)],
                           path=path, ax=ax, title=f"Bootstrap {self.level:.0%} percentile intervals")


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
    estimates = pd.DataFrame(np.concatenate([c for c, _ in coefs]), columns=ctx.names)
    uninformative = _uninformative([p for _, problems in coefs for p in problems])
    valid = estimates.drop(index=uninformative)
    alpha = (1 - level) / 2
    table = pd.DataFrame({"name": full.coef.index, "estimate": full.coef.to_numpy(),
                          "lower": valid.quantile(alpha).reindex(full.coef.index).to_numpy(),
                          "upper": valid.quantile(1 - alpha).reindex(full.coef.index).to_numpy(),
                          "nonzero_proportion": (valid != 0).where(valid.notna()).mean()
                          .reindex(full.coef.index).to_numpy()})
    return BootstrapResult(estimates, table, full, level, uninformative)


def _uninformative(problems: list) -> np.ndarray:
    """Replicates whose draw carried no information (``problems[i]`` not None), with a
    DataWarning; InputError if that is every replicate."""
    bad = np.flatnonzero([p is not None for p in problems])
    if bad.size == 0:
        return bad
    first = problems[bad[0]]
    if bad.size == len(problems):
        raise InputError(f"none of the {len(problems)} bootstrap draws can be fitted ({first}): the data hold too "
                         "little information to bootstrap")
    warnings.warn(f"{bad.size} of {len(problems)} bootstrap draws carry no information (first, replicate {bad[0]}: "
                  f"{first}); their estimates are NaN and left out of the intervals and proportions",
                  DataWarning, stacklevel=3)
    return bad


def _replicates(ctx: Context, task):
    """Coefficients (replicates, P) of a batch of bootstrap replicates, warm-started at the full
    fit, and per replicate why its draw carries no information (its row NaN), or None."""
    seeds, warm = task
    weights = np.array([bootstrap_weights(ctx.data, np.random.default_rng(s), ctx.model.name) * ctx.base_weights
                        for s in seeds])
    problems = [ctx.missing_information(w) for w in weights]
    ok = np.array([p is None for p in problems])
    coefs = np.full((len(seeds), len(ctx.names)), np.nan)
    if ok.any():
        start = np.tile(warm.reindex(ctx.names).fillna(0.0).to_numpy(), (int(ok.sum()), 1))
        batch = ctx.batch(weights[ok])
        coefs[ok] = ctx.fit_batch(batch, [ctx.prior] * int(ok.sum()), start).beta
        if ctx.unpenalized:
            coefs[ok] = ctx.without_aliased(batch, coefs[ok])
    return coefs, problems
