"""Non-existence of the estimate (monotone likelihood, separation) for every family, the
univariable separability check, and fits that end on a non-finite state."""
import warnings

import numpy as np
import pytest

import riskset
from riskset.exceptions import ConvergenceWarning, DataWarning
from riskset.models.base import get_model
from riskset.core.replicates import ViewReplicates
from riskset.solver.ccd import SolverOptions, fit_ccd
from riskset.solver.replicates import fit_replicates

NAMES = ["treatment", "age"]
DOES_NOT_EXIST = "estimate_does_not_exist"


def survival_data(seed=3, n=80, **extra):
    """Survival rows where every event is among the treated (treatment in {0, 1})."""
    rng = np.random.default_rng(seed)
    treatment = (np.arange(n) % 3 == 0).astype(float)
    age = rng.normal(size=n)
    time = np.round(rng.exponential(5.0, n), extra.pop("decimals", 6)) + 0.5
    status = ((rng.random(n) < 0.6) & (treatment > 0)).astype(float)
    return treatment, age, time, status, rng


def fit_quietly(data, model, prior=None, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DataWarning)
        with pytest.warns(ConvergenceWarning, match="does not exist"):
            return riskset.fit(data, model, prior, **kwargs)


def assert_does_not_exist(fit, name="treatment", direction=1, also=None):
    assert fit.status == DOES_NOT_EXIST and not fit.converged
    assert fit.diverging == {name: direction, **(also or {})}
    assert f"{name!r} -> {'+' if direction > 0 else '-'}inf" in fit.message
    assert "prior" in fit.message
    row = fit.coef_table().set_index("name").loc[name]
    assert row["estimate"] == direction * np.inf and np.isnan(row["se"]) and "does not exist" in row["note"]


def assert_infinite_profile_bound(fit, name="treatment"):
    row = fit.intervals.set_index("name").loc[name]
    assert row["upper"] == np.inf and np.isfinite(row["lower"]) and "does not exist" in row["note"]


# -- one monotone-likelihood case per family ---------------------------------------------------------
def test_cox_all_events_among_the_treated():
    treatment, age, time, status, _ = survival_data()
    data = riskset.from_arrays(np.c_[treatment, age], time=time, status=status, covariate_names=NAMES)
    fit = fit_quietly(data, "cox", profile=["treatment", "age"])
    assert_does_not_exist(fit)
    assert "every event has the largest value of 'treatment' in its risk set" in fit.message
    assert_infinite_profile_bound(fit)
    age = fit.intervals.set_index("name").loc["age"]
    assert age["lower"] < fit.coef["age"] < age["upper"] and np.isfinite(fit.se["age"])
    # the JSON round trip keeps the status and the diverging coefficient
    back = riskset.FitResult.from_json(fit.to_json())
    assert back.status == DOES_NOT_EXIST and back.diverging == {"treatment": 1}
    assert "ESTIMATE DOES NOT EXIST" in fit.summary()


@pytest.mark.parametrize("variant", ["strata", "start_stop", "efron", "time_varying"])
def test_cox_variants(variant):
    treatment, age, time, status, rng = survival_data(decimals=0 if variant == "efron" else 6)
    arrays = dict(time=time, status=status)
    model = get_model("cox")
    if variant == "strata":
        arrays["strata"] = np.arange(time.size) % 2
    elif variant == "start_stop":
        arrays["start"] = time * rng.uniform(0.0, 0.5, time.size)
    elif variant == "efron":
        model = get_model("cox", ties="efron")
    else:
        model = get_model("cox", time_varying={"age": [float(np.median(time))]})
    data = riskset.from_arrays(np.c_[treatment, age], covariate_names=NAMES, **arrays)
    assert_does_not_exist(fit_quietly(data, model))


def test_cox_time_varying_coefficient_diverges_in_every_interval():
    treatment, age, time, status, _ = survival_data()
    data = riskset.from_arrays(np.c_[treatment, age], time=time, status=status, covariate_names=NAMES)
    fit = fit_quietly(data, get_model("cox", time_varying={"treatment": [5.0]}))
    assert fit.status == DOES_NOT_EXIST and fit.diverging == {"treatment(0,5]": 1, "treatment(5,inf)": 1}
    assert "'treatment(0,5]' -> +inf, 'treatment(5,inf)' -> +inf" in fit.message


def test_fine_gray_all_events_of_interest_among_the_treated():
    treatment, age, time, status, rng = survival_data()
    status = np.where((status == 0) & (rng.random(time.size) < 0.3), 2.0, status)  # competing events anywhere
    data = riskset.from_arrays(np.c_[treatment, age], time=time, status=status, covariate_names=NAMES)
    fit = fit_quietly(data, "fine_gray", profile=["treatment"])
    assert_does_not_exist(fit)
    assert_infinite_profile_bound(fit)


