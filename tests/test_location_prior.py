"""Location priors: a prior mean m_j per coefficient (``means=``), the penalty on beta_j - m_j.

Every family, through the one compiled sweep: the fit satisfies the optimality conditions
of the shifted objective, a very strong prior pins each coefficient at its mean, an L1
prior's kink sits at the mean; least squares matches the closed form; the means travel
through JSON, specifications and the command line.
"""
import json

import numpy as np
import pytest
import scipy.sparse as sp

import riskset
from riskset.data.dataset import Dataset
from riskset.exceptions import InputError
from test_data_weights import FAMILIES

TOL = 1e-12


def _fit(family, prior):
    data, model, _ = FAMILIES[family]()
    fit = riskset.fit(data, model, prior, tol=TOL)
    return data, model, fit


def _means(fit, values=(0.7, -0.4, 0.25)):
    """Prior means for the first penalized coefficients of a fit."""
    penalized = [n for n in fit.coef.index if n != "intercept"]
    return dict(zip(penalized, values))


def _gradient(data, model, beta):
    datafit = model.datafit(data)
    return datafit.gradient(datafit.new_state(np.asarray(beta, dtype=np.float64)))


@pytest.mark.parametrize("family", list(FAMILIES))
def test_normal_location_prior_meets_its_optimality_condition(family):
    """g_j = (beta_j - m_j) / variance at the optimum (0 for the intercept)."""
    data, model, plain = _fit(family, riskset.NoPrior())
    means = _means(plain)
    _, _, fit = _fit(family, riskset.Normal(0.5, means=means))
    assert fit.converged, fit.message
    center = np.array([means.get(n, 0.0) for n in fit.coef.index])
    penalized = np.array([n != "intercept" for n in fit.coef.index])
    grad = _gradient(data, model, fit.coef.to_numpy())
    expected = np.where(penalized, (fit.coef.to_numpy() - center) / 0.5, 0.0)
    np.testing.assert_allclose(grad, expected, atol=1e-7)
    # one mean moves its coefficient part of the way towards it (d beta_j / d m_j = l2 [(l2 I - H)^-1]_jj in (0, 1))
    name, m = next(iter(means.items()))
    _, _, zero_mean = _fit(family, riskset.Normal(0.5))
    _, _, one_mean = _fit(family, riskset.Normal(0.5, means={name: m}))
    t = (one_mean.coef[name] - zero_mean.coef[name]) / m
    assert 0 < t < 1, (name, t)


@pytest.mark.parametrize("family", list(FAMILIES))
def test_a_strong_location_prior_pins_the_coefficients_at_their_means(family):
    _, _, plain = _fit(family, riskset.NoPrior())
    means = _means(plain)
    _, _, fit = _fit(family, riskset.Normal(1e-9, means=means))
    assert fit.converged, fit.message
    for name, m in means.items():
        assert fit.coef[name] == pytest.approx(m, abs=1e-6), name


@pytest.mark.parametrize("family", list(FAMILIES))
def test_laplace_location_prior_has_its_kink_at_the_mean(family):
    """Subgradient conditions of l(beta) - gamma sum |beta_j - m_j|: |g_j| <= gamma where
    beta_j = m_j (held exactly there), g_j = gamma sign(beta_j - m_j) elsewhere; with gamma
    above the largest |g_j| at the means every coefficient stays at its mean."""
    data, model, plain = _fit(family, riskset.NoPrior())
    means = _means(plain)
    start = np.array([means.get(n, 0.0) for n in plain.coef.index])
    gamma = 0.3 * float(np.max(np.abs(_gradient(data, model, start))))
    _, _, fit = _fit(family, riskset.Laplace(gamma, means=means))
    assert fit.converged, fit.message
    beta = fit.coef.to_numpy()
    center = np.array([means.get(n, 0.0) for n in fit.coef.index])
    grad = _gradient(data, model, beta)
    for j, name in enumerate(fit.coef.index):
        if name == "intercept":
            assert abs(grad[j]) < 1e-7
        elif beta[j] == center[j]:
            assert abs(grad[j]) <= gamma + 1e-7, name
        else:
            assert grad[j] == pytest.approx(gamma * np.sign(beta[j] - center[j]), abs=1e-6), name
    _, _, held = _fit(family, riskset.Laplace(1e6, means=means))
    for name, m in means.items():
        assert held.coef[name] == m, name  # exactly: the sweep lands on the kink


