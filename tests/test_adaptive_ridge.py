"""Broken adaptive ridge (riskset.BAR) and iterative hard thresholding (riskset.IHT) against
OHDSI's BrokenAdaptiveRidge 1.0.1 and IterativeHardThresholding 1.0.3 over Cyclops 3.7.0
(tests/reference/adaptive_ridge/make.R wrote data.csv and cyclops.txt): the packages' own
test data (logistic, n = 1000, 20 covariates, 3 true effects) and Cox outcomes on the same
covariates.

Conventions: 'bic' is log(N) / 2; the intercept is never penalized (IHT 1.0.3 means to leave
it so but misses it by a type mismatch, make.R names it in exclude: see there); IHT's K is
counted over all coefficients, as the package does. Tolerance: R's fits stop at Cyclops'
tolerance 1e-11 (BAR) and 1e-8 (IHT, whose best-subset refit does not converge at 1e-11),
its iterations when no coefficient moves by 1e-8: 1e-9 absolute (BAR), 1e-7 (IHT).

Independent checks: a BAR estimate is a fixed point (the log-likelihood's slope of each
selected coefficient b_j is penalty / b_j, from central differences of the log-likelihood),
and the best-subset refit is the unpenalized fit with the others held at 0.
"""
import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import riskset
from helpers import reference_values
from riskset import cli

REF = Path(__file__).parent / "reference" / "adaptive_ridge"
COVARIATES = [f"x{j}" for j in range(1, 21)]


@pytest.fixture(scope="module")
def frame():
    return pd.read_csv(REF / "data.csv")


@pytest.fixture(scope="module")
def expected():
    return reference_values(REF / "cyclops.txt")


def _data(frame, model):
    if model == "cox":
        return riskset.from_frame(frame, time="time", status="status", covariates=COVARIATES)
    return riskset.from_frame(frame, y="y", covariates=COVARIATES)


CASES = {"bar_logistic_bic": ("logistic", riskset.BAR(), 1e-9),
         "bar_logistic_bic_best_subset": ("logistic", riskset.BAR(fit_best_subset=True), 1e-9),
         "bar_logistic_penalty2_exclude_x2": ("logistic", riskset.BAR(2, exclude=["x2"]), 1e-9),
         "bar_cox_bic": ("cox", riskset.BAR(), 1e-9),
         "iht_logistic_k2_best_subset": ("logistic", riskset.IHT(2, fit_best_subset=True), 1e-7),
         "iht_logistic_k3": ("logistic", riskset.IHT(3), 1e-7),
         "iht_cox_k2": ("cox", riskset.IHT(2), 1e-7)}


@pytest.mark.parametrize("case", list(CASES))
def test_selection_is_the_packages(frame, expected, case):
    model, prior, atol = CASES[case]
    fit = riskset.fit(_data(frame, model), model, prior, tol=1e-12)
    assert fit.converged, fit.message
    np.testing.assert_allclose(fit.coef.to_numpy(), expected[case], rtol=0, atol=atol)
    np.testing.assert_array_equal(fit.coef.to_numpy() != 0, expected[case] != 0)
    assert fit.message.startswith(prior.kind.upper())


def test_a_bar_estimate_is_its_own_fixed_point(frame):
    data = _data(frame, "logistic")
    fit = riskset.fit(data, "logistic", riskset.BAR(), tol=1e-13)
    weight = np.log(data.n_rows) / 2
    selected = [n for n in COVARIATES if fit.coef[n] != 0]
    assert selected == ["x1", "x4", "x5"]
    h = 1e-5
    for name in selected:
        up, down = ({**fit.coef.to_dict(), name: fit.coef[name] + s} for s in (h, -h))
        slope = (riskset.loglik_at(data, "logistic", up) - riskset.loglik_at(data, "logistic", down)) / (2 * h)
        assert slope == pytest.approx(weight / fit.coef[name], rel=1e-6)


def test_the_best_subset_is_the_unpenalized_fit_of_the_selection(frame):
    data = _data(frame, "cox")
    best = riskset.fit(data, "cox", riskset.BAR(fit_best_subset=True), tol=1e-12)
    zero = {n: 0.0 for n in COVARIATES if best.coef[n] == 0}
    plain = riskset.fit(data, "cox", fixed=zero, tol=1e-12)
    np.testing.assert_allclose(best.coef, plain.coef, atol=1e-9)
    kept = [n for n in COVARIATES if n not in zero]
    np.testing.assert_allclose(best.se[kept], plain.se[kept], rtol=1e-7)  # conditional on the selection
    assert best.se[list(zero)].isna().all()


def test_iht_keeps_at_most_k_and_unpenalized_coefficients_stay(frame):
    data = _data(frame, "logistic")
    fit = riskset.fit(data, "logistic", riskset.IHT(1, exclude=["x2"]))
    assert fit.coef["x2"] != 0 and fit.coef["intercept"] != 0
    assert int((fit.coef[[n for n in COVARIATES if n != "x2"]] != 0).sum()) <= 1


