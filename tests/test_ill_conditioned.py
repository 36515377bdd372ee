"""Fit what has an answer, diagnose what has none (issue #41, item 4): badly conditioned or
badly scaled designs whose estimate exists converge to it with finite standard errors, and
data that are separated get the separation diagnosis naming coefficients that do diverge.

Before: least squares on the Longley data and logistic fits whose linear predictor passed
709 somewhere ended "NOT CONVERGED ... the linear predictor or a fitted mean is not finite"
(exp(eta), which least squares never reads and a logistic mean of 1 does not need, had
overflowed), and the breast-cancer data were said to diverge along single covariates that
diverge only together with the others.
"""
import warnings

import numpy as np
import pandas as pd
import pytest
import statsmodels.api as sm
from scipy.optimize import linprog
from statsmodels.datasets import longley

import riskset
from riskset.exceptions import ConvergenceWarning
from riskset.models.base import get_model

# R 4.x, lm(TOTEMP ~ ., data = longley) on statsmodels' copy of the Longley data (identical to
# NIST StRD's certified values to all 15 digits shown there):
#   d <- read.csv("longley.csv")   # statsmodels.datasets.longley: exog + TOTEMP
#   f <- lm(TOTEMP ~ ., data = d); format(coef(summary(f))[, 1:2], digits = 17); summary(f)$sigma
LONGLEY_R = pd.DataFrame({
    "estimate": [-3.4822586345958239e+06, 1.5061872271374854e+01, -3.5819179292591416e-02, -2.0202298038168292e+00,
                 -1.0332268671735911e+00, -5.1104105653578563e-02, 1.8291514646135545e+03],
    "se": [8.9042038360736752e+05, 8.4914925774766743e+01, 3.3491007772242953e-02, 4.8839968165169567e-01,
           2.1427416316167378e-01, 2.2607320006936846e-01, 4.5547849914220939e+02],
}, index=["intercept", "GNPDEFL", "GNP", "UNEMP", "ARMED", "POP", "YEAR"])
LONGLEY_R_SIGMA = 304.85407356196333

# Tolerance of the Longley comparisons. The design (intercept, GNP ~ 4e5, YEAR ~ 1955) has
# condition number 4.9e9; with its columns scaled to unit norm (which neither R's QR nor
# riskset's Newton step depends on) 4.3e4, so the information X'X the standard errors invert has
# 1.9e9 and its inverse is good to ~ 1.9e9 x 2.2e-16 = 4e-7 relative: 1e-6 (measured: 3e-9 for
# the SEs, 7e-12 for the coefficients).
LONGLEY_RTOL = 1e-6


def test_longley_least_squares_matches_r_lm():
    d = longley.load_pandas()
    frame = d.exog.assign(TOTEMP=d.endog)
    fit = riskset.fit(riskset.from_frame(frame, y="TOTEMP"), "least_squares")
    assert fit.converged and fit.status == "converged"
    assert np.allclose(fit.coef[LONGLEY_R.index], LONGLEY_R["estimate"], rtol=LONGLEY_RTOL, atol=0)
    # riskset's least squares has unit variance (l = -RSS / 2): its SEs are sqrt(diag((X'X)^-1)),
    # R's those times sigma = sqrt(RSS / (n - p))
    n, p = len(frame), len(LONGLEY_R)
    sigma = np.sqrt(-2.0 * fit.loglik / (n - p))
    assert sigma == pytest.approx(LONGLEY_R_SIGMA, rel=LONGLEY_RTOL)
    assert np.all(np.isfinite(fit.se))
    assert np.allclose(fit.se[LONGLEY_R.index] * sigma, LONGLEY_R["se"], rtol=LONGLEY_RTOL, atol=0)
    # ... and the summary says so, with R's scale
    assert "with unit residual variance (Cyclops' convention); R's lm multiplies them by the residual " \
           f"standard error sqrt(RSS / (n - p)) = {LONGLEY_R_SIGMA:.6g}" in fit.summary()


def test_logistic_with_an_income_in_dollars_and_one_far_value_converges_to_the_mle():
    # eta = 2728 at the far row at the MLE: exp(eta) overflows, its mean is 1 and its
    # log-likelihood term finite; the MLE exists (the outcomes overlap) and statsmodels finds it
    rng = np.random.default_rng(7)
    n = 300
    income = rng.lognormal(np.log(5e4), 0.4, n)
    income[0] = 5e7
    age = rng.uniform(20, 80, n)
    y = (rng.random(n) < 1 / (1 + np.exp(-np.clip(-4 + 6e-5 * income + 0.01 * age, -50, 50)))).astype(float)
    y[0] = 1.0
    X = np.c_[income, age]
    fit = riskset.fit(riskset.from_arrays(X, y=y, covariate_names=["income", "age"]), "logistic")
    ref = sm.Logit(y, sm.add_constant(X)).fit(disp=0, method="newton", maxiter=100)
    assert fit.converged and fit.status == "converged"
    assert (sm.add_constant(X) @ ref.params).max() > 709
    assert np.allclose(fit.coef.values, ref.params, rtol=1e-8, atol=0)
    assert np.allclose(fit.se.values, ref.bse, rtol=1e-6, atol=0)


@pytest.mark.parametrize("model", ["logistic", "poisson"])
def test_a_move_out_of_the_range_of_exp_and_back_leaves_the_state_of_a_fresh_one(model):
    # exp(eta) is updated by the factor exp(delta x): once it had overflowed to inf (or
    # underflowed to 0) no factor brought it back, and the row's mean stayed 1 (or 0)
    x = np.array([[1.0], [-1.0], [0.5], [-0.25]])
    datafit = get_model(model).datafit(riskset.from_arrays(x, y=np.array([1.0, 0.0, 1.0, 0.0])))
    state = datafit.new_state(np.array([0.0, 900.0]))  # eta = +-900, +450, -225
    datafit.move(state, 1, -899.5)  # eta = +-0.5, 0.25, -0.125
    fresh = datafit.new_state(np.array([0.0, 0.5]))
    assert np.allclose(state.rows, fresh.rows, rtol=1e-12, atol=0)
    assert datafit.loglik(state) == pytest.approx(datafit.loglik(fresh), rel=1e-12)


