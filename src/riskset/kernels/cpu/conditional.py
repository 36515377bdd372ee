"""Numba kernels of the conditional (stratified multinomial) likelihoods.

Rows are sorted by stratum; ``row_stratum[r]`` is the stratum code of row r and
``stratum_ptr[s]:stratum_ptr[s + 1]`` its rows. With ``w = exp(eta - shift)`` (the
stratum's largest eta, :func:`stratum_shift`; every term below is invariant to it) and
``W_s = sum_{r in s} w_r`` the *multinomial* strata (conditional Poisson, SCCS,
conditional logistic with Breslow ties or one case per set) contribute

    l_s = sum_{r in s} y_r eta_r - n_s log W_s,          n_s = sum_{r in s} y_r

so that for column j, with mu_s = sum_{r in s} w_r x_rj / W_s,

    g_j = sum_r y_r x_rj - sum_s n_s mu_s
    h_j = - sum_s n_s ( sum_{r in s} w_r x_rj^2 / W_s - mu_s^2 )

and only the strata holding a non-zero of column j contribute to the second terms:
one pass over the non-zeros of j (sorted by row, hence in runs of one stratum each,
listed once by :func:`riskset.core.design.column_runs`) is O(nnz_j); g_j alone (the sweep's screen of a
coordinate at its prior center) needs no second moment. A move updates eta, w at
those rows and W_s by the difference.

*Exact* strata (conditional logistic, m_s >= 2 cases) contribute
``l_s = sum_{cases} eta_r - log e_m(w_s)`` with e_m the elementary symmetric
polynomial of degree m of the stratum's w (sum over all m-subsets of the product
of their w). e_m and its first and second directional derivatives along column j
follow from the recursion B_k <- B_k + w_i B_{k-1} over the stratum's rows
(Gail, Lubin & Rubinstein 1981): O(n_s m_s) per stratum touched by column j; g_j
alone skips the second-derivative polynomial (two updates per row and degree, not
three). The weights are divided by the stratum's largest w first (e_m is homogeneous
of degree m) so nothing overflows.

Every stratum carries a weight c_s (case weight, constant within the stratum): y
and n_s are already multiplied by it, exact strata multiply their terms by c_s.
"""
import math
from typing import NamedTuple

import numpy as np
from numba import njit, prange

from riskset.core.sweep import compile_family


# -- exact (elementary symmetric polynomial) strata --------------------------------
# _log_esp and _exact_stratum_derivs call no other compiled function
# and no ``min`` (the caller passes the scale): the GPU backend compiles their source as CUDA
# device functions.
@njit(cache=True, nogil=True, error_model="numpy")
def _stratum_scale(w, a, b):
    big = 0.0
    for r in range(a, b):
        if w[r] > big:
            big = w[r]
    return big


@njit(cache=True, nogil=True, error_model="numpy")
def _log_esp(w, a, b, m, big, B):
    """log e_m(w[a:b]) using workspace B (length >= m + 1); ``big`` = :func:`_stratum_scale`."""
    for k in range(m + 1):
        B[k] = 0.0
    B[0] = 1.0
    for r in range(a, b):
        v = w[r] / big
        top = m if m < r - a + 1 else r - a + 1  # min(m, rows so far)
        for k in range(top, 0, -1):
            B[k] += v * B[k - 1]
    return math.log(B[m]) + m * math.log(big)


