"""Builders of :class:`~riskset.data.Dataset` from the supported input shapes.

- :func:`from_frame`: a wide pandas or Arrow table (lifelines style): outcome columns
  plus covariate columns; categorical columns become indicator columns.
- :func:`from_long`: OHDSI-style long tables: outcomes ``row_id, [stratum_id],
  y or time/status`` (case weights and offset only when named: ``weights=``,
  ``offset=``) and covariates ``row_id, covariate_id, [value]``; from pandas,
  Arrow, or Parquet/CSV paths.
- :func:`from_duckdb`: the same two tables as SQL queries on a DuckDB database.
- :func:`from_arrays`: a scipy.sparse or NumPy matrix plus outcome vectors.

Every builder names a role by the same keyword (``y, time, status, start, strata,
subject, weights, offset``; the old ``stratum=`` and ``weight=`` of :func:`from_long`
still work, with a DeprecationWarning) and takes ``covariate_ref=``: a
FeatureExtraction-style reference table (``covariate_id, covariate_name[,
analysis_id, concept_id]``) whose names are shown in tables and plots while the ids
stay the keys (:func:`covariate_labels`).

All paths are vectorized (no Python loop per row): ten million covariate rows load
in seconds.
"""
from __future__ import annotations

import os
import re
import warnings
from contextlib import contextmanager

import numpy as np
import pandas as pd
import scipy.sparse as sp

from riskset.data.dataset import Dataset, check_finite, plain, row_label
from riskset.exceptions import DataWarning, InputError
from riskset.data import long_covariates
from riskset.validation import renamed

#: Old keywords of :func:`from_long` / :func:`from_duckdb` -> the keyword every builder uses.
_OLD_ROLE_KEYWORDS = {"stratum": "strata", "weight": "weights"}

#: The file types of a table, by ending.
PARQUET, CSV = (".parquet", ".pq"), (".csv", ".csv.gz")


def from_frame(frame, *, y=None, time=None, status=None, start=None, stop=None, strata=None,
               subject=None, weights=None, offset=None, exposure=None, censor_weights=None, covariates=None,
               row_id=None, covariate_ref=None) -> Dataset:
    """Dataset from a wide table: one row per observation, one column per variable.

    Parameters
    ----------
    frame : pandas.DataFrame or pyarrow.Table
    y, time, status, start, stop, strata, subject, weights, offset, exposure : str, optional
        Column names of the outcome roles. ``stop`` is a synonym of ``time`` (the end
        of a counting-process interval). ``exposure`` is a positive column whose log
        is used as offset.
    censor_weights : str, optional
        Column of Fine-Gray censoring weights G(T-) (Cyclops' ``censorWeights``).
    covariates : list of str, optional
        Covariate columns; all remaining columns by default. Boolean columns become
        0/1; string or categorical columns become one indicator per level except the
        first (sorted), named ``column[level]``; a column of numbers stored as objects is
        numeric. A DataWarning names a text column of a single value (left out: it
        carries no information) and one that holds numbers but for a few values (each
        distinct value becomes a level: clean the values, or give the column a
        categorical dtype if levels are meant). Two columns of one name are refused.
    row_id : str, optional
        Column of row identifiers (default: the position).
    covariate_ref : DataFrame, Arrow table or path, optional
        Names to show for covariates (:func:`covariate_labels`).

    Examples
    --------
    >>> import pandas as pd
    >>> df = pd.DataFrame({"y": [0, 1, 1], "age": [50.0, 61.0, 70.0], "sex": ["f", "m", "f"]})
    >>> ds = from_frame(df, y="y")
    >>> ds.covariate_names
    ['age', 'sex[m]']
    """
    df = _to_pandas(frame)
    if len(df) == 0:
        raise InputError("the data set is empty (no rows)")
    if time is not None and stop is not None:
        raise InputError("give either time or stop, not both")
    time = time if time is not None else stop
    roles = {"y": y, "time": time, "status": status, "start": start, "weights": weights, "offset": offset,
             "censor_weights": censor_weights}
    used = [c for c in list(roles.values()) + [strata, subject, exposure, row_id] if c is not None]
    missing = [c for c in used if c not in df.columns]
    if missing:
        raise InputError(f"column(s) not in the data: {', '.join(map(repr, missing))}")
    covariates = [c for c in df.columns if c not in used] if covariates is None else list(covariates)
    _check_unique_columns(df.columns, used + covariates, "the data")
    row_ids = df[row_id].to_numpy() if row_id is not None else np.arange(len(df))
    _check_unique_ids(row_ids)
    outcome = {role: _numeric_column(df, col, row_ids) for role, col in roles.items() if col is not None}
    if exposure is not None:
        outcome["offset"] = _log_exposure(_numeric_column(df, exposure, row_ids), exposure, row_ids,
                                          outcome.get("offset"))
    X, names = _covariate_matrix(df, covariates, row_ids)
    strata_codes, labels = _codes(df[strata]) if strata is not None else (None, None)
    subject_codes = _codes(df[subject])[0] if subject is not None else None
    ds = Dataset(X=X, covariate_names=names, row_ids=row_ids, strata=strata_codes, strata_labels=labels,
                 subject=subject_codes,
                 meta={"roles": _role_columns(weights, offset, exposure, strata, censor_weights)},
                 **_typed_outcome(outcome))
    return _labelled(ds.drop_empty_covariates(), covariate_ref)


