"""Numba kernels of the GLM families with independent rows.

Per row the state keeps ``resid = w (y - mu)`` and ``curv = w dmu/deta`` so that for
column j: dl/dbeta_j = sum_i x_ij resid_i and d2l/dbeta_j^2 = -sum_i x_ij^2 curv_i
(canonical links). A move touches only the non-zero rows of the column: O(nnz_j).
It also keeps ``expeta = exp(eta)`` and updates it by the factor exp(delta x): for an
indicator column that is one ``exp`` per move instead of one per row; the log-likelihood
reads it too (no ``exp`` per row). Each full refresh (new_state) recomputes it from eta,
so rounding cannot accumulate unchecked (a relative 1e-16 per move of the row), and so
does a move of a row whose exp(eta) had overflowed to inf or underflowed to 0. Least
squares never reads it and keeps 0 (its eta, the fitted mean, overflows exp at y ~ 710).

Layout: the state of row i is one row of ``rows``, an (N, 6) array holding eta,
exp(eta), resid, curv, y and w side by side, so a move or a gradient touches one
cache line per non-zero instead of six scattered ones.
"""
import math
from typing import NamedTuple

import numpy as np
from numba import njit, prange

from riskset.core.sweep import compile_family
from riskset.core.prefetch import DISTANCE, prefetch

LOGISTIC, POISSON, GAUSSIAN = 0, 1, 2

#: Entries (a column's non-zeros, or the intercept's rows) per chunk of a coordinate's sums and
#: move: the sums are taken chunk by chunk and added in order, on one thread or many (the same
#: bits); on more than one thread a coordinate of more than two chunks runs them in parallel.
CHUNK = 1 << 13
ETA, EXPETA, RESID, CURV, Y, W = 0, 1, 2, 3, 4, 5
N_FIELDS = 6


@njit(cache=True, nogil=True, error_model="numpy", inline="always")
def _mean_and_curvature(family, eta, expeta):
    if family == LOGISTIC:
        mu = 1.0 / (1.0 + 1.0 / expeta) if expeta > 1.0 else expeta / (1.0 + expeta)
        return mu, mu * (1.0 - mu)
    if family == POISSON:
        return expeta, expeta
    return eta, 1.0


@njit(cache=True, nogil=True, error_model="numpy")
def fill_rows(family, eta, y, w, rows):
    """Every row's record from its eta, y and w: exp(eta), resid and curv computed. One thread:
    ``rows`` is new memory, and the page faults of its first touch, which dominate here, were
    slower from two threads (16 ms on one, 8 to 55 on two at N = 1M)."""
    for i in range(rows.shape[0]):
        rows[i, ETA] = eta[i]
        rows[i, Y] = y[i]
        rows[i, W] = w[i]
        rows[i, EXPETA] = _exp_eta(family, eta[i])
        _set_mean(family, rows, i)


@njit(cache=True, nogil=True, parallel=True, error_model="numpy")
def field(rows, f):
    """A contiguous copy of field ``f`` (e.g. RESID) of every row (rows on all threads)."""
    out = np.empty(rows.shape[0])
    for i in prange(rows.shape[0]):
        out[i] = rows[i, f]
    return out


@njit(cache=True, nogil=True, error_model="numpy", inline="always")
def _exp_eta(family, eta):
    """exp(eta) where the family reads it; least squares does not, and stores 0 (its eta is
    the fitted mean, on the scale of y: e^eta overflows at y ~ 710)."""
    return 0.0 if family == GAUSSIAN else math.exp(eta)


@njit(cache=True, nogil=True, error_model="numpy", inline="always")
def _set_mean(family, rows, i):
    mu, v = _mean_and_curvature(family, rows[i, ETA], rows[i, EXPETA])
    rows[i, RESID] = rows[i, W] * (rows[i, Y] - mu)
    rows[i, CURV] = rows[i, W] * v


@njit(cache=True, nogil=True, error_model="numpy", inline="always")
def chunk_terms(ones, indices, values, vs, rows, lo, hi):
    """(sum x resid, -sum x^2 curv) over the non-zeros lo .. hi-1 of a column (value shift ``vs``),
    or over the rows lo .. hi-1 where ``ones`` (the implicit intercept's column of ones)."""
    g = 0.0
    h = 0.0
    if ones:
        for i in range(lo, hi):
            g += rows[i, RESID]
            h -= rows[i, CURV]
        return g, h
    for k in range(lo, hi):
        if k + DISTANCE < hi:
            prefetch(rows, indices[k + DISTANCE])
        i = indices[k]
        x = values[k + vs]
        g += x * rows[i, RESID]
        h -= x * x * rows[i, CURV]
    return g, h


