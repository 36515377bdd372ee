"""Numba kernels of the Cox family (Breslow and Efron ties, strata, (start, stop] rows).

Notation (see :mod:`riskset.data.risksets`): rows sorted by (stratum, time descending);
per row entry/exit slots ``ks <= ke``; the row is at risk at event slot p iff
``ks <= p < ke``; ``w = c exp(eta)`` with case weight c. Per event slot: ``d`` = weighted
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

At the bottom, both formulations on the compiled family contract of
:mod:`riskset.core.sweep`: ``SPARSE_KERNELS`` and ``SCAN_KERNELS``.
"""
import math

import numpy as np
from numba import njit

from riskset.core.sweep import compile_family


@njit(cache=True, nogil=True, error_model="numpy")
def new_state(eta, cw, w, ks, ke, event, ex, en, ev):
    """w = c exp(eta) and the slot sums ex (w by exit slot), en (w by entry slot), ev (events)."""
    ex[:] = 0.0
    en[:] = 0.0
    ev[:] = 0.0
    for r in range(eta.shape[0]):
        wr = cw[r] * math.exp(eta[r])
        w[r] = wr
        ex[ke[r]] += wr
        en[ks[r]] += wr
        if event[r]:
            ev[ke[r] - 1] += wr


@njit(cache=True, nogil=True, error_model="numpy", inline="always")
def moved_weight(eta, w, r, x, delta, factor, indicator):
    """eta_r += delta x and w_r *= exp(delta x) (``factor`` = exp(delta), reused for an
    indicator column: one exp per move); returns the change of w_r. The risk-set families'
    moves add it to their slot sums; their log-likelihood recomputes w = c exp(eta) exactly."""
    eta[r] += delta * x
    wo = w[r]
    wn = wo * (factor if indicator else math.exp(delta * x))
    w[r] = wn
    return wn - wo


@njit(cache=True, nogil=True, error_model="numpy")
def move_sparse(indptr, indices, values, indicator, j, delta, eta, w, ksn, ken, evn, has_start, ex, en, ev):
    """beta_j += delta: eta, w and the slot sums at the non-zeros of column j
    (:func:`moved_weight`). Without start times the entry sums ``en`` are never read
    (every row enters at its stratum's first slot)."""
    ind = indicator[j]
    factor = math.exp(delta)
    for i in range(indptr[j], indptr[j + 1]):
        dw = moved_weight(eta, w, indices[i], values[i], delta, factor, ind)
        ex[ken[i]] += dw
        if has_start:
            en[ksn[i]] += dw
        if evn[i]:
            ev[ken[i] - 1] += dw


@njit(cache=True, nogil=True, error_model="numpy")
def move_scan(indptr, indices, values, j, delta, eta, cw, w):
    """beta_j += delta for the scan formulation: eta and w only."""
    for i in range(indptr[j], indptr[j + 1]):
        r = indices[i]
        eta[r] += delta * values[i]
        w[r] = cw[r] * math.exp(eta[r])


@njit(cache=True, nogil=True, error_model="numpy")
def refresh(ex, en, ev, slot_d, slot_m, slot_ptr, has_start, efron, full, D, Q1, Q2, R1, R2, T2, A1c, A2c):
    """Per-slot denominators and the cumulative aggregates, O(n_slots (+ tied events for Efron)).

    Stratum s owns slots ``slot_ptr[s] .. slot_ptr[s+1] - 1`` (the last one terminal).
    ``full`` also stores the per-slot Q1, Q2 (needed by the Hessian and the baseline
    hazard, not by the coordinates); R1, R2, T2 are stored whenever ``efron``.
    """
    for s in range(slot_ptr.shape[0] - 1):
        lo = slot_ptr[s]
        hi = slot_ptr[s + 1]
        sx = 0.0
        sn = 0.0
        if has_start:
            for p in range(hi - 1, lo - 1, -1):
                D[p] = sx - sn
                sx += ex[p]
                sn += en[p]
        else:
            for p in range(hi - 1, lo - 1, -1):
                D[p] = sx
                sx += ex[p]
        c1 = 0.0
        c2 = 0.0
        if not efron:
            for p in range(lo, hi):
                A1c[p] = c1
                A2c[p] = c2
                d = slot_d[p]
                if d > 0.0:
                    inv = 1.0 / D[p]
                    q = d * inv
                    q2 = q * inv
                    c1 += q
                    c2 += q2
                    if full:
                        Q1[p] = q
                        Q2[p] = q2
                elif full:
                    Q1[p] = 0.0
                    Q2[p] = 0.0
            continue
        for p in range(lo, hi):
            A1c[p] = c1
            A2c[p] = c2
            d = slot_d[p]
            q = 0.0
            q2 = 0.0
            r1 = 0.0
            r2 = 0.0
            t2 = 0.0
            if d > 0.0:
                Dp = D[p]
                m = slot_m[p]
                if m <= 1.0:
                    inv = 1.0 / Dp
                    q = d * inv
                    q2 = q * inv
                else:
                    wbar = d / m
                    E = ev[p]
                    for l in range(int(m)):
                        f = l / m
                        zi = 1.0 / (Dp - f * E)
                        q += zi
                        q2 += zi * zi
                        r1 += f * zi
                        r2 += f * zi * zi
                        t2 += f * f * zi * zi
                    q *= wbar
                    q2 *= wbar
                    r1 *= wbar
                    r2 *= wbar
                    t2 *= wbar
            c1 += q
            c2 += q2
            Q1[p] = q
            Q2[p] = q2
            R1[p] = r1
            R2[p] = r2
            T2[p] = t2


