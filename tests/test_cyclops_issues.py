"""The known failure modes of Cyclops (its GitHub issues), as tests of riskset.

- #63: Poisson with three events, whose profile interval collapsed: checked against the
  closed-form profile likelihood of two groups.
- #76: profiling an ill-conditioned fit (two covariates 1e-7 and 1e-9 apart): checked
  against the same model in a well-conditioned parametrization.
- #49, #10: cross-validation of conditional logistic / Poisson regression and of Cox with
  tied times: folds keep a stratum whole, and every held-out score is the log-likelihood of
  the held-out rows at an independent fit of the training rows.
- #69: Cox on split (start, stop] intervals against coxph: tests/test_time_varying_r.py.
- #81: the intercept of a rare outcome under a strong L1 prior starts (and, at gamma_max,
  ends) at the outcome's rate.
"""
import numpy as np
import pandas as pd
import pytest
import scipy.sparse as sp
from scipy import optimize, stats

import riskset
from riskset import profile_likelihood
from riskset.data.dataset import Dataset
from riskset.models.base import as_model
from riskset.selection.folds import assign_folds

Z95 = stats.chi2.ppf(0.95, 1) / 2  # the profile deficit at a 95% bound


# -- #63: three events ------------------------------------------------------------------

def two_group_poisson(events, exposure):
    frame = pd.DataFrame({"exposure": [0, 1], "person_time": exposure, "outcomes": events})
    data = riskset.from_frame(frame, y="outcomes", exposure="person_time", covariates=["exposure"])
    return data


def closed_form_profile_bounds(events, exposure):
    """The 95% profile interval of the rate ratio's log, b, of two groups: with the intercept
    profiled out, l(b) = y1 b - Y log(E0 + E1 e^b) (+ a constant)."""
    (y0, y1), (e0, e1), total = events, exposure, sum(events)

    def loglik(b):
        return y1 * b - total * np.log(e0 + e1 * np.exp(b))

    if y0 == 0:  # the supremum, at b = +inf: -Y log E1
        top, b_hat = -total * np.log(e1), np.inf
    else:
        b_hat = np.log(y1 / e1) - np.log(y0 / e0)
        top = loglik(b_hat)

    def deficit(b):
        return top - loglik(b) - Z95

    lower = optimize.brentq(deficit, -40.0, b_hat if np.isfinite(b_hat) else 40.0, xtol=1e-14)
    upper = optimize.brentq(deficit, b_hat, 40.0, xtol=1e-14) if np.isfinite(b_hat) else np.inf
    return b_hat, lower, upper


@pytest.mark.parametrize("events", [(1, 2), (2, 1), (0, 3)])
def test_poisson_three_events_profile_interval_is_the_closed_form(events):
    exposure = (13775.0, 10115.0)
    b_hat, lower, upper = closed_form_profile_bounds(events, exposure)
    with pytest.warns(riskset.ConvergenceWarning) if events[0] == 0 else _no_warning():
        fit = riskset.fit(two_group_poisson(events, exposure), "poisson", profile=["exposure"])
    row = fit.intervals.iloc[0]
    assert row["lower"] == pytest.approx(lower, rel=1e-7)
    if np.isfinite(b_hat):
        assert fit.converged and fit.coef["exposure"] == pytest.approx(b_hat, rel=1e-8)
        assert row["upper"] == pytest.approx(upper, rel=1e-7)
        assert row["lower"] < b_hat < row["upper"]  # not collapsed onto the estimate
    else:  # every event in the exposed group: no estimate, the upper bound is infinite, said so
        assert fit.status == "estimate_does_not_exist" and fit.diverging == {"exposure": 1}
        assert row["upper"] == np.inf and "upper bound infinite" in row["note"]


class _no_warning:
    def __enter__(self):
        import warnings

        self._catch = warnings.catch_warnings()
        self._catch.__enter__()
        warnings.simplefilter("error", riskset.ConvergenceWarning)

    def __exit__(self, *exc):
        return self._catch.__exit__(*exc)


# -- #76: profiling an ill-conditioned fit ------------------------------------------------

def _logistic(columns, names, profile):
    rng = np.random.default_rng(7)
    n = 300
    trt, x1 = rng.binomial(1, 0.5, n).astype(float), rng.normal(size=n)
    y = (rng.random(n) < 1 / (1 + np.exp(1.0 - 0.5 * trt - 0.3 * x1))).astype(float)
    x2 = x1 + 1e-7 * rng.normal(size=n)
    named = {"trt": trt, "x1": x1, "x2": x2, "D": (x2 - x1) * 1e7}  # x2 - x1 is exact (Sterbenz)
    data = riskset.from_arrays(np.column_stack([named[c] for c in columns]), y=y, covariate_names=names)
    return riskset.fit(data, "logistic", profile=profile)


def bounds(fit, name):
    return fit.intervals.set_index("name").loc[name, ["lower", "upper"]].to_numpy(dtype=float)


