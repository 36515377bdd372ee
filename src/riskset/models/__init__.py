"""Likelihood families. Importing this package registers every model module in it (a
:class:`~riskset.models.base.Model` subclass with a ``name`` registers itself): a new family
is a new module here, with no list to edit."""
import importlib
import pkgutil

from riskset.models.base import Datafit, FitState, Model, get_model
from riskset.models.glm import LeastSquares, LogisticRegression, PoissonRegression

for _module in pkgutil.iter_modules(__path__):
    importlib.import_module(f"{__name__}.{_module.name}")

__all__ = ["Datafit", "FitState", "Model", "get_model", "LeastSquares", "LogisticRegression", "PoissonRegression"]