@njit(cache=True, nogil=True, error_model="numpy")
def loglik_terms(eta, cw, event, D, ev, slot_d, slot_m, efron):
    """sum_events c eta - sum_p wbar sum_l log Z_l (D and ev must be current)."""
    ll = 0.0
    for r in range(eta.shape[0]):
        if event[r]:
            ll += cw[r] * eta[r]
    for p in range(D.shape[0]):
        d = slot_d[p]
        if d > 0.0:
            if not efron or slot_m[p] <= 1.0:
                ll -= d * math.log(D[p])
            else:
                m = slot_m[p]
                wbar = d / m
                for l in range(int(m)):
                    ll -= wbar * math.log(D[p] - (l / m) * ev[p])
    return ll


@njit(cache=True, nogil=True, error_model="numpy")
def coordinate_sorted(indptr, indices, values, j, gx0, w, ksn, ken, evn,
                      A1c, A2c, R1, R2, T2, efron):
    """(g_j, h_j) in O(nnz_j) for right-censored rows (sorted order = descending exit slot).

    ``ksn, ken, evn``: entry slot (= the stratum's first slot), exit slot and status of
    the row of each stored non-zero (static, so the walk reads them sequentially).
    """
    a = indptr[j]
    b = indptr[j + 1]
    g = gx0
    h = 0.0
    S = 0.0
    c = 0.0
    e = 0.0
    for i in range(a, b):
        r = indices[i]
        x = values[i]
        wx = w[r] * x
        kr = ken[i]
        a1 = A1c[kr] - A1c[ksn[i]]
        g -= wx * a1
        h -= wx * x * a1
        if efron and evn[i]:
            rr = R1[kr - 1]
            g += wx * rr
            h += wx * x * rr
            e += wx
        c += wx
        same_stratum = False
        same_run = False
        if i + 1 < b:
            same_stratum = ksn[i + 1] == ksn[i]
            same_run = same_stratum and ken[i + 1] == kr
        if not same_run:
            if e != 0.0:
                p = kr - 1
                S += e * (e * T2[p] - 2.0 * c * R2[p])
                e = 0.0
            if same_stratum:
                lo = ken[i + 1]
            else:
                lo = ksn[i]
            S += c * c * (A2c[kr] - A2c[lo])
            if not same_stratum:
                c = 0.0
    return g, h + S


