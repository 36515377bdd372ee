"""Specifications and command-line flags as a user meets them (issue #14, items 1, 2, 8, 7's ``%%``).

Every flag takes effect with one spec, several specs and without a spec, or is refused
with one line and exit status 2; ``--out`` keeps every table and says where; every prior
of the API is expressible in a spec and on the command line; a spec written from a fit
fits the same coefficients again; no ``--help`` shows a formatting glitch.
"""
import json

import numpy as np
import pandas as pd
import pytest

import riskset
from riskset import cli
from riskset.backend import Backend
from riskset.selection import analyses
from riskset.api import run_spec
from riskset.spec import load_spec, prior_from_penalty, spec_from_fit


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    """A small logistic / survival table and two ridge-logistic specs on it; {name: path}."""
    d = tmp_path_factory.mktemp("cli_spec")
    rng = np.random.default_rng(3)
    n = 120
    frame = pd.DataFrame({"x1": rng.normal(size=n), "x2": rng.integers(0, 2, n).astype(float),
                          "x3": rng.normal(size=n), "site": rng.integers(0, 3, n)})
    frame["y"] = (rng.random(n) < 1 / (1 + np.exp(-frame["x1"] - 0.5 * frame["x2"]))).astype(float)
    frame["time"] = np.round(rng.exponential(5, n) + 0.1, 1)  # rounded: ties for Efron
    frame["status"] = (rng.random(n) < 0.7).astype(float)
    frame["event"] = rng.integers(0, 3, n)  # 0 censored, 1 the event, 2 a competing event
    paths = {"csv": str(d / "data.csv"), "dir": str(d)}
    frame.to_csv(paths["csv"], index=False)
    for analysis in ("a", "b"):
        (d / analysis).mkdir()
        frame.to_csv(d / analysis / "data.csv", index=False)
        spec = {"model": "logistic", "columns": {"y": "y"}, "covariates": ["x1", "x2", "x3"],
                "penalty": {"type": "l2", "variance": 1.0, "unpenalized": ["intercept"]}}
        (d / analysis / "case.json").write_text(json.dumps(spec))
        paths[f"spec_{analysis}"] = str(d / analysis / "case.json")
    (d / "mle.json").write_text(json.dumps({"model": "logistic", "columns": {"y": "y"}, "covariates": ["x1"]}))
    paths["mle"] = str(d / "mle.json")
    return paths


def run(argv, capsys):
    """(exit status, stdout, stderr) of ``riskset ARGV``."""
    status = cli.main(argv)
    captured = capsys.readouterr()
    return status, captured.out, captured.err


SELECT = ["--cv", "3", "--cv-grid", "3", "--bootstrap", "4"]


# -- item 1 and 2: a spec combines with --cv and --bootstrap, and --out keeps their tables --------------------
def test_spec_with_cv_and_bootstrap_writes_every_table_beside_the_csv(files, tmp_path, capsys):
    out = tmp_path / "result.csv"
    status, stdout, _ = run(["fit", "--spec", files["spec_a"], *SELECT, "--out", str(out)], capsys)
    assert status == 0
    cv = pd.read_csv(tmp_path / "result_cross_validation.csv")
    boot = pd.read_csv(tmp_path / "result_bootstrap.csv")
    coefficients = pd.read_csv(out)
    assert len(cv) == 3 and list(coefficients["name"]) == ["intercept", "x1", "x2", "x3"]
    assert len(boot) == 4
    last = stdout.strip().splitlines()[-1]
    assert last.startswith("wrote ") and all(str(p) in last for p in (out, tmp_path / "result_bootstrap.csv",
                                                                     tmp_path / "result_cross_validation.csv"))


