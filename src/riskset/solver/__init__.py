"""Coordinate-descent solver and priors."""
from riskset.solver.ccd import SolverOptions, SolverResult, fit_ccd
from riskset.solver.prior import ElasticNet, Laplace, NoPrior, Normal, Prior

__all__ = ["SolverOptions", "SolverResult", "fit_ccd", "ElasticNet", "Laplace", "NoPrior", "Normal", "Prior"]
