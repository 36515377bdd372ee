"""Data: the internal dataset and its builders."""
from riskset.data.dataset import Dataset
from riskset.data.ingest import from_arrays, from_duckdb, from_frame, from_long
from riskset.data.sccs_builder import build_sccs, eras_dataset

__all__ = ["Dataset", "from_arrays", "from_duckdb", "from_frame", "from_long", "build_sccs", "eras_dataset"]
