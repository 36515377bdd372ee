"""The long covariates table read in batches (riskset.data.long_covariates): every source,
read in batches of a few rows, gives the matrix of the whole table at once; a table that
changes between the two reads, or holds a missing id, is refused."""
import duckdb
import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import scipy.sparse as sp

import riskset
from riskset.core.design import stores_no_values
from riskset.data import long_covariates
from riskset.data.long_covariates import CovariateSource, read_covariates
from riskset.exceptions import InputError


def tables(seed, text_ids=False, values=True, sparse_ids=False):
    rng = np.random.default_rng(seed)
    n, p = 60, 9
    X = sp.random(n, p, density=0.3, random_state=seed, format="coo")
    ids = np.sort(rng.choice(10**12 if sparse_ids else 3 * n, n, replace=False)) + 5
    names = np.array([f"c{k:02d}" for k in range(p)] if text_ids else 2 ** np.arange(30, 30 + p), dtype=object)
    cov = pd.DataFrame({"row_id": ids[X.row], "covariate_id": names[X.col],
                        "value": np.round(rng.normal(size=X.nnz), 3)}).sample(frac=1, random_state=seed)
    cov["covariate_id"] = cov["covariate_id"].astype(str if text_ids else np.int64)
    if not values:
        cov = cov.drop(columns="value")
    out = pd.DataFrame({"row_id": ids, "y": rng.integers(0, 2, n)}).sample(frac=1, random_state=seed + 1)
    return out, cov


def expected(out, cov):
    """The matrix from the whole table at once (scipy's COO -> CSC: rows sorted within columns)."""
    ids = np.sort(out["row_id"].to_numpy())
    names = np.sort(cov["covariate_id"].unique())
    rows = np.searchsorted(ids, cov["row_id"].to_numpy())
    cols = np.searchsorted(names, cov["covariate_id"].to_numpy())
    vals = cov["value"].to_numpy() if "value" in cov else np.ones(len(cov))
    X = sp.coo_matrix((vals, (rows, cols)), shape=(ids.size, names.size)).tocsc()
    X.eliminate_zeros()
    X.sort_indices()
    return X, [str(c) for c in names]


def every_source(out, cov, folder) -> dict:
    """The covariates table in memory (pandas, Arrow) and written to Parquet and CSV files; both
    tables also written to the DuckDB database ``folder / "db.duckdb"`` (outcomes, covariates)."""
    cov.to_parquet(folder / "c.parquet")
    cov.to_csv(folder / "c.csv", index=False)
    with duckdb.connect(str(folder / "db.duckdb")) as con:
        con.register("o", out)
        con.register("c", cov)
        con.execute("CREATE TABLE outcomes AS SELECT * FROM o; CREATE TABLE covariates AS SELECT * FROM c")
    return {"frame": cov, "arrow": pa.Table.from_pandas(cov, preserve_index=False),
            "parquet": str(folder / "c.parquet"), "csv": str(folder / "c.csv")}


def same(ds, out, cov):
    X, names = expected(out, cov)
    keep = [names.index(c) for c in ds.covariate_names]  # an all-zero column is dropped
    assert ds.covariate_names == [names[k] for k in keep]
    np.testing.assert_array_equal(ds.X.indptr, X[:, keep].indptr)
    np.testing.assert_array_equal(ds.X.indices, X[:, keep].indices)
    np.testing.assert_array_equal(ds.X.data, X[:, keep].data)


@pytest.mark.parametrize("text_ids", [False, True])
@pytest.mark.parametrize("values", [False, True])
@pytest.mark.parametrize("sparse_ids", [False, True])
def test_every_source_read_in_batches_gives_the_whole_tables_matrix(text_ids, values, sparse_ids, tmp_path,
                                                                    monkeypatch):
    monkeypatch.setattr(long_covariates, "BATCH_ROWS", 7)
    out, cov = tables(3, text_ids, values, sparse_ids)
    for source in every_source(out, cov, tmp_path).values():
        same(riskset.from_long(out, source), out, cov)
    same(riskset.from_duckdb(str(tmp_path / "db.duckdb"), "SELECT * FROM outcomes", "SELECT * FROM covariates"),
         out, cov)


def test_the_batches_hold_the_matrix_int32_rows_and_no_values_array():
    out, cov = tables(4, values=False)
    ds = riskset.from_long(out, cov)
    assert ds.X.indices.dtype == np.int32 and stores_no_values(ds.X) and np.all(ds.X.data == 1.0)


def changing(cov, second):
    """A source whose second read (the fill) returns ``second`` instead of ``cov``."""
    reads = []

    def batches(names):
        reads.append(1)
        table = cov if len(reads) == 1 else second
        return iter(pa.Table.from_pandas(table, preserve_index=False).to_batches(max_chunksize=5))

    return CovariateSource(batches, list(cov.columns))


@pytest.mark.parametrize("change, match", [
    (lambda c: pd.concat([c, c.iloc[:1].assign(row_id=c["row_id"].iloc[1])]), "more rows than on the first read"),
    (lambda c: c.iloc[1:], "fewer rows than on the first read"),
    (lambda c: c.assign(covariate_id=np.where(np.arange(len(c)) == 0, 7, c["covariate_id"])),
     "a covariate id not there on the first read"),
])
def test_a_table_that_changes_between_the_reads_is_refused(change, match):
    out, cov = tables(5)
    with pytest.raises(InputError, match=match):
        read_covariates(changing(cov, change(cov)), np.sort(out["row_id"].to_numpy()), "row_id", "covariate_id",
                        "value")


