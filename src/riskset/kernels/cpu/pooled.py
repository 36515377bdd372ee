"""Numba kernels of pooled logistic regression over *virtual* person-intervals.

Subject i (follow-up split into intervals k = 1..K_i) has the linear predictor

    eta_ik = sum_m lin[m, i] * F_m(k)

with F_0 = 1 and F_1..F_M the distinct time functions (``ftab[m, k]``); lin[0, i] =
intercept + z_i beta + offset_i and lin[m, i] = gamma0_m + z_i gamma_m. The
person-period rows are never stored: they are visited by index arithmetic (i, k).

Per subject the state keeps the weighted sums over its intervals, with p = expit(eta)

    G[m, i] = wt_i sum_k F_m(k) p_ik,   H[m, i] = wt_i sum_k F_m(k)^2 p_ik (1 - p_ik),
    SP[i]   = wt_i sum_k log(1 + exp(eta_ik))

so a coefficient whose virtual column is c_i F_m(k) (c = a subject-level covariate, or
1 for the intercept and its time terms) has

    g = ysum - sum_i c_i G[m, i],   h = - sum_i c_i^2 H[m, i]

(O(nnz) per coordinate; ``ysum = sum_i wt_i d_i c_i F_m(K_i)`` is static because the
only event row of subject i is its last interval), and a move refreshes the sums of
the subjects touched: O(sum of their K_i). Memory is O(N (M + 1)), never O(N K).

Without time functions (M = 0) eta_ik = lin[0, i] is the same in all of subject i's
intervals, so the sums are closed-form, K_i p_i, K_i p_i (1 - p_i) and K_i softplus:
O(1) per subject whatever the interval width (``ftab`` then has a single column).

:data:`KERNELS` is the family on the compiled contract of :mod:`riskset.core.sweep`.
"""
import math
from typing import NamedTuple

import numpy as np
from numba import njit

from riskset.core.sweep import compile_family


@njit(cache=True, nogil=True, error_model="numpy", inline="always")
def _expit_softplus(e):
    if e >= 0:
        z = math.exp(-e)
        return 1.0 / (1.0 + z), e + math.log1p(z)
    z = math.exp(e)
    return z / (1.0 + z), math.log1p(z)


@njit(cache=True, nogil=True, error_model="numpy")
def _refresh_subject(i, lin, K, wt, ftab, G, H, SP):
    nf = lin.shape[0]
    if nf == 1:  # eta constant over the intervals: the sums are K_i times one term
        p, s = _expit_softplus(lin[0, i])
        c = wt[i] * K[i]
        G[0, i] = c * p
        H[0, i] = c * p * (1.0 - p)
        SP[i] = c * s
        return
    for m in range(nf):
        G[m, i] = 0.0
        H[m, i] = 0.0
    sp_ = 0.0
    for k in range(1, K[i] + 1):
        e = lin[0, i]
        for m in range(1, nf):
            e += lin[m, i] * ftab[m, k]
        p, s = _expit_softplus(e)
        v = p * (1.0 - p)
        sp_ += s
        G[0, i] += p
        H[0, i] += v
        for m in range(1, nf):
            f = ftab[m, k]
            G[m, i] += f * p
            H[m, i] += f * f * v
    c = wt[i]
    for m in range(nf):
        G[m, i] *= c
        H[m, i] *= c
    SP[i] = c * sp_


@njit(cache=True, nogil=True, error_model="numpy")
def refresh_all(lin, K, wt, ftab, G, H, SP):
    """Recompute every subject's interval sums (O(sum K_i))."""
    for i in range(K.shape[0]):
        _refresh_subject(i, lin, K, wt, ftab, G, H, SP)


@njit(cache=True, nogil=True, error_model="numpy")
def coordinate(indptr, indices, values, value_shift, src, m, ysum, G, H):
    """(g, h) of the virtual column c_i F_m(k); src < 0 means c = 1 (all subjects)."""
    g = ysum
    h = 0.0
    if src < 0:
        for i in range(G.shape[1]):
            g -= G[m, i]
            h -= H[m, i]
    else:
        vs = value_shift[src]
        for p in range(indptr[src], indptr[src + 1]):
            i = indices[p]
            c = values[p + vs]
            g -= c * G[m, i]
            h -= c * c * H[m, i]
    return g, h


