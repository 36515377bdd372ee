"""One coordinate-descent sweep for every family: the compiled family contract.

A family's CPU kernels implement four compiled functions over two tuples of arrays,
``data`` (the static design and bookkeeping) and ``state`` (everything a sweep
writes: eta, per-row weights, aggregates, a "dirty" flag)::

    refresh(data, state)          make the aggregates current after moves (a no-op when
                                  they are: the family keeps its own dirty flag)
    gradient(data, state, j)      dl/dbeta_j alone, if cheaper than with d2l/dbeta_j^2 (the
                                  screen of a coordinate at its center), else None
    terms(data, state, j)         (dl/dbeta_j, d2l/dbeta_j^2) from the non-zeros of column j
    move(data, state, j, delta)   beta_j += delta: eta, weights and aggregates at column j

:func:`compile_family` specializes the one sweep below on them (the way
:func:`riskset.ode.dopri.make_integrator` builds one integrator for both backends):
for each coordinate, refresh; a penalized coordinate at its prior center moves only if
|g_j| > l1_j (whatever h_j), which ``gradient`` decides first where the family has one,
else the g of ``terms``; then the Newton step under the prior
(:func:`riskset.core.step.prior_step`) and the move. The compiled closures are cached
on disk (:func:`riskset.core.jit.closure_jit`).
"""
from __future__ import annotations

from typing import NamedTuple

from riskset.core.jit import closure_jit, stable_uuid
from riskset.core.step import CENTER, L1, prior_step


class CompiledFamily(NamedTuple):
    """The compiled entry points of a family, all over ``(data, state, ...)`` tuples."""

    name: str
    refresh: object
    gradient: object  # or None
    terms: object
    move: object
    coordinate: object  # (data, state, j) -> (g_j, h_j), aggregates refreshed first
    sweep: object       # (data, state, coords, beta, prior, radius): one CCD sweep over coords


def compile_family(name: str, refresh, gradient, terms, move) -> CompiledFamily:
    """The family's sweep and single-coordinate entry points, compiled for its kernels
    (``gradient=None``: the family has no cheaper g than the one of ``terms``)."""
    screen = gradient is not None  # a constant of the closure: Numba compiles one branch below
    step = prior_step  # a cell of the closures, so that their cache key follows the step's source
    for kernel in (refresh, gradient, terms, move, step):
        if kernel is not None:
            stable_uuid(kernel)

    def coordinate(data, state, j):
        refresh(data, state)
        return terms(data, state, j)

    def sweep(data, state, coords, beta, prior, radius):
        for j in coords:
            refresh(data, state)
            l1 = prior[j, L1]
            at_kink = l1 > 0.0 and beta[j] == prior[j, CENTER]
            # a coordinate at its center moves only if |g_j| > l1_j, whatever h_j
            if screen:
                if at_kink and abs(gradient(data, state, j)) <= l1:
                    continue
                g, h = terms(data, state, j)
            else:
                g, h = terms(data, state, j)
                if at_kink and abs(g) <= l1:
                    continue
            delta, new = step(g, h, beta, prior, radius, j)
            if delta != 0.0:
                move(data, state, j, delta)
                beta[j] = new

    return CompiledFamily(name, refresh, gradient, terms, move, closure_jit(coordinate, name),
                          closure_jit(sweep, name))