def test_profile_of_nearly_collinear_logistic_matches_a_well_conditioned_parametrization():
    """x2 = x1 + 1e-7 z: b1 x1 + b2 x2 = (b1 + b2) x1 + b2 (x2 - x1), so b2's interval is
    1e7 times that of D = 1e7 (x2 - x1) beside x1, and b1's is -1e7 times D's beside x2.
    Cyclops' and riskset's former searches found intervals of width 0 here."""
    fit = _logistic(["trt", "x1", "x2"], ["trt", "x1", "x2"], ["trt", "x1", "x2"])
    with_x1 = _logistic(["trt", "x1", "D"], ["trt", "x1", "D"], ["trt", "D"])
    with_x2 = _logistic(["trt", "x2", "D"], ["trt", "x2", "D"], ["D"])
    assert fit.converged and fit.loglik == pytest.approx(with_x1.loglik, rel=1e-10)
    assert fit.coef["x2"] == pytest.approx(1e7 * with_x1.coef["D"], rel=1e-6)
    np.testing.assert_allclose(bounds(fit, "x2"), 1e7 * bounds(with_x1, "D"), rtol=1e-7)
    np.testing.assert_allclose(bounds(fit, "x1"), -1e7 * bounds(with_x2, "D")[::-1], rtol=1e-7)
    np.testing.assert_allclose(bounds(fit, "trt"), bounds(with_x1, "trt"), rtol=1e-7)
    assert np.diff(bounds(fit, "x2"))[0] > 1e6  # wide, as the standard error (about 1.3e6)
    assert (fit.intervals["evaluations"] <= 16).all()  # each search moves along the profile


@pytest.mark.parametrize("gap, rtol", [(1e-7, 1e-8), (1e-9, 1e-5)])
def test_profile_of_nearly_collinear_cox_matches_a_well_conditioned_parametrization(gap, rtol):
    """a2 = a + gap z. At gap 1e-9 the information along a2 - a is below double precision
    (its pivot 1e-18 of I_aa): the fit settles along it by the likelihood itself; the
    tolerance is that of the settling (a relative log-likelihood change of 1e-8)."""
    base = riskset.simulate(n=200, p=3, model="cox", seed=3, density=0.5)
    X = base.X.toarray()
    a2 = X[:, 0] + gap * np.random.default_rng(11).normal(size=200)
    D = (a2 - X[:, 0]) / gap

    def cox(columns, names, profile):
        data = Dataset(X=sp.csc_matrix(np.column_stack(columns)), covariate_names=names, row_ids=base.row_ids,
                       time=base.time, status=base.status)
        return riskset.fit(data, "cox", profile=profile)

    fit = cox([X, a2], ["a", "b", "c", "a2"], ["a", "a2", "b"])
    with_a = cox([X, D], ["a", "b", "c", "D"], ["D", "b"])
    with_a2 = cox([a2, X[:, 1:], D], ["a2", "b", "c", "D"], ["D"])
    assert fit.converged and not fit.aliased
    assert fit.loglik == pytest.approx(with_a.loglik, rel=1e-9)
    assert fit.coef["b"] == pytest.approx(with_a.coef["b"], rel=1e-5)
    np.testing.assert_allclose(bounds(fit, "a2"), bounds(with_a, "D") / gap, rtol=rtol)
    np.testing.assert_allclose(bounds(fit, "a"), -bounds(with_a2, "D")[::-1] / gap, rtol=rtol)
    np.testing.assert_allclose(bounds(fit, "b"), bounds(with_a, "b"), rtol=rtol)


def test_a_profile_bound_whose_fit_does_not_converge_is_nan_and_says_where(monkeypatch):
    """A bound found from fits that are not at their optimum is a wrong number: refused."""
    data = riskset.simulate(n=300, p=3, model="logistic", seed=4)
    real = profile_likelihood.fit_replicates
    calls = []

    def second_fit_fails(batch, *args, **kwargs):
        out = real(batch, *args, **kwargs)
        calls.append(1)
        if len(calls) == 2:
            out.converged[:] = False
            out.messages[:] = ["no convergence after 1000 cycles"] * len(out.messages)
        return out

    monkeypatch.setattr(profile_likelihood, "fit_replicates", second_fit_fails)
    fit = riskset.fit(data, "logistic", profile=["x0"])
    row = fit.intervals.iloc[0]
    assert np.isnan(row["lower"]) and np.isnan(row["upper"])
    assert "did not converge" in row["note"] and "x0 = " in row["note"]


# -- #49, #10: cross-validation of conditional models and of Cox with ties ----------------

def matched_sets(model, n_sets=60, seed=1):
    rng = np.random.default_rng(seed)
    sizes = rng.integers(2, 6, n_sets)
    strata = np.repeat(np.arange(n_sets), sizes)
    n = strata.size
    X = rng.normal(size=(n, 4)) * (rng.random((n, 4)) < 0.5)
    eta = X @ np.array([1.0, -0.5, 0.0, 0.0])
    if model == "conditional_logistic":  # one case per matched set
        y = np.zeros(n)
        first = np.cumsum(sizes) - sizes
        for s in range(n_sets):
            p = np.exp(eta[first[s]:first[s] + sizes[s]])
            y[first[s] + rng.choice(sizes[s], p=p / p.sum())] = 1.0
        offset = None
    else:  # counts over person-time
        time = rng.uniform(0.5, 2.0, n)
        y = rng.poisson(time * np.exp(eta + 0.7)).astype(float)
        offset = np.log(time)
    return Dataset(X=sp.csc_matrix(X), covariate_names=[f"x{j}" for j in range(4)], row_ids=np.arange(n), y=y,
                   strata=strata, offset=offset)


