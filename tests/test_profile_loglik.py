"""Profile log-likelihoods at chosen points and on an adaptive grid (Cyclops'
getCyclopsProfileLogLikelihood), and the log-likelihood at given coefficients.

Each profile point is checked against a second route, a separate fit with the coefficient
held (``riskset.fit(..., fixed=)``); derivatives against central differences of the
profile itself; the adaptive grid against its own tolerance.
"""
import numpy as np
import pytest
import scipy.sparse as sp

import riskset
from riskset import profile_likelihood
from riskset.data.dataset import Dataset
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


def test_predictive_loglik_of_held_out_rows_is_their_own_loglik(cox_data):
    """Weights 1 on the held-out rows, 0 elsewhere: the log-likelihood of those rows alone
    (their own risk sets), as a cross-validation fold is scored."""
    fitted = riskset.fit(cox_data, "cox")
    held = np.arange(cox_data.n_rows) % 3 == 0
    alone = riskset.loglik_at(cox_data.subset(held), "cox", fitted)
    assert riskset.loglik_at(cox_data, "cox", fitted, weights=held.astype(float)) == pytest.approx(alone, rel=1e-12)
    with pytest.raises(riskset.InputError, match="one value per row"):
        riskset.loglik_at(cox_data, "cox", fitted, weights=[1.0, 0.0])
    with pytest.raises(riskset.InputError, match="negative weight"):
        riskset.loglik_at(cox_data, "cox", fitted, weights=-held.astype(float))


def test_univariable_correlation_is_pearsons_of_each_column_with_y():
    data = riskset.simulate(n=800, p=12, model="logistic", seed=3, density=0.3)
    X = data.X.toarray()
    X[:, 5] = 1.0
    data = Dataset(X=sp.csc_matrix(X), covariate_names=[f"x{j}" for j in range(12)], row_ids=np.arange(800),
                   y=data.y)
    corr = riskset.univariable_correlation(data)
    expected = [np.corrcoef(X[:, j], data.y)[0, 1] if X[:, j].std() > 0 else np.nan for j in range(12)]
    np.testing.assert_allclose(corr.to_numpy(), expected, rtol=1e-12, atol=1e-14)
    assert np.isnan(corr["x5"])  # a constant column: no correlation
    strong = riskset.univariable_correlation(data, threshold=0.1)
    assert list(strong.index) == [n for n, c in corr.items() if abs(c) >= 0.1]
    with pytest.raises(riskset.InputError, match="needs an outcome y"):
        riskset.univariable_correlation(riskset.simulate(n=50, p=2, model="cox", seed=1))
    with pytest.raises(riskset.InputError, match="threshold must be a correlation"):
        riskset.univariable_correlation(data, threshold=2.0)


def test_weight_based_search_trains_on_the_weighted_rows_and_scores_the_others():
    data = riskset.simulate(n=603, p=8, model="logistic", seed=6)
    held = np.arange(603) >= 450  # the last quarter held out (its weights 0); 603 rows: the bits of a split pad a byte
    cv = riskset.cross_validate(data, "logistic", riskset.Laplace(exclude=["intercept"]), n_grid=4, progress=False,
                                held_out=held, tol=1e-12, early_stop=None)
    assert len(cv.scores) == 4 and (cv.scores["fold"] == 0).all()
    for row in cv.scores.itertuples():
        train = riskset.fit(data.subset(~held), "logistic", riskset.Laplace(variance=row.variance,
                                                                            exclude=["intercept"]), tol=1e-12)
        assert row.score == pytest.approx(riskset.loglik_at(data.subset(held), "logistic", train), rel=1e-7)
    with pytest.raises(riskset.InputError, match="holds out 0 of 603 rows"):
        riskset.cross_validate(data, "logistic", riskset.Laplace(), held_out=np.zeros(603, bool), progress=False)


def test_cohort_method_defaults_are_one_call():
    from riskset.selection.cv import COHORT_METHOD_CV

    assert COHORT_METHOD_CV == {"n_folds": 10, "n_repeats": 10, "auto": True, "tol": 2e-7, "seed": 1}
    data = riskset.simulate(n=400, p=5, model="logistic", seed=2)
    quick = {**COHORT_METHOD_CV, "n_repeats": 2}  # the call as CohortMethod's, with 2 of its 10 repetitions
    cv = riskset.cross_validate(data, "logistic", riskset.Laplace(exclude=["intercept"]), n_grid=3,
                                progress=False, **quick)
    assert set(cv.scores["repeat"]) == {0, 1} and set(cv.scores["fold"]) == set(range(10))
    assert len(cv.summary) > 3  # the auto search refined the grid


def test_profile_loglik_on_the_command_line(tmp_path, capsys):
    import pandas as pd

    from riskset import cli

    data = riskset.simulate(n=400, p=3, model="cox", seed=8)
    frame = pd.DataFrame(data.X.toarray(), columns=data.covariate_names).assign(t=data.time, s=data.status)
    frame.to_csv(tmp_path / "d.csv", index=False)
    base = ["fit", "--data", str(tmp_path / "d.csv"), "--model", "cox", "--time", "t", "--status", "s"]
    out = tmp_path / "profile.csv"
    assert cli.main(base + ["--profile-loglik", "x0", "--points=-0.5,0,0.5", "--out", str(out), "--quiet"]) == 0
    by_cli = pd.read_csv(out)
    direct = riskset.profile_loglik(data, "cox", coef="x0", points=[-0.5, 0.0, 0.5])
    np.testing.assert_allclose(by_cli["value"], direct["value"], rtol=1e-10)
    assert cli.main(base + ["--profile-loglik", "x0", "--bounds=-1,1", "--out", str(out), "--quiet"]) == 0
    assert len(pd.read_csv(out)) > 10
    for extra, message in ((["--profile-loglik", "x0", "--out", str(out)], "needs --points A,B,... or --bounds"),
                           (["--profile-loglik", "x0", "--points", "0", "--out", str(tmp_path / "p.json")],
                            "--out FILE.csv"),
                           (["--points", "0,1"], "--points sets up --profile-loglik COEF"),
                           (["--profile-loglik", "x0", "--points", "0,a", "--out", str(out)], "--points 'a'"),
                           (["--profile-loglik", "x9", "--points", "0", "--out", str(out)], "x9")):
        assert cli.main(base + extra) == 2
        assert message in capsys.readouterr().err
