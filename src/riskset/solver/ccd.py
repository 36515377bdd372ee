"""Cyclic coordinate descent (CCD) for penalized log-likelihoods.

The solver maximizes ``l(beta) - sum_j (l1_j |beta_j - m_j| + l2_j (beta_j - m_j)^2 / 2)``
(:class:`~riskset.core.penalty.Penalty`; m_j is the prior's center, usually 0) over a
:class:`~riskset.core.interface.Datafit`, touching the data only through the datafit's
``coordinate`` (scalar gradient and Hessian) and ``move`` (sparse update of the
linear predictor) methods. A fit is a :class:`Solver`: the datafit, the penalty, the
coefficients and the datafit's state, the free coordinates, the options and the cycle
control (:class:`~riskset.solver.control.CycleControl`). Its phases, in order:

1. restricted start (:func:`restricted_start`): with an L1 prior, fit the unpenalized
   coordinates alone; if zero is optimal for every penalized coordinate (the prior rate is
   at or above ``gamma_max``), that is the answer (Cyclops fails there).
2. open (:meth:`Solver.open`): in a family whose sweeps are costly, a warm start near its
   optimum, or a start from the centers whose entrants fit a polish, opens with a gradient
   and a polish instead of a full sweep (:func:`~riskset.solver.entrants.opening_entrants`).
3. cycle (:meth:`Solver.cycle`): one sweep, one Newton step per coordinate, bounded by a
   per-coordinate trust region (Genkin, Lewis & Madigan 2007: half-width starts at 1, then
   becomes max(2|step|, half-width/2)); at the L1 kink the step uses the one-sided
   directional derivatives and never crosses it (:mod:`riskset.core.step`). Between full
   sweeps, cycles run over the active set only (coordinates off their prior center, or
   unpenalized), as glmnet does; a sweep is one compiled call (``Datafit.sweep``,
   :mod:`riskset.core.sweep`).
4. check_kkt (:meth:`Solver.check_kkt`): the optimality (Karush-Kuhn-Tucker) conditions
   hold: after a *full* sweep whose relative change of the objective
   ``|f_k - f_{k-1}| / (|f_k| + 1)`` is below ``tol``, or a polish whose Newton steps settled
   (the gain of the next one is expected below ``tol`` x
   :data:`~riskset.solver.control.POLISH_SETTLED`), small active sets are refined to machine
   precision (:meth:`Solver.refine`), the gradient is computed (screened:
   :mod:`riskset.solver.screening`) and the largest distance from 0 to the subdifferential
   of the objective, in the units of :func:`~riskset.solver.kkt.kkt_unit`, must be at most
   ``kkt_tol``; if not, full sweeps and polishes go on. The achieved violation is reported
   (``SolverResult.kkt``). A gradient costs one pass over X, a sweep one refresh of the
   risk-set sums per coordinate: a polish that settled is checked, not swept again.
5. polish (:meth:`Solver.polish`): rounds of Newton steps on the active set, projected on its
   orthant (:mod:`riskset.solver.newton`), after each full sweep that did not converge (it
   has just settled the active set) and every few cycles of slow linear progress; between
   rounds the active set is re-decided by one gradient instead of a full sweep, its entrants
   entering by one coordinate step each. Where the rounds no longer gain and the KKT check
   fails, sweeps over the violating coordinates alone (:meth:`Solver.sweep_violators`). This
   replaces the long tail of active-set sweeps: typically one full sweep and a few polishes
   end a fit.
6. finish (:func:`finish`, also per replicate: :func:`~riskset.solver.ending.verdict`): a
   non-finite state (checked with the objective after every sweep and by
   ``Datafit.diagnose`` at the end) stops the fit with a message naming where; otherwise the
   test that the estimate exists (:mod:`riskset.solver.separation`), which gives the status
   ``estimate_does_not_exist``.

The replicate batch (:mod:`riskset.solver.replicates`) runs the same rules: it batches the
sweeps and gradients, and drives a :class:`Solver` on each replicate's view for its
opening's polish, its polishes and its refinements.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from riskset.core.interface import ClosedFormStart, Datafit, FitState
from riskset.core.penalty import Penalty
from riskset.solver.control import POLISH_SETTLED, CycleControl
from riskset.solver.ending import state_problem, verdict
from riskset.solver.entrants import OPENING_SWEEP_PASSES, Opening, entrants, opening_entrants
from riskset.solver.kkt import kkt_violation, violators
from riskset.solver.newton import (NEWTON_CG_RTOL, BlockConditioning, active_set, newton_coordinates, newton_steps,
                                   polishable, refine_coordinates, refine_max_active)
from riskset.solver.screening import kkt_gradient, reference

#: A polish round that gained more than this fraction of the objective is far from the optimum:
#: the next round's first conjugate-gradient solve keeps the forcing term its last step
#: reached instead of starting again at :data:`~riskset.solver.newton.NEWTON_CG_RTOL`.
POLISH_FAR = 1e-2

#: Polish rounds in a row, the active set re-decided between them by one gradient, before a
#: full sweep (:meth:`Solver.polish`).
POLISH_ROUNDS = 20

#: Sweeps over the coordinates that violate the KKT conditions, after polishes that no longer
#: gain, before a full sweep (:meth:`Solver.sweep_violators`) ...
VIOLATOR_SWEEPS = 3
#: ... each after one that reduced the largest violation at least this many times.
VIOLATIONS_FALL = 4.0

#: Entrants join the next Newton round of a polish, in a family whose sweeps are costly, where a
#: sweep over them would cost at least this many gradients (:meth:`Solver.newton_enters`): a
#: few entrants cost less in a sweep than the Newton step that joining them may add.
JOINING_GRADIENTS = 1.0

#: The message of a fit whose L1 rate leaves every penalized coefficient at zero.
AT_GAMMA_MAX = "all penalized coefficients are zero: the L1 rate is at or above gamma_max"


@dataclass
class SolverOptions:
    """Stopping rule and strategy of the solver.

    tol : relative objective change over a full sweep at which the KKT conditions are checked.
    kkt_tol : largest KKT violation of a converged fit, in the units of
        :func:`~riskset.solver.kkt.kkt_unit` (the largest L1 rate; without an L1 prior,
        standard errors at the point checked): the stated accuracy of "converged".
    max_iter : cap on the number of cycles.
    polish_max_active : largest active set polished by Newton steps while cycling (0 =
        never, None = any size); sets above :data:`~riskset.solver.newton.DENSE_NEWTON_MAX`,
        or whose Hessian block costs more than :data:`~riskset.solver.newton.DENSE_WORK_MAX`
        to form, take conjugate-gradient steps, and only the others are refined to machine
        precision before each KKT check (:meth:`Solver.refine`). Unbounded by default: plain
        coordinate descent on a large ill-conditioned active set creeps, one full sweep per
        cycle, where a conjugate-gradient step costs a few (docs/performance.md).
    progress : show a progress bar over cycles.
    """

    tol: float = 1e-10
    kkt_tol: float = 1e-4
    max_iter: int = 1000
    polish_max_active: int | None = None
    progress: bool = False


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
    (:func:`~riskset.solver.ending.lost_ground`); a fit whose estimate does not exist
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
        return ended_at_start(datafit, beta, state, pen, False, problem)

    gamma_max, grad = None, None
    if np.any(pen.l1[free] > 0):
        start = restricted_start(datafit, beta, state, pen, free, opts)
        beta, state, gamma_max, grad = start.beta, start.state, start.gamma_max, start.grad
        if start.ended is not None:
            start.ended.gamma_max = gamma_max
            return finish(datafit, start.ended, pen, free)

    start_objective = datafit.loglik(state) - pen.value(beta)
    result = Solver(datafit, beta, state, pen, free, opts, objective=start_objective).run(opening=True, grad=grad)
    if np.isnan(result.kkt) and np.isfinite(result.objective):  # stopped before any KKT check
        result.kkt = kkt_violation(datafit, result.state, result.beta, pen, free)
    result.gamma_max = gamma_max
    return finish(datafit, result, pen, free, start_objective)


@dataclass
class RestrictedStart:
    """Where the restricted start left a fit: its coefficients and state; ``gamma_max``, the
    smallest common L1 rate at which every L1-penalized coordinate stays at its center (None
    where not tested); ``ended``, the fit's end where the restricted fit is the answer (centers
    optimal) or failed (a non-finite state), else None; ``grad``, the log-likelihood's gradient
    at ``beta`` (None where not computed)."""

    beta: np.ndarray
    state: FitState
    gamma_max: float | None = None
    ended: SolverResult | None = None
    grad: np.ndarray | None = None


def restricted_start(datafit, beta, state, pen: Penalty, free, opts: SolverOptions) -> RestrictedStart:
    """Fit the unpenalized free coordinates with the L1-penalized ones at their centers;
    test if the centers are optimal (:func:`zero_test`)."""
    l1 = pen.l1
    penalized = free & (l1 > 0)
    if np.any(~pen.at_center(beta)[penalized]):  # warm start off the centers: nothing to test cheaply
        return RestrictedStart(beta, state)
    unpenalized = free & (l1 == 0)
    grad = None
    if unpenalized.any():
        # e.g. a GLM's intercept alone: the mean outcome
        closed_form = (datafit.unpenalized_start(beta, np.flatnonzero(unpenalized))
                       if isinstance(datafit, ClosedFormStart) else None)
        if closed_form is not None:
            beta, state = closed_form, datafit.new_state(closed_form)
        start = Solver(datafit, beta, state, pen, unpenalized, opts).run()
        beta, state = start.beta, start.state
        if not np.isfinite(start.objective):
            return RestrictedStart(beta, state, ended=start)
        grad = start.grad  # where the KKT check that ended the restricted cycles computed it
    if grad is None:
        grad = datafit.gradient(state)
    if not np.all(np.isfinite(grad)):
        j = int(np.flatnonzero(~np.isfinite(grad))[0])
        message = (f"the fit stopped after the restricted start: the gradient of {datafit.coef_label(j)!r} "
                   f"is {grad[j]}")
        return RestrictedStart(beta, state, ended=ended_at_start(datafit, beta, state, pen, False, message))
    gamma_max, done = zero_test(grad, l1, penalized)
    if not done:
        return RestrictedStart(beta, state, gamma_max, grad=grad)
    result = ended_at_start(datafit, beta, state, pen, True, AT_GAMMA_MAX)
    result.kkt = kkt_violation(datafit, state, beta, pen, free, grad)
    return RestrictedStart(beta, state, gamma_max, result, grad)


def zero_test(grad, l1, penalized):
    """(gamma_max, whether the center is optimal for every ``penalized`` coordinate) at a
    state with those coordinates at their centers (where the L2 term has no slope):
    gamma_max is the smallest common L1 rate (scaling the relative weights ``l1``) at which
    they all stay there."""
    g, pen = np.abs(grad[penalized]), l1[penalized]
    gamma_max = float(np.max(g / (pen / pen.max()))) if g.size else 0.0
    return gamma_max, bool(np.all(g <= pen))



def finish(datafit, result: SolverResult, pen: Penalty, free, start_objective: float | None = None) -> SolverResult:
    """The end of a fit (:func:`~riskset.solver.ending.verdict`): fail it on a non-finite state
    or, if it converged, on lost ground (from ``start_objective``), else test that the estimate
    exists."""
    message, result.diverging = verdict(datafit, result.beta, result.objective,
                                        datafit.diagnose(result.state, result.beta), f"after cycle {result.n_iter}",
                                        pen, free, result.converged, start_objective)
    if message:
        result.converged, result.message = False, message
    return result


def ended_at_start(datafit, beta, state, pen: Penalty, converged: bool, message: str) -> SolverResult:
    """The result of a fit that ended before its cycles (at its start or its restricted start)."""
    ll = datafit.loglik(state)
    return SolverResult(beta, state, ll, ll - pen.value(beta), converged, 0, message)


class Solver:
    """One fit in progress: the datafit and its state at the coefficients ``beta``, the penalty,
    the ``free`` coordinates (a mask), the options, the cycle control and the coordinates'
    trust regions. Its methods are the phases of the algorithm (module docstring); each moves
    ``beta`` and ``state`` and accounts for what it did in :attr:`control`.

    A replicate of a batch (:mod:`riskset.solver.replicates`) hands in its own ``control`` and
    ``radius`` (kept across the batch's cycles) and takes ``beta`` and ``state`` back after
    each phase; a new fit starts them at ``objective`` (the penalized log-likelihood at
    ``state``, computed if not given) and 1.
    """

    def __init__(self, datafit, beta, state, pen: Penalty, free, opts: SolverOptions, objective: float | None = None,
                 control: CycleControl | None = None, radius: np.ndarray | None = None):
        self.datafit, self.beta, self.state, self.pen, self.free, self.opts = datafit, beta, state, pen, free, opts
        self.coords = np.flatnonzero(free)
        self.conditioning = BlockConditioning()  # what the polish's Newton steps learned of the blocks
        self.radius = np.ones(datafit.n_coef) if radius is None else radius
        if control is None:
            control = CycleControl(self.penalized_loglik() if objective is None else objective, opts)
        self.control = control

    def penalized_loglik(self) -> float:
        """The objective at the current state."""
        return self.datafit.loglik(self.state) - self.pen.value(self.beta)

    def run(self, opening: bool = False, grad: np.ndarray | None = None) -> SolverResult:
        """Cycles until the control says done, after the opening if ``opening`` (``grad``: the
        log-likelihood's gradient at the start, if known); polishes and KKT checks as due."""
        ctl = self.control
        if opening:
            self.open(grad)
        bar = _progress_bar(self.opts.progress)
        while not ctl.done:
            self.cycle()
            if ctl.kkt_due:
                self.check_kkt()
            if ctl.failed:
                problem = state_problem(self.datafit, self.beta, self.datafit.diagnose(self.state, self.beta),
                                        f"at cycle {ctl.k}")
                ctl.message = problem or ctl.message
            if ctl.polish_due:  # never makes the fit worse
                self.polish()
            if bar is not None:
                bar.update(1)
                bar.set_postfix_str(f"objective {ctl.objective:.6g}, change {ctl.change:.1e} (tol {ctl.tol:g})")
        if bar is not None:
            bar.close()
        ll = self.datafit.loglik(self.state)
        return SolverResult(self.beta, self.state, ll, ctl.objective, ctl.converged, ctl.k, ctl.message, kkt=ctl.kkt,
                            grad=ctl.grad)

    @property
    def costly_sweeps(self) -> bool:
        """Whether a full sweep of the family costs at least
        :data:`~riskset.solver.entrants.OPENING_SWEEP_PASSES` gradients (risk-set and stratum
        sums refreshed per moved coordinate): polishes then stand in for sweeps wherever they can
        (:meth:`open`, :meth:`polish`)."""
        return self.datafit.sweep_passes >= OPENING_SWEEP_PASSES

    def newton_enters(self, enter: np.ndarray) -> bool:
        """Whether the entrants ``enter`` join the next Newton round rather than a sweep over
        them: where sweeps are costly (:attr:`costly_sweeps`), a sweep over them would cost at
        least :data:`JOINING_GRADIENTS` gradients, and the active set with them is still
        polished (at most ``polish_max_active``, not singular by count)."""
        if not self.costly_sweeps or enter.size * self.datafit.sweep_passes < JOINING_GRADIENTS * self.datafit.n_coef:
            return False
        block = np.union1d(active_set(self.beta, self.pen, self.free), enter)
        return polishable(self.datafit, block, self.pen, self.opts.polish_max_active)

    def open(self, grad: np.ndarray | None = None) -> None:
        """The opening, in a family whose full sweep costs at least
        :data:`~riskset.solver.entrants.OPENING_SWEEP_PASSES` gradients: where the gradient
        (``grad``, computed if not given) shows few entrants (:func:`opening_entrants`), a
        polish that they join, in place of the first full sweep."""
        if not self.costly_sweeps or self.control.done:
            return
        grad = self.datafit.gradient(self.state) if grad is None else grad
        enter = opening_entrants(self.datafit, self.beta, grad, self.pen, self.free, self.opts.polish_max_active)
        if enter is not None:
            self.polish(Opening(enter, grad))

    def cycle(self) -> None:
        """One sweep, over every free coordinate or their active set as the control says."""
        coords = self.control.next_sweep(self.coords, self.beta, self.pen)
        self.datafit.sweep(self.state, coords, self.beta, self.pen.table, self.radius)
        self.control.cycled(self.penalized_loglik())

    def check_kkt(self) -> np.ndarray:
        """The KKT check that the control asks for (:attr:`CycleControl.kkt_due`): small active
        sets refined first, then :meth:`CycleControl.checked` with the violation. Returns the
        gradient it used (screened: exact only in its decisions against the L1 rates)."""
        ctl = self.control
        ctl.objective = self.refine(ctl.objective)
        grad, exact = self.screened_gradient()
        ctl.checked(kkt_violation(self.datafit, self.state, self.beta, self.pen, self.free, grad),
                    grad if exact else None)
        return grad

    def refine(self, objective: float | None = None) -> float:
        """Newton steps to machine precision on an active set small enough that they solve the
        formed block (:func:`~riskset.solver.newton.refine_coordinates`), else nothing;
        ``objective``: the penalized log-likelihood now, if known. Returns it where they end."""
        if refine_coordinates(self.datafit, self.beta, self.pen, self.free, self.opts.polish_max_active) is None:
            return self.penalized_loglik() if objective is None else objective
        self.beta, self.state, objective, *_ = newton_steps(self.datafit, self.beta, self.state, self.pen, self.free,
                                                            refine_max_active(self.opts.polish_max_active),
                                                            objective=objective)
        return objective

    def screened_gradient(self) -> tuple[np.ndarray, bool]:
        """(the gradient at the state for decisions against the L1 rates, whether it is exact):
        the columns that the fit's last exact gradient clears are not read
        (:func:`riskset.solver.screening.kkt_gradient`); an exact one becomes the reference."""
        grad, exact = kkt_gradient(self.datafit, self.state, self.beta, self.pen, self.free, self.control.reference)
        if exact:
            self.control.reference = reference(self.datafit, self.state, grad)
        return grad, exact

    def polish(self, opening: Opening | None = None) -> None:
        """Rounds of Newton steps on the active set (:func:`~riskset.solver.newton.newton_steps`)
        until one settles or a round gains less than ``tol``, then the KKT check, as after a
        full sweep (a risk-set family's sweep costs tens of gradients); if it fails, its
        gradient's entrants enter and the rounds go on. Between two rounds the active set is
        re-decided from one gradient, not a full sweep: coordinates that a conjugate-gradient
        step stopped at their centers stay there unless their slope beats the L1 rate; those at
        their centers whose slope does enter by one coordinate step each (a sweep over them
        alone) before the next round; a check that fails with none to enter after a round that
        no longer gains hands over to :meth:`sweep_violators`. ``opening``: the opening of a
        warm start, whose entrants join the first Newton step instead, on the side their slopes
        point to (tens of entrants cost several gradients as a sweep of a risk-set family, next
        to nothing in a conjugate-gradient step; its projection returns to the center those
        that step back, and they enter later as any other). At most :data:`POLISH_ROUNDS` rounds.
        """
        datafit, pen, free, opts, ctl = self.datafit, self.pen, self.free, self.opts, self.control
        joining, rtol, stalled_kkt = None, NEWTON_CG_RTOL, np.inf
        if opening is not None:
            if opening.exact:
                ctl.reference = reference(datafit, self.state, opening.grad)
            if opening.entrants.size:
                joining = opening.entrants, np.sign(opening.grad[opening.entrants])
        for _ in range(POLISH_ROUNDS):
            start, grad = ctl.objective, None
            for tol in (opts.tol, opts.tol * POLISH_SETTLED):  # the second after one that settled above
                self.beta, self.state, objective, settled, forcing = newton_steps(
                    datafit, self.beta, self.state, pen, free, opts.polish_max_active, tol, objective=ctl.objective,
                    joining=joining, rtol=rtol, conditioning=self.conditioning)
                joining, rtol = None, NEWTON_CG_RTOL
                ctl.polished(objective, settled)
                if ctl.kkt_due:
                    grad = self.check_kkt()
                    break
                if settled is None:
                    break
            gained = (ctl.objective - start) / (abs(ctl.objective) + 1.0)
            if gained > POLISH_FAR:
                rtol = forcing  # far from the optimum: the next solve as loose as the last step's model warrants
            if ctl.done or (grad is None and settled is not None):
                return  # converged; or the polish settled above tol: a full sweep decides
            if grad is None and not gained > opts.tol:  # stalled (its steps crossed zero): checked as a
                ctl.change = max(gained, 0.0)             # sweep that changed the objective less than tol
                grad = self.check_kkt()
                if ctl.done:
                    return
            if grad is None:  # screened: the entrants and the violators are decided against the rates
                grad, _ = self.screened_gradient()
            enter = entrants(self.beta, grad, pen, free)
            if enter.size and self.newton_enters(enter):
                joining = enter, np.sign(grad[enter])
            elif enter.size:
                datafit.sweep(self.state, enter, self.beta, pen.table, self.radius)
                ctl.swept(self.penalized_loglik(), "the entrants")
                if ctl.done:
                    return
            elif not gained > opts.tol:  # the KKT check failed on the active set and the polish no longer gains
                if newton_coordinates(datafit, self.beta, pen, free, opts.polish_max_active) is None:
                    return  # nothing polished (polishing off): the sweeps of plain CCD go on
                if self.costly_sweeps and ctl.kkt * VIOLATIONS_FALL <= stalled_kkt:
                    stalled_kkt = ctl.kkt  # one more round: its first step is taken whatever it gains
                    continue
                self.sweep_violators(grad)
                return

    def sweep_violators(self, grad: np.ndarray) -> None:
        """After a KKT check that failed (its gradient ``grad``) where polishes no longer gain:
        sweeps over the coordinates that violate the conditions
        (:func:`~riskset.solver.kkt.violators`), each followed by the check, while the violation
        falls at least :data:`VIOLATIONS_FALL`-fold, at most :data:`VIOLATOR_SWEEPS` times. A
        full sweep (what the cycles do next if the fit has not converged) moves every active
        coordinate and screens the resting ones; a sweep over the violators alone moves only
        those the polish left off their optimum, a fraction of a full sweep's cost."""
        ctl = self.control
        for _ in range(VIOLATOR_SWEEPS):
            fix = violators(self.datafit, self.beta, self.state, grad, self.pen, self.free, self.opts.kkt_tol)
            if not fix.size:
                break
            before = ctl.kkt
            self.datafit.sweep(self.state, fix, self.beta, self.pen.table, self.radius)
            ctl.swept(self.penalized_loglik(), "the coordinates violating the KKT conditions")
            if ctl.done:
                break
            grad = self.check_kkt()
            if ctl.done or not ctl.kkt * VIOLATIONS_FALL <= before:
                break


def _progress_bar(show):
    """A bar counting cycles, with no total: how many cycles a fit needs is not known
    (``max_iter`` is only a cap); its postfix shows the objective's relative change against ``tol``."""
    if not show:
        return None
    from tqdm.auto import tqdm

    return tqdm(total=None, desc="CCD cycles", unit="cycle", leave=False)