@njit(cache=True, nogil=True, error_model="numpy")
def coordinate_breakpoints(indptr, indices, values, j, gx0, w, ksn, ken, evn, slot_stratum, codes,
                           A1c, A2c, R1, R2, T2, efron):
    """(g_j, h_j) in O(nnz_j) for (start, stop] rows, walking the column's sorted breakpoints."""
    a = indptr[j]
    b = indptr[j + 1]
    g = gx0
    h = 0.0
    for i in range(a, b):
        r = indices[i]
        x = values[i]
        wx = w[r] * x
        a1 = A1c[ken[i]] - A1c[ksn[i]]
        g -= wx * a1
        h -= wx * x * a1
        if efron and evn[i]:
            rr = R1[ken[i] - 1]
            g += wx * rr
            h += wx * x * rr
    S = 0.0
    c = 0.0
    i = 2 * a
    end = 2 * b
    while i < end:
        code = codes[i]
        nz = code >> 1
        pos = ken[nz] if code & 1 else ksn[nz]
        # the run of breakpoints at this slot
        k = i
        e = 0.0
        while k < end:
            ck = codes[k]
            nzk = ck >> 1
            pk = ken[nzk] if ck & 1 else ksn[nzk]
            if pk != pos:
                break
            if efron and (ck & 1) and evn[nzk]:
                e += w[indices[nzk]] * values[nzk]
            k += 1
        if e != 0.0:
            p = pos - 1
            S += e * (e * T2[p] - 2.0 * c * R2[p])
        for q in range(i, k):
            cq = codes[q]
            nzq = cq >> 1
            wx = w[indices[nzq]] * values[nzq]
            if cq & 1:
                c -= wx
            else:
                c += wx
        if k < end:
            cn = codes[k]
            pn = ken[cn >> 1] if cn & 1 else ksn[cn >> 1]
            if slot_stratum[pn] == slot_stratum[pos]:
                S += c * c * (A2c[pn] - A2c[pos])
            else:
                c = 0.0
        i = k
    return g, h + S


@njit(cache=True, nogil=True, error_model="numpy")
def coordinate_scan(indptr, indices, values, j, xd, w, cw, ks, ke, event, slot_d, slot_m, slot_last, efron):
    """(g_j, h_j) by full O(N + n_slots) scans (the papers' formulation); independent of the
    cached aggregates. ``xd`` is a zero work vector of length N (restored on return)."""
    a = indptr[j]
    b = indptr[j + 1]
    for i in range(a, b):
        xd[indices[i]] = values[i]
    ns = slot_d.shape[0]
    ex0 = np.zeros(ns)
    en0 = np.zeros(ns)
    ex1 = np.zeros(ns)
    en1 = np.zeros(ns)
    ex2 = np.zeros(ns)
    en2 = np.zeros(ns)
    E0 = np.zeros(ns)
    E1 = np.zeros(ns)
    E2 = np.zeros(ns)
    g = 0.0
    for r in range(xd.shape[0]):
        wr = w[r]
        x = xd[r]
        u = wr * x
        v = u * x
        k1 = ke[r]
        k0 = ks[r]
        ex0[k1] += wr
        en0[k0] += wr
        ex1[k1] += u
        en1[k0] += u
        ex2[k1] += v
        en2[k0] += v
        if event[r]:
            g += cw[r] * x
            E0[k1 - 1] += wr
            E1[k1 - 1] += u
            E2[k1 - 1] += v
    h = 0.0
    s0 = s1 = s2 = t0 = t1 = t2 = 0.0
    for p in range(ns - 1, -1, -1):
        if slot_last[p]:
            s0 = s1 = s2 = t0 = t1 = t2 = 0.0
        d = slot_d[p]
        if d > 0.0:
            D = s0 - t0
            N1 = s1 - t1
            N2 = s2 - t2
            if not efron or slot_m[p] <= 1.0:
                q = d / D
                g -= N1 * q
                h -= N2 * q - N1 * N1 * q / D
            else:
                m = slot_m[p]
                wbar = d / m
                for l in range(int(m)):
                    f = l / m
                    Z = D - f * E0[p]
                    Z1 = N1 - f * E1[p]
                    Z2 = N2 - f * E2[p]
                    g -= wbar * Z1 / Z
                    h -= wbar * (Z2 / Z - Z1 * Z1 / (Z * Z))
        s0 += ex0[p]
        s1 += ex1[p]
        s2 += ex2[p]
        t0 += en0[p]
        t1 += en1[p]
        t2 += en2[p]
    for i in range(a, b):
        xd[indices[i]] = 0.0
    return g, h


@njit(cache=True, nogil=True, error_model="numpy")
def gradient_column(indptr, indices, values, j, gx0, w, ksn, ken, evn, A1c, R1, efron):
    """dl/dbeta_j alone in O(nnz_j) (the g of :func:`coordinate_sorted`, bit for bit)."""
    g = gx0
    for i in range(indptr[j], indptr[j + 1]):
        wx = w[indices[i]] * values[i]
        g -= wx * (A1c[ken[i]] - A1c[ksn[i]])
        if efron and evn[i]:
            g += wx * R1[ken[i] - 1]
    return g


