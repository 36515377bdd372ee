"""A long covariates table (``row_id, covariate_id[, value]``) read into a CSC matrix in
batches: two passes over the source, never the whole table in memory.

1. **count**: the non-zeros of each covariate id (Arrow's hashed ``value_counts`` per
   batch), which fixes the columns (sorted ids) and their offsets ``indptr``;
2. **fill**: each batch's rows (positions of its row ids in the outcomes' sorted ids) and
   columns (positions of its covariate ids) placed at their columns' next free slots
   (:func:`riskset.data.triplets.fill_columns`), then every column's rows sorted and
   checked for a repeated pair.

With ``progress``, one bar counts the rows read over both passes (the second pass's total is
the first's count; the first's is known for a table in memory or a Parquet file, not for a
query or a CSV file).

The peak is the finished matrix (int32 row indices, float64 values) plus a batch, where
reading the table whole and building from triplets held about 60 bytes a non-zero (the
table, its row positions, column codes and values, the matrix). A source is read twice: a
Parquet or CSV file is opened again, a DuckDB query run again (a table changed between the
reads raises instead of giving a matrix of neither).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Iterator

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import scipy.sparse as sp

from riskset.core.design import indicator_csc
from riskset.data.dataset import plain
from riskset.data.triplets import dense_positions, fill_columns, sort_columns
from riskset.exceptions import InputError

#: Covariate rows read per batch (a batch's working arrays are ~40 bytes a row).
BATCH_ROWS = 1 << 20

#: Row ids spanning at most this many times the rows are mapped to positions by a table
#: indexed by id (one read per non-zero) instead of a binary search.
DENSE_ID_SPAN = 4


@dataclass(frozen=True)
class CovariateSource:
    """A long covariates table that can be read, batch by batch, more than once.

    ``batches(names)`` opens the source anew and yields Arrow record batches (or tables) holding
    at least the columns ``names`` (a file or a query reads those alone); ``columns`` are all
    its columns; ``what`` names the source in errors; ``rows`` its row count where known
    without reading it (None: a query, a CSV file)."""

    batches: Callable[[list], Iterator]
    columns: list
    what: str = "the covariates table"
    rows: int | None = None

    @classmethod
    def of_table(cls, table, row_id: str = "row_id", what: str = "the covariates table") -> "CovariateSource":
        """A pandas DataFrame or Arrow table in memory (read in slices, without a copy of the whole)."""
        if isinstance(table, pd.DataFrame):
            def frames(names):
                for a in range(0, max(len(table), 1), BATCH_ROWS):
                    yield FrameSlice(table.iloc[a:a + BATCH_ROWS], what, row_id)

            return cls(frames, [str(c) for c in table.columns], what, len(table))
        if not isinstance(table, pa.Table):
            raise InputError(f"expected a pandas DataFrame or Arrow table, got {type(table).__name__}")
        return cls(lambda names: iter(table.select(names).to_batches(max_chunksize=BATCH_ROWS)),
                   list(table.column_names), what, table.num_rows)


@dataclass(frozen=True)
class FrameSlice:
    """Rows of a DataFrame read as an Arrow batch, a column at a time (the columns asked for alone)."""

    frame: pd.DataFrame
    what: str
    row_id: str

    def column(self, name) -> pa.Array:
        values = self.frame[name]
        try:
            return pa.array(values, from_pandas=True)
        except (pa.ArrowInvalid, pa.ArrowTypeError):
            numbers = pd.to_numeric(values, errors="coerce")
            i = int(np.flatnonzero((numbers.isna() & values.notna()).to_numpy())[0])
            where = (f"row_id {plain(self.frame[self.row_id].iloc[i])!r}" if self.row_id in self.frame.columns
                     else f"row {self.frame.index[i]!r}")
            raise InputError(f"column {name!r} of {self.what} mixes numbers and text: {values.iloc[i]!r} at "
                             f"{where}") from None


def read_covariates(source: CovariateSource, ids: np.ndarray, row_id: str, covariate_id: str, value: str,
                    progress: bool = False):
    """(CSC matrix with a row per id of ``ids`` (sorted, unique), sorted covariate names as
    text) from the covariates ``source``; ``value`` absent from its columns: every entry is 1.
    ``progress``: a bar over the rows of both passes."""
    for c in (row_id, covariate_id):
        if c not in source.columns:
            raise InputError(f"{source.what} has no {c!r} column")
    with _ReadProgress(progress, source.rows) as bar:
        return _read_covariates(source, ids, row_id, covariate_id, value, bar)


def _read_covariates(source: CovariateSource, ids, row_id, covariate_id, value, bar: "_ReadProgress"):
    has_value = value in source.columns
    names, counts = _count_columns(source, covariate_id, bar)
    bar.second_pass(int(counts.sum()))
    indptr = np.zeros(names.size + 1, np.int64)
    np.cumsum(counts, out=indptr[1:])
    nnz = int(indptr[-1])
    indices = np.empty(nnz, np.int32 if ids.size < 2**31 - 1 else np.int64)
    data = np.empty(nnz if has_value else 0)  # without a value column every value is 1: none stored
    fill = indptr[:-1].copy()
    position = _row_positions(ids)
    lookup = pa.array(names)
    for batch in source.batches([row_id, covariate_id] + ([value] if has_value else [])):
        cov_rows = _column(batch, row_id, source).to_numpy(zero_copy_only=False)
        rows = position(cov_rows)
        if np.any(rows < 0):
            bad = cov_rows[rows < 0]
            raise InputError(f"covariates for {bad.size} row(s) not in the outcomes table, first row_id "
                             f"{plain(bad[0])!r}")
        ids_here = batch.column(covariate_id)
        if lookup.type != ids_here.type:  # e.g. text as large_string in one batch, string in another
            lookup = lookup.cast(ids_here.type)
        cols = pc.index_in(ids_here, value_set=lookup)
        if cols.null_count:
            raise InputError(f"{source.what} changed while it was read: a covariate id not there on the first read")
        vals = _values(batch, value, cov_rows, names, cols) if has_value else data[:0]
        over = fill_columns(rows, cols.to_numpy(zero_copy_only=False), vals, has_value, indptr, fill, indices, data)
        bar.read(len(cov_rows))
        if over >= 0:
            raise InputError(f"{source.what} changed while it was read: covariate {plain(names[over])!r} has more "
                             f"rows than on the first read")
    if np.any(fill != indptr[1:]):
        c = int(np.flatnonzero(fill != indptr[1:])[0])
        raise InputError(f"{source.what} changed while it was read: covariate {plain(names[c])!r} has fewer rows "
                         f"than on the first read")
    bar.sorting()
    dup = sort_columns(indptr, indices, data)
    if dup >= 0:
        c = int(np.searchsorted(indptr, dup, side="right") - 1)
        raise InputError(f"covariate {plain(names[c])!r} is given twice for row_id {plain(ids[indices[dup]])!r}")
    if not has_value:
        return indicator_csc(indices, indptr, (ids.size, names.size)), [str(c) for c in names]
    X = sp.csc_matrix((data, indices, indptr), shape=(ids.size, names.size), copy=False)
    X.eliminate_zeros()
    return X, [str(c) for c in names]


def _count_columns(source: CovariateSource, covariate_id: str, bar: "_ReadProgress"):
    """(sorted distinct covariate ids, non-zeros of each) over every batch (pass 1)."""
    ids, counts = [], []
    for batch in source.batches([covariate_id]):
        column = _column(batch, covariate_id, source)
        vc = pc.value_counts(column)
        bar.read(len(column))
        ids.append(vc.field("values").to_numpy(zero_copy_only=False))
        counts.append(vc.field("counts").to_numpy(zero_copy_only=False))
    if not ids:
        return np.empty(0, np.int64), np.empty(0, np.int64)
    total = pd.Series(np.concatenate(counts)).groupby(np.concatenate(ids), sort=True).sum()
    return total.index.to_numpy(), total.to_numpy(np.int64)


class _ReadProgress:
    """The bar of :func:`read_covariates` (nothing when off): rows read by the count pass, then
    by the fill pass, out of twice the table's rows once they are known; the column sort last."""

    def __init__(self, on: bool, rows: int | None):
        self.bar = None
        if on:
            from tqdm.auto import tqdm

            self.bar = tqdm(total=None if rows is None else 2 * rows, desc="covariates, pass 1 of 2 (counting)",
                            unit="row", unit_scale=True, leave=False)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        if self.bar is not None:
            self.bar.close()

    def read(self, rows: int):
        if self.bar is not None:
            self.bar.update(rows)

    def second_pass(self, rows: int):
        """The first pass counted ``rows``: the bar's total is twice that."""
        if self.bar is not None:
            self.bar.total = 2 * rows
            self.bar.set_description("covariates, pass 2 of 2 (placing)")

    def sorting(self):
        if self.bar is not None:
            self.bar.set_description("covariates, sorting each column's rows")


