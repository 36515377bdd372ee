"""Data: the internal dataset and its builders."""
from riskset.data.dataset import Dataset
from riskset.data.ingest import from_arrays, from_duckdb, from_frame, from_long

__all__ = ["Dataset", "from_arrays", "from_duckdb", "from_frame", "from_long"]
