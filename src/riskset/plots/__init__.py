"""Plots: Kaplan-Meier and cumulative incidence curves, cross-validation curve,
coefficient paths, forest plots, propensity-score distributions, covariate balance and empirical calibration. Each
function returns a matplotlib Figure."""
from riskset.plots.calibration import plot_calibration
from riskset.plots.cif import plot_cif
from riskset.plots.km import plot_km
from riskset.plots.propensity import plot_balance, plot_ps_distribution
from riskset.plots.selection import plot_cv, plot_forest, plot_path
from riskset.plots.zph import plot_zph

__all__ = ["plot_cif", "plot_km", "plot_cv", "plot_forest", "plot_path", "plot_zph", "plot_ps_distribution",
           "plot_balance", "plot_calibration"]
