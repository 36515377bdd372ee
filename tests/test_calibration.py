"""Empirical calibration (riskset.study.calibration) against EmpiricalCalibration 3.1.4 on its own
example data (tests/reference/empirical_calibration/make.R)."""
import os

import numpy as np
import pandas as pd
import pytest

import riskset
from helpers import reference_values
from riskset.exceptions import InputError
from riskset.simulate import simulate_cohort
from riskset.study import cohort_study
from riskset.study.calibration import EmpiricalNull, calibrate_ci, calibrate_p, fit_null, null_loglik

HERE = os.path.join(os.path.dirname(__file__), "reference", "empirical_calibration")
REF = reference_values(os.path.join(HERE, "calibration.txt"))
SCCS = pd.read_csv(os.path.join(HERE, "sccs.csv"))
NEG = SCCS[SCCS.groundTruth == 0]


def test_null_is_the_maximum_likelihood_one():
    null = fit_null(NEG.logRr, NEG.seLogRr)
    np.testing.assert_allclose([null.mean, null.sd], REF["null"], atol=2e-4)   # the package's Nelder-Mead
    best = null_loglik(null.mean, null.sd, NEG.logRr, NEG.seLogRr)
    assert best >= null_loglik(*REF["null"], NEG.logRr, NEG.seLogRr)
    for dm, ds in ((1e-4, 0), (-1e-4, 0), (0, 1e-4), (0, -1e-4)):          # a maximum, independently
        assert null_loglik(null.mean + dm, null.sd + ds, NEG.logRr, NEG.seLogRr) < best


def test_calibrated_p_and_interval_equal_the_package():
    null = EmpiricalNull(*REF["null"], n=len(NEG))
    np.testing.assert_allclose(calibrate_p(null, SCCS.logRr, SCCS.seLogRr), REF["p_all"], rtol=1e-12)
    ci = calibrate_ci(null, SCCS.logRr, SCCS.seLogRr)
    for column, key in (("log_rr", "ci_log_rr"), ("lower", "ci_lower"), ("upper", "ci_upper"), ("se", "ci_se")):
        np.testing.assert_allclose(ci[column].to_numpy(), REF[key], rtol=1e-12, atol=1e-13)


def test_no_systematic_error_gives_a_null_of_sd_zero():
    se = np.full(20, 0.2)
    null = fit_null(np.linspace(-0.1, 0.1, 20), se)         # spread far below the sampling error
    assert null.sd == 0.0 and null.mean == pytest.approx(0.0, abs=1e-12)
    np.testing.assert_allclose(calibrate_p(null, [0.4], [0.2]), 2 * (1 - 0.9772498680518208), rtol=1e-10)


def test_a_study_with_negative_controls(tmp_path):
    data = simulate_cohort(n=2000, p=8, n_confounders=5, seed=6)
    rng = np.random.default_rng(2)
    confounding = data.X[:, 1:6].toarray().sum(axis=1)
    controls = {}
    for k in range(6):   # outcomes of the confounders alone, with a systematic error of +0.3 for the treated
        rate = np.exp(np.log(0.05) + 0.5 * confounding + 0.3 * data.X[:, 0].toarray().ravel())
        t, c = rng.exponential(1 / rate), np.minimum(rng.exponential(10, rate.size), 5)
        controls[f"nc{k}"] = {"time": np.minimum(t, c), "status": (t <= c).astype(int)}
    study = cohort_study(data, ps_prior=riskset.Laplace(variance=1.0), negative_controls=controls, progress=False)
    assert len(study.negative_controls) == 6 and study.negative_controls.converged.all()
    assert study.null.mean > 0.1                                  # the bias the controls reveal
    row = study.estimate.iloc[0]
    assert row.calibrated_estimate == pytest.approx(row.estimate - study.null.mean)
    written = study.save(str(tmp_path))
    assert any(p.endswith("calibration.png") for p in written)
    with pytest.raises(InputError, match="negative control 'bad': time has shape"):
        cohort_study(data, ps_prior=riskset.Laplace(variance=1.0), progress=False,
                     negative_controls={"bad": {"time": np.ones(3), "status": np.ones(3)}})


def test_unusable_estimates_are_left_out_with_a_warning():
    with pytest.warns(riskset.DataWarning, match="2 negative-control estimate"):
        null = fit_null([0.1, np.nan, 10.0, 0.2], [0.1, 0.1, 0.1, 0.1])
    assert null.n == 2
    with pytest.raises(InputError, match="no usable negative-control estimate"), pytest.warns(riskset.DataWarning):
        fit_null([np.inf], [0.1])
