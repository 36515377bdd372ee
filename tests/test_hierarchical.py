"""The hierarchical normal prior (riskset.Hierarchical): beta_j ~ N(mu_g, v) for the covariates
of group g, mu_g ~ N(0, v_g), others N(0, v).

Checked against a second implementation: the maximum of the log-likelihood minus
1/2 beta' Sigma^-1 beta, Sigma = v I + v_g A A' (the marginal prior of the coefficients,
A: covariate -> group indicators), written here in NumPy and maximized by SciPy's BFGS to a
gradient of 1e-10; agreement to 1e-7. (Cyclops 3.7.0's ``hierarchical`` prior is no
reference: its density and step read the first variance alone, CovariatePrior.cpp.)
"""
import json

import numpy as np
import pandas as pd
import pytest
from scipy import optimize

import riskset
from riskset import cli

GROUPS = {"x0": "a", "x1": "a", "x2": "b", "x3": "b"}


@pytest.fixture(scope="module")
def data():
    return riskset.simulate(n=400, p=5, model="logistic", seed=7)


def marginal_map(data, variance, group_variance):
    X, y = data.X.toarray(), np.asarray(data.y, float)
    A = np.zeros((5, 2))
    A[[0, 1], 0] = A[[2, 3], 1] = 1.0
    precision = np.linalg.inv(variance * np.eye(5) + group_variance * A @ A.T)

    def objective(t):
        eta = t[0] + X @ t[1:]
        p = 1 / (1 + np.exp(-eta))
        value = np.sum(y * eta - np.logaddexp(0, eta)) - 0.5 * t[1:] @ precision @ t[1:]
        return -value, -np.r_[np.sum(y - p), X.T @ (y - p) - precision @ t[1:]]

    return optimize.minimize(objective, np.zeros(6), jac=True, method="BFGS", options={"gtol": 1e-10}).x


@pytest.mark.parametrize("variance, group_variance", [(0.2, 0.5), (0.05, 2.0)])
def test_the_fit_is_the_map_of_the_marginal_prior(data, variance, group_variance):
    fit = riskset.fit(data, "logistic", riskset.Hierarchical(variance, group_variance, groups=GROUPS), tol=1e-13)
    assert fit.converged
    np.testing.assert_allclose(fit.coef.to_numpy(), marginal_map(data, variance, group_variance), atol=1e-7)
    assert "group means: a" in fit.message and fit.se.isna().all()


def test_cross_validation_over_both_variances_and_a_saved_fit(data, tmp_path):
    cv = riskset.cross_validate(data, "logistic", riskset.Hierarchical(groups=GROUPS), n_folds=3, n_grid=3,
                                group_variances=[0.1, 1.0], progress=False)
    assert set(cv.summary["group_variance"]) == {0.1, 1.0} and len(cv.summary) == 6
    best = cv.summary.loc[cv.summary["mean"].idxmax()]
    assert (cv.prior.variance, cv.prior.group_variance) == (best["variance"], best["group_variance"])
    np.testing.assert_allclose(cv.fit.coef, marginal_map(data, cv.prior.variance, cv.prior.group_variance), atol=1e-6)
    cv.fit.to_json(tmp_path / "fit.json")
    assert riskset.FitResult.from_json(tmp_path / "fit.json").prior == cv.prior


def test_spec_and_command_line(data, tmp_path, capsys):
    frame = pd.DataFrame(data.X.toarray(), columns=data.covariate_names).assign(y=data.y)
    frame.to_csv(tmp_path / "d.csv", index=False)
    spec = {"model": "logistic", "data": "d.csv", "columns": {"y": "y"},
            "penalty": {"type": "hierarchical", "variance": 0.2, "group_variance": 0.5, "groups": GROUPS}}
    (tmp_path / "case.json").write_text(json.dumps(spec))
    assert cli.main(["fit", "--spec", str(tmp_path / "case.json"), "--out", str(tmp_path / "a.json")]) == 0
    groups = ",".join(f"{k}={v}" for k, v in GROUPS.items())
    assert cli.main(["fit", "--data", str(tmp_path / "d.csv"), "--y", "y", "--prior", "hierarchical", "--variance",
                     "0.2", "--group-variance", "0.5", "--groups", groups, "--out", str(tmp_path / "b.json")]) == 0
    a, b = (riskset.FitResult.from_json(tmp_path / f) for f in ("a.json", "b.json"))
    np.testing.assert_allclose(a.coef, marginal_map(data, 0.2, 0.5), atol=1e-7)
    np.testing.assert_allclose(b.coef, a.coef, atol=1e-9)
    capsys.readouterr()
    assert cli.main(["fit", "--data", str(tmp_path / "d.csv"), "--y", "y", "--prior", "hierarchical",
                     "--variance", "1"]) == 2
    assert "--prior hierarchical needs --groups" in capsys.readouterr().err


def test_refusals(data):
    with pytest.raises(riskset.InputError, match="no variance"):
        riskset.fit(data, "logistic", riskset.Hierarchical(groups=GROUPS))
    with pytest.raises(riskset.InputError, match="groups names covariate"):
        riskset.fit(data, "logistic", riskset.Hierarchical(1.0, groups={"nope": "a"}))
    with pytest.raises(riskset.InputError, match="fixed names grouped"):
        riskset.fit(data, "logistic", riskset.Hierarchical(1.0, groups=GROUPS), fixed={"x0": 0.1})
    with pytest.raises(riskset.InputError, match="exclude and groups both"):
        riskset.Hierarchical(1.0, groups=GROUPS, exclude=["x0"])
    with pytest.raises(riskset.InputError, match="bootstrap of a hierarchical prior"):
        riskset.bootstrap(data, "logistic", riskset.Hierarchical(1.0, groups=GROUPS), n_boot=2, progress=False)
