"""The ``ode`` subcommand, driven through argparse like the main CLI."""

import argparse

import numpy as np
import pandas as pd
import pytest

from riskset.ode.cli import add_parser, main, parse_times

from .test_ode_reference import BUNDLED


def _parser():
    parser = argparse.ArgumentParser(prog="riskset")
    sub = parser.add_subparsers(dest="command")
    add_parser(sub)
    return parser


def _run(argv):
    args = _parser().parse_args(argv)
    assert args.func is main
    return main(args)


def test_help_reads_like_documentation(capsys):
    with pytest.raises(SystemExit) as exc:
        _parser().parse_args(["ode", "--help"])
    assert exc.value.code == 0
    text = capsys.readouterr().out
    for needle in ("--spec", "--params", "--times", "beta, sigma, gamma",
                   "kel, kcp", "parquet", "exit status", "0:365:1"):
        assert needle in text


@pytest.mark.parametrize("ext", ["csv", "parquet"])
def test_spec_reproduces_reference(tmp_path, ext, capsys):
    out = tmp_path / f"seir.{ext}"
    assert _run(["ode", "--spec", str(BUNDLED / "case.json"), "--out",
                 str(out), "--quiet"]) == 0
    got = pd.read_csv(out) if ext == "csv" else pd.read_parquet(out)
    ref = pd.read_csv(BUNDLED / "data.csv")
    assert list(got.columns) == ["set", "t", "S", "E", "I", "R"]
    assert got[["set", "t"]].astype(float).equals(
        ref[["set", "t"]].astype(float))
    for s in "SEIR":
        r = ref[s].to_numpy()
        assert np.all(np.abs(got[s].to_numpy() - r) <= 1e-6 + 1e-6 * abs(r))


def test_params_table_times_plot_and_failures(tmp_path, capsys):
    df = pd.DataFrame({"beta": [0.5, 0.9, np.nan], "sigma": [0.2, 0.3, 0.2],
                       "gamma": [0.1, 0.2, 0.1], "S": 1e5 - 5, "E": 0.0,
                       "I": 5.0, "R": 0.0})
    pfile = tmp_path / "sets.parquet"
    df.to_parquet(pfile)
    out = tmp_path / "o.csv"
    png = tmp_path / "I.png"
    rc = _run(["ode", "--model", "seir", "--params", str(pfile), "--times",
               "0:60:2", "--rtol", "1e-8", "--atol", "1e-8", "--out",
               str(out), "--plot", str(png)])
    assert rc == 1  # the NaN task failed, the others are written
    err = capsys.readouterr().err
    assert "nonfinite" in err and "3 task(s)" in err
    got = pd.read_csv(out)
    assert got["set"].unique().tolist() == [1, 2, 3]
    assert np.allclose(got["t"].unique(), np.arange(0, 61, 2))
    assert got.loc[got["set"] == 3, "S"].isna().all()
    assert got.loc[got["set"] == 1, "S"].notna().all()
    assert png.stat().st_size > 1000


def test_bad_input_exit_code(tmp_path, capsys):
    df = pd.DataFrame({"beta": [0.5], "sigma": [0.2], "S": 1.0, "E": 0.0,
                       "I": 1.0, "R": 0.0})
    f = tmp_path / "p.csv"
    df.to_csv(f, index=False)
    assert _run(["ode", "--model", "seir", "--params", str(f), "--times",
                 "0:10:1", "--out", str(tmp_path / "o.csv")]) == 2
    assert "gamma" in capsys.readouterr().err
    from riskset import cli  # options are checked while parsing: one line, exit 2

    assert cli.main(["ode", "--spec", str(BUNDLED / "case.json"), "--out",
                     str(tmp_path / "o.csv"), "--rtol", "0"]) == 2
    assert "--rtol: must be a number > 0" in capsys.readouterr().err
    assert _run(["ode", "--model", "seir", "--out", "x.csv"]) == 2
    assert "--params" in capsys.readouterr().err


def test_parse_times():
    np.testing.assert_array_equal(parse_times("0:365:1"), np.arange(366.0))
    np.testing.assert_allclose(parse_times("0:1:0.1"), np.linspace(0, 1, 11))
    np.testing.assert_array_equal(parse_times("0,1,7,30"), [0, 1, 7, 30])
    with pytest.raises(ValueError):
        parse_times("a:b")


def test_gpu_backend_without_gpu(tmp_path, capsys):
    from numba import cuda

    from riskset.ode import gpu
    if gpu.simulator_enabled() or cuda.is_available():
        pytest.skip("a GPU or the simulator is available")
    rc = _run(["ode", "--spec", str(BUNDLED / "case.json"), "--out",
               str(tmp_path / "o.csv"), "--backend", "gpu"])
    assert rc == 2
    assert "no CUDA GPU" in capsys.readouterr().err
    assert not (tmp_path / "o.csv").exists()