@njit(cache=True, nogil=True, error_model="numpy")
def _exact_stratum_derivs(w, a, b, m, big, idx, val, vs, p, q, B, dB, d2B):
    """First and second derivative of log e_m(w[a:b]) along a direction x.

    x is given sparsely by ``idx[p:q]`` (rows, ascending, all inside [a, b)) and
    ``val[p + vs:q + vs]``; every other row of the stratum has x = 0. ``big`` = :func:`_stratum_scale`.
    """
    for k in range(m + 1):
        B[k] = 0.0
        dB[k] = 0.0
        d2B[k] = 0.0
    B[0] = 1.0
    ptr = p
    for r in range(a, b):
        v = w[r] / big
        x = 0.0
        if ptr < q and idx[ptr] == r:
            x = val[ptr + vs]
            ptr += 1
        top = m if m < r - a + 1 else r - a + 1  # min(m, rows so far)
        if x == 0.0:
            for k in range(top, 0, -1):
                d2B[k] += v * d2B[k - 1]
                dB[k] += v * dB[k - 1]
                B[k] += v * B[k - 1]
        else:
            for k in range(top, 0, -1):
                d2B[k] += v * (x * x * B[k - 1] + 2.0 * x * dB[k - 1] + d2B[k - 1])
                dB[k] += v * (x * B[k - 1] + dB[k - 1])
                B[k] += v * B[k - 1]
    d1 = dB[m] / B[m]
    return d1, d2B[m] / B[m] - d1 * d1


@njit(cache=True, nogil=True, error_model="numpy")
def _exact_inclusion(w, a, b, m, pi):
    """pi[r] = P(row r is among the m selected | stratum) = d log e_m / d eta_r.

    Forward and backward elementary symmetric polynomials, O(n m^2).
    """
    n = b - a
    big = _stratum_scale(w, a, b)
    F = np.zeros((n + 1, m + 1))
    G = np.zeros((n + 2, m + 1))
    F[0, 0] = 1.0
    for i in range(n):
        v = w[a + i] / big
        F[i + 1, 0] = 1.0
        for k in range(1, m + 1):
            F[i + 1, k] = F[i, k] + v * F[i, k - 1]
    G[n + 1, 0] = 1.0
    G[n, 0] = 1.0
    for i in range(n - 1, -1, -1):
        v = w[a + i] / big
        G[i, 0] = 1.0
        for k in range(1, m + 1):
            G[i, k] = G[i + 1, k] + v * G[i + 1, k - 1]
    total = F[n, m]
    for i in range(n):
        v = w[a + i] / big
        s = 0.0
        for k in range(m):  # e_{m-1} of the others: rows < i (F[i]) and rows > i (G[i + 1])
            s += F[i, k] * G[i + 1, m - 1 - k]
        pi[a + i] = v * s / total


# -- state, moves and derivatives -------------------------------------------------
@njit(cache=True, nogil=True, error_model="numpy")
def stratum_shift(eta, a, b):
    """The largest eta[a:b] (0 if none is finite or larger than -inf). Every term of the
    likelihood is invariant to a constant added to eta within a stratum: w = exp(eta - shift)
    is at most 1, so that an uncentered covariate (a calendar year times 0.4: eta ~ 800)
    cannot overflow exp and look like a diverging coefficient."""
    top = -math.inf
    for r in range(a, b):
        if eta[r] > top:
            top = eta[r]
    return top if top > -math.inf else 0.0


@njit(cache=True, nogil=True, error_model="numpy")
def refresh_weights(eta, w, W, stratum_ptr):
    """w = exp(eta - the stratum's shift) (:func:`stratum_shift`) and the per-stratum sums W
    (one O(N) pass)."""
    for s in range(stratum_ptr.shape[0] - 1):
        tot = 0.0
        shift = stratum_shift(eta, stratum_ptr[s], stratum_ptr[s + 1])
        for r in range(stratum_ptr[s], stratum_ptr[s + 1]):
            e = math.exp(eta[r] - shift)
            w[r] = e
            tot += e
        W[s] = tot


