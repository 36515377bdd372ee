"""Cross-validation of a prior's variance on sharded data (:func:`cross_validate_sharded`, what
:func:`riskset.cross_validate` calls for :class:`~riskset.sharded.ShardedData`).

The shards are read and built once; the folds are weights drawn where the rows are
(:class:`riskset.sharded.replicates.Fold`: a hash of each unit's id and the seed). At each
variance of the grid, walked from the strongest prior, the whole data and the K training sets
are fitted together, every round of tasks carrying all K + 1 fits' questions
(:func:`riskset.sharded.replicates.run_replicates`), each warm-started from its own fit at the
variance before; then the K held-out sets are scored together (the log-likelihood of their
rows alone, as on one machine). The fit at the chosen variance is the whole-data fit there.
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from riskset import validation as check
from riskset.models.base import as_model
from riskset.selection.common import checked_grid, prior_with_variance, varied_prior, variances_below
from riskset.selection.cv import CVResult, summarize_scores, warn_unconverged
from riskset.sharded.fit import connect, fit_prepared, prepare_shards
from riskset.sharded.replicates import Fold, run_replicates
from riskset.sharded.sources import ShardedData
from riskset.solver.ccd import SolverOptions
from riskset.solver.proximal_newton import fit_proximal_newton

#: The strength at which every penalized coefficient is zero, to read gamma_max.
AT_ZERO = 1e15


def cross_validate_sharded(data: ShardedData, model, prior, *, executor, variances=None, n_grid: int = 10,
                           n_folds: int = 10, seed: int = 0, early_stop: int | None = 2, progress: bool = True,
                           tol: float = 1e-8, refit: bool = True, **model_options) -> CVResult:
    """Choose the prior variance by ``n_folds``-fold cross-validation over shards on Dask
    workers (``executor``: a client or scheduler address); arguments as
    :func:`riskset.cross_validate`, whose other options a sharded search does not take.

    The folds are those of :func:`riskset.sharded.replicates.assign_folds` over the units' ids
    (rows; whole strata for stratified models), not the one-machine search's random folds:
    ``riskset.cross_validate(whole_data, ..., held_out=...)`` with the same assignment gives the
    same scores.
    """
    m = as_model(model, **model_options)
    prior, grid = varied_prior(prior), checked_grid(variances, n_grid)
    n_folds, seed = check.positive_int("n_folds", n_folds, minimum=2), check.seed("seed", seed)
    if early_stop is not None:
        early_stop = check.positive_int("early_stop", early_stop)
    check.positive_number("tol", tol)
    client, owned = connect(executor)
    try:
        datafit, names, n_rows, roles = prepare_shards(client, data, m)
        options = SolverOptions(tol=tol)
        unpenalized = m.unpenalized_names()
        if grid is None:
            pen = prior.with_strength(AT_ZERO).penalty(names, unpenalized)
            gamma_max = fit_proximal_newton(datafit, pen.l1, pen.l2, options=options, center=pen.center).gamma_max
            grid = np.sort(variances_below(gamma_max, n_grid))
        unit = "stratum" if m.uses_strata and data.by == "stratum" else "row"
        training = [None] + [Fold(seed, n_folds, k, False, unit) for k in range(n_folds)]
        held_out = [Fold(seed, n_folds, k, True, unit) for k in range(n_folds)]
        starts: list = [None] * len(training)
        rows: list[dict] = []
        means: list[float] = []
        whole: dict = {}
        for v in _progress(grid, progress):
            pen = prior_with_variance(prior, v).penalty(names, unpenalized)

            def fit_one(view, r, pen=pen):
                return fit_proximal_newton(view, pen.l1, pen.l2, beta0=starts[r], options=options, center=pen.center)

            fits = run_replicates(datafit, training, fit_one)
            starts = [f.beta for f in fits]
            whole[v] = starts[0]
            scores = run_replicates(datafit, held_out,
                                    lambda view, k: view.loglik(view.new_state(starts[k + 1])))
            rows.extend(dict(variance=v, repeat=0, fold=k, score=float(s), converged=bool(f.converged))
                        for k, (s, f) in enumerate(zip(scores, fits[1:])))
            means.append(float(np.mean(scores)))
            if early_stop is not None and len(means) - 1 - int(np.argmax(means)) >= early_stop:
                break
        table = pd.DataFrame(rows)
        warn_unconverged(table)
        summary = summarize_scores(table)
        best = float(summary.loc[summary["mean"].idxmax(), "variance"])
        chosen = prior_with_variance(prior, best)
        final = fit_prepared(datafit, m, chosen, options, n_rows=n_rows, roles=roles, n_shards=data.n_shards,
                             beta0=whole[best]) if refit else None
    finally:
        if owned:
            client.close()
    return CVResult(table, summary, best, chosen, final)


def _progress(grid, show: bool):
    if not show:
        return grid
    from tqdm.auto import tqdm

    return tqdm(grid, desc="sharded cross-validation", unit="variance")