def test_missing_ids_and_values_are_named():
    out = pd.DataFrame({"row_id": [1, 2], "y": [0, 1]})
    with pytest.raises(InputError, match="missing \\(null\\) 'covariate_id'"):
        riskset.from_long(out, pa.table({"row_id": [1, 2], "covariate_id": pa.array([5, None], pa.int64())}))
    with pytest.raises(InputError, match="missing \\(null\\) 'row_id'"):
        riskset.from_long(out, pa.table({"row_id": pa.array([1, None], pa.int64()), "covariate_id": [5, 5]}))
    with pytest.raises(InputError, match="covariate 5 has a non-finite value \\(inf\\) at row_id 2"):
        riskset.from_long(out, pd.DataFrame({"row_id": [1, 2], "covariate_id": [5, 5], "value": [1.0, np.inf]}))


def test_a_parquet_file_is_read_in_row_groups_not_whole(tmp_path, monkeypatch):
    """The reader asks the file for batches (its row groups), never for the whole table."""
    out, cov = tables(6)
    pq.write_table(pa.Table.from_pandas(cov, preserve_index=False), tmp_path / "c.parquet", row_group_size=10)
    monkeypatch.setattr(pq, "read_table", lambda *a, **k: pytest.fail("read whole"))
    same(riskset.from_long(out, str(tmp_path / "c.parquet")), out, cov)


def test_a_matrix_without_stored_zeros_is_not_copied_to_look_for_empty_columns():
    """Loading ends by dropping covariates without a non-zero value: a matrix with no stored
    zero is looked at where it is (a copy would double the peak of a large load)."""
    out, cov = tables(7)
    ds = riskset.from_long(out, cov)
    assert ds.X.data.all() and ds.drop_empty_covariates() is ds


def test_each_read_asks_for_the_columns_it_needs_alone():
    """The count reads the covariate ids alone; the fill the row ids, covariate ids and values
    (a Parquet file or a query then decodes no other column)."""
    out, cov = tables(8)
    asked = []

    def batches(names):
        asked.append(list(names))
        return iter(pa.Table.from_pandas(cov.assign(extra=1.0), preserve_index=False).select(names).to_batches())

    read_covariates(CovariateSource(batches, list(cov.columns) + ["extra"]), np.sort(out["row_id"].to_numpy()),
                    "row_id", "covariate_id", "value")
    assert asked == [["covariate_id"], ["row_id", "covariate_id", "value"]]


class RecordingBar:
    """Stands in for tqdm: records the totals, descriptions and updates of each bar made."""

    made: list = []

    def __init__(self, total=None, desc="", **options):
        self.total, self.n, self.descriptions, self.closed = total, 0, [desc], False
        self.first_total = total
        RecordingBar.made.append(self)

    def update(self, k):
        self.n += k

    def set_description(self, desc):
        self.descriptions.append(desc)

    def close(self):
        self.closed = True


def test_progress_counts_the_rows_of_both_passes_from_every_source(tmp_path, monkeypatch):
    """With progress, one bar counts every covariate row twice (the count, then the fill), its
    total known from the start where the source knows its rows (a table, a Parquet file) and
    from the count otherwise (a query, a CSV file); the matrix is the same as without."""
    import tqdm.auto

    monkeypatch.setattr(tqdm.auto, "tqdm", RecordingBar)
    monkeypatch.setattr(long_covariates, "BATCH_ROWS", 7)
    out, cov = tables(5)
    rows = len(cov)
    for name, source in every_source(out, cov, tmp_path).items():
        RecordingBar.made.clear()
        same(riskset.from_long(out, source, progress=True), out, cov)
        (bar,) = RecordingBar.made
        assert (bar.first_total, bar.total, bar.n, bar.closed) == (None if name == "csv" else 2 * rows, 2 * rows,
                                                                    2 * rows, True), name
        assert [d.split(" (")[0].split(",")[1].strip() for d in bar.descriptions] == [
            "pass 1 of 2", "pass 2 of 2", "sorting each column's rows"]
    RecordingBar.made.clear()
    same(riskset.from_duckdb(str(tmp_path / "db.duckdb"), "SELECT * FROM outcomes", "SELECT * FROM covariates",
                             progress=True), out, cov)
    (bar,) = RecordingBar.made
    assert (bar.first_total, bar.total, bar.n, bar.closed) == (None, 2 * rows, 2 * rows, True)
    RecordingBar.made.clear()
    riskset.from_long(out, cov)
    assert not RecordingBar.made  # no bar unless asked for


def test_a_bar_left_by_a_refused_table_is_closed(monkeypatch):
    import tqdm.auto

    monkeypatch.setattr(tqdm.auto, "tqdm", RecordingBar)
    out, cov = tables(6)
    cov.loc[cov.index[3], "row_id"] = 10**9  # a row id not among the outcomes
    RecordingBar.made.clear()
    with pytest.raises(InputError, match="not in the outcomes table"):
        riskset.from_long(out, cov, progress=True)
    (bar,) = RecordingBar.made
    assert bar.closed


def test_a_fit_with_progress_names_its_preparation(capsys):
    d = riskset.simulate(n=300, p=5, model="cox", seed=1)
    riskset.fit(d, "cox", riskset.Laplace(variance=1.0), progress=True)
    err = capsys.readouterr().err
    assert f"preparing the cox model (300 rows, {d.X.nnz:,} non-zeros)" in err
