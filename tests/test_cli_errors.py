"""The command line never shows a traceback (issue #13, item 10).

Every bad invocation is one line ``riskset CMD: error: ...`` on stderr naming the option
or value, with exit status 2; a fit that did not converge writes its results and exits
with 1; a bug is one line with exit status 3 (``--debug`` shows the traceback).
"""
import json
import os
import subprocess
import sys
import warnings

import numpy as np
import pandas as pd
import pytest

import riskset
from riskset import cli
from riskset.selection import analyses
from riskset.solver import ccd

from helpers import HANG_SECONDS


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    """Small clean inputs and a few broken ones; {name: path}."""
    d = tmp_path_factory.mktemp("cli_errors")
    rng = np.random.default_rng(0)
    n = 60
    frame = pd.DataFrame({"x1": rng.normal(size=n), "x2": rng.integers(0, 2, n).astype(float)})
    frame["y"] = (rng.random(n) < 1 / (1 + np.exp(-frame["x1"]))).astype(float)
    frame["time"] = rng.exponential(5, n) + 0.1
    frame["status"] = (rng.random(n) < 0.7).astype(float)
    names = {"csv": "data.csv", "bad_parquet": "bad.parquet", "ragged_csv": "ragged.csv", "duckdb": "cohort.duckdb",
             "notjson": "notjson.json", "nomodel": "nomodel.json", "novariance": "novariance.json"}
    paths = {key: str(d / name) for key, name in names.items()}
    frame.to_csv(paths["csv"], index=False)
    with open(paths["bad_parquet"], "wb") as f:
        f.write(b"this is not a parquet file")
    with open(paths["ragged_csv"], "w") as f:
        f.write("x1,y\n1,0\n2,1,7\n")
    riskset.cli.main(["simulate", "--n", "200", "--p", "5", "--model", "logistic", "--out", paths["duckdb"]])
    with open(paths["notjson"], "w") as f:
        f.write("{model: cox")
    with open(paths["nomodel"], "w") as f:
        json.dump({"columns": {"y": "y"}, "data": "data.csv"}, f)
    with open(paths["novariance"], "w") as f:
        json.dump({"model": "logistic", "columns": {"y": "y"}, "covariates": ["x1"], "penalty": {"type": "l2"}}, f)
    for analysis in ("a", "b"):
        (d / analysis).mkdir()
        frame.to_csv(d / analysis / "data.csv", index=False)
        with open(d / analysis / "case.json", "w") as f:
            json.dump({"model": "logistic", "columns": {"y": "y"}, "covariates": ["x1", "x2"]}, f)
        paths[f"spec_{analysis}"] = str(d / analysis / "case.json")
    heavy = frame.assign(w=1.0)
    heavy.loc[3, "w"] = 1e300
    heavy.to_csv(d / "heavy.csv", index=False)
    pd.concat([frame, frame[["x1"]]], axis=1).to_csv(d / "twice.csv", index=False)
    stray = frame.assign(x1=frame["x1"].round(1).astype(object))
    stray.loc[17, "x1"] = "?"  # pyarrow reads "n/a" as missing (refused, naming the row)
    stray.to_csv(d / "stray.csv", index=False)
    paths.update(heavy_csv=str(d / "heavy.csv"), twice_csv=str(d / "twice.csv"), stray_csv=str(d / "stray.csv"))
    paths["missing"] = str(d / "missing.csv")
    paths["nofolder"] = str(d / "no" / "such" / "folder" / "fit.json")
    paths["dir"] = str(d)
    return paths


WIDE = ["fit", "--data", "{csv}", "--y", "y"]
DUCK = ["fit", "--duckdb", "{duckdb}", "--covariates-sql", "SELECT * FROM covariates"]

