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
    ``from_long(..., weights="weight", offset="offset")``.
    """
    outcomes, covariates = to_long(data)
    return tuple(write_frames({"outcomes": outcomes, "covariates": covariates}, directory))


def write_duckdb(data: Dataset, database: str) -> None:
    """Write tables ``outcomes`` and ``covariates`` into a DuckDB database (replacing them)."""
    outcomes, covariates = to_long(data)
    write_frames({"outcomes": outcomes, "covariates": covariates}, database)


def write_frames(frames: dict, out: str) -> list[str]:
    """Write each table of ``frames`` (name -> DataFrame) into the DuckDB database ``out``
    (``*.duckdb``, replacing tables of those names) or as ``name.parquet`` (with page
    checksums) into the folder ``out``; returns what was written."""
    if out.endswith(".duckdb"):
        import duckdb

        with duckdb.connect(out) as con:
            for name, frame in frames.items():
                con.register(f"{name}_df", frame)
                con.execute(f'CREATE OR REPLACE TABLE "{name}" AS SELECT * FROM "{name}_df"')
        return [out]
    os.makedirs(out, exist_ok=True)
    paths = []
    for name, frame in frames.items():
        paths.append(os.path.join(out, f"{name}.parquet"))
        frame.to_parquet(paths[-1], index=False, write_page_checksum=True)
    return paths
