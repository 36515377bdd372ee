"""Kernels of a Cox model whose rows are split over shards, its risk sets shared across them
(:mod:`riskset.sharded.risk_sets`): the passes over a shard's rows, and the per-grid-point
quantities the driver makes from the shards' sums.

Notation (unstratified Cox, R's ``coxph`` conventions as :class:`riskset.models.cox.CoxDatafit`):
the grid t_1 < ... < t_G holds every event time of positive weight over all shards. Row k
(case weight c_k, event flag delta_k) is at risk at grid point g iff start_k < t_g <= stop_k,
that is ``lo_k <= g < hi_k`` with ``lo_k = searchsorted(grid, start_k, 'right')`` (0 without start
times) and ``hi_k = searchsorted(grid, stop_k, 'right')``; an event row's time is t_{hi_k - 1}.
Per grid point, d_g is the event weight and m_g the number of event rows of positive weight
(``wbar = d/m``). With ``w_k = c_k exp(eta_k - M)`` (M: a shift, the largest eta, so that no
weight overflows)::

    S0_g = sum_{k at risk at g} w_k           E0_g = sum_{k event at g} w_k
    D_gr = S0_g - (r/m_g) E0_g                (Efron, r = 0 .. m_g - 1; Breslow: m_g taken as 1)
    l = sum_events c eta - sum_g wbar_g sum_r (log D_gr + M)

The gradient in eta is ``c_k delta_k - w_k rho_k`` with ``rho_k = sum_{lo_k <= g < hi_k} A_g -
delta_k B_{hi_k - 1}`` (a difference of the prefix sums of A, O(1) per row)::

    A_g = wbar_g sum_r 1/D_gr                 B_g = wbar_g sum_r (r/m_g)/D_gr

and, for u = X_A v with S0u_g, E0u_g the sums of w u as S0_g, E0_g of w, the Hessian in eta
applied to u (l = sum c delta eta - sum_{g,r} wbar log sum_k a_{k,gr} w_k with a_{k,gr} =
1[k at risk at g] - (r/m_g) 1[k event at g], differentiated twice)::

    (H_eta u)_k = -w_k u_k rho_k + w_k (sum_{lo_k <= g < hi_k} alpha_g - delta_k beta_{hi_k - 1})
    alpha_g = wbar_g sum_r (S0u_g - (r/m_g) E0u_g)/D_gr^2
    beta_g = wbar_g sum_r (r/m_g)(S0u_g - (r/m_g) E0u_g)/D_gr^2

Every product w_k rho_k, w_k alpha_g is invariant to M. A row of weight 0, or at risk at no
grid point (lo_k = hi_k), has w_k = 0 and adds nothing to any sum.

*Late rows* (Fine-Gray's subdistribution risk set, :mod:`riskset.sharded.competing_risks`): a
listed row r with factor f_r stays, after it leaves the risk sets, in those of every later grid
point g >= hi_r, scaled by s_g there (a competing event at T_r: f_r = 1/G(T_r-), s_g = G(t_g-),
G the censoring survival). Its membership of grid point g is then ``a_gr = 1[lo_r <= g < hi_r] +
f_r s_g 1[g >= hi_r]``, and every formula above holds with it (a late row is no event at g >= hi_r,
so E0 is unchanged)::

    S0_g  += s_g sum_{late r, hi_r <= g} f_r w_r                    (S0u_g likewise with w u)
    rho_r += f_r AL_{hi_r}                    AL_h = sum_{g >= h} s_g A_g
    (H_eta u)_r += w_r f_r (alphaL_{hi_r} - u_r AL_{hi_r})           alphaL_h = sum_{g >= h} s_g alpha_g

(:func:`late_sums`, :func:`late_hazard_rows`, :func:`late_hessian_rows`: O(late rows + G)). A late
row takes part in a risk set up to the last grid point: the ``hi`` that :func:`shard_shift` and
:func:`row_weights` read is G for it. The kernels are serial.
"""
import math

import numpy as np
from numba import njit

from riskset.core.jit import OPTIONS


# -- a shard's rows ----------------------------------------------------------------------

@njit(**OPTIONS)
def shard_shift(eta, cw, lo, hi):
    """(shift, rows): the largest eta of the rows of positive weight at risk at some grid point
    (0 if none) and their number (a shard without any adds nothing to the sums)."""
    top = -np.inf
    rows = 0
    for k in range(eta.shape[0]):
        if cw[k] > 0.0 and lo[k] < hi[k]:
            rows += 1
            if eta[k] > top:
                top = eta[k]
    return (top if rows > 0 else 0.0), rows


@njit(**OPTIONS)
def row_weights(eta, cw, lo, hi, shift, w):
    """w = c exp(eta - shift) for the rows of positive weight at risk at some grid point, else 0
    (exp is not evaluated: a row outside every risk set may have eta far above the shift)."""
    for k in range(eta.shape[0]):
        w[k] = cw[k] * math.exp(eta[k] - shift) if cw[k] > 0.0 and lo[k] < hi[k] else 0.0


@njit(**OPTIONS)
def grid_sums(values, lo, hi, event, S, E):
    """S_g = the sum of ``values`` over the rows at risk at g, E_g over the event rows at t_g
    (``event``: the events of positive weight): the suffix sums of the values by exit point less
    those by entry point, as :class:`~riskset.models.cox.CoxDatafit`'s denominators (without start
    times every row enters at 0, which no suffix reads)."""
    G = S.shape[0]
    exits = np.zeros(G + 1)
    entries = np.zeros(G + 1)
    E[:] = 0.0
    for k in range(values.shape[0]):
        v = values[k]
        exits[hi[k]] += v
        entries[lo[k]] += v
        if event[k]:
            E[hi[k] - 1] += v
    sx = 0.0
    sn = 0.0
    for g in range(G - 1, -1, -1):
        sx += exits[g + 1]
        sn += entries[g + 1]
        S[g] = sx - sn


