"""Profile log-likelihoods at chosen points and on an adaptive grid (Cyclops'
getCyclopsProfileLogLikelihood), and the log-likelihood at given coefficients.

Each profile point is checked against a second route, a separate fit with the coefficient
held (``riskset.fit(..., fixed=)``); derivatives against central differences of the
profile itself; the adaptive grid against its own tolerance.
"""
import numpy as np
import pytest

import riskset
from riskset import profile_likelihood
from riskset.profile_likelihood import chord_errors


@pytest.fixture(scope="module")
def cox_data():
    return riskset.simulate(n=1500, p=5, model="cox", seed=1)


PRIOR = riskset.Laplace(variance=0.1, exclude=["x0"])


@pytest.mark.parametrize("prior, include_penalty, coef", [
    (None, True, "x0"),
    (PRIOR, True, "x1"),
    (PRIOR, False, "x1"),
    (PRIOR, True, "x0"),
], ids=["mle", "penalized-coef-with-penalty", "penalized-coef-without", "unpenalized-coef-under-prior"])
def test_profile_points_are_fits_with_the_coefficient_held(cox_data, prior, include_penalty, coef):
    points = [-0.4, 0.0, 0.35, 1.2]
    prof = riskset.profile_loglik(cox_data, "cox", prior, coef=coef, points=points, include_penalty=include_penalty,
                                  fit_tol=1e-12)
    assert prof["point"].tolist() == sorted(points) and prof["converged"].all()
    for row in prof.itertuples():
        held = riskset.fit(cox_data, "cox", prior, fixed={coef: row.point}, tol=1e-12)
        assert row.loglik == pytest.approx(held.loglik, rel=1e-9, abs=1e-7)
        assert row.value == pytest.approx(held.objective if include_penalty else held.loglik, rel=1e-9, abs=1e-7)
    assert (prof["value"] <= prof.attrs["maximum"] + 1e-8).all()
    h = 1e-5  # the derivative: a central difference of the profile at each point
    around = riskset.profile_loglik(cox_data, "cox", prior, coef=coef,
                                    points=np.r_[np.array(points) - h, np.array(points) + h],
                                    include_penalty=include_penalty, fit_tol=1e-13)
    value = around["value"].to_numpy()  # ascending: p - h, p + h for each point p
    difference = (value[1::2] - value[::2]) / (2 * h)
    np.testing.assert_allclose(prof["derivative"], difference, rtol=1e-4, atol=1e-3)


def test_the_profile_peaks_at_the_estimate_with_zero_derivative(cox_data):
    estimate = riskset.fit(cox_data, "cox").coef["x0"]
    prof = riskset.profile_loglik(cox_data, "cox", coef="x0", points=[estimate])
    assert prof["value"].iloc[0] == pytest.approx(prof.attrs["maximum"], rel=1e-12)
    assert abs(prof["derivative"].iloc[0]) < 1e-5 and prof.attrs["estimate"] == estimate


def test_adaptive_grid_meets_its_tolerance_and_keeps_the_estimate(cox_data):
    bounds = (np.log(0.5), np.log(4.0))
    prof = riskset.profile_loglik(cox_data, "cox", coef="x0", bounds=bounds, tol=0.01, initial_grid=10)
    x, y = prof["point"].to_numpy(), prof["value"].to_numpy()
    assert x[0] == pytest.approx(bounds[0]) and x[-1] == pytest.approx(bounds[1])
    assert prof.attrs["estimate"] in x and prof.attrs["problem"] == ""
    assert chord_errors(x, y).max() <= 0.01 and 10 < x.size < 200
    assert np.all(np.diff(np.diff(y) / np.diff(x)) < 0)  # concave


def test_chord_errors_bound_the_interpolation_error_of_a_parabola():
    x = np.linspace(-2.0, 2.0, 9)
    y = -3.0 * x ** 2
    # for a parabola, the crossing of the neighbouring chords bounds the true gap, h^2 a / 4 at most
    fine = np.linspace(-2.0, 2.0, 4001)
    gap = np.interp(fine, x, y) - (-3.0 * fine ** 2)
    worst = [np.abs(gap[(fine >= a) & (fine <= b)]).max() for a, b in zip(x[:-1], x[1:])]
    assert np.all(chord_errors(x, y) >= np.array(worst) - 1e-12)


def test_a_point_whose_fit_fails_is_reported_and_the_others_kept(cox_data, monkeypatch):
    real = profile_likelihood.fit_replicates

    def last_fails(batch, *args, **kwargs):
        out = real(batch, *args, **kwargs)
        out.converged[-1] = False
        out.messages[-1] = "no convergence after 1000 cycles"
        return out

    monkeypatch.setattr(profile_likelihood, "fit_replicates", last_fails)
    prof = riskset.profile_loglik(cox_data, "cox", coef="x0", points=[0.0, 0.5, 1.0])
    assert prof["converged"].tolist() == [True, True, False]
    assert np.isnan(prof["value"].iloc[2]) and "did not converge" in prof["note"].iloc[2]
    assert np.isfinite(prof["value"].iloc[:2]).all()


def test_an_adaptive_grid_that_cannot_be_fitted_warns_and_returns_its_points(cox_data, monkeypatch):
    real = profile_likelihood.fit_replicates

    rounds = []

    def second_round_fails(batch, *args, **kwargs):
        out = real(batch, *args, **kwargs)
        rounds.append(batch.n_replicates)
        if len(rounds) > 1:  # the refinement rounds
            out.converged[:] = False
        return out

    monkeypatch.setattr(profile_likelihood, "fit_replicates", second_round_fails)
    with pytest.warns(riskset.ConvergenceWarning, match="did not converge"):
        prof = riskset.profile_loglik(cox_data, "cox", coef="x0", bounds=(-1.0, 2.0), tol=0.01)
    assert prof.attrs["problem"] and prof["converged"].sum() == rounds[0] == 11  # 10 points and the estimate


@pytest.mark.parametrize("kwargs, message", [
    ({"coef": "x0"}, "give either points"),
    ({"coef": "x0", "points": [0.0], "bounds": (0, 1)}, "not both"),
    ({"coef": "x0", "points": [0.0, np.nan]}, "points must be finite numbers"),
    ({"coef": "x0", "points": []}, "points is empty"),
    ({"coef": "x0", "bounds": (1.0, -1.0)}, "lower < upper"),
    ({"coef": "x0", "bounds": (0.0, 1.0), "initial_grid": 2}, "initial_grid must be an integer >= 4"),
    ({"coef": "x0", "bounds": (0.0, 1.0), "tol": 0.0}, "tol must be a finite number > 0"),
    ({"coef": "x9", "points": [0.0]}, "unknown coefficient 'x9'"),
    ({"coef": "x0", "points": [0.0], "fixed": {"x0": 1.0}}, "also in fixed"),
])
def test_bad_profile_arguments_are_refused_naming_them(cox_data, kwargs, message):
    with pytest.raises(riskset.InputError, match=message):
        riskset.profile_loglik(cox_data, "cox", **kwargs)


def test_loglik_at_given_coefficients(cox_data):
    fitted = riskset.fit(cox_data, "cox")
    assert riskset.loglik_at(cox_data, "cox", fitted) == pytest.approx(fitted.loglik, rel=1e-12)
    null = riskset.fit(cox_data, "cox", fixed={c: 0.0 for c in fitted.coef.index})
    assert riskset.loglik_at(cox_data, "cox", {}) == pytest.approx(null.loglik, rel=1e-12)
    with pytest.raises(riskset.InputError, match="unknown coefficient"):
        riskset.loglik_at(cox_data, "cox", {"x9": 1.0})