def _column(batch, name, source: CovariateSource) -> pa.Array:
    """The batch's column ``name``; a missing (null) entry raises."""
    column = batch.column(name)
    if column.null_count:
        raise InputError(f"{source.what} has a missing (null) {name!r}")
    return column


def _values(batch, value, cov_rows, names, cols) -> np.ndarray:
    """The batch's values as floats; text or a non-finite value raises naming the row."""
    column = batch.column(value)
    try:
        vals = column.cast(pa.float64()).to_numpy(zero_copy_only=False) if not column.null_count else None
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        values = column.to_numpy(zero_copy_only=False)
        numbers = pd.to_numeric(pd.Series(values), errors="coerce")
        i = int(np.flatnonzero(numbers.isna() & pd.Series(values).notna())[0])
        raise InputError(f"column {value!r} of the covariates table is not numeric: {values[i]!r} at "
                         f"row_id {plain(cov_rows[i])!r}") from None
    bad = np.flatnonzero(~np.isfinite(vals)) if vals is not None else np.flatnonzero(column.is_null().to_numpy(
        zero_copy_only=False))
    if bad.size:
        i = int(bad[0])
        shown = f"a non-finite value ({'missing' if vals is None else vals[i]})"
        raise InputError(f"covariate {plain(names[cols[i].as_py()])!r} has {shown} at row_id {plain(cov_rows[i])!r}")
    return vals