@njit(cache=True, nogil=True, error_model="numpy")
def numerators(cols, indptr, indices, values, w, ks, ke, event, slot_last, efron, N1, E1):
    """Risk-set sums N1[p, a] = sum_{at risk at p} w x_a and event sums E1[p, a] for columns ``cols``."""
    ns = slot_last.shape[0]
    ex = np.zeros(ns)
    en = np.zeros(ns)
    for a in range(cols.shape[0]):
        j = cols[a]
        ex[:] = 0.0
        en[:] = 0.0
        for i in range(indptr[j], indptr[j + 1]):
            r = indices[i]
            wx = w[r] * values[i]
            ex[ke[r]] += wx
            en[ks[r]] += wx
            if efron and event[r]:
                E1[ke[r] - 1, a] += wx
        sx = 0.0
        sn = 0.0
        for p in range(ns - 1, -1, -1):
            if slot_last[p]:
                sx = 0.0
                sn = 0.0
            N1[p, a] = sx - sn
            sx += ex[p]
            sn += en[p]


@njit(cache=True, nogil=True, error_model="numpy")
def row_hazard_terms(w, ks, ke, event, A1c, R1, efron, out):
    """Per-row weight of the first Hessian term: w (A1c[ke] - A1c[ks]) - event w R1[ke-1]."""
    for r in range(w.shape[0]):
        v = w[r] * (A1c[ke[r]] - A1c[ks[r]])
        if efron and event[r]:
            v -= w[r] * R1[ke[r] - 1]
        out[r] = v


@njit(cache=True, nogil=True, error_model="numpy")
def hessian_vector_rows(u, w, v, ks, ke, event, slot_ptr, efron, Q2, R2, T2, U1, E1u, C, z):
    """Row weights z with ``H_AA b = X_A' z`` for ``u = X_A b`` (the dense block of
    ``CoxDatafit.hessian`` applied to b, O(N + n_slots)); ``v`` from :func:`row_hazard_terms`.

    With U1_p / E1u_p the risk-set / event sums of w u at slot p (the numerators N1 / E1
    of the "column" u) and the slot terms c = Q2 U1 - R2 E1u, e = T2 E1u - R2 U1::

        z = -v u + w (C[ke] - C[ks]) + event w e[ke-1]      (C = exclusive cumsum of c)
    """
    U1[:] = 0.0
    E1u[:] = 0.0
    C[:] = 0.0
    for r in range(u.shape[0]):  # slot sums: U1 <- w u by exit slot, C <- by entry slot
        wu = w[r] * u[r]
        U1[ke[r]] += wu
        C[ks[r]] += wu
        if efron and event[r]:
            E1u[ke[r] - 1] += wu
    for s in range(slot_ptr.shape[0] - 1):
        lo = slot_ptr[s]
        hi = slot_ptr[s + 1]
        sx = 0.0
        sn = 0.0
        for p in range(hi - 1, lo - 1, -1):  # at risk at p: exit slot > p, entry slot <= p
            ex = U1[p]
            en = C[p]
            U1[p] = sx - sn
            sx += ex
            sn += en
        c = 0.0
        for p in range(lo, hi):
            cp = Q2[p] * U1[p] - R2[p] * E1u[p]
            e = T2[p] * E1u[p] - R2[p] * U1[p]
            C[p] = c
            E1u[p] = e
            c += cp
    for r in range(u.shape[0]):
        zr = -v[r] * u[r] + w[r] * (C[ke[r]] - C[ks[r]])
        if efron and event[r]:
            zr += w[r] * E1u[ke[r] - 1]
        z[r] = zr


@njit(cache=True, nogil=True, error_model="numpy")
def weighted_cross(A, q, B, out):
    """out[a, b] += sum_p q[p] A[p, a] B[p, b] for slot-major A (ns x ma) and B (ns x mb).

    A compiled loop instead of BLAS: the operands are very tall and thin (one row per
    event time), a shape where a threaded GEMM is slow on a busy machine.
    """
    ma = A.shape[1]
    mb = B.shape[1]
    for p in range(A.shape[0]):
        qp = q[p]
        if qp == 0.0:
            continue
        for a in range(ma):
            v = qp * A[p, a]
            if v != 0.0:
                for b in range(mb):
                    out[a, b] += v * B[p, b]