def _separates(X, y) -> bool:
    """Whether a hyperplane with an intercept separates the outcome strictly: an LP finds b
    with (2y - 1) (b0 + x b) >= 1 for every row (complete separation)."""
    Z = np.c_[np.ones(len(y)), X]
    margins = (2 * y - 1)[:, None] * Z
    lp = linprog(np.zeros(Z.shape[1]), A_ub=-margins, b_ub=-np.ones(len(y)), bounds=(None, None), method="highs")
    return lp.status == 0


def test_breast_cancer_logistic_is_diagnosed_as_separated_by_the_covariates_it_names():
    load_breast_cancer = pytest.importorskip("sklearn.datasets").load_breast_cancer
    cancer = load_breast_cancer(as_frame=True)
    frame = cancer.data.set_axis([c.replace(" ", "_") for c in cancer.data.columns], axis=1)
    X, y = frame.to_numpy(), cancer.target.to_numpy().astype(float)
    data = riskset.from_frame(frame.assign(y=y), y="y")
    # the truth: the 30 covariates separate the classes completely (no MLE; R's glm warns
    # "fitted probabilities numerically 0 or 1 occurred"), yet none does alone
    assert _separates(X, y)
    assert not riskset.separability(data, "logistic")["separable"].any()
    with pytest.warns(ConvergenceWarning, match="does not exist"):
        fit = riskset.fit(data, "logistic")
    assert fit.status == "estimate_does_not_exist" and not fit.converged
    assert "monotone likelihood, separation" in fit.message and "prior" in fit.message
    named = [c for c in fit.diverging if c != "intercept"]
    # the message names the first few diverging coefficients and counts the others
    shown = [c for c in fit.diverging if f"{c!r} -> " in fit.message]
    assert named and len(shown) == min(len(fit.diverging), 5)
    if len(fit.diverging) > 5:
        assert f"and {len(fit.diverging) - 5} more" in fit.message
    # what it names diverges: those covariates alone separate the classes (before, 22 single
    # covariates were named, which do not), and the coefficients it ended at do too
    assert _separates(frame[named].to_numpy(), y)
    eta = fit.coef["intercept"] + X @ fit.coef[frame.columns].to_numpy()
    assert np.all((2 * y - 1) * eta > 0)


def test_a_prior_makes_the_estimate_of_the_separated_data_exist():
    # the honest refusal has a way out: with a prior the estimate exists and the fit converges
    load_breast_cancer = pytest.importorskip("sklearn.datasets").load_breast_cancer
    cancer = load_breast_cancer(as_frame=True)
    data = riskset.from_arrays(cancer.data.to_numpy() / cancer.data.to_numpy().std(axis=0),
                               y=cancer.target.to_numpy().astype(float))
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        fit = riskset.fit(data, "logistic", riskset.Normal(variance=1.0))
    assert fit.converged and fit.diverging == {}


def _badly_scaled(seed=5, n=400):
    """Covariates of scale 1e5 (uncentred, ~2e5), 1e-3 and a calendar year ~1965, and their
    linear predictor."""
    rng = np.random.default_rng(seed)
    big = rng.normal(size=n) * 1e5 + 2e5
    small = rng.normal(size=n) * 1e-3
    year = 1950 + rng.integers(0, 30, n).astype(float)
    eta = -1 + 4e-6 * (big - 2e5) + 300 * small + 0.02 * (year - 1965)
    return rng, np.c_[big, small, year], eta


@pytest.mark.parametrize("model", ["logistic", "poisson", "least_squares"])
def test_glms_on_badly_scaled_covariates_match_statsmodels(model):
    rng, X, eta = _badly_scaled()
    y, family = {"logistic": ((rng.random(len(eta)) < 1 / (1 + np.exp(-eta))).astype(float), sm.families.Binomial()),
                 "poisson": (rng.poisson(np.exp(eta)).astype(float), sm.families.Poisson()),
                 "least_squares": (eta + rng.normal(size=len(eta)), sm.families.Gaussian())}[model]
    fit = riskset.fit(riskset.from_arrays(X, y=y), model)
    ref = sm.GLM(y, sm.add_constant(X), family=family).fit(scale=1.0)  # least squares: unit variance
    assert fit.converged
    assert np.allclose(fit.coef.values, ref.params, rtol=1e-8, atol=0)
    # statsmodels' IRLS stops at a deviance change of 1e-8: its weights, hence SEs, lag ~1e-7
    assert np.allclose(fit.se.values, ref.bse, rtol=1e-6, atol=0)


def test_cox_on_badly_scaled_covariates_matches_statsmodels():
    rng, X, eta = _badly_scaled()
    t = rng.exponential(np.exp(-eta))
    censor = rng.exponential(2 * np.median(t), len(t))
    time, status = np.minimum(t, censor), (t <= censor).astype(float)
    fit = riskset.fit(riskset.from_arrays(X, time=time, status=status), "cox", ties="efron")
    ref = sm.PHReg(time, X, status=status, ties="efron").fit()
    assert fit.converged
    assert np.allclose(fit.coef.values, ref.params, rtol=1e-7, atol=0)
    assert np.allclose(fit.se.values, ref.bse, rtol=1e-6, atol=0)
