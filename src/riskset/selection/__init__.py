"""Choosing the penalty and measuring uncertainty: folds, cross-validation, paths, bootstrap."""
from riskset.selection.bootstrap import BootstrapResult, bootstrap
from riskset.selection.cv import CVResult, cross_validate
from riskset.selection.folds import assign_folds, resampling_units
from riskset.selection.path import regularization_path

__all__ = ["BootstrapResult", "bootstrap", "CVResult", "cross_validate", "assign_folds", "resampling_units",
           "regularization_path"]
