"""Proximal-Newton fit: every outer iteration moves all coefficients at once.

Coordinate descent (:mod:`riskset.solver.ccd`) asks the likelihood one coordinate at a time.
A likelihood whose every question is a round trip over workers
(:class:`riskset.sharded.ShardedDatafit`) needs an algorithm whose round trips do not grow
with the coefficients. Each outer iteration here asks for:

1. the full gradient (one reduction) and the KKT check on it (:mod:`riskset.solver.kkt`, the
   single-machine fit's units): the fit has converged when the largest violation is at most
   ``kkt_tol``;
2. nothing more to choose the entrants: the coordinates at their centers whose slope beats
   their L1 rate join the active set on the side of their slope;
3. Newton steps on the active set with the L1 kink (:func:`riskset.solver.newton.newton_steps`:
   the signs of the L1 terms held, a coordinate that would cross its center stops there and
   leaves; the formed block, one reduction, or conjugate gradients on Hessian-vector products,
   one reduction each), each accepted by a backtracking search on the penalized objective
   (one reduction per trial).

An orthant-wise Newton method (the orthant projection of Andrew & Gao 2007, OWL-QN, with the
exact Hessian in place of a quasi-Newton one; the proximal-Newton frame of Lee, Sun & Saunders
2014). It needs only the :class:`~riskset.core.interface.Likelihood` contract, so it fits a
one-machine datafit to the same optimum as coordinate descent (the tests compare them).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from riskset.core.interface import FitState, Likelihood
from riskset.core.penalty import Penalty
from riskset.solver.ccd import (AT_GAMMA_MAX, SolverOptions, SolverResult, ended_at_start, finish, zero_test)
from riskset.solver.ending import state_problem
from riskset.solver.entrants import entrants
from riskset.solver.kkt import kkt_unit
from riskset.solver.newton import NEWTON_CG_RTOL, BlockConditioning, newton_steps


@dataclass
class OuterEnd:
    """Where the outer iterations left a fit: coefficients, state, penalized objective, whether
    the KKT conditions hold (``converged``), iterations, a message, the largest KKT violation
    and the gradient it was read from."""

    beta: np.ndarray
    state: FitState
    objective: float
    converged: bool
    n_iter: int
    message: str
    kkt: float
    grad: np.ndarray | None


def fit_proximal_newton(likelihood: Likelihood, l1: np.ndarray, l2: np.ndarray, beta0: np.ndarray | None = None,
                        fixed: np.ndarray | None = None, options: SolverOptions | None = None,
                        center: np.ndarray | None = None) -> SolverResult:
    """Maximize the penalized log-likelihood of ``likelihood`` by outer Newton iterations
    (module docstring); arguments and result as :func:`riskset.solver.ccd.fit_ccd`
    (``options.max_iter`` caps the outer iterations; ``n_iter`` counts them).

    A fit from the prior's centers first fits the unpenalized coefficients alone and reads
    ``gamma_max`` there, as the coordinate-descent fit does.
    """
    opts = options or SolverOptions()
    pen = Penalty(l1, l2, center)
    beta = pen.center.copy() if beta0 is None else np.array(beta0, dtype=np.float64)
    free = np.ones(beta.shape, bool) if fixed is None else ~np.asarray(fixed, bool)
    state = likelihood.new_state(beta)
    problem = state_problem(likelihood, beta, likelihood.diagnose(state, beta), "at the start")
    if problem:
        return ended_at_start(likelihood, beta, state, pen, False, problem)
    objective = likelihood.loglik(state) - pen.value(beta)
    start_objective = objective
    penalized = free & (pen.l1 > 0)
    gamma_max = None
    if penalized.any() and np.all(pen.at_center(beta)[penalized]):
        restricted = free & (pen.l1 == 0)
        grad = None
        if restricted.any():
            end = outer_iterations(likelihood, beta, state, objective, pen, restricted, opts)
            if not np.isfinite(end.objective):
                return finish(likelihood, _result(likelihood, end, pen), pen, free)
            beta, state, objective, grad = end.beta, end.state, end.objective, end.grad
        grad = likelihood.gradient(state) if grad is None else grad
        gamma_max, done = zero_test(grad, pen.l1, penalized)
        if done:
            result = ended_at_start(likelihood, beta, state, pen, True, AT_GAMMA_MAX)
            result.kkt = pen.kkt_violation(beta, grad, kkt_unit(likelihood, pen, free, state), free)
            result.gamma_max = gamma_max
            return result
    end = outer_iterations(likelihood, beta, state, objective, pen, free, opts)
    result = _result(likelihood, end, pen)
    result.gamma_max = gamma_max
    return finish(likelihood, result, pen, free, start_objective)


def outer_iterations(likelihood: Likelihood, beta, state, objective: float, pen: Penalty, free,
                     opts: SolverOptions) -> OuterEnd:
    """Outer iterations over the ``free`` coordinates from ``beta`` (``state``, penalized
    ``objective``) until the KKT conditions hold to ``opts.kkt_tol``, the iterations run out,
    or a Newton step can no longer move."""
    bar = _progress_bar(opts.progress)
    rtol, kkt, grad, conditioning = NEWTON_CG_RTOL, np.inf, None, BlockConditioning()
    message = f"reached max_iter = {opts.max_iter} outer iterations"
    converged, n_iter = False, 0
    try:
        for n_iter in range(1, opts.max_iter + 1):
            grad = likelihood.gradient(state)
            if not np.all(np.isfinite(grad)):
                j = int(np.flatnonzero(~np.isfinite(grad))[0])
                message = (f"the fit stopped at outer iteration {n_iter}: the gradient of "
                           f"{likelihood.coef_label(j)!r} is {grad[j]}")
                break
            kkt = pen.kkt_violation(beta, grad, kkt_unit(likelihood, pen, free, state), free)
            if bar is not None:
                bar.update(1)
                bar.set_postfix(kkt=f"{kkt:.2e}", target=f"{opts.kkt_tol:.0e}")
            if kkt <= opts.kkt_tol:
                converged, message = True, f"KKT violation {kkt:.1e} <= kkt_tol {opts.kkt_tol:g}"
                break
            enter = entrants(beta, grad, pen, free)
            joining = (enter, np.sign(grad[enter])) if enter.size else None
            before = beta
            beta, state, objective, _, rtol = newton_steps(likelihood, beta, state, pen, free, None, tol=opts.tol,
                                                           objective=objective, joining=joining, rtol=rtol,
                                                           conditioning=conditioning)
            if beta is before:
                message = (f"the Newton steps made no progress at outer iteration {n_iter} with a KKT violation "
                           f"of {kkt:.3g} (> {opts.kkt_tol:g})")
                break
    finally:
        if bar is not None:
            bar.close()
    return OuterEnd(beta, state, objective, converged, n_iter, message, kkt, grad)


def _result(likelihood: Likelihood, end: OuterEnd, pen: Penalty) -> SolverResult:
    return SolverResult(end.beta, end.state, end.objective + pen.value(end.beta), end.objective, end.converged,
                        end.n_iter, end.message, kkt=end.kkt, grad=end.grad if end.converged else None)


def _progress_bar(show):
    """A bar counting outer iterations (how many a fit needs is not known); its postfix shows
    the KKT violation against ``kkt_tol``."""
    if not show:
        return None
    from tqdm.auto import tqdm

    return tqdm(total=None, desc="Newton iterations", unit="iteration", leave=False)