@renamed(**_OLD_ROLE_KEYWORDS)
def from_long(outcomes, covariates, *, row_id="row_id", strata="stratum_id", y="y", time="time",
              status="status", start="start", weights=None, offset=None, exposure=None, censor_weights=None,
              covariate_id="covariate_id", value="value", subject=None, covariate_ref=None,
              progress: bool = False) -> Dataset:
    """Dataset from OHDSI-style long tables.

    Parameters
    ----------
    outcomes : DataFrame, pyarrow.Table, or path to a Parquet/CSV file
        One row per observation: ``row_id`` and whichever of ``stratum_id``, ``y``,
        ``time``, ``status``, ``start`` are present (column names configurable by the
        keyword of the same role: ``strata="matched_set"``). A ``stratum_id`` column
        stratifies the models that use strata (Cox, conditional models, SCCS); the fit
        reports it in ``roles``.
    covariates : DataFrame, pyarrow.Table, or path
        One row per non-zero covariate value: ``row_id, covariate_id[, value]``;
        without a value column every entry is 1 (indicator covariates). Covariate ids
        may be 64-bit integers or strings; columns are ordered by id, and rows by
        ``row_id``, so results never depend on the order rows arrive in. Read in
        batches, twice (:mod:`riskset.data.long_covariates`): a file of any size is never
        held whole, only the matrix built from it.
    weights, offset, exposure : str, optional
        Columns used as case weights, as offset (fixed part of the linear predictor)
        and as exposure (offset log(exposure)). Never taken from a column name alone:
        a column called ``weight`` or ``offset`` that is not asked for is left unused,
        with a DataWarning saying how to use it (``weights="weight"``).
    censor_weights : str, optional
        Column of Fine-Gray censoring weights G(T-) (Cyclops' ``censorWeights``).
    covariate_ref : DataFrame, Arrow table or path, optional
        OHDSI covariate reference table (``covariate_id, covariate_name, ...``): the
        names shown for the covariate ids in tables and plots (:func:`covariate_labels`).
    progress : bool
        Show a progress bar over the covariate rows read (two passes: counting, then
        placing them).

    Examples
    --------
    >>> import pandas as pd
    >>> out = pd.DataFrame({"row_id": [10, 11], "y": [1, 0]})
    >>> cov = pd.DataFrame({"row_id": [11, 10, 10], "covariate_id": [7, 7, 3]})
    >>> ds = from_long(out, cov)
    >>> ds.covariate_names, ds.X.toarray().tolist()
    (['3', '7'], [[1.0, 1.0], [0.0, 1.0]])
    """
    out = _to_pandas(_read_table(outcomes))
    cov = _covariate_source(covariates, row_id)
    if len(out) == 0:
        raise InputError("the outcomes table is empty (no rows)")
    if row_id not in out.columns:
        raise InputError(f"the outcomes table has no {row_id!r} column")
    _check_unique_columns(out.columns, [row_id, strata, y, time, status, start, weights, offset, exposure, subject,
                                        censor_weights], "the outcomes table")
    _check_unique_columns(cov.columns, [row_id, covariate_id, value], "the covariates table")
    out = out.sort_values(row_id, kind="stable").reset_index(drop=True)
    ids = out[row_id].to_numpy()
    _check_unique_ids(ids)
    _warn_unrequested_roles(out.columns, weights=weights, offset=offset)
    requested = {"weights": weights, "offset": offset, "exposure": exposure, "censor_weights": censor_weights,
                 "strata": None if strata == "stratum_id" else strata}  # the OHDSI stratum_id is optional
    missing = [f"{role}={col!r}" for role, col in requested.items() if col is not None and col not in out.columns]
    if missing:
        raise InputError(f"the outcomes table has no column for {', '.join(missing)}")
    present = {"y": y, "time": time, "status": status, "start": start}
    outcome = {role: _numeric_column(out, col, ids) for role, col in present.items() if col in out.columns}
    outcome.update({role: _numeric_column(out, col, ids)
                    for role, col in (("weights", weights), ("offset", offset), ("censor_weights", censor_weights))
                    if col is not None})
    if exposure is not None:
        outcome["offset"] = _log_exposure(_numeric_column(out, exposure, ids), exposure, ids, outcome.get("offset"))
    strata = strata if strata in out.columns else None
    strata_codes, labels = _codes(out[strata]) if strata is not None else (None, None)
    subject_codes = _codes(out[subject])[0] if subject is not None else None
    X, names = long_covariates.read_covariates(cov, ids, row_id, covariate_id, value, progress=progress)
    ds = Dataset(X=X, covariate_names=names, row_ids=ids, strata=strata_codes, strata_labels=labels,
                 subject=subject_codes,
                 meta={"roles": _role_columns(weights, offset, exposure, strata, censor_weights)},
                 **_typed_outcome(outcome))
    return _labelled(ds.drop_empty_covariates(), covariate_ref)