def matched_sets(rng, n_sets=15, size=4):
    """Strata of ``size`` rows; row 0 of each is the case, always treated."""
    strata = np.repeat(np.arange(n_sets), size)
    first = np.arange(strata.size) % size == 0
    treatment = np.where(first, 1.0, (rng.random(strata.size) < 0.4).astype(float))
    return strata, first.astype(float), np.c_[treatment, rng.normal(size=strata.size)]


@pytest.mark.parametrize("model", ["conditional_logistic", "conditional_poisson"])
def test_conditional_models(model):
    strata, y, X = matched_sets(np.random.default_rng(5))
    data = riskset.from_arrays(X, y=y, strata=strata, covariate_names=NAMES)
    fit = fit_quietly(data, model)
    assert_does_not_exist(fit)
    assert "separates the outcome within strata" in fit.message


def test_sccs_events_only_in_exposed_eras():
    rng = np.random.default_rng(7)
    strata, y, X = matched_sets(rng, n_sets=20, size=3)
    length = rng.integers(10, 100, y.size).astype(float)
    data = riskset.from_arrays(X, y=y, strata=strata, offset=np.log(length), covariate_names=NAMES)
    assert_does_not_exist(fit_quietly(data, "sccs"))


def test_pooled_logistic_all_events_among_the_treated():
    treatment, age, time, status, _ = survival_data()
    data = riskset.from_arrays(np.c_[treatment, age], time=time, status=status, covariate_names=NAMES)
    # no event among the untreated: their hazard -> 0 (intercept -> -inf) while the treated keep theirs
    fit = fit_quietly(data, "pooled_logistic", interval_width=2.0)
    assert_does_not_exist(fit, also={"intercept": -1})


def test_logistic_quasi_complete_separation():
    rng = np.random.default_rng(11)
    treatment = (np.arange(60) % 3 == 0).astype(float)
    y = np.where(treatment > 0, 1.0, (rng.random(60) < 0.3).astype(float))  # every treated row is a case
    data = riskset.from_arrays(np.c_[treatment, rng.normal(size=60)], y=y, covariate_names=NAMES)
    fit = fit_quietly(data, "logistic", profile=["treatment"])
    assert_does_not_exist(fit)
    assert "'treatment' separates the outcome" in fit.message
    assert_infinite_profile_bound(fit)


def test_poisson_no_events_among_the_treated():
    rng = np.random.default_rng(13)
    treatment = (np.arange(60) % 3 == 0).astype(float)
    y = np.where(treatment > 0, 0.0, rng.poisson(2.0, 60).astype(float))
    data = riskset.from_arrays(np.c_[treatment, rng.normal(size=60)], y=y, covariate_names=NAMES)
    fit = fit_quietly(data, "poisson")
    assert_does_not_exist(fit, direction=-1)
    assert "every event occurs at the smallest value of 'treatment'" in fit.message


# -- only unpenalized directions; no false alarms ----------------------------------------------------
def test_a_prior_on_the_separating_covariate_makes_the_estimate_exist():
    treatment, age, time, status, _ = survival_data()
    data = riskset.from_arrays(np.c_[treatment, age], time=time, status=status, covariate_names=NAMES)
    fit = riskset.fit(data, "cox", riskset.Normal(variance=1.0))
    assert fit.converged and fit.status == "converged" and fit.diverging == {}
    # excluding it from the prior brings the problem back
    assert_does_not_exist(fit_quietly(data, "cox", riskset.Normal(variance=1.0, exclude=["treatment"])))


def test_a_strong_finite_effect_on_a_rare_covariate_is_no_false_alarm():
    rng = np.random.default_rng(17)
    n = 1000
    rare = (rng.random(n) < 0.02).astype(float)
    y = (rng.random(n) < 1 / (1 + np.exp(-(-2.5 + 3.0 * rare)))).astype(float)
    assert 0 < y[rare > 0].mean() < 1  # both outcomes among the exposed: the MLE exists
    fit = riskset.fit(riskset.from_arrays(rare[:, None], y=y), "logistic")
    assert fit.status == "converged" and 2.0 < fit.coef["x0"] < 4.5 and fit.se["x0"] > 0.4


def test_a_large_linear_predictor_is_no_false_alarm():
    # rare Poisson rates: intercept ~ -9 makes every coefficient a candidate; none diverges
    rng = np.random.default_rng(19)
    x = rng.normal(size=(4000, 2))
    y = rng.poisson(np.exp(-3.0 + 2.0 * x[:, 0]) * 1e-2).astype(float)
    fit = riskset.fit(riskset.from_arrays(x, y=y), "poisson")
    assert fit.status == "converged" and abs(fit.coef["intercept"]) > 5