# (argv, what the one line must contain); the line starts with the argv's command
BAD = {
    "unknown model": (WIDE + ["--model", "weibull"], "unknown model 'weibull'"),
    "misspelled --option": (WIDE + ["--option", "intercpt=false"], "--option intercpt"),
    "misspelled option": (WIDE + ["--gama", "2"], "did you mean --gamma?"),
    "negative variance": (WIDE + ["--prior", "normal", "--variance", "-1"], "--variance: must be a number > 0"),
    "zero variance": (WIDE + ["--prior", "normal", "--variance", "0"], "--variance: must be a number > 0, got '0'"),
    "non-numeric variance": (WIDE + ["--prior", "normal", "--variance", "big"], "got 'big'"),
    "nan variance": (WIDE + ["--prior", "normal", "--variance", "nan"], "--variance"),
    "cv without prior": (WIDE + ["--cv", "5"], "--cv need(s) a prior"),
    "cv 1": (WIDE + ["--prior", "normal", "--variance", "1", "--cv", "1"], "--cv: must be a whole number >= 2"),
    "jobs 0": (WIDE + ["--jobs", "0"], "--jobs: must be a whole number >= 1, got '0'"),
    "bootstrap -5": (WIDE + ["--bootstrap", "-5"], "--bootstrap: must be a whole number >= 1, got '-5'"),
    "level 2": (WIDE + ["--level", "2"], "--level: must be a number in (0, 1), got '2'"),
    "tol 0": (WIDE + ["--tol", "0"], "--tol"),
    "max-iter 0": (WIDE + ["--max-iter", "0"], "--max-iter"),
    "negative seed": (WIDE + ["--seed", "-1"], "--seed"),
    "unknown prior": (WIDE + ["--prior", "lasso"], "invalid choice: 'lasso'"),
    "gamma with normal": (WIDE + ["--prior", "normal", "--variance", "1", "--gamma", "2"],
                          "--prior laplace or elastic_net, not"),
    "gamma and variance": (WIDE + ["--prior", "laplace", "--variance", "1", "--gamma", "2"], "not both"),
    "laplace without rate": (WIDE + ["--prior", "laplace"], "--prior laplace needs --gamma or --variance"),
    "exclude without prior": (WIDE + ["--exclude", "x1"], "--exclude need(s) a prior"),
    "exclude unknown": (WIDE + ["--prior", "normal", "--variance", "1", "--exclude", "x9"], "--exclude names unknown "
                                                                                           "coefficient(s) 'x9'"),
    "profile unknown": (WIDE + ["--profile", "x9"], "--profile names unknown coefficient(s) 'x9'"),
    "cv-auto without cv": (WIDE + ["--cv-auto"], "give --cv K too"),
    "cv-early-stop without cv": (WIDE + ["--cv-early-stop", "1"], "give --cv K too"),
    "cv-early-stop negative": (WIDE + ["--prior", "laplace", "--cv", "3", "--cv-early-stop", "-1"], "--cv-early-stop"),
    "cv more folds than rows": (WIDE + ["--prior", "normal", "--variance", "1", "--cv", "61"],
                                "n_folds must be between 2 and the number of units (60), got 61"),
    "weight 1e300": (["fit", "--data", "{heavy_csv}", "--y", "y", "--weights", "w"],
                     "the weights add up to 1e+300 (largest 1e+300 at row 3), beyond 1e+20"),
    "two columns of one name": (["fit", "--data", "{twice_csv}", "--y", "y"], "more than one column named 'x1'"),
    "missing file": (["fit", "--data", "{missing}", "--y", "y"], "missing.csv': the file does not exist"),
    "two sources": (WIDE + ["--duckdb", "{duckdb}"], "one source of data"),
    "outcomes alone": (["fit", "--outcomes", "{csv}"], "--outcomes needs --covariates-file"),
    "no data": (["fit", "--model", "cox"], "no data"),
    "corrupt parquet": (["fit", "--data", "{bad_parquet}", "--y", "y"], "bad.parquet', it is corrupt"),
    "ragged csv": (["fit", "--data", "{ragged_csv}", "--y", "y"], "ragged.csv', it is corrupt"),
    "sql error": (DUCK + ["--outcomes-sql", "SELEC * FROM outcomes"], "outcomes_sql failed"),
    "sql unknown table": (DUCK + ["--outcomes-sql", "SELECT * FROM outcome"], "name outcome does not exist"),
    "out into missing folder": (WIDE + ["--out", "{nofolder}"], "does not exist; create it first"),
    "float32 on cpu": (WIDE + ["--dtype", "float32"], "--dtype float32 is the precision of GPU fits"),
    "plot-dir not creatable": (WIDE + ["--plot-dir", "{csv}/plots"], "--plot-dir"),
    "out not json or csv": (WIDE + ["--out", "{dir}/fit.parquet"], "must end in .json or .csv"),
    "spec not json": (["fit", "--spec", "{notjson}"], "is not valid JSON"),
    "spec without model": (["fit", "--spec", "{nomodel}"], "lacks the field(s) 'model'"),
    "spec without variance": (["fit", "--spec", "{novariance}"], "lacks the field 'variance'"),
    "spec with prior": (["fit", "--spec", "{novariance}", "--prior", "normal"], "--spec gives the model"),
    "simulate density 2": (["simulate", "--density", "2", "--out", "{dir}/s.duckdb"], "--density: must be a number "
                                                                                      "in (0, 1]"),
    "simulate n -3": (["simulate", "--n", "-3", "--out", "{dir}/s.duckdb"], "--n: must be a whole number >= 1"),
    "simulate model": (["simulate", "--model", "weibull", "--out", "{dir}/s.duckdb"], "invalid choice: 'weibull'"),
    "simulate out folder": (["simulate", "--n", "50", "--p", "3", "--out", "{nofolder}.duckdb"], "does not exist"),
    "demo n 10": (["demo", "--n", "10"], "--n: must be a whole number >= 1000"),
    "info option": (["info", "--verbose"], "unrecognized arguments: --verbose"),
    "ode rtol": (["ode", "--model", "seir", "--rtol", "-1"], "--rtol: must be a number > 0"),
    "ode max-steps": (["ode", "--model", "seir", "--max-steps", "0"], "--max-steps"),
    "ode missing params": (["ode", "--model", "seir", "--params", "{missing}", "--times", "0:9:1", "--out",
                            "{dir}/o.csv"], "missing.csv"),
    "ode bad times": (["ode", "--model", "seir", "--params", "{csv}", "--times", "9:0:1", "--out", "{dir}/o.csv"],
                      "end 0.0 is before start 9.0"),
    "unknown command": (["fitt"], "invalid choice: 'fitt'"),
}


