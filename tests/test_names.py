"""Issue #14 items 6, 9 and half of 7: OHDSI covariate names, one keyword per role, short prints.

6. A FeatureExtraction-style covariate reference table (frame, Parquet or DuckDB query)
   gives names shown in every table and plot; the ids stay the keys.
9. ``strata=``, ``weights=``, ``level=`` in every builder and function; the old
   ``stratum=``, ``weight=``, ``conf_level=`` still work with a DeprecationWarning.
7. ``print(dataset)`` and ``print(fit)`` are short summaries.
"""
from __future__ import annotations

import json
import warnings

import matplotlib

matplotlib.use("Agg")
import numpy as np
import pandas as pd
import pytest

import riskset
from riskset.cli import main
from riskset.exceptions import DataWarning, InputError
from riskset.plots.selection import plot_path
from riskset.results import FitResult

NAMES = {1002: "age group: 20-24", 8532001: "gender = FEMALE", 1118084210: "celecoxib in prior year"}


def long_tables(n=120, seed=3):
    """Outcomes (row_id, stratum_id, time, status, y, weight) and covariates with three OHDSI ids."""
    rng = np.random.default_rng(seed)
    ids = list(NAMES)
    out = pd.DataFrame({"row_id": np.arange(n) + 100, "stratum_id": np.arange(n) % 4,
                        "time": rng.exponential(1.0, n).round(3) + 0.01, "status": rng.integers(0, 2, n),
                        "y": rng.integers(0, 2, n)})
    x = rng.random((n, 3)) < 0.4
    rows, cols = np.nonzero(x)
    cov = pd.DataFrame({"row_id": rows + 100, "covariate_id": np.array(ids, dtype=np.int64)[cols],
                        "value": 1.0})
    return out, cov