@njit(cache=True, nogil=True, error_model="numpy")
def loglik(eta, w, W, y, n_s, stratum_ptr, exact_m, c_s, B):
    """Conditional log-likelihood; recomputes w = exp(eta - shift) and W (removes drift of the
    moves). The shift cancels: y sums to n_s in a multinomial stratum, to c_s m in an exact
    one, whose e_m is homogeneous of degree m."""
    total = 0.0
    for s in range(stratum_ptr.shape[0] - 1):
        a = stratum_ptr[s]
        b = stratum_ptr[s + 1]
        tot = 0.0
        shift = stratum_shift(eta, a, b)
        for r in range(a, b):
            e = math.exp(eta[r] - shift)
            w[r] = e
            tot += e
            total += y[r] * (eta[r] - shift)
        W[s] = tot
        m = exact_m[s]
        if m > 0:
            total -= c_s[s] * _log_esp(w, a, b, m, _stratum_scale(w, a, b), B)
        elif n_s[s] > 0:
            total -= n_s[s] * math.log(tot)
    return total


@njit(cache=True, nogil=True, error_model="numpy", inline="always")
def multinomial_run(p, q, s, indices, values, vs, w, W, n_s, curvature):
    """(n_s mu_s, n_s (second moment - mu_s^2)) of a multinomial stratum s from the non-zeros
    p .. q-1 of a column in it (the second 0 without ``curvature``): what the stratum takes
    from the column's g and h."""
    s1 = 0.0
    s2 = 0.0
    for t in range(p, q):
        wx = w[indices[t]] * values[t + vs]
        s1 += wx
        if curvature:
            s2 += wx * values[t + vs]
    mu = s1 / W[s]
    return n_s[s] * mu, (n_s[s] * (s2 / W[s] - mu * mu) if curvature else 0.0)


@njit(cache=True, nogil=True, error_model="numpy", inline="always")
def _column_derivatives(data, state, j, curvature):
    """(dl/dbeta_j, d2l/dbeta_j^2), visiting only the strata of column j's non-zeros, run by
    run (by chunks of runs in parallel: :func:`chunked`). With ``curvature`` False, dl/dbeta_j
    alone (the second derivative is returned as 0): the multinomial strata skip their second
    moments (the exact ones' recursion gives both at once); g is the same number either way."""
    d, st = data, state
    indices, values, w = d.indices, d.values, st.w
    vs = d.value_shift[j]
    g = d.xy[j]
    h = 0.0
    if chunked(data, j):
        dg, dh = chunked_derivatives(run_chunks(data, j), d.run_start, d.run_stratum, indices, values, vs, w, st.W,
                                     d.n_s, np.bool_(curvature))
        return g + dg, dh
    for k in range(d.col_runs[j], d.col_runs[j + 1]):
        s = d.run_stratum[k]
        p = d.run_start[k]
        q = d.run_start[k + 1]
        if d.exact_m[s] > 0:
            a = d.stratum_ptr[s]
            b = d.stratum_ptr[s + 1]
            big = _stratum_scale(w, a, b)
            d1, d2 = _exact_stratum_derivs(w, a, b, d.exact_m[s], big, indices, values, vs, p, q, st.B, st.dB, st.d2B)
            g -= d.c_s[s] * d1
            if curvature:
                h -= d.c_s[s] * d2
        else:  # g -= n_s mu_s, h -= n_s (second moment - mu_s^2)
            dg, dh = multinomial_run(p, q, s, indices, values, vs, w, st.W, d.n_s, curvature)
            g -= dg
            h -= dh
    return g, h


#: Stored non-zeros per chunk of a column's derivatives and move on more than one thread; a
#: chunk holds whole runs (a stratum is in one chunk), so no stratum sum is shared.
CHUNK = 1 << 13


@njit(cache=True, nogil=True, error_model="numpy", inline="always")
def chunked(data, j):
    """Whether column j's derivatives and move go by chunks of runs in parallel: more than
    one thread, multinomial strata only (the exact recursion shares its work vectors), more
    than two chunks of non-zeros."""
    a = data.col_runs[j]
    b = data.col_runs[j + 1]
    return data.parallel and data.multinomial and data.run_start[b] - data.run_start[a] > 2 * CHUNK


