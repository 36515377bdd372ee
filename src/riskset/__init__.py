"""riskset: regularized survival and regression models for massive observational health data.

Quick start::

    import riskset
    data = riskset.simulate(n=10_000, p=100, model="cox")
    fit = riskset.fit(data, "cox", riskset.Laplace(gamma=2.0))
    print(fit.summary())
"""
from riskset.api import fit
from riskset.competing_risks import aalen_johansen, predict_cif
from riskset.robust import robust_covariance, robust_se
from riskset.diagnostics import covariance, cox_zph, schoenfeld_residuals
from riskset.data import Dataset, build_sccs, eras_dataset, from_arrays, from_duckdb, from_frame, from_long
from riskset.exceptions import ConvergenceWarning, DataWarning, InputError, ShardLostError
from riskset.likelihood import loglik_at, profile_loglik
from riskset.models.sccs import incidence_rate_ratios
from riskset.results import FitResult
from riskset.separability import separability, univariable_correlation
from riskset.selection import bootstrap, cross_validate, fit_specs, regularization_path
from riskset.simulate import simulate
from riskset.survival import baseline_hazard, kaplan_meier, numbers_at_risk, predict_survival
from riskset.solver.prior import BAR, IHT, ElasticNet, Hierarchical, Jeffreys, Laplace, NoPrior, Normal, Prior
from riskset.kernels.cpu import compile_notice as _compile_notice
from riskset.core.memory import keep_freed_memory as _keep_freed_memory

_compile_notice.install()  # "compiling kernels, first run only" on stderr, when Numba compiles
_keep_freed_memory()  # a fit's arrays of many MB reuse freed memory, not fresh pages (riskset.core.memory)

__version__ = "0.1.0"


def __getattr__(name):
    """``riskset.estimators`` (scikit-learn estimators) is imported on first use, so that
    ``import riskset`` does not import scikit-learn, an optional dependency."""
    if name == "estimators":
        import importlib

        return importlib.import_module("riskset.estimators")
    raise AttributeError(f"module 'riskset' has no attribute {name!r}")


__all__ = ["cox_zph", "schoenfeld_residuals", "covariance", "univariable_correlation", "profile_loglik", "loglik_at",
           "baseline_hazard", "kaplan_meier", "numbers_at_risk", "predict_survival", "aalen_johansen", "predict_cif",
           "robust_se", "robust_covariance", "fit", "Dataset", "build_sccs", "eras_dataset", "incidence_rate_ratios",
           "from_arrays", "from_duckdb", "from_frame", "from_long", "ConvergenceWarning", "DataWarning", "InputError",
           "ShardLostError", "FitResult", "simulate", "BAR", "IHT", "ElasticNet", "Hierarchical", "Jeffreys",
           "Laplace", "NoPrior", "Normal", "Prior", "bootstrap", "cross_validate", "fit_specs", "regularization_path",
           "separability", "__version__"]