@njit(cache=True, nogil=True, error_model="numpy", inline="always")
def _span(indptr, c, rows):
    """(first, end) of the entries a coordinate reads: column c's non-zeros, or every row for
    the implicit intercept (c < 0)."""
    if c < 0:
        return 0, rows.shape[0]
    return indptr[c], indptr[c + 1]


@njit(cache=True, nogil=True, error_model="numpy")
def coordinate(indptr, indices, values, value_shift, c, rows):
    """(dl/dbeta, d2l/dbeta^2) of CSC column ``c``, or of the implicit intercept if c < 0: the
    sums of :data:`CHUNK` entries at a time, added in order (:func:`coordinate_parallel`'s bits)."""
    a, b = _span(indptr, c, rows)
    if c >= 0 and b - a <= CHUNK:  # one chunk (most columns): its sums, the same bits
        return chunk_terms(False, indices, values, value_shift[c], rows, a, b)
    vs = value_shift[c] if c >= 0 else 0
    g = 0.0
    h = 0.0
    for lo in range(a, b, CHUNK):
        cg, ch = chunk_terms(c < 0, indices, values, vs, rows, lo, min(b, lo + CHUNK))
        g += cg
        h += ch
    return g, h


@njit(cache=True, nogil=True, parallel=True, error_model="numpy")
def coordinate_parallel(indptr, indices, values, value_shift, c, rows):
    """:func:`coordinate` with its chunks on all threads: the same chunks, added in the same order."""
    a, b = _span(indptr, c, rows)
    vs = value_shift[c] if c >= 0 else 0
    n = (b - a + CHUNK - 1) // CHUNK
    part = np.empty((n, 2))
    for k in prange(n):
        lo = a + k * CHUNK
        part[k, 0], part[k, 1] = chunk_terms(c < 0, indices, values, vs, rows, lo, min(b, lo + CHUNK))
    g = 0.0
    h = 0.0
    for k in range(n):
        g += part[k, 0]
        h += part[k, 1]
    return g, h


@njit(cache=True, nogil=True, error_model="numpy", inline="always")
def _update_row(family, rows, i, dx, factor):
    """eta += dx; exp(eta) *= factor (e^dx) while it is a positive finite number, else anew from
    eta: once it has overflowed to inf or underflowed to 0 no factor brings it back."""
    eta = rows[i, ETA] + dx
    rows[i, ETA] = eta
    expeta = rows[i, EXPETA]
    if 0.0 < expeta < math.inf:
        rows[i, EXPETA] = expeta * factor
    elif family != GAUSSIAN:
        rows[i, EXPETA] = math.exp(eta)
    _set_mean(family, rows, i)


@njit(cache=True, nogil=True, error_model="numpy", inline="always")
def move_chunk(family, ones, indices, values, vs, delta, factor, scaled, rows, lo, hi):
    """The moves of the entries lo .. hi-1 (non-zeros, or rows where ``ones``: the intercept),
    each row's eta by delta x."""
    if ones:
        for i in range(lo, hi):
            _update_row(family, rows, i, delta, factor)
        return
    for k in range(lo, hi):
        if k + DISTANCE < hi:
            prefetch(rows, indices[k + DISTANCE])
        dx = delta * values[k + vs]
        _update_row(family, rows, indices[k], dx, math.exp(dx) if scaled else factor)


@njit(cache=True, nogil=True, error_model="numpy")
def move(family, indptr, indices, values, value_shift, indicator, c, delta, rows):
    """beta += delta for CSC column ``c`` (the implicit intercept if c < 0): update the
    state of the column's non-zero rows (least squares keeps no exp(eta): no ``exp``)."""
    a, b = _span(indptr, c, rows)
    factor = math.exp(delta) if family != GAUSSIAN else 1.0
    scaled = c >= 0 and not indicator[c] and family != GAUSSIAN
    move_chunk(family, c < 0, indices, values, value_shift[c] if c >= 0 else 0, delta, factor, scaled, rows, a, b)