@njit(cache=True, nogil=True, error_model="numpy")
def run_chunks(data, j):
    """Boundaries (run indices) of the chunks of column j's runs: one every :data:`CHUNK`
    non-zeros, moved forward to the next run. Fixed by the data, not by the threads."""
    a = data.col_runs[j]
    b = data.col_runs[j + 1]
    first = data.run_start[a]
    n = (data.run_start[b] - first + CHUNK - 1) // CHUNK
    out = np.empty(n + 1, np.int64)
    out[0] = a
    m = 1
    k = a
    for c in range(1, n):
        while k < b and data.run_start[k] < first + c * CHUNK:
            k += 1
        if out[m - 1] < k < b:
            out[m] = k
            m += 1
    out[m] = b
    return out[:m + 1]


@njit(cache=True, nogil=True, parallel=True, error_model="numpy")
def chunked_derivatives(bounds, run_start, run_stratum, indices, values, vs, w, W, n_s, curvature):
    """The sums of what a column's multinomial strata take from its g and h (negated), the
    chunks of runs ``bounds`` on all threads, then added in chunk order (the same bits on 2
    or 16 threads; equal to the serial sums up to rounding)."""
    n = bounds.shape[0] - 1
    part = np.empty((n, 2))
    for c in prange(n):
        g = 0.0
        h = 0.0
        for k in range(bounds[c], bounds[c + 1]):
            dg, dh = multinomial_run(run_start[k], run_start[k + 1], run_stratum[k], indices, values, vs, w, W, n_s,
                                     curvature)
            g -= dg
            h -= dh
        part[c, 0] = g
        part[c, 1] = h
    g = 0.0
    h = 0.0
    for c in range(n):
        g += part[c, 0]
        h += part[c, 1]
    return g, h


@njit(cache=True, nogil=True, error_model="numpy", inline="always")
def move_runs(lo, hi, run_start, run_stratum, indices, values, vs, ind, delta, factor, eta, w, W):
    """The move of the runs lo .. hi-1 of a column (:func:`move`)."""
    for k in range(lo, hi):
        s = run_stratum[k]
        for t in range(run_start[k], run_start[k + 1]):
            r = indices[t]
            eta[r] += delta * values[t + vs]
            e = w[r] * (factor if ind else math.exp(delta * values[t + vs]))
            W[s] += e - w[r]
            w[r] = e


@njit(cache=True, nogil=True, error_model="numpy")
def move(data, state, j, delta):
    """beta_j += delta: eta, w at the non-zeros of column j and W of their strata (by chunks
    of runs in parallel where :func:`chunked`: each row and stratum takes the same
    additions, the same bits).

    w is multiplied by exp(delta x) (it carries its stratum's shift, :func:`refresh_weights`);
    for an indicator column by exp(delta): one exp per move.
    """
    factor = math.exp(delta)
    d, st = data, state
    if chunked(data, j):
        chunked_move(run_chunks(data, j), d.run_start, d.run_stratum, d.indices, d.values, d.value_shift[j],
                     d.indicator[j], delta, factor, st.eta, st.w, st.W)
        return
    move_runs(d.col_runs[j], d.col_runs[j + 1], d.run_start, d.run_stratum, d.indices, d.values, d.value_shift[j],
              d.indicator[j], delta, factor, st.eta, st.w, st.W)


@njit(cache=True, nogil=True, parallel=True, error_model="numpy")
def chunked_move(bounds, run_start, run_stratum, indices, values, vs, ind, delta, factor, eta, w, W):
    """:func:`move` by the chunks of runs ``bounds`` on all threads."""
    for c in prange(bounds.shape[0] - 1):
        move_runs(bounds[c], bounds[c + 1], run_start, run_stratum, indices, values, vs, ind, delta, factor, eta, w,
                  W)


