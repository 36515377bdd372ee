"""Building datasets from wide tables, long tables, files, DuckDB and arrays; bad input."""
import numpy as np
import pandas as pd
import pyarrow as pa
import pytest

import riskset
from riskset.data.export import to_long, write_duckdb, write_parquet
from riskset.exceptions import DataWarning, InputError


@pytest.fixture
def long_tables():
    out = pd.DataFrame({"row_id": [101, 205, 150, 999], "time": [5.0, 3.0, 8.0, 1.0], "status": [1, 0, 1, 1]})
    cov = pd.DataFrame({"row_id": [205, 101, 101, 999, 150, 205],
                        "covariate_id": [2**40, 7, 2**40, 7, 3, 3],
                        "value": [1.0, 2.5, 1.0, 1.0, -1.0, 4.0]})
    return out, cov


def dense(ds):
    return pd.DataFrame(ds.X.toarray(), index=ds.row_ids, columns=ds.covariate_names)


def test_wide_frame_expands_categories_and_booleans():
    df = pd.DataFrame({"y": [0, 1, 1, 0], "age": [50.0, 61, 70, 44], "smoker": [True, False, True, False],
                       "region": pd.Categorical(["n", "s", "w", "s"])})
    ds = riskset.from_frame(df, y="y")
    assert ds.covariate_names == ["age", "smoker", "region[s]", "region[w]"]
    assert dense(ds)["region[w]"].tolist() == [0, 0, 1, 0]
    assert riskset.from_frame(pa.Table.from_pandas(df), y="y").covariate_names == ds.covariate_names


def test_long_tables_do_not_depend_on_arrival_order(long_tables):
    out, cov = long_tables
    a = riskset.from_long(out, cov)
    b = riskset.from_long(out.sample(frac=1, random_state=1), cov.sample(frac=1, random_state=2))
    assert a.covariate_names == ["3", "7", str(2**40)]  # ordered by id, 64-bit ids kept
    pd.testing.assert_frame_equal(dense(a), dense(b))
    assert list(a.row_ids) == [101, 150, 205, 999]
    assert dense(a).loc[101, "7"] == 2.5


def test_string_covariate_ids_and_indicator_default():
    out = pd.DataFrame({"row_id": ["p1", "p2"], "y": [1, 0]})
    cov = pd.DataFrame({"row_id": ["p2", "p1"], "covariate_id": ["drug:A", "dx:B"]})
    ds = riskset.from_long(out, cov)
    assert ds.covariate_names == ["drug:A", "dx:B"] and ds.X.toarray().tolist() == [[0, 1], [1, 0]]


def test_files_and_duckdb_give_the_same_dataset(long_tables, tmp_path):
    out, cov = long_tables
    ref = dense(riskset.from_long(out, cov))
    out.to_csv(tmp_path / "o.csv", index=False)
    cov.to_csv(tmp_path / "c.csv", index=False)
    out.to_parquet(tmp_path / "o.parquet")
    cov.to_parquet(tmp_path / "c.parquet")
    pd.testing.assert_frame_equal(dense(riskset.from_long(tmp_path / "o.csv", tmp_path / "c.csv")), ref)
    pd.testing.assert_frame_equal(dense(riskset.from_long(str(tmp_path / "o.parquet"),
                                                          str(tmp_path / "c.parquet"))), ref)
    import duckdb

    db = str(tmp_path / "cohort.duckdb")
    with duckdb.connect(db) as con:
        con.register("o", out)
        con.register("c", cov)
        con.execute("CREATE TABLE outcomes AS SELECT * FROM o; CREATE TABLE covs AS SELECT * FROM c")
    ds = riskset.from_duckdb(db, "SELECT * FROM outcomes", "SELECT row_id, covariate_id, value FROM covs")
    pd.testing.assert_frame_equal(dense(ds), ref)
    assert ds.status.tolist() == [1, 1, 0, 1]