@renamed(**_OLD_ROLE_KEYWORDS)
def from_duckdb(database: str, outcomes_sql: str, covariates_sql: str, *, covariate_ref_sql: str | None = None,
                **kwargs) -> Dataset:
    """Dataset from two SQL queries on a DuckDB database (read only).

    The queries must return the tables of :func:`from_long`; keyword arguments are
    passed on to it (column names; case weights and offset only when asked for, e.g.
    ``weights="weight"``; ``progress=True`` for a bar over the covariate rows read).
    ``covariate_ref_sql`` queries the covariate reference table (``covariate_id,
    covariate_name, ...``) whose names are shown for the ids.

    Examples
    --------
    >>> ds = from_duckdb("cohort.duckdb",  # doctest: +SKIP
    ...                  "SELECT row_id, time, status FROM outcomes",
    ...                  "SELECT row_id, covariate_id, value FROM covariates",
    ...                  covariate_ref_sql="SELECT * FROM covariate_ref")
    """
    import duckdb

    if covariate_ref_sql is not None and kwargs.get("covariate_ref") is not None:
        raise InputError("give covariate_ref_sql or covariate_ref, not both")
    if not os.path.exists(database):
        raise InputError(f"DuckDB database {database!r} does not exist")
    with duckdb.connect(database, read_only=True) as con:
        outcomes = _query(con, outcomes_sql, "outcomes_sql")
        if covariate_ref_sql is not None:
            kwargs["covariate_ref"] = _query(con, covariate_ref_sql, "covariate_ref_sql")
        return from_long(outcomes, _query_source(con, covariates_sql, "covariates_sql"), **kwargs)


