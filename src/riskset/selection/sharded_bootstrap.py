"""The bootstrap on sharded data (:func:`bootstrap_sharded`, what :func:`riskset.bootstrap`
calls for :class:`~riskset.sharded.ShardedData`).

Each draw is a Poisson bootstrap (:class:`riskset.sharded.replicates.PoissonDraw`): every unit
(row, or whole stratum for stratified models) weighted by a Poisson(1) count drawn where it is,
from a hash of its id, the seed and the draw; the one-machine bootstrap's multinomial counts
would need the whole data's units in one place. Draws are fitted :data:`DRAWS_PER_BATCH` at a
time from the full-data fit, every round of tasks carrying every draw's question
(:func:`riskset.sharded.replicates.run_replicates`).
"""
from __future__ import annotations

import warnings

import numpy as np
import pandas as pd

from riskset import validation as check
from riskset.exceptions import DataWarning, InputError
from riskset.models.base import as_model
from riskset.selection.bootstrap import BootstrapResult, percentile_table
from riskset.sharded.fit import connect, fit_prepared, prepare_shards
from riskset.sharded.replicates import PoissonDraw, run_replicates
from riskset.sharded.sources import ShardedData
from riskset.solver.ccd import SolverOptions
from riskset.solver.prior import Prior, as_prior
from riskset.solver.proximal_newton import fit_proximal_newton

#: Draws fitted together (client threads whose questions share rounds).
DRAWS_PER_BATCH = 20


def bootstrap_sharded(data: ShardedData, model, prior=None, *, executor, n_boot: int = 200, seed: int = 0,
                      level: float = 0.95, progress: bool = True, tol: float = 1e-8,
                      **model_options) -> BootstrapResult:
    """Bootstrap a fit over shards on Dask workers (``executor``: a client or scheduler
    address) by ``n_boot`` Poisson draws (module docstring); arguments and result as
    :func:`riskset.bootstrap`, whose other options a sharded bootstrap does not take.

    A draw whose fit does not converge is NaN and left out of the table, with a warning.
    """
    m = as_model(model, **model_options)
    n_boot, seed = check.positive_int("n_boot", n_boot), check.seed("seed", seed)
    check.probability("level", level)
    check.positive_number("tol", tol)
    given = as_prior(prior)
    if not isinstance(given, Prior):
        raise InputError(f"a sharded bootstrap takes a Laplace, Normal or elastic-net prior (or none), not "
                         f"{type(given).__name__}")
    client, owned = connect(executor)
    try:
        datafit, names, n_rows, roles = prepare_shards(client, data, m)
        options = SolverOptions(tol=tol)
        full = fit_prepared(datafit, m, given, options, n_rows=n_rows, roles=roles, n_shards=data.n_shards)
        pen = given.penalty(names, m.unpenalized_names())
        unit = "stratum" if m.uses_strata and data.by == "stratum" else "row"
        draws = [PoissonDraw(seed, b, unit) for b in range(n_boot)]
        start = full.coef.to_numpy()

        def fit_draw(view, r):
            return fit_proximal_newton(view, pen.l1, pen.l2, beta0=start, options=options, center=pen.center)

        fits = []
        for a in _progress(range(0, n_boot, DRAWS_PER_BATCH), progress, n_boot):
            fits.extend(run_replicates(datafit, draws[a:a + DRAWS_PER_BATCH], fit_draw))
    finally:
        if owned:
            client.close()
    estimates = pd.DataFrame(np.array([f.beta for f in fits]), columns=names)
    failed = np.flatnonzero([not f.converged for f in fits])
    if failed.size == n_boot:
        raise InputError(f"none of the {n_boot} bootstrap fits converged (first: {fits[0].message})")
    if failed.size:
        estimates.iloc[failed] = np.nan
        warnings.warn(f"{failed.size} of {n_boot} bootstrap fits did not converge (first, replicate {failed[0]}: "
                      f"{fits[failed[0]].message}); their estimates are NaN and left out of the intervals and "
                      "proportions", DataWarning, stacklevel=3)
    table = percentile_table(estimates.drop(index=failed), full, level)
    return BootstrapResult(estimates, table, full, level, np.zeros(0, np.int64), failed)


def _progress(batches, show: bool, n_boot: int):
    if not show:
        return batches
    from tqdm.auto import tqdm

    return tqdm(batches, desc=f"sharded bootstrap ({n_boot} draws)", unit="batch")