def fill(argv, files):
    return [a.format(**files) for a in argv]


def assert_one_line_error(err, prog, needle):
    lines = err.splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith(f"{prog}: error: "), err
    assert needle in lines[0]
    assert "Traceback" not in err and "usage:" not in err


@pytest.mark.parametrize("case", list(BAD))
def test_bad_invocation_is_one_line_with_exit_status_2(case, files, capsys):
    argv, needle = BAD[case]
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # nothing may leak as a multi-line Python warning either
        status = cli.main(fill(argv, files))
    captured = capsys.readouterr()
    prog = "riskset" if case == "unknown command" else f"riskset {argv[0]}"
    assert status == 2, captured.err
    assert_one_line_error(captured.err, prog, needle)


def test_gpu_backend_without_a_device_is_refused_before_reading_data(files, capsys, monkeypatch):
    from numba import config, cuda

    monkeypatch.setattr(config, "ENABLE_CUDASIM", False)
    monkeypatch.setattr(cuda, "is_available", lambda: False)
    assert cli.main(fill(WIDE, files) + ["--backend", "gpu"]) == 2
    assert_one_line_error(capsys.readouterr().err, "riskset fit", "--backend gpu: GPU: none found")


def test_out_folder_is_checked_before_the_fit(files, capsys, monkeypatch):
    calls = []
    monkeypatch.setattr(analyses, "fit", lambda *a, **k: calls.append(a))
    assert cli.main(fill(WIDE, files) + ["--out", files["nofolder"]]) == 2
    assert calls == []
    assert "create it first" in capsys.readouterr().err


@pytest.fixture
def no_polish(monkeypatch):
    """Newton polishing off: one cycle of coordinate descent does not reach the optimum (with
    it, a polish that settles is checked and a small fit converges in one cycle)."""
    monkeypatch.setattr(ccd, "newton_steps", lambda datafit, beta, state, *args, objective=None, **kwargs:
                        (beta, state, objective, None, ccd.NEWTON_CG_RTOL))


def test_fit_that_did_not_converge_writes_results_and_exits_1(files, tmp_path, capsys, no_polish):
    out = tmp_path / "fit.json"
    status = cli.main(fill(WIDE, files) + ["--max-iter", "1", "--tol", "1e-15", "--out", str(out)])
    err = capsys.readouterr().err
    assert status == 1
    assert_one_line_error(err, "riskset fit", "the logistic fit did not converge")
    assert str(out) in err
    assert json.loads(out.read_text())["converged"] is False