def test_strong_finite_cox_effect_is_no_false_alarm():
    treatment, age, time, status, rng = survival_data(n=400)
    status = np.where(treatment > 0, status, (rng.random(time.size) < 0.02).astype(float))  # a few untreated events
    data = riskset.from_arrays(np.c_[treatment, age], time=time, status=status, covariate_names=NAMES)
    fit = riskset.fit(data, "cox")
    assert fit.status == "converged" and fit.coef["treatment"] > 2.0


# -- the univariable check -----------------------------------------------------------------------------
def test_separability_table_names_the_separating_covariate():
    treatment, age, time, status, _ = survival_data()
    data = riskset.from_arrays(np.c_[treatment, age], time=time, status=status, covariate_names=NAMES)
    for model in ("cox", "fine_gray"):
        table = riskset.separability(data, model).set_index("name")
        assert table.loc["treatment", "direction"] == 1 and not table.loc["age", "separable"]


@pytest.mark.parametrize("intercept", [True, False])
def test_separability_of_glms(intercept):
    x = np.array([[-1.0, 0.0], [-0.5, 2.0], [0.0, 1.0], [1.0, 0.0], [2.0, 3.0], [3.0, -1.0]])
    y = np.array([0, 0, 0, 1, 1, 1.0])
    table = riskset.separability(riskset.from_arrays(x, y=y), "logistic", intercept=intercept).set_index("name")
    # x0 separates with a threshold c = 0.5 (the intercept) and at c = 0 (ties at 0 allowed) too
    assert table.loc["x0", "direction"] == 1 and table.loc["x1", "direction"] == 0
    counts = np.array([0, 0, 0, 2, 1, 3.0])
    table = riskset.separability(riskset.from_arrays(x, y=counts), "poisson", intercept=intercept).set_index("name")
    # events only where x0 >= 1: with an intercept nothing goes to +inf alone (no rows above the
    # largest value); without, eta = b x0 -> -inf needs every event at x0 <= 0: no separation either
    assert table["direction"].tolist() == [0] * len(table)
    none = riskset.separability(riskset.from_arrays(x, y=np.zeros(6)), "poisson", intercept=intercept)
    assert none.set_index("name").loc["x0", "direction"] == (0 if intercept else 0)
    if intercept:  # no event at all: the intercept alone goes to -inf
        assert none.set_index("name").loc["intercept", "direction"] == -1


# -- replicates follow the same rule -----------------------------------------------------------------------
def test_each_replicate_is_tested():
    treatment, age, time, status, _ = survival_data()
    datafit = get_model("cox").datafit(riskset.from_arrays(np.c_[treatment, age], time=time, status=status))
    l2 = np.array([[0.0, 0.0], [1.0, 1.0]])  # replicate 1 puts a prior on both
    res = fit_replicates(ViewReplicates([datafit, datafit]), np.zeros((2, 2)), l2)
    assert res.status == [DOES_NOT_EXIST, "converged"]
    assert res.diverging[0] == {0: 1} and not res.converged[0] and "#0" in res.messages[0]


# -- a non-finite state ends the fit ------------------------------------------------------------------------
def test_a_non_finite_start_ends_the_fit():
    x = np.array([[0.0], [1.0], [2.0]])
    data = riskset.from_arrays(x, y=np.array([0, 1, 1.0]), offset=np.array([0.0, 800.0, 0.0]))
    with pytest.warns(ConvergenceWarning, match="stopped at the start"):
        fit = riskset.fit(data, "poisson")
    assert fit.status == "not_converged"


@pytest.mark.parametrize("l1", [0.0, 5.0])  # 5.0: an L1 prior, so the restricted start (the intercept) fails
def test_a_non_finite_objective_during_the_cycles_ends_the_fit(l1):
    data = riskset.simulate(n=200, p=3, model="logistic", seed=1)
    datafit = get_model("logistic").datafit(data)
    calls = {"n": 0}
    loglik = datafit.loglik

    def failing(state):  # the log-likelihood turns NaN at the third evaluation
        calls["n"] += 1
        return loglik(state) if calls["n"] < 3 else np.nan

    datafit.loglik = failing
    datafit.unpenalized_start = lambda beta, coefs: None  # the intercept by cycles, not in closed form
    penalty = np.r_[0.0, np.full(3, l1)]
    res = fit_ccd(datafit, penalty, np.zeros(4), options=SolverOptions(polish_max_active=0))
    assert not res.converged and res.status == "not_converged"
    assert "stopped at cycle 2" in res.message and res.n_iter == 2  # no sweep after the non-finite objective
    assert np.isnan(res.objective)  # the objective it stopped at, not the last finite one
