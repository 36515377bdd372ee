"""Degenerate inputs (issue #13): ill-scaled covariates, likelihoods without information,
aliased (singular) coefficients. Each case gets a right answer or an error naming the
problem, never a "converged" wrong number."""
import re
import warnings

import numpy as np
import pandas as pd
import pytest
import scipy.sparse
import statsmodels.api as sm

import riskset
from riskset.exceptions import DataWarning, InputError


def _glm_data(n=200, seed=1):
    rng = np.random.default_rng(seed)
    a = rng.normal(size=n)
    b = rng.binomial(1, 0.5, n).astype(float)
    eta = 0.3 + 0.8 * a - 0.5 * b
    return rng, a, b, eta


def _family_data(model, X, seed=3):
    """A Dataset of ``model`` on covariates X (n rows), outcome simulated from a fixed seed."""
    rng = np.random.default_rng(seed)
    n = X.shape[0]
    if model == "logistic":
        return riskset.from_arrays(X, y=rng.binomial(1, 0.5, n).astype(float))
    if model == "cox":
        return riskset.from_arrays(X, time=rng.exponential(1.0, n), status=rng.binomial(1, 0.8, n))
    y = np.zeros(n)
    y[::3] = 1.0  # 1:2 matched sets
    return riskset.from_arrays(X, y=y, strata=np.repeat(np.arange(n // 3), 3))


# -- 2. ill-scaled covariates ---------------------------------------------------------------
MODELS = ["logistic", "cox", "conditional_logistic"]


@pytest.mark.parametrize("model", MODELS)
@pytest.mark.parametrize("bound", [1e100, 1e-100])
def test_column_scaled_to_the_accepted_bounds_fits_like_the_unscaled_column(model, bound):
    # up to the bounds the fit is exact (beta * s and se * s as unscaled); beyond them it is refused
    rng = np.random.default_rng(0)
    X = np.c_[rng.normal(size=300), rng.binomial(1, 0.4, 300)]
    scale = bound / np.abs(X[:, 0]).max()  # the largest |value| at the bound
    ref = riskset.fit(_family_data(model, X), model)
    scaled = riskset.fit(_family_data(model, X * [scale, 1.0]), model)
    assert scaled.converged
    assert scaled.coef["x0"] * scale == pytest.approx(ref.coef["x0"], rel=1e-8)
    assert scaled.se["x0"] * scale == pytest.approx(ref.se["x0"], rel=1e-8)
    assert scaled.loglik == pytest.approx(ref.loglik, rel=1e-10)


@pytest.mark.parametrize("value", [1e155, -1e200, 2e100])
def test_huge_covariate_value_is_refused_naming_covariate_row_and_value(value):
    # before: the coefficient was set to exactly 0 and the fit reported converged
    X = np.random.default_rng(0).normal(size=(50, 2))
    X[7, 1] = value
    shown = re.escape(f"{value:g}")
    with pytest.raises(InputError, match=rf"covariate 'x1' has the value {shown} at row 7.*[Rr]escale"):
        riskset.from_arrays(X, y=np.r_[np.zeros(25), np.ones(25)])


def test_column_of_tiny_values_is_refused_but_one_tiny_value_is_not():
    X = np.random.default_rng(0).normal(size=(50, 2))
    y = np.r_[np.zeros(25), np.ones(25)]
    with pytest.raises(InputError, match=r"covariate 'x0' has no value larger than 1e-100.*[Rr]escale"):
        riskset.from_arrays(X * [1e-200, 1.0], y=y)
    X[3, 0] = 1e-200  # a tiny value in an ordinary column is harmless
    assert riskset.fit(riskset.from_arrays(X, y=y), "logistic").converged


# -- 3. no information ----------------------------------------------------------------------
N = 60
_rng = np.random.default_rng(0)
_X = _rng.normal(size=(N, 2))
_time = _rng.exponential(1.0, N)
_status = _rng.binomial(1, 0.7, N)
_code = _rng.integers(0, 3, N)
_pairs = np.repeat(np.arange(N // 2), 2)

NO_INFORMATION = {
    "logistic, all weights 0": (
        "logistic", dict(y=_rng.binomial(1, 0.5, N).astype(float), weights=np.zeros(N)), {},
        r"no row has a positive weight \(60 rows\)"),
    "poisson, all weights 0": (
        "poisson", dict(y=np.ones(N), weights=np.zeros(N)), {}, "no row has a positive weight"),
    "cox, zero weight on every event": (
        "cox", dict(time=_time, status=_status, weights=1.0 - _status), {}, r"no event has a positive weight"),
    "cox, every row its own stratum": (
        "cox", dict(time=_time, status=_status, strata=np.arange(N)), {},
        rf"all {_status.sum()} strata with an event have a single row"),
    "cox, start-stop events alone in their risk sets": (
        "cox", dict(time=np.arange(1.0, N + 1), start=np.arange(0.0, N), status=np.ones(N, int)), {},
        "no event has another row of positive weight in its risk set"),
    "fine-gray, zero weight on every event of interest": (
        "fine_gray", dict(time=_time, status=_code, weights=(_code != 1).astype(float)), {},
        "no event of interest has a positive weight"),
    "conditional logistic, all weights 0": (
        "conditional_logistic", dict(y=np.tile([1.0, 0.0], N // 2), strata=_pairs, weights=np.zeros(N)), {},
        r"no stratum has a positive weight \(30 strata\)"),
    "sccs, one era per case": (
        "sccs", dict(y=np.ones(N), strata=np.arange(N), offset=np.zeros(N)), {},
        "all 60 strata of positive weight with an event have a single row"),
    "pooled logistic, zero weight on every event": (
        "pooled_logistic", dict(time=_time, status=_status, weights=1.0 - _status), dict(interval_width=0.5),
        r"no subject with an event has a positive weight"),
    "pooled logistic, all weights 0": (
        "pooled_logistic", dict(time=_time, status=_status, weights=np.zeros(N)), dict(interval_width=0.5),
        r"no subject has a positive weight"),
}


@pytest.mark.parametrize("case", list(NO_INFORMATION))
def test_likelihood_without_information_is_refused(case):
    # before: a "converged" fit (log-likelihood 0, all-zero coefficients)
    model, outcome, options, message = NO_INFORMATION[case]
    data = riskset.from_arrays(_X, **outcome)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DataWarning)
        with pytest.raises(InputError, match=rf"the {model} model cannot be fitted: {message}"):
            riskset.fit(data, model, **options)


def test_informative_strata_are_accepted():
    data = riskset.from_arrays(_X, time=_time, status=_status, strata=_pairs)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DataWarning)
        assert riskset.fit(data, "cox").converged


def test_cross_validation_refuses_all_zero_weights():
    # before: cross_validate selected a variance (2.0) from fits of nothing
    data = riskset.from_arrays(_X, y=_rng.binomial(1, 0.5, N).astype(float), weights=np.zeros(N))
    with pytest.raises(InputError, match="no row has a positive weight"):
        riskset.cross_validate(data, "logistic", riskset.Normal(variance=1.0), n_folds=3, n_grid=3, progress=False)


def test_cross_validation_refuses_a_training_fold_without_an_event():
    status = np.zeros(N, int)
    status[3] = 1  # one event: the training set without its fold has none
    data = riskset.from_arrays(_X, time=_time, status=status)
    with pytest.raises(InputError, match=r"training set without fold \d of 2 .*1 resampling unit\(s\) with an event"
                                         r".*use fewer folds"):
        riskset.cross_validate(data, "cox", riskset.Normal(variance=1.0), n_folds=2, n_grid=3, progress=False)


def test_bootstrap_marks_draws_without_an_event():
    status = np.zeros(N, int)
    status[[3, 17]] = 1  # two events: some draws hold neither
    data = riskset.from_arrays(_X, time=_time, status=status)
    with pytest.warns(DataWarning, match=r"bootstrap draws carry no information"):
        boot = riskset.bootstrap(data, "cox", riskset.Normal(variance=1.0), n_boot=30, progress=False)
    assert boot.uninformative.size > 0
    assert boot.estimates.iloc[boot.uninformative].isna().all(axis=None)
    others = boot.estimates.drop(index=boot.uninformative)
    assert others.notna().all(axis=None) and (others != 0).all(axis=None)
    assert np.isfinite(boot.table[["lower", "upper", "nonzero_proportion"]].to_numpy()).all()
    assert (boot.table["nonzero_proportion"] == 1.0).all()


# -- 9. singular information: aliased coefficients -------------------------------------------
def test_aliased_coefficients_in_column_order():
    from riskset.inference import aliased_coefficients

    x = np.random.default_rng(0).normal(size=(30, 3))
    X = np.c_[x, x[:, 0] + 2 * x[:, 2], np.zeros(30), x[:, 1]]  # 3 = 0 + 2*2, 4 has no information, 5 = 1
    assert aliased_coefficients(X.T @ X).tolist() == [False, False, False, True, True, True]
    assert aliased_coefficients(x.T @ x).tolist() == [False] * 3


def _fit_quietly(data, model, **kw):
    with pytest.warns(DataWarning, match="not defined because of singularities"):
        return riskset.fit(data, model, **kw)


def test_logistic_with_constant_and_duplicated_columns_matches_statsmodels_without_them():
    # before: every standard error was NaN
    rng, a, b, eta = _glm_data()
    y = (rng.random(a.size) < 1 / (1 + np.exp(-eta))).astype(float)
    data = riskset.from_arrays(np.c_[a, np.full(a.size, 2.0), b, 2 * a], y=y,
                               covariate_names=["a", "const", "b", "a2"])
    fit = _fit_quietly(data, "logistic")
    ref = sm.GLM(y, sm.add_constant(np.c_[a, b]), family=sm.families.Binomial()).fit()
    assert fit.aliased == ["const", "a2"]
    kept = ["intercept", "a", "b"]
    np.testing.assert_allclose(fit.coef[kept], ref.params, rtol=1e-7)
    np.testing.assert_allclose(fit.se[kept], ref.bse, rtol=1e-6)
    table = fit.coef_table().set_index("name")
    assert table.loc[["const", "a2"], ["estimate", "se", "odds_ratio"]].isna().all(axis=None)
    assert table["aliased"].tolist() == [False, False, True, False, True]
    np.testing.assert_allclose(fit.predict(data, "probability"), ref.fittedvalues, rtol=1e-7)
    assert riskset.FitResult.from_json(fit.to_json()).aliased == ["const", "a2"]


def test_poisson_with_duplicated_column_matches_statsmodels_without_it():
    rng, a, b, eta = _glm_data(seed=2)
    y = rng.poisson(np.exp(eta)).astype(float)
    data = riskset.from_arrays(np.c_[a, b, a], y=y, covariate_names=["a", "b", "a_again"])
    fit = _fit_quietly(data, "poisson", profile=["a", "a_again"])
    ref = sm.GLM(y, sm.add_constant(np.c_[a, b]), family=sm.families.Poisson()).fit()
    assert fit.aliased == ["a_again"]
    np.testing.assert_allclose(fit.coef[["intercept", "a", "b"]], ref.params, rtol=1e-7)
    np.testing.assert_allclose(fit.se[["intercept", "a", "b"]], ref.bse, rtol=1e-6)
    intervals = fit.intervals.set_index("name")
    lower, upper = intervals.loc["a", ["lower", "upper"]]  # the profile holds the aliased column at 0
    assert ref.params[1] - 3 * ref.bse[1] < lower < ref.params[1] < upper < ref.params[1] + 3 * ref.bse[1]
    assert intervals.loc["a_again", ["lower", "upper"]].isna().all()  # no interval, as R's NA


def test_cox_with_a_linear_combination_matches_statsmodels_without_it():
    rng, a, b, eta = _glm_data(seed=3)
    time = rng.exponential(np.exp(-eta))
    status = rng.binomial(1, 0.7, a.size)
    data = riskset.from_arrays(np.c_[a, b, a - 3 * b], time=time, status=status, covariate_names=["a", "b", "a_3b"])
    fit = _fit_quietly(data, "cox")
    ref = sm.PHReg(time, np.c_[a, b], status=status, ties="breslow").fit()
    assert fit.aliased == ["a_3b"]
    np.testing.assert_allclose(fit.coef[["a", "b"]], ref.params, rtol=1e-7)
    np.testing.assert_allclose(fit.se[["a", "b"]], ref.bse, rtol=1e-6)
    assert np.isnan(fit.coef_table().set_index("name").loc["a_3b", "estimate"])


def test_full_rank_fit_has_no_aliased_coefficients():
    rng, a, b, eta = _glm_data()
    y = (rng.random(a.size) < 1 / (1 + np.exp(-eta))).astype(float)
    with warnings.catch_warnings():
        warnings.simplefilter("error", DataWarning)
        fit = riskset.fit(riskset.from_arrays(np.c_[a, b], y=y), "logistic")
    assert fit.aliased == [] and not fit.coef_table()["aliased"].any() and fit.se.notna().all()


@pytest.mark.parametrize("warm_start", [None, {"a": 0.1, "person": -106.5}], ids=["cold", "warm"])
@pytest.mark.parametrize("model", ["conditional_poisson", "conditional_logistic", "cox"])
def test_covariate_constant_within_every_stratum_is_aliased(model, warm_start):
    # before: conditional models gave it an estimate with a standard error of ~4e6 (a rounding residue);
    # from the warm start (weights spanning e^+-300 across strata) stratified Cox reported "converged",
    # person = -106.5 with SE 0.155: the strata of large weights had Q2 = d / D^2 underflow to 0
    rng = np.random.default_rng(0)
    strata = np.repeat(np.arange(100), 3)
    a, person = rng.normal(size=300), rng.normal(size=100)[strata]
    outcome = {"conditional_poisson": dict(y=rng.poisson(np.exp(0.5 * a)).astype(float)),
               "conditional_logistic": dict(y=np.tile([1.0, 0.0, 0.0], 100)),
               "cox": dict(time=rng.exponential(1.0, 300), status=rng.binomial(1, 0.8, 300))}[model]
    data = riskset.from_arrays(np.c_[a, person], strata=strata, covariate_names=["a", "person"], **outcome)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DataWarning)
        fit = riskset.fit(data, model, warm_start=warm_start)
        without = riskset.fit(data.select(["a"]), model)
    assert fit.converged and fit.aliased == ["person"] and np.isnan(fit.se["person"])
    assert fit.coef["a"] == pytest.approx(without.coef["a"], rel=1e-9)
    assert fit.se["a"] == pytest.approx(without.se["a"], rel=1e-9)


def _year_data(model, strata=False, start=False, seed=1):
    """Survival data with a calendar year (1950-2000, log hazard ratio 0.2 per year) beside a
    standard normal covariate: a linear predictor of ~400 unless the year is centered."""
    rng = np.random.default_rng(seed)
    n = 600
    year, z = 1950 + rng.uniform(0, 50, n), rng.normal(size=n)
    time = np.round(rng.exponential(np.exp(-(0.2 * (year - 1975) + 0.5 * z))), 2) + 0.01  # tied times
    status = rng.binomial(1, 0.8, n)
    if model == "fine_gray":
        status = status * rng.integers(1, 3, n)  # 1: the event of interest, 2: competing
    outcome = dict(time=time, status=status)
    if strata:
        outcome["strata"] = np.arange(n) % 4
    if start:  # every third row split at half its time into two (start, stop] pieces: the same likelihood
        cut = np.flatnonzero(np.arange(n) % 3 == 0)
        year, z = np.r_[year, year[cut]], np.r_[z, z[cut]]
        outcome = dict(start=np.r_[np.zeros(n), time[cut] / 2], time=np.r_[np.where(np.arange(n) % 3 == 0, time / 2,
                       time), time[cut]], status=np.r_[np.where(np.arange(n) % 3 == 0, 0, status), status[cut]])
    return year, z, outcome


@pytest.mark.parametrize("case", [dict(model="cox"), dict(model="cox", ties="efron"), dict(model="cox", strata=True),
                                  dict(model="cox", start=True), dict(model="cox", formulation="scan"),
                                  dict(model="fine_gray")],
                         ids=["breslow", "efron", "strata", "start_stop", "scan", "fine_gray"])
def test_uncentered_covariate_fits_like_the_centered_one(case):
    # The partial likelihood is invariant to a constant added to a covariate. Before: with the
    # year uncentered (eta ~ 400) Q2 = d / D^2 underflowed to 0, the fit ended "not converged" with
    # NaN standard errors (Fine-Gray alike); R's coxph centers the covariates
    case = dict(case)
    model = case.pop("model")
    year, z, outcome = _year_data(model, strata=case.pop("strata", False), start=case.pop("start", False))
    fits = [riskset.fit(riskset.from_arrays(np.c_[year - center, z], covariate_names=["year", "z"], **outcome),
                        model, **case) for center in (0.0, 1975.0)]
    raw, centered = fits
    assert raw.converged and centered.converged
    assert abs(raw.coef["year"]) > 0.02  # an estimate, not a residue: the year matters
    np.testing.assert_allclose(raw.coef.to_numpy(), centered.coef.to_numpy(), rtol=1e-8)
    np.testing.assert_allclose(raw.se.to_numpy(), centered.se.to_numpy(), rtol=1e-7)
    assert raw.loglik == pytest.approx(centered.loglik, rel=1e-12)


def _matched_year_data(model, seed=4):
    """Matched sets of 4 rows: a calendar year (set level 1950-2000, +-2 within) with log rate
    ratio 0.4 per year (eta ~ 800 unless centered) and a standard normal covariate."""
    rng = np.random.default_rng(seed)
    sets, size = 150, 4
    strata = np.repeat(np.arange(sets), size)
    year = 1950 + rng.uniform(0, 50, sets)[strata] + rng.normal(0, 2, sets * size)
    z = rng.normal(size=sets * size)
    lin = 0.4 * (year - 1975) + 0.5 * z
    lin -= np.repeat(lin.reshape(sets, size).max(1), size)
    if model == "conditional_poisson":
        y = rng.poisson(2.0 * np.exp(lin)).astype(float)
    else:  # two cases per set, drawn without replacement with odds exp(lin)
        y = np.zeros(sets * size)
        for s in range(sets):
            p = np.exp(lin[s * size:(s + 1) * size])
            y[s * size + rng.choice(size, 2, replace=False, p=p / p.sum())] = 1.0
    return year, z, dict(y=y, strata=strata)


@pytest.mark.parametrize("model, options", [("conditional_poisson", {}), ("conditional_logistic", {}),
                                            ("conditional_logistic", {"ties": "breslow"})],
                         ids=["conditional_poisson", "conditional_logistic_exact", "conditional_logistic_breslow"])
def test_uncentered_covariate_fits_like_the_centered_one_in_matched_sets(model, options):
    # Before: w = exp(eta) overflowed (eta ~ 800) and the fit said the estimate does not exist
    # because the year "separates the outcome within strata"; centered, it converged
    year, z, outcome = _matched_year_data(model)
    raw, centered = (riskset.fit(riskset.from_arrays(np.c_[year - center, z], covariate_names=["year", "z"],
                                                     **outcome), model, **options) for center in (0.0, 1975.0))
    assert raw.converged and centered.converged, raw.message
    assert raw.coef["year"] == pytest.approx(0.4, abs=0.3)  # an estimate (eta ~ 800), not a residue
    np.testing.assert_allclose(raw.coef.to_numpy(), centered.coef.to_numpy(), rtol=1e-8)
    np.testing.assert_allclose(raw.se.to_numpy(), centered.se.to_numpy(), rtol=1e-7)
    assert raw.loglik == pytest.approx(centered.loglik, rel=1e-12)


def test_baseline_hazard_and_survival_with_large_offsets():
    # before: offsets beyond +-50 were refused ("not supported"): the datafit subtracted a shift from them
    rng = np.random.default_rng(2)
    X, time, status = rng.normal(size=(200, 2)), rng.exponential(1.0, 200), rng.binomial(1, 0.8, 200)
    fit = riskset.fit(riskset.from_arrays(X, time=time, status=status), "cox")
    shifted = riskset.from_arrays(X, time=time, status=status, offset=np.full(200, 80.0))
    base = riskset.survival.baseline_hazard(fit, riskset.from_arrays(X, time=time, status=status))
    base_shifted = riskset.survival.baseline_hazard(fit, shifted)
    np.testing.assert_allclose(base_shifted["hazard"], base["hazard"] * np.exp(-80.0), rtol=1e-12)
    np.testing.assert_allclose(riskset.survival.predict_survival(fit, shifted, [0.5, 1.0]),
                               riskset.survival.predict_survival(fit, riskset.from_arrays(X, time=time, status=status),
                                                                 [0.5, 1.0]), rtol=1e-12)


def test_unpenalized_bootstrap_reports_aliased_coefficients_as_nan():
    # before: a duplicated column took arbitrary values on the ridge of equal likelihood in every draw
    rng, a, b, eta = _glm_data(n=120, seed=5)
    y = (rng.random(120) < 1 / (1 + np.exp(-eta))).astype(float)
    data = riskset.from_arrays(np.c_[a, b, a], y=y, covariate_names=["a", "b", "a_again"])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DataWarning)
        boot = riskset.bootstrap(data, "logistic", n_boot=20, seed=1, progress=False)
    assert boot.estimates["a_again"].isna().all() and boot.estimates[["intercept", "a", "b"]].notna().all(axis=None)
    assert boot.table.set_index("name").loc["a_again", ["lower", "upper", "nonzero_proportion"]].isna().all()


def test_unpenalized_bootstrap_gives_no_estimate_for_a_covariate_missing_from_a_draw():
    # before: the covariate kept its warm start (the full-data estimate) in the draws without it
    rng, a, b, eta = _glm_data(n=120, seed=5)
    rare = np.zeros(120)
    rare[:3] = 1.0  # absent from about 5% of the draws
    y = (rng.random(120) < 1 / (1 + np.exp(-eta))).astype(float)
    data = riskset.from_arrays(np.c_[a, rare], y=y, covariate_names=["a", "rare"])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DataWarning)
        boot = riskset.bootstrap(data, "logistic", n_boot=40, seed=1, progress=False)
    drawn = np.array([np.random.default_rng(s).integers(0, 120, 120) for s in np.random.SeedSequence(1).spawn(40)])
    missing = ~np.isin(drawn, [0, 1, 2]).any(axis=1)
    assert missing.any()
    assert boot.estimates.loc[missing, "rare"].isna().all() and boot.estimates["a"].notna().all()


def test_a_case_weight_of_1e200_fits_without_an_overflow():
    """An event row of weight 1e200 alone in its risk set (the log-likelihood ~ -4.6e202): a
    Newton step's gain and its model's promise differ by ~1e200, and the next gain's estimate
    raised OverflowError from the solver (found by the row-order property test). The optimum
    is where the other event's term 2 beta - log(1e200 + 25 + e^(2 beta)) meets the prior:
    2 - beta = 0 (up to e^(2 beta) / 1e200). A Dataset refuses weights adding up past
    WEIGHT_TOTAL_MAX (issue #41), so the solver is given the Cox likelihood directly."""
    from riskset.models.cox import CoxDatafit
    from riskset.solver.ccd import fit_ccd

    n = 27
    frame = pd.DataFrame({"time": np.ones(n), "status": np.zeros(n, int), "x": np.zeros(n), "w": np.ones(n)})
    frame.loc[3, ["status", "x"]] = 1, 2.0
    frame.loc[24, ["time", "status", "w"]] = 2.0, 1, 1e200
    with pytest.raises(InputError, match=r"weights add up to 1e\+200 \(largest 1e\+200 at row 24\)"):
        riskset.from_frame(frame, time="time", status="status", weights="w")
    datafit = CoxDatafit(scipy.sparse.csc_matrix(frame[["x"]].to_numpy()), frame["time"].to_numpy(),
                         frame["status"].to_numpy(np.uint8), weights=frame["w"].to_numpy())
    penalty = riskset.Normal(variance=1.0).penalty(["x"])
    fit = fit_ccd(datafit, penalty.l1, penalty.l2, center=penalty.center)
    assert fit.converged
    assert fit.beta[0] == pytest.approx(2.0, abs=1e-8)


def test_the_log_likelihood_kept_with_a_state_is_recomputed_after_a_move():
    """A risk-set state keeps its log-likelihood once asked (a fit's end asks for its last
    trial's again); a move changes the state, and the next ask recomputes it."""
    data = riskset.simulate(n=400, p=5, model="cox", seed=3)
    competing = np.where((data.status == 1) & (np.arange(400) % 3 == 0), 2, data.status)  # a third compete
    for name, status in (("cox", data.status), ("fine_gray", competing)):
        datafit = riskset.models.get_model(name).datafit(riskset.from_arrays(data.X, time=data.time, status=status))
        state = datafit.new_state(np.zeros(datafit.n_coef))
        before = datafit.loglik(state)
        assert datafit.loglik(state) == before
        datafit.move(state, 0, 0.3)
        beta = np.zeros(datafit.n_coef)
        beta[0] = 0.3
        moved = datafit.loglik(state)
        assert moved != before
        assert moved == pytest.approx(datafit.loglik(datafit.new_state(beta)), rel=1e-12)


def _direct_company(time, status, start, weights, competing_in_risk_set):
    """Whether some event (status 1) of positive weight has another row of positive weight in its
    risk set, counted row by row: rows with start < t <= time (Cox), and for Fine-Gray also the
    rows with a competing event (status 2) before t."""
    positive = weights > 0
    for i in np.flatnonzero((status == 1) & positive):
        t = time[i]
        at_risk = positive & (time >= t) & (start < t)
        if competing_in_risk_set:
            at_risk |= positive & (status == 2) & (time < t)
        if at_risk.sum() >= 2:
            return True
    return False


@pytest.mark.parametrize("seed", range(40))
def test_the_compiled_information_checks_count_the_risk_sets(seed):
    """Cox (with strata and start times) and Fine-Gray datafits' missing_information against a
    direct count over the rows, on small data with ties and zero weights, informative or not."""
    from riskset.models.cox import CoxDatafit
    from riskset.models.fine_gray import FineGrayDatafit

    rng = np.random.default_rng(seed)
    n = int(rng.integers(2, 9))
    time = rng.integers(1, 5, n).astype(float)
    status = rng.integers(0, 3, n)
    weights = rng.choice([0.0, 1.0, 2.5], n, p=[0.5, 0.3, 0.2])
    start = np.where(rng.random(n) < 0.5, time - rng.integers(1, 3, n), -np.inf)
    strata = rng.integers(0, 2, n)
    if not all((status[strata == s] == 1).any() for s in (0, 1)):  # the model drops strata without events
        strata[:] = 0
    X = scipy.sparse.csc_matrix(rng.normal(size=(n, 2)))
    if ((status == 1) & (weights > 0)).any():
        cox = CoxDatafit(X, time, (status == 1).astype(float), start=start, strata=strata, weights=weights)
        expected = any(_direct_company(time[strata == s], status[strata == s], start[strata == s],
                                       weights[strata == s], False) for s in (0, 1))
        assert (cox.missing_information() is None) == expected
    fg = FineGrayDatafit(X, time, status == 1, status == 2, status == 0, weights=weights)
    expected = _direct_company(time, status, np.full(n, -np.inf), weights, True)
    assert (fg.missing_information() is None) == expected
