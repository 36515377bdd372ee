"""The comparative cohort study (riskset.study) against CohortMethod's own code.

References: tests/reference/cohort_method/make.R runs CohortMethod 6.0.2's matcher (its C++,
through Rcpp) and its R functions for stratification, weights, trimming, the preference score
and balance (computeMeansPerGroup) on 600 rows with given propensity scores.
"""
import os

import numpy as np
import pandas as pd
import pytest

import riskset
from helpers import reference_values
from riskset.exceptions import InputError
from riskset.simulate import simulate_cohort
from riskset.study import (Population, balance_summary, cohort_study, covariate_balance, equipoise, fit_propensity,
                           iptw, match_on_ps, preference_score, stratify_by_ps, trim_by_ps, trim_to_equipoise,
                           truncate_iptw)
from riskset.study.balance import cohort_moments, standardized_difference

HERE = os.path.join(os.path.dirname(__file__), "reference", "cohort_method")
REF = reference_values(os.path.join(HERE, "cohort_method.txt"), key_words=2)
FRAME = pd.read_csv(os.path.join(HERE, "data.csv"))
COVARIATES = [f"X{j}" for j in range(1, 9)]


def population():
    return Population(rows=np.arange(len(FRAME)), treatment=FRAME.treatment.to_numpy().astype(np.int8),
                      treatment_name="treatment", propensity=FRAME.propensityScore.to_numpy()).counted("start")


def dataset():
    X = np.c_[FRAME.treatment.to_numpy(), FRAME[COVARIATES].to_numpy()]
    return riskset.from_arrays(X, y=FRAME.treatment.to_numpy(), covariate_names=["treatment"] + COVARIATES)


def strata_of(result, n=len(FRAME)):
    """Matched-set / stratum code per original row, -1 where dropped."""
    out = np.full(n, -1)
    out[result.rows] = result.strata
    return out


@pytest.mark.parametrize("case, options", [
    ("m1", {}),
    ("m3", {"max_ratio": 3}),
    ("m0_ps", {"caliper": 0.05, "caliper_scale": "propensity score", "max_ratio": 0}),
    ("m2_std", {"caliper": 0.1, "caliper_scale": "standardized", "max_ratio": 2}),
])
def test_matching_equals_cohort_methods_matcher(case, options):
    matched = match_on_ps(population(), **options)
    np.testing.assert_array_equal(strata_of(matched), REF[(case, "strata")])
    assert matched.estimand == "att"


@pytest.mark.parametrize("case, options", [("s5_all", dict(n_strata=5)), ("s4_target", dict(n_strata=4,
                                                                                              base="target"))])
def test_stratification_equals_cohort_method(case, options):
    np.testing.assert_array_equal(strata_of(stratify_by_ps(population(), **options)) + 1, REF[(case, "strata")])


@pytest.mark.parametrize("estimand", ["ate", "att", "ato"])
def test_weights_equal_cohort_method(estimand):
    np.testing.assert_allclose(iptw(population(), estimand).weights, REF[(estimand, "iptw")], rtol=1e-13)


def test_truncated_weights_and_preference_score():
    w = truncate_iptw(iptw(population()), max_weight=2.0)
    np.testing.assert_allclose(w.weights, np.minimum(REF[("ate", "iptw")], 2.0), rtol=1e-13)
    assert w.attrition.step.iloc[-1] == "weights truncated at 2"
    np.testing.assert_allclose(preference_score(FRAME.propensityScore, FRAME.treatment), REF[("pref", "score")],
                               rtol=1e-12)


@pytest.mark.parametrize("case, step", [
    ("trim_sym", lambda p: trim_by_ps(p, 0.05)),
    ("trim_asym", lambda p: trim_by_ps(p, 0.05, method="asymmetric")),
    ("trim_equipoise", lambda p: trim_to_equipoise(p, (0.3, 0.7))),
])
def test_trimming_equals_cohort_method(case, step):
    kept = np.zeros(len(FRAME))
    kept[step(population()).rows] = 1
    np.testing.assert_array_equal(kept, REF[(case, "kept")])


@pytest.mark.parametrize("case, adjust", [
    ("unadjusted", lambda p: p),
    ("m1", match_on_ps),
    ("m3", lambda p: match_on_ps(p, max_ratio=3)),
    ("s5_all", lambda p: stratify_by_ps(p, 5)),
    ("ate", iptw),
])
def test_balance_equals_cohort_method(case, adjust):
    moments = cohort_moments(dataset(), adjust(population()))
    for column in ("mean_target", "sd_target", "mean_comparator", "sd_comparator"):
        np.testing.assert_allclose(moments[column].to_numpy(), REF[(case, column)], rtol=1e-10, atol=1e-14)
    np.testing.assert_allclose(standardized_difference(moments).to_numpy(), REF[(case, "std_diff")], rtol=1e-9)


