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


@njit(cache=True, nogil=True, parallel=True, error_model="numpy")
def refresh_rows(family, rows):
    """Fill exp(eta), resid and curv of every row from its eta, y and w (rows on all threads)."""
    for i in prange(rows.shape[0]):
        rows[i, EXPETA] = _exp_eta(family, rows[i, ETA])
        _set_mean(family, rows, i)


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


@njit(cache=True, nogil=True, error_model="numpy")
def coordinate(indptr, indices, values, value_shift, c, rows):
    """(dl/dbeta, d2l/dbeta^2) of CSC column ``c``, or of the implicit intercept if c < 0."""
    g = 0.0
    h = 0.0
    if c < 0:
        for i in range(rows.shape[0]):
            g += rows[i, RESID]
            h -= rows[i, CURV]
        return g, h
    end = indptr[c + 1]
    vs = value_shift[c]
    for k in range(indptr[c], end):
        if k + DISTANCE < end:
            prefetch(rows, indices[k + DISTANCE])
        i = indices[k]
        x = values[k + vs]
        g += x * rows[i, RESID]
        h -= x * x * rows[i, CURV]
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


@njit(cache=True, nogil=True, error_model="numpy")
def move(family, indptr, indices, values, value_shift, indicator, c, delta, rows):
    """beta += delta for CSC column ``c`` (the implicit intercept if c < 0): update the
    state of the column's non-zero rows (least squares keeps no exp(eta): no ``exp``)."""
    factor = math.exp(delta) if family != GAUSSIAN else 1.0
    if c < 0:
        for i in range(rows.shape[0]):
            _update_row(family, rows, i, delta, factor)
        return
    scaled = not indicator[c] and family != GAUSSIAN
    end = indptr[c + 1]
    vs = value_shift[c]
    for k in range(indptr[c], end):
        if k + DISTANCE < end:
            prefetch(rows, indices[k + DISTANCE])
        dx = delta * values[k + vs]
        _update_row(family, rows, indices[k], dx, math.exp(dx) if scaled else factor)


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
def contract_terms(data, state, j):
    d = data
    return coordinate(d.indptr, d.indices, d.values, d.value_shift, j - d.first, state.rows)


@njit(cache=True, nogil=True, error_model="numpy", inline="always")
def contract_move(data, state, j, delta):
    d = data
    move(d.family, d.indptr, d.indices, d.values, d.value_shift, d.indicator, j - d.first, delta, state.rows)


# no separate screen: g alone is no cheaper (resid and curv share a row's cache line)
KERNELS = compile_family("glm", contract_refresh, None, contract_terms, contract_move)
