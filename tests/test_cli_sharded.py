"""``riskset fit --shards``: one fit over rows split into shards that Dask workers read (Parquet
files matched by globs, or DuckDB queries per shard) ends at the coefficients of the fit of the
whole data, writes the same summary and --out JSON as any fit (with ``sharding``); with --cv and
--bootstrap, the choice and the draws of riskset.cross_validate and riskset.bootstrap of the same
shards, written as on one machine; and refuses what a sharded fit does not do with one line and
exit status 2 before any cluster is started."""
import json
import warnings

import numpy as np
import pandas as pd
import pytest
import scipy.sparse as sp

import riskset
from riskset import cli
from riskset.cli import fit as fit_command

distributed = pytest.importorskip("distributed")

N_SHARDS = 3


def _long_tables(data):
    """The OHDSI long tables (outcomes, covariates) of ``data``."""
    coo = sp.coo_matrix(data.X)
    outcomes = pd.DataFrame({"row_id": data.row_ids, "time": data.time, "status": data.status})
    covariates = pd.DataFrame({"row_id": data.row_ids[coo.row],
                               "covariate_id": [int(n[1:]) for n in np.asarray(data.covariate_names)[coo.col]],
                               "value": coo.data})
    return outcomes, covariates


@pytest.fixture(scope="module")
def cohort(tmp_path_factory):
    """Cox data as three pairs of Parquet shards and as one DuckDB file; with the fit of the
    whole data (riskset.from_long of the concatenated tables)."""
    folder = tmp_path_factory.mktemp("sharded_cli")
    data = riskset.simulate(n=600, p=8, model="cox", seed=7)
    outcomes, covariates = _long_tables(data)
    for k, rows in enumerate(np.array_split(outcomes["row_id"].to_numpy(), N_SHARDS)):
        outcomes[outcomes["row_id"].isin(rows)].to_parquet(folder / f"outcomes-{k}.parquet")
        covariates[covariates["row_id"].isin(rows)].to_parquet(folder / f"covariates-{k}.parquet")
    import duckdb

    database = str(folder / "cohort.duckdb")
    with duckdb.connect(database) as con:
        con.execute("CREATE TABLE outcomes AS SELECT * FROM outcomes")
        con.execute("CREATE TABLE covariates AS SELECT * FROM covariates")
    whole = riskset.from_long(pd.concat([pd.read_parquet(folder / f"outcomes-{k}.parquet") for k in range(N_SHARDS)]),
                              pd.concat([pd.read_parquet(folder / f"covariates-{k}.parquet")
                                         for k in range(N_SHARDS)]))
    return {"folder": folder, "duckdb": database, "whole": whole}


def _same_as_whole(out, whole, model="cox", prior=None):
    res = json.loads(out.read_text())
    one = riskset.fit(whole, model, prior or riskset.Laplace(variance=0.1), kkt_tol=1e-8)
    assert res["converged"]
    assert list(res["coef"]) == list(one.coef.index)
    np.testing.assert_allclose([res["coef"][n] for n in one.coef.index], one.coef.to_numpy(), atol=1e-6)
    return res


def test_parquet_shards_on_a_local_cluster(cohort, tmp_path, capsys):
    folder, out = cohort["folder"], tmp_path / "fit.json"
    status = cli.main(["fit", "--dask", "local", "--shards", str(folder / "outcomes-*.parquet"),
                       "--shard-covariates", str(folder / "covariates-*.parquet"), "--model", "cox",
                       "--prior", "laplace", "--variance", "0.1", "--progress", "--out", str(out)])
    captured = capsys.readouterr()
    assert status == 0, captured.err
    res = _same_as_whole(out, cohort["whole"])
    assert res["sharding"]["shards"] == N_SHARDS and res["sharding"]["workers"] >= 1
    assert res["sharding"]["rounds"] > 0 and res["sharding"]["bytes_exchanged"] > 0
    assert "cox model, 600 rows" in captured.out and f"{N_SHARDS} shards on" in captured.out
    assert f"wrote {out}" in captured.out
    assert "Newton iterations" in captured.err  # the progress bar over the outer iterations


