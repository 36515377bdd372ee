"""Many independent analyses (specifications) fitted on an executor, gathered into one table."""
from __future__ import annotations

import os

import pandas as pd

from riskset.selection.executors import run_tasks


def _fit_one(options, path):
    from riskset.spec import run_spec

    fit = run_spec(path, **options)
    table = fit.coef_table()
    table.insert(0, "analysis", os.path.basename(os.path.dirname(os.path.abspath(path))) or path)
    table["loglik"] = fit.loglik
    table["converged"] = fit.converged
    return table


def fit_specs(paths, *, executor=None, n_jobs: int = 1, progress: bool = True, **fit_options) -> pd.DataFrame:
    """Fit every case.json specification in ``paths``; one row per analysis and coefficient.

    The analysis is named by the folder of its specification. ``executor``/``n_jobs``
    as in :func:`riskset.selection.executors.run_tasks` (e.g. ``executor="dask"``).

    >>> import glob, riskset
    >>> table = riskset.fit_specs(sorted(glob.glob("tests/reference/*/case.json"))[:1],  # doctest: +SKIP
    ...                           progress=False)
    """
    tables = run_tasks(_fit_one, fit_options, list(paths), executor=executor, n_jobs=n_jobs, progress=progress,
                       desc="analyses")
    return pd.concat(tables, ignore_index=True)
