"""The integrator against scipy's RK45 and closed-form solutions."""

import numpy as np
import pytest
from scipy.integrate import solve_ivp

from riskset.ode import (MAX_STEPS, NONFINITE, STEP_UNDERFLOW, SUCCESS,
                         ode_model, solve_batch)
from riskset.ode.dopri import tableau
from riskset.ode.models import pk_initial_state, pk_tmdd_rhs, seir_rhs

from .helpers import seir_sample, test_model_rhs

OSC = ode_model(test_model_rhs, ["w", "k", "c"], ["x", "v", "z"],
                name="oscillator")


def _scipy_fun(rhs, p, n):
    def f(t, y):
        d = np.empty(n)
        rhs(t, y, p, d)
        return d
    return f


def test_tableau_is_scipys():
    from scipy.integrate._ivp.rk import RK45

    C, A, B, E, P = tableau()
    np.testing.assert_array_equal(C, RK45.C)
    np.testing.assert_array_equal(A, RK45.A)
    np.testing.assert_array_equal(B, RK45.B)
    np.testing.assert_array_equal(E, RK45.E)
    np.testing.assert_array_equal(P, RK45.P)


@pytest.mark.parametrize("tol", [1e-6, 1e-10])
def test_step_for_step_with_scipy_seir(tol):
    P, y0 = seir_sample(4, seed=3)
    t_eval = np.arange(0.0, 201.0)
    res = solve_batch("seir", P, y0, t_eval, rtol=tol, atol=tol,
                      progress=False)
    assert np.all(res.status == SUCCESS)
    for i in range(P.shape[0]):
        f = _scipy_fun(seir_rhs, P[i], 4)
        steps = solve_ivp(f, (0.0, 200.0), y0, method="RK45", rtol=tol,
                          atol=tol)
        assert res.n_accepted[i] == len(steps.t) - 1
        assert res.nfev[i] == steps.nfev
        # relative 1e-10, with an absolute floor at the rounding level of
        # the largest component (N = 1e6)
        floor = 1e-14 * np.abs(steps.y).max()
        np.testing.assert_allclose(res.states[i, -1], steps.y[:, -1],
                                   rtol=1e-10, atol=floor)
        dense = solve_ivp(f, (0.0, 200.0), y0, method="RK45", rtol=tol,
                          atol=tol, t_eval=t_eval)
        np.testing.assert_allclose(res.states[i], dense.y.T, rtol=1e-10,
                                   atol=floor)


def test_step_for_step_with_scipy_pk_and_vector_atol():
    # nimotuzumab-like scales: mg/L, nM-ish target, hours
    P = np.array([[0.01, 0.05, 0.03, 3.0, 0.5, 0.05, 0.1, 0.2, 0.05],
                  [0.02, 0.1, 0.05, 2.5, 2.0, 0.2, 0.02, 0.5, 0.1]])
    Y0 = pk_initial_state(200.0, P)
    t_eval = np.linspace(0.0, 500.0, 51)
    atol = np.array([1e-9, 1e-8, 1e-9, 1e-9])
    res = solve_batch("pk", P, Y0, t_eval, rtol=1e-8, atol=atol,
                      progress=False)
    assert np.all(res.status == SUCCESS)
    for i in range(2):
        f = _scipy_fun(pk_tmdd_rhs, P[i], 4)
        ref = solve_ivp(f, (0.0, 500.0), Y0[i], method="RK45", rtol=1e-8,
                        atol=atol, t_eval=t_eval)
        assert res.nfev[i] == ref.nfev
        np.testing.assert_allclose(res.states[i], ref.y.T, rtol=1e-10,
                                   atol=1e-14 * np.abs(ref.y).max())


def test_closed_form_oscillator_and_decay():
    w = np.array([0.5, 1.0, 2.0, 3.7])
    k = np.array([0.1, 1.0, 0.3, 2.0])
    P = np.column_stack([w, k, np.zeros(4)])
    y0 = np.array([1.0, 0.5, 2.0])
    t = np.linspace(0.0, 10.0, 41)
    res = solve_batch(OSC, P, y0, t, rtol=1e-12, atol=1e-12, progress=False)
    assert np.all(res.status == SUCCESS)
    x = y0[0] * np.cos(np.outer(w, t)) + (y0[1] / w)[:, None] * np.sin(
        np.outer(w, t))
    v = -y0[0] * w[:, None] * np.sin(np.outer(w, t)) + y0[1] * np.cos(
        np.outer(w, t))
    z = y0[2] * np.exp(-np.outer(k, t))
    np.testing.assert_allclose(res.state("x"), x, atol=1e-9)
    np.testing.assert_allclose(res.state("v"), v, atol=1e-9)
    np.testing.assert_allclose(res.state("z"), z, rtol=1e-9, atol=1e-12)
    # looser tolerance: less work, and still accurate to about the tolerance
    loose = solve_batch(OSC, P, y0, t, rtol=1e-5, atol=1e-5, progress=False)
    assert np.all(loose.n_accepted < res.n_accepted)
    assert np.max(np.abs(loose.state("x") - x)) < 1e-3


