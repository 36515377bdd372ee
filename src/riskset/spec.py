"""Analysis specifications in the format of the reference cases (``case.json``).

A specification names the model, the role of each data column, the covariates and
the penalty; the data file is ``data.csv`` beside it unless the spec names another
(``"data": "file.csv"``). Model options (ties, intercept, competing event codes,
interval width ...) are read by each model's ``from_spec``.
"""
from __future__ import annotations

import json
import os

import pandas as pd

from riskset.api import fit
from riskset.data.ingest import from_frame
from riskset.models.base import Model, get_model
from riskset.results import FitResult
from riskset.solver.prior import Prior

#: case.json column roles -> keyword of :func:`riskset.from_frame`.
COLUMN_ROLES = ("y", "time", "status", "start", "stop", "strata", "offset", "exposure", "weights", "subject")


def load_spec(path: str) -> tuple[dict, pd.DataFrame]:
    """The specification at ``path`` and its data table."""
    with open(path) as f:
        spec = json.load(f)
    data_path = os.path.join(os.path.dirname(os.path.abspath(path)), spec.get("data", "data.csv"))
    return spec, pd.read_csv(data_path)


def is_supported(spec: dict) -> bool:
    """Whether a registered regression model handles this specification."""
    get_model("logistic")  # imports and registers the built-in families
    return spec.get("model") in Model.registry


def dataset_from_spec(spec: dict, frame: pd.DataFrame):
    columns = spec.get("columns", {})
    unknown = set(columns) - set(COLUMN_ROLES)
    if unknown:
        raise ValueError(f"unknown column role(s) in specification: {', '.join(sorted(unknown))}")
    return from_frame(frame, covariates=spec.get("covariates"), **columns)


def fit_spec(spec: dict, frame: pd.DataFrame, *, tol: float = 1e-12, **fit_options) -> FitResult:
    """Fit the specification's model to ``frame``."""
    model = Model.registry[spec["model"]].from_spec(spec) if is_supported(spec) else get_model(spec["model"])
    data = dataset_from_spec(spec, frame)
    return fit(data, model, Prior.from_spec(spec.get("penalty")), tol=tol, **fit_options)


def run_spec(path: str, **fit_options) -> FitResult:
    """Load and fit the specification at ``path``."""
    spec, frame = load_spec(path)
    return fit_spec(spec, frame, **fit_options)