def test_spec_with_cv_fits_the_chosen_prior_into_the_json(files, tmp_path, capsys):
    out = tmp_path / "result.json"
    status, _, _ = run(["fit", "--spec", files["spec_a"], *SELECT, "--profile", "x1", "--out", str(out)], capsys)
    assert status == 0
    result = json.loads(out.read_text())
    assert len(result["cross_validation"]) == 3 and len(result["bootstrap"]) == 4
    assert [i["name"] for i in result["intervals"]] == ["x1"]
    chosen = pd.DataFrame(result["cross_validation"])
    assert result["prior"]["variance"] != 1.0  # the spec's variance was a start, the grid chose another
    assert np.isclose(chosen["variance"], result["prior"]["variance"]).any()


def test_several_specs_with_cv_and_bootstrap_write_one_table_of_each_kind(files, tmp_path, capsys):
    out = tmp_path / "all.csv"
    status, stdout, _ = run(["fit", "--spec", files["spec_a"], "--spec", files["spec_b"], *SELECT, "--quiet",
                             "--out", str(out)], capsys)
    assert status == 0 and stdout == ""
    for path in (out, tmp_path / "all_cross_validation.csv", tmp_path / "all_bootstrap.csv"):
        assert sorted(pd.read_csv(path)["analysis"].unique()) == ["a", "b"]


def test_every_table_is_written_in_the_format_of_out(files, tmp_path, capsys):
    out = tmp_path / "all.json"
    status, _, _ = run(["fit", "--spec", files["spec_a"], "--spec", files["spec_b"], "--bootstrap", "3",
                        "--out", str(out)], capsys)
    assert status == 0
    assert len(json.loads((tmp_path / "all_bootstrap.json").read_text())) == 2 * 4


def test_level_sets_the_width_of_the_written_intervals(files, tmp_path, capsys):
    widths = []
    for level in ("0.5", "0.95"):
        out = tmp_path / f"level{level}.csv"
        assert run(["fit", "--spec", files["mle"], "--level", level, "--out", str(out), "--quiet"], capsys)[0] == 0
        table = pd.read_csv(out)
        widths.append((table["upper"] - table["lower"]).to_numpy())
    assert np.all(widths[0] < widths[1])


@pytest.mark.parametrize("several", [False, True], ids=["one spec", "several specs"])
def test_backend_and_dtype_reach_every_fit_of_a_spec(files, capsys, monkeypatch, several):
    seen = []
    real_fit = riskset.fit

    def recording_fit(*args, **kwargs):
        seen.append((kwargs["backend"], kwargs["dtype"]))
        return real_fit(*args, **kwargs | {"backend": "cpu", "dtype": "float64"})

    monkeypatch.setattr(Backend, "problem", lambda self: None)  # as if a GPU were there
    monkeypatch.setattr(analyses, "fit", recording_fit)
    specs = ["--spec", files["spec_a"]] + (["--spec", files["spec_b"]] if several else [])
    assert run(["fit", *specs, "--backend", "gpu", "--dtype", "float32", "--quiet"], capsys)[0] == 0
    assert seen and set(seen) == {("gpu", "float32")}


