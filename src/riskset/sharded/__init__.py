"""One fit over rows that stay on many Dask workers, to the optimum of the one-machine fit.

Each worker reads its shard (:mod:`riskset.sharded.sources`: Parquet files, a DuckDB query, an
in-memory split) and keeps it prepared (:mod:`riskset.sharded.shards`); the client runs outer
Newton iterations (:mod:`riskset.solver.proximal_newton`) whose every question is a round of
tasks and a sum (:mod:`riskset.sharded.datafit`). Models whose log-likelihood adds over shards
(GLMs; stratified Cox, conditional and SCCS split by stratum) exchange only coefficient
vectors; a Cox model without strata, whose risk sets span shards, exchanges per-event-time
sums as well (:mod:`riskset.sharded.risk_sets`), never rows.

>>> import riskset
>>> from riskset.sharded import split
>>> split(riskset.simulate(n=100, p=3, model="cox", seed=1), 2)
ShardedData(2 shards by row: in-memory 50 rows, in-memory 50 rows)
"""
from riskset.sharded.sources import (DuckDBShard, InMemoryShard, ParquetShard, ShardedData, ShardSource,
                                     duckdb_shards, parquet_shards, split)
from riskset.sharded.fit import fit_sharded

__all__ = ["DuckDBShard", "InMemoryShard", "ParquetShard", "ShardSource", "ShardedData", "duckdb_shards",
           "fit_sharded", "parquet_shards", "split"]