@njit(cache=True, nogil=True, error_model="numpy")
def residuals(w, W, y, n_s, stratum_ptr, exact_m, c_s, out):
    """out[r] = dl/deta_r: y_r - n_s w_r / W_s (multinomial) or c_s (y_r - pi_r) (exact)."""
    for s in range(stratum_ptr.shape[0] - 1):
        a = stratum_ptr[s]
        b = stratum_ptr[s + 1]
        m = exact_m[s]
        if m > 0:
            _exact_inclusion(w, a, b, m, out)
            for r in range(a, b):
                out[r] = y[r] - c_s[s] * out[r]
        else:
            tot = 0.0
            for r in range(a, b):
                tot += w[r]
            for r in range(a, b):
                out[r] = y[r] - (n_s[s] * w[r] / tot if n_s[s] > 0 else 0.0)


@njit(cache=True, nogil=True, error_model="numpy")
def row_shares(w, n_s, stratum_ptr, p, c):
    """p_r = w_r / W_s (W_s summed from w) and c_r = n_s p_r, the curvature weights of the
    multinomial strata: -H = X' diag(c) X - sum_s n_s (X_s' p_s)(p_s' X_s)."""
    for s in range(stratum_ptr.shape[0] - 1):
        tot = 0.0
        for r in range(stratum_ptr[s], stratum_ptr[s + 1]):
            tot += w[r]
        for r in range(stratum_ptr[s], stratum_ptr[s + 1]):
            p[r] = w[r] / tot if n_s[s] > 0 else 0.0
            c[r] = n_s[s] * p[r]


@njit(cache=True, nogil=True, error_model="numpy")
def centered_rows(u, p, c, stratum_ptr, out):
    """out_r = c_r (u_r - sum_{q in s} p_q u_q): -H b = X' out for u = X b (multinomial strata),
    each row's value less its stratum's p-weighted mean."""
    for s in range(stratum_ptr.shape[0] - 1):
        mean = 0.0
        for r in range(stratum_ptr[s], stratum_ptr[s + 1]):
            mean += p[r] * u[r]
        for r in range(stratum_ptr[s], stratum_ptr[s + 1]):
            out[r] = c[r] * (u[r] - mean)


@njit(cache=True, nogil=True, error_model="numpy")
def multinomial_hessian_block(rptr, rcol, rval, k, w, n_s, stratum_ptr, exact_m, out):
    """Add the multinomial strata's d2l/dbeta_a dbeta_b (a, b < k) to ``out``:
    -sum_s n_s [ sum_{r in s} p_r x_ra x_rb - m_sa m_sb ], p_r = w_r / W_s, m_s = sum_{r in s} p_r x_r.
    ``rptr, rcol, rval``: the row-major copy of the k columns (``rcol``: positions).
    O(sum_r nnz_r^2 + sum_s t_s^2), t_s the columns a stratum touches."""
    m = np.zeros(k)
    seen = np.zeros(k, np.bool_)
    touched = np.empty(k, np.int64)
    for s in range(stratum_ptr.shape[0] - 1):
        if exact_m[s] > 0 or n_s[s] <= 0:
            continue
        a0, b0 = stratum_ptr[s], stratum_ptr[s + 1]
        tot = 0.0
        for r in range(a0, b0):
            tot += w[r]
        t = 0
        for r in range(a0, b0):
            p = w[r] / tot
            for u in range(rptr[r], rptr[r + 1]):
                xa = rval[u]
                a = rcol[u]
                if not seen[a]:
                    seen[a] = True
                    touched[t] = a
                    t += 1
                m[a] += p * xa
                for v in range(rptr[r], rptr[r + 1]):
                    out[a, rcol[v]] -= n_s[s] * p * xa * rval[v]
        for i in range(t):
            a = touched[i]
            for j in range(t):
                out[a, touched[j]] += n_s[s] * m[a] * m[touched[j]]
        for i in range(t):
            m[touched[i]] = 0.0
            seen[touched[i]] = False


