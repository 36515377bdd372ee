"""Cyclic coordinate descent (CCD) for penalized log-likelihoods.

The solver maximizes ``l(beta) - sum_j (l1_j |beta_j| + l2_j beta_j^2 / 2)`` over a
:class:`~riskset.models.base.Datafit`, touching the data only through the datafit's
``coordinate`` (scalar gradient and Hessian) and ``move`` (sparse update of the
linear predictor) methods. Named steps:

1. ``restricted start``: with an L1 prior, fit the unpenalized coordinates alone;
   if zero is optimal for every penalized coordinate (the prior rate is at or
   above ``gamma_max``), that is the answer (Cyclops fails there).
2. ``cycles``: one Newton step per coordinate, bounded by a per-coordinate trust
   region (Genkin, Lewis & Madigan 2007: half-width starts at 1, then becomes
   max(2|step|, half-width/2)); at the L1 kink the step uses the one-sided
   directional derivatives and never crosses zero (:mod:`riskset.solver.step`).
   Between full sweeps, cycles run over the active set only (non-zero or
   unpenalized coordinates), as glmnet does; a datafit with a compiled
   ``cycle(state, coords, beta, l1, l2, radius)`` runs a whole sweep in one call.
3. ``convergence``: relative change of the objective
   ``|f_k - f_{k-1}| / (|f_k| + 1)`` below ``tol`` over a *full* sweep, so every
   zero coordinate has been checked against its optimality condition.
4. ``polish``: when the active set is small, Newton steps on it with the exact
   Hessian (signs held) sharpen the coefficients to machine precision; tried every
   few cycles while progress is slow (correlated coordinates make CCD linear and
   slow), and once more after convergence.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from riskset.models.base import Datafit, FitState
from riskset.solver.step import bounded_step


#: Cycles between Newton polishing attempts while CCD progresses slowly.
POLISH_EVERY = 5


@dataclass
class SolverOptions:
    """Stopping rule and strategy of the solver.

    tol : relative objective change that ends the cycles.
    max_iter : cap on the number of cycles.
    polish_max_active : largest active set polished by exact Newton steps (0 = never).
    progress : show a progress bar over cycles.
    """

    tol: float = 1e-10
    max_iter: int = 1000
    polish_max_active: int = 100
    progress: bool = False


@dataclass
class SolverResult:
    beta: np.ndarray
    state: FitState
    loglik: float
    objective: float
    converged: bool
    n_iter: int
    message: str
    gamma_max: float | None = None


def penalty_value(beta, l1, l2) -> float:
    return float(np.sum(l1 * np.abs(beta)) + 0.5 * np.sum(l2 * beta * beta))


def fit_ccd(datafit: Datafit, l1: np.ndarray, l2: np.ndarray, beta0: np.ndarray | None = None,
            fixed: np.ndarray | None = None, options: SolverOptions | None = None) -> SolverResult:
    """Maximize the penalized log-likelihood of ``datafit`` by cyclic coordinate descent.

    Parameters
    ----------
    l1, l2 : per-coordinate penalty weights (see :mod:`riskset.solver.prior`).
    beta0 : warm start (zeros by default).
    fixed : boolean mask of coordinates held at their ``beta0`` value (profile likelihood).
    """
    opts = options or SolverOptions()
    p = datafit.n_coef
    beta = np.zeros(p) if beta0 is None else np.array(beta0, dtype=np.float64)
    fixed = np.zeros(p, bool) if fixed is None else np.asarray(fixed, bool)
    free = ~fixed
    state = datafit.new_state(beta)

    gamma_max = None
    if np.any(l1[free] > 0):
        beta, state, gamma_max, done = _restricted_start(datafit, beta, state, l1, l2, free, opts)
        if done:
            ll = datafit.loglik(state)
            return SolverResult(beta, state, ll, ll - penalty_value(beta, l1, l2), True, 0,
                                "all penalized coefficients are zero: the L1 rate is at or above gamma_max",
                                gamma_max)

    beta, state, result = _cycles(datafit, beta, state, l1, l2, np.flatnonzero(free), opts)
    if result.converged and opts.polish_max_active > 0:
        beta, state = polish(datafit, beta, state, l1, l2, free, opts.polish_max_active)
        result.loglik = datafit.loglik(state)
        result.objective = result.loglik - penalty_value(beta, l1, l2)
    problem = getattr(datafit, "diagnose", lambda s, b: None)(state, beta)
    if problem:
        result.converged = False
        result.message = problem
    result.beta, result.state, result.gamma_max = beta, state, gamma_max
    return result


def _cycles(datafit, beta, state, l1, l2, coords, opts):
    """Full sweeps over ``coords``, each followed by sweeps over the active set, until a
    full sweep changes the objective by less than tol (relative)."""
    radius = np.ones(datafit.n_coef)
    objective = datafit.loglik(state) - penalty_value(beta, l1, l2)
    bar = _progress_bar(opts.progress, opts.max_iter)
    converged, message, change, k = False, "", np.inf, 0
    sweep = getattr(datafit, "cycle", None) or _python_cycle(datafit)
    full = True
    while k < opts.max_iter:
        sweep_coords = coords if full else coords[(beta[coords] != 0) | (l1[coords] == 0)]
        sweep(state, sweep_coords, beta, l1, l2, radius)
        k += 1
        new_objective = datafit.loglik(state) - penalty_value(beta, l1, l2)
        if not np.isfinite(new_objective):
            message = f"the objective became non-finite ({new_objective}) at cycle {k}"
            break
        change = abs(new_objective - objective) / (abs(new_objective) + 1.0)
        objective = new_objective
        if change >= opts.tol and k % POLISH_EVERY == 0:
            # slow linear progress (correlated coordinates, e.g. an intercept beside uncentred
            # covariates): exact Newton steps on a small active set; never makes the fit worse
            beta, state = polish(datafit, beta, state, l1, l2, np.isin(np.arange(datafit.n_coef), coords),
                                  opts.polish_max_active)
            objective = datafit.loglik(state) - penalty_value(beta, l1, l2)
        if bar is not None:
            bar.update(1)
            bar.set_postfix_str(f"objective {objective:.6g}, change {change:.1e}")
        if change < opts.tol:
            if full:
                converged, message = True, f"relative objective change {change:.2e} < tol {opts.tol:g}"
                break
            full = True  # the active set has converged: check every coordinate
        else:
            full = False
    else:
        message = f"reached max_iter = {opts.max_iter} cycles; relative objective change {change:.2e} >= tol {opts.tol:g}"
    if bar is not None:
        bar.close()
    ll = datafit.loglik(state)
    result = SolverResult(beta, state, ll, objective, converged, k, message)
    return beta, state, result


def _python_cycle(datafit):
    """A sweep through the datafit's coordinate/move methods, one coordinate at a time."""

    def sweep(state, coords, beta, l1, l2, radius):
        for j in coords:
            g, h = datafit.coordinate(state, j)
            step = bounded_step(g, h, beta[j], l1[j], l2[j], radius, j)
            if step != 0.0:
                datafit.move(state, j, step)
                beta[j] += step

    return sweep


