"""What a person reads: summaries, the prior's repr, prediction kinds as R users type them,
the command line's printed table."""
import json

import numpy as np
import pandas as pd
import pytest

import riskset
from riskset import cli
from riskset.data import from_arrays


@pytest.fixture(scope="module")
def logistic_data():
    return riskset.simulate(n=300, p=40, model="logistic", seed=3)


def test_laplace_prior_shows_its_gamma_without_a_variance(logistic_data):
    assert repr(riskset.Laplace(gamma=2.0)) == "Laplace(gamma=2)"
    assert repr(riskset.Laplace(variance=2.0, exclude=["x0"])) == "Laplace(gamma=1, exclude=['x0'])"
    assert repr(riskset.Normal(variance=0.5)) == "Normal(variance=0.5)"
    assert repr(riskset.ElasticNet(1.0, 2.0)) == "ElasticNet(gamma=1, variance=2)"
    assert repr(riskset.NoPrior()) == "NoPrior()"
    summary = riskset.fit(logistic_data, "logistic", riskset.Laplace(gamma=4.0)).summary()
    assert "prior Laplace(gamma=4), 1 thread\n" in summary and "inf" not in summary.splitlines()[0]


def test_summary_leaves_out_zero_coefficients_and_says_where_they_are(logistic_data):
    fit = riskset.fit(logistic_data, "logistic", riskset.Laplace(gamma=4.0), profile=["x39"])
    table = fit.coef_table()
    zero = int(((table["estimate"] == 0) & (table["name"] != "x39")).sum())
    assert zero > 10  # the data make most coefficients zero at this rate
    summary = fit.summary(full_table="fit.csv")
    assert f"{zero:,} of {len(table):,} coefficients are zero and not shown; every row: fit.csv" in summary
    lines = summary.splitlines()
    rows = lines[lines.index(next(line for line in lines if line.lstrip().startswith("name"))) + 1:]
    assert len(rows) == len(table) - zero
    assert any(r.split()[0] == "x39" for r in rows)  # profiled: shown even at zero
    assert "standard errors: none (penalized" in summary


def test_unpenalized_summary_shows_every_row_and_its_variance():
    fit = riskset.fit(riskset.simulate(n=200, p=3, model="logistic", seed=4), "logistic")
    summary = fit.summary()
    assert "not shown" not in summary and "standard errors: model-based (inverse observed information)" in summary
    assert fit.coef_table().attrs["variance"] == "model-based"


def test_a_fit_ended_at_the_start_says_how(logistic_data):
    fit = riskset.fit(logistic_data, "logistic", riskset.Laplace(gamma=1e4))
    assert fit.n_iter == 0
    assert "converged at the start: the prior's centers are the optimum" in repr(fit)
    assert "0 cycles" not in repr(fit) + fit.summary()
    # the other way to end without a cycle: the opening's Newton steps met the KKT conditions
    polished = riskset.FitResult(**{**fit.__dict__, "message": "KKT violation 1e-15 <= kkt_tol 0.0001"})
    assert "converged at the start, by Newton steps before any cycle" in repr(polished)


@pytest.mark.parametrize("model, mean", [("logistic", lambda e: 1 / (1 + np.exp(-e))), ("poisson", np.exp),
                                         ("least_squares", lambda e: e)])
def test_glm_response_is_the_mean_as_in_r(model, mean):
    data = riskset.simulate(n=200, p=3, model=model, seed=4)
    fit = riskset.fit(data, model)
    eta = fit.predict(data, "link")
    np.testing.assert_allclose(fit.predict(data, "response"), mean(eta), rtol=1e-12)
    with pytest.raises(riskset.InputError, match=r"predictions are 'link'(, | or )'response'.*, not 'lp'"):
        fit.predict(data, "lp")


@pytest.mark.parametrize("model", ["cox", "fine_gray"])
def test_hazard_models_accept_r_lp_and_risk_and_refuse_response(model):
    data = from_arrays(np.array([[1.0], [0.0], [2.0], [1.0], [0.0], [3.0]]), time=[1, 2, 3, 4, 5, 6],
                       status=[1, 0, 1, 2 if model == "fine_gray" else 1, 1, 0])
    fit = riskset.fit(data, model)
    np.testing.assert_allclose(fit.predict(data, "lp"), fit.predict(data, "link"))
    np.testing.assert_allclose(fit.predict(data, "risk"), np.exp(fit.predict(data, "link")))
    with pytest.raises(riskset.InputError,
                       match=r"predictions are 'link', 'lp' or 'risk', not 'response'; 'response' has no single"):
        fit.predict(data, "response")


