"""Cyclic coordinate descent (CCD) for penalized log-likelihoods.

The solver maximizes ``l(beta) - sum_j (l1_j |beta_j - m_j| + l2_j (beta_j - m_j)^2 / 2)``
(:class:`~riskset.core.penalty.Penalty`; m_j is the prior's center, usually 0) over a
:class:`~riskset.core.interface.Datafit`, touching the data only through the datafit's
``coordinate`` (scalar gradient and Hessian) and ``move`` (sparse update of the
linear predictor) methods. Named steps:

1. ``restricted start``: with an L1 prior, fit the unpenalized coordinates alone;
   if zero is optimal for every penalized coordinate (the prior rate is at or
   above ``gamma_max``), that is the answer (Cyclops fails there).
2. ``cycles``: in a family whose sweeps are costly, a warm start near its optimum, or a start
   from the centers whose entrants fit a polish, first opens with a gradient and a Newton
   polish (:func:`opening_entrants`). Then one Newton
   step per coordinate, bounded by a per-coordinate trust region (Genkin, Lewis & Madigan
   2007: half-width starts at 1, then becomes max(2|step|, half-width/2)); at the L1 kink
   the step uses the one-sided directional derivatives and never crosses it
   (:mod:`riskset.core.step`).
   Between full sweeps, cycles run over the active set only (coordinates off their
   prior center, or unpenalized), as glmnet does; a sweep is one compiled call
   (``Datafit.sweep``, :mod:`riskset.core.sweep`).
3. ``convergence``: the optimality (Karush-Kuhn-Tucker) conditions hold: after a *full*
   sweep whose relative change of the objective ``|f_k - f_{k-1}| / (|f_k| + 1)`` is below
   ``tol``, or a polish whose Newton steps settled (the gain of the next one is expected
   below ``tol`` x :data:`POLISH_SETTLED`), the full gradient is computed and the largest distance from 0 to the
   subdifferential of the objective (:meth:`~riskset.core.penalty.Penalty.kkt_violations`),
   in the units of :func:`kkt_unit` (the largest L1 rate; without an L1 prior, each
   coefficient's sqrt(I_jj + l2_j) at the point checked; with one, the smaller of the two
   for a coefficient without an L1 term), must be at most ``kkt_tol``; if not, full sweeps and
   Newton polishing go on (after polishes that no longer gain, sweeps over the violating
   coordinates alone first: :func:`sweep_violators`). The achieved violation is reported
   (``SolverResult.kkt``). A gradient costs one pass over X, a sweep one refresh of the
   risk-set sums per coordinate (of the order of a thousand passes): a polish that settled
   is checked, not swept again.
4. ``polish``: Newton steps on the active set, projected on its orthant (a coordinate
   that would cross zero stops there): after each full sweep that did not converge
   (it has just settled the active set) and every few cycles of slow linear progress.
   Small sets solve the formed Hessian block; large ones take conjugate-gradient steps
   on Hessian-vector products (O(nnz_A) each). A polish that stopped on coordinates
   reaching their centers is followed by another (:func:`polish_rounds`), the active set
   re-decided by one gradient instead of a full sweep. This replaces the long tail of
   active-set sweeps: typically one full sweep and a few polishes end a fit.
   Before each KKT check, small sets are polished to machine precision (those whose
   Hessian block is cheap to form, :func:`dense_newton`).
5. ``end`` (:func:`finish`, also per replicate): a non-finite state (checked with the
   objective after every sweep and by ``Datafit.diagnose`` at the end) stops the fit with
   a message naming where; otherwise the test that the estimate exists
   (:mod:`riskset.solver.separation`: no direction of unpenalized coefficients along which
   the likelihood keeps increasing), which gives the status ``estimate_does_not_exist``.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from scipy.sparse.linalg import LinearOperator, cg

from riskset.core.interface import ClosedFormStart, Datafit, FitState
from riskset.core.penalty import Penalty
from riskset.solver.screening import kkt_gradient, reference
from riskset.solver.separation import diverging_coefficients, nonexistence_message


#: Cycles between Newton polishing attempts while CCD progresses slowly.
POLISH_EVERY = 5

#: Largest active set whose Newton step solves the formed Hessian block; larger sets use
#: conjugate gradients on Hessian-vector products (:func:`newton_step`). A Cox model stratified
#: by matched pairs has one rank of curvature per event: with more active coordinates than
#: events its block is singular, conjugate gradients never converge, and only the formed block
#: (its null directions left out) gives a step; eigh of a 400 block takes ~20 ms ...
DENSE_NEWTON_MAX = 400
#: ... and most work of forming the block (``Datafit.hessian_work``, non-zeros visited): a Cox
#: block costs nnz_A x |A| (N = 1M, 5% density, |A| = 94: 440M, 0.75 s, where a conjugate-
#: gradient Newton step took ~0.1 s); 5e7 is about one such step.
DENSE_WORK_MAX = 5e7

#: Relative residual of the conjugate-gradient Newton step (an inexact Newton method:
#: the polish loop repeats the step, so it need not be exact): the first step's and the
#: least; each later step solves to the relative error of the last step's quadratic model,
#: at most :data:`NEWTON_CG_RTOL_MAX` (a forcing term after Eisenstat & Walker 1996: far
#: from the optimum, where the model is poor, an exact solve of it is wasted).
NEWTON_CG_RTOL = 1e-3
NEWTON_CG_RTOL_MAX = 0.1

#: A polish round that gained more than this fraction of the objective is far from the optimum:
#: the next round's first conjugate-gradient solve keeps the forcing term its last step
#: reached instead of starting again at :data:`NEWTON_CG_RTOL` (SCCS L1, 300k eras, 1,000
#: drugs: ten rounds gaining 0.88 ... 0.013 of the objective, each ending on a step that
#: crossed zero, took 681 Hessian-vector products, 449 with it; Cox CV fold fits at N = 1M
#: gain at most 4e-4 in a round, and solve at 1e-3 as before).
POLISH_FAR = 1e-2

#: Halvings of a Newton step that does not increase the objective before polishing stops.
BACKTRACKS = 3

#: Polishes in a row, the active set re-decided between them by one gradient, before a full
#: sweep (:func:`polish_rounds`).
POLISH_ROUNDS = 20

#: A polish ends the cycles (with a KKT check) only when the gain its Newton steps expect
#: next is below ``tol`` times this; one that settles above it (the steps stop at ``tol``)
#: is followed at once by a polish at ``tol`` times this. A sweep would cost more: at
#: N = 1M a conjugate-gradient polish costs a seventh of the sweep it spares.
POLISH_SETTLED = 1e-2

#: Sweeps over the coordinates that violate the KKT conditions, after polishes that no longer
#: gain, before a full sweep (:func:`sweep_violators`) ...
VIOLATOR_SWEEPS = 3
#: ... each after one that reduced the largest violation at least this many times.
VIOLATIONS_FALL = 4.0

#: A warm start opens with a Newton polish, not a full sweep, when the coordinates that would
#: enter its active set are at most 5 and this fraction of it (:func:`opening_entrants`; a CV
#: fold fit at N = 1M with 600 active coefficients and ~50 entrants: 6.7 s opening with a full
#: sweep, 2.0 s with the polish; 0.05 was set while a stalled polish still ended in a sweep) ...
OPENING_ENTRANTS = 0.25
#: ... and its family's full sweep costs at least this many gradients (``Datafit.sweep_passes``:
#: a GLM's sweep, ~5 gradients, settles the active set for less than the opening's Newton steps).
OPENING_SWEEP_PASSES = 10.0
#: A replicate's likely entrants (:func:`likely_entrants`): the coordinates at their centers whose
#: slope at the warm start, in the fit it starts from, is at least this fraction of their L1 rate
#: (Cox, N = 1M, 10-fold CV on a 5-point grid: every fold's opening entrant had at least 0.54; the
#: fold's slopes differ from 0.9 x the full data's by up to 0.01-0.55 of the rate, growing as it falls).
LIKELY_ENTRANT_RATE = 0.5

#: The message of a fit whose L1 rate leaves every penalized coefficient at zero.
AT_GAMMA_MAX = "all penalized coefficients are zero: the L1 rate is at or above gamma_max"


@dataclass
class SolverOptions:
    """Stopping rule and strategy of the solver.

    tol : relative objective change over a full sweep at which the KKT conditions are checked.
    kkt_tol : largest KKT violation of a converged fit, in the units of :func:`kkt_unit` (the
        largest L1 rate; without an L1 prior, standard errors at the point checked): the stated
        accuracy of "converged".
    max_iter : cap on the number of cycles.
    polish_max_active : largest active set polished by Newton steps while cycling (0 =
        never, None = any size); sets above :data:`DENSE_NEWTON_MAX`, or whose Hessian block
        costs more than :data:`DENSE_WORK_MAX` to form, take conjugate-gradient steps, and only
        the others are polished to machine precision before each KKT check (:func:`final_polish`).
        Unbounded by default: plain coordinate descent on a large ill-conditioned active set
        (a propensity model's 5,200 active covariates among 16,000 patients) creeps, one full
        sweep per cycle, where a conjugate-gradient step costs a few (docs/performance.md).
    progress : show a progress bar over cycles.
    """

    tol: float = 1e-10
    kkt_tol: float = 1e-4
    max_iter: int = 1000
    polish_max_active: int | None = None
    progress: bool = False

    @property
    def final_polish_max_active(self) -> int:
        """Largest active set polished to machine precision before a KKT check."""
        return DENSE_NEWTON_MAX if self.polish_max_active is None else min(self.polish_max_active, DENSE_NEWTON_MAX)


#: How a fit ended (``SolverResult.status``, ``FitResult.status``).
CONVERGED, NOT_CONVERGED, DOES_NOT_EXIST = "converged", "not_converged", "estimate_does_not_exist"


def fit_status(converged: bool, diverging: dict) -> str:
    """How a fit ended: its estimate does not exist if some coefficient diverges, else it
    converged or not."""
    if diverging:
        return DOES_NOT_EXIST
    return CONVERGED if converged else NOT_CONVERGED


@dataclass
class SolverResult:
    """How a fit ended. ``diverging`` maps the index of each coefficient whose estimate
    does not exist (the likelihood keeps increasing along it) to its direction, +1 / -1."""

    beta: np.ndarray
    state: FitState
    loglik: float
    objective: float
    converged: bool
    n_iter: int
    message: str
    gamma_max: float | None = None
    diverging: dict = field(default_factory=dict)
    kkt: float = float("nan")  # largest KKT violation at beta, relative (see SolverOptions.kkt_tol)
    grad: np.ndarray | None = None  # the log-likelihood's gradient at beta, where the KKT check that ended it has it

    @property
    def status(self) -> str:
        return fit_status(self.converged, self.diverging)


def fit_ccd(datafit: Datafit, l1: np.ndarray, l2: np.ndarray, beta0: np.ndarray | None = None,
            fixed: np.ndarray | None = None, options: SolverOptions | None = None,
            center: np.ndarray | None = None) -> SolverResult:
    """Maximize the penalized log-likelihood of ``datafit`` by cyclic coordinate descent.

    Parameters
    ----------
    l1, l2 : per-coordinate penalty weights (see :mod:`riskset.solver.prior`).
    beta0 : warm start (the prior's centers by default, zeros without).
    fixed : boolean mask of coordinates held at their ``beta0`` value (profile likelihood).
    center : per-coordinate prior means m_j (location priors; zeros by default).

    A non-finite state ends the fit (``converged=False``, the message says where), and so
    does an objective that, recomputed from scratch, ended below where it started
    (:func:`lost_ground`); a fit whose estimate does not exist
    (:func:`riskset.solver.separation.diverging_coefficients`) ends with
    ``status == "estimate_does_not_exist"`` and names the diverging coefficients.
    """
    opts = options or SolverOptions()
    p = datafit.n_coef
    pen = Penalty(l1, l2, center)
    beta = pen.center.copy() if beta0 is None else np.array(beta0, dtype=np.float64)
    fixed = np.zeros(p, bool) if fixed is None else np.asarray(fixed, bool)
    free = ~fixed
    state = datafit.new_state(beta)
    problem = state_problem(datafit, beta, datafit.diagnose(state, beta), "at the start")
    if problem:
        return _ended(datafit, beta, state, pen, False, problem)

    gamma_max, grad = None, None
    if np.any(pen.l1[free] > 0):
        beta, state, gamma_max, start, grad = _restricted_start(datafit, beta, state, pen, free, opts)
        if start is not None:
            start.gamma_max = gamma_max
            return finish(datafit, start, pen, free)

    start_objective = datafit.loglik(state) - pen.value(beta)
    beta, state, result = _cycles(datafit, beta, state, pen, np.flatnonzero(free), opts, start_objective,
                                  opening=True, grad=grad)
    if np.isnan(result.kkt) and np.isfinite(result.objective):  # stopped before any KKT check
        result.kkt = kkt_violation(datafit, state, beta, pen, free)
    result.beta, result.state, result.gamma_max = beta, state, gamma_max
    return finish(datafit, result, pen, free, start_objective)


def finish(datafit, result: SolverResult, pen: Penalty, free, start_objective: float | None = None) -> SolverResult:
    """The end of a fit: fail it on a non-finite state or, if it converged, on lost ground
    (from ``start_objective``), else test that the estimate exists."""
    problem = state_problem(datafit, result.beta, datafit.diagnose(result.state, result.beta),
                            f"after cycle {result.n_iter}")
    if problem is None and start_objective is not None and result.converged:
        problem = lost_ground(datafit, result.beta, start_objective, pen)
    message, result.diverging = end_of_fit(datafit, result.beta, result.objective, problem, pen, free,
                                           result.converged)
    if message:
        result.converged, result.message = False, message
    return result


def end_of_fit(datafit, beta, objective, problem, pen: Penalty, free, converged) -> tuple[str | None, dict]:
    """(the message that fails the fit, or None; the diverging coefficients) of a fit that
    ended at ``beta`` with ``objective``, state ``problem`` (:func:`state_problem`) and
    ``converged`` as the cycles left it. Single fits and every replicate
    (:mod:`riskset.solver.replicates`) end here."""
    if problem:
        return problem, {}
    if not np.isfinite(objective):  # the cycles that met it have said where; a converged fit has not
        return (f"the fit stopped: the objective became {objective} (a numerical overflow)" if converged
                else None), {}
    diverging = diverging_coefficients(datafit, beta, pen.l1, pen.l2, free)
    return (nonexistence_message(datafit, diverging) if diverging else None), diverging


def lost_ground(datafit, beta, start_objective: float, pen: Penalty) -> str | None:
    """Coordinate descent only climbs: the message of a fit whose penalized log-likelihood,
    recomputed from scratch at ``beta``, ended below ``start_objective`` (its value at the
    start), or None. It happens when the sums a sweep updates in place (risk-set or stratum
    sums of w exp(eta)) lose their precision to cancellation: one row's weight 1e12 times
    the others', or linear predictors spanning many orders of magnitude."""
    end = datafit.loglik(datafit.new_state(beta)) - pen.value(beta)
    if end >= start_objective - 1e-9 * (abs(start_objective) + 1.0):
        return None
    return (f"the fit lost its numerical precision: the penalized log-likelihood fell from {start_objective:.8g} "
            f"at the start to {end:.8g}; case weights or covariate values spanning many orders of magnitude "
            "make the sums cancel: rescale them (e.g. bound the weights' ratio) or put a prior on the coefficients")


def state_problem(datafit, beta, problem: str | None, where: str) -> str | None:
    """The message of a fit that reached non-finite coefficients or a state with ``problem``
    (from ``datafit.diagnose``), naming ``where`` (e.g. the cycle) and the first non-finite
    coefficient; None if all is finite."""
    bad = np.flatnonzero(~np.isfinite(beta))
    if bad.size:
        return (f"the fit stopped {where}: coefficient {datafit.coef_label(int(bad[0]))!r} became "
                f"{beta[bad[0]]} (a numerical overflow; check the covariate's scale or put a prior on it)")
    return f"the fit stopped {where}: {problem}" if problem else None


class CycleControl:
    """The convergence rule of one fit, kept apart from the sweeps so that a batch of
    replicates (:mod:`riskset.solver.replicates`) follows exactly the single-fit rule.

    Full sweeps alternate with active-set sweeps; the fit has converged when a *full*
    sweep changes the objective by less than ``tol`` (relative).
    """

    def __init__(self, objective: float, options: SolverOptions):
        self.objective = objective
        self.tol, self.kkt_tol, self.max_iter = options.tol, options.kkt_tol, options.max_iter
        self.k, self.full, self.after_full, self.change = 0, True, False, np.inf
        self.done, self.converged, self.failed = options.max_iter <= 0, False, False
        self.wants_kkt, self.kkt, self.kkt_failed = False, np.nan, False
        self.grad = None  # the gradient of the KKT check that ended the fit (converged: the last step)
        self.reference = None  # the last exact gradient, for screened KKT checks (riskset.solver.screening)
        self.message = f"reached max_iter = {self.max_iter} cycles" if self.done else ""

    def coords(self, coords, beta, pen: Penalty):
        """The coordinates of the next sweep: all of ``coords``, or their active set (off
        their prior center, or without an L1 term)."""
        if self.full:
            return coords
        return coords[(beta[coords] != pen.center[coords]) | (pen.l1[coords] == 0)]

    def record(self, objective: float) -> None:
        """Account for one sweep that ended at ``objective``."""
        self.k += 1
        if not np.isfinite(objective):
            self._stop_non_finite(objective, f"at cycle {self.k}")
            return
        self.change = abs(objective - self.objective) / (abs(objective) + 1.0)
        self.objective = objective
        self.after_full = self.full
        self.kkt_failed = False
        if self.change < self.tol:
            if self.full:
                self.wants_kkt = True  # the caller computes the KKT violation: :meth:`checked`
                return
            self.full = True  # the active set has converged: check every coordinate
        else:
            self.full = False
        self._cap()

    def swept(self, objective: float, which: str) -> None:
        """Account for a sweep over some coordinates between polishes (``which``: the entrants,
        the violators) that ended at ``objective``; not a cycle, but a non-finite objective ends
        the fit as one does (:meth:`record`)."""
        self.objective = objective
        if not np.isfinite(objective):
            self._stop_non_finite(objective, f"after cycle {self.k}, sweeping {which}")

    def _stop_non_finite(self, objective: float, where: str) -> None:
        """End the fit at a non-finite ``objective``, kept as the fit's (not the last finite one),
        the message saying ``where``."""
        self.objective, self.done, self.change, self.failed = objective, True, np.nan, True
        self.message = f"the fit stopped {where}: the objective became {objective}"

    def checked(self, kkt: float, grad: np.ndarray | None = None) -> None:
        """Account for the KKT violation (relative) after a full sweep that met ``tol``, found
        from the gradient ``grad`` (kept if the fit ends here: nothing moves after; None where
        the check screened it, :func:`riskset.solver.screening.kkt_gradient`)."""
        self.wants_kkt, self.kkt = False, kkt
        if kkt <= self.kkt_tol:
            self.grad = grad
            self.done, self.converged = True, True
            self.message = (f"KKT violation {kkt:.1e} <= kkt_tol {self.kkt_tol:g} (relative objective change "
                            f"{self.change:.1e} < tol {self.tol:g})")
            return
        self.full, self.kkt_failed = True, True  # not optimal yet: full sweeps and a Newton polish go on
        self._cap()

    def _cap(self) -> None:
        if self.k >= self.max_iter:
            self.done = True
            if self.change >= self.tol:
                self.message = (f"reached max_iter = {self.max_iter} cycles; relative objective change "
                                f"{self.change:.2e} >= tol {self.tol:g}")
            else:
                self.message = (f"reached max_iter = {self.max_iter} cycles; KKT violation {self.kkt:.2e} > "
                                f"kkt_tol {self.kkt_tol:g}")

    @property
    def polish_due(self) -> bool:
        """Time for Newton steps on the active set: after a full sweep that did not converge
        (it has just settled the active set), and every :data:`POLISH_EVERY` cycles of slow
        linear progress (correlated coordinates, e.g. an intercept beside uncentred covariates)."""
        return self.kkt_failed or (self.change >= self.tol and (self.after_full or self.k % POLISH_EVERY == 0))

    def polished(self, objective: float, settled: float | None = None) -> None:
        """Account for a polish that ended at ``objective``: a full sweep checks it next, or
        the KKT conditions (:meth:`checked`, computed by the caller) if its Newton steps
        ``settled`` (the relative gain they expect next) below ``tol`` x :data:`POLISH_SETTLED`."""
        self.objective = objective
        self.full = True
        if settled is not None and settled < self.tol * POLISH_SETTLED:
            self.change, self.wants_kkt = settled, True


def _cycles(datafit, beta, state, pen: Penalty, coords, opts, objective=None, opening=False, grad=None):
    """Sweeps over ``coords`` and their active set until :class:`CycleControl` says done
    (``objective``: the penalized log-likelihood at the start, if known), after an opening
    (:func:`opening_entrants`) if ``opening`` (``grad``: the log-likelihood's gradient at the
    start, if known)."""
    radius = np.ones(datafit.n_coef)
    if objective is None:
        objective = datafit.loglik(state) - pen.value(beta)
    ctl = CycleControl(objective, opts)
    free = np.isin(np.arange(datafit.n_coef), coords)
    if opening and datafit.sweep_passes >= OPENING_SWEEP_PASSES and not ctl.done:
        grad = datafit.gradient(state) if grad is None else grad
        enter = opening_entrants(datafit, beta, grad, pen, free, opts.polish_max_active)
        if enter is not None:
            beta, state = polish_rounds(datafit, beta, state, pen, free, opts, ctl, radius, Opening(enter, grad))
    bar = _progress_bar(opts.progress)

    while not ctl.done:
        datafit.sweep(state, ctl.coords(coords, beta, pen), beta, pen.table, radius)
        ctl.record(datafit.loglik(state) - pen.value(beta))
        if ctl.wants_kkt:
            beta, state, _ = kkt_check(datafit, beta, state, pen, free, opts, ctl)
        if ctl.failed:
            problem = state_problem(datafit, beta, datafit.diagnose(state, beta), f"at cycle {ctl.k}")
            ctl.message = problem or ctl.message
        if ctl.polish_due:  # never makes the fit worse
            beta, state = polish_rounds(datafit, beta, state, pen, free, opts, ctl, radius)
        if bar is not None:
            bar.update(1)
            bar.set_postfix_str(f"objective {ctl.objective:.6g}, change {ctl.change:.1e} (tol {ctl.tol:g})")
    if bar is not None:
        bar.close()
    ll = datafit.loglik(state)
    result = SolverResult(beta, state, ll, ctl.objective, ctl.converged, ctl.k, ctl.message, kkt=ctl.kkt,
                          grad=ctl.grad)
    return beta, state, result


def kkt_check(datafit, beta, state, pen: Penalty, free, opts: SolverOptions, ctl: CycleControl):
    """The KKT check of a fit that wants one (:attr:`CycleControl.wants_kkt`): small active
    sets polished to machine precision first, then :meth:`CycleControl.checked` with the
    violation (:func:`kkt_violation`). Returns (beta, state, the gradient)."""
    beta, state, ctl.objective, _ = final_polish(datafit, beta, state, pen, free, opts, ctl.objective)
    grad, exact = screened_gradient(datafit, beta, state, pen, free, ctl)
    ctl.checked(kkt_violation(datafit, state, beta, pen, free, grad), grad if exact else None)
    return beta, state, grad


def screened_gradient(datafit, beta, state, pen: Penalty, free, ctl: CycleControl) -> tuple[np.ndarray, bool]:
    """(the gradient at ``state`` for decisions against the L1 rates, whether it is exact):
    the columns that the fit's last exact gradient clears are not read
    (:func:`riskset.solver.screening.kkt_gradient`); an exact one becomes the reference."""
    grad, exact = kkt_gradient(datafit, state, beta, pen, free, ctl.reference)
    if exact:
        ctl.reference = reference(datafit, state, grad)
    return grad, exact


def polish_rounds(datafit, beta, state, pen: Penalty, free, opts: SolverOptions, ctl: CycleControl, radius,
                  opening=None):
    """Newton polishes of the active set until one settles or a round gains less than ``tol``
    (then the KKT check, as after a full sweep: at N = 1M a Cox sweep costs ~50-80 gradients;
    a CV fold fit with 370 active coefficients whose last round stalled on a step to zero
    took 2.6 s with a sweep that only confirmed it, 0.5 s without; if the check fails, its
    gradient's entrants enter and the rounds go on): between two polishes the active set is
    re-decided from one gradient, not a full sweep (a gradient is one pass over X, a sweep
    one refresh of the risk-set sums per coordinate, at N = 100k four to twenty times a
    polish). Coordinates that a conjugate-gradient step stopped at their centers stay
    there unless their slope beats the L1 rate; those at their centers whose slope does
    (:meth:`~riskset.core.penalty.Penalty.kkt_violations` > 0) enter by one coordinate
    step each (a sweep over them alone, trust regions ``radius``) before the next polish; a
    check that fails with none to enter after a round that no longer gains hands over to
    :func:`sweep_violators`. ``opening``: the :class:`Opening` of a warm start: its entrants
    join the first Newton step instead, on the side their slopes point to (a Cox coordinate
    step refreshes the risk-set sums: tens of entrants cost several gradients as a sweep,
    next to nothing in a conjugate-gradient step; its projection returns to the center those
    that step back, and they enter later as any other).
    At most :data:`POLISH_ROUNDS` rounds. Returns (beta, state)."""
    joining, rtol = None, NEWTON_CG_RTOL
    if opening is not None:
        if opening.exact:
            ctl.reference = reference(datafit, state, opening.grad)
        if opening.entrants.size:
            joining = opening.entrants, np.sign(opening.grad[opening.entrants])
    for _ in range(POLISH_ROUNDS):
        start, grad = ctl.objective, None
        for tol in (opts.tol, opts.tol * POLISH_SETTLED):  # the second after one that settled above
            beta, state, objective, settled, forcing = polish(datafit, beta, state, pen, free,
                                                              opts.polish_max_active, tol, objective=ctl.objective,
                                                              joining=joining, rtol=rtol)
            joining, rtol = None, NEWTON_CG_RTOL
            ctl.polished(objective, settled)
            if ctl.wants_kkt:
                beta, state, grad = kkt_check(datafit, beta, state, pen, free, opts, ctl)
                break
            if settled is None:
                break
        gained = (ctl.objective - start) / (abs(ctl.objective) + 1.0)
        if gained > POLISH_FAR:
            rtol = forcing  # far from the optimum: the next solve as loose as the last step's model warrants
        if ctl.done or (grad is None and settled is not None):
            return beta, state  # converged; or the polish settled above tol: a full sweep decides
        if grad is None and not gained > opts.tol:  # stalled (its steps crossed zero): checked as a
            ctl.change = max(gained, 0.0)             # sweep that changed the objective less than tol
            beta, state, grad = kkt_check(datafit, beta, state, pen, free, opts, ctl)
            if ctl.done:
                return beta, state
        if grad is None:  # screened: the entrants and the violators are decided against the rates
            grad, _ = screened_gradient(datafit, beta, state, pen, free, ctl)
        enter = entrants(beta, grad, pen, free)
        if enter.size:
            datafit.sweep(state, enter, beta, pen.table, radius)
            ctl.swept(datafit.loglik(state) - pen.value(beta), "the entrants")
            if ctl.done:
                return beta, state
        elif not gained > opts.tol:  # the KKT check failed on the active set and the polish no longer gains
            if polish_set(datafit, beta, pen, free, opts.polish_max_active) is None:
                return beta, state  # nothing polished (polishing off): the sweeps of plain CCD go on
            return sweep_violators(datafit, beta, state, grad, pen, free, opts, ctl, radius)
    return beta, state


def sweep_violators(datafit, beta, state, grad, pen: Penalty, free, opts: SolverOptions, ctl: CycleControl, radius):
    """After a KKT check that failed (its gradient ``grad``) where Newton polishes no longer gain:
    sweeps over the coordinates that violate the conditions (:func:`violators`), each followed by
    the check, while the violation falls at least :data:`VIOLATIONS_FALL`-fold, at most
    :data:`VIOLATOR_SWEEPS` times. A full sweep (what the cycles do next if the fit has not
    converged) moves every active coordinate and screens the resting ones; a sweep over the
    violators alone moves only those the polish left off their optimum, a fraction of a full
    sweep's cost (docs/performance.md).
    Returns (beta, state)."""
    for _ in range(VIOLATOR_SWEEPS):
        fix = violators(datafit, beta, state, grad, pen, free, opts.kkt_tol)
        if not fix.size:
            break
        before = ctl.kkt
        datafit.sweep(state, fix, beta, pen.table, radius)
        ctl.swept(datafit.loglik(state) - pen.value(beta), "the coordinates violating the KKT conditions")
        if ctl.done:
            break
        beta, state, grad = kkt_check(datafit, beta, state, pen, free, opts, ctl)
        if ctl.done or not ctl.kkt * VIOLATIONS_FALL <= before:
            break
    return beta, state


def warm_start(beta, pen: Penalty, free) -> bool:
    """Whether a fit starts with some free coefficient off its prior center (a warm start)."""
    return bool(np.any(free & ~pen.at_center(beta)))


def cold_start(beta, pen: Penalty, free) -> bool:
    """Whether every free L1-penalized coefficient is at its prior center (a fit from the
    centers; the unpenalized ones may have been fitted by the restricted start)."""
    return not np.any(free & (pen.l1 > 0) & ~pen.at_center(beta))


def entrants(beta, grad, pen: Penalty, free) -> np.ndarray:
    """The free coordinates at their centers whose slope ``grad`` beats their L1 rate: those a
    coordinate step would move off the center."""
    return np.flatnonzero(free & pen.at_center(beta) & (np.abs(grad) > pen.l1))


def violators(datafit, beta, state, grad, pen: Penalty, free, kkt_tol) -> np.ndarray:
    """The free coordinates whose KKT violation at ``beta`` (``state``, the log-likelihood's
    gradient ``grad``) exceeds ``kkt_tol`` in the units of :func:`kkt_unit`."""
    unit = kkt_unit(datafit, pen, free, state)
    return np.flatnonzero(free & (pen.kkt_violations(beta, grad) / unit > kkt_tol))


@dataclass
class Opening:
    """The opening of a fit (:func:`opening_entrants`): its entrants and the gradient
    that found them, exact or read at the replicate's likely entrants alone
    (:func:`likely_entrants`; then no reference for screened checks, zero elsewhere)."""

    entrants: np.ndarray
    grad: np.ndarray
    exact: bool = True


def likely_entrants(beta, grad, pen: Penalty) -> np.ndarray:
    """The coordinates that may enter the active set of a replicate warm-started at ``beta``,
    the end of a fit whose gradient there is ``grad`` (a cross-validation fold started from the
    full-data fit): at their centers, with an L1 term, and a slope of at least
    :data:`LIKELY_ENTRANT_RATE` of their rate. A replicate's opening reads its slopes there
    alone (Cox at N = 1M: ~10-200 columns of 1,000, a fifth of the cost of a gradient or less);
    an entrant outside them enters at the first exact gradient, after the opening's polish."""
    return pen.at_center(beta) & (pen.l1 > 0) & (np.abs(grad) >= LIKELY_ENTRANT_RATE * pen.l1)


def opening_entrants(datafit, beta, grad, pen: Penalty, free, max_active) -> np.ndarray | None:
    """The opening of a warm start whose active set is nearly right (a cross-validation fold
    or a bootstrap draw started from the full-data fit at the same prior, the next point of a
    fine path): where the log-likelihood's gradient ``grad`` shows that at most 5 +
    :data:`OPENING_ENTRANTS` x |A| coordinates would enter the active set A, those that enter
    (each at its center with a slope beyond its L1 rate; possibly none). The fit then
    polishes (:func:`polish_rounds`, whose first Newton step they join) before any full sweep:
    a gradient and a polish cost less than one sweep of a risk-set family (Cox at N = 1M, P = 1000: a
    gradient 0.07 s, a sweep 0.3-1.2 s; CV fold fits 1.3-2.0 -> 0.5-1.4 s).

    A cold start (every L1-penalized coefficient at its center: a fit from the centers, after
    the restricted start) opens alike with all its entrants, where they and the unpenalized
    coefficients fit a polish (at most ``max_active``): the first sweep let them in one
    coordinate step each, each refreshing the risk-set sums (Cox, N = 100k, P = 1000, variance
    1e-5 and 43k strata: 83 entrants, a 0.3 s sweep; Cox, Fine-Gray and stratified fits at
    variances 1 and 1e-5 took 20-45% less time, at the same optimum).

    None where the opening does not apply (too many entrants, none at a cold start, or an
    active set too large to polish or singular by count, :func:`polish_set`): the fit opens
    with a full sweep."""
    enter = entrants(beta, grad, pen, free & (pen.l1 > 0))
    if cold_start(beta, pen, free):
        block = np.union1d(enter, np.flatnonzero(free & (pen.l1 == 0)))
        fits = 0 < enter.size and within(block.size, max_active) and not singular_by_rank(datafit, block, pen)
        return enter if fits else None
    active = polish_set(datafit, beta, pen, free, max_active)
    if active is None:
        return None
    return enter if enter.size <= 5 + OPENING_ENTRANTS * active.size else None


def kkt_unit(datafit, pen: Penalty, free, state=None, beta=None) -> np.ndarray:
    """Per coefficient, the unit of its KKT violation at ``state`` (a new state at ``beta`` if
    not given; only the information needs one). With an L1 prior, the largest L1 rate (a
    violation is a fraction of the penalty rate). Without, the square root of the
    coefficient's information there, sqrt(I_jj + l2_j): a violation is then a score
    statistic, how many standard errors the coordinate is from its optimum, the others held.
    With an L1 prior, a coefficient without an L1 term takes the smaller of the two.

    The information is that of the point checked, not of the start: the slope of a
    coefficient whose estimate does not exist (e.g. an intercept with no event) vanishes as
    it diverges, but its information vanishes as fast, so the score stays large until the
    coefficient is far out (|eta| of order 20), where the existence test sees the divergence;
    measured against the information at the start it passed near -14. A coefficient with no
    information keeps the unit of the others (1 without an L1 prior)."""
    lasso = bool(np.any(pen.l1[free] > 0))
    rate = float(np.max(pen.l1[free])) if lasso else 1.0
    unit = np.full(pen.l1.shape, rate)
    columns = informed_units(pen, free)
    if columns.size:
        state = datafit.new_state(beta) if state is None else state
        info = np.sqrt(np.maximum(datafit.information_scale(state, columns), 0.0) + pen.l2[columns])
        known = np.isfinite(info) & (info > 0)
        unit[columns[known]] = np.minimum(info[known], rate) if lasso else info[known]
    return unit


def informed_units(pen: Penalty, free) -> np.ndarray:
    """The free coefficients whose KKT unit (:func:`kkt_unit`) reads their information, so
    needs a state: all of them without an L1 prior, those without an L1 term with one."""
    return np.flatnonzero(free & (pen.l1 == 0)) if np.any(pen.l1[free] > 0) else np.flatnonzero(free)


def kkt_violation(datafit, state, beta, pen: Penalty, free, grad=None) -> float:
    """The largest KKT violation of the ``free`` coefficients at ``beta`` (``state``), in the
    units of :func:`kkt_unit` there; ``grad``: the log-likelihood's gradient there, if known."""
    grad = datafit.gradient(state) if grad is None else grad
    return pen.kkt_violation(beta, grad, kkt_unit(datafit, pen, free, state), free)


def _restricted_start(datafit, beta, state, pen: Penalty, free, opts):
    """Fit the unpenalized free coordinates with the L1-penalized ones at their centers;
    test if the centers are optimal.

    Returns (beta, state, gamma_max, result, grad): ``gamma_max`` is the smallest common L1
    rate at which every L1-penalized coordinate stays at its center; ``result`` is the
    fit's end if the restricted fit is the answer (centers optimal) or failed (a non-finite
    state), else None; ``grad`` the log-likelihood's gradient at ``beta`` (None where not computed).
    """
    l1 = pen.l1
    penalized = free & (l1 > 0)
    if np.any(~pen.at_center(beta)[penalized]):  # warm start off the centers: nothing to test cheaply
        return beta, state, None, None, None
    unpen = np.flatnonzero(free & (l1 == 0))
    grad = None
    if unpen.size:
        # e.g. a GLM's intercept alone: the mean outcome
        closed_form = datafit.unpenalized_start(beta, unpen) if isinstance(datafit, ClosedFormStart) else None
        if closed_form is not None:
            beta, state = closed_form, datafit.new_state(closed_form)
        beta, state, start = _cycles(datafit, beta, state, pen, unpen, opts)
        if not np.isfinite(start.objective):
            return beta, state, None, start, None
        grad = start.grad  # where the KKT check that ended the restricted cycles computed it
    if grad is None:
        grad = datafit.gradient(state)
    if not np.all(np.isfinite(grad)):
        j = int(np.flatnonzero(~np.isfinite(grad))[0])
        message = (f"the fit stopped after the restricted start: the gradient of {datafit.coef_label(j)!r} "
                   f"is {grad[j]}")
        return beta, state, None, _ended(datafit, beta, state, pen, False, message), None
    gamma_max, done = zero_test(grad, l1, penalized)
    if not done:
        return beta, state, gamma_max, None, grad
    result = _ended(datafit, beta, state, pen, True, AT_GAMMA_MAX)
    result.kkt = kkt_violation(datafit, state, beta, pen, free, grad)
    return beta, state, gamma_max, result, grad


def _ended(datafit, beta, state, pen: Penalty, converged, message) -> SolverResult:
    ll = datafit.loglik(state)
    return SolverResult(beta, state, ll, ll - pen.value(beta), converged, 0, message)


def zero_test(grad, l1, penalized):
    """(gamma_max, whether the center is optimal for every ``penalized`` coordinate) at a
    state with those coordinates at their centers (where the L2 term has no slope):
    gamma_max is the smallest common L1 rate (scaling the relative weights ``l1``) at which
    they all stay there."""
    g, pen = np.abs(grad[penalized]), l1[penalized]
    gamma_max = float(np.max(g / (pen / pen.max()))) if g.size else 0.0
    return gamma_max, bool(np.all(g <= pen))


def polish(datafit, beta, state, pen: Penalty, free, max_active, tol=0.0, max_steps=25, objective=None,
           joining=None, rtol=NEWTON_CG_RTOL):
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
    :func:`polish_rounds` computes next re-decides the active set for one product, where more
    steps spent tens on coordinates that then came back (at N = 1M even a few crossings cost
    a whole cycle).
    ``objective``: the penalized log-likelihood at ``state``, where the caller has it.
    ``joining``: (coordinates at their centers, the side each enters on) that join the first
    step (a warm start's opening, :func:`polish_rounds`); the projection returns those that
    step to the other side.
    """
    if objective is None:
        objective = datafit.loglik(state) - pen.value(beta)
    active = polish_set(datafit, beta, pen, free, max_active)
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
        found = newton_step(datafit, state, beta, active, pen, rtol, side)
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
        conjugate_gradients = not dense_newton(datafit, active)
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
        active, side = polish_set(datafit, beta, pen, free, max_active), None  # crossing coordinates have left it
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


def newton_step(datafit, state, beta, active, pen: Penalty, rtol: float, side):
    """The Newton step s on the active set A (signs of the L1 terms held) and the gain its
    quadratic model predicts, g's / 2, or None:
    ``(diag(l2) - H_AA) s = g_A - l2 (beta_A - m_A) - l1 side``, the sides ``side`` those of the
    centers, sign(beta_A - m_A), or for a coordinate entering at its center the side it enters on.

    Where :func:`dense_newton` holds, the block H_AA is formed and solved; elsewhere,
    conjugate gradients on the datafit's Hessian-vector products
    (:meth:`~riskset.core.interface.Datafit.local_quadratic`: O(nnz_A) each, never the
    |A|^2 block), preconditioned by its diagonal scale (centred on an intercept where the
    datafit names one: :func:`preconditioner`), to the relative residual ``rtol`` or for at most
    :data:`CG_MAX_ITER` iterations (a truncated step).
    """
    sub = pen[active]
    qa, prior_slope = sub.l2, sub.gradient(beta[active], side)
    if dense_newton(datafit, active):
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
    predicted = 0.5 * float(grad @ step)
    # info > 0: the iterations ran out. The iterate minimizes the quadratic model over the Krylov
    # space it spans, so it is still an ascent step (a truncated Newton step; Nocedal & Wright,
    # Numerical Optimization, 2nd ed., sec. 7.1), and the line search of :func:`polish` takes it.
    return (step, predicted) if predicted > 0 else None


#: Most conjugate-gradient iterations of one Newton step. Identified fits converge in a few
#: (Cox, logistic, Fine-Gray at N = 100k, |A| ~ 1000: at most 8); an ill-conditioned block (more
#: active covariates than events) takes hundreds, and each iteration costs O(nnz_A): the step
#: is truncated at this count.
CG_MAX_ITER = 200

#: Eigenvalues of a Newton block, scaled to unit diagonal, at most this are numerically zero:
#: rounding leaves identical columns eigenvalues of +-1e-16; a nearly collinear pair that is
#: still identified (x2 = x1 + 1e-7 z) has 2e-15.
NULL_CURVATURE = 4 * np.finfo(float).eps

#: Relative objective gain below which a step along numerically null directions buys nothing.
NULL_GAIN = 1e-12


def block_step(datafit, beta, active, pen: Penalty, A: np.ndarray, grad: np.ndarray) -> np.ndarray | None:
    """The Newton step A^-1 g on the formed block A (positive semi-definite), or None. Where A is
    numerically singular (two identical columns), a plain solve moves the coefficients
    arbitrarily far along the null direction (1e12 and -1e12) at an unchanged likelihood; the
    step then leaves those directions out (:func:`null_free_solve`) unless moving along them
    raises the objective by more than rounding (a nearly collinear pair that is identified,
    whose information lies below double precision: its estimate is settled by the likelihood)."""
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
    covariates are uncoupled. Logistic, N = 1M, P = 20k, 160-2900 active coefficients: 7-10
    conjugate-gradient iterations per Newton step with Jacobi, 2-3 with the centring."""
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


def dense_newton(datafit, active) -> bool:
    """Whether the Newton step on ``active`` solves the formed Hessian block: at most
    :data:`DENSE_NEWTON_MAX` coordinates whose block costs at most :data:`DENSE_WORK_MAX`."""
    return active.size <= DENSE_NEWTON_MAX and datafit.hessian_work(active) <= DENSE_WORK_MAX


def final_polish(datafit, beta, state, pen: Penalty, free, opts: SolverOptions, objective=None):
    """:func:`polish` to machine precision before a KKT check, of an active set of at most
    ``opts.final_polish_max_active`` whose Newton steps solve the formed block
    (:func:`dense_newton`; conjugate-gradient steps to machine precision would cost more than
    the check). Returns (beta, state, objective, settled) as :func:`polish`."""
    if final_polish_set(datafit, beta, pen, free, opts) is None:
        objective = datafit.loglik(state) - pen.value(beta) if objective is None else objective
        return beta, state, objective, None
    return polish(datafit, beta, state, pen, free, opts.final_polish_max_active, objective=objective)[:4]


def final_polish_set(datafit, beta, pen: Penalty, free, opts: SolverOptions):
    """The coordinates :func:`final_polish` would move, or None if it leaves the fit as it is."""
    active = polish_set(datafit, beta, pen, free, opts.final_polish_max_active)
    return active if active is not None and dense_newton(datafit, active) else None


def polish_set(datafit, beta, pen: Penalty, free, max_active):
    """The coordinates :func:`polish` would move (:func:`active_set`), or None if there are none,
    more than ``max_active`` (None: no bound), or, where the Newton step would take conjugate
    gradients (:func:`dense_newton`), more of them without a quadratic penalty than the rank of
    the datafit's Hessian (:attr:`~riskset.core.interface.Datafit.hessian_rank`): the block is
    then singular and conjugate gradients run to :data:`CG_MAX_ITER` for nothing (a Cox model
    stratified by matched pairs with more active coordinates than events, each polish of a
    cross-validation fold; a formed block is solved without its null directions instead)."""
    active = active_set(beta, pen, free)
    if not active.size or not within(active.size, max_active):
        return None
    return None if singular_by_rank(datafit, active, pen) else active


def singular_by_rank(datafit, columns, pen: Penalty) -> bool:
    """Whether the Newton block of ``columns`` is singular by count alone and would be solved by
    conjugate gradients (:func:`polish_set`)."""
    return np.count_nonzero(pen.l2[columns] == 0) > datafit.hessian_rank and not dense_newton(datafit, columns)


def active_set(beta, pen: Penalty, free) -> np.ndarray:
    """The free coordinates off their center or without an L1 term."""
    return np.flatnonzero(free & (~pen.at_center(beta) | (pen.l1 == 0)))


def within(size: int, max_active: int | None) -> bool:
    """Whether ``size`` coordinates are few enough to polish (``max_active`` None: any number)."""
    return max_active is None or size <= max_active


def _progress_bar(show):
    """A bar counting cycles, with no total: how many cycles a fit needs is not known
    (``max_iter`` is only a cap, and as a total it made a 3-cycle fit forecast minutes);
    its postfix shows the objective's relative change against ``tol``."""
    if not show:
        return None
    from tqdm.auto import tqdm

    return tqdm(total=None, desc="CCD cycles", unit="cycle", leave=False)
