"""Logistic, Poisson and least-squares families: derivatives, optimality, invariances."""
import dataclasses
import warnings

import numpy as np
import pytest
import scipy.sparse as sp
from scipy import optimize

import riskset
from helpers import check_derivatives, check_move, loglik_at
from riskset.exceptions import ConvergenceWarning, InputError
from riskset.models import get_model
from riskset.solver import ccd

FAMILIES = ["logistic", "poisson", "least_squares"]


def make_data(model, rng, n=300, p=6, weights=False, offset=False):
    X = sp.random(n, p, density=0.4, random_state=rng, data_rvs=lambda k: rng.normal(size=k), format="csc")
    eta = X @ rng.normal(scale=0.5, size=p) - 0.3
    if model == "logistic":
        y = (rng.random(n) < 1 / (1 + np.exp(-eta))).astype(float)
    elif model == "poisson":
        y = rng.poisson(np.exp(eta)).astype(float)
    else:
        y = eta + rng.normal(size=n)
    return riskset.from_arrays(X, y=y, weights=rng.uniform(0.5, 2, n) if weights else None,
                               offset=rng.normal(scale=0.3, size=n) if offset else None)


@pytest.mark.parametrize("model", FAMILIES)
def test_derivatives_match_finite_differences(model, rng):
    data = make_data(model, rng, weights=True, offset=True)
    datafit = get_model(model).datafit(data)
    beta = rng.normal(scale=0.3, size=datafit.n_coef)
    check_derivatives(datafit, beta)
    check_move(datafit, beta, 2, 0.37)


@pytest.mark.parametrize("model", FAMILIES)
def test_unpenalized_fit_is_the_maximum_likelihood(model, rng):
    data = make_data(model, rng, weights=True, offset=True)
    fit = riskset.fit(data, model)
    assert fit.converged
    datafit = get_model(model).datafit(data)
    opt = optimize.minimize(lambda b: -loglik_at(datafit, b), np.zeros(datafit.n_coef), method="BFGS",
                            jac=lambda b: -datafit.gradient(datafit.new_state(b)), options={"gtol": 1e-10})
    assert np.allclose(fit.coef.to_numpy(), opt.x, atol=1e-6)
    assert fit.loglik == pytest.approx(-opt.fun, abs=1e-8)
    # standard errors: sqrt of the inverse information's diagonal, all finite
    assert np.all(np.isfinite(fit.se)) and np.all(fit.se > 0)


@pytest.mark.parametrize("model", FAMILIES)
def test_lasso_satisfies_kkt_conditions(model, rng):
    data = make_data(model, rng, n=500, p=12)
    gamma = 0.3 * riskset.fit(data, model, riskset.Laplace(gamma=1e9)).gamma_max
    fit = riskset.fit(data, model, riskset.Laplace(gamma=gamma))
    datafit = get_model(model).datafit(data)
    grad = datafit.gradient(datafit.new_state(fit.coef.to_numpy()))
    beta = fit.coef.to_numpy()
    assert abs(grad[0]) < 1e-6  # intercept unpenalized
    nz = beta[1:] != 0
    assert nz.any() and (~nz).any()
    assert np.allclose(grad[1:][nz], gamma * np.sign(beta[1:][nz]), atol=1e-5)
    assert np.all(np.abs(grad[1:][~nz]) <= gamma + 1e-8)
    assert fit.se.isna().all()  # no standard errors for penalized fits


def test_elastic_net_and_ridge_stationarity(rng):
    data = make_data("logistic", rng, n=400, p=8)
    datafit = get_model("logistic").datafit(data)
    fit = riskset.fit(data, "logistic", riskset.ElasticNet(gamma=3.0, variance=0.5))
    b = fit.coef.to_numpy()
    g = datafit.gradient(datafit.new_state(b))
    nz = b != 0
    nz[0] = False
    assert np.allclose(g[nz] - b[nz] / 0.5, 3.0 * np.sign(b[nz]), atol=1e-6)
    ridge = riskset.fit(data, "logistic", riskset.Normal(variance=0.5))
    b = ridge.coef.to_numpy()
    g = datafit.gradient(datafit.new_state(b))
    assert np.allclose(g[1:], b[1:] / 0.5, atol=1e-6)


def test_gamma_max_is_the_smallest_rate_that_zeroes_everything(rng):
    data = make_data("logistic", rng, n=500, p=10)
    first = riskset.fit(data, "logistic", riskset.Laplace(gamma=1.0))
    gmax = first.gamma_max
    at = riskset.fit(data, "logistic", riskset.Laplace(gamma=gmax * 1.0001))
    assert at.converged and at.n_iter == 0 and np.all(at.coef.drop("intercept") == 0)
    below = riskset.fit(data, "logistic", riskset.Laplace(gamma=gmax * 0.95))
    assert np.count_nonzero(below.coef.drop("intercept")) >= 1


