"""SCCS with age and season splines and pre-exposure windows: the bases against R, the era
table and fit against an independent R construction (gnm), the case-series study and command."""
import json
import pathlib
import warnings

import numpy as np
import pandas as pd
import pytest

import riskset
from riskset.cli import main
from riskset.data.sccs_builder import build_sccs
from riskset.data.sccs_time import month_cuts, time_effect_curves
from riskset.data.splines import bspline_basis, cyclic_bspline_basis
from riskset.exceptions import DataWarning, InputError
from riskset.likelihood import loglik_at
from riskset.simulate_sccs import simulate_case_series
from riskset.study.case_series import case_series

REF = pathlib.Path(__file__).parent / "reference" / "sccs_splines"


def read_reference():
    fields = dict(line.split(" ", 1) for line in (REF / "gnm.txt").read_text().splitlines())
    numbers = {k: np.array(v.split(), dtype=float) for k, v in fields.items() if k != "names"}
    return fields["names"].split(","), numbers


def reference_data():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DataWarning)
        return build_sccs(pd.read_csv(REF / "observation.csv"), pd.read_csv(REF / "exposures.csv"),
                          pd.read_csv(REF / "outcomes.csv"), pre_exposure=30, age_knots=5, season_knots=5)


def test_bases_equal_r():
    # values of mgcv::cSplineDes(x, 0.5 + seq(0, 12, len = 5), ord = 3) and
    # splines::bs(a, knots = c(9000, 14000, 21000), Boundary.knots = c(7000, 29000), degree = 2), R 4.2.2,
    # printed with 17 digits
    cyclic = np.array([[0.5, 0.5, 0, 0], [0.347222222222222154, 0.63888888888888884, 0.013888888888888888, 0],
                       [0.013888888888888888, 0.63888888888888884, 0.347222222222222154, 0]])
    np.testing.assert_allclose(cyclic_bspline_basis([12.5, 1.0, 3.0], 0.5 + np.linspace(0, 12, 5)), cyclic,
                               atol=1e-15)
    bs = np.array([[0, 0, 0, 0, 0], [0.45714285714285718, 0.52619047619047632, 0.016666666666666666, 0, 0],
                   [0, 0.42857142857142860, 0.561904761904761907, 0.0095238095238095247, 0], [0, 0, 0, 0, 1]])
    np.testing.assert_allclose(bspline_basis([7000, 10000, 15000, 29000], [7000, 9000, 14000, 21000, 29000]), bs,
                               atol=1e-15)
    B = cyclic_bspline_basis(np.linspace(0.2, 12.2, 97), [0.2, 2.5, 7, 8, 12.2])
    np.testing.assert_allclose(B.sum(axis=1), 1.0, atol=1e-14)  # a partition of unity over the period


def test_month_cuts_are_calendar_months():
    days = np.array([np.datetime64("2019-01-15"), np.datetime64("2019-03-01")]).astype(np.int64).astype(float)
    ends = np.array([np.datetime64("2019-04-01"), np.datetime64("2019-03-20")]).astype(np.int64).astype(float)
    case, cut = month_cuts(days, ends)
    assert case.tolist() == [0, 0]
    assert cut.astype(np.int64).astype("datetime64[D]").astype(str).tolist() == ["2019-02-01", "2019-03-01"]


def test_splines_and_pre_exposure_equal_gnm_on_an_independent_era_table():
    names, ref = read_reference()
    data = reference_data()
    assert data.covariate_names == names
    assert data.meta["sccs"]["cases"] == int(ref["cases"][0]) and data.y.sum() == ref["events"][0]
    effects = data.meta["time_effects"]
    np.testing.assert_allclose(effects.age_knots, ref["age_knots"], rtol=1e-14)  # R's quantile type 7
    np.testing.assert_allclose(effects.season_knots, ref["season_knots"])
    fit = riskset.fit(data, "sccs", tol=1e-12)
    assert fit.converged
    age = [n.startswith("age_spline") for n in names]
    coef = fit.coef.to_numpy()
    # drugs, pre-exposure windows, season: gnm and glm agree to 4e-9; so must riskset
    np.testing.assert_allclose(coef[~np.array(age)], ref["coef"][~np.array(age)], atol=2e-8)
    np.testing.assert_allclose(fit.se.to_numpy()[~np.array(age)], ref["se"][~np.array(age)], rtol=1e-6)
    # age coefficients are ill-conditioned one by one; the curve they make agrees as gnm and glm do (1.5e-6)
    curve = time_effect_curves(fit.coef, effects)["age"]
    np.testing.assert_allclose(curve.log_rr, ref["age_curve"], atol=1e-5)
    # R keeps neighbouring eras of equal covariates apart, riskset merges them: the same likelihood in beta
    assert fit.loglik >= loglik_at(data, "sccs", dict(zip(names, ref["coef"]))) - 1e-9


