"""Numba kernels of the GLM families with independent rows.

Per row the state keeps ``resid = w (y - mu)`` and ``curv = w dmu/deta`` so that for
column j: dl/dbeta_j = sum_i x_ij resid_i and d2l/dbeta_j^2 = -sum_i x_ij^2 curv_i
(canonical links). A move touches only the non-zero rows of the column: O(nnz_j).
It also keeps ``expeta = exp(eta)`` and updates it by the factor exp(delta x): for an
indicator column that is one ``exp`` per move instead of one per row. Each full
refresh (new_state) recomputes it from eta, so rounding cannot accumulate unchecked.
"""
import math

from numba import njit

from riskset.solver.step import bounded_step

LOGISTIC, POISSON, GAUSSIAN = 0, 1, 2


@njit(cache=True, nogil=True, inline="always")
def _mean_and_curvature(family, eta, expeta):
    if family == LOGISTIC:
        mu = 1.0 / (1.0 + 1.0 / expeta) if expeta > 1.0 else expeta / (1.0 + expeta)
        return mu, mu * (1.0 - mu)
    if family == POISSON:
        return expeta, expeta
    return eta, 1.0


@njit(cache=True, nogil=True)
def refresh_rows(family, eta, y, w, expeta, resid, curv):
    """Fill expeta, resid and curv for all rows from eta."""
    for i in range(eta.shape[0]):
        expeta[i] = math.exp(eta[i])
        mu, v = _mean_and_curvature(family, eta[i], expeta[i])
        resid[i] = w[i] * (y[i] - mu)
        curv[i] = w[i] * v


@njit(cache=True, nogil=True)
def coordinate(indptr, indices, values, c, resid, curv):
    """(dl/dbeta, d2l/dbeta^2) of CSC column ``c``, or of the implicit intercept if c < 0."""
    g = 0.0
    h = 0.0
    if c < 0:
        for i in range(resid.shape[0]):
            g += resid[i]
            h -= curv[i]
        return g, h
    for k in range(indptr[c], indptr[c + 1]):
        i = indices[k]
        x = values[k]
        g += x * resid[i]
        h -= x * x * curv[i]
    return g, h


@njit(cache=True, nogil=True, inline="always")
def _update_row(family, i, dx, factor, eta, y, w, expeta, resid, curv):
    eta[i] += dx
    expeta[i] *= factor
    mu, v = _mean_and_curvature(family, eta[i], expeta[i])
    resid[i] = w[i] * (y[i] - mu)
    curv[i] = w[i] * v


@njit(cache=True, nogil=True)
def move(family, indptr, indices, values, indicator, c, delta, eta, y, w, expeta, resid, curv):
    """beta += delta for CSC column ``c`` (the implicit intercept if c < 0): update
    eta, expeta, resid and curv at the column's non-zero rows."""
    factor = math.exp(delta)
    if c < 0:
        for i in range(eta.shape[0]):
            _update_row(family, i, delta, factor, eta, y, w, expeta, resid, curv)
        return
    for k in range(indptr[c], indptr[c + 1]):
        dx = delta * values[k]
        _update_row(family, indices[k], dx, factor if indicator[c] else math.exp(dx), eta, y, w, expeta, resid,
                    curv)


@njit(cache=True, nogil=True)
def loglik(family, eta, y, w):
    """Weighted log-likelihood; Poisson includes -log(y!), Gaussian is -RSS/2."""
    total = 0.0
    for i in range(eta.shape[0]):
        e = eta[i]
        if family == LOGISTIC:
            softplus = e + math.log1p(math.exp(-e)) if e > 0 else math.log1p(math.exp(e))
            total += w[i] * (y[i] * e - softplus)
        elif family == POISSON:
            total += w[i] * (y[i] * e - math.exp(e) - math.lgamma(y[i] + 1.0))
        else:
            r = y[i] - e
            total -= 0.5 * w[i] * r * r
    return total



@njit(cache=True, nogil=True)
def cycle(family, first, indptr, indices, values, indicator, coords, beta, l1, l2, radius, eta, y, w, expeta,
          resid, curv):
    """One CCD sweep over coefficients ``coords`` (see riskset.solver.step), entirely
    compiled; coefficient j is CSC column j - first (the intercept when negative)."""
    for j in coords:
        c = j - first
        g, h = coordinate(indptr, indices, values, c, resid, curv)
        step = bounded_step(g, h, beta[j], l1[j], l2[j], radius, j)
        if step != 0.0:
            move(family, indptr, indices, values, indicator, c, step, eta, y, w, expeta, resid, curv)
            beta[j] += step