def test_excluded_coefficient_is_not_penalized(rng):
    data = make_data("logistic", rng, n=400, p=5)
    fit = riskset.fit(data, "logistic", riskset.Laplace(gamma=1e6, exclude=["x2"]))
    assert fit.coef["x2"] != 0
    assert np.all(fit.coef.drop(["intercept", "x2"]) == 0)


@pytest.mark.parametrize("model", FAMILIES)
def test_row_order_invariance(model, rng):
    data = make_data(model, rng, weights=True)
    perm = rng.permutation(data.n_rows)
    a = riskset.fit(data, model, riskset.Laplace(gamma=2.0))
    b = riskset.fit(data.subset(perm), model, riskset.Laplace(gamma=2.0))
    assert np.allclose(a.coef, b.coef, atol=1e-9)


@pytest.mark.parametrize("model", FAMILIES)
def test_integer_weights_equal_duplicated_rows(model, rng):
    data = make_data(model, rng, n=200)
    counts = rng.integers(1, 4, data.n_rows)
    weighted = riskset.from_arrays(data.X, y=data.y, weights=counts.astype(float))
    rows = np.repeat(np.arange(data.n_rows), counts)
    duplicated = riskset.from_arrays(data.X[rows], y=data.y[rows])
    a = riskset.fit(weighted, model)
    b = riskset.fit(duplicated, model)
    assert np.allclose(a.coef, b.coef, atol=1e-8)
    assert a.loglik == pytest.approx(b.loglik, rel=1e-10)
    assert np.allclose(a.se, b.se, rtol=1e-6)


def test_warm_start_reaches_the_same_optimum_faster(rng):
    data = make_data("logistic", rng, n=600, p=10)
    cold = riskset.fit(data, "logistic", riskset.Laplace(gamma=3.0))
    warm = riskset.fit(data, "logistic", riskset.Laplace(gamma=3.0), warm_start=cold)
    assert np.allclose(cold.coef, warm.coef, atol=1e-8)
    assert warm.n_iter <= cold.n_iter


def test_perfect_separation_is_reported_not_converged():
    x = np.array([0, 0, 0, 0, 1, 1, 1, 1.0])
    data = riskset.from_arrays(np.c_[x, [0.3, -1, 0.2, 0.5, 0.1, -0.4, 0.9, 0.0]], y=x)
    with pytest.warns(ConvergenceWarning, match="separates"):
        fit = riskset.fit(data, "logistic")
    assert not fit.converged
    assert "x0" in fit.message
    # a prior makes the same problem well posed
    assert riskset.fit(data, "logistic", riskset.Normal(variance=1.0)).converged


def test_iteration_cap_reports_non_convergence(rng, monkeypatch):
    """Newton polishing off: with it, one cycle reaches the optimum of this small fit."""
    monkeypatch.setattr(ccd, "newton_steps", lambda datafit, beta, state, *args, objective=None, **kwargs:
                        (beta, state, objective, None, ccd.NEWTON_CG_RTOL))
    data = make_data("logistic", rng)
    with pytest.warns(ConvergenceWarning, match="max_iter"):
        fit = riskset.fit(data, "logistic", max_iter=1)
    assert not fit.converged


def test_bad_responses_are_named(rng):
    X = np.eye(3)
    with pytest.raises(InputError, match=r"y in \{0, 1\}.*row 1"):
        riskset.fit(riskset.from_arrays(X, y=np.array([0, 2, 1])), "logistic")
    with pytest.raises(InputError, match="counts must be >= 0"):
        riskset.fit(riskset.from_arrays(X, y=np.array([0, -1, 1])), "poisson")
    with pytest.raises(InputError, match="needs a 'y' column"):
        riskset.fit(riskset.from_arrays(X, time=np.ones(3)), "logistic")