def _restricted_start(datafit, beta, state, l1, l2, free, opts):
    """Fit the unpenalized free coordinates with penalized ones at zero; test if zero is optimal.

    Returns (beta, state, gamma_max, done): ``gamma_max`` is the smallest common L1
    rate at which every penalized coordinate stays at zero.
    """
    penalized = free & (l1 > 0)
    if np.any(beta[penalized] != 0):  # warm start away from zero: nothing to test cheaply
        return beta, state, None, False
    unpen = np.flatnonzero(free & (l1 == 0))
    if unpen.size:
        beta, state, _ = _cycles(datafit, beta, state, l1, l2, unpen, opts)
        beta, state = polish(datafit, beta, state, l1, l2, free & (l1 == 0), opts.polish_max_active)
    grad = datafit.gradient(state)
    ratio = np.abs(grad[penalized]) / (l1[penalized] / l1[penalized].max())
    gamma_max = float(ratio.max()) if ratio.size else 0.0
    done = bool(np.all(np.abs(grad[penalized]) <= l1[penalized]))
    return beta, state, gamma_max, done


def polish(datafit, beta, state, l1, l2, free, max_active, max_steps=25):
    """Newton steps on the active set with the exact Hessian (signs of L1 terms held).

    Accepted only while they increase the objective and keep every sign; returns
    the input unchanged otherwise, so polishing can never make a fit worse.
    """
    active = np.flatnonzero(free & ((beta != 0) | (l1 == 0)))
    if active.size == 0 or active.size > max_active:
        return beta, state
    objective = datafit.loglik(state) - penalty_value(beta, l1, l2)
    for _ in range(max_steps):
        score = np.array([datafit.coordinate(state, j)[0] for j in active])  # O(nnz) of the active set only
        grad = score - l2[active] * beta[active] - l1[active] * np.sign(beta[active])
        hess = datafit.hessian(state, active) - np.diag(l2[active])
        try:
            step = np.linalg.solve(-hess, grad)
        except np.linalg.LinAlgError:
            return beta, state
        if not np.all(np.isfinite(step)):
            return beta, state
        trial = beta.copy()
        trial[active] += step
        if np.any((l1[active] > 0) & (np.sign(trial[active]) != np.sign(beta[active]))):
            return beta, state
        trial_state = datafit.new_state(trial)
        trial_objective = datafit.loglik(trial_state) - penalty_value(trial, l1, l2)
        if not trial_objective >= objective - 1e-12 * (abs(objective) + 1):
            return beta, state
        beta, state, objective = trial, trial_state, trial_objective
        if np.max(np.abs(step)) < 1e-13 * (1 + np.max(np.abs(beta[active]))):
            break
    return beta, state


def _progress_bar(show, total):
    if not show:
        return None
    from tqdm.auto import tqdm

    return tqdm(total=total, desc="CCD cycles", unit="cycle", leave=False)