def test_least_squares_matches_the_closed_form_ridge_towards_the_means():
    """argmax -|y - X b|^2 / 2 - |b - m|^2 / (2 v) = (X'X + I/v)^-1 (X'y + m/v)."""
    rng = np.random.default_rng(7)
    X = rng.normal(size=(60, 4))
    y = X @ np.array([1.0, -0.5, 0.0, 2.0]) + rng.normal(size=60)
    data = Dataset(X=sp.csc_matrix(X), covariate_names=list("abcd"), row_ids=np.arange(60), y=y)
    m, v = np.array([0.3, 0.0, -1.0, 5.0]), 0.05
    fit = riskset.fit(data, "least_squares", riskset.Normal(v, means=dict(zip("abcd", m))), tol=TOL,
                      intercept=False)
    expected = np.linalg.solve(X.T @ X + np.eye(4) / v, X.T @ y + m / v)
    np.testing.assert_allclose(fit.coef.to_numpy(), expected, rtol=1e-9)


def test_means_travel_through_json_and_specifications(tmp_path):
    data = riskset.simulate(n=200, p=3, model="logistic", seed=3)
    prior = riskset.Laplace(0.5, means={"x0": 0.2})
    fit = riskset.fit(data, "logistic", prior)
    again = riskset.FitResult.from_json(fit.to_json())
    assert again.prior.means == {"x0": 0.2}
    spec = fit.to_spec(columns={"y": "y"})
    assert spec["penalty"]["means"] == {"x0": 0.2}
    from riskset.spec import prior_from_penalty

    assert prior_from_penalty(spec["penalty"]) == prior


def test_means_are_checked_at_the_door():
    names = ["intercept", "x0", "x1"]
    with pytest.raises(InputError, match=r"means\['x0'\].*finite"):
        riskset.Normal(1.0, means={"x0": np.nan})
    with pytest.raises(InputError, match="means.*'nope'"):
        riskset.Normal(1.0, means={"nope": 1.0}).penalty(names)
    with pytest.raises(InputError, match="'x0' is not penalized"):
        riskset.Normal(1.0, means={"x0": 1.0}, exclude=["x0"]).penalty(names)
    with pytest.raises(InputError, match="'intercept' is not penalized"):
        riskset.Normal(1.0, means={"intercept": 1.0}).penalty(names, ["intercept"])
    with pytest.raises(InputError, match="needs a prior"):
        riskset.Prior("none", means={"x0": 1.0})


def _wide_file(tmp_path):
    import pandas as pd

    rng = np.random.default_rng(0)
    df = pd.DataFrame({"x": rng.normal(size=200), "z": rng.normal(size=200)})
    df["y"] = df["x"] * 2 + rng.normal(size=200)
    df.to_csv(tmp_path / "d.csv", index=False)
    return str(tmp_path / "d.csv")


def test_command_line_means(tmp_path):
    from riskset import cli

    out = tmp_path / "r.json"
    assert cli.main(["fit", "--data", _wide_file(tmp_path), "--y", "y", "--model", "least_squares", "--prior",
                     "normal", "--variance", "1e-9", "--means", "x=0.5", "--out", str(out), "--quiet"]) == 0
    res = json.loads(out.read_text())
    assert res["coef"]["x"] == pytest.approx(0.5, abs=1e-6)
    assert res["coef"]["z"] == pytest.approx(0.0, abs=1e-6)


def test_command_line_refuses_a_bad_mean(tmp_path, capsys):
    from riskset import cli

    assert cli.main(["fit", "--data", _wide_file(tmp_path), "--y", "y", "--model", "least_squares", "--prior",
                     "normal", "--variance", "1", "--means", "x=abc"]) == 2
    assert "--means 'x=abc': the mean must be a number" in capsys.readouterr().err
    assert cli.main(["fit", "--data", _wide_file(tmp_path), "--y", "y", "--model", "least_squares",
                     "--means", "x=1"]) == 2
    assert "--means need(s) a prior" in capsys.readouterr().err