def test_predictions_and_json_round_trip(rng, tmp_path):
    data = make_data("poisson", rng, offset=True)
    fit = riskset.fit(data, "poisson", profile=["x1"])
    eta = fit.predict(data, "link")
    assert np.allclose(fit.predict(data, "rate"), np.exp(eta))
    lo, hi = fit.intervals.loc[0, ["lower", "upper"]]
    assert lo < fit.coef["x1"] < hi
    # the profile interval is close to the Wald interval for a well-conditioned model
    assert lo == pytest.approx(fit.coef["x1"] - 1.96 * fit.se["x1"], abs=0.2 * fit.se["x1"])
    path = tmp_path / "fit.json"
    fit.to_json(path)
    back = riskset.FitResult.from_json(path)
    assert np.allclose(back.predict(data, "rate"), fit.predict(data, "rate"))
    assert back.coef_table()["upper"].tolist() == pytest.approx(fit.coef_table()["upper"].tolist(), nan_ok=True)
    with pytest.raises(ValueError, match="predictions are"):
        fit.predict(data, "probability")


def test_poisson_offset_scales_rates(rng):
    data = make_data("poisson", rng)
    shifted = riskset.from_arrays(data.X, y=data.y, offset=np.full(data.n_rows, np.log(3.0)))
    a, b = riskset.fit(data, "poisson"), riskset.fit(shifted, "poisson")
    assert b.coef["intercept"] == pytest.approx(a.coef["intercept"] - np.log(3.0), abs=1e-8)
    assert np.allclose(a.coef.drop("intercept"), b.coef.drop("intercept"), atol=1e-8)


def test_solver_is_deterministic(rng):
    data = riskset.simulate(n=3000, p=40, model="logistic", seed=5)
    a = riskset.fit(data, "logistic", riskset.Laplace(gamma=4.0))
    b = riskset.fit(data, "logistic", riskset.Laplace(gamma=4.0))
    assert a.coef.equals(b.coef)


def test_no_warning_for_a_clean_fit(rng):
    data = make_data("least_squares", rng)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert riskset.fit(data, "least_squares").converged


@pytest.mark.parametrize("model", FAMILIES)
def test_local_quadratic_is_the_hessian_block_without_forming_it(model, rng):
    data = make_data(model, rng, weights=True, offset=True)
    df = get_model(model, intercept=True).datafit(data)
    state = df.new_state(rng.normal(scale=0.2, size=df.n_coef))
    cols = np.array([0, 4, 2])
    quad = df.local_quadratic(state, cols)
    H = df.hessian(state, cols)
    b = rng.normal(size=3)
    assert np.allclose(quad.gradient, df.gradient(state)[cols], rtol=1e-12, atol=1e-12)
    assert np.allclose(quad.hessian_times(b), H @ b, rtol=1e-12, atol=1e-12)
    assert np.allclose(quad.curvature, -np.diag(H), rtol=1e-12)


@pytest.mark.parametrize("model", FAMILIES)
def test_intercept_start_is_the_intercept_only_optimum(model, rng):
    """The restricted start's closed form (every covariate at 0, a constant offset): the
    intercept's score vanishes there, with case weights; any other case has none."""
    data = make_data(model, rng, weights=True)
    data = dataclasses.replace(data, offset=np.full(data.n_rows, 0.4))
    df = get_model(model).datafit(data)
    zero = np.zeros(df.n_coef)
    start = df.unpenalized_start(zero, np.array([0]))
    assert np.array_equal(start[1:], zero[1:]) and start[0] != 0
    score, info = df.coordinate(df.new_state(start), 0)
    assert abs(score) < 1e-10 * abs(info)
    assert df.unpenalized_start(zero, np.array([0, 1])) is None  # more than the intercept
    moved = zero.copy()
    moved[2] = 0.1
    assert df.unpenalized_start(moved, np.array([0])) is None  # a covariate off 0
    varying = get_model(model).datafit(dataclasses.replace(data, offset=np.linspace(0, 1, data.n_rows)))
    assert varying.unpenalized_start(zero, np.array([0])) is None
    if model != "least_squares":  # no event, no count: the intercept's estimate does not exist
        none = get_model(model).datafit(dataclasses.replace(data, y=np.zeros(data.n_rows)))
        assert none.unpenalized_start(zero, np.array([0])) is None


def test_intercept_start_changes_no_fit(rng, monkeypatch):
    """A lasso fit from the closed-form start ends where the Newton-fitted restricted start ends."""
    from riskset.models.glm import GLMDatafit

    data = make_data("logistic", rng, n=2000, p=30)
    prior = riskset.Laplace(gamma=8.0)
    fit = riskset.fit(data, "logistic", prior)
    monkeypatch.setattr(GLMDatafit, "unpenalized_start", lambda self, beta, coefs: None)
    newton = riskset.fit(data, "logistic", prior)
    assert fit.converged and newton.converged and np.count_nonzero(fit.coef.values) >= 4
    np.testing.assert_allclose(fit.coef.values, newton.coef.values, rtol=1e-7, atol=1e-9)