def test_export_round_trip(tmp_path):
    data = riskset.simulate(n=500, p=30, model="poisson", seed=2)
    write_duckdb(data, str(tmp_path / "sim.duckdb"))
    back = riskset.from_duckdb(str(tmp_path / "sim.duckdb"), "SELECT * FROM outcomes", "SELECT * FROM covariates",
                               offset="offset")
    o, c = write_parquet(data, str(tmp_path / "pq"))
    back2 = riskset.from_long(o, c, offset="offset")
    for b in (back, back2):
        order = np.argsort(b.covariate_names)  # long tables order ids as strings
        names = np.array(data.covariate_names)[np.argsort(data.covariate_names)]
        assert list(np.array(b.covariate_names)[order]) == list(names)
        assert np.allclose(b.y, data.y) and np.allclose(b.offset, data.offset)
    a = riskset.fit(data, "poisson", riskset.Laplace(gamma=3.0))
    b = riskset.fit(back, "poisson", riskset.Laplace(gamma=3.0))
    assert np.allclose(a.coef[b.coef.index], b.coef, atol=1e-8)


def test_exposure_becomes_log_offset():
    df = pd.DataFrame({"y": [1, 2, 0], "pt": [1.0, 2.0, 4.0], "x": [0, 1, 1]})
    assert np.allclose(riskset.from_frame(df, y="y", exposure="pt").offset, np.log([1, 2, 4]))


@pytest.mark.parametrize("make, match", [
    (lambda: riskset.from_frame(pd.DataFrame({"y": [0, 1]}), y="z"), "not in the data: 'z'"),
    (lambda: riskset.from_frame(pd.DataFrame({"y": ["a", "b"], "x": [1, 2]}), y="y"), "'y' is not numeric"),
    (lambda: riskset.from_frame(pd.DataFrame({"y": [0, np.nan], "x": [1, 2]}), y="y"), "'y' has 1 non-finite.*row 1"),
    (lambda: riskset.from_frame(pd.DataFrame({"y": [0, 1], "x": [1, np.inf]}), y="y"), "'x' has 1 non-finite"),
    (lambda: riskset.from_frame(pd.DataFrame({"y": [], "x": []}), y="y"), "empty"),
    (lambda: riskset.from_frame(pd.DataFrame({"y": [1, 1], "pt": [1.0, -2.0]}), y="y", exposure="pt"),
     "exposure.*must be > 0.*row 1"),
    (lambda: riskset.from_frame(pd.DataFrame({"y": [1, 1], "w": [1.0, -2.0], "x": [1, 0]}), y="y", weights="w"),
     "negative weight"),
    (lambda: riskset.from_frame(pd.DataFrame({"id": [4, 4], "y": [1, 0], "x": [1, 0]}), y="y", row_id="id"),
     "duplicate row id 4"),
    (lambda: riskset.from_long(pd.DataFrame({"row_id": [1, 2], "y": [0, 1]}),
                               pd.DataFrame({"row_id": [1, 3], "covariate_id": [5, 5]})),
     "covariates for 1 row.*not in the outcomes table, first row_id 3"),
    (lambda: riskset.from_long(pd.DataFrame({"row_id": [1, 2], "y": [0, 1]}),
                               pd.DataFrame({"row_id": [1, 1], "covariate_id": [5, 5]})),
     "covariate 5 is given twice for row_id 1"),
    (lambda: riskset.from_long(pd.DataFrame({"row_id": [1, 2], "y": [0, 1]}),
                               pd.DataFrame({"row_id": [1, 2], "covariate_id": [5, 5], "value": [1, np.nan]})),
     "non-finite value"),
    (lambda: riskset.from_long(pd.DataFrame({"id": [1]}), pd.DataFrame({"row_id": [1], "covariate_id": [1]})),
     "no 'row_id' column"),
    (lambda: riskset.from_long("missing.parquet", "missing.csv"), "does not exist"),
    (lambda: riskset.from_frame(pd.DataFrame({"t": [1.0, 2.0], "s": [1.0, 0.5], "x": [1, 0]}), time="t", status="s"),
     "status codes must be integers"),
])
def test_bad_input_is_named(make, match):
    with pytest.raises(InputError, match=match):
        make()


def test_all_zero_covariate_is_dropped_with_a_warning():
    df = pd.DataFrame({"y": [0, 1, 1], "x": [1.0, 0, 2], "never": [0.0, 0, 0]})
    with pytest.warns(DataWarning, match="dropped 1 covariate.*'never'"):
        ds = riskset.from_frame(df, y="y")
    assert ds.covariate_names == ["x"]


def test_to_long_lists_every_nonzero():
    data = riskset.simulate(n=50, p=5, model="logistic", seed=1)
    out, cov = to_long(data)
    assert len(cov) == data.X.nnz and len(out) == data.n_rows and set(out.columns) == {"row_id", "y"}
