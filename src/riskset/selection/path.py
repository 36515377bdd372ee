"""Regularization path: coefficients along a grid of prior variances, warm-started."""
from __future__ import annotations

import pandas as pd

from riskset import validation as check
from riskset.backend import Backend, fit_work
from riskset.data.dataset import check_dataset
from riskset.models.base import Model, as_model
from riskset.results import coef_labels
from riskset.selection.common import Context, checked_grid, varied_prior, variance_grid
from riskset.solver.prior import Prior
from riskset.core.memory import returns_freed_memory


@returns_freed_memory
def regularization_path(data, model: str | Model, prior: Prior, *, variances=None, n_grid: int = 20,
                        tol: float = 1e-8, progress: bool = True, n_jobs: int | None = None,
                        **model_options) -> pd.DataFrame:
    """Coefficients (columns) at each variance (rows, strongest penalty first), each fit warm
    started from the one before, its kernels on ``n_jobs`` threads (as :func:`riskset.fit`'s).

    ``path.attrs['labels']`` holds the coefficients' display names (covariate
    reference table), which :func:`riskset.plots.selection.plot_path` shows.

    >>> import riskset
    >>> d = riskset.simulate(n=1000, p=8, model="logistic", seed=1)
    >>> path = riskset.regularization_path(d, "logistic", riskset.Laplace(gamma=1.0), n_grid=5, progress=False)
    >>> path.shape
    (5, 9)
    """
    check_dataset("data", data)
    m = as_model(model, **model_options)
    check.positive_number("tol", tol)
    prior, grid = varied_prior(prior), checked_grid(variances, n_grid)
    where = Backend.of("cpu", n_jobs=n_jobs)
    ctx = Context(data, m, prior, tol, where, progress)
    grid = variance_grid(ctx, grid, n_grid)
    with where.fit_threads(fit_work(data)):
        path = pd.DataFrame(ctx.path(grid, progress), index=pd.Index(grid, name="variance"), columns=ctx.names)
    path.attrs["labels"] = coef_labels(data, m, ctx.names)
    return path
