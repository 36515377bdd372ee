"""Where each shard's rows come from: a description small enough to send to a worker, which
the worker reads there (the rows never travel through the client).

A :class:`ShardedData` is the list of shard sources and how the rows were split: ``by="row"``
(any partition of the rows: GLMs, and Cox without strata, whose risk sets span shards) or
``by="stratum"`` (each stratum whole in one shard: stratified Cox, conditional logistic and
Poisson, SCCS; no risk set or matched set crosses a worker).

>>> import riskset
>>> from riskset.sharded import split
>>> data = riskset.simulate(n=100, p=3, model="cox", seed=1)
>>> sharded = split(data, 3)
>>> sharded
ShardedData(3 shards by row: in-memory 34 rows, in-memory 33 rows, in-memory 33 rows)
>>> sharded.sources[0].load().n_rows
34
"""
from __future__ import annotations

import glob
from abc import ABC, abstractmethod
from dataclasses import dataclass, field

import numpy as np

from riskset.data.dataset import Dataset, check_dataset
from riskset.data.ingest import from_duckdb, from_long
from riskset.exceptions import InputError

#: How rows may be split over shards.
SPLITS = ("row", "stratum")


class ShardSource(ABC):
    """How a worker reads one shard as a :class:`~riskset.data.Dataset` (any covariate columns:
    the fit aligns every shard on the union of their covariates)."""

    @abstractmethod
    def load(self) -> Dataset:
        """The shard's rows, read where this runs."""

    @abstractmethod
    def describe(self) -> str:
        """A few words naming the shard (for messages)."""


@dataclass(frozen=True)
class InMemoryShard(ShardSource):
    """A Dataset already built (sent to the worker once, when the shard is built; tests and
    data split on the client by :func:`split`)."""

    data: Dataset

    def load(self) -> Dataset:
        return self.data

    def describe(self) -> str:
        return f"in-memory {self.data.n_rows} rows"


@dataclass(frozen=True)
class ParquetShard(ShardSource):
    """OHDSI-style long tables in Parquet (or CSV) files, read by :func:`riskset.from_long`
    with ``options`` (column roles: ``strata=``, ``weights=`` ...)."""

    outcomes: str
    covariates: str
    options: dict = field(default_factory=dict)

    def load(self) -> Dataset:
        return from_long(self.outcomes, self.covariates, **self.options)

    def describe(self) -> str:
        return f"{self.outcomes} + {self.covariates}"


@dataclass(frozen=True)
class DuckDBShard(ShardSource):
    """Two queries on a DuckDB database file the worker can read, by :func:`riskset.from_duckdb`."""

    database: str
    outcomes_sql: str
    covariates_sql: str
    options: dict = field(default_factory=dict)

    def load(self) -> Dataset:
        return from_duckdb(self.database, self.outcomes_sql, self.covariates_sql, **self.options)

    def describe(self) -> str:
        return f"{self.database}: {self.outcomes_sql}"


@dataclass(frozen=True)
class ShardedData:
    """The shards of one data set and how its rows were split (``by``, one of :data:`SPLITS`)."""

    sources: tuple
    by: str = "row"

    def __post_init__(self):
        if self.by not in SPLITS:
            raise InputError(f"by must be one of {SPLITS}, not {self.by!r}")
        if not self.sources:
            raise InputError("sharded data needs at least one shard")
        bad = [s for s in self.sources if not isinstance(s, ShardSource)]
        if bad:
            raise InputError(f"a shard must be a ShardSource (InMemoryShard, ParquetShard, DuckDBShard), not "
                             f"{type(bad[0]).__name__}")

    @property
    def n_shards(self) -> int:
        return len(self.sources)

    def __repr__(self) -> str:
        shown = ", ".join(s.describe() for s in self.sources[:4]) + (" ..." if self.n_shards > 4 else "")
        return f"ShardedData({self.n_shards} shards by {self.by}: {shown})"


def refuse_options(**given) -> None:
    """InputError naming the first option given (``name=(value, default)``) that a fit or search
    over sharded data does not take (its value is not the default)."""
    for name, (value, default) in given.items():
        if value is not default and value != default:
            raise InputError(f"{name}={value!r} is not supported for sharded data (riskset.sharded)")


