"""The command line: help texts, simulate -> fit round trips, errors."""
import json

import pytest

from riskset import cli


@pytest.mark.parametrize("command", ["fit", "simulate", "demo", "info"])
def test_help_reads_like_documentation(command, capsys):
    with pytest.raises(SystemExit) as exit_:
        cli.main([command, "--help"])
    assert exit_.value.code == 0
    text = capsys.readouterr().out
    assert f"usage: riskset {command}" in text and len(text.splitlines()) > 4


def test_simulate_then_fit_from_duckdb_and_parquet(tmp_path, capsys):
    db = str(tmp_path / "sim.duckdb")
    assert cli.main(["simulate", "--n", "2000", "--p", "30", "--model", "logistic", "--out", db]) == 0
    out = tmp_path / "fit.json"
    assert cli.main(["fit", "--duckdb", db, "--outcomes-sql", "SELECT * FROM outcomes",
                     "--covariates-sql", "SELECT * FROM covariates", "--model", "logistic",
                     "--prior", "laplace", "--gamma", "5", "--exclude", "x0", "--out", str(out)]) == 0
    res = json.loads(out.read_text())
    assert res["converged"] and res["coef"]["x0"] != 0 and res["prior"]["gamma"] == 5
    assert "logistic model, 2000 rows" in capsys.readouterr().out
    folder = str(tmp_path / "pq")
    assert cli.main(["simulate", "--n", "2000", "--p", "30", "--model", "logistic", "--out", folder]) == 0
    csv = tmp_path / "coef.csv"
    assert cli.main(["fit", "--outcomes", f"{folder}/outcomes.parquet", "--covariates-file",
                     f"{folder}/covariates.parquet", "--prior", "laplace", "--gamma", "5", "--exclude", "x0",
                     "--out", str(csv), "--quiet"]) == 0
    import pandas as pd

    table = pd.read_csv(csv).set_index("name")
    assert table.loc["x0", "estimate"] == pytest.approx(res["coef"]["x0"], abs=1e-8)
    capsys.readouterr()
    assert cli.main(["fit", "--outcomes", f"{folder}/outcomes.parquet", "--covariates-file",
                     f"{folder}/covariates.parquet", "--prior", "laplace", "--gamma", "5", "--exclude", "x0",
                     "--progress"]) == 0
    err = capsys.readouterr().err  # the bars: the covariate rows read, the preparation, the cycles
    assert "covariates, pass 2 of 2" in err and "preparing the logistic model (2,000 rows" in err
    assert "CCD cycles" in err


def test_wide_file_with_model_options(tmp_path):
    import numpy as np
    import pandas as pd

    rng = np.random.default_rng(0)
    df = pd.DataFrame({"x": rng.normal(size=200)})
    df["y"] = df["x"] * 2 + rng.normal(size=200)
    df.to_csv(tmp_path / "d.csv", index=False)
    out = tmp_path / "r.json"
    assert cli.main(["fit", "--data", str(tmp_path / "d.csv"), "--y", "y", "--model", "least_squares",
                     "--option", "intercept=false", "--out", str(out), "--quiet"]) == 0
    res = json.loads(out.read_text())
    assert list(res["coef"]) == ["x"] and res["coef"]["x"] == pytest.approx(2, abs=0.2)


def test_errors_are_reported_with_exit_code_2(tmp_path, capsys):
    assert cli.main(["fit", "--model", "logistic"]) == 2
    assert "no data" in capsys.readouterr().err
    assert cli.main(["fit", "--outcomes", str(tmp_path / "nope.csv"), "--covariates-file", "x.csv"]) == 2
    assert "does not exist" in capsys.readouterr().err
    assert cli.main(["fit", "--data", str(tmp_path / "nope.csv"), "--prior", "laplace"]) == 2


def test_info_lists_devices(capsys):
    assert cli.main(["info"]) == 0
    out = capsys.readouterr().out
    assert "riskset" in out and "GPU" in out


def test_cross_validation_and_bootstrap_from_the_command_line(tmp_path):
    db = str(tmp_path / "sim.duckdb")
    assert cli.main(["simulate", "--n", "1500", "--p", "10", "--model", "poisson", "--out", db]) == 0
    out = tmp_path / "r.json"
    assert cli.main(["fit", "--duckdb", db, "--outcomes-sql", "SELECT * FROM outcomes", "--covariates-sql",
                     "SELECT * FROM covariates", "--model", "poisson", "--prior", "laplace", "--gamma", "1",
                     "--cv", "3", "--cv-grid", "4", "--cv-early-stop", "0", "--bootstrap", "6", "--plot-dir",
                     str(tmp_path / "plots"), "--out", str(out), "--quiet"]) == 0
    res = json.loads(out.read_text())
    assert len(res["cross_validation"]) == 4 and len(res["bootstrap"]) == 11  # every grid variance scored
    chosen = max(res["cross_validation"], key=lambda r: r["mean"])["variance"]
    assert res["prior"]["gamma"] == pytest.approx((2 / chosen) ** 0.5)
    assert (tmp_path / "plots" / "cross_validation.png").exists()
    assert (tmp_path / "plots" / "bootstrap_forest.png").exists()


def test_demo_runs_the_cohort_study(tmp_path, capsys):
    assert cli.main(["demo", "--n", "4000", "--out", str(tmp_path)]) == 0
    text = capsys.readouterr().out
    assert "Adjusted hazard ratio" in text and "profile-likelihood interval" in text
    for name in ("cohort.duckdb", "cox_fit.json", "kaplan_meier.png", "cox_cross_validation.png"):
        assert (tmp_path / name).stat().st_size > 0
    fit = json.loads((tmp_path / "cox_fit.json").read_text())
    assert fit["converged"] and fit["intervals"][0]["name"] == "treatment"
    lower, upper = fit["intervals"][0]["lower"], fit["intervals"][0]["upper"]
    assert lower < fit["coef"]["treatment"] < upper
