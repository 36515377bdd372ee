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
``coordinate_sorted`` for right-censored data (the sorted row order is slot order),
``coordinate_breakpoints`` for (start, stop] data (static per-column breakpoints).
``coordinate_scan`` is the papers' O(N) formulation (full scans per coordinate).

The kernels live by role: :mod:`~riskset.kernels.cpu.cox_rows` (row weights and slot sums),
:mod:`~riskset.kernels.cpu.cox_aggregates` (the per-slot aggregates),
:mod:`~riskset.kernels.cpu.cox_walks` (a coordinate's terms and its move) and
:mod:`~riskset.kernels.cpu.cox_hessian`. This module is the family's contract with
:mod:`riskset.core.sweep`: the named records of its static data and its state, and both
formulations compiled on them, ``SPARSE_KERNELS`` and ``SCAN_KERNELS``.
"""
from typing import NamedTuple

import numpy as np
from numba import njit

from riskset.core.sweep import compile_family
from riskset.kernels.cpu.cox_aggregates import refresh
from riskset.kernels.cpu.cox_walks import (coordinate_breakpoints, coordinate_chunked, coordinate_scan,
                                           coordinate_sorted, gradient_column, move_chunked, move_scan, move_sparse)

#: ``moved[0]`` once more columns moved than ``moved`` holds: the next refresh takes every stratum.
ALL_MOVED = -1

#: Columns ``moved`` holds (a sweep refreshes after each move: one is enough there).
MOVED_COLUMNS = 8


class SparseData(NamedTuple):
    """The static arrays of the "sparse" formulation, O(nnz_j) per coordinate."""

    indptr: np.ndarray       # the design (:class:`riskset.core.design.CompactCSC`)
    indices: np.ndarray
    values: np.ndarray
    value_shift: np.ndarray
    indicator: np.ndarray
    gx0: np.ndarray          # per column: sum over events of c x
    ksn: np.ndarray          # per non-zero: its row's entry slot, exit slot, event flag
    ken: np.ndarray
    evn: np.ndarray
    has_start: bool          # (start, stop] rows: walks by breakpoints
    codes: np.ndarray        # per non-zero: the column's breakpoints (read only with start times)
    slot_stratum: np.ndarray
    slot_d: np.ndarray       # per slot: weighted event count, tied event rows
    slot_m: np.ndarray
    slot_ptr: np.ndarray     # per stratum: its first slot
    efron: bool
    strata_ptr: np.ndarray   # col_strata[strata_ptr[j]:strata_ptr[j + 1]]: the strata of column j's rows,
    col_strata: np.ndarray   # the only ones whose aggregates a move of column j leaves stale
    parallel: bool           # more than one kernel thread (see :func:`~riskset.kernels.cpu.cox_aggregates.refresh`)
    walk_chunk: int          # non-zeros per chunk of a column's parallel walk and move (:func:`chunked`)


class SparseState(NamedTuple):
    """What a sparse sweep writes: eta, w, the slot sums, the aggregates, and ``moved``, the
    columns moved since the last refresh (``moved[0]`` of them, then their indices;
    :data:`ALL_MOVED` when more than fit): the next refresh makes their strata current, and only those."""

    eta: np.ndarray
    w: np.ndarray
    ex: np.ndarray
    en: np.ndarray
    ev: np.ndarray
    D: np.ndarray
    Q1: np.ndarray
    Q2: np.ndarray
    R1: np.ndarray
    R2: np.ndarray
    T2: np.ndarray
    A1c: np.ndarray
    A2c: np.ndarray
    moved: np.ndarray


class ScanData(NamedTuple):
    """The static arrays of the "scan" formulation, O(N + n_slots) per coordinate (the scan
    costs the same with or without h_j, so the family has no separate screen)."""

    indptr: np.ndarray
    indices: np.ndarray
    values: np.ndarray
    value_shift: np.ndarray
    cw: np.ndarray           # per row: case weight, entry slot, exit slot, event flag
    ks: np.ndarray
    ke: np.ndarray
    event: np.ndarray
    slot_d: np.ndarray
    slot_m: np.ndarray
    slot_last: np.ndarray
    efron: bool


class ScanState(NamedTuple):
    """What a scan sweep writes: eta, w and the column of the scan scattered to rows."""

    eta: np.ndarray
    w: np.ndarray
    xd: np.ndarray


@njit(cache=True, nogil=True, error_model="numpy", inline="always")
def sparse_refresh(data, state):
    """The aggregates of the strata that moves left stale, from the slot sums (O(their slots))."""
    moved = state.moved
    count = moved[0]
    if count == ALL_MOVED:
        n = data.slot_ptr.shape[0] - 1
        refresh_strata_of(data, state, np.arange(n), n)
    for c in range(1, count + 1):
        j = moved[c]
        a = data.strata_ptr[j]
        refresh_strata_of(data, state, data.col_strata[a:], data.strata_ptr[j + 1] - a)
    moved[0] = 0


@njit(cache=True, nogil=True, error_model="numpy", inline="always")
def refresh_strata_of(data, state, strata, count):
    """The aggregates of the first ``count`` of ``strata`` from the slot sums."""
    s = state
    refresh(strata, count, data.slot_ptr, s.ex, s.en, s.ev, data.slot_d, data.slot_m, data.has_start, data.efron,
            False, data.parallel, s.D, s.Q1, s.Q2, s.R1, s.R2, s.T2, s.A1c, s.A2c)


@njit(cache=True, nogil=True, error_model="numpy", inline="always")
def chunked(data, j):
    """Whether column j walks and moves by chunks in parallel: more than one thread, no start
    times (whose entry sums two chunks could share), more than two chunks of non-zeros."""
    return data.parallel and not data.has_start and data.indptr[j + 1] - data.indptr[j] > 2 * data.walk_chunk


@njit(cache=True, nogil=True, error_model="numpy", inline="always")
def sparse_gradient(data, state, j):
    d, s = data, state
    if chunked(d, j):
        return coordinate_chunked(d.indptr, d.indices, d.values, d.value_shift, j, d.gx0[j], s.w, d.ksn, d.ken, d.evn,
                                  s.A1c, s.A2c, s.R1, s.R2, s.T2, d.efron, d.walk_chunk, True)[0]
    return gradient_column(d.indptr, d.indices, d.values, d.value_shift, j, d.gx0[j], s.w, d.ksn, d.ken, d.evn, s.A1c,
                           s.R1, d.efron)


@njit(cache=True, nogil=True, error_model="numpy", inline="always")
def sparse_terms(data, state, j):
    """The walk over the column's non-zeros in slot order: sorted rows, or breakpoints with start times."""
    d, s = data, state
    if d.has_start:
        return coordinate_breakpoints(d.indptr, d.indices, d.values, d.value_shift, j, d.gx0[j], s.w, d.ksn, d.ken,
                                      d.evn, d.slot_stratum, d.codes, s.A1c, s.A2c, s.R1, s.R2, s.T2, d.efron)
    if chunked(d, j):
        return coordinate_chunked(d.indptr, d.indices, d.values, d.value_shift, j, d.gx0[j], s.w, d.ksn, d.ken, d.evn,
                                  s.A1c, s.A2c, s.R1, s.R2, s.T2, d.efron, d.walk_chunk, False)
    return coordinate_sorted(d.indptr, d.indices, d.values, d.value_shift, j, d.gx0[j], s.w, d.ksn, d.ken, d.evn,
                             s.A1c, s.A2c, s.R1, s.R2, s.T2, d.efron)


@njit(cache=True, nogil=True, error_model="numpy", inline="always")
def sparse_move(data, state, j, delta):
    d, s = data, state
    if chunked(d, j):
        move_chunked(d.indptr, d.indices, d.values, d.value_shift, d.indicator, j, delta, s.eta, s.w, d.ksn, d.ken,
                     d.evn, s.ex, s.ev, d.walk_chunk)
    else:
        move_sparse(d.indptr, d.indices, d.values, d.value_shift, d.indicator, j, delta, s.eta, s.w, d.ksn, d.ken,
                    d.evn, d.has_start, s.ex, s.en, s.ev)
    moved = s.moved
    count = moved[0]
    if count != ALL_MOVED:
        if count + 1 < moved.shape[0]:
            moved[count + 1] = j
            moved[0] = count + 1
        else:
            moved[0] = ALL_MOVED


SPARSE_KERNELS = compile_family("cox_sparse", sparse_refresh, sparse_gradient, sparse_terms, sparse_move)


@njit(cache=True, nogil=True, error_model="numpy", inline="always")
def scan_refresh(data, state):
    """Nothing to refresh: every scan starts from w alone."""


@njit(cache=True, nogil=True, error_model="numpy", inline="always")
def scan_terms(data, state, j):
    d = data
    return coordinate_scan(d.indptr, d.indices, d.values, d.value_shift, j, state.xd, state.w, d.cw, d.ks, d.ke,
                           d.event, d.slot_d, d.slot_m, d.slot_last, d.efron)


@njit(cache=True, nogil=True, error_model="numpy", inline="always")
def scan_move(data, state, j, delta):
    move_scan(data.indptr, data.indices, data.values, data.value_shift, j, delta, state.eta, state.w)


SCAN_KERNELS = compile_family("cox_scan", scan_refresh, None, scan_terms, scan_move)
