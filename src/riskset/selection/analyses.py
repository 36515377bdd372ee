"""One analysis (fit, with cross-validation and bootstrap when asked), and many
independent analyses (specifications) fitted on an executor, gathered into tables."""
from __future__ import annotations

import os
from dataclasses import dataclass

import pandas as pd

from riskset import validation as check
from riskset.api import check_fit, fit
from riskset.selection.bootstrap import bootstrap
from riskset.selection.cv import cross_validate
from riskset.selection.executors import run_tasks
from riskset.exceptions import InputError
from riskset.spec import analysis_from_spec, load_spec, spec_fixed
from riskset.core.memory import returns_freed_memory


@dataclass
class Analysis:
    """A fit and the selection steps that led to it (``cv``, ``boot``: None when not asked for)."""

    fit: object
    cv: object = None
    boot: object = None

    def tables(self) -> dict:
        """The tables beside the coefficients: {'cross_validation': ..., 'bootstrap': ...}, those computed."""
        tables = {}
        if self.cv is not None:
            tables["cross_validation"] = self.cv.summary
        if self.boot is not None:
            tables["bootstrap"] = self.boot.table
        return tables


def analyse(data, model, prior, *, cv: dict | None = None, n_boot: int | None = None, seed: int = 0,
            executor=None, n_jobs: int | None = None, replicate_progress: bool = False, backend: str = "cpu",
            dtype: str = "float64", level: float = 0.95, **fit_options) -> Analysis:
    """Choose the prior by cross-validation (``cv``: keywords of :func:`riskset.cross_validate`,
    e.g. ``{"n_folds": 10}``), bootstrap ``n_boot`` replicates with it, then fit it.

    ``executor``/``n_jobs`` run the replicate fits (``replicate_progress`` shows their
    progress bars); ``backend``/``dtype`` apply to every fit; ``fit_options`` go to
    :func:`riskset.fit` (tol, max_iter, profile, progress, ...), and are checked
    (:func:`riskset.api.check_fit`) before the cross-validation and the bootstrap.

    >>> import riskset
    >>> d = riskset.simulate(n=500, p=5, model="logistic", seed=1)
    >>> a = analyse(d, "logistic", riskset.Normal(1.0), cv={"n_folds": 3, "n_grid": 3})
    >>> sorted(a.tables())
    ['cross_validation']
    """
    normalize = fit_options.pop("normalize", None)
    args = check_fit(data, model, prior, backend=backend, dtype=dtype, n_jobs=n_jobs, level=level, **fit_options)
    if args.fixed and (cv is not None or n_boot is not None):
        raise InputError(f"fixed coefficients ({', '.join(map(repr, args.fixed))}) with "
                         f"{'cross-validation' if cv is not None else 'the bootstrap'}: not supported; fit them "
                         f"with riskset.fit(..., fixed=...) alone")
    common = dict(seed=seed, executor=executor, n_jobs=n_jobs, progress=replicate_progress, backend=backend,
                  dtype=dtype, normalize=normalize)
    chosen = boot = None
    if cv is not None:
        chosen = cross_validate(data, model, prior, refit=False, **cv, **common)
        prior = chosen.prior
    if n_boot is not None:
        boot = bootstrap(data, model, prior, n_boot=n_boot, level=level, **common)
    result = fit(data, model, prior, backend=backend, dtype=dtype, n_jobs=n_jobs, level=level, normalize=normalize,
                 **fit_options)
    return Analysis(result, chosen, boot)


def _analyse_one(options, path):
    spec, frame = load_spec(path)
    analysis = analyse(*analysis_from_spec(spec, frame, path), **{"tol": 1e-12, "fixed": spec_fixed(spec, path)}
                       | options)
    name = os.path.basename(os.path.dirname(os.path.abspath(path))) or path
    table = analysis.fit.coef_table(options.get("level", 0.95))
    table["se_variance"] = analysis.fit.variance  # which standard errors (attrs do not survive the concat)
    table["loglik"] = analysis.fit.loglik
    table["converged"] = analysis.fit.converged
    tables = {"coefficients": table} | analysis.tables()
    for t in tables.values():
        t.insert(0, "analysis", name)
    return tables


def analyse_specs(paths, *, executor=None, n_jobs: int | None = None, progress: bool = True, **options) -> dict:
    """Run every case.json specification in ``paths``; {table name: table}, one row per analysis and item.

    The tables are ``coefficients`` (with each fit's ``loglik`` and ``converged``, and in
    ``se_variance`` which standard errors its ``se`` column holds: ``model-based`` or
    ``robust``, :attr:`riskset.results.FitResult.variance`) and,
    when asked for by ``cv``/``n_boot`` (see :func:`analyse`), ``cross_validation``
    and ``bootstrap``; an ``analysis`` column names the folder of each specification.
    ``executor``/``n_jobs`` spread the analyses (as in
    :func:`riskset.selection.executors.run_tasks`, e.g. ``executor="dask"``); the
    replicate fits within one analysis run in its task.
    """
    check.probability("level", options.get("level", 0.95))  # each analysis checks the rest: it reads its data first
    results = run_tasks(_analyse_one, options, list(paths), executor=executor, n_jobs=n_jobs, progress=progress,
                        desc="analyses")
    return {name: pd.concat([r[name] for r in results], ignore_index=True) for name in results[0]}


@returns_freed_memory
def fit_specs(paths, *, executor=None, n_jobs: int | None = None, progress: bool = True, **fit_options) -> pd.DataFrame:
    """Fit every case.json specification in ``paths``; one row per analysis and coefficient.

    The analysis is named by the folder of its specification. ``executor``/``n_jobs``
    as in :func:`riskset.selection.executors.run_tasks` (e.g. ``executor="dask"``).

    >>> import glob, riskset
    >>> table = riskset.fit_specs(sorted(glob.glob("tests/reference/*/case.json"))[:1],  # doctest: +SKIP
    ...                           progress=False)
    """
    return analyse_specs(paths, executor=executor, n_jobs=n_jobs, progress=progress, **fit_options)["coefficients"]
