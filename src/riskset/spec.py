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
from riskset.exceptions import InputError
from riskset.models.base import Model, get_model
from riskset.results import FitResult
from riskset.solver.prior import Prior

#: case.json column roles -> keyword of :func:`riskset.from_frame`.
COLUMN_ROLES = ("y", "time", "status", "start", "stop", "strata", "offset", "exposure", "weights", "subject")


#: Fields a specification must have, and the JSON type of each field it may have.
REQUIRED_FIELDS = ("model",)
FIELD_TYPES = {"model": str, "data": str, "columns": dict, "covariates": list, "penalty": dict}


def load_spec(path: str) -> tuple[dict, pd.DataFrame]:
    """The specification at ``path`` and its data table; InputError names the file and what is wrong."""
    with open(path) as f:
        try:
            spec = json.load(f)
        except (json.JSONDecodeError, UnicodeDecodeError) as err:
            raise InputError(f"specification {path!r} is not valid JSON: {err}") from None
    check_spec(spec, path)
    data_path = os.path.join(os.path.dirname(os.path.abspath(path)), spec.get("data", "data.csv"))
    if not os.path.exists(data_path):
        raise InputError(f"specification {path!r}: its data file {data_path!r} does not exist (name another "
                         f"with \"data\": \"FILE.csv\")")
    try:
        return spec, pd.read_csv(data_path)
    except ValueError as err:  # empty, malformed or not text (pandas parser errors are ValueErrors)
        raise InputError(f"specification {path!r}: cannot read its data file {data_path!r} as CSV: {err}") from None


def check_spec(spec, path: str = "specification") -> None:
    """Raise InputError unless ``spec`` is a JSON object with a model and fields of the right types.

    >>> check_spec({"model": "cox", "columns": ["time"]}, "case.json")
    Traceback (most recent call last):
    riskset.exceptions.InputError: case.json: field 'columns' must be a JSON object, not list
    """
    if not isinstance(spec, dict):
        raise InputError(f"{path}: a specification is a JSON object ({{\"model\": ..., ...}}), "
                         f"not {type(spec).__name__}")
    missing = [f for f in REQUIRED_FIELDS if f not in spec]
    if missing:
        raise InputError(f"{path}: the specification lacks the field(s) {', '.join(map(repr, missing))}")
    json_names = {str: "string", dict: "JSON object", list: "list"}
    for field, kind in FIELD_TYPES.items():
        if field in spec and spec[field] is not None and not isinstance(spec[field], kind):
            raise InputError(f"{path}: field {field!r} must be a {json_names[kind]}, not {type(spec[field]).__name__}")


def is_supported(spec: dict) -> bool:
    """Whether a registered regression model handles this specification."""
    get_model("logistic")  # imports and registers the built-in families
    return spec.get("model") in Model.registry


def dataset_from_spec(spec: dict, frame: pd.DataFrame):
    columns = spec.get("columns", {})
    unknown = set(columns) - set(COLUMN_ROLES)
    if unknown:
        raise InputError(f"unknown column role(s) in specification: {', '.join(sorted(unknown))}; the roles are "
                         f"{', '.join(COLUMN_ROLES)}")
    return from_frame(frame, covariates=spec.get("covariates"), **columns)


def fit_spec(spec: dict, frame: pd.DataFrame, *, tol: float = 1e-12, **fit_options) -> FitResult:
    """Fit the specification's model to ``frame``."""
    check_spec(spec)
    try:
        model = Model.registry[spec["model"]].from_spec(spec) if is_supported(spec) else get_model(spec["model"])
        prior = Prior.from_spec(spec.get("penalty"))
    except KeyError as err:  # a field the model or the penalty needs
        raise InputError(f"the specification lacks the field {err.args[0]!r} (model {spec['model']!r}, "
                         f"penalty {json.dumps(spec.get('penalty'))})") from None
    data = dataset_from_spec(spec, frame)
    return fit(data, model, prior, tol=tol, **fit_options)


def run_spec(path: str, **fit_options) -> FitResult:
    """Load and fit the specification at ``path``."""
    spec, frame = load_spec(path)
    return fit_spec(spec, frame, **fit_options)