def test_duckdb_shards_on_a_scheduler_address(cohort, tmp_path, capsys):
    out = tmp_path / "fit.json"
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=False, protocol="tcp",
                                  dashboard_address=None, scheduler_kwargs={"dashboard_address": "127.0.0.1:0"}
                                  ) as cluster:
        address = cluster.scheduler_address
        assert address.startswith("tcp://")
        status = cli.main(["fit", "--dask", address, "--duckdb", cohort["duckdb"], "--shards", str(N_SHARDS),
                           "--outcomes-sql", "SELECT * FROM outcomes WHERE row_id % {n_shards} = {shard}",
                           "--covariates-sql", "SELECT * FROM covariates WHERE row_id % {n_shards} = {shard}",
                           "--model", "cox", "--prior", "normal", "--variance", "0.5", "--out", str(out), "--quiet"])
    captured = capsys.readouterr()
    assert status == 0, captured.err
    assert captured.out == ""
    res = _same_as_whole(out, cohort["whole"], prior=riskset.Normal(variance=0.5))
    assert res["sharding"]["shards"] == N_SHARDS


def _parquet_argv(folder, *more):
    return [a.format(folder=folder) for a in PARQUET] + list(more)


def test_cross_validation_and_bootstrap_over_parquet_shards(cohort, tmp_path, capsys):
    """--cv 3 --cv-grid 3 --bootstrap 3 choose the variance of riskset.cross_validate on the same
    shards (same seed), bootstrap with it as riskset.bootstrap does, fit the whole data at it, and
    write the one-machine tables, JSON and plots."""
    from riskset.sharded import parquet_shards

    folder, out, plots = cohort["folder"], tmp_path / "fit.json", tmp_path / "plots"
    status = cli.main(_parquet_argv(folder, "--prior", "laplace", "--cv", "3", "--cv-grid", "3", "--bootstrap", "3",
                                    "--seed", "5", "--plot-dir", str(plots), "--out", str(out)))
    captured = capsys.readouterr()
    assert status == 0, captured.err
    shards = parquet_shards(str(folder / "outcomes-*.parquet"), str(folder / "covariates-*.parquet"))
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=False, dashboard_address=None,
                                  scheduler_kwargs={"dashboard_address": "127.0.0.1:0"}) as cluster, \
            distributed.Client(cluster) as client:
        cv = riskset.cross_validate(shards, "cox", riskset.Laplace(variance=1.0), executor=client, n_folds=3, n_grid=3,
                                    seed=5, progress=False, refit=False)
        boot = riskset.bootstrap(shards, "cox", cv.prior, executor=client, n_boot=3, seed=5, progress=False)
    res = _same_as_whole(out, cohort["whole"], prior=cv.prior)
    summary = pd.DataFrame(res["cross_validation"])
    assert summary["variance"][summary["mean"].idxmax()] == pytest.approx(cv.selected_variance, rel=1e-12)
    np.testing.assert_allclose(summary["mean"], cv.summary["mean"], rtol=1e-8)
    assert res["prior"]["gamma"] == pytest.approx((2 / cv.selected_variance) ** 0.5)
    table = pd.DataFrame(res["bootstrap"])
    assert list(table["name"]) == list(cohort["whole"].covariate_names) == list(res["coef"])
    np.testing.assert_allclose(table[["lower", "upper"]], boot.table[["lower", "upper"]], rtol=1e-6, atol=1e-9)
    assert (plots / "cross_validation.png").stat().st_size > 0 and (plots / "bootstrap_forest.png").stat().st_size > 0
    assert "\ncross validation:\n" in captured.out and "\nbootstrap:\n" in captured.out
    assert f"wrote {out} (the fit, cross-validation, bootstrap)" in captured.out
    assert "sharded cross-validation" in captured.err and "sharded bootstrap (3 draws)" in captured.err


def test_bootstrap_over_parquet_shards_writes_its_table_beside_the_csv(cohort, tmp_path, capsys):
    out = tmp_path / "fit.csv"
    status = cli.main(_parquet_argv(cohort["folder"], "--prior", "normal", "--variance", "0.5", "--bootstrap", "3",
                                    "--out", str(out), "--quiet"))
    captured = capsys.readouterr()
    assert status == 0, captured.err
    assert captured.out == ""
    table = pd.read_csv(tmp_path / "fit_bootstrap.csv", dtype={"name": str})
    assert list(table["name"]) == list(cohort["whole"].covariate_names)
    assert list(table.columns) == ["name", "estimate", "lower", "upper", "nonzero_proportion"]
    assert (table["lower"] <= table["upper"]).all() and (table["nonzero_proportion"] == 1).all()
    coefficients = pd.read_csv(out, dtype={"name": str})
    one = riskset.fit(cohort["whole"], "cox", riskset.Normal(variance=0.5), kkt_tol=1e-8)
    np.testing.assert_allclose(coefficients["estimate"], one.coef.to_numpy(), atol=1e-6)