def test_many_analyses_that_did_not_converge_exit_1(files, tmp_path, capsys, no_polish):
    out = tmp_path / "all.csv"
    argv = ["fit", "--spec", files["spec_a"], "--spec", files["spec_b"], "--max-iter", "1", "--tol", "1e-15",
            "--out", str(out), "--quiet"]
    assert cli.main(argv) == 1
    assert_one_line_error(capsys.readouterr().err, "riskset fit", "2 of 2 analyses did not converge: a, b")
    assert not pd.read_csv(out)["converged"].any()


def test_converged_fit_exits_0_and_is_silent_on_stderr(files, tmp_path, capsys):
    assert cli.main(fill(WIDE, files) + ["--out", str(tmp_path / "fit.csv"), "--quiet"]) == 0
    assert capsys.readouterr().err == ""


def test_a_bug_is_one_line_with_exit_status_3_and_debug_shows_the_traceback(files, capsys, monkeypatch):
    def broken(*args, **kwargs):
        raise TypeError("unsupported operand")

    monkeypatch.setattr(analyses, "fit", broken)
    assert cli.main(fill(WIDE, files)) == 3
    assert_one_line_error(capsys.readouterr().err, "riskset fit", "internal error (TypeError: unsupported operand)")
    assert cli.main(fill(WIDE, files) + ["--debug"]) == 3
    err = capsys.readouterr().err
    assert "Traceback" in err and err.splitlines()[-1].startswith("riskset fit: error: internal error")


def test_warnings_are_one_line_each(files, capsys, monkeypatch):
    def warns(*args, **kwargs):
        warnings.warn("dropped 3 rows\nwith missing values", riskset.DataWarning)
        raise riskset.InputError("bad data")

    monkeypatch.setattr(analyses, "fit", warns)
    assert cli.main(fill(WIDE, files)) == 2
    assert capsys.readouterr().err.splitlines() == ["riskset fit: warning: dropped 3 rows with missing values",
                                                    "riskset fit: error: bad data"]


def test_numeric_column_with_stray_text_is_one_warning_line(files, capsys, monkeypatch):
    def stop(*args, **kwargs):
        raise riskset.InputError("stop")

    monkeypatch.setattr(analyses, "fit", stop)
    assert cli.main(["fit", "--data", files["stray_csv"], "--y", "y"]) == 2
    lines = capsys.readouterr().err.splitlines()
    assert len(lines) == 2 and lines[1] == "riskset fit: error: stop", lines
    assert lines[0].startswith("riskset fit: warning: column 'x1' is numeric except for '?' at row 17 (1 row(s)); "
                               "treated as categorical with "), lines


@pytest.mark.parametrize("argv, needle", [
    (["fit", "--jobs", "0"], "--jobs"),
    (["fit", "--data", "{bad_parquet}", "--y", "y"], "Parquet"),
    (["fit", "--data", "{csv}", "--y", "y", "--out", "{nofolder}"], "create it first"),
])
def test_real_process_prints_one_line_and_exits_2(argv, needle, files):
    env = dict(os.environ, PYTHONPATH=os.path.join(os.path.dirname(__file__), "..", "src"))
    proc = subprocess.run([sys.executable, "-m", "riskset.cli", *fill(argv, files)], capture_output=True, text=True,
                          env=env, timeout=HANG_SECONDS)
    assert proc.returncode == 2
    assert_one_line_error(proc.stderr, "riskset fit", needle)


def test_help_documents_the_exit_status(capsys):
    with pytest.raises(SystemExit) as exit_:
        cli.main(["fit", "--help"])
    assert exit_.value.code == 0
    text = capsys.readouterr().out
    assert "exit status: 0 success; 1 a fit did not converge" in text and "--debug" in text


def test_cv_needs_a_prior_but_no_starting_variance(files, capsys):
    argv = fill(WIDE, files) + ["--prior", "laplace", "--cv", "3", "--cv-grid", "3", "--quiet"]
    assert cli.main(argv) == 0
    assert capsys.readouterr().err == ""