# -- item 1: what cannot take effect is refused -----------------------------------------------------------
WIDE = ["fit", "--data", "{csv}", "--y", "y"]
SPEC = ["fit", "--spec", "{spec_a}"]
TWO_SPECS = SPEC + ["--spec", "{spec_b}"]
REFUSED = {
    "spec and --prior": (SPEC + ["--prior", "normal"], "--prior cannot be used with it"),
    "spec and a column": (SPEC + ["--time", "time"], "--time cannot be used with it"),
    "spec and --covariates": (SPEC + ["--covariates", "x1"], "--covariates cannot be used with it"),
    "spec and --variances": (SPEC + ["--variances", "x1=2"], "--variances cannot be used with it"),
    "spec and --exclude": (SPEC + ["--exclude", "x1"], "--exclude cannot be used with it"),
    "--cv on a spec without prior": (["fit", "--spec", "{mle}", "--cv", "3"], "the specification's prior is 'none'"),
    "--seed alone": (WIDE + ["--seed", "3"], "--seed seeds the folds"),
    "--seed alone with a spec": (SPEC + ["--seed", "3"], "--seed seeds the folds"),
    "--dask alone": (WIDE + ["--dask", "local"], "--dask runs replicate fits"),
    "--jobs alone": (WIDE + ["--jobs", "2"], "--jobs runs replicate fits"),
    "--plot-dir alone": (WIDE + ["--plot-dir", "{dir}"], "--plot-dir plots"),
    "--progress with several specs": (TWO_SPECS + ["--progress"], "--progress show(s) one fit"),
    "--plot-dir with several specs": (TWO_SPECS + ["--cv", "3", "--plot-dir", "{dir}"], "--plot-dir show(s)"),
    "--covariates with long tables": (["fit", "--outcomes", "{csv}", "--covariates-file", "{csv}", "--covariates",
                                       "x1"], "--covariates picks the covariate columns of a wide --data"),
    "elastic net without variance": (WIDE + ["--prior", "elastic_net", "--gamma", "1"], "needs both --gamma"),
    "elastic net and --cv": (WIDE + ["--prior", "elastic_net", "--cv", "3"], "an elastic_net prior has two"),
    "--variances without prior": (WIDE + ["--variances", "x1=2"], "--variances need(s) a prior"),
    "--variances not NAME=V": (WIDE + ["--prior", "normal", "--variance", "1", "--variances", "x1"],
                               "expects NAME=VARIANCE"),
    "--variances negative": (WIDE + ["--prior", "normal", "--variance", "1", "--variances", "x1=-1"],
                             "must be a number > 0"),
}


@pytest.mark.parametrize("case", list(REFUSED))
def test_a_flag_that_cannot_take_effect_is_refused(files, capsys, monkeypatch, case):
    argv, needle = REFUSED[case]
    monkeypatch.setattr(analyses, "fit", lambda *a, **k: pytest.fail("fitted despite a refused option"))
    status, _, err = run([a.format(**files) for a in argv], capsys)
    assert status == 2, err
    lines = err.splitlines()
    assert len(lines) == 1 and lines[0].startswith("riskset fit: error: ") and needle in lines[0], err


# -- item 8: every prior in a spec and on the command line; spec <-> fit round trip ------------------------
def test_elastic_net_on_the_command_line_and_in_a_spec_matches_the_api(files, tmp_path, capsys):
    frame = pd.read_csv(files["csv"])
    data = riskset.from_frame(frame, y="y", covariates=["x1", "x2", "x3"])
    prior = riskset.Prior("elastic_net", gamma=3.0, variance=0.5, exclude=("x1",), variances={"x2": 4.0})
    expected = riskset.fit(data, "logistic", prior, tol=1e-12).coef
    out = tmp_path / "enet.json"
    argv = ["fit", "--data", files["csv"], "--y", "y", "--covariates", "x1,x2,x3", "--prior", "elastic_net",
            "--gamma", "3", "--variance", "0.5", "--exclude", "x1", "--variances", "x2=4", "--tol", "1e-12",
            "--out", str(out), "--quiet"]
    assert run(argv, capsys)[0] == 0
    result = json.loads(out.read_text())
    assert result["prior"] == prior.to_dict()
    np.testing.assert_allclose(pd.Series(result["coef"])[expected.index], expected, rtol=0, atol=1e-12)
    spec = {"model": "logistic", "data": "data.csv", "columns": {"y": "y"}, "covariates": ["x1", "x2", "x3"],
            "penalty": {"type": "elastic_net", "gamma": 3.0, "variance": 0.5, "unpenalized": ["x1"],
                        "variances": {"x2": 4.0}}}
    path = tmp_path / "enet_case.json"
    path.write_text(json.dumps(spec))
    (tmp_path / "data.csv").write_text(open(files["csv"]).read())
    np.testing.assert_allclose(run_spec(str(path)).coef, expected, rtol=0, atol=1e-12)