@njit(cache=True, nogil=True, error_model="numpy")
def exact_hessian_block(sub_ptr, sub_idx, sub_val, k, w, stratum_ptr, exact_m, c_s, out):
    """Add the exact strata's part of d2l/dbeta_a dbeta_b (a, b < k) to ``out``.

    ``sub_*``: CSR of the k selected columns (all rows). O(n_s m_s k^2) per stratum.
    """
    for s in range(stratum_ptr.shape[0] - 1):
        m = exact_m[s]
        if m == 0:
            continue
        a = stratum_ptr[s]
        b = stratum_ptr[s + 1]
        big = _stratum_scale(w, a, b)
        B = np.zeros(m + 1)
        dB = np.zeros((k, m + 1))
        d2B = np.zeros((k, k, m + 1))
        B[0] = 1.0
        x = np.zeros(k)
        for r in range(a, b):
            v = w[r] / big
            x[:] = 0.0
            for t in range(sub_ptr[r], sub_ptr[r + 1]):
                x[sub_idx[t]] = sub_val[t]
            top = min(m, r - a + 1)
            for kk in range(top, 0, -1):
                for u in range(k):
                    for t in range(k):
                        d2B[u, t, kk] += v * (x[u] * x[t] * B[kk - 1] + x[u] * dB[t, kk - 1]
                                              + x[t] * dB[u, kk - 1] + d2B[u, t, kk - 1])
                for u in range(k):
                    dB[u, kk] += v * (x[u] * B[kk - 1] + dB[u, kk - 1])
                B[kk] += v * B[kk - 1]
        for u in range(k):
            for t in range(k):
                out[u, t] -= c_s[s] * (d2B[u, t, m] / B[m] - dB[u, m] * dB[t, m] / (B[m] * B[m]))


# -- the compiled family contract (riskset.core.sweep) ---------------------------------

class Data(NamedTuple):
    """The static data: the runs of each column's non-zeros by stratum (the first three, from
    :func:`riskset.core.design.column_runs`), the design, X'y, and per stratum its rows, case
    count, exact-likelihood size (0: multinomial) and weight."""

    col_runs: np.ndarray
    run_start: np.ndarray
    run_stratum: np.ndarray
    indices: np.ndarray
    values: np.ndarray
    value_shift: np.ndarray
    indicator: np.ndarray
    xy: np.ndarray
    stratum_ptr: np.ndarray
    n_s: np.ndarray
    exact_m: np.ndarray
    c_s: np.ndarray
    multinomial: bool  # no stratum takes the exact likelihood (exact_m all 0)
    parallel: bool     # more than one kernel thread (read by the caller: numba.get_num_threads())


class Device(NamedTuple):
    """What the device datafit (:mod:`riskset.kernels.gpu.conditional`) copies besides the design,
    built by :meth:`~riskset.models.conditional.ConditionalDatafit.device_record`: the kernels'
    record and the raw outcomes ``y_raw`` (y before the stratum weights c_s: the device's exact
    recomputation weighs them per replicate; no CPU kernel reads them)."""

    data: Data
    y_raw: np.ndarray

    @property
    def n_strata(self) -> int:
        return self.data.stratum_ptr.shape[0] - 1


class State(NamedTuple):
    """What a sweep writes: eta, w, the stratum sums W and the exact recursion's work vectors."""

    eta: np.ndarray
    w: np.ndarray
    W: np.ndarray
    B: np.ndarray
    dB: np.ndarray
    d2B: np.ndarray

@njit(cache=True, nogil=True, error_model="numpy", inline="always")
def contract_refresh(data, state):
    """Nothing to refresh: each move keeps w and W current at the rows it touches."""


@njit(cache=True, nogil=True, error_model="numpy", inline="always")
def contract_gradient(data, state, j):
    return _column_derivatives(data, state, j, False)[0]


@njit(cache=True, nogil=True, error_model="numpy", inline="always")
def contract_terms(data, state, j):
    return _column_derivatives(data, state, j, True)


@njit(cache=True, nogil=True, error_model="numpy", inline="always")
def contract_move(data, state, j, delta):
    move(data, state, j, delta)


KERNELS = compile_family("conditional", contract_refresh, contract_gradient, contract_terms, contract_move)
