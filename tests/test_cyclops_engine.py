"""What OHDSI's study packages call on Cyclops, against Cyclops 3.7.0 itself.

The data (400 rows, simulated in R) and Cyclops' results are in tests/reference/cyclops_engine/
(``make.R`` made them: ``Rscript tests/reference/cyclops_engine/make.R``; Cyclops built from
source, R 4.2.2, tolerance 1e-12 in Cyclops' control). Every comparison is to 1e-8 relative
(both sides fit to 1e-12 or tighter), with these conventions written down:

- ``includePenalty = TRUE`` adds the prior's log density with its normalizing constants
  (Laplace: log(gamma / 2) per penalized coefficient); riskset's penalized log-likelihood is
  ``fit.objective``, without them: a constant apart.
- Without the penalty, Cyclops' derivative is the partial derivative of the log-likelihood in
  the held coefficient; riskset's is the derivative of the profile it returns (the same where
  the other coefficients are unpenalized; checked by differences in test_profile_loglik.py).
- Cyclops' conditional Poisson log-likelihood includes -log(y!), riskset's does not (its
  Poisson likewise; Cyclops' plain Poisson omits it): a constant apart.
- Cyclops' predictive log-likelihood of a logistic model sums y log p over the held-out rows
  (its y = 0 rows add nothing); riskset's is the Bernoulli log-likelihood of those rows. Cox
  agrees exactly.
"""
import numpy as np
import pandas as pd
import pytest
from scipy.special import gammaln

import riskset

POINTS = [-0.5, 0.0, 0.25, 0.5, 1.0]
RTOL = 1e-8


@pytest.fixture(scope="module")
def rows():
    from conftest import reference_dir

    return pd.read_csv(reference_dir() / "cyclops_engine" / "data.csv")


@pytest.fixture(scope="module")
def cyclops():
    from conftest import reference_dir

    lines = (reference_dir() / "cyclops_engine" / "cyclops.txt").read_text().splitlines()
    return {line.split()[0]: np.array([float(v) for v in line.split()[1:]]) for line in lines}


def test_poisson_profile_with_derivatives(rows, cyclops):
    data = riskset.from_frame(rows, y="count", exposure="ptime", covariates=["x1", "x2", "x3"])
    fit = riskset.fit(data, "poisson", tol=1e-13)
    np.testing.assert_allclose(fit.coef, cyclops["poisson.coef"], rtol=RTOL)
    assert fit.loglik == pytest.approx(cyclops["poisson.loglik"][0], rel=1e-12)
    prof = riskset.profile_loglik(data, "poisson", coef="x1", points=POINTS, fit_tol=1e-13)
    np.testing.assert_allclose(prof["value"], cyclops["poisson.profile.value"], rtol=1e-12)
    np.testing.assert_allclose(prof["derivative"], cyclops["poisson.profile.derivative"], rtol=RTOL)


@pytest.mark.parametrize("coef", ["x1", "x2"])
@pytest.mark.parametrize("include_penalty", [True, False])
def test_cox_profile_under_a_laplace_prior(rows, cyclops, coef, include_penalty):
    data = riskset.from_frame(rows, time="time", status="status", covariates=["x1", "x2", "x3", "x4"])
    prior = riskset.Laplace(variance=0.1, exclude=["x1"])
    fit = riskset.fit(data, "cox", prior, tol=1e-13)
    np.testing.assert_allclose(fit.coef, cyclops["cox.coef"], rtol=RTOL, atol=1e-12)
    prof = riskset.profile_loglik(data, "cox", prior, coef=coef, points=POINTS, include_penalty=include_penalty,
                                  fit_tol=1e-13)
    log_normalizers = 3 * np.log(np.sqrt(2 / 0.1) / 2) if include_penalty else 0.0  # x2, x3, x4
    key = f"cox.{coef}.penalty{int(include_penalty)}"
    np.testing.assert_allclose(prof["value"] + log_normalizers, cyclops[f"{key}.value"], rtol=1e-12)
    if coef == "x1" and include_penalty:  # x1 unpenalized: both are the partial derivative (envelope theorem)
        np.testing.assert_allclose(prof["derivative"], cyclops["cox.x1.penalty1.derivative"], rtol=1e-7,
                                   atol=1e-9)


