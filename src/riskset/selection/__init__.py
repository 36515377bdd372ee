"""Choosing the penalty and measuring uncertainty: folds, cross-validation, paths, bootstrap."""
from riskset.selection.analyses import fit_specs
from riskset.selection.bootstrap import BootstrapResult, bootstrap
from riskset.selection.cv import CVResult, cross_validate
from riskset.selection.folds import assign_folds, resampling_units
from riskset.selection.path import regularization_path

__all__ = ["fit_specs", "BootstrapResult", "bootstrap", "CVResult", "cross_validate", "assign_folds",
           "resampling_units", "regularization_path"]