def test_conditional_logistic_accepts_lp_and_risk_and_lists_its_kinds():
    data = from_arrays(np.array([[1.0], [0.0], [0.5], [0.0], [1.0], [0.2]]), y=[1, 0, 0, 1, 0, 0],
                       strata=[0, 0, 0, 1, 1, 1])
    fit = riskset.fit(data, "conditional_logistic", riskset.Normal(variance=1.0))
    np.testing.assert_allclose(fit.predict(data, "lp"), fit.predict(data, "link"))
    np.testing.assert_allclose(fit.predict(data, "risk"), np.exp(fit.predict(data, "link")))
    with pytest.raises(riskset.InputError, match="'link', 'lp', 'risk' or 'probability', not 'response'"):
        fit.predict(data, "response")


def test_cli_prints_the_non_zero_rows_and_names_the_full_table(tmp_path, capsys):
    frame = riskset.simulate(n=300, p=40, model="logistic", seed=3)
    X = frame.X.toarray()
    table = pd.DataFrame(X, columns=frame.covariate_names).assign(y=frame.y)
    path = tmp_path / "d.csv"
    table.to_csv(path, index=False)
    out = tmp_path / "fit.csv"
    assert cli.main(["fit", "--data", str(path), "--y", "y", "--prior", "laplace", "--gamma", "4",
                     "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    full = pd.read_csv(out)
    zero = int((full["estimate"] == 0).sum())
    assert len(full) == 41 and zero > 10  # --out has every row
    assert f"{zero} of 41 coefficients are zero and not shown; every row: {out}" in printed
    lines = printed.splitlines()
    header = next(i for i, line in enumerate(lines) if line.split()[:2] == ["name", "estimate"])
    assert lines[header + 1:].index("") == 41 - zero  # the non-zero rows, then "wrote ..."
    assert cli.main(["fit", "--data", str(path), "--y", "y", "--prior", "laplace", "--gamma", "4"]) == 0
    assert "every row: write it with --out FILE.csv or FILE.json" in capsys.readouterr().out


def test_cli_help_names_the_ties_default_and_the_fine_gray_variance(capsys):
    with pytest.raises(SystemExit):
        cli.main(["fit", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert "Breslow's method by default (as Cyclops and CohortMethod; R's coxph and lifelines default to " \
           "Efron's: --option ties=\"efron\")" in text
    assert "fine_gray shows robust (sandwich) standard errors, as cmprsk::crr" in text
    assert "ties: \"breslow\" (cox default) or \"efron\" (R's coxph default)" in text


def test_saved_fit_keeps_its_variance(tmp_path):
    data = riskset.simulate(n=200, p=3, model="logistic", seed=4)
    back = riskset.FitResult.from_json(json.loads(json.dumps(riskset.fit(data, "logistic").to_json())))
    assert back.variance == "model-based"


def test_a_sandwich_too_large_for_memory_falls_back_to_model_based_said_so(monkeypatch):
    """The robust sandwich holds dense rows x coefficients arrays: past ROBUST_DENSE_LIMIT a fit
    keeps the model-based standard errors, labelled as such, with a warning saying why."""
    from riskset import api
    from riskset.exceptions import DataWarning

    x = np.array([[1.0, 0.0], [0.0, 1.0], [2.0, 1.0], [1.0, 0.0], [0.0, 0.0], [3.0, 1.0], [1.0, 1.0], [2.0, 0.0]])
    data = from_arrays(x, time=[1, 2, 3, 4, 5, 6, 7, 8], status=[1, 0, 1, 2, 1, 0, 2, 1])
    robust = riskset.fit(data, "fine_gray")
    model_based = riskset.fit(data, "fine_gray", variance="model-based")
    monkeypatch.setattr(api, "ROBUST_DENSE_LIMIT", 8 * 2 - 1)
    with pytest.warns(DataWarning, match=r"model-based, not robust.*8 x 2"):
        fallback = riskset.fit(data, "fine_gray")
    assert robust.variance == "robust" and fallback.variance == "model-based"
    np.testing.assert_allclose(fallback.se, model_based.se, rtol=1e-12)
    assert not np.allclose(fallback.se, robust.se, rtol=1e-3)
