"""Numba kernels of the GLM families with independent rows.

Per row the state keeps ``resid = w (y - mu)`` and ``curv = w dmu/deta`` so that for
column j: dl/dbeta_j = sum_i x_ij resid_i and d2l/dbeta_j^2 = -sum_i x_ij^2 curv_i
(canonical links). A move touches only the non-zero rows of the column: O(nnz_j).
"""
import math

from numba import njit

LOGISTIC, POISSON, GAUSSIAN = 0, 1, 2


@njit(cache=True, inline="always")
def _mean_and_curvature(family, eta):
    if family == LOGISTIC:
        if eta >= 0:
            e = math.exp(-eta)
            mu = 1.0 / (1.0 + e)
        else:
            e = math.exp(eta)
            mu = e / (1.0 + e)
        return mu, mu * (1.0 - mu)
    if family == POISSON:
        mu = math.exp(eta)
        return mu, mu
    return eta, 1.0


@njit(cache=True)
def refresh_rows(family, eta, y, w, resid, curv):
    """Fill resid and curv for all rows from eta."""
    for i in range(eta.shape[0]):
        mu, v = _mean_and_curvature(family, eta[i])
        resid[i] = w[i] * (y[i] - mu)
        curv[i] = w[i] * v


@njit(cache=True)
def coordinate(indptr, indices, values, j, resid, curv):
    """(dl/dbeta_j, d2l/dbeta_j^2) from the non-zeros of column j."""
    g = 0.0
    h = 0.0
    for k in range(indptr[j], indptr[j + 1]):
        i = indices[k]
        x = values[k]
        g += x * resid[i]
        h -= x * x * curv[i]
    return g, h


@njit(cache=True)
def move(family, indptr, indices, values, j, delta, eta, y, w, resid, curv):
    """beta_j += delta: update eta, resid and curv at the non-zeros of column j."""
    for k in range(indptr[j], indptr[j + 1]):
        i = indices[k]
        eta[i] += delta * values[k]
        mu, v = _mean_and_curvature(family, eta[i])
        resid[i] = w[i] * (y[i] - mu)
        curv[i] = w[i] * v


@njit(cache=True)
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