def test_matched_sets_by_hand():
    """Five rows on a line: the closest pair is matched first, the caliper keeps the far one out."""
    p = Population(rows=np.arange(5), treatment=np.array([1, 0, 0, 1, 0], np.int8), treatment_name="t",
                   propensity=np.array([0.40, 0.42, 0.45, 0.46, 0.90]))
    one = match_on_ps(p, caliper=0.03, caliper_scale="propensity score")
    assert strata_of(one, 5).tolist() == [1, 1, 0, 0, -1]      # (3, 2) at 0.01 first, then (0, 1) at 0.02
    two = match_on_ps(p, caliper=0.1, caliper_scale="propensity score", max_ratio=2)
    assert sorted(np.bincount(two.strata).tolist()) == [2, 2]   # 0.90 stays out of every caliper


def test_a_study_recovers_the_effect_the_crude_estimate_misses():
    data = simulate_cohort(n=6000, p=30, hazard_ratio=0.7, seed=5)
    crude = riskset.fit(data.select(["treatment"]), "cox")
    model, scored = fit_propensity(data, prior=riskset.Laplace(variance=1.0))
    assert set(model.coefficients().name[1:6]) <= set(data.meta["confounders"])
    matched = match_on_ps(scored)
    table = covariate_balance(data, scored, matched)
    summary = balance_summary(table)
    assert summary["max_before"] > 0.1 and summary["share_above_after"] == 0.0
    adjusted = riskset.fit(matched.outcome_data(data).select(["treatment"]), "cox", profile=["treatment"])
    assert adjusted.converged
    row = adjusted.coef_table().set_index("name").loc["treatment"]
    assert row.lower < np.log(0.7) < row.upper
    assert abs(adjusted.coef["treatment"] - np.log(0.7)) < abs(crude.coef["treatment"] - np.log(0.7))
    assert equipoise(scored) > 0.5
    assert matched.attrition.step.tolist() == ["original data", "propensity score", "matched on propensity score"]


def test_bad_inputs():
    data = simulate_cohort(n=300, p=5, n_confounders=2, seed=1)
    with pytest.raises(InputError, match="treatment 'x9' is not a covariate"):
        Population.of(data, "x9")
    coded = riskset.from_arrays(np.c_[np.r_[np.zeros(5), 2 * np.ones(5)]], y=np.zeros(10), covariate_names=["t"])
    with pytest.raises(InputError, match="must be 0 .comparator. or 1 .target.; found 2 at row 5"):
        Population.of(coded, "t")
    one_arm = riskset.from_arrays(np.c_[np.ones(10), np.arange(10.0)], y=np.zeros(10), covariate_names=["t", "x"])
    with pytest.raises(InputError, match="one value"):
        Population.of(one_arm, "t")
    with pytest.raises(InputError, match="no propensity scores yet"):
        match_on_ps(Population.of(data))
    with pytest.raises(InputError, match="caliper must be a number >= 0"):
        match_on_ps(population(), caliper=-1)
    leaky = riskset.from_arrays(np.c_[FRAME.treatment, FRAME.treatment, FRAME.X1], y=np.zeros(len(FRAME)),
                                covariate_names=["treatment", "exposure_day", "X1"])
    with pytest.raises(InputError, match="correlated with the treatment .* 'exposure_day' \\(\\+1.000\\)"):
        fit_propensity(leaky, prior=riskset.Laplace(variance=1.0))
    apart = Population(rows=np.arange(4), treatment=np.array([1, 1, 0, 0], np.int8), treatment_name="t",
                       propensity=np.array([0.9, 0.95, 0.05, 0.1]))
    with pytest.raises(InputError, match="do not overlap"):
        match_on_ps(apart, caliper=0.01, caliper_scale="propensity score")


def test_cohort_study_in_one_call_and_its_folder(tmp_path):
    data = simulate_cohort(n=4000, p=20, hazard_ratio=0.7, seed=8)
    study = cohort_study(data, adjustment="stratify", n_strata=5, ps_prior=riskset.Laplace(variance=1.0),
                         progress=False)
    est = study.estimate.iloc[0]
    assert est.converged and est.lower < np.log(0.7) < est.upper and est.interval == "profile"
    assert (est.target_rows, est.comparator_rows) == tuple(np.bincount(study.population.treatment)[::-1])
    assert study.outcome.model_name == "cox" and study.population.estimand == "ate"
    written = study.save(str(tmp_path / "study"))
    assert {os.path.basename(p) for p in written} >= {"attrition.csv", "balance.csv", "estimate.csv",
                                                       "preference_score.png", "balance.png", "summary.txt"}
    assert "Attrition:" in (tmp_path / "study" / "summary.txt").read_text()
    logistic = cohort_study(riskset.from_arrays(data.X, y=data.status, covariate_names=data.covariate_names),
                            "logistic", ps_prior=riskset.Laplace(variance=1.0), progress=False)
    assert logistic.outcome.model_name == "conditional_logistic"     # on matched sets, as CohortMethod