def test_cox_adaptive_grid_is_cyclops(rows, cyclops):
    data = riskset.from_frame(rows, time="time", status="status", covariates=["x1", "x2", "x3", "x4"])
    prof = riskset.profile_loglik(data, "cox", riskset.Laplace(variance=0.1, exclude=["x1"]), coef="x1",
                                  bounds=(np.log(0.1), np.log(10)), fit_tol=1e-13)
    np.testing.assert_allclose(prof["point"], cyclops["cox.adaptive.point"], rtol=1e-9, atol=1e-12)
    log_normalizers = 3 * np.log(np.sqrt(2 / 0.1) / 2)
    np.testing.assert_allclose(prof["value"] + log_normalizers, cyclops["cox.adaptive.value"], rtol=1e-12)


@pytest.mark.filterwarnings("ignore::riskset.DataWarning")
def test_conditional_poisson_profile(rows, cyclops):
    data = riskset.from_frame(rows, y="count", exposure="ptime", strata="stratum", covariates=["x1", "x2"])
    fit = riskset.fit(data, "conditional_poisson", tol=1e-13)
    np.testing.assert_allclose(fit.coef, cyclops["cpr.coef"], rtol=RTOL)
    prof = riskset.profile_loglik(data, "conditional_poisson", coef="x1", points=POINTS, fit_tol=1e-13)
    log_factorials = gammaln(rows["count"] + 1).sum()
    np.testing.assert_allclose(prof["value"] - log_factorials, cyclops["cpr.profile.value"], rtol=1e-12)
    np.testing.assert_allclose(prof["derivative"], cyclops["cpr.profile.derivative"], rtol=RTOL, atol=1e-10)


def test_fixed_coefficient_is_cyclops_fixed_coefficients(rows, cyclops):
    data = riskset.from_frame(rows, y="y", covariates=["x1", "x2", "x3", "x4"])
    fit = riskset.fit(data, "logistic", riskset.Normal(variance=1.0, exclude=["intercept"]), fixed={"x2": 0.25},
                      tol=1e-13)
    np.testing.assert_allclose(fit.coef, cyclops["fixed.coef"], rtol=RTOL)
    assert fit.loglik == pytest.approx(cyclops["fixed.loglik"][0], rel=1e-12)


def test_univariable_correlation_is_cyclops(rows, cyclops):
    data = riskset.from_frame(rows, y="y", covariates=["x1", "x2", "x3", "x4"])
    corr = riskset.univariable_correlation(data)
    np.testing.assert_allclose(corr, cyclops["correlation"][1:], rtol=1e-12)  # Cyclops: NaN for the intercept


@pytest.mark.parametrize("model", ["logistic", "cox"])
def test_predictive_loglik_of_held_out_rows(rows, cyclops, model):
    columns = dict(y="y") if model == "logistic" else dict(time="time", status="status")
    data = riskset.from_frame(rows, covariates=["x1", "x2", "x3", "x4"], **columns)
    held = np.arange(1, len(rows) + 1) % 4 == 0
    fit = riskset.fit(data.subset(~held), model, tol=1e-13)
    np.testing.assert_allclose(fit.coef, cyclops[f"predictive.{model}.coef"], rtol=RTOL, atol=1e-12)
    ours = riskset.loglik_at(data, model, fit, weights=held.astype(float))
    if model == "cox":
        assert ours == pytest.approx(cyclops["predictive.cox"][0], rel=1e-12)
    else:
        eta = fit.linear_predictor(data)
        y = rows["y"].to_numpy()
        assert ours == pytest.approx(np.sum(held * (y * eta - np.logaddexp(0, eta))), rel=1e-12)
        cyclops_part = np.sum(held * y * (eta - np.logaddexp(0, eta)))  # y log p alone
        assert cyclops_part == pytest.approx(cyclops["predictive.logistic"][0], rel=1e-10)
