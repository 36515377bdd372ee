"""Screened KKT checks (riskset.solver.screening): a bound clears coordinates from the last
exact gradient; every decision taken against the L1 rates must be the exact gradient's."""
import dataclasses

import numpy as np
import pytest

import riskset
import riskset.solver.ccd as ccd
from riskset.core.penalty import Penalty
from riskset.solver import screening
from riskset.solver.ccd import SolverOptions, fit_ccd
from riskset.solver.entrants import entrants
from riskset.solver.kkt import kkt_violation


def _competing(data):
    """``data`` with every fourth event a competing one (status 2): Fine-Gray's outcome."""
    status = np.asarray(data.status).copy()
    status[::4] = 2 * (status[::4] > 0)
    return dataclasses.replace(data, status=status)


@pytest.fixture(scope="module", params=["cox", "fine_gray"])
def cox(request):
    """A risk-set datafit (Cox, Fine-Gray), an L1 rate, its optimum and a state one small step
    away on the active set."""
    data = riskset.simulate(n=3000, p=60, model="cox", seed=11)
    data = _competing(data) if request.param == "fine_gray" else data
    datafit = riskset.models.get_model(request.param).datafit(data)
    p = datafit.n_coef
    rate = 0.5 * np.max(np.abs(datafit.gradient(datafit.new_state(np.zeros(p)))))
    pen = Penalty(np.full(p, rate), np.zeros(p))
    optimum = fit_ccd(datafit, pen.l1, pen.l2, options=SolverOptions(tol=1e-12)).beta
    moved = optimum.copy()
    active = np.flatnonzero(optimum)
    moved[active] *= 1.0 + 0.02 * np.random.default_rng(0).standard_normal(active.size)
    return datafit, pen, optimum, moved


def test_cleared_coordinates_meet_their_conditions_and_the_others_are_exact(cox):
    datafit, pen, optimum, moved = cox
    start = datafit.new_state(optimum)
    ref = screening.reference(datafit, start, datafit.gradient(start))
    state = datafit.new_state(moved)
    grad, exact = screening.kkt_gradient(datafit, state, moved, pen, np.ones(moved.size, bool), ref)
    true = datafit.gradient(datafit.new_state(moved))
    cleared = np.abs(grad - true) > 1e-9 * pen.l1
    assert not exact and cleared.sum() >= 10  # the bound clears most of the ~50 at zero
    assert np.all(moved[cleared] == 0.0)
    assert np.all(np.abs(true[cleared]) <= pen.l1[cleared]) and np.all(np.abs(grad[cleared]) <= pen.l1[cleared])
    np.testing.assert_allclose(grad[~cleared], true[~cleared], rtol=1e-12, atol=1e-12 * pen.l1[0])
    free = np.ones(moved.size, bool)
    assert kkt_violation(datafit, state, moved, pen, free, grad) == pytest.approx(
        kkt_violation(datafit, state, moved, pen, free, true), rel=1e-10)
    np.testing.assert_array_equal(entrants(moved, grad, pen, free), entrants(moved, true, pen, free))


def test_nothing_is_cleared_without_a_reference_or_far_from_it(cox):
    datafit, pen, optimum, moved = cox
    free = np.ones(moved.size, bool)
    state = datafit.new_state(moved)
    assert screening.kkt_gradient(datafit, state, moved, pen, free, None)[1]
    far = datafit.new_state(np.zeros(moved.size))
    ref = screening.reference(datafit, far, datafit.gradient(far))
    grad, exact = screening.kkt_gradient(datafit, state, moved, pen, free, ref)
    assert exact
    np.testing.assert_array_equal(grad, datafit.gradient(state))


@pytest.mark.parametrize("model, n, p", [("cox", 3000, 50), ("fine_gray", 6000, 100), ("logistic", 20000, 200)])
def test_cross_validation_with_screened_checks_equals_the_exact_checks(monkeypatch, model, n, p):
    """(A logistic fit screens its checks only after a polish round: none at N = 3000. A fold fit
    whose opening read its likely entrants alone has no reference before its first exact gradient.)"""
    data = riskset.simulate(n=n, p=p, model="cox" if model == "fine_gray" else model, seed=5)
    data = _competing(data) if model == "fine_gray" else data
    screened = []

    def spy(*args):
        grad, exact = screening.kkt_gradient(*args)
        screened.append(not exact)
        return grad, exact

    def run(kkt_gradient):
        monkeypatch.setattr(ccd, "kkt_gradient", kkt_gradient)
        return riskset.cross_validate(data, model, riskset.Laplace(gamma=1.0), n_folds=5, n_grid=6, progress=False,
                                      refit=False)

    with_screen = run(spy)
    exact = run(lambda datafit, state, *rest: (datafit.gradient(state), True))
    assert sum(screened) >= 3
    assert with_screen.selected_variance == exact.selected_variance
    np.testing.assert_allclose(with_screen.scores["score"], exact.scores["score"], rtol=1e-9)
    assert with_screen.scores["converged"].all()