def test_study_command(tmp_path, capsys):
    from riskset import cli

    data = simulate_cohort(n=2000, p=10, n_confounders=4, seed=4)
    frame = pd.DataFrame(data.X.toarray(), columns=data.covariate_names).assign(time=data.time, status=data.status)
    frame.to_csv(tmp_path / "cohort.csv", index=False)
    base = ["study", "--data", str(tmp_path / "cohort.csv"), "--time", "time", "--status", "status",
            "--ps-variance", "1", "--out", str(tmp_path / "out"), "--quiet"]
    assert cli.main(base + ["--adjustment", "iptw", "--max-weight", "5"]) == 0
    assert pd.read_csv(tmp_path / "out" / "attrition.csv").step.tolist()[-1] == "weights truncated at 5"
    capsys.readouterr()
    assert cli.main(base + ["--ps-strata", "4"]) == 2
    assert capsys.readouterr().err.strip() == "riskset study: error: --ps-strata applies to --adjustment stratify"
    assert cli.main(base + ["--treatment", "nope"]) == 2
    assert "treatment 'nope' is not a covariate" in capsys.readouterr().err


def test_study_command_with_negative_controls(tmp_path, capsys):
    from riskset import cli

    data = simulate_cohort(n=2000, p=10, n_confounders=4, seed=4)
    frame = pd.DataFrame(data.X.toarray(), columns=data.covariate_names).assign(time=data.time, status=data.status)
    rng = np.random.default_rng(3)
    confounding = np.asarray(data.X[:, 1:5].sum(axis=1)).ravel()
    for k in range(4):  # outcomes the treatment does not cause, raised by the confounders as the outcome is
        t = rng.exponential(1 / (0.05 * np.exp(0.5 * confounding)))
        frame[f"nc{k}_time"], frame[f"nc{k}_status"] = np.minimum(t, 5.0), (t < 5.0).astype(int)
    frame.to_csv(tmp_path / "cohort.csv", index=False)
    base = ["study", "--data", str(tmp_path / "cohort.csv"), "--time", "time", "--status", "status",
            "--ps-variance", "1", "--out", str(tmp_path / "out"), "--quiet"]
    controls = [a for k in range(4) for a in ("--negative-control", f"nc{k}=nc{k}_time:nc{k}_status")]
    assert cli.main(base + controls) == 0
    table = pd.read_csv(tmp_path / "out" / "negative_controls.csv")
    assert table.outcome.tolist() == ["nc0", "nc1", "nc2", "nc3"]
    assert (tmp_path / "out" / "calibration.png").exists()
    estimate = pd.read_csv(tmp_path / "out" / "estimate.csv")
    assert 0 <= estimate.calibrated_p.iloc[0] <= 1
    # the controls' columns are outcomes, not covariates of the propensity model
    assert not pd.read_csv(tmp_path / "out" / "propensity_model.csv").name.str.startswith("nc").any()
    capsys.readouterr()
    assert cli.main(base + ["--negative-control", "nc9=nc9_time:nc9_status"]) == 2
    assert "column(s) 'nc9_time', 'nc9_status' not in the --data table" in capsys.readouterr().err
    assert cli.main(base + ["--negative-control", "nc0=nc0_time"]) == 2
    assert "takes NAME=TIME:STATUS with --model cox" in capsys.readouterr().err


def test_simulated_cohort_with_claims_prevalences_and_competing_events():
    data = simulate_cohort(n=4000, p=300, density=0.03, prevalence="claims", competing_rate=0.5, seed=2)
    share = np.asarray(data.X[:, 1:].mean(axis=0)).ravel()
    assert share[:10].min() > 5 * np.median(share)                       # common confounders, many rare others
    assert abs(share.mean() - 0.03) < 0.01
    assert set(np.unique(data.status)) == {0, 1, 2}
    assert data.meta["true_coef"]["treatment"] == pytest.approx(np.log(0.7))


def test_simulate_and_study_commands_on_long_tables(tmp_path, capsys):
    from riskset import cli

    folder = tmp_path / "cohort"
    assert cli.main(["simulate", "--model", "cohort", "--n", "2000", "--p", "15", "--seed", "3",
                     "--out", str(folder)]) == 0
    assert '"true_hazard_ratio": 0.7' in (folder / "truth.json").read_text()
    assert cli.main(["study", "--outcomes", str(folder / "outcomes.parquet"), "--covariates-file",
                     str(folder / "covariates.parquet"), "--ps-variance", "1", "--out", str(tmp_path / "s"),
                     "--quiet"]) == 0
    estimate = pd.read_csv(tmp_path / "s" / "estimate.csv").iloc[0]
    assert estimate.lower < np.log(0.7) < estimate.upper
    capsys.readouterr()
    assert cli.main(["simulate", "--model", "cox", "--hazard-ratio", "2", "--out", str(tmp_path / "x")]) == 2
    assert "--hazard-ratio applies to --model cohort" in capsys.readouterr().err
