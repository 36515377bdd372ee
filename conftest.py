"""Doctest collection of src/riskset: skip the scikit-learn estimators when scikit-learn
(an optional dependency, in the ``test`` extra) is not installed; one fitting thread per test
process."""
import importlib.util
import os

# Tests run in pytest-xdist workers, one per core, each a process that would otherwise take every
# core for its fits (riskset.cores): one thread each keeps the machine's threads = its cores. Tests
# of the threaded paths give n_jobs explicitly.
os.environ.setdefault("RISKSET_NUM_THREADS", "1")

collect_ignore = [] if importlib.util.find_spec("sklearn") else ["src/riskset/estimators.py"]
