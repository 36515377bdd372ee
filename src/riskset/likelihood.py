"""Profile log-likelihoods at chosen points, and the log-likelihood at given coefficients:
what OHDSI's study packages call on their engine (Cyclops' ``getCyclopsProfileLogLikelihood``,
used by CohortMethod, SelfControlledCaseSeries and EvidenceSynthesis)."""
from __future__ import annotations

import warnings
from dataclasses import replace

import numpy as np
import pandas as pd

from riskset import validation as check
from riskset.api import check_fit, fit, prepared_datafit
from riskset.backend import fit_work
from riskset.data.dataset import Dataset
from riskset.exceptions import ConvergenceWarning, InputError
from riskset.models.base import Model
from riskset.profile_likelihood import HeldFits, adaptive_profile, profile_at
from riskset.solver.ccd import SolverOptions
from riskset.solver.prior import AdaptiveRidge, JeffreysPrior, Prior
from riskset.core.memory import returns_freed_memory


@returns_freed_memory
def profile_loglik(data: Dataset, model: str | Model = "logistic", prior: Prior | None = None, *, coef,
                   points=None, bounds=None, tol: float = 1e-3, initial_grid: int = 10,
                   include_estimate: bool = False, include_penalty: bool = True, fixed=None,
                   fit_tol: float = 1e-10, max_iter: int = 1000,
                   backend: str = "cpu", dtype: str = "float64", n_jobs: int | None = None,
                   **model_options) -> pd.DataFrame:
    """The profile log-likelihood of one coefficient: at each point, the log-likelihood
    maximized over the other coefficients with ``coef`` held there (Cyclops'
    ``getCyclopsProfileLogLikelihood``), with its derivative.

    Give ``points`` (any values), or ``bounds`` (lower, upper) for an adaptive grid: it
    starts from ``initial_grid`` evenly spaced points and the estimate, and fits midpoints
    where a straight line between neighbouring points could be off the curve by more than
    ``tol`` (log-likelihood units), as Cyclops' adaptive profiling does
    (:func:`riskset.profile_likelihood.adaptive_profile`).

    Every point is one fit of the others with ``coef`` held, all the points of a round
    in one replicate batch (on ``n_jobs`` threads, or one device batch with
    ``backend="gpu"``), each started from the estimate moved along the profile's tangent.
    A point whose fit does not converge is reported as such (``converged`` False, NaN
    value, a ``note``), the others are kept; an adaptive grid that cannot meet ``tol``
    warns (ConvergenceWarning) and returns the points it has (``attrs['problem']``).

    Parameters
    ----------
    coef : str or int
        The coefficient profiled (a covariate name or OHDSI covariate id).
    include_estimate : bool
        With ``points``, also profile at the estimate when its fit converged and it lies
        strictly between the smallest and largest point (EvidenceSynthesis' grid with
        gradients; the adaptive grid always includes it).
    include_penalty : bool
        ``value`` is the penalized log-likelihood (the log-likelihood minus the prior's
        penalty terms, every coefficient's, the held one at the point included: ``fit``'s
        objective), as Cyclops' ``includePenalty = TRUE`` up to a constant (Cyclops adds the
        prior's log normalizing constants, log(gamma / 2) per Laplace coefficient); False:
        the log-likelihood alone, at the points' penalized optima. Without a prior both are
        the log-likelihood. ``derivative`` is always that of ``value`` along the profile;
        without the penalty and with other coefficients penalized, Cyclops returns the
        partial derivative instead (tests/test_cyclops_engine.py).
    fixed : mapping name -> value
        Other coefficients held at values in every fit (:func:`riskset.fit`).
    fit_tol, max_iter : each fit's stopping rule (:func:`riskset.fit`'s ``tol``, ``max_iter``).

    Returns
    -------
    DataFrame with columns ``point`` (ascending), ``value``, ``derivative`` (d value /
    d point: the partial derivative at the point's optimum, by the envelope theorem),
    ``loglik``, ``converged``, ``note``; ``attrs``: ``coef``, ``estimate`` and
    ``maximum`` (the fit's coefficient and value), ``value`` (what the column holds),
    ``problem`` (adaptive grid: why it stopped short, else "").

    Examples
    --------
    >>> import riskset
    >>> data = riskset.simulate(n=400, p=3, model="cox", seed=1)
    >>> prof = riskset.profile_loglik(data, "cox", coef="x0", points=[-0.5, 0.0, 0.5])
    >>> prof["point"].tolist(), bool(prof["converged"].all())
    ([-0.5, 0.0, 0.5], True)
    >>> bool((prof["value"] <= prof.attrs["maximum"]).all())
    True
    """
    args = check_fit(data, model, prior, tol=fit_tol, max_iter=max_iter, fixed=fixed, backend=backend,
                     dtype=dtype, n_jobs=n_jobs, **model_options)
    name = check.coef_name("coef", coef)
    if isinstance(args.prior, JeffreysPrior):
        raise InputError("the profile of a Jeffreys-penalized fit is not implemented")
    if isinstance(args.prior, AdaptiveRidge):
        raise InputError(f"a {args.prior.kind.upper()} fit selects its coefficients by iterated ridge fits: it has "
                         f"no likelihood to profile; profile the refit of the selected coefficients without a prior")
    grid = _checked_grid(points, bounds, tol, initial_grid)
    if name in args.fixed:
        raise InputError(f"coef {name!r} is also in fixed: a coefficient held at a value has no profile")
    estimate = fit(data, args.model, args.prior, tol=fit_tol, max_iter=max_iter, fixed=args.fixed,
                   backend=backend, dtype=dtype, n_jobs=n_jobs)
    names = list(estimate.coef.index)
    if name not in names:
        raise InputError(f"coef names an unknown coefficient {name!r} (the coefficients: "
                         f"{', '.join(map(repr, names[:10]))}{', ...' if len(names) > 10 else ''})")
    if not estimate.converged and not estimate.diverging:
        raise InputError(f"the {estimate.model_name} fit did not converge ({estimate.message}): its profile "
                         f"would start from a point that is not the optimum")
    j = names.index(name)
    held = np.isin(names, list(args.fixed) + list(estimate.aliased))
    beta_hat = estimate.coef.to_numpy(dtype=np.float64)
    if grid is not None and include_estimate and estimate.converged and grid.min() < beta_hat[j] < grid.max():
        grid = np.union1d(grid, [beta_hat[j]])
    with args.backend.fit_threads(fit_work(data)):
        datafit, _ = prepared_datafit(data, args.model, args.backend)
    penalty = args.prior.penalty(names, args.model.unpenalized_names())
    diverging = {names.index(n): s for n, s in estimate.diverging.items() if n != name}
    fitter = HeldFits(datafit, beta_hat, penalty, [j], SolverOptions(tol=fit_tol, max_iter=max_iter),
                      args.backend, fixed=held if held.any() else None, diverging=diverging)
    problem = ""
    with args.backend.threads() as pool:
        if grid is not None:
            prof = profile_at(fitter, beta_hat, grid, pool, penalized=include_penalty)
        else:
            prof, problem = adaptive_profile(fitter, beta_hat, bounds, pool, tol=tol, initial=initial_grid,
                                             include_penalty=include_penalty)
    if problem:
        warnings.warn(f"profile of {name!r} over {tuple(bounds)}: {problem}; the points so far are returned",
                      ConvergenceWarning, stacklevel=2)
    value = prof.objective if include_penalty else prof.loglik
    table = pd.DataFrame({"point": prof.points, "value": value, "derivative": prof.derivative, "loglik": prof.loglik,
                          "converged": prof.converged, "note": prof.notes})
    table.attrs.update(coef=name, estimate=float(beta_hat[j]) if name not in estimate.diverging else
                       estimate.diverging[name] * np.inf,
                       maximum=float(estimate.objective if include_penalty else estimate.loglik),
                       value="penalized log-likelihood" if include_penalty and penalty.is_penalized
                       else "log-likelihood", problem=problem)
    return table