def test_a_saved_fit_and_a_specification_keep_the_prior(frame, tmp_path):
    data = _data(frame, "cox")
    prior = riskset.IHT(2, exclude=["x1"], threshold=1e-5)
    fit = riskset.fit(data, "cox", prior)
    fit.to_json(tmp_path / "fit.json")
    assert riskset.FitResult.from_json(tmp_path / "fit.json").prior == prior
    assert "IHT(max_nonzero=2, penalty='bic', threshold=1e-05, exclude=['x1'])" in fit.summary()
    frame.to_csv(tmp_path / "data.csv", index=False)
    spec = {"model": "cox", "data": "data.csv", "columns": {"time": "time", "status": "status"},
            "covariates": COVARIATES, "penalty": {"type": "iht", "max_nonzero": 2, "unpenalized": ["x1"],
                                                  "threshold": 1e-5}}
    (tmp_path / "case.json").write_text(json.dumps(spec))
    assert cli.main(["fit", "--spec", str(tmp_path / "case.json"), "--out", str(tmp_path / "spec.json")]) == 0
    np.testing.assert_allclose(riskset.FitResult.from_json(tmp_path / "spec.json").coef, fit.coef, atol=1e-8)


def test_the_bootstrap_of_a_selection_refits_the_selection_per_draw(frame):
    from dataclasses import replace

    from riskset.selection.folds import bootstrap_weights

    data = _data(frame, "cox")
    boot = riskset.bootstrap(data, "cox", riskset.IHT(2), n_boot=4, seed=3, progress=False)
    assert boot.estimates.notna().all().all()
    assert ((boot.estimates[COVARIATES] != 0).sum(axis=1) <= 2).all()
    shares = boot.table.set_index("name")["nonzero_proportion"]
    assert shares["x4"] == 1.0 and shares["x5"] == 1.0 and shares["x10"] == 0.0  # the strong effects, every draw
    seeds = np.random.SeedSequence(3).spawn(4)
    draw = bootstrap_weights(data, np.random.default_rng(seeds[1]), riskset.models.get_model("cox"))
    alone = riskset.fit(replace(data, weights=draw), "cox", riskset.IHT(2), tol=1e-8)
    np.testing.assert_allclose(boot.estimates.iloc[1], alone.coef, atol=1e-6)


def test_no_fixed_point_within_max_iterations_is_not_converged(frame):
    with pytest.warns(riskset.ConvergenceWarning, match="no fixed point"):
        fit = riskset.fit(_data(frame, "logistic"), "logistic", riskset.BAR(max_iterations=2))
    assert not fit.converged and fit.status == "not_converged"


@pytest.mark.parametrize("call, needle", [
    (lambda d: riskset.BAR("aic"), "penalty must be 'bic' or a positive number, got 'aic'"),
    (lambda d: riskset.IHT(0), "max_nonzero must be"),
    (lambda d: riskset.BAR(delta=2), "delta must be below 2"),
    (lambda d: riskset.fit(d, "logistic", riskset.BAR(exclude=["nope"])), "exclude"),
    (lambda d: riskset.fit(d, "logistic", riskset.BAR(), profile=["x1"]), "no likelihood to profile"),
    (lambda d: riskset.profile_loglik(d, "logistic", riskset.BAR(), coef="x1", points=[0.0]),
     "no likelihood to profile"),
    (lambda d: riskset.cross_validate(d, "logistic", riskset.BAR()), "Laplace or Normal"),
])
def test_what_a_selection_prior_cannot_do_is_refused(frame, call, needle):
    with pytest.raises(riskset.InputError, match=needle):
        call(_data(frame, "logistic"))


@pytest.mark.parametrize("argv, needle", [
    (["--prior", "iht"], "--prior iht needs --max-nonzero K"),
    (["--prior", "laplace", "--gamma", "1", "--max-nonzero", "2"], "--max-nonzero is the K of --prior iht"),
    (["--prior", "normal", "--variance", "1", "--best-subset"], "--best-subset are options of --prior bar or iht"),
    (["--prior", "bar", "--variance", "1"], "--prior bar sets its own variances"),
    (["--prior", "bar", "--penalty", "x"], "--penalty"),
])
def test_command_line_refusals(frame, tmp_path, capsys, argv, needle):
    frame.to_csv(tmp_path / "data.csv", index=False)
    status = cli.main(["fit", "--data", str(tmp_path / "data.csv"), "--y", "y", "--covariates", ",".join(COVARIATES),
                       *argv])
    err = capsys.readouterr().err
    assert status == 2 and len(err.splitlines()) == 1 and needle in err, err
