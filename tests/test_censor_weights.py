"""Fine-Gray with the data's own censoring weights (Cyclops' ``censorWeights``).

References (tests/reference/censor_weights/make.R): Cyclops 3.7.0 fgr fits with given weights,
the Kaplan-Meier ones and exp(-time/15); the robust variance with the weights known from
survival::coxph on the Fine-Gray expansion, cluster(id), an independent implementation.
"""
import os

import numpy as np
import pandas as pd
import pytest

import riskset
from riskset import cli
from helpers import reference_values
from riskset.exceptions import InputError
from riskset.models import get_model

HERE = os.path.join(os.path.dirname(__file__), "reference", "censor_weights")
REF = reference_values(os.path.join(HERE, "cyclops.txt"), key_words=2)
FRAME = pd.read_csv(os.path.join(HERE, "data.csv"))


def dataset(weights=None, frame=FRAME, **kw):
    d = frame.copy()
    if weights is not None:
        d["G"] = weights
    cols = ["time", "status", "x1", "x2"] + (["G"] if weights is not None else [])
    return riskset.from_frame(d[cols], time="time", status="status",
                              censor_weights="G" if weights is not None else None, **kw)


@pytest.mark.parametrize("case", ["km", "exp"])
def test_coefficients_match_cyclops_censor_weights(case):
    fit = riskset.fit(dataset(REF[(case, "censor_weights")]), "fine_gray", tol=1e-12)
    assert fit.converged
    np.testing.assert_allclose(fit.coef.to_numpy(), REF[(case, "coef")], atol=1e-9)


def test_kaplan_meier_weights_given_equal_the_default():
    given = riskset.fit(dataset(REF[("km", "censor_weights")]), "fine_gray")
    default = riskset.fit(dataset(), "fine_gray")
    np.testing.assert_allclose(given.coef.to_numpy(), default.coef.to_numpy(), rtol=0, atol=1e-12)
    assert not given.coef.equals(riskset.fit(dataset(FRAME.w_exp), "fine_gray").coef)


def test_robust_variance_treats_given_weights_as_known():
    data = dataset(FRAME.w_exp)
    fit = riskset.fit(data, "fine_gray")
    cov = riskset.covariance(fit, data, kind="robust").to_numpy()
    np.testing.assert_allclose(cov.ravel(), REF[("exp", "robust_var")], rtol=1e-8)
    np.testing.assert_allclose(fit.se.to_numpy(), np.sqrt(np.diag(cov)), rtol=1e-10)
    assert "censoring weights taken as known" in fit.summary()
    assert fit.roles["censor_weights"] == "G"


def test_replicates_keep_the_given_weights_and_refit_the_default():
    model = get_model("fine_gray")
    w = np.ones(len(FRAME))
    w[::3] = 0.0
    given = model.datafit(dataset(FRAME.w_exp))
    np.testing.assert_array_equal(given.reweighted(w).cinv, given.cinv)
    default = model.datafit(dataset())
    assert not np.array_equal(default.reweighted(w).cinv, default.cinv)
    boot = riskset.bootstrap(dataset(FRAME.w_exp), "fine_gray", riskset.Normal(variance=1.0), n_boot=4, seed=1)
    assert np.isfinite(boot.table["lower"]).all()


@pytest.mark.parametrize("change, message", [
    (lambda g, d: g.__setitem__(0, 1.5), "must lie in [0, 1]"),
    (lambda g, d: g.__setitem__(np.flatnonzero(d.status == 2)[0], 0.0), "censoring weight 0 on a competing event"),
])
def test_bad_weights_are_refused(change, message):
    g = FRAME.w_exp.to_numpy().copy()
    change(g, FRAME)
    with pytest.raises(InputError, match=message.replace("[", r"\[").replace("]", r"\]")):
        riskset.fit(dataset(g), "fine_gray")


def test_tied_events_must_share_their_weight():
    frame = FRAME.copy()
    events = np.flatnonzero(frame.status == 1)[:2]
    frame.loc[events[1], "time"] = frame.loc[events[0], "time"]
    g = frame.w_exp.to_numpy().copy()
    g[events[1]] = g[events[0]] / 2
    with pytest.raises(InputError, match="tied at time .* different censoring weights"):
        riskset.fit(dataset(g, frame=frame), "fine_gray")


def test_other_models_refuse_censor_weights():
    data = dataset(FRAME.w_exp)
    with pytest.raises(InputError, match="the logistic model does not use censoring weights"):
        riskset.fit(riskset.from_arrays(data.X, y=(FRAME.status == 1).astype(int), censor_weights=FRAME.w_exp),
                    "logistic")


def test_command_line(tmp_path, capsys):
    run = ["fit", "--data", os.path.join(HERE, "data.csv"), "--model", "fine_gray", "--time", "time", "--status",
           "status", "--covariates", "x1,x2", "--censor-weights"]
    out = tmp_path / "fit.csv"
    assert cli.main(run + ["w_exp", "--out", str(out)]) == 0
    np.testing.assert_allclose(pd.read_csv(out)["estimate"].to_numpy(), REF[("exp", "coef")], atol=1e-8)
    capsys.readouterr()
    assert cli.main(run + ["x1"]) == 2
    assert capsys.readouterr().err.strip().startswith("riskset fit: error: censoring weights must lie in [0, 1]")