def tied_cox(seed=5):
    base = riskset.simulate(n=240, p=6, model="cox", seed=seed, density=0.5, fraction_nonzero=0.5)
    time = np.ceil(np.asarray(base.time) / np.quantile(base.time, 0.1))  # about 50 distinct times
    return Dataset(X=base.X, covariate_names=base.covariate_names, row_ids=base.row_ids, time=time,
                   status=base.status)


def held_out_scores(data, model, cv, folds, options):
    """Each row's score recomputed: a fit of the training rows at its variance, and the
    log-likelihood of the held-out rows (a dataset of their own) at it."""
    out = []
    for row in cv.scores.itertuples():
        train, held = data.subset(folds != row.fold), data.subset(folds == row.fold)
        fit = riskset.fit(train, model, riskset.Laplace(variance=row.variance), tol=1e-12, **options)
        datafit = as_model(model, **options).datafit(held)
        out.append(datafit.loglik(datafit.new_state(fit.coef.to_numpy())))
    return np.array(out)


@pytest.mark.parametrize("model, data, options", [
    ("conditional_logistic", matched_sets("conditional_logistic"), {}),
    ("conditional_poisson", matched_sets("conditional_poisson"), {}),
    ("cox", tied_cox(), {"ties": "breslow"}),
    ("cox", tied_cox(), {"ties": "efron"}),
], ids=["conditional-logistic", "conditional-poisson", "cox-breslow-ties", "cox-efron-ties"])
def test_cross_validation_scores_are_held_out_logliks_of_independent_fits(model, data, options):
    cv = riskset.cross_validate(data, model, riskset.Laplace(gamma=1.0), n_folds=4, n_grid=4, progress=False,
                                seed=3, tol=1e-12, **options)
    folds = assign_folds(data, 4, 1, 3, as_model(model, **options))[0]
    if data.strata is not None:  # a matched set is never split between folds
        assert all(np.unique(folds[data.strata == s]).size == 1 for s in np.unique(data.strata))
    assert cv.scores["converged"].all() and len(cv.scores) == 16
    np.testing.assert_allclose(cv.scores["score"].to_numpy(), held_out_scores(data, model, cv, folds, options),
                               rtol=1e-7)
    again = riskset.cross_validate(data, model, riskset.Laplace(gamma=1.0), n_folds=4, n_grid=4, progress=False,
                                   seed=3, tol=1e-12, **options)
    pd.testing.assert_frame_equal(again.scores, cv.scores)
    assert cv.selected_variance == cv.summary.loc[cv.summary["mean"].idxmax(), "variance"]


# -- #81: the intercept of a rare outcome ------------------------------------------------

def rare_outcome(seed=2, n=20000, rate=0.002):
    rng = np.random.default_rng(seed)
    X = sp.random(n, 50, density=0.05, random_state=seed, format="csc", data_rvs=lambda k: np.ones(k))
    y = (rng.random(n) < rate * np.exp(0.8 * X[:, 0].toarray().ravel())).astype(float)
    return X, y


def test_rare_outcome_under_a_strong_l1_prior_keeps_the_intercept_at_the_outcome_rate():
    X, y = rare_outcome()
    data = riskset.from_arrays(X, y=y)
    gamma_max = riskset.fit(data, "logistic", riskset.Laplace(gamma=1e6)).gamma_max
    at_max = riskset.fit(data, "logistic", riskset.Laplace(gamma=gamma_max * 1.0001))
    assert at_max.converged and (at_max.coef.drop("intercept") == 0).all()
    assert at_max.coef["intercept"] == pytest.approx(np.log(y.mean() / (1 - y.mean())), rel=1e-10)
    below = riskset.fit(data, "logistic", riskset.Laplace(gamma=gamma_max * 0.7), kkt_tol=1e-6)
    assert below.converged and below.kkt <= 1e-6
    assert 0 < (below.coef.drop("intercept") != 0).sum() < 10


def test_rare_count_under_a_strong_l1_prior_starts_the_intercept_at_the_rate_per_person_time():
    X, y = rare_outcome(seed=3)
    time = np.random.default_rng(3).uniform(0.5, 3.0, y.size)
    data = riskset.from_arrays(X, y=y, offset=np.log(time))
    gamma_max = riskset.fit(data, "poisson", riskset.Laplace(gamma=1e6)).gamma_max
    at_max = riskset.fit(data, "poisson", riskset.Laplace(gamma=gamma_max * 1.0001))
    assert at_max.converged and (at_max.coef.drop("intercept") == 0).all()
    assert at_max.coef["intercept"] == pytest.approx(np.log(y.sum() / time.sum()), rel=1e-10)
