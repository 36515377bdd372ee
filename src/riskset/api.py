"""One entry point: ``riskset.fit``."""
from __future__ import annotations

import time
import warnings

import numpy as np
import pandas as pd

from riskset.data.dataset import Dataset
from riskset.exceptions import ConvergenceWarning
from riskset.inference import profile_intervals, standard_errors
from riskset.models.base import Model, get_model
from riskset.results import FitResult
from riskset.solver.ccd import SolverOptions, fit_ccd
from riskset.solver.prior import NoPrior, Prior


def fit(data: Dataset, model: str | Model = "logistic", prior: Prior | None = None, *, tol: float = 1e-10,
        max_iter: int = 1000, warm_start=None, profile=(), level: float = 0.95, progress: bool = False,
        backend: str = "cpu", dtype: str = "float64", n_jobs: int = 1, **model_options) -> FitResult:
    """Fit a penalized regression model by cyclic coordinate descent.

    Parameters
    ----------
    data : Dataset
        From :func:`riskset.from_frame`, :func:`riskset.from_long`,
        :func:`riskset.from_duckdb` or :func:`riskset.from_arrays`.
    model : str or Model
        A registered model name ('logistic', 'poisson', 'least_squares', 'cox', ...)
        or a configured model instance; ``model_options`` go to its constructor.
    prior : Prior, optional
        ``riskset.Laplace(gamma=...)``, ``riskset.Normal(variance=...)``, ...; no
        penalty by default.
    tol, max_iter : stopping rule (relative objective change per cycle, cycle cap).
    warm_start : FitResult or mapping name -> value, optional
        Starting coefficients, matched by name.
    profile : list of str
        Coefficients that get profile-likelihood intervals (at ``level``); their root
        searches run together, one replicate batch per round
        (:func:`riskset.inference.profile_intervals`).
    progress : bool
        Show a progress bar over the cycles (and over the profile searches).
    backend : {'cpu', 'gpu'}
        Where the coordinate-descent cycles run. 'gpu' keeps the whole fit on a CUDA
        device (Numba-CUDA; with ``NUMBA_ENABLE_CUDASIM=1`` in Numba's simulator).
    dtype : {'float64', 'float32'}
        Precision of the device state (GPU only; accumulations stay in float64).
    n_jobs : int
        Threads fitting the points of the profile searches (CPU backend).

    Returns
    -------
    FitResult
        Standard errors are given when no coefficient is penalized. A fit that did
        not converge says so in ``converged``, ``status`` and ``message`` and warns. A fit
        whose estimate does not exist (monotone likelihood, separation: the likelihood keeps
        increasing along unpenalized coefficients) has ``status ==
        "estimate_does_not_exist"``, ``converged == False`` and names those coefficients in
        ``diverging`` (name -> +1 / -1); their standard errors are NaN and their profile
        bound on the diverging side is infinite. :func:`riskset.separability` checks each
        covariate alone before a fit.

    Examples
    --------
    >>> import riskset
    >>> data = riskset.simulate(n=2000, p=20, model="logistic", seed=1)
    >>> fit = riskset.fit(data, "logistic", riskset.Laplace(gamma=5.0))
    >>> fit.converged
    True
    """
    t0 = time.perf_counter()
    m = model if isinstance(model, Model) else get_model(model, **model_options)
    prior = prior or NoPrior()
    datafit = m.datafit(data)
    if backend == "gpu":
        from riskset.kernels.gpu import to_device

        datafit = to_device(datafit, dtype=dtype)
    elif backend != "cpu":
        raise ValueError(f"backend must be 'cpu' or 'gpu', not {backend!r}")
    names = m.coef_names(data)
    datafit.names = names
    l1, l2 = prior.penalty_arrays(names, m.unpenalized_names())
    beta0 = _align_start(warm_start, names)
    options = SolverOptions(tol=tol, max_iter=max_iter, progress=progress)
    t_prepare = time.perf_counter()
    res = fit_ccd(datafit, l1, l2, beta0=beta0, options=options)
    t_solve = time.perf_counter()
    if not res.converged:
        what = "fit" if res.diverging else "fit did not converge"
        warnings.warn(f"{m.name} {what}: {res.message}", ConvergenceWarning, stacklevel=2)
    se = _standard_errors(datafit, res, l1, l2)
    result = FitResult(model_name=m.name, model_options=m.options(), coef=pd.Series(res.beta, index=names),
                       se=pd.Series(se, index=names), loglik=res.loglik, objective=res.objective,
                       converged=res.converged, message=res.message, n_iter=res.n_iter, prior=prior,
                       n_rows=data.n_rows, gamma_max=res.gamma_max, status=res.status,
                       diverging={names[j]: s for j, s in res.diverging.items()})
    if profile:
        cols = np.array([names.index(n) if n in names else _unknown(n) for n in profile])
        result.intervals = profile_intervals(datafit, res.beta, res.objective, l1, l2, cols, names, level,
                                             options, se=se[cols], n_jobs=n_jobs, progress=progress,
                                             diverging=res.diverging)
    result.timings = {"prepare": t_prepare - t0, "solve": t_solve - t_prepare,
                      "total": time.perf_counter() - t0}
    return result


def _standard_errors(datafit, res, l1, l2):
    """Standard errors of an unpenalized fit that converged, or whose estimate does not exist
    only along some coefficients: those get NaN (the information vanishes along them) and the
    others theirs at the limit (the information of the diverging ones is left out)."""
    se = np.full(datafit.n_coef, np.nan)
    if np.any((l1 > 0) | (l2 > 0)) or not (res.converged or res.diverging):
        return se
    finite = np.setdiff1d(np.arange(datafit.n_coef), list(res.diverging))
    se[finite] = standard_errors(datafit, res.state, finite)
    return se


def _align_start(warm_start, names):
    if warm_start is None:
        return None
    coef = warm_start.coef if isinstance(warm_start, FitResult) else pd.Series(warm_start, dtype=float)
    return coef.reindex(names).fillna(0.0).to_numpy()


def _unknown(name):
    raise ValueError(f"cannot profile unknown coefficient {name!r}")