def from_arrays(X, *, y=None, time=None, status=None, start=None, weights=None, offset=None, censor_weights=None,
                strata=None, subject=None, covariate_names=None, row_ids=None, covariate_ref=None) -> Dataset:
    """Dataset from a matrix (scipy.sparse or NumPy, rows = observations) and outcome vectors.

    ``covariate_ref`` gives names to show for the covariates (:func:`covariate_labels`).

    >>> import numpy as np
    >>> ds = from_arrays(np.eye(3), y=np.array([0, 1, 1]))
    >>> ds.covariate_names
    ['x0', 'x1', 'x2']
    """
    try:
        X = sp.csc_matrix(X, dtype=np.float64)
    except (TypeError, ValueError) as e:
        raise InputError(f"X must be a numeric matrix (scipy.sparse or NumPy, rows = observations): {e}") from None
    n, p = X.shape
    names = list(covariate_names) if covariate_names is not None else [f"x{j}" for j in range(p)]
    row_ids = np.arange(n) if row_ids is None else np.asarray(row_ids)
    _check_unique_ids(row_ids)
    outcome = {k: np.asarray(v) for k, v in dict(y=y, time=time, status=status, start=start,
                                                  weights=weights, offset=offset,
                                                  censor_weights=censor_weights).items() if v is not None}
    for k, v in outcome.items():
        if v.ndim != 1 or len(v) != n:
            raise InputError(f"{k} must be a vector of {n} values (one per row of X), got shape {v.shape}")
        check_finite(v, k, row_ids)
    strata_codes, labels = _codes(pd.Series(strata)) if strata is not None else (None, None)
    subject_codes = _codes(pd.Series(subject))[0] if subject is not None else None
    given = {role: "array" for role, v in (("weights", weights), ("offset", offset), ("strata", strata),
                                           ("censor_weights", censor_weights)) if v is not None}
    ds = Dataset(X=X, covariate_names=names, row_ids=row_ids, strata=strata_codes, strata_labels=labels,
                 subject=subject_codes, meta={"roles": given}, **_typed_outcome(outcome))
    return _labelled(ds.drop_empty_covariates(), covariate_ref)


# -- covariate reference tables (OHDSI FeatureExtraction) ----------------------------------
#: Columns of a covariate reference table that riskset reads (analysis_id, concept_id may be present).
REF_COLUMNS = ("covariate_id", "covariate_name")


def covariate_labels(reference, covariate_names) -> dict:
    """Display name of each covariate from a FeatureExtraction-style reference table.

    ``reference`` (DataFrame, Arrow table, or Parquet/CSV path) has columns
    ``covariate_id`` and ``covariate_name`` (also spelled ``covariateId``,
    ``covariateName``; ``analysis_id`` and ``concept_id`` may be there and are not
    needed). Ids are matched to covariate names as text (``1002`` names ``'1002'``).
    Rules: a missing column, a missing id or name, or an id listed twice raises an
    InputError; ids not in the data are ignored (a reference table covers every
    covariate of an extraction, a data set often fewer); a reference that names none
    of the data's covariates raises; covariates without a name keep their id, with a
    DataWarning naming them.

    Examples
    --------
    >>> import pandas as pd
    >>> ref = pd.DataFrame({"covariate_id": [1002, 8532001], "covariate_name": ["age 20-24", "gender = FEMALE"],
    ...                     "analysis_id": [2, 1], "concept_id": [0, 8532]})
    >>> covariate_labels(ref, ["1002", "8532001"])
    {'1002': 'age 20-24', '8532001': 'gender = FEMALE'}
    """
    ref = _ref_columns(_to_pandas(_read_table(reference)))
    ids = _id_texts(ref["covariate_id"])
    names = ref["covariate_name"]
    if names.isna().any():
        i = int(np.flatnonzero(names.isna().to_numpy())[0])
        raise InputError(f"the covariate reference table has no covariate_name for covariate_id {ids[i]!r}")
    dup = pd.Series(ids).duplicated()
    if dup.any():
        raise InputError(f"the covariate reference table lists covariate_id {ids[int(np.flatnonzero(dup)[0])]!r} "
                         f"more than once ({int(dup.sum())} duplicate(s)); give one row per covariate")
    labels = dict(zip(ids, names.astype(str)))
    known = [n for n in covariate_names if n in labels]
    if covariate_names and not known:
        raise InputError(f"the covariate reference table names none of the data's covariates: it has ids "
                         f"{_first(list(labels))}, the data {_first(covariate_names)}; is it the reference "
                         f"table of these covariates?")
    unnamed = [n for n in covariate_names if n not in labels]
    if unnamed:
        warnings.warn(f"{len(unnamed)} covariate(s) have no name in the covariate reference table and are shown "
                      f"by id: {_first(unnamed)}", DataWarning, stacklevel=3)
    return {n: labels[n] for n in known}