def split(data: Dataset, n_shards: int, *, by: str = "row", sizes=None, seed: int | None = None) -> ShardedData:
    """``data`` split into ``n_shards`` in-memory shards: by row (consecutive blocks of rows,
    or of a random permutation with ``seed``; ``sizes`` gives each shard's row count) or by
    stratum (whole strata, about equal rows per shard).

    >>> import riskset
    >>> data = riskset.simulate(n=10, p=2, model="logistic", seed=1)
    >>> [s.data.n_rows for s in split(data, 2, sizes=[3, 7]).sources]
    [3, 7]
    """
    check_dataset("data", data)
    if not isinstance(n_shards, (int, np.integer)) or n_shards < 1:
        raise InputError(f"n_shards must be a positive integer, not {n_shards!r}")
    if by not in SPLITS:
        raise InputError(f"by must be one of {SPLITS}, not {by!r}")
    if by == "stratum":
        if data.strata is None:
            raise InputError("by='stratum' needs data with strata")
        groups = _stratum_groups(np.asarray(data.strata), n_shards)
    else:
        order = np.arange(data.n_rows) if seed is None else np.random.default_rng(seed).permutation(data.n_rows)
        if sizes is None and n_shards > data.n_rows:
            raise InputError(f"n_shards = {n_shards} is more than the {data.n_rows} rows")
        groups = np.array_split(order, n_shards) if sizes is None else _sized(order, sizes, n_shards)
    return ShardedData(tuple(InMemoryShard(data.subset(np.sort(rows))) for rows in groups), by=by)


def parquet_shards(outcomes: str, covariates: str, *, by: str = "row", **options) -> ShardedData:
    """One shard per pair of files matched by the glob patterns ``outcomes`` and ``covariates``
    (sorted by name, paired in order: ``cohort/outcomes-*.parquet``, ``cohort/covariates-*.parquet``);
    ``options`` go to :func:`riskset.from_long` on each worker."""
    pairs = [sorted(glob.glob(pattern)) for pattern in (outcomes, covariates)]
    if not pairs[0]:
        raise InputError(f"no outcomes file matches {outcomes!r}")
    if len(pairs[0]) != len(pairs[1]):
        raise InputError(f"{len(pairs[0])} outcomes files match {outcomes!r} but {len(pairs[1])} covariates files "
                         f"match {covariates!r}: give one of each per shard")
    return ShardedData(tuple(ParquetShard(o, c, dict(options)) for o, c in zip(*pairs)), by=by)


def duckdb_shards(database: str, outcomes_sql: str, covariates_sql: str, n_shards: int, *, by: str = "row",
                  **options) -> ShardedData:
    """``n_shards`` shards of a DuckDB database, each read by the queries with ``{shard}`` and
    ``{n_shards}`` filled in (``SELECT * FROM outcomes WHERE row_id % {n_shards} = {shard}``)."""
    for name, sql in (("outcomes_sql", outcomes_sql), ("covariates_sql", covariates_sql)):
        if "{shard}" not in sql:
            raise InputError(f"{name} must name the shard with {{shard}} (and {{n_shards}}): {sql!r}")
    return ShardedData(tuple(DuckDBShard(database, _shard_query("outcomes_sql", outcomes_sql, k, n_shards),
                                         _shard_query("covariates_sql", covariates_sql, k, n_shards), dict(options))
                             for k in range(n_shards)), by=by)


def _shard_query(name: str, sql: str, shard: int, n_shards: int) -> str:
    """``sql`` with ``{shard}`` and ``{n_shards}`` filled in; other braces must be doubled (``{{``)."""
    try:
        return sql.format(shard=shard, n_shards=n_shards)
    except (KeyError, IndexError, ValueError) as err:
        raise InputError(f"{name} has braces other than {{shard}} and {{n_shards}} ({err!r}); write a literal "
                         f"brace as {{{{ or }}}}: {sql!r}") from None


def _sized(order: np.ndarray, sizes, n_shards: int) -> list:
    sizes = np.asarray(sizes, dtype=np.int64)
    if sizes.shape != (n_shards,) or np.any(sizes < 1) or sizes.sum() != order.size:
        raise InputError(f"sizes must be {n_shards} positive row counts adding up to {order.size}, "
                         f"not {sizes.tolist()}")
    return np.split(order, np.cumsum(sizes)[:-1])


def _stratum_groups(strata: np.ndarray, n_shards: int) -> list:
    """Rows grouped into ``n_shards`` sets of whole strata, about equal rows each."""
    order = np.argsort(strata, kind="stable")
    bounds = np.flatnonzero(np.diff(strata[order])) + 1
    starts = np.concatenate([[0], bounds])
    cut = np.searchsorted(starts, np.linspace(0, strata.size, n_shards + 1)[1:-1])
    return np.split(order, starts[cut]) if cut.size else [order]
