"""Cox robust (sandwich) covariances, score residuals and the proportional-hazards test of
(start, stop] rows, against R's survival 3.5-3 (R 4.2.2): tests/reference/cox_robust/make.R
wrote lung.csv, heart.csv and survival.txt.

    coxph(Surv(time, status) ~ age + ph.ecog + sex, lung, ties = TIES, robust = TRUE)
    coxph(Surv(time, status) ~ age + ph.ecog + strata(sex), lung, weights = w, ties = TIES, robust = TRUE)
    coxph(Surv(time, status) ~ age + ph.ecog + sex + cluster(cl), lung, ties = TIES)
    coxph(Surv(start, stop, event) ~ age + year + surgery + transplant + cluster(id), heart, ties = TIES)
    cox.zph(coxph(Surv(start, stop, event) ~ age + year + surgery + transplant, heart, ties = TIES), TR)
    residuals(coxph(Surv(time, status) ~ age + ph.ecog + sex, lung, ties = "efron", weights = w), "score")

Conventions: R's ``vcov`` of a robust fit is V (sum over clusters of the summed weighted
score residuals' outer products) V (``residuals(type = "dfbeta", weighted = TRUE)``);
a cluster is the data's ``subject`` (``cluster(cl)``, ``cluster(id)``), else each row.
Tolerance: 1e-6 relative (riskset's fit and R's stop within 1e-9 of the optimum, at slightly
different points).
"""
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import riskset
from riskset.cox_scores import CoxRows, score_residuals

REF = Path(__file__).parent / "reference" / "cox_robust"


@pytest.fixture(scope="module")
def ref():
    out = {}
    for line in (REF / "survival.txt").read_text().splitlines():
        if line.startswith("#"):
            continue
        name, *rest = line.split()
        if name.startswith("lung_score"):
            out[name] = np.array(rest, float)
        else:
            out[(name, rest[0])] = np.array(rest[1:], float)
    return out


@pytest.fixture(scope="module")
def lung():
    return pd.read_csv(REF / "lung.csv")


@pytest.fixture(scope="module")
def heart():
    return pd.read_csv(REF / "heart.csv")


def _lung(frame, covariates, **roles):
    return riskset.from_frame(frame, time="time", status="status", covariates=covariates, **roles)


@pytest.mark.parametrize("ties", ["breslow", "efron"])
@pytest.mark.parametrize("case", ["lung", "lung_strata_weights", "lung_cluster", "heart"])
def test_robust_covariance_is_coxph_robust(ref, lung, heart, case, ties):
    if case == "heart":
        data = riskset.from_frame(heart, start="start", stop="stop", status="event", subject="id",
                                  covariates=["age", "year", "surgery", "transplant"])
    elif case == "lung_strata_weights":
        data = _lung(lung, ["age", "ph.ecog"], strata="sex", weights="w")
    else:
        data = _lung(lung, ["age", "ph.ecog", "sex"], subject="cl" if case == "lung_cluster" else None)
    fit = riskset.fit(data, riskset.models.cox.CoxModel(ties=ties, variance="robust"), tol=1e-13)
    name = f"{case}_{ties}"
    p = fit.coef.size
    np.testing.assert_allclose(fit.coef, ref[(name, "coef")], rtol=1e-7)
    robust = ref[(name, "robust")].reshape(p, p)
    np.testing.assert_allclose(riskset.robust_covariance(fit, data), robust, rtol=1e-6, atol=1e-12)
    np.testing.assert_allclose(riskset.covariance(fit, data, "robust"), robust, rtol=1e-6, atol=1e-12)
    np.testing.assert_allclose(riskset.covariance(fit, data), ref[(name, "naive")].reshape(p, p), rtol=1e-6)
    assert fit.variance == "robust"
    np.testing.assert_allclose(fit.se, np.sqrt(np.diag(robust)), rtol=1e-6)
    assert "robust" in fit.summary()


def test_score_residuals_are_r_residuals_type_score(ref, lung):
    X = lung[["age", "ph.ecog", "sex"]].to_numpy(float)
    fit = riskset.fit(_lung(lung, ["age", "ph.ecog", "sex"], weights="w"), "cox", ties="efron", tol=1e-13)
    rows = CoxRows(X=X, eta=X @ fit.coef.to_numpy(), time=lung.time.to_numpy(float), status=lung.status.to_numpy(),
                   start=None, strata=np.zeros(len(lung), np.int64), weights=lung.w.to_numpy(float),
                   cluster=np.arange(len(lung)), efron=True)
    expected = ref["lung_score_efron_weights"].reshape(3, -1).T
    np.testing.assert_allclose(score_residuals(rows), expected, rtol=1e-6, atol=1e-8)
    # at the estimate the weighted residuals add up to the score, zero
    np.testing.assert_allclose((score_residuals(rows) * lung.w.to_numpy()[:, None]).sum(axis=0), 0, atol=1e-7)


def test_robust_covariance_of_duplicated_rows_clustered_is_the_weighted_one(lung):
    """A weight-2 row and two copies of it in one cluster give one robust covariance."""
    w = 1 + (np.arange(len(lung)) % 2)
    weighted = _lung(lung.assign(w=w), ["age", "ph.ecog", "sex"], weights="w")
    copies = lung.loc[np.repeat(np.arange(len(lung)), w)].assign(cl=np.repeat(np.arange(len(lung)), w))
    copied = _lung(copies, ["age", "ph.ecog", "sex"], subject="cl")
    a = riskset.fit(weighted, "cox", variance="robust", tol=1e-13)
    b = riskset.fit(copied, "cox", variance="robust", tol=1e-13)
    # R's weighted sandwich squares the weight of a row; copies in one cluster sum first: the same
    np.testing.assert_allclose(a.se, b.se, rtol=1e-7)


@pytest.mark.parametrize("ties", ["breslow", "efron"])
@pytest.mark.parametrize("transform", ["km", "identity", "log", "rank"])
def test_cox_zph_of_start_stop_rows_is_r(ref, heart, ties, transform):
    data = riskset.from_frame(heart, start="start", stop="stop", status="event",
                              covariates=["age", "year", "surgery", "transplant"])
    z = riskset.cox_zph(riskset.fit(data, "cox", ties=ties, tol=1e-13), data, transform)
    np.testing.assert_allclose(z.table["chisq"], ref[(f"heart_zph_{ties}_{transform}", "chisq")], rtol=1e-6)
    np.testing.assert_allclose(z.table["p"], ref[(f"heart_zph_{ties}_{transform}", "p")], rtol=1e-6)


def test_robust_variance_is_refused_where_a_family_has_none():
    data = riskset.simulate(n=200, p=2, model="logistic", seed=1)
    fit = riskset.fit(data, "logistic")
    with pytest.raises(riskset.InputError, match="robust.*cox and fine_gray.*not logistic"):
        riskset.covariance(fit, data, "robust")
    with pytest.raises(riskset.InputError, match="variance must be one of"):
        riskset.fit(riskset.simulate(n=100, p=1, model="cox", seed=1), "cox", variance="sandwich")
