"""Doctest collection of src/riskset: skip the scikit-learn estimators when scikit-learn
(an optional dependency, in the ``test`` extra) is not installed."""
import importlib.util

collect_ignore = [] if importlib.util.find_spec("sklearn") else ["src/riskset/estimators.py"]
