"""Numba kernels of the Cox family (Breslow and Efron ties, strata, (start, stop] rows).

Notation (see :mod:`riskset.data.risksets`): rows sorted by (stratum, time descending);
per row entry/exit slots ``ks <= ke``; the row is at risk at event slot p iff
``ks <= p < ke``; ``w = c exp(eta - shift)`` with case weight c and the shift of the row's
stratum (:func:`stratum_shifts`: every sum below is a ratio invariant to it). Per event slot: ``d`` = weighted
event count, ``m`` = number of tied event rows, ``wbar = d / m``,
``D = sum_{at risk} w``, ``E = sum_{events at p} w``, ``Z_l = D - (l/m) E`` (Efron,
l = 0..m-1; Breslow is m = 1).

Per-slot aggregates (refreshed in O(n_slots) from the slot sums ``ex/en/ev`` that
``move`` keeps up to date in O(nnz_j))::

    Q1 = wbar sum_l 1/Z_l      Q2 = wbar sum_l 1/Z_l^2
    R1 = wbar sum_l f_l/Z_l    R2 = wbar sum_l f_l/Z_l^2   T2 = wbar sum_l f_l^2/Z_l^2
    A1c[p] = sum of Q1 over earlier slots of the stratum, A2c likewise with Q2

Coordinate j, with N1_p/N2_p = risk-set sums of w x / w x^2 and E1_p the event-row
sum of w x::

    g_j = sum_events c x - sum_nz w x (A1c[ke] - A1c[ks]) + sum_nz,event w x R1[ke-1]
    h_j = - sum_nz w x^2 (A1c[ke] - A1c[ks]) + sum_nz,event w x^2 R1[ke-1]
          + sum_p (Q2 N1^2 - 2 R2 N1 E1 + T2 E1^2)

The last sum is a walk over the column's non-zeros in slot order (O(nnz_j)):
``coordinate_chunked`` for right-censored data (the sorted row order is slot order; by chunks),
``coordinate_breakpoints`` for (start, stop] data (static per-column breakpoints).
``coordinate_scan`` is the papers' O(N) formulation (full scans per coordinate).

The kernels live by role: :mod:`~riskset.kernels.cpu.cox_rows` (row weights and slot sums),
:mod:`~riskset.kernels.cpu.cox_aggregates` (the per-slot aggregates),
:mod:`~riskset.kernels.cpu.cox_walks` (a coordinate's terms and its move) and
:mod:`~riskset.kernels.cpu.cox_hessian`. The kernels read named records
(:mod:`~riskset.kernels.cpu.cox_records`). This module is the family's contract with
:mod:`riskset.core.sweep`: both formulations compiled on those records, ``SPARSE_KERNELS``
and ``SCAN_KERNELS``.
"""
import numpy as np
from numba import njit

from riskset.core.sweep import compile_family
from riskset.kernels.cpu.cox_aggregates import refresh
from riskset.kernels.cpu.cox_walks import (coordinate_breakpoints, coordinate_chunked, coordinate_scan, gradient_column,
                                           move_chunked, move_scan, move_sparse)

#: ``moved[0]`` once more columns moved than ``moved`` holds: the next refresh takes every stratum.
ALL_MOVED = -1

#: Columns ``moved`` holds (a sweep refreshes after each move: one is enough there).
MOVED_COLUMNS = 8

#: ``full`` of the sweep's refreshes (no Q1, Q2 stored): a NumPy bool, which Numba types as the bool
#: the datafit's refreshes pass, where it types ``False`` as a literal. With the strata in ``col_strata``'s
#: dtype (the datafit's ``all_strata`` too), the sweep calls the refresh the datafit compiled, instead
#: of a second one with second copies of the parallel scans (seconds of a first fit's compile time).
PARTIAL = np.bool_(False)


# -- "sparse": data = SparseData, state = SparseState (riskset.kernels.cpu.cox_records) -------------

@njit(cache=True, nogil=True, error_model="numpy", inline="always")
def sparse_refresh(data, state):
    """The aggregates of the strata that moves left stale, from the slot sums (O(their slots))."""
    moved = state.moved
    count = moved[0]
    if count == ALL_MOVED:
        n = data.slots.slot_ptr.shape[0] - 1
        refresh(np.arange(n).astype(data.col_strata.dtype), n, data.slots, state.sums, PARTIAL, data.parallel)
    for c in range(1, count + 1):
        j = moved[c]
        a = data.strata_ptr[j]
        refresh(data.col_strata[a:], data.strata_ptr[j + 1] - a, data.slots, state.sums, PARTIAL, data.parallel)
    moved[0] = 0


@njit(cache=True, nogil=True, error_model="numpy", inline="always")
def chunked(data, j):
    """Whether column j moves by chunks in parallel: more than one thread, no start times
    (whose entry sums two chunks could share), more than two chunks of non-zeros."""
    return data.parallel and not data.slots.has_start and data.indptr[j + 1] - data.indptr[j] > 2 * data.walk_chunk


@njit(cache=True, nogil=True, error_model="numpy", inline="always")
def sparse_gradient(data, state, j):
    if data.slots.has_start:
        return gradient_column(data, state, j)
    return coordinate_chunked(data, state, j, True)[0]


@njit(cache=True, nogil=True, error_model="numpy", inline="always")
def sparse_terms(data, state, j):
    """The walk over the column's non-zeros in slot order: sorted rows by chunks, or breakpoints with start times."""
    if data.slots.has_start:
        return coordinate_breakpoints(data, state, j)
    return coordinate_chunked(data, state, j, False)


@njit(cache=True, nogil=True, error_model="numpy", inline="always")
def sparse_move(data, state, j, delta):
    if chunked(data, j):
        move_chunked(data, state, j, delta)
    else:
        move_sparse(data, state, j, delta)
    moved = state.moved
    count = moved[0]
    if count != ALL_MOVED:
        if count + 1 < moved.shape[0]:
            moved[count + 1] = j
            moved[0] = count + 1
        else:
            moved[0] = ALL_MOVED


SPARSE_KERNELS = compile_family("cox_sparse", sparse_refresh, sparse_gradient, sparse_terms, sparse_move)


# -- "scan": data = ScanData, state = ScanState; the scan costs the same with or without h_j,
# so the family has no separate screen ----------------------------------------------------------

@njit(cache=True, nogil=True, error_model="numpy", inline="always")
def scan_refresh(data, state):
    """Nothing to refresh: every scan starts from w alone."""


@njit(cache=True, nogil=True, error_model="numpy", inline="always")
def scan_terms(data, state, j):
    return coordinate_scan(data, state, j)


@njit(cache=True, nogil=True, error_model="numpy", inline="always")
def scan_move(data, state, j, delta):
    move_scan(data.indptr, data.indices, data.values, data.value_shift, j, delta, state.eta, state.w)


SCAN_KERNELS = compile_family("cox_scan", scan_refresh, None, scan_terms, scan_move)
