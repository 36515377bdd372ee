"""Likelihood families. Importing this package registers every built-in model."""
import importlib

from riskset.models.base import Datafit, FitState, Model, get_model
from riskset.models.glm import LeastSquares, LogisticRegression, PoissonRegression

# Families contributed as separate modules; each registers itself on import.
for _module in ("cox", "fine_gray", "conditional", "sccs", "pooled_logistic"):
    try:
        importlib.import_module(f"riskset.models.{_module}")
    except ModuleNotFoundError as err:
        if err.name != f"riskset.models.{_module}":
            raise

__all__ = ["Datafit", "FitState", "Model", "get_model", "LeastSquares", "LogisticRegression", "PoissonRegression"]
