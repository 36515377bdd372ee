"""Covariate normalization (riskset.fit(normalize=...)) against Cyclops 3.7.0's
createCyclopsData(normalize = KIND) and coef(fit, rescale = TRUE)
(tests/reference/normalize/make.R): an L1 logistic fit (Laplace variance 0.5, the intercept
unpenalized) of three continuous covariates on very different scales.

Conventions: the scales are Cyclops' (stdev: divisor N; median, q95: of the non-zero |values|,
linear interpolation); indicator columns keep scale 1. Tolerance: 1e-9 absolute (both fits
stop at a gradient below 1e-12).
"""
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import scipy.sparse as sp

import riskset
from helpers import reference_values
from riskset import cli
from riskset.data.normalize import column_scales

REF = Path(__file__).parent / "reference" / "normalize"


@pytest.fixture(scope="module")
def frame():
    return pd.read_csv(REF / "data.csv")


@pytest.fixture(scope="module")
def expected():
    return reference_values(REF / "cyclops.txt", key_words=2)


@pytest.mark.parametrize("kind", ["stdev", "max", "median", "q95"])
def test_normalized_fit_is_cyclops_on_the_original_scale(frame, expected, kind):
    data = riskset.from_frame(frame, y="y", covariates=["x1", "x2", "x3"])
    np.testing.assert_allclose(column_scales(data.X, kind), expected[(kind, "scale")][1:], rtol=1e-14)
    fit = riskset.fit(data, "logistic", riskset.Laplace(variance=0.5), normalize=kind, tol=1e-13)
    np.testing.assert_allclose(fit.coef.to_numpy(), expected[(kind, "coef")], rtol=0, atol=1e-9)
    assert fit.normalize == kind and f"normalized by {kind}" in fit.summary()
    assert riskset.FitResult.from_json(fit.to_json()).normalize == kind


def test_without_a_prior_normalization_changes_nothing_but_the_units(frame):
    data = riskset.from_frame(frame, y="y", covariates=["x1", "x2", "x3"])
    plain = riskset.fit(data, "logistic", tol=1e-13)
    scaled = riskset.fit(data, "logistic", normalize="stdev", tol=1e-13, profile=["x2"])
    np.testing.assert_allclose(scaled.coef, plain.coef, rtol=1e-8)
    np.testing.assert_allclose(scaled.se, plain.se, rtol=1e-8)
    unscaled_profile = riskset.fit(data, "logistic", tol=1e-13, profile=["x2"]).intervals
    np.testing.assert_allclose(scaled.intervals[["lower", "upper"]], unscaled_profile[["lower", "upper"]], rtol=1e-6)
    held = riskset.fit(data, "logistic", riskset.Normal(1.0), normalize="max", fixed={"x1": 0.03})
    assert held.coef["x1"] == pytest.approx(0.03) and held.fixed == {"x1": pytest.approx(0.03)}


def test_cross_validation_and_bootstrap_of_normalized_covariates(frame):
    data = riskset.from_frame(frame, y="y", covariates=["x1", "x2", "x3"])
    cv = riskset.cross_validate(data, "logistic", riskset.Laplace(), normalize="stdev", n_folds=3, n_grid=4,
                                progress=False)
    scaled, _ = riskset.data.normalize.normalized(data, "stdev")
    plain = riskset.cross_validate(scaled, "logistic", riskset.Laplace(), n_folds=3, n_grid=4, progress=False)
    assert cv.selected_variance == plain.selected_variance
    np.testing.assert_allclose(cv.fit.coef, riskset.fit(data, "logistic", cv.prior, normalize="stdev").coef,
                               atol=1e-8)
    boot = riskset.bootstrap(data, "logistic", riskset.Laplace(variance=0.5), normalize="max", n_boot=4,
                             progress=False)
    scales = riskset.data.normalize.column_scales(data.X, "max")
    unscaled = riskset.bootstrap(riskset.data.normalize.normalized(data, "max")[0], "logistic",
                                 riskset.Laplace(variance=0.5), n_boot=4, progress=False)
    np.testing.assert_allclose(boot.estimates[["x1", "x2", "x3"]], unscaled.estimates[["x1", "x2", "x3"]] * scales)
    assert boot.fit.normalize == "max"


def test_indicators_and_empty_columns_keep_scale_one():
    X = sp.csc_matrix(np.array([[1.0, 0.0, 2.0], [0.0, 0.0, 0.0], [1.0, 0.0, -4.0], [1.0, 0.0, 0.0]]))
    assert column_scales(X, "median").tolist() == [1.0, 1.0, 1 / 3]
    assert column_scales(X, "max").tolist() == [1.0, 1.0, 0.25]


def test_normalize_on_the_command_line_and_its_refusals(frame, tmp_path, capsys):
    frame.to_csv(tmp_path / "data.csv", index=False)
    base = ["fit", "--data", str(tmp_path / "data.csv"), "--y", "y", "--covariates", "x1,x2,x3",
            "--prior", "laplace", "--variance", "0.5"]
    assert cli.main(base + ["--normalize", "q95", "--out", str(tmp_path / "fit.json")]) == 0
    assert riskset.FitResult.from_json(tmp_path / "fit.json").normalize == "q95"
    assert cli.main(base + ["--normalize", "q95", "--bootstrap", "3", "--out", str(tmp_path / "b.json")]) == 0
    data = riskset.from_frame(frame, y="y", covariates=["x1"])
    with pytest.raises(riskset.InputError, match="normalize must be one of"):
        riskset.fit(data, "logistic", normalize="zscore")