def test_simulated_truth_is_recovered_and_the_pre_exposure_window_matters():
    sim = simulate_case_series(n=12_000, seed=4)
    study = case_series(sim.observation, sim.exposures, sim.outcomes, pre_exposure=30, progress=False)
    est = study.estimates.set_index("exposure")
    for drug, irr in sim.truth["irr"].items():
        assert est.lower[drug] < irr < est.upper[drug], drug
    assert est.lower["drug_a pre-exposure"] < 0.5 < est.upper["drug_a pre-exposure"]
    assert (est.interval == "profile").all()
    season = study.time_effects["season"]
    truth = np.array(list(sim.truth["season_log_rr"].values()))
    assert np.abs(season.log_rr - (truth - truth.mean())).max() < 0.2
    assert season.rr.idxmax() in (0, 11)  # January or December
    # without the window, the dip before drug_a lowers the reference rate: drug_a looks riskier
    naive = case_series(sim.observation, sim.exposures, sim.outcomes, exposures_of_interest=["drug_a"],
                        progress=False)
    assert naive.estimates.set_index("exposure").irr["drug_a"] > est.irr["drug_a"]


def test_case_series_with_a_cross_validated_prior_on_other_exposures():
    sim = simulate_case_series(n=4000, seed=5)
    study = case_series(sim.observation, sim.exposures, sim.outcomes, age_knots=None, progress=False,
                        exposures_of_interest=["drug_a"], cv=dict(n_folds=3, n_repeats=1, seed=1))
    assert study.cv is not None and study.fit.converged
    assert set(study.fit.prior.exclude) >= {"drug_a", "season_spline_1", "season_spline_2", "season_spline_3"}
    est = study.estimates.set_index("exposure")
    assert est.interval["drug_a"] == "profile" and est.interval["drug_b"] != "profile"


def test_case_series_command_end_to_end(tmp_path):
    assert main(["simulate", "--model", "sccs", "--n", "3000", "--seed", "2", "--out", str(tmp_path / "sim")]) == 0
    truth = json.loads((tmp_path / "sim" / "truth.json").read_text())
    assert truth["irr"] == {"drug_a": 2.0, "drug_b": 1.0, "drug_c": 0.5}
    args = ["sccs", "--observation", str(tmp_path / "sim" / "observation.parquet"), "--exposures",
            str(tmp_path / "sim" / "exposures.parquet"), "--outcomes", str(tmp_path / "sim" / "outcomes.parquet"),
            "--pre-exposure", "30", "--out", str(tmp_path / "study"), "--quiet"]
    assert main(args) == 0
    written = sorted(p.name for p in (tmp_path / "study").iterdir())
    assert written == ["age.csv", "attrition.csv", "estimates.csv", "irr.png", "model.csv", "season.csv",
                       "summary.txt", "time_effects.png"]
    est = pd.read_csv(tmp_path / "study" / "estimates.csv")
    assert est.exposure.tolist() == ["drug_a", "drug_a pre-exposure", "drug_b", "drug_b pre-exposure", "drug_c",
                                     "drug_c pre-exposure"]
    assert "Incidence rate ratios (profile intervals)" in (tmp_path / "study" / "summary.txt").read_text()


@pytest.mark.parametrize("extra, message", [
    (["--risk-window", "3"], "--risk-window takes two numbers"),
    (["--columns", "birth=dob"], "no column 'dob'"),
    (["--cv"], "name the exposures of interest with --interest"),
    (["--folds", "3"], "--folds and --repeats apply to --cv"),
    (["--age-knots", "1"], "age_knots must be at least 2"),
])
def test_case_series_command_errors(tmp_path, capsys, extra, message):
    sim = simulate_case_series(n=300, seed=1)
    paths = {}
    for name in ("observation", "exposures", "outcomes"):
        paths[name] = tmp_path / f"{name}.csv"
        getattr(sim, name).to_csv(paths[name], index=False)
    args = ["sccs"] + [a for name, p in paths.items() for a in (f"--{name}", str(p))]
    args += ["--out", str(tmp_path / "o"), "--quiet"]
    assert main(args + extra) == 2
    err = capsys.readouterr().err.strip().splitlines()[-1]
    assert err.startswith("riskset sccs: error:") and message in err


def test_builder_refuses_bad_spline_settings():
    sim = simulate_case_series(n=300, seed=1)
    tables = (sim.observation, sim.exposures, sim.outcomes)
    with pytest.raises(InputError, match="season_knots must be at least 3 distinct months spanning one year"):
        build_sccs(*tables, season_knots=[1, 4, 8])
    with pytest.raises(InputError, match="pre_exposure"):
        build_sccs(*tables, pre_exposure=-5)
    with pytest.warns(DataWarning, match="age left out of the model"):
        build_sccs(*tables, age_knots=10_000)
