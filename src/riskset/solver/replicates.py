"""Fit a batch of replicates in lockstep with the rules of :func:`riskset.solver.ccd.fit_ccd`.

Every replicate r follows the single-fit algorithm step for step: restricted start
and the gamma_max test, sweeps chosen and stopped by its own
:class:`~riskset.solver.control.CycleControl`, its polishes and refinements by a
:class:`~riskset.solver.ccd.Solver` on the replicate's own view, and its end by
:func:`~riskset.solver.ending.verdict`. Only the sweeps and the gradients are batched: one
``batch.sweep`` per cycle advances every running replicate (a per-replicate coordinate mask), so
a family with batched kernels reads each column once for all of them. A batched replicate
therefore ends where its separate fit ends, to rounding.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from riskset.core.penalty import Penalty
from riskset.core.replicates import ReplicateBatch
from riskset.solver.ccd import AT_GAMMA_MAX, Solver, SolverOptions, fit_status, zero_test
from riskset.solver.control import CycleControl
from riskset.solver.ending import verdict
from riskset.solver.entrants import OPENING_SWEEP_PASSES, Opening, opening_entrants, warm_start
from riskset.solver.kkt import informed_units, kkt_unit
from riskset.solver.newton import active_set, newton_coordinates, refine_coordinates, refine_max_active


@dataclass
class ReplicateResult:
    """Per replicate: coefficients (R, P), log-likelihood, penalized objective, convergence,
    and the coefficients whose estimate does not exist ({index: +1 / -1}, as
    :attr:`riskset.solver.ccd.SolverResult.diverging`)."""

    beta: np.ndarray
    loglik: np.ndarray
    objective: np.ndarray
    converged: np.ndarray
    n_iter: np.ndarray
    messages: list
    gamma_max: np.ndarray
    diverging: list
    kkt: np.ndarray  # per replicate: the relative KKT violation at its convergence check (NaN if none)

    @property
    def status(self) -> list[str]:
        """Per replicate: 'converged', 'not_converged' or 'estimate_does_not_exist'."""
        return [fit_status(c, d) for c, d in zip(self.converged, self.diverging)]


def fit_replicates(batch: ReplicateBatch, l1, l2, beta0=None, free=None,
                   options: SolverOptions | None = None, center=None, likely=None) -> ReplicateResult:
    """Maximize each replicate's penalized log-likelihood.

    Parameters
    ----------
    l1, l2 : (P,) or (R, P) penalty weights (per-replicate grid points allowed).
    beta0 : (P,) or (R, P) warm starts (the prior centers by default).
    free : (P,) or (R, P) mask of coordinates to fit; the others stay at ``beta0``
        (the points of a profile likelihood).
    center : (P,) or (R, P) prior means (location priors; zeros by default).
    likely : (P,) or (R, P) mask of the coordinates that may enter the active set at the warm
        starts (:func:`riskset.solver.entrants.likely_entrants`); a warm start's opening reads their
        slopes alone where they are fewer than half and the batch reads slopes cheaply
        (:attr:`~riskset.core.replicates.ReplicateBatch.cheap_slopes`; None: it reads the gradient).
    """
    opts = options or SolverOptions()
    R, P = batch.n_replicates, batch.n_coef

    def full(a, fill=0.0):  # C order: a row handed to a compiled sweep is contiguous (one specialization)
        a = np.full(P, fill) if a is None else np.asarray(a)
        return np.array(np.broadcast_to(a, (R, P)), order="C")

    pen = Penalty(full(l1).astype(float), full(l2).astype(float), full(center).astype(float))
    beta = pen.center.copy() if beta0 is None else full(beta0).astype(float)
    l1 = pen.l1
    free = full(free, True).astype(bool)
    state = batch.new_state(beta)
    messages = [""] * R
    n_iter = np.zeros(R, np.int64)
    converged = ~free.any(axis=1)  # nothing to fit (a profile point of a one-coefficient model): at the optimum
    kkt = np.full(R, np.nan)

    # 1. restricted start: unpenalized coordinates alone, then the gamma_max test
    penalized = free & (l1 > 0)
    restricted = penalized.any(axis=1) & ~np.any(~pen.at_center(beta) & penalized, axis=1)
    gamma_max = np.full(R, np.nan)
    at_zero = np.zeros(R, bool)
    if restricted.any():
        base = restricted[:, None] & free & (l1 == 0)
        if base.any():
            _cycles(batch, state, beta, pen, base, opts)
        grad = np.zeros(beta.shape)
        grad[restricted] = batch.gradient(state, np.flatnonzero(restricted))
        for r in np.flatnonzero(restricted):
            gamma_max[r], at_zero[r] = zero_test(grad[r], l1[r], penalized[r])
        converged[at_zero] = True
        for r in np.flatnonzero(at_zero):
            messages[r] = AT_GAMMA_MAX

    # 2. cycles over the free coordinates, 3. polish
    base = free & ~at_zero[:, None]
    if base.any():
        likely = None if likely is None else full(likely).astype(bool)
        cycles = _cycles(batch, state, beta, pen, base, opts, opening=True, likely=likely)
        todo = base.any(axis=1)
        converged[todo], n_iter[todo], kkt[todo] = cycles.converged[todo], cycles.n_iter[todo], cycles.kkt[todo]
        for r in np.flatnonzero(todo):
            messages[r] = cycles.messages[r]
    # 4. the end of each fit, as fit_ccd's: a non-finite state fails it, else the existence test
    ll = batch.loglik(state)
    objective = ll - pen.values(beta)
    diverging = [{} for _ in range(R)]
    for r, diagnosis in enumerate(batch.diagnose(state, beta)):
        message, diverging[r] = verdict(batch.view(r), beta[r], objective[r], diagnosis, f"after cycle {n_iter[r]}",
                                        pen.row(r), free[r], converged[r])
        if message:
            converged[r], messages[r] = False, message
    return ReplicateResult(beta, ll, objective, converged, n_iter, messages, gamma_max, diverging, kkt)


@dataclass
class Cycles:
    """How the cycles of a batch ended, per replicate (as :class:`~riskset.solver.ccd.SolverResult`)."""

    converged: np.ndarray
    n_iter: np.ndarray
    messages: list
    kkt: np.ndarray


def _cycles(batch, state, beta, pen: Penalty, base, opts, opening=False, likely=None) -> Cycles:
    """:meth:`riskset.solver.ccd.Solver.run` for the replicates with coordinates in ``base``
    (R, P), after the opening of warm starts if ``opening`` (``likely``: their likely entrants,
    or None); one batched sweep per cycle. ``beta`` and ``state`` move in place."""
    R, _ = beta.shape
    radius = np.ones(beta.shape)
    objective = batch.loglik(state) - pen.values(beta)
    coords = [np.flatnonzero(row) for row in base]
    control = [CycleControl(objective[r], opts) if coords[r].size else None for r in range(R)]
    running = np.array([c is not None and not c.done for c in control])

    def check():
        """The KKT check of the replicates that want one, small active sets refined first."""
        rows = [r for r in np.flatnonzero(running) if control[r].kkt_due]
        for r, obj in _refine(batch, state, beta, pen, base, rows, opts, control, radius).items():
            control[r].objective = obj
        grads = batch.gradient(state, rows) if rows else ()
        for r, grad, unit in zip(rows, grads, _kkt_units(batch, state, beta, pen, base, rows)):
            control[r].checked(pen.row(r).kkt_violation(beta[r], grad, unit, base[r]))

    if opening and batch.sweep_passes >= OPENING_SWEEP_PASSES:
        _opening(batch, state, beta, pen, base, [r for r in np.flatnonzero(running)
                                                if warm_start(beta[r], pen.row(r), base[r])],
                 opts, control, radius, likely)
        running = np.array([c is not None and not c.done for c in control])

    while running.any():
        mask = np.zeros(beta.shape, bool)
        for r in np.flatnonzero(running):
            mask[r, control[r].next_sweep(coords[r], beta[r], pen.row(r))] = True
        batch.sweep(state, mask, beta, pen.table, radius)
        objective = batch.loglik(state) - pen.values(beta)
        for r in np.flatnonzero(running):
            control[r].cycled(objective[r])
        check()
        due = [r for r in np.flatnonzero(running) if control[r].polish_due]
        _polish(batch, state, beta, pen, base, due, opts, control, radius)
        for r in np.flatnonzero(running):
            running[r] = not control[r].done
    converged = np.array([c is not None and c.converged for c in control])
    n_iter = np.array([c.k if c is not None else 0 for c in control])
    messages = [c.message if c is not None else "" for c in control]
    kkt = np.array([c.kkt if c is not None else np.nan for c in control])
    return Cycles(converged, n_iter, messages, kkt)


def _kkt_units(batch, state, beta, pen: Penalty, base, rows) -> list:
    """Per replicate of ``rows``, the units of its KKT violations at ``beta``
    (:func:`riskset.solver.kkt.kkt_unit`, on the replicate's own view and its state,
    :meth:`ReplicateBatch.view_state`, asked only where a coefficient's information is needed)."""

    def one(r):
        pen_r = pen.row(r)
        view_state = batch.view_state(state, r, beta) if informed_units(pen_r, base[r]).size else None
        return kkt_unit(batch.view(r), pen_r, base[r], state=view_state)

    return batch.map(one, list(rows))


def _opening(batch, state, beta, pen: Penalty, base, rows, opts, control, radius, likely) -> None:
    """The opening of warm-started replicates ``rows``, as a single fit's
    (:meth:`riskset.solver.ccd.Solver.open`): a batched gradient finds each one's
    entrants, which join its polish; a replicate whose ``likely`` entrants are fewer
    than half its coordinates reads their slopes alone (an inexact :class:`Opening`)."""
    P = beta.shape[1]
    read = {}  # replicate -> the columns whose slopes its opening reads
    if likely is not None and batch.cheap_slopes:
        read = {r: cols for r in rows if 2 * (cols := np.flatnonzero(likely[r] & base[r])).size < P}
    exact = [r for r in rows if r not in read]
    grads = dict(zip(exact, batch.gradient(state, exact))) if exact else {}

    def slopes(r):  # zero off the likely entrants: none of those enters
        grad = np.zeros(P)
        if read[r].size:
            grad[read[r]] = batch.slopes(state, r, read[r])
        return grad

    grads.update(zip(read, batch.map(slopes, list(read))))
    opened = {}
    for r in rows:
        enter = opening_entrants(batch.view(r), beta[r], grads[r], pen.row(r), base[r], opts.polish_max_active)
        if enter is not None:
            opened[r] = Opening(enter, grads[r], exact=r not in read)
    _polish(batch, state, beta, pen, base, list(opened), opts, control, radius, opened)


def _solver(batch, state, beta, pen: Penalty, base, r, opts, control, radius) -> Solver:
    """The :class:`~riskset.solver.ccd.Solver` of replicate ``r`` on its own view, from a copy of
    its coefficients and its view's state, with its own cycle control and trust regions."""
    return Solver(batch.view(r), beta[r].copy(), batch.view_state(state, r, beta), pen.row(r), base[r], opts,
                  control=control, radius=radius)


def _polish(batch, state, beta, pen: Penalty, base, rows, opts, control, radius, opening=None) -> None:
    """:meth:`riskset.solver.ccd.Solver.polish` of replicates ``rows``, each on its own view
    (``opening``: replicate -> its :class:`~riskset.solver.entrants.Opening`)."""
    opening = opening or {}
    rows = [r for r in rows if r in opening
            or newton_coordinates(batch.view(r), beta[r], pen.row(r), base[r], opts.polish_max_active) is not None]

    def one(r):
        solver = _solver(batch, state, beta, pen, base, r, opts, control[r], radius[r])
        solver.polish(opening.get(r))
        return solver.beta, solver.state, None

    _on_views(batch, state, beta, rows, one)


def _refine(batch, state, beta, pen: Penalty, base, rows, opts, control, radius) -> dict:
    """:meth:`riskset.solver.ccd.Solver.refine` of replicates ``rows`` on their own views; returns
    their new objectives."""
    size = refine_max_active(opts.polish_max_active)  # first without the views (a device batch builds them on the host)
    rows = [r for r in rows if 0 < active_set(beta[r], pen.row(r), base[r]).size <= size]
    rows = [r for r in rows
            if refine_coordinates(batch.view(r), beta[r], pen.row(r), base[r], opts.polish_max_active) is not None]

    def one(r):
        solver = _solver(batch, state, beta, pen, base, r, opts, control[r], radius[r])
        objective = solver.refine()  # from the view's own objective, not the batch's
        return solver.beta, solver.state, objective

    return _on_views(batch, state, beta, rows, one)


def _on_views(batch, state, beta, rows, one) -> dict:
    """Run ``one(r) -> (new beta_r, its view state, result)`` for replicates ``rows`` on their
    own views (``batch.map``: in parallel where the batch can), put the new coefficients in
    ``beta`` and the batch state of those that moved (:meth:`ReplicateBatch.set_states`);
    returns {r: result}."""
    out, moved, states = {}, [], []
    for r, (b, st, result) in zip(rows, batch.map(one, rows)):
        if not np.array_equal(b, beta[r]):
            beta[r] = b
            moved.append(r)
            states.append(st)
        out[r] = result
    if moved:
        batch.set_states(state, np.array(moved), beta, states)
    return out