# -- the compiled family contract (riskset.core.sweep) ---------------------------------
# "sparse" formulation, O(nnz_j) per coordinate:
#   data  = (indptr, indices, values, indicator, gx0, ksn, ken, evn, has_start, codes, slot_stratum,
#            slot_d, slot_m, slot_ptr, efron)
#   state = (eta, w, ex, en, ev, D, Q1, Q2, R1, R2, T2, A1c, A2c, dirty)
# ``codes`` (the column breakpoints) are read only with start times; ``dirty`` is an array
# of one flag: a move leaves the aggregates stale, the next refresh makes them current.

@njit(cache=True, nogil=True, error_model="numpy", inline="always")
def sparse_refresh(data, state):
    """The aggregates from the slot sums, O(n_slots), if a move left them stale."""
    (indptr, indices, values, indicator, gx0, ksn, ken, evn, has_start, codes, slot_stratum,
     slot_d, slot_m, slot_ptr, efron) = data
    eta, w, ex, en, ev, D, Q1, Q2, R1, R2, T2, A1c, A2c, dirty = state
    if dirty[0]:
        refresh(ex, en, ev, slot_d, slot_m, slot_ptr, has_start, efron, False, D, Q1, Q2, R1, R2, T2, A1c, A2c)
        dirty[0] = False


@njit(cache=True, nogil=True, error_model="numpy", inline="always")
def sparse_gradient(data, state, j):
    (indptr, indices, values, indicator, gx0, ksn, ken, evn, has_start, codes, slot_stratum,
     slot_d, slot_m, slot_ptr, efron) = data
    eta, w, ex, en, ev, D, Q1, Q2, R1, R2, T2, A1c, A2c, dirty = state
    return gradient_column(indptr, indices, values, j, gx0[j], w, ksn, ken, evn, A1c, R1, efron)


@njit(cache=True, nogil=True, error_model="numpy", inline="always")
def sparse_terms(data, state, j):
    """The walk over the column's non-zeros in slot order: sorted rows, or breakpoints with start times."""
    (indptr, indices, values, indicator, gx0, ksn, ken, evn, has_start, codes, slot_stratum,
     slot_d, slot_m, slot_ptr, efron) = data
    eta, w, ex, en, ev, D, Q1, Q2, R1, R2, T2, A1c, A2c, dirty = state
    if has_start:
        return coordinate_breakpoints(indptr, indices, values, j, gx0[j], w, ksn, ken, evn, slot_stratum, codes,
                                      A1c, A2c, R1, R2, T2, efron)
    return coordinate_sorted(indptr, indices, values, j, gx0[j], w, ksn, ken, evn, A1c, A2c, R1, R2, T2, efron)


@njit(cache=True, nogil=True, error_model="numpy", inline="always")
def sparse_move(data, state, j, delta):
    (indptr, indices, values, indicator, gx0, ksn, ken, evn, has_start, codes, slot_stratum,
     slot_d, slot_m, slot_ptr, efron) = data
    eta, w, ex, en, ev, D, Q1, Q2, R1, R2, T2, A1c, A2c, dirty = state
    move_sparse(indptr, indices, values, indicator, j, delta, eta, w, ksn, ken, evn, has_start, ex, en, ev)
    dirty[0] = True


SPARSE_KERNELS = compile_family("cox_sparse", sparse_refresh, sparse_gradient, sparse_terms, sparse_move)


# "scan" formulation, O(N + n_slots) per coordinate (the scan costs the same with or
# without h_j, so no separate screen):
#   data  = (indptr, indices, values, cw, ks, ke, event, slot_d, slot_m, slot_last, efron)
#   state = (eta, w, xd)

@njit(cache=True, nogil=True, error_model="numpy", inline="always")
def scan_refresh(data, state):
    """Nothing to refresh: every scan starts from w alone."""


@njit(cache=True, nogil=True, error_model="numpy", inline="always")
def scan_terms(data, state, j):
    indptr, indices, values, cw, ks, ke, event, slot_d, slot_m, slot_last, efron = data
    eta, w, xd = state
    return coordinate_scan(indptr, indices, values, j, xd, w, cw, ks, ke, event, slot_d, slot_m, slot_last, efron)


@njit(cache=True, nogil=True, error_model="numpy", inline="always")
def scan_move(data, state, j, delta):
    indptr, indices, values, cw, ks, ke, event, slot_d, slot_m, slot_last, efron = data
    eta, w, xd = state
    move_scan(indptr, indices, values, j, delta, eta, cw, w)


SCAN_KERNELS = compile_family("cox_scan", scan_refresh, None, scan_terms, scan_move)
