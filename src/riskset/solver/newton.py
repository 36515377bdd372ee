"""Newton steps on the active set (the polish of :mod:`riskset.solver.ccd`).

:func:`newton_steps` takes Newton steps on the coordinates :func:`newton_coordinates` names
(the active set), projected on its orthant: an L1 coordinate that would cross its center stops
there. Each step (:func:`newton_step`) either solves the formed Hessian block
(:func:`dense_newton`: small, cheap blocks; :func:`block_step`, without the null directions of a
singular block) or takes conjugate gradients on Hessian-vector products, preconditioned by
:func:`preconditioner`. Polishing never makes a fit worse: a step that does not increase the
objective is halved, then given up.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.sparse.linalg import LinearOperator, cg

from riskset.cores import dense_algebra
from riskset.core.penalty import Penalty

#: Largest active set whose Newton step solves the formed Hessian block; larger sets use
#: conjugate gradients on Hessian-vector products (:func:`newton_step`). A Cox model stratified
#: by matched pairs has one rank of curvature per event: with more active coordinates than
#: events its block is singular, conjugate gradients never converge, and only the formed block
#: (its null directions left out) gives a step; the eigendecomposition of a block this size is cheap.
DENSE_NEWTON_MAX = 400
#: Most work of forming the block (``Datafit.hessian_work``, non-zeros visited; a Cox block
#: costs nnz_A x |A|): about the cost of one conjugate-gradient Newton step at N = 1M.
DENSE_WORK_MAX = 5e7
#: After a conjugate-gradient step of a fit ran out of iterations (an ill-conditioned block,
#: :class:`BlockConditioning`), its Newton steps form blocks up to this many times
#: :data:`DENSE_NEWTON_MAX`: hundreds of truncated steps cost more than the eigendecompositions
#: (a conditional Poisson fit of 2,000 rows and 1,000 covariates: 235 truncated steps, 5.1 s;
#: docs/performance.md).
ILL_CONDITIONED_DENSE_FACTOR = 2

#: Relative residual of the conjugate-gradient Newton step (an inexact Newton method:
#: the polish repeats the step, so it need not be exact): the first step's and the
#: least; each later step solves to the relative error of the last step's quadratic model,
#: at most :data:`NEWTON_CG_RTOL_MAX` (a forcing term after Eisenstat & Walker 1996: far
#: from the optimum, where the model is poor, an exact solve of it is wasted).
NEWTON_CG_RTOL = 1e-3
NEWTON_CG_RTOL_MAX = 0.1

#: Halvings of a Newton step that does not increase the objective before the steps stop.
BACKTRACKS = 3

#: Most conjugate-gradient iterations of one Newton step: identified fits converge in a few;
#: an ill-conditioned block (more active covariates than events) takes hundreds, each O(nnz_A),
#: so the step is truncated at this count.
CG_MAX_ITER = 200

#: Eigenvalues of a Newton block, scaled to unit diagonal, at most this are numerically zero:
#: rounding leaves identical columns eigenvalues of +-1e-16; a nearly collinear pair that is
#: still identified (x2 = x1 + 1e-7 z) has 2e-15.
NULL_CURVATURE = 4 * np.finfo(float).eps

#: Relative objective gain below which a step along numerically null directions buys nothing.
NULL_GAIN = 1e-12


@dataclass
class BlockConditioning:
    """What a fit's Newton steps learned of its Hessian blocks: whether a conjugate-gradient step
    ran out of its :data:`CG_MAX_ITER` iterations. From then on :func:`dense_newton` forms
    blocks up to :data:`ILL_CONDITIONED_DENSE_FACTOR` times :data:`DENSE_NEWTON_MAX`, where a
    truncated step would gain little for its hundreds of products. Decided by counts, never by
    timings: a fit takes the same steps on any machine."""

    cg_ran_out: bool = False

    def dense_max(self) -> int:
        """The largest active set whose Newton step forms its block."""
        return DENSE_NEWTON_MAX * (ILL_CONDITIONED_DENSE_FACTOR if self.cg_ran_out else 1)


def newton_steps(datafit, beta, state, pen: Penalty, free, max_active, tol=0.0, max_steps=25, objective=None,
                 joining=None, rtol=NEWTON_CG_RTOL, conditioning: BlockConditioning | None = None):
    """Newton steps on the active set (from :func:`newton_step`), projected on its orthant:
    an L1 coordinate that would cross its center stops there and leaves the active set.
    Returns (beta, state, objective, settled, forcing): ``objective`` is the penalized
    log-likelihood there; ``settled`` is the relative gain the next step is expected to make
    (:func:`gain_ahead`, at most the last one's: after a Newton step the gap left is that, not
    the gain just made) when they stopped for want of progress without moving a coordinate
    to its center, else None. The first conjugate-gradient step is solved to the relative
    residual ``rtol``, each later one to the forcing term of :data:`NEWTON_CG_RTOL`, which
    ``forcing`` returns as the next step would have had it.

    A step is accepted only if the objective stays finite and increases (else it is halved, at most
    :data:`BACKTRACKS` times); polishing can therefore never make a fit worse. Steps stop
    when one gains, or its quadratic model promised, less than ``tol / 10`` (relative; ``tol =
    0``: machine precision; the gap a Newton step leaves is of the order of the square of its
    model's error times its promise, and at machine precision a measured gain is rounding), or
    with ``tol > 0`` when the next one is expected to (:func:`gain_ahead`), and after a
    conjugate-gradient step that moved coordinates to their centers: the gradient that
    :meth:`riskset.solver.ccd.Solver.polish` computes next re-decides the active set for one
    product, where more steps spent tens on coordinates that then came back.
    ``objective``: the penalized log-likelihood at ``state``, where the caller has it.
    ``joining``: (coordinates at their centers, the side each enters on) that join the first
    step (a warm start's opening, :meth:`riskset.solver.ccd.Solver.polish`); the projection returns those that
    step to the other side. ``conditioning``: the fit's :class:`BlockConditioning`, which the
    steps update (None: each call starts afresh).
    """
    conditioning = BlockConditioning() if conditioning is None else conditioning
    if objective is None:
        objective = datafit.loglik(state) - pen.value(beta)
    active = newton_coordinates(datafit, beta, pen, free, max_active)
    side = None
    if joining is not None:
        active = np.union1d(np.zeros(0, np.int64) if active is None else active, joining[0])
        side = np.sign(beta[active] - pen.center[active])
        side[np.searchsorted(active, joining[0])] = joining[1]
    if active is None:
        return beta, state, objective, None, rtol
    l1, center = pen.l1, pen.center
    settled = None
    for _ in range(max_steps):
        side = np.sign(beta[active] - center[active]) if side is None else side
        conjugate_gradients = not dense_newton(datafit, active, conditioning)
        found = newton_step(datafit, state, beta, active, pen, rtol, side, conditioning)
        if found is None or not np.all(np.isfinite(found[0])):
            break
        step, predicted = found
        for _ in range(BACKTRACKS + 1):
            trial = beta.copy()
            trial[active] += step
            crossed = (l1[active] > 0) & (np.sign(trial[active] - center[active]) != side)
            trial[active[crossed]] = center[active[crossed]]
            trial_state = datafit.new_state(trial)
            trial_objective = datafit.loglik(trial_state) - pen.value(trial)
            if np.isfinite(trial_objective) and trial_objective >= objective - 1e-12 * (abs(objective) + 1):
                break
            step = step / 2
        else:
            break
        gain = trial_objective - objective
        beta, state, objective = trial, trial_state, trial_objective
        scale = abs(objective) + 1
        threshold = max(1e-15, tol / 10) * scale
        tiny = np.max(np.abs(step)) < 1e-13 * (1 + np.max(np.abs(beta[active])))
        ahead = gain_ahead(gain, predicted, rtol if conjugate_gradients else 0.0)
        if tiny or min(gain, predicted) <= threshold:  # a step that promised <= threshold leaves far less
            settled = None if crossed.any() else min(max(gain, 0.0), ahead) / scale
            break
        rtol = float(np.clip(model_error(gain, predicted), NEWTON_CG_RTOL, NEWTON_CG_RTOL_MAX))
        if conjugate_gradients and crossed.any():
            break  # the active set moved: a full sweep (one product) re-decides it before more CG steps
        if tol > 0 and not crossed.any() and ahead <= threshold:
            settled = ahead / scale
            break
        active, side = newton_coordinates(datafit, beta, pen, free, max_active), None  # crossing ones have left it
        if active is None:
            break
    return beta, state, objective, settled, rtol


def model_error(gain: float, predicted: float) -> float:
    """The relative error of a Newton step's quadratic model, which promised ``predicted``
    where the step gained ``gain``."""
    return abs(gain - predicted) / predicted if predicted > 0 else np.inf


def gain_ahead(gain: float, predicted: float, rtol: float) -> float:
    """What the next Newton step should gain after one that gained ``gain`` where its
    quadratic model promised ``predicted``: Newton's gap shrinks as the square of the
    model's relative error (the error is cubic in the step, the gap quadratic), and an
    inexact (conjugate-gradient) step solved to ``rtol`` (0: exact) leaves ~rtol^2 of it;
    a factor 10 for safety.
    """
    error = model_error(gain, predicted)
    return 10.0 * (error * error + rtol * rtol) * predicted  # a product, not **: inf, never OverflowError


def newton_step(datafit, state, beta, active, pen: Penalty, rtol: float, side,
                conditioning: BlockConditioning | None = None):
    """The Newton step s on the active set A (signs of the L1 terms held) and the gain its
    quadratic model predicts, g's / 2, or None:
    ``(diag(l2) - H_AA) s = g_A - l2 (beta_A - m_A) - l1 side``, the sides ``side`` those of the
    centers, sign(beta_A - m_A), or for a coordinate entering at its center the side it enters on.

    Where :func:`dense_newton` holds, the block H_AA is formed and solved; elsewhere,
    conjugate gradients on the datafit's Hessian-vector products
    (:meth:`~riskset.core.interface.Datafit.local_quadratic`: O(nnz_A) each, never the
    |A|^2 block), preconditioned by its diagonal scale (centred on an intercept where the
    datafit names one: :func:`preconditioner`), to the relative residual ``rtol`` or for at most
    :data:`CG_MAX_ITER` iterations (a truncated step, which ``conditioning`` records).
    """
    conditioning = BlockConditioning() if conditioning is None else conditioning
    sub = pen[active]
    qa, prior_slope = sub.l2, sub.gradient(beta[active], side)
    if dense_newton(datafit, active, conditioning):
        grad = datafit.slopes(state, active) - prior_slope
        step = block_step(datafit, beta, active, pen, np.diag(qa) - datafit.hessian(state, active), grad)
        return None if step is None else (step, 0.5 * float(grad @ step))
    quad = datafit.local_quadratic(state, active)
    if quad is None:
        return None
    grad = quad.gradient - prior_slope
    m, scale = active.size, quad.curvature + qa
    if not np.all(scale > 0):
        return None
    system = LinearOperator((m, m), matvec=lambda v: qa * v - quad.hessian_times(v), dtype=np.float64)
    step, info = cg(system, grad, rtol=rtol, maxiter=min(10 * m, CG_MAX_ITER),
                    M=preconditioner(scale, quad.intercept, quad.coupling))
    if info < 0 or not np.all(np.isfinite(step)):
        return None
    conditioning.cg_ran_out |= info > 0
    predicted = 0.5 * float(grad @ step)
    # info > 0: the iterations ran out. The iterate minimizes the quadratic model over the Krylov
    # space it spans, so it is still an ascent step (a truncated Newton step; Nocedal & Wright,
    # Numerical Optimization, 2nd ed., sec. 7.1), and the line search of :func:`newton_steps` takes it.
    return (step, predicted) if predicted > 0 else None



def block_step(datafit, beta, active, pen: Penalty, A: np.ndarray, grad: np.ndarray) -> np.ndarray | None:
    """The Newton step A^-1 g on the formed block A (positive semi-definite), or None. Where A is
    numerically singular (two identical columns), a plain solve moves the coefficients
    arbitrarily far along the null direction (1e12 and -1e12) at an unchanged likelihood; the
    step then leaves those directions out (:func:`null_free_solve`) unless moving along them
    raises the objective by more than rounding (a nearly collinear pair that is identified,
    whose information lies below double precision: its estimate is settled by the likelihood)."""
    with dense_algebra(A.shape[0]):
        reduced = null_free_solve(A, grad)
        try:
            full = np.linalg.solve(A, grad)
        except np.linalg.LinAlgError:
            return None if reduced is None else reduced[0]
    if reduced is None or not reduced[1]:
        return full
    objective = {}
    for name, step in (("reduced", reduced[0]), ("full", full)):
        moved = beta.copy()
        moved[active] += step
        objective[name] = datafit.loglik(datafit.new_state(moved)) - pen.value(moved)
    gained = objective["full"] - objective["reduced"] > NULL_GAIN * (1.0 + abs(objective["reduced"]))
    return full if gained and np.isfinite(objective["full"]) else reduced[0]


def null_free_solve(A: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, bool] | None:
    """(the solution of A s = b without components along directions of numerically zero
    curvature, whether there were any), computed on A scaled to unit diagonal (coordinates
    without curvature do not move); None where nothing can move."""
    d = np.diag(A)
    moving = d > 0
    if not moving.any() or not np.all(np.isfinite(A)):
        return None
    scale = 1.0 / np.sqrt(d[moving])
    w, V = np.linalg.eigh(A[np.ix_(moving, moving)] * scale[:, None] * scale[None, :])
    keep = w > NULL_CURVATURE * max(float(w[-1]), 0.0)
    if not keep.any():
        return None
    step = np.zeros(b.shape[0])
    step[moving] = scale * (V[:, keep] @ ((V[:, keep].T @ (b[moving] * scale)) / w[keep]))
    return step, bool(not keep.all() or not moving.all())


def preconditioner(scale, intercept=None, coupling=None) -> LinearOperator:
    """M^-1 of the conjugate-gradient Newton step on a system S with diagonal ``scale``: Jacobi,
    r / scale; with a coordinate k coupled to every other (``intercept``, its column of -H
    ``coupling``), Jacobi after centring the others on it. In the coordinates u of s = T u
    (s_k = u_k - sum_j m_j u_j, the others unchanged, m_j = S_jk / S_kk), T' S T has nothing off
    the diagonal in its k-th row and column and S_jl - S_jk S_lk / S_kk elsewhere (a GLM: the
    weighted covariances of the centred covariates, for sparse binary ones nearly a diagonal),
    so M^-1 = T diag(T' S T)^-1 T': positive definite, and S^-1 itself where the centred
    covariates are uncoupled: a few conjugate-gradient iterations per Newton step where Jacobi
    alone takes several times more (docs/performance.md)."""
    m = scale.shape[0]
    if intercept is None:
        return LinearOperator((m, m), matvec=lambda r: r / scale, dtype=np.float64)
    k = intercept
    shift = coupling / scale[k]
    shift[k] = 0.0
    centred = scale - coupling * shift
    centred = np.where(centred > 1e-8 * scale, centred, scale)  # a covariate constant on the weighted rows

    def apply(r):
        z = (r - shift * r[k]) / centred  # diag^-1 T' r
        z[k] -= shift @ z                  # T z
        return z

    return LinearOperator((m, m), matvec=apply, dtype=np.float64)


def dense_newton(datafit, active, conditioning: BlockConditioning | None = None) -> bool:
    """Whether the Newton step on ``active`` solves the formed Hessian block: at most
    :data:`DENSE_NEWTON_MAX` coordinates (more on an ill-conditioned fit's blocks:
    :class:`BlockConditioning`) whose block costs at most :data:`DENSE_WORK_MAX`."""
    most = DENSE_NEWTON_MAX if conditioning is None else conditioning.dense_max()
    return active.size <= most and datafit.hessian_work(active) <= DENSE_WORK_MAX


def newton_coordinates(datafit, beta, pen: Penalty, free, max_active):
    """The coordinates :func:`newton_steps` would move (:func:`active_set`), or None if there are none,
    more than ``max_active`` (None: no bound), or, where the Newton step would take conjugate
    gradients (:func:`dense_newton`), more of them without a quadratic penalty than the rank of
    the datafit's Hessian (:attr:`~riskset.core.interface.Datafit.hessian_rank`): the block is
    then singular and conjugate gradients run to :data:`CG_MAX_ITER` for nothing (a Cox model
    stratified by matched pairs with more active coordinates than events, each polish of a
    cross-validation fold; a formed block is solved without its null directions instead)."""
    active = active_set(beta, pen, free)
    return active if active.size and polishable(datafit, active, pen, max_active) else None


def polishable(datafit, columns, pen: Penalty, max_active) -> bool:
    """Whether Newton steps take the coordinates ``columns``: at most ``max_active`` (None: any
    number) and not singular by count (:func:`singular_by_rank`)."""
    return within(columns.size, max_active) and not singular_by_rank(datafit, columns, pen)


def refine_max_active(max_active: int | None) -> int:
    """Largest active set refined (Newton steps to machine precision before a KKT check): at most
    ``max_active`` (None: no bound) and :data:`DENSE_NEWTON_MAX`."""
    return DENSE_NEWTON_MAX if max_active is None else min(max_active, DENSE_NEWTON_MAX)


def refine_coordinates(datafit, beta, pen: Penalty, free, max_active):
    """The coordinates that refining moves (:func:`newton_coordinates` of at most
    :func:`refine_max_active` of them), or None if it leaves the fit as it is: their Newton step
    must solve the formed block (:func:`dense_newton`; conjugate-gradient steps to machine
    precision would cost more than the KKT check they precede)."""
    active = newton_coordinates(datafit, beta, pen, free, refine_max_active(max_active))
    return active if active is not None and dense_newton(datafit, active) else None


def singular_by_rank(datafit, columns, pen: Penalty) -> bool:
    """Whether the Newton block of ``columns`` is singular by count alone and would be solved by
    conjugate gradients (:func:`newton_coordinates`)."""
    return np.count_nonzero(pen.l2[columns] == 0) > datafit.hessian_rank and not dense_newton(datafit, columns)


def active_set(beta, pen: Penalty, free) -> np.ndarray:
    """The free coordinates off their center or without an L1 term."""
    return np.flatnonzero(free & (~pen.at_center(beta) | (pen.l1 == 0)))


def within(size: int, max_active: int | None) -> bool:
    """Whether ``size`` coordinates are few enough to polish (``max_active`` None: any number)."""
    return max_active is None or size <= max_active