def reference(ids=None):
    ids = list(NAMES) if ids is None else ids
    return pd.DataFrame({"covariate_id": np.array(ids, dtype=np.int64),
                         "covariate_name": [NAMES.get(i, f"covariate {i}") for i in ids],
                         "analysis_id": [i % 1000 for i in ids], "concept_id": [i // 1000 for i in ids]})


@pytest.fixture(scope="module")
def named_data():
    out, cov = long_tables()
    return riskset.from_long(out, cov, covariate_ref=reference())


# -- 6. names from a covariate reference table ------------------------------------------------
def test_reference_frame_labels_ids_that_stay_the_keys(named_data):
    assert named_data.covariate_names == ["1002", "8532001", "1118084210"]
    assert named_data.covariate_labels == {str(i): name for i, name in NAMES.items()}
    fit = riskset.fit(named_data, "logistic")
    assert list(fit.coef.index) == ["intercept", "1002", "8532001", "1118084210"]
    table = fit.coef_table()
    assert list(table.columns[:2]) == ["name", "covariate_name"]
    assert table.set_index("name").loc["8532001", "covariate_name"] == "gender = FEMALE"
    assert "celecoxib in prior year" in fit.summary()


def test_labels_survive_the_json_round_trip(named_data):
    fit = riskset.fit(named_data, "cox")
    again = FitResult.from_json(fit.to_json())
    assert again.labels == fit.labels == {str(i): name for i, name in NAMES.items()}
    assert again.coef_table()["covariate_name"].tolist() == fit.coef_table()["covariate_name"].tolist()


def test_intercept_and_unnamed_coefficients_keep_their_names(named_data):
    fit = riskset.fit(named_data, "logistic")  # with an intercept by default
    assert fit.coef_table()["covariate_name"].iloc[0] == "intercept"
    assert "intercept" not in fit.labels


def test_time_varying_coefficients_carry_the_name_and_interval(named_data):
    fit = riskset.fit(named_data, "cox", time_varying={"1002": [0.5]})
    tv = [n for n in fit.coef.index if n.startswith("1002")]
    assert len(tv) == 2 and all(fit.labels[n].startswith("age group: 20-24") for n in tv)
    assert fit.labels[tv[1]][len("age group: 20-24"):] == tv[1][len("1002"):]


def test_no_reference_no_name_column():
    out, cov = long_tables()
    fit = riskset.fit(riskset.from_long(out, cov), "logistic")
    assert fit.labels == {} and "covariate_name" not in fit.coef_table().columns


def test_reference_from_parquet_and_camel_case_columns(tmp_path):
    out, cov = long_tables()
    path = tmp_path / "covariate_ref.parquet"
    reference().rename(columns={"covariate_id": "covariateId", "covariate_name": "covariateName",
                                "analysis_id": "analysisId", "concept_id": "conceptId"}).to_parquet(path)
    data = riskset.from_long(out, cov, covariate_ref=str(path))
    assert data.covariate_labels["1002"] == "age group: 20-24"


def test_reference_from_a_duckdb_query(tmp_path):
    import duckdb

    out, cov = long_tables()
    ref = reference()
    db = str(tmp_path / "cdm.duckdb")
    with duckdb.connect(db) as con:
        for name, frame in (("outcomes", out), ("covariates", cov), ("covariate_ref", ref)):
            con.register("frame", frame)
            con.execute(f"CREATE TABLE {name} AS SELECT * FROM frame")
            con.unregister("frame")
    data = riskset.from_duckdb(db, "SELECT * FROM outcomes", "SELECT * FROM covariates",
                               covariate_ref_sql="SELECT * FROM covariate_ref")
    assert data.covariate_labels["8532001"] == "gender = FEMALE"
    with pytest.raises(InputError, match="covariate_ref_sql failed"):
        riskset.from_duckdb(db, "SELECT * FROM outcomes", "SELECT * FROM covariates",
                            covariate_ref_sql="SELECT * FROM no_such_table")


def test_reference_ids_not_in_the_data_are_ignored_and_unnamed_covariates_warned():
    out, cov = long_tables()
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # extra ids in the reference: no warning
        data = riskset.from_long(out, cov, covariate_ref=reference(list(NAMES) + [99, 98]))
    assert set(data.covariate_labels) == {str(i) for i in NAMES}
    with pytest.warns(DataWarning, match=r"1 covariate\(s\) have no name .*'1118084210'"):
        partial = riskset.from_long(out, cov, covariate_ref=reference([1002, 8532001]))
    assert "1118084210" not in partial.covariate_labels


@pytest.mark.parametrize("ref, message", [
    (reference().drop(columns="covariate_name"), "no 'covariate_name' column"),
    (pd.concat([reference(), reference().iloc[[1]]]), "lists covariate_id '8532001' more than once"),
    (reference([5, 6]), "names none of the data's covariates"),
    (reference().assign(covariate_name=[None, "b", "c"]), "no covariate_name for covariate_id '1002'"),
    (reference().astype({"covariate_id": float}).assign(covariate_id=[np.nan, 8532001, 1118084210]),
     "1 row\\(s\\) without a covariate_id"),
])
def test_a_bad_reference_table_is_an_input_error_naming_the_problem(ref, message):
    out, cov = long_tables()
    with pytest.raises(InputError, match=message):
        riskset.from_long(out, cov, covariate_ref=ref)


def test_float_ids_from_csv_match_integer_ids():
    out, cov = long_tables()
    data = riskset.from_long(out, cov, covariate_ref=reference().astype({"covariate_id": float}))
    assert data.covariate_labels["1002"] == "age group: 20-24"


def test_labels_for_wide_and_array_builders():
    frame = pd.DataFrame({"y": [0, 1, 1, 0], "age": [50.0, 61.0, 70.0, 40.0]})
    ref = pd.DataFrame({"covariate_id": ["age"], "covariate_name": ["age at index (years)"]})
    assert riskset.from_frame(frame, y="y", covariate_ref=ref).covariate_labels == {"age": "age at index (years)"}
    arrays = riskset.from_arrays(np.eye(2), y=[0, 1], covariate_names=["1002", "8532001"], covariate_ref=reference())
    assert arrays.covariate_labels == {"1002": "age group: 20-24", "8532001": "gender = FEMALE"}
    with pytest.raises(InputError, match="unknown covariate"):
        arrays.with_covariate_labels({"77": "not in the data"})


def test_bootstrap_table_and_forest_plot_show_names(named_data):
    boot = riskset.bootstrap(named_data, "cox", n_boot=5, progress=False)
    assert boot.table["covariate_name"].tolist() == list(NAMES.values())
    fig = boot.plot()
    assert sorted(t.get_text() for t in fig.axes[0].get_yticklabels()) == sorted(NAMES.values())


def test_path_plot_shows_names(named_data):
    path = riskset.regularization_path(named_data, "cox", riskset.Laplace(gamma=1.0), n_grid=3,
                                       progress=False)
    assert list(path.columns) == ["1002", "8532001", "1118084210"]
    fig = plot_path(path, top=None)
    assert sorted(t.get_text() for t in fig.axes[0].texts) == sorted(NAMES.values())


def test_cv_refit_carries_the_names(named_data):
    cv = riskset.cross_validate(named_data, "logistic", riskset.Laplace(gamma=1.0), n_folds=3, n_grid=3,
                                progress=False)
    assert cv.fit.labels == named_data.covariate_labels


def test_cli_covariate_ref_file_names_the_csv_table(tmp_path, capsys):
    out, cov = long_tables()
    paths = {name: str(tmp_path / f"{name}.parquet") for name in ("outcomes", "covariates", "ref")}
    out.to_parquet(paths["outcomes"])
    cov.to_parquet(paths["covariates"])
    reference().to_parquet(paths["ref"])
    result = str(tmp_path / "fit.csv")
    code = main(["fit", "--outcomes", paths["outcomes"], "--covariates-file", paths["covariates"],
                 "--covariate-ref", paths["ref"], "--model", "logistic", "--out", result, "--quiet"])
    assert code == 0
    table = pd.read_csv(result, dtype={"name": str})
    assert table.set_index("name").loc["1002", "covariate_name"] == "age group: 20-24"
    json_out = str(tmp_path / "fit.json")
    assert main(["fit", "--outcomes", paths["outcomes"], "--covariates-file", paths["covariates"],
                 "--covariate-ref", paths["ref"], "--model", "logistic", "--out", json_out, "--quiet"]) == 0
    assert json.load(open(json_out))["labels"]["8532001"] == "gender = FEMALE"


def test_cli_covariate_ref_sql_needs_duckdb(tmp_path, capsys):
    out, cov = long_tables()
    out.to_parquet(tmp_path / "o.parquet")
    cov.to_parquet(tmp_path / "c.parquet")
    code = main(["fit", "--outcomes", str(tmp_path / "o.parquet"), "--covariates-file", str(tmp_path / "c.parquet"),
                 "--covariate-ref-sql", "SELECT * FROM ref", "--model", "logistic"])
    assert code == 2
    assert "--covariate-ref-sql queries the --duckdb database" in capsys.readouterr().err


# -- 9. one keyword per role, old names deprecated ---------------------------------------------
def test_from_long_takes_strata_and_weights_like_the_other_builders():
    out, cov = long_tables()
    out = out.rename(columns={"stratum_id": "matched_set"}).assign(w=np.linspace(0.5, 2.0, len(out)))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        data = riskset.from_long(out, cov, strata="matched_set", weights="w")
    assert data.n_strata == 4 and np.allclose(data.weights, out["w"])
    assert data.meta["roles"] == {"weights": "w", "strata": "matched_set"}


@pytest.mark.parametrize("old, new", [("stratum", "strata"), ("weight", "weights")])
def test_old_from_long_keywords_work_with_a_deprecation_warning(old, new):
    out, cov = long_tables()
    out = out.rename(columns={"stratum_id": "matched_set"}).assign(w=np.linspace(0.5, 2.0, len(out)))
    column = {"strata": "matched_set", "weights": "w"}[new]
    with pytest.warns(DeprecationWarning, match=rf"from_long\({old}=\.\.\.\) is deprecated; use from_long\({new}="):
        old_way = riskset.from_long(out, cov, **{old: column})
    new_way = riskset.from_long(out, cov, **{new: column})
    assert old_way.meta["roles"] == new_way.meta["roles"]
    with pytest.raises(InputError, match=f"give {new}= only"):
        riskset.from_long(out, cov, **{old: column, new: column})


def test_old_from_duckdb_keyword_is_renamed_too(tmp_path):
    import duckdb

    out, cov = long_tables()
    out = out.assign(w=1.5)
    db = str(tmp_path / "c.duckdb")
    with duckdb.connect(db) as con:
        con.register("o", out)
        con.register("c", cov)
        con.execute("CREATE TABLE outcomes AS SELECT * FROM o; CREATE TABLE covariates AS SELECT * FROM c")
    with pytest.warns(DeprecationWarning, match=r"from_duckdb\(weight=\.\.\.\)"):
        data = riskset.from_duckdb(db, "SELECT * FROM outcomes", "SELECT * FROM covariates", weight="w")
    assert np.all(data.weights == 1.5)


def test_kaplan_meier_and_plot_km_take_level():
    time, status = [1, 2, 2, 3, 4, 5], [1, 1, 0, 1, 0, 1]
    narrow = riskset.kaplan_meier(time, status, level=0.5)
    wide = riskset.kaplan_meier(time, status)
    assert (narrow["upper"] - narrow["lower"]).iloc[0] < (wide["upper"] - wide["lower"]).iloc[0]
    with pytest.warns(DeprecationWarning, match=r"kaplan_meier\(conf_level=\.\.\.\) is deprecated; use "
                                                r"kaplan_meier\(level=\.\.\.\)"):
        old = riskset.kaplan_meier(time, status, conf_level=0.5)
    pd.testing.assert_frame_equal(old, narrow)
    with pytest.raises(InputError, match="level must be a number strictly between 0 and 1, got 95"):
        riskset.kaplan_meier(time, status, level=95)
    from riskset.plots import plot_km

    with pytest.warns(DeprecationWarning, match=r"plot_km\(conf_level=\.\.\.\)"):
        plot_km(time, status, conf_level=0.9)


# -- 7 (half). short prints --------------------------------------------------------------------
def test_print_dataset_is_short_and_says_what_is_there(named_data):
    text = repr(named_data)
    assert text.splitlines() == [
        "Dataset: 120 rows, 3 covariates",
        "  outcome: y, time, status",
        "  covariates: '1002' (age group: 20-24), '8532001' (gender = FEMALE), "
        "'1118084210' (celecoxib in prior year)",
        "  roles: stratified by 'stratum_id' (4 strata)"]


def test_print_dataset_with_many_covariates_shows_a_few():
    data = riskset.simulate(n=200, p=500, model="logistic", seed=1)
    text = str(data)
    assert len(text.splitlines()) == 4 and len(text) < 300
    assert "'x0', 'x1', 'x2', 'x3', 'x4', ... (495 more)" in text


def test_print_fit_is_short_and_names_the_largest_coefficients(named_data):
    data = riskset.simulate(n=500, p=300, model="logistic", seed=2)
    fit = riskset.fit(data, "logistic", riskset.Laplace(gamma=5.0))
    text = str(fit)
    lines = text.splitlines()
    assert len(lines) == 5 and len(text) < 500
    cycles = f"{fit.n_iter} cycle" + ("" if fit.n_iter == 1 else "s")
    assert lines[0] == f"FitResult: logistic model, converged after {cycles}, 500 rows"
    nonzero = int((fit.coef != 0).sum())
    assert lines[2].startswith(f"  {nonzero} of 301 coefficients non-zero")
    largest = fit.coef.abs().idxmax()
    assert lines[3].startswith(f"  coef: {largest} ")
    labelled = str(riskset.fit(named_data, "cox"))
    assert "(celecoxib in prior year)" in labelled and "prior: none" in labelled


def test_forest_plot_of_a_coefficient_table_shows_names(named_data):
    from riskset.plots.selection import plot_forest

    table = riskset.fit(named_data, "cox").coef_table()
    fig = plot_forest(table)
    assert sorted(t.get_text() for t in fig.axes[0].get_yticklabels()) == sorted(NAMES.values())


def test_long_ohdsi_names_are_cut_in_plots_but_not_in_tables(named_data):
    from riskset.plots.selection import MAX_LABEL, plot_forest

    long_name = ("condition era group during day -365 through 0 days relative to index: "
                 "type 2 diabetes mellitus with renal complications")
    data = named_data.with_covariate_labels({"1002": long_name})
    table = riskset.fit(data, "cox").coef_table()
    assert table.set_index("name").loc["1002", "covariate_name"] == long_name
    shown = [t.get_text() for t in plot_forest(table).axes[0].get_yticklabels()]
    cut = [s for s in shown if s.startswith("condition era")]
    assert len(cut) == 1 and len(cut[0]) == MAX_LABEL and cut[0].endswith("\u2026")


def test_print_fit_says_how_many_coefficients_are_aliased():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(200, 1))
    data = riskset.from_arrays(np.hstack([x, x, rng.normal(size=(200, 1))]),
                               y=(rng.random(200) < 0.4).astype(float))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fit = riskset.fit(data, "logistic")
    assert fit.aliased == ["x1"]
    line = str(fit).splitlines()[2]
    assert line.startswith("  3 of 4 coefficients non-zero (1 aliased: not defined)")
    assert "x1" not in str(fit).splitlines()[3]


def test_a_strata_column_asked_for_by_name_must_exist():
    out, cov = long_tables()
    with pytest.raises(InputError, match="no column for strata='matched_set'"):
        riskset.from_long(out, cov, strata="matched_set")
    assert riskset.from_long(out.drop(columns="stratum_id"), cov).strata is None  # the default is optional
