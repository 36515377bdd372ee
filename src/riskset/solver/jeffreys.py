"""Jeffreys-prior (Firth) fits: maximize l(beta) + 1/2 log det I_S(beta), I_S the observed
information of the coefficients S.

S = every coefficient is Firth's (1993) penalized likelihood (logistf, coxphf: the Jeffreys
invariant prior); S = one coefficient, alone in the model, is Cyclops' ``jeffreys`` prior
(penalty 1/2 log |I_jj|). Its estimate is finite where the maximum likelihood one is not
(no event among the treated, separation): the penalty goes to -inf as the information
vanishes.

The fit is logistf's modified Newton iteration (Heinze and Schemper 2002): the modified
score U*_k = U_k + 1/2 tr(I_S^-1 dI_S/dbeta_k) (Firth 1993, eq. 2.1) solved with the full
information I as its Jacobian, each step halved until the penalized log-likelihood does not
fall. dI_S/dbeta_k is the central difference of the Hessian block over a step of
:data:`DERIVATIVE_STEP` (error O(step^2) relative, 1e-8: far below the stated accuracy).
Dense P x P algebra: for the few coefficients of a treatment-effect model
(:data:`MAX_COEF`).
"""
from __future__ import annotations

import numpy as np

from riskset.core.interface import Datafit
from riskset.solver.ccd import CONVERGED, SolverOptions, SolverResult

#: Relative step of the central differences of the information (times max(1, |beta_k|)).
DERIVATIVE_STEP = 1e-4
#: Most free coefficients of a Jeffreys fit (dense information, P Hessian pairs per iteration).
MAX_COEF = 200
#: Step halvings before an iteration is declared stuck.
MAX_HALVINGS = 40


def fit_jeffreys(datafit: Datafit, selected: np.ndarray, options: SolverOptions | None = None,
                 fixed: np.ndarray | None = None, beta0: np.ndarray | None = None) -> SolverResult:
    """Maximize the Jeffreys-penalized log-likelihood of ``datafit`` (module docstring) over
    the coefficients not ``fixed`` (mask; held at ``beta0``), the penalty on those of
    ``selected`` (mask). Converged: the modified score is within ``options.kkt_tol``
    standard errors of 0 and the last step moved no coefficient by more than ``options.tol``
    (relative to max(1, |beta|))."""
    opts = options or SolverOptions()
    p = datafit.n_coef
    held = np.zeros(p, bool) if fixed is None else np.asarray(fixed, bool)
    free = np.flatnonzero(~held)
    penalized = np.flatnonzero(np.asarray(selected, bool) & ~held)
    beta = np.zeros(p) if beta0 is None else np.array(beta0, dtype=np.float64)
    objective = _objective(datafit, beta, penalized)
    violation, message = np.inf, ""
    for iteration in range(1, opts.max_iter + 1):
        state = datafit.new_state(beta)
        info = -datafit.hessian(state, free)
        score = datafit.gradient(state)[free] + _penalty_gradient(datafit, beta, free, penalized)
        try:
            step = np.linalg.solve(info, score)
        except np.linalg.LinAlgError:
            message = f"the information is singular at iteration {iteration}: no Newton step"
            break
        violation = float(np.max(np.abs(score) / np.sqrt(np.maximum(np.diag(info), 1e-300))))
        moved = float(np.max(np.abs(step) / np.maximum(1.0, np.abs(beta[free]))))
        if violation <= opts.kkt_tol and moved <= opts.tol:
            return _result(datafit, beta, objective, True, iteration, f"modified score within {violation:.1e} "
                           f"standard errors of 0 <= kkt_tol {opts.kkt_tol:g}", violation)
        for _ in range(MAX_HALVINGS):
            trial = beta.copy()
            trial[free] += step
            value = _objective(datafit, trial, penalized)
            if value >= objective - 1e-12 * max(1.0, abs(objective)):
                break
            step = step / 2
        else:
            message = f"no step raised the penalized log-likelihood at iteration {iteration}"
            break
        beta, objective = trial, value
    else:
        message = f"not converged after max_iter={opts.max_iter} iterations (modified score {violation:.1e} SE)"
    return _result(datafit, beta, objective, False, iteration, message, violation)


def _objective(datafit: Datafit, beta, penalized) -> float:
    """l(beta) + 1/2 log det I_S(beta); -inf where I_S is not positive definite."""
    state = datafit.new_state(beta)
    loglik = datafit.loglik(state)
    if penalized.size == 0:
        return loglik
    sign, logdet = np.linalg.slogdet(-datafit.hessian(state, penalized))
    return loglik + 0.5 * logdet if sign > 0 and np.isfinite(loglik) else -np.inf


def _penalty_gradient(datafit: Datafit, beta, free, penalized) -> np.ndarray:
    """1/2 tr(I_S^-1 dI_S/dbeta_k) for k in ``free`` (central differences of I_S)."""
    if penalized.size == 0:
        return np.zeros(free.size)
    inverse = np.linalg.inv(-datafit.hessian(datafit.new_state(beta), penalized))
    out = np.empty(free.size)
    for i, k in enumerate(free):
        h = DERIVATIVE_STEP * max(1.0, abs(beta[k]))
        up, down = beta.copy(), beta.copy()
        up[k] += h
        down[k] -= h
        d_info = (datafit.hessian(datafit.new_state(down), penalized)
                  - datafit.hessian(datafit.new_state(up), penalized)) / (2.0 * h)   # d(-H)/dbeta_k
        out[i] = 0.5 * float(np.sum(inverse * d_info.T))
    return out


def _result(datafit, beta, objective, converged, n_iter, message, violation) -> SolverResult:
    state = datafit.new_state(beta)
    return SolverResult(beta=beta, state=state, loglik=datafit.loglik(state), objective=objective,
                        converged=converged, n_iter=n_iter, message=message if message else CONVERGED,
                        kkt=violation)