ROUND_TRIPS = {
    "logistic, elastic net, no intercept": (
        "logistic", {"y": "y"}, dict(intercept=False),
        riskset.Prior("elastic_net", gamma=2.0, variance=0.7, exclude=("x1",), variances={"x3": 3.0})),
    "cox, Efron, strata, Laplace with variances": (
        "cox", {"time": "time", "status": "status", "strata": "site"}, dict(ties="efron"),
        riskset.Laplace(gamma=4.0, exclude=["x2"], variances={"x1": 5.0})),
    "cox, time-varying coefficient, normal": (
        "cox", {"time": "time", "status": "status"}, dict(time_varying={"x1": [3.0]}), riskset.Normal(0.3)),
    "fine_gray, competing events": (
        "fine_gray", {"time": "time", "status": "event"}, dict(competing_events=[2]), riskset.Laplace(gamma=1.0)),
}


@pytest.mark.parametrize("case", list(ROUND_TRIPS))
def test_a_spec_written_from_a_fit_fits_the_same_coefficients(files, tmp_path, case):
    model, columns, options, prior = ROUND_TRIPS[case]
    frame = pd.read_csv(files["csv"])
    data = riskset.from_frame(frame, covariates=["x1", "x2", "x3"], **columns)  # not "event" nor "site"
    first = riskset.fit(data, model, prior, tol=1e-12, **options)
    path = tmp_path / "case.json"
    path.write_text(json.dumps(first.to_spec(columns=columns)))
    frame.to_csv(tmp_path / "data.csv", index=False)
    spec, _ = load_spec(str(path))
    assert spec["covariates"] == ["x1", "x2", "x3"] and spec["model"] == model
    again = run_spec(str(path))
    assert again.prior == first.prior and again.model_options == first.model_options
    np.testing.assert_array_equal(again.coef, first.coef)


def test_spec_from_fit_names_the_data_and_keeps_model_options(files):
    frame = pd.read_csv(files["csv"])
    fit = riskset.fit(riskset.from_frame(frame, y="y", covariates=["x1"]), "logistic", riskset.Normal(2.0),
                      intercept=False)
    spec = spec_from_fit(fit, columns={"y": "y"}, data="cohort.csv")
    assert spec == {"model": "logistic", "data": "cohort.csv", "columns": {"y": "y"}, "covariates": ["x1"],
                    "intercept": False, "penalty": {"type": "l2", "variance": 2.0}}


@pytest.mark.parametrize("penalty, needle", [
    ({"type": "elastic_net", "gamma": 1.0}, "lacks the field 'variance'"),
    ({"type": "l1", "gamma": 1.0, "variance": 2.0}, "takes one of 'gamma' or 'variance'"),
    ({"type": "l2", "variance": 1.0, "gamma": 1.0}, "type 'l2' has no 'gamma'"),
    ({"type": "l2", "varaince": 1.0}, "unknown key(s) 'varaince'"),
    ({"type": "ridge", "variance": 1.0}, "unknown type 'ridge'"),
    ({"type": "none", "unpenalized": ["x1"]}, "penalizes nothing"),
    ({"type": "l1", "variance": -1.0}, "must be a positive number"),
])
def test_a_penalty_that_says_something_wrong_is_refused_by_name(penalty, needle):
    with pytest.raises(riskset.InputError) as err:
        prior_from_penalty(penalty)
    assert needle in str(err.value)


def test_every_penalty_type_reads_back_the_prior_it_was_written_from():
    from riskset.spec import penalty_from_prior

    priors = [riskset.NoPrior(), riskset.Laplace(variance=2.0), riskset.Normal(0.5, exclude=["a"]),
              riskset.Prior("elastic_net", gamma=1.0, variance=3.0, variances={"b": 2.0})]
    for prior in priors:
        assert prior_from_penalty(json.loads(json.dumps(penalty_from_prior(prior)))) == prior


# -- item 7's %%: help texts render cleanly -------------------------------------------------------------------
def test_no_help_shows_a_formatting_glitch():
    parser = cli.build_parser()
    for name, text in [("riskset", parser.format_help())] + [(n, p.format_help()) for n, p in parser.commands.items()]:
        assert "%%" not in text and "%(" not in text, name
    assert "80% of the true" in parser.commands["simulate"].format_help()