def _row_positions(ids: np.ndarray):
    """The function from row ids to positions in ``ids`` (ascending, unique; -1 if absent):
    a table indexed by id where the integer ids are dense (:data:`DENSE_ID_SPAN`), else a
    binary search or a hash (text ids)."""
    if ids.size and ids.dtype.kind in "iu":
        low, high = int(ids[0]), int(ids[-1])
        if high - low < DENSE_ID_SPAN * ids.size + 1024:
            table = np.full(high - low + 1, -1, np.int64)
            table[ids - low] = np.arange(ids.size)

            def dense(wanted):
                wanted = np.asarray(wanted)
                if wanted.dtype.kind not in "iu" or (wanted.dtype.kind == "u" and wanted.dtype.itemsize == 8):
                    return _search(ids, wanted)
                out = np.empty(wanted.shape[0], np.int64)
                dense_positions(wanted.astype(np.int64, copy=False), low, table, out)
                return out

            return dense
    return lambda wanted: _search(ids, wanted)


def _search(sorted_ids, wanted):
    """Index of each ``wanted`` id in ``sorted_ids`` (ascending, unique), -1 if absent."""
    if sorted_ids.dtype.kind in "iuf" and np.asarray(wanted).dtype.kind in "iuf":
        pos = np.searchsorted(sorted_ids, wanted)
        pos[pos == len(sorted_ids)] = 0
        return np.where(sorted_ids[pos] == wanted, pos, -1).astype(np.int64)
    return pd.Index(sorted_ids).get_indexer(wanted).astype(np.int64)
