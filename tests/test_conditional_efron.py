"""Conditional logistic regression with Efron ties against R's survival 3.5-3
``clogit(case ~ x1 + x2 + x3 + strata(stratum), method = "efron")`` on 80 simulated n:m
matched sets (tests/reference/clogit_efron/make.R). Convention: a set is a stratum of a Cox
model whose rows share one time (clogit's own definition). Tolerance 1e-9 (both fits stop at
a relative change below 1e-12).
"""
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import riskset
from helpers import reference_values

REF = Path(__file__).parent / "reference" / "clogit_efron"


@pytest.fixture(scope="module")
def frame():
    return pd.read_csv(REF / "data.csv")


@pytest.fixture(scope="module")
def expected():
    return reference_values(REF / "survival.txt")


def _data(frame):
    return riskset.from_frame(frame, y="case", strata="stratum", covariates=["x1", "x2", "x3"])


def test_efron_ties_are_clogit_efron(frame, expected):
    fit = riskset.fit(_data(frame), "conditional_logistic", ties="efron", tol=1e-13)
    np.testing.assert_allclose(fit.coef, expected["coef"], atol=1e-9)
    np.testing.assert_allclose(fit.se, expected["se"], rtol=1e-8)
    assert fit.loglik == pytest.approx(expected["loglik"][0], abs=1e-9)
    breslow = riskset.fit(_data(frame), "conditional_logistic", ties="breslow", tol=1e-13)
    np.testing.assert_allclose(breslow.coef, expected["breslow_coef"], atol=1e-9)


def test_one_case_per_set_makes_efron_exact_and_breslow_one_likelihood(frame):
    first = frame[frame.case == 1].groupby("stratum").head(1).index
    one = frame.assign(case=0)
    one.loc[first, "case"] = 1
    fits = [riskset.fit(_data(one), "conditional_logistic", ties=t, tol=1e-13) for t in ("exact", "breslow", "efron")]
    for other in fits[1:]:
        np.testing.assert_allclose(other.coef, fits[0].coef, atol=1e-9)
        assert other.loglik == pytest.approx(fits[0].loglik, abs=1e-9)


def test_a_set_of_weight_two_is_the_set_twice(frame):
    sets = frame.stratum.unique()[:10]
    twice = pd.concat([frame, frame[frame.stratum.isin(sets)].assign(stratum=lambda f: f.stratum + 1000)])
    weighted = frame.assign(w=np.where(frame.stratum.isin(sets), 2.0, 1.0))
    a = riskset.fit(_data(twice), "conditional_logistic", ties="efron", tol=1e-13)
    b = riskset.fit(riskset.from_frame(weighted, y="case", strata="stratum", weights="w",
                                       covariates=["x1", "x2", "x3"]), "conditional_logistic", ties="efron", tol=1e-13)
    np.testing.assert_allclose(a.coef, b.coef, atol=1e-9)


def test_bootstrap_and_refusal(frame):
    boot = riskset.bootstrap(_data(frame), "conditional_logistic", n_boot=3, ties="efron", progress=False)
    assert np.isfinite(boot.estimates.to_numpy()).all()
    with pytest.raises(riskset.InputError, match="ties must be 'exact', 'breslow' or 'efron'"):
        riskset.fit(_data(frame), "conditional_logistic", ties="approximate")