@njit(cache=True, nogil=True, error_model="numpy")
def move(data, state, j, delta):
    """beta_j += delta for the virtual column j, c_i F_m(k): refresh the touched subjects."""
    indptr, indices, values, value_shift = data.indptr, data.indices, data.values, data.value_shift
    src, m = data.src[j], data.fidx[j]
    K, wt, ftab = data.n_intervals, data.weights, data.ftab
    lin, G, H, SP = state.lin, state.G, state.H, state.SP
    if src < 0:
        for i in range(K.shape[0]):
            lin[m, i] += delta
            _refresh_subject(i, lin, K, wt, ftab, G, H, SP)
    else:
        vs = value_shift[src]
        for p in range(indptr[src], indptr[src + 1]):
            i = indices[p]
            lin[m, i] += delta * values[p + vs]
            _refresh_subject(i, lin, K, wt, ftab, G, H, SP)


@njit(cache=True, nogil=True, error_model="numpy")
def loglik(lin, K, wt, d, ftab, SP):
    """Bernoulli log-likelihood over all virtual rows: sum_i wt_i d_i eta_{i,K_i} - SP_i."""
    total = 0.0
    nf = lin.shape[0]
    for i in range(K.shape[0]):
        if d[i] != 0.0:
            e = lin[0, i]
            for m in range(1, nf):
                e += lin[m, i] * ftab[m, K[i]]
            total += wt[i] * d[i] * e
        total -= SP[i]
    return total


@njit(cache=True, nogil=True, error_model="numpy")
def cross_moments(lin, K, wt, ftab, ma, mb, out):
    """out[q, i] = wt_i sum_k F_ma[q](k) F_mb[q](k) p_ik (1 - p_ik) for each pair q."""
    nf = lin.shape[0]
    nq = ma.shape[0]
    for i in range(K.shape[0]):
        if nf == 1:  # only the pair (0, 0): closed form, as in _refresh_subject
            p, _ = _expit_softplus(lin[0, i])
            for q in range(nq):
                out[q, i] = wt[i] * K[i] * p * (1.0 - p)
            continue
        for q in range(nq):
            out[q, i] = 0.0
        for k in range(1, K[i] + 1):
            e = lin[0, i]
            for m in range(1, nf):
                e += lin[m, i] * ftab[m, k]
            p, _ = _expit_softplus(e)
            v = wt[i] * p * (1.0 - p)
            for q in range(nq):
                out[q, i] += ftab[ma[q], k] * ftab[mb[q], k] * v


# -- the compiled family contract (riskset.core.sweep) ------------------------------------------

class Data(NamedTuple):
    """The static data: the subject-level design, the virtual columns (subject covariate
    ``src[v]``, -1 for the constant, times time function ``fidx[v]``), their static event sums
    ``ysum``, and per subject its interval count K_i and weight, with the table of F_m(k)."""

    indptr: np.ndarray
    indices: np.ndarray
    values: np.ndarray
    value_shift: np.ndarray
    src: np.ndarray
    fidx: np.ndarray
    ysum: np.ndarray
    n_intervals: np.ndarray
    weights: np.ndarray
    ftab: np.ndarray


class State(NamedTuple):
    """What a sweep writes: the per-subject linear parts lin[m, i] and the sums G, H, SP."""

    lin: np.ndarray
    G: np.ndarray
    H: np.ndarray
    SP: np.ndarray

@njit(cache=True, nogil=True, error_model="numpy", inline="always")
def contract_refresh(data, state):
    """Nothing to refresh: a move refreshes the sums of every subject it touches."""


@njit(cache=True, nogil=True, error_model="numpy", inline="always")
def contract_terms(data, state, j):
    d = data
    return coordinate(d.indptr, d.indices, d.values, d.value_shift, d.src[j], d.fidx[j], d.ysum[j], state.G, state.H)


@njit(cache=True, nogil=True, error_model="numpy", inline="always")
def contract_move(data, state, j, delta):
    move(data, state, j, delta)


# no separate screen: g alone is no cheaper (g and h read the same non-zeros)
KERNELS = compile_family("pooled_logistic", contract_refresh, None, contract_terms, contract_move)