def _ref_columns(ref: pd.DataFrame) -> pd.DataFrame:
    """The reference table with its columns named in snake case (covariateId -> covariate_id)."""
    snake = {c: re.sub(r"(?<=[a-z0-9])([A-Z])", r"_\1", str(c)).lower() for c in ref.columns}
    ref = ref.rename(columns=snake)
    missing = [c for c in REF_COLUMNS if c not in ref.columns]
    if missing:
        raise InputError(f"the covariate reference table has no {' or '.join(map(repr, missing))} column "
                         f"(it has {', '.join(map(repr, map(str, ref.columns)))}); it needs covariate_id and "
                         f"covariate_name, as FeatureExtraction's covariateRef")
    return ref


def _id_texts(ids: pd.Series) -> list[str]:
    """Covariate ids as the text that names them in a Dataset (whole floats as integers)."""
    if ids.isna().any():
        raise InputError(f"the covariate reference table has {int(ids.isna().sum())} row(s) without a covariate_id")
    if pd.api.types.is_float_dtype(ids) and np.all(ids == np.round(ids)):
        ids = ids.astype(np.int64)
    return [str(plain(v)) for v in ids.to_numpy()]


def _labelled(ds: Dataset, reference) -> Dataset:
    """``ds`` with the display names of ``reference`` (a covariate reference table), if given."""
    if reference is None:
        return ds
    return ds.with_covariate_labels(covariate_labels(reference, ds.covariate_names))


def _first(names, k: int = 5) -> str:
    names = list(names)
    return ", ".join(map(repr, names[:k])) + (f" ... ({len(names)} in all)" if len(names) > k else "")


# -- helpers ---------------------------------------------------------------------------
#: Conventional column names of roles that are used only when asked for: column -> (keyword, role).
_EXPLICIT_ROLES = {"weight": ("weights", "case weights"),
                   "offset": ("offset", "offset (fixed part of the linear predictor)")}


def _warn_unrequested_roles(columns, **requested):
    """A DataWarning for each column named like a role (``weight``, ``offset``) that was not asked for."""
    for column, (keyword, what) in _EXPLICIT_ROLES.items():
        if requested[keyword] is None and column in columns:
            warnings.warn(f"the outcomes table has a column {column!r} that is NOT used as {what}; to use it, "
                          f"give {keyword}={column!r} (command line: --{keyword} {column}); to silence this "
                          f"warning, leave the column out of the outcomes table", DataWarning, stacklevel=4)


def _role_columns(weights, offset, exposure, strata, censor_weights=None) -> dict:
    """Which column played which role, for ``Dataset.meta['roles']`` and the fit's report."""
    roles = {"weights": weights, "strata": strata, "censor_weights": censor_weights}
    if exposure is not None:
        roles["offset"] = f"log({exposure})" if offset is None else f"{offset} + log({exposure})"
    else:
        roles["offset"] = offset
    return {role: str(col) for role, col in roles.items() if col is not None}


def _query(con, sql, what):
    """The result of query ``sql`` as an Arrow table; a failing query names itself."""
    import duckdb

    try:
        return _arrow(con.sql(sql))
    except duckdb.Error as e:
        raise InputError(f"{what} failed: {sql!r}: {e}") from None


def _query_source(con, sql, what) -> long_covariates.CovariateSource:
    """The covariates query ``sql`` as a source read in batches (the query run once per read)."""
    import duckdb

    def batches(names):
        try:
            relation = con.sql(sql).select(*(duckdb.ColumnExpression(n) for n in names))  # those columns alone
            # to_arrow_reader from DuckDB 1.4 on
            read = relation.to_arrow_reader if hasattr(relation, "to_arrow_reader") else relation.fetch_record_batch
            yield from read(long_covariates.BATCH_ROWS)
        except duckdb.Error as e:
            raise InputError(f"{what} failed: {sql!r}: {e}") from None

    try:
        columns = list(con.sql(sql).columns)
    except duckdb.Error as e:
        raise InputError(f"{what} failed: {sql!r}: {e}") from None
    return long_covariates.CovariateSource(batches, columns, f"the covariates query ({what})")