def test_output_not_at_step_points_and_t0_before_first_output():
    P = np.array([[1.0, 0.5, 0.0]])
    y0 = np.array([1.0, 0.0, 1.0])
    t = np.array([0.3, 1.7, 2.0, 9.25])
    res = solve_batch(OSC, P, y0, t, t0=0.0, rtol=1e-11, atol=1e-11,
                      progress=False)
    np.testing.assert_allclose(res.state("x")[0], np.cos(t), atol=1e-9)
    np.testing.assert_allclose(res.state("z")[0], np.exp(-0.5 * t),
                               rtol=1e-9)
    # a single output time equal to t0 needs no step at all
    one = solve_batch(OSC, P, y0, [0.0], progress=False)
    np.testing.assert_array_equal(one.states[0, 0], y0)
    assert one.n_accepted[0] == 0 and one.status[0] == SUCCESS


def test_max_steps_status_and_partial_output():
    P, y0 = seir_sample(3, seed=1)
    t = np.arange(0.0, 366.0)
    res = solve_batch("seir", P, y0, t, rtol=1e-8, atol=1e-8, max_steps=15,
                      progress=False)
    assert np.all(res.status == MAX_STEPS)
    assert np.all(res.n_accepted + res.n_rejected == 15)
    # output before the stop is filled, after it NaN
    assert np.all(np.isfinite(res.states[:, 0]))
    assert np.all(np.isnan(res.states[:, -1]))
    ok = solve_batch("seir", P, y0, t, rtol=1e-8, atol=1e-8, progress=False)
    assert np.all(ok.status == SUCCESS)
    filled = np.isfinite(res.states)
    np.testing.assert_array_equal(res.states[filled], ok.states[filled])


def test_blow_up_gives_step_underflow_others_fine():
    P = np.array([[1.0, 0.0, 1.0],    # z' = z^2, z(0)=1: blows up at t=1
                  [1.0, 1.0, 0.0]])
    y0 = np.array([1.0, 0.0, 1.0])
    res = solve_batch(OSC, P, y0, np.linspace(0, 2, 5), progress=False)
    assert res.status[0] == STEP_UNDERFLOW
    assert res.status[1] == SUCCESS
    assert np.all(np.isfinite(res.states[0, :2]))   # t = 0, 0.5
    assert np.all(np.isnan(res.states[0, 3:]))      # t = 1.5, 2


def test_nonfinite_input_flags_only_that_task():
    P, y0 = seir_sample(4, seed=2)
    Y0 = np.tile(y0, (4, 1))
    P[1, 2] = np.nan
    Y0[2, 0] = np.inf
    t = np.arange(0.0, 50.0)
    res = solve_batch("seir", P, Y0, t, progress=False)
    assert res.status.tolist() == [SUCCESS, NONFINITE, NONFINITE, SUCCESS]
    assert np.all(np.isnan(res.states[1])) and np.all(np.isnan(res.states[2]))
    clean = solve_batch("seir", P[[0, 3]], Y0[[0, 3]], t, progress=False)
    np.testing.assert_array_equal(res.states[[0, 3]], clean.states)
    assert list(res.status_names) == ["success", "nonfinite", "nonfinite",
                                      "success"]


def test_division_by_zero_in_rhs_flags_task_not_batch():
    # N = S+E+I+R = 0 gives 0/0 in the SEIR force of infection
    P = np.array([[0.5, 0.2, 0.1], [0.5, 0.2, 0.1]])
    Y0 = np.array([[0.0, 0.0, 0.0, 0.0], [1e6 - 10, 0.0, 10.0, 0.0]])
    res = solve_batch("seir", P, Y0, [0.0, 10.0], progress=False)
    assert res.status.tolist() == [NONFINITE, SUCCESS]
    np.testing.assert_array_equal(res.states[0, 0], Y0[0])  # t0 is given
    assert np.all(np.isnan(res.states[0, 1]))
