"""The Jeffreys (Firth) prior, riskset.Jeffreys: l(beta) + 1/2 log det I_S(beta).

Checked against independent computations (R's logistf and coxphf are not packaged for this
machine's R):

* Firth's logistic regression on a 2 x 2 table (intercept + one binary covariate) is the
  maximum likelihood fit of the table with 0.5 added to each cell (Firth 1993, section 3):
  closed form, to 1e-8;
* at every estimate the penalized log-likelihood, computed exactly (log-likelihood plus the
  log determinant of the model's Hessian), has slope 0 along each coefficient (central
  differences) and is no higher nearby;
* Cyclops 3.7.0's ``jeffreys`` prior (tests/reference/jeffreys/make.R) is not a reference:
  for a GLM it returns the maximum likelihood estimate (the log-likelihood's own slope is 0
  there, the penalty's is not), for Cox a point where the penalized slope is -3.9. The test
  below records that, so that a later Cyclops can be compared again.
"""
import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import riskset
from riskset import cli
from riskset.models.base import get_model

REF = Path(__file__).parent / "reference" / "jeffreys"


@pytest.fixture(scope="module")
def frame():
    return pd.read_csv(REF / "data.csv")


def penalized(data, model, coef: pd.Series, selected=None, **options) -> float:
    """l(beta) + 1/2 log det I_S(beta) from the model's log-likelihood and Hessian."""
    m = get_model(model, **options)
    df = m.datafit(data)
    names = m.coef_names(data)
    state = df.new_state(coef.reindex(names).to_numpy(dtype=float))
    cols = np.arange(len(names)) if selected is None else np.array([names.index(n) for n in selected])
    sign, logdet = np.linalg.slogdet(-df.hessian(state, cols))
    assert sign > 0
    return df.loglik(state) + 0.5 * logdet


def assert_stationary(data, model, fit, selected=None, **options):
    for name in fit.coef.index:
        h = 1e-5 * max(1.0, abs(fit.coef[name]))
        up, down = fit.coef.copy(), fit.coef.copy()
        up[name] += h
        down[name] -= h
        at = penalized(data, model, fit.coef, selected, **options)
        slope = (penalized(data, model, up, selected, **options) - penalized(data, model, down, selected, **options))
        assert abs(slope / (2 * h)) < 1e-5, (name, slope / (2 * h))
        assert at >= max(penalized(data, model, up, selected, **options),
                         penalized(data, model, down, selected, **options))


def test_firth_logistic_on_a_two_by_two_table_adds_a_half_to_each_cell(frame):
    data = riskset.from_frame(frame, y="y", covariates=["trt"])
    fit = riskset.fit(data, "logistic", riskset.Jeffreys())
    table = pd.crosstab(frame.trt, frame.y) + 0.5
    intercept = np.log(table.loc[0, 1] / table.loc[0, 0])
    np.testing.assert_allclose(fit.coef, [intercept, np.log(table.loc[1, 1] / table.loc[1, 0]) - intercept],
                               atol=1e-8)
    assert fit.converged and np.isfinite(fit.se).all()
    assert "Jeffreys()" in fit.summary()


def test_cox_without_events_among_the_treated_has_a_finite_jeffreys_estimate(frame):
    frame = frame.assign(status=np.where(frame.trt == 1, 0, frame.status))
    data = riskset.from_frame(frame, time="time", status="status", covariates=["trt"])
    with pytest.warns(riskset.ConvergenceWarning):
        assert riskset.fit(data, "cox").status == "estimate_does_not_exist"
    fit = riskset.fit(data, "cox", riskset.Jeffreys())
    assert fit.converged and -10 < fit.coef["trt"] < -1
    assert_stationary(data, "cox", fit)


@pytest.mark.parametrize("model, roles, options", [
    ("logistic", {"y": "y"}, {}),
    ("poisson", {"y": "cnt", "exposure": "len"}, {}),
    ("cox", {"time": "time", "status": "status"}, {"ties": "efron"}),
])
def test_the_estimate_maximizes_the_penalized_likelihood(frame, model, roles, options):
    frame = frame.assign(age=np.linspace(-1, 1, len(frame)) ** 2)
    data = riskset.from_frame(frame, covariates=["trt", "age"], **roles)
    fit = riskset.fit(data, model, riskset.Jeffreys(), **options)
    assert fit.converged, fit.message
    assert_stationary(data, model, fit, **options)
    one = riskset.fit(data, model, riskset.Jeffreys(["trt"]), **options)   # the treatment's alone
    assert_stationary(data, model, one, ["trt"], **options)


def test_cyclops_jeffreys_prior_is_the_maximum_likelihood_estimate_of_a_glm(frame):
    cyclops = {line.split()[0]: float(line.split()[1]) for line in (REF / "cyclops.txt").read_text().splitlines()
               if not line.startswith("#") and "events" not in line}
    lr = riskset.from_frame(frame, y="y", covariates=["trt"])
    mle = riskset.fit(lr, "logistic", intercept=False, tol=1e-13)
    assert mle.coef["trt"] == pytest.approx(cyclops["logistic_no_intercept"], abs=1e-8)
    firth = riskset.fit(lr, "logistic", riskset.Jeffreys(), intercept=False)
    assert abs(firth.coef["trt"] - cyclops["logistic_no_intercept"]) > 0.1
    assert_stationary(lr, "logistic", firth, intercept=False)


def test_bootstrap_spec_and_command_line(frame, tmp_path, capsys):
    data = riskset.from_frame(frame, y="y", covariates=["trt"])
    boot = riskset.bootstrap(data, "logistic", riskset.Jeffreys(), n_boot=5, progress=False)
    assert np.isfinite(boot.estimates.to_numpy()).all()
    frame.to_csv(tmp_path / "data.csv", index=False)
    spec = {"model": "logistic", "data": "data.csv", "columns": {"y": "y"}, "covariates": ["trt"],
            "penalty": {"type": "jeffreys", "coefs": ["trt"]}}
    (tmp_path / "case.json").write_text(json.dumps(spec))
    assert cli.main(["fit", "--spec", str(tmp_path / "case.json"), "--out", str(tmp_path / "a.json")]) == 0
    assert cli.main(["fit", "--data", str(tmp_path / "data.csv"), "--y", "y", "--covariates", "trt", "--prior",
                     "jeffreys", "--jeffreys-coefs", "trt", "--out", str(tmp_path / "b.json")]) == 0
    a, b = (riskset.FitResult.from_json(tmp_path / f) for f in ("a.json", "b.json"))
    assert a.prior == b.prior == riskset.Jeffreys(["trt"])
    np.testing.assert_allclose(a.coef, b.coef)
    status = cli.main(["fit", "--data", str(tmp_path / "data.csv"), "--y", "y", "--covariates", "trt",
                       "--jeffreys-coefs", "trt"])
    assert status == 2 and "--jeffreys-coefs is an option of --prior jeffreys" in capsys.readouterr().err


def test_refusals(frame):
    data = riskset.from_frame(frame, y="y", covariates=["trt"])
    with pytest.raises(riskset.InputError, match="Jeffreys-penalized fit are not implemented"):
        riskset.fit(data, "logistic", riskset.Jeffreys(), profile=["trt"])
    with pytest.raises(riskset.InputError, match="coefs"):
        riskset.fit(data, "logistic", riskset.Jeffreys(["nope"]))
    wide = riskset.simulate(n=300, p=250, model="logistic", seed=1)
    with pytest.raises(riskset.InputError, match="at most 200"):
        riskset.fit(wide, "logistic", riskset.Jeffreys())