PARQUET = ["fit", "--dask", "local", "--shards", "{folder}/outcomes-*.parquet", "--shard-covariates",
           "{folder}/covariates-*.parquet", "--model", "cox"]
DUCK = ["fit", "--dask", "local", "--duckdb", "{duckdb}", "--outcomes-sql",
        "SELECT * FROM outcomes WHERE row_id % {{n_shards}} = {{shard}}", "--covariates-sql",
        "SELECT * FROM covariates WHERE row_id % {{n_shards}} = {{shard}}"]

# (argv, what the one line must contain)
REFUSED = {
    "cv repeats": (PARQUET + ["--prior", "laplace", "--cv", "3", "--cv-repeats", "2"],
                   "--shards does not support --cv-repeats 2: a sharded fit runs on the CPUs of the Dask workers"),
    "cv auto": (PARQUET + ["--prior", "laplace", "--cv", "3", "--cv-auto", "--cv-repeats", "4"],
                "--shards does not support --cv-repeats 4, --cv-auto: "),
    "bootstrap and profile": (PARQUET + ["--bootstrap", "5", "--profile", "1"],
                              "--shards does not support --profile: "),
    "cv without a prior": (PARQUET + ["--cv", "3"], "--cv need(s) a prior"),
    "cv of elastic net": (PARQUET + ["--prior", "elastic_net", "--cv", "3"],
                          "--cv chooses the variance of a laplace or normal prior"),
    "seed without cv or bootstrap": (PARQUET + ["--prior", "laplace", "--variance", "1", "--seed", "3"],
                                     "--seed seeds the folds and bootstrap samples, and there is none to run"),
    "cv grid without cv": (PARQUET + ["--prior", "laplace", "--variance", "1", "--cv-grid", "3"],
                           "--cv-grid set(s) up cross-validation: give --cv K too"),
    "backend gpu": (PARQUET + ["--backend", "gpu"], "--shards does not support --backend gpu"),
    "spec": (["fit", "--dask", "local", "--shards", "{folder}/outcomes-*.parquet", "--spec", "{folder}/case.json"],
             "--shards does not support --spec"),
    "approximate": (PARQUET + ["--approximate", "1", "--out", "{folder}/a.json"],
                    "--shards does not support --approximate"),
    "normalize": (PARQUET + ["--normalize", "stdev"], "--shards does not support --normalize"),
    "fixed": (PARQUET + ["--fixed", "1=0.5"], "--shards does not support --fixed"),
    "bar prior": (PARQUET + ["--prior", "bar"], "--shards does not support --prior bar"),
    "iht prior": (PARQUET + ["--prior", "iht", "--max-nonzero", "2"], "--shards does not support --prior iht"),
    "jeffreys prior": (PARQUET + ["--prior", "jeffreys"], "--shards does not support --prior jeffreys"),
    "hierarchical prior": (PARQUET + ["--prior", "hierarchical", "--groups", "1=a", "--variance", "1"],
                           "--shards does not support --prior hierarchical"),
    "jobs": (PARQUET + ["--jobs", "2"], "--shards does not support --jobs"),
    "covariate ref": (PARQUET + ["--covariate-ref", "{folder}/ref.csv"], "--shards does not support --covariate-ref"),
    "no dask": (["fit"] + PARQUET[3:], "--shards needs --dask ADDRESS"),
    "dask not an address": (["fit", "--dask", "myhost"] + PARQUET[3:], "--dask 'myhost': give a scheduler address"),
    "no file matches": (["fit", "--dask", "local", "--shards", "{folder}/nothing-*.parquet", "--shard-covariates",
                         "{folder}/covariates-*.parquet"], "no outcomes file matches"),
    "covariates files do not pair": (["fit", "--dask", "local", "--shards", "{folder}/outcomes-*.parquet",
                                      "--shard-covariates", "{folder}/covariates-1.parquet"],
                                     "3 outcomes files match"),
    "no covariates glob": (PARQUET[:5], "--shards GLOB (the outcomes files) needs --shard-covariates GLOB"),
    "a number without duckdb": (["fit", "--dask", "local", "--shards", "8"],
                                "with --duckdb, --shards 8 is the number of shards"),
    "shards not a number with duckdb": (DUCK + ["--shards", "many"],
                                        "--shards 'many': with --duckdb, the number of shards"),
    "shards 0 with duckdb": (DUCK + ["--shards", "0"], "must be a whole number >= 1, got '0'"),
    "query without shard": (["fit", "--dask", "local", "--duckdb", "{duckdb}", "--shards", "2", "--outcomes-sql",
                             "SELECT * FROM outcomes", "--covariates-sql", "SELECT * FROM covariates WHERE {{shard}}"],
                            "--outcomes-sql must pick the rows of one shard with {shard}"),
    "query with other braces": (["fit", "--dask", "local", "--duckdb", "{duckdb}", "--shards", "2", "--outcomes-sql",
                                 "SELECT * FROM outcomes WHERE row_id % {{n_shards}} = {{shard}} AND '{{x}}' = '{{x}}'",
                                 "--covariates-sql", "SELECT * FROM covariates WHERE {{shard}} = {{shard}}"],
                                "outcomes_sql has braces other than {shard} and {n_shards}"),
    "shard covariates with duckdb": (DUCK + ["--shards", "2", "--shard-covariates", "x-*.parquet"],
                                     "with --duckdb each shard's covariates come from --covariates-sql"),
    "shard-by without shards": (["fit", "--data", "x.csv", "--shard-by", "stratum"],
                                "--shard-by set(s) up a sharded fit: give --shards too"),
    "two sources": (PARQUET + ["--outcomes", "{folder}/outcomes-0.parquet", "--covariates-file",
                               "{folder}/covariates-0.parquet"], "give one source of data"),
    "globs the shell expanded": (["fit", "--dask", "local", "--shards", "{folder}/outcomes-0.parquet",
                                  "{folder}/outcomes-1.parquet", "--shard-covariates", "{folder}/covariates-0.parquet"],
                                 "quote the globs of --shards and --shard-covariates"),
    "shard-by not a choice": (["fit", "--dask", "tcp://127.0.0.1:1"] + PARQUET[3:] + ["--shard-by", "rows"],
                                    "argument --shard-by: invalid choice: 'rows'"),
}


