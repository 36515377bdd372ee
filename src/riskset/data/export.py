"""Writing a Dataset as OHDSI-style long tables (Parquet files or a DuckDB database)."""
from __future__ import annotations

import os

import numpy as np
import pandas as pd

from riskset.data.dataset import OUTCOME_FIELDS, Dataset

#: Dataset field -> column name in the long outcomes table (read back by from_long's defaults).
_LONG_NAMES = {"weights": "weight"}


def to_long(data: Dataset) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(outcomes, covariates) tables: ``row_id, [stratum_id], outcome columns`` and
    ``row_id, covariate_id, value``."""
    out = pd.DataFrame({"row_id": data.row_ids})
    if data.strata is not None:
        out["stratum_id"] = data.strata
    for f in OUTCOME_FIELDS:
        v = getattr(data, f)
        if v is not None:
            out[_LONG_NAMES.get(f, f)] = v
    X = data.X.tocoo()
    names = np.asarray(data.covariate_names, dtype=object)
    cov = pd.DataFrame({"row_id": data.row_ids[X.row], "covariate_id": names[X.col], "value": X.data})
    return out, cov


def write_parquet(data: Dataset, directory: str) -> tuple[str, str]:
    """Write ``outcomes.parquet`` and ``covariates.parquet`` into ``directory``.

    Every page carries a CRC checksum, which :func:`riskset.from_long` verifies, so a
    file corrupted on disk or in transfer is refused rather than fitted. Weights and
    offset are written as columns ``weight`` and ``offset``; read them back with
    ``from_long(..., weight="weight", offset="offset")``.
    """
    os.makedirs(directory, exist_ok=True)
    out, cov = to_long(data)
    paths = os.path.join(directory, "outcomes.parquet"), os.path.join(directory, "covariates.parquet")
    out.to_parquet(paths[0], index=False, write_page_checksum=True)
    cov.to_parquet(paths[1], index=False, write_page_checksum=True)
    return paths


def write_duckdb(data: Dataset, database: str) -> None:
    """Write tables ``outcomes`` and ``covariates`` into a DuckDB database (replacing them)."""
    import duckdb

    outcomes, covariates = to_long(data)
    with duckdb.connect(database) as con:
        con.register("outcomes_df", outcomes)
        con.register("covariates_df", covariates)
        con.execute("CREATE OR REPLACE TABLE outcomes AS SELECT * FROM outcomes_df")
        con.execute("CREATE OR REPLACE TABLE covariates AS SELECT * FROM covariates_df")
