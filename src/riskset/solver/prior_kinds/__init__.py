"""The kinds of separable prior, one module each.

A kind turns a prior's strength (an L1 rate ``gamma``, a normal ``variance``, or both) into
the per-coefficient rates of the penalty table (:class:`riskset.core.penalty.Penalty`:
``l1``, ``l2``, the center), says how a per-coefficient variance overrides them, and, where
cross-validation can vary it, how a variance sets its strength. A subclass of
:class:`~riskset.solver.prior_kinds.base.PriorKind` with a ``name`` registers itself;
importing this package imports every module in it, so a new kind is a new module here (and
its constructor beside :func:`riskset.solver.prior.Laplace`) with its tests.
"""
import importlib
import pkgutil

from riskset.solver.prior_kinds.base import KINDS, PriorKind

for _module in pkgutil.iter_modules(__path__):
    importlib.import_module(f"{__name__}.{_module.name}")

__all__ = ["KINDS", "PriorKind"]