@pytest.mark.parametrize("case", list(REFUSED))
def test_refusals_are_one_line_with_exit_status_2(case, cohort, capsys, monkeypatch):
    def no_cluster(*args, **kwargs):
        raise AssertionError("a refused command started a Dask cluster")

    monkeypatch.setattr(fit_command, "dask_client", no_cluster)
    argv, needle = REFUSED[case]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        status = cli.main([a.format(folder=cohort["folder"], duckdb=cohort["duckdb"]) for a in argv])
    err = capsys.readouterr().err
    assert status == 2, err
    lines = err.splitlines()
    assert len(lines) == 1 and lines[0].startswith("riskset fit: error: "), err
    assert needle in lines[0], err
    assert "Traceback" not in err


def test_a_scheduler_out_of_reach_is_one_line_with_exit_status_2(cohort, capsys):
    import dask

    with dask.config.set({"distributed.comm.timeouts.connect": "1s"}):
        status = cli.main(["fit", "--dask", "tcp://127.0.0.1:1"] + [a.format(folder=cohort["folder"])
                                                                    for a in PARQUET[3:]])
    err = capsys.readouterr().err
    assert status == 2, err
    assert err.splitlines() == [err.strip()] and err.startswith("riskset fit: error: --dask 'tcp://127.0.0.1:1': "
                                                                "cannot reach the scheduler"), err


def test_help_shows_the_sharded_fit_group(capsys):
    with pytest.raises(SystemExit):
        cli.main(["fit", "--help"])
    text = capsys.readouterr().out
    assert "sharded fit (rows on Dask workers):" in text
    for option in ("--shards GLOB|N", "--shard-covariates GLOB", "--shard-by {row,stratum}"):
        assert option in text
    assert "--cv K (--cv-grid, --cv-early-stop, --seed) chooses the\n  variance there too" in text
    assert "No --cv-repeats above 1, --cv-auto" in text