def _covariate_source(source, row_id: str) -> long_covariates.CovariateSource:
    """A DataFrame or Arrow table in slices; a Parquet or CSV file opened for each read, in batches
    (a source already, as :func:`from_duckdb`'s query, as it is)."""
    if isinstance(source, long_covariates.CovariateSource):
        return source
    if not isinstance(source, (str, os.PathLike)):
        return long_covariates.CovariateSource.of_table(source, row_id)
    path = _file_path(source)

    def opened(names=None):
        if path.endswith(CSV):
            import pyarrow.csv as pacsv

            return pacsv.open_csv(path, convert_options=pacsv.ConvertOptions(include_columns=names))
        import pyarrow.parquet as pq

        return pq.ParquetFile(path, page_checksum_verification=True)

    def batches(names):
        with _reading(path):
            f = opened(names)
            yield from (f if path.endswith(CSV) else f.iter_batches(long_covariates.BATCH_ROWS, columns=names))

    with _reading(path):
        f = opened()
        if path.endswith(CSV):
            return long_covariates.CovariateSource(batches, list(f.schema.names))
        return long_covariates.CovariateSource(batches, list(f.schema_arrow.names), rows=f.metadata.num_rows)


def _arrow(relation):
    """A DuckDB relation as an Arrow table (``to_arrow_table`` from DuckDB 1.4 on)."""
    return relation.to_arrow_table() if hasattr(relation, "to_arrow_table") else relation.fetch_arrow_table()


def _read_table(source):
    """A DataFrame or Arrow table as is; a path read by pyarrow (Parquet or CSV).

    Parquet page checksums, when the file has them (riskset writes them), are verified:
    a corrupt file raises an InputError naming it instead of giving different numbers.
    """
    if not isinstance(source, (str, os.PathLike)):
        return source
    path = _file_path(source)
    with _reading(path):
        if path.endswith(CSV):
            import pyarrow.csv as pacsv

            return pacsv.read_csv(path)
        import pyarrow.parquet as pq

        return pq.read_table(path, page_checksum_verification=True)


def _file_path(source) -> str:
    """The path of an existing Parquet or CSV file; otherwise an InputError naming it."""
    path = os.fspath(source)
    if not os.path.exists(path):
        raise InputError(f"file {path!r} does not exist")
    if not path.endswith(PARQUET + CSV):
        raise InputError(f"unsupported file type {path!r}: use .parquet or .csv")
    return path


@contextmanager
def _reading(path: str):
    """Reading the file ``path``: pyarrow's error on a corrupt file becomes an InputError naming it."""
    import pyarrow as pa

    try:
        yield
    except (OSError, pa.ArrowException) as e:
        raise InputError(f"cannot read file {path!r}, it is corrupt or not in its format: {e}") from None


def _to_pandas(frame) -> pd.DataFrame:
    if isinstance(frame, pd.DataFrame):
        return frame
    if hasattr(frame, "to_pandas"):
        return frame.to_pandas()
    raise InputError(f"expected a pandas DataFrame or Arrow table, got {type(frame).__name__}")


#: What :func:`pandas.api.types.infer_dtype` says of an object column that holds numbers only.
_NUMBER_KINDS = ("integer", "floating", "mixed-integer-float", "decimal")


def _covariate_matrix(df, covariates, row_ids):
    missing = [c for c in covariates if c not in df.columns]
    if missing:
        raise InputError(f"covariate column(s) not in the data: {', '.join(map(repr, missing))}")
    blocks, names = [], []
    for c in covariates:
        s = df[c]
        if s.dtype == bool:
            blocks.append(s.to_numpy(dtype=np.float64)[:, None])
            names.append(c)
        elif pd.api.types.is_numeric_dtype(s) or (
                s.dtype == object and pd.api.types.infer_dtype(s, skipna=False) in _NUMBER_KINDS):
            v = s.to_numpy(dtype=np.float64, na_value=np.nan)
            check_finite(v, c, row_ids)
            blocks.append(v[:, None])
            names.append(c)
        else:
            if s.isna().any():
                i = int(np.flatnonzero(s.isna().to_numpy())[0])
                raise InputError(f"column {c!r} has a missing value at {row_label(row_ids, i)}")
            levels = sorted(s.astype(str).unique())
            _warn_unusual_levels(s, c, levels, row_ids)
            ind = pd.get_dummies(s.astype(str)).reindex(columns=levels[1:], fill_value=False)
            blocks.append(ind.to_numpy(dtype=np.float64))
            names.extend(f"{c}[{lv}]" for lv in levels[1:])
    if not blocks:
        return sp.csc_matrix((len(df), 0)), []
    X = sp.csc_matrix(np.hstack(blocks))
    X.eliminate_zeros()
    return X, names