@njit(**OPTIONS, inline="always")
def window(cum, last, lo, hi, event):
    """sum_{lo <= g < hi} a_g - event * last_{hi - 1}, with ``cum`` the exclusive prefix sums of a."""
    t = cum[hi] - cum[lo]
    if event:
        t -= last[hi - 1]
    return t


@njit(**OPTIONS)
def hazard_rows(w, lo, hi, event, A_cum, B, out):
    """out_k = w_k rho_k (0 where w_k is 0); ``A_cum``: the exclusive prefix sums of A (G + 1)."""
    for k in range(w.shape[0]):
        out[k] = w[k] * window(A_cum, B, lo[k], hi[k], event[k]) if w[k] != 0.0 else 0.0


@njit(**OPTIONS)
def hessian_rows(w, u, lo, hi, event, A_cum, B, alpha_cum, beta, out):
    """out = H_eta u: w_k (sum alpha - delta_k beta_{hi_k - 1} - u_k rho_k) (0 where w_k is 0);
    ``A_cum``, ``alpha_cum``: exclusive prefix sums (G + 1)."""
    for k in range(w.shape[0]):
        if w[k] == 0.0:
            out[k] = 0.0
            continue
        rho = window(A_cum, B, lo[k], hi[k], event[k])
        out[k] = w[k] * (window(alpha_cum, beta, lo[k], hi[k], event[k]) - u[k] * rho)


# -- late rows (Fine-Gray's competing events) -------------------------------------------

@njit(**OPTIONS)
def late_sums(values, rows, factor, hi, scale, S):
    """S_g += scale_g sum_{i: hi_{rows_i} <= g} factor_i values_{rows_i}: the late rows' part of a
    sum over the risk sets (``rows``: the late rows, ``factor``: theirs, in that order), a
    forward cumulative sum of their values by exit point."""
    G = S.shape[0]
    exits = np.zeros(G + 1)
    for i in range(rows.shape[0]):
        k = rows[i]
        exits[hi[k]] += factor[i] * values[k]
    s = 0.0
    for g in range(G):
        s += exits[g]
        S[g] += scale[g] * s


@njit(**OPTIONS)
def late_hazard_rows(w, rows, factor, hi, AL, out):
    """out_r += w_r f_r AL_{hi_r} over the late rows (``AL``: the suffix sums of s A, G + 1)."""
    for i in range(rows.shape[0]):
        k = rows[i]
        out[k] += w[k] * factor[i] * AL[hi[k]]


@njit(**OPTIONS)
def late_hessian_rows(w, u, rows, factor, hi, AL, alphaL, out):
    """out_r += w_r f_r (alphaL_{hi_r} - u_r AL_{hi_r}) over the late rows (``AL``, ``alphaL``: the
    suffix sums of s A and s alpha, G + 1)."""
    for i in range(rows.shape[0]):
        k = rows[i]
        h = hi[k]
        out[k] += w[k] * factor[i] * (alphaL[h] - u[k] * AL[h])


# -- the grid (the driver) -------------------------------------------------------------

@njit(**OPTIONS, inline="always")
def tied(m, efron):
    """The number of terms r of a grid point with m tied events (1 for Breslow)."""
    return int(m) if efron and m > 1.0 else 1


@njit(**OPTIONS)
def grid_loglik(S0, E0, d, m, efron):
    """-sum_g wbar_g sum_r log D_gr over the grid points with d_g > 0 (the shift's terms left
    to the caller), or -inf once some D_gr is not positive and finite."""
    t = 0.0
    for g in range(S0.shape[0]):
        if d[g] <= 0.0:
            continue
        n = tied(m[g], efron)
        wbar = d[g] / n
        for r in range(n):
            D = S0[g] - (r / n) * E0[g]
            if not (D > 0.0 and D < np.inf):
                return -np.inf
            t -= wbar * math.log(D)
    return t


@njit(**OPTIONS)
def tied_sums(S0, E0, num, event_num, d, m, efron, power, a_out, b_out):
    """a_g = wbar sum_r (num_g - (r/n) event_num_g) / D_gr^power and b_g the same terms times r/n,
    over the n tied terms of grid point g (0 where d_g = 0): the multipliers (num = 1,
    event_num = 0, power 1) and the Hessian-vector multipliers (S0u, E0u, power 2)."""
    for g in range(S0.shape[0]):
        a = 0.0
        b = 0.0
        if d[g] > 0.0:
            n = tied(m[g], efron)
            for r in range(n):
                f = r / n
                inv = 1.0 / (S0[g] - f * E0[g])
                t = (num[g] - f * event_num[g]) * (inv if power == 1 else inv * inv)
                a += t
                b += f * t
            a *= d[g] / n
            b *= d[g] / n
        a_out[g] = a
        b_out[g] = b


@njit(**OPTIONS)
def grid_multipliers(S0, E0, d, m, efron, A, B):
    """A_g = wbar sum_r 1/D_gr, B_g = wbar sum_r (r/m)/D_gr (0 where d_g = 0)."""
    tied_sums(S0, E0, np.ones_like(S0), np.zeros_like(S0), d, m, efron, 1, A, B)


@njit(**OPTIONS)
def grid_hvp_multipliers(S0, E0, S0u, E0u, d, m, efron, alpha, beta):
    """alpha_g = wbar sum_r (S0u - (r/m) E0u)/D_gr^2, beta_g = wbar sum_r (r/m)(S0u - (r/m) E0u)/D_gr^2
    (0 where d_g = 0)."""
    tied_sums(S0, E0, S0u, E0u, d, m, efron, 2, alpha, beta)