def checked_bounds(bounds) -> tuple[float, float]:
    """(lower, upper) of a profile's range: two finite values, lower < upper."""
    pair = check.finite_numbers("bounds", bounds)
    if pair.size != 2 or not pair[0] < pair[1]:
        raise InputError(f"bounds must be two finite values (lower, upper) with lower < upper, got {bounds!r}")
    return float(pair[0]), float(pair[1])


def _checked_grid(points, bounds, tol, initial_grid) -> np.ndarray | None:
    """The ``points`` (finite, at least one), or None for an adaptive grid over ``bounds``
    (two finite values, lower < upper; ``tol`` > 0; ``initial_grid`` >= 4)."""
    if (points is None) == (bounds is None):
        raise InputError("give either points (the values to profile at) or bounds (lower, upper) for an "
                         "adaptive grid, not both" + ("" if points is None else f": got points and bounds={bounds!r}"))
    if points is not None:
        grid = check.finite_numbers("points", np.atleast_1d(points))
        if grid.size == 0:
            raise InputError("points is empty: give at least one value to profile at")
        return grid
    checked_bounds(bounds)
    check.positive_number("tol", tol)
    check.positive_int("initial_grid", initial_grid, minimum=4)
    return None


def loglik_at(data: Dataset, model: str | Model, coefficients, *, weights=None, **model_options) -> float:
    """The log-likelihood of ``model`` on ``data`` at given coefficients, no fit (e.g. the
    null model of a treatment effect: its estimate with the treatment at 0).

    ``coefficients``: a mapping name -> value (the coefficients it leaves out are 0) or a
    :class:`~riskset.results.FitResult`. ``weights`` (one per row, >= 0) replace the data's
    case weights: the predictive log-likelihood of held-out rows (Cyclops'
    ``getCyclopsPredictiveLogLikelihood``; weight 1 on the held-out rows, 0 elsewhere: a Cox
    model's risk sets are then those of the held-out rows, as cross-validation scores them).

    >>> import riskset
    >>> data = riskset.simulate(n=300, p=2, model="logistic", seed=3)
    >>> fitted = riskset.fit(data, "logistic")
    >>> bool(abs(loglik_at(data, "logistic", fitted) - fitted.loglik) < 1e-9)
    True
    """
    from riskset.results import FitResult

    if weights is not None:
        check.finite_numbers("weights", weights)
        if np.shape(weights) != (data.n_rows,):
            raise InputError(f"weights must have one value per row ({data.n_rows}), got shape {np.shape(weights)}")
        data = replace(data, weights=np.asarray(weights, dtype=np.float64))  # checked by the Dataset
    args = check_fit(data, model, None, **model_options)
    datafit, names = prepared_datafit(data, args.model, args.backend)
    given = coefficients.coef.to_dict() if isinstance(coefficients, FitResult) else check.fixed_values(
        "coefficients", coefficients)
    unknown = [n for n in given if n not in names]
    if unknown:
        raise InputError(f"coefficients names unknown coefficient(s): {', '.join(map(repr, unknown))}")
    beta = np.array([given.get(n, 0.0) for n in names], dtype=np.float64)
    return float(datafit.loglik(datafit.new_state(beta)))