@njit(cache=True, nogil=True, parallel=True, error_model="numpy")
def move_parallel(family, indptr, indices, values, value_shift, indicator, c, delta, rows):
    """:func:`move` by chunks of :data:`CHUNK` entries on all threads (a row is in one chunk:
    the same bits)."""
    a, b = _span(indptr, c, rows)
    factor = math.exp(delta) if family != GAUSSIAN else 1.0
    scaled = c >= 0 and not indicator[c] and family != GAUSSIAN
    vs = value_shift[c] if c >= 0 else 0
    for k in prange((b - a + CHUNK - 1) // CHUNK):
        lo = a + k * CHUNK
        move_chunk(family, c < 0, indices, values, vs, delta, factor, scaled, rows, lo, min(b, lo + CHUNK))


@njit(cache=True, nogil=True, parallel=True, error_model="numpy")
def loglik(family, rows, bounds):
    """Weighted log-likelihood; Poisson includes -log(y!), Gaussian is -RSS/2. Summed by
    the row blocks ``bounds`` (:func:`riskset.core.products.partition.row_blocks`), then in block
    order: the same bits on any number of threads."""
    partial = np.zeros(bounds.shape[0] - 1)
    for blk in prange(bounds.shape[0] - 1):
        total = 0.0
        for i in range(bounds[blk], bounds[blk + 1]):
            total += _row_loglik(family, rows[i, ETA], rows[i, EXPETA], rows[i, Y], rows[i, W])
        partial[blk] = total
    total = 0.0
    for blk in range(partial.shape[0]):
        total += partial[blk]
    return total


@njit(cache=True, nogil=True, error_model="numpy", inline="always")
def _row_loglik(family, e, expeta, y, w):
    if family == LOGISTIC:  # log(1 + e^eta), from the stored e^eta
        softplus = e + math.log1p(1.0 / expeta) if e > 0 else math.log1p(expeta)
        return w * (y * e - softplus)
    if family == POISSON:
        return w * (y * e - expeta - math.lgamma(y + 1.0))
    r = y - e
    return -0.5 * w * r * r


# -- the compiled family contract (riskset.core.sweep) ---------------------------------

class Data(NamedTuple):
    """The static data: the family and the design, whose column j - first is coefficient j
    (the implicit intercept when negative)."""

    family: int
    first: int
    indptr: np.ndarray
    indices: np.ndarray
    values: np.ndarray
    value_shift: np.ndarray
    indicator: np.ndarray
    parallel: bool  # more than one kernel thread (read by the caller: numba.get_num_threads())


class Device(NamedTuple):
    """What the device datafit (:mod:`riskset.kernels.gpu.glm`) copies besides the design, built
    by :meth:`~riskset.models.glm.GLMDatafit.device_record`: the kernels' record and the outcomes
    ``y`` (which the CPU kernels read from the state's rows, set by ``new_state``)."""

    data: Data
    y: np.ndarray


class State(NamedTuple):
    """What a sweep writes: the per-row record (eta, y, w, resid, curvature...: the columns of ``rows``)."""

    rows: np.ndarray

@njit(cache=True, nogil=True, error_model="numpy", inline="always")
def contract_refresh(data, state):
    """Nothing to refresh: every row's state is current after each move."""


@njit(cache=True, nogil=True, error_model="numpy", inline="always")
def in_parallel(data, state, j):
    """Whether coordinate j runs its chunks in parallel: more than one thread, more than two chunks."""
    c = j - data.first
    n = state.rows.shape[0] if c < 0 else data.indptr[c + 1] - data.indptr[c]
    return data.parallel and n > 2 * CHUNK


@njit(cache=True, nogil=True, error_model="numpy", inline="always")
def contract_terms(data, state, j):
    d = data
    if in_parallel(data, state, j):
        return coordinate_parallel(d.indptr, d.indices, d.values, d.value_shift, j - d.first, state.rows)
    return coordinate(d.indptr, d.indices, d.values, d.value_shift, j - d.first, state.rows)


@njit(cache=True, nogil=True, error_model="numpy", inline="always")
def contract_move(data, state, j, delta):
    d = data
    if in_parallel(data, state, j):
        move_parallel(d.family, d.indptr, d.indices, d.values, d.value_shift, d.indicator, j - d.first, delta,
                      state.rows)
    else:
        move(d.family, d.indptr, d.indices, d.values, d.value_shift, d.indicator, j - d.first, delta, state.rows)


# no separate screen: g alone is no cheaper (resid and curv share a row's cache line)
KERNELS = compile_family("glm", contract_refresh, None, contract_terms, contract_move)
