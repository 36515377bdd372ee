"""Fixed coefficients (Cyclops' ``fixedCoefficients``): held at given values, the others fitted.

A coefficient held at v is the same model as its covariate times v moved into the offset,
so every fit here is checked against that second route: the same estimates, log-likelihood,
standard errors and profile intervals, bit for bit or to rounding.
"""
import json

import numpy as np
import pandas as pd
import pytest

import riskset
from riskset import cli
from riskset.api import run_spec


@pytest.fixture(scope="module")
def cox_data():
    return riskset.simulate(n=500, p=4, model="cox", seed=2)


def without_x0(data, value, **outcome):
    """The data with covariate x0 at ``value`` moved into the offset."""
    X = data.X.toarray()
    return riskset.from_arrays(X[:, 1:], offset=value * X[:, 0], covariate_names=data.covariate_names[1:],
                               **outcome)


def test_a_fixed_cox_coefficient_is_its_covariate_in_the_offset(cox_data):
    fit = riskset.fit(cox_data, "cox", fixed={"x0": 0.5}, profile=["x1"])
    same = riskset.fit(without_x0(cox_data, 0.5, time=cox_data.time, status=cox_data.status), "cox",
                       profile=["x1"])
    assert fit.converged and fit.coef["x0"] == 0.5 and fit.fixed == {"x0": 0.5}
    np.testing.assert_allclose(fit.coef.drop("x0"), same.coef, rtol=1e-10)
    np.testing.assert_allclose(fit.se.drop("x0"), same.se, rtol=1e-8)
    assert fit.loglik == pytest.approx(same.loglik, rel=1e-12)
    np.testing.assert_allclose(fit.intervals[["lower", "upper"]], same.intervals[["lower", "upper"]], rtol=1e-7)
    table = fit.coef_table().set_index("name")
    assert np.isnan(table.loc["x0", "se"]) and table.loc["x0", "note"].startswith("fixed")
    assert "fixed (held, not estimated): x0 = 0.5" in fit.summary()


def test_fixed_under_a_prior_keeps_the_others_penalized():
    data = riskset.simulate(n=500, p=4, model="logistic", seed=2)
    prior = riskset.Normal(variance=1.0, exclude=["intercept"])
    fit = riskset.fit(data, "logistic", prior, fixed={"x1": -0.3})
    X = data.X.toarray()
    moved = riskset.from_arrays(np.delete(X, 1, axis=1), y=data.y, offset=-0.3 * X[:, 1],
                                covariate_names=["x0", "x2", "x3"])
    same = riskset.fit(moved, "logistic", prior)
    np.testing.assert_allclose(fit.coef.drop("x1"), same.coef, rtol=1e-9)
    # the penalized log-likelihood keeps the fixed coefficient's prior term, a constant: 0.3^2 / 2
    assert fit.objective == pytest.approx(same.objective - 0.3 ** 2 / 2, rel=1e-12)


def test_fixed_coefficients_survive_json(cox_data, tmp_path):
    fit = riskset.fit(cox_data, "cox", fixed={"x2": -1.0})
    again = riskset.FitResult.from_json(fit.to_json())
    assert again.fixed == {"x2": -1.0}
    assert again.coef_table().set_index("name").loc["x2", "note"].startswith("fixed")


@pytest.mark.parametrize("fixed, message", [
    ({"x0": np.inf}, "fixed['x0'] must be a finite number, got inf"),
    ({"x0": "0.5"}, "fixed['x0'] must be a finite number, got '0.5'"),
    ({"x0": True}, "fixed['x0'] must be a finite number, got True"),
    ({"x9": 1.0}, "fixed names unknown coefficient(s): 'x9'"),
    ([("x0", 1.0)], "fixed must be a mapping from coefficient name to value"),
])
def test_bad_fixed_values_are_refused_naming_them(cox_data, fixed, message):
    with pytest.raises(riskset.InputError, match=message.replace("(", r"\(").replace(")", r"\)")
                       .replace("[", r"\[").replace("]", r"\]")):
        riskset.fit(cox_data, "cox", fixed=fixed)


def test_a_fixed_coefficient_cannot_be_profiled_or_cross_validated(cox_data):
    with pytest.raises(riskset.InputError, match="profile names fixed coefficient"):
        riskset.fit(cox_data, "cox", fixed={"x0": 1.0}, profile=["x0"])
    from riskset.selection.analyses import analyse

    with pytest.raises(riskset.InputError, match="fixed coefficients .* with cross-validation"):
        analyse(cox_data, "cox", riskset.Laplace(), cv={"n_folds": 3}, fixed={"x0": 1.0})


def test_fixed_on_the_command_line_and_in_a_specification(tmp_path, capsys):
    data = riskset.simulate(n=300, p=3, model="logistic", seed=5)
    frame = pd.DataFrame(data.X.toarray(), columns=data.covariate_names).assign(y=data.y)
    frame.to_csv(tmp_path / "data.csv", index=False)
    expected = riskset.fit(data, "logistic", fixed={"x1": 0.25})
    out = tmp_path / "cli.json"
    assert cli.main(["fit", "--data", str(tmp_path / "data.csv"), "--y", "y", "--fixed", "x1=0.25",
                     "--out", str(out), "--quiet"]) == 0
    by_cli = riskset.FitResult.from_json(out.read_text())
    spec = {"model": "logistic", "columns": {"y": "y"}, "fixed": {"x1": 0.25}}
    (tmp_path / "case.json").write_text(json.dumps(spec))
    by_spec = run_spec(str(tmp_path / "case.json"))
    for fit in (by_cli, by_spec):
        assert fit.fixed == {"x1": 0.25}
        np.testing.assert_allclose(fit.coef[expected.coef.index], expected.coef, rtol=1e-8)
    assert cli.main(["fit", "--data", str(tmp_path / "data.csv"), "--y", "y", "--fixed", "x1=abc"]) == 2
    assert "riskset fit: error: --fixed 'x1=abc'" in capsys.readouterr().err
    assert cli.main(["fit", "--data", str(tmp_path / "data.csv"), "--y", "y", "--fixed", "x7=1"]) == 2
    assert "--fixed" in capsys.readouterr().err