def _warn_unusual_levels(s: pd.Series, column, levels: list, row_ids) -> None:
    """A DataWarning for a text column of one value (it gets no indicator), and for one that
    holds numbers but for a few values (every distinct number would become a level)."""
    if len(levels) == 1:
        warnings.warn(f"column {column!r} has the one value {levels[0]!r} in every row: it carries no "
                      f"information and is left out of the covariates", DataWarning, stacklevel=4)
        return
    if isinstance(s.dtype, pd.CategoricalDtype):  # levels asked for
        return
    text = pd.to_numeric(s, errors="coerce").isna().to_numpy()
    if not text.any() or 2 * int(text.sum()) >= len(s):  # no number, or mostly text: a categorical column
        return
    firsts = pd.Series(np.flatnonzero(text), index=s[text].astype(str).to_numpy())
    firsts = firsts[~firsts.index.duplicated()]
    shown = ", ".join(f"{v!r} at {row_label(row_ids, int(i))}" for v, i in firsts.iloc[:3].items())
    more = f" and {len(firsts) - 3} other value(s)" if len(firsts) > 3 else ""
    warnings.warn(f"column {column!r} is numeric except for {shown}{more} ({int(text.sum())} row(s)); treated as "
                  f"categorical with {len(levels)} levels (one indicator per distinct value): convert it or "
                  f"clean the value(s), or give it a categorical dtype if levels are meant", DataWarning,
                  stacklevel=4)


def _check_unique_columns(columns, used, table: str) -> None:
    """InputError naming the columns of ``used`` that ``columns`` holds more than once."""
    index = pd.Index(columns)
    twice = set(index[index.duplicated()])
    named = [c for c in dict.fromkeys(used) if c is not None and c in twice]
    if named:
        raise InputError(f"{table} has more than one column named {', '.join(map(repr, named))}: rename or "
                         f"drop the copies")


def _numeric_column(df, col, row_ids):
    s = df[col]
    if not pd.api.types.is_numeric_dtype(s) and s.dtype != bool:
        text = pd.to_numeric(s, errors="coerce").isna() & s.notna()
        first = f": {s[text].iloc[0]!r} at {row_label(row_ids, int(np.flatnonzero(text)[0]))}" if text.any() else ""
        raise InputError(f"column {col!r} is not numeric (dtype {s.dtype}){first}")
    v = s.to_numpy(dtype=np.float64, na_value=np.nan)
    check_finite(v, col, row_ids)
    return v


def _log_exposure(v, name, row_ids, offset):
    if np.any(v <= 0):
        i = int(np.flatnonzero(v <= 0)[0])
        raise InputError(f"exposure column {name!r} must be > 0; {row_label(row_ids, i)} has {v[i]}")
    return np.log(v) + (0.0 if offset is None else offset)


def _typed_outcome(outcome):
    typed = dict(outcome)
    if "status" in typed:
        s = typed["status"]
        if np.any(s != np.round(s)):
            i = int(np.flatnonzero(s != np.round(s))[0])
            raise InputError(f"status codes must be integers; found {s[i]} at position {i}")
        typed["status"] = s.astype(np.int64)
    return typed


def _codes(series):
    codes, labels = pd.factorize(pd.Series(series), sort=True)
    if np.any(codes < 0):
        raise InputError(f"column {getattr(series, 'name', '')!r} has missing values")
    return codes.astype(np.int64), np.asarray(labels)


def _check_unique_ids(ids):
    s = pd.Series(ids)
    dup = s.duplicated()
    if dup.any():
        raise InputError(f"duplicate row id {plain(s[dup].iloc[0])!r} ({int(dup.sum())} duplicate(s))")

