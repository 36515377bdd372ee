"""The Cox Hessian: per-row hazard terms, Hessian-vector products and exact blocks from the
rows of a set of columns. Notation: :mod:`riskset.kernels.cpu.cox`."""

import numpy as np
from numba import njit, prange

from riskset.kernels.cpu.cox_rows import piece_tasks, task_rows


@njit(cache=True, nogil=True, error_model="numpy", parallel=True)
def row_hazard_terms(w, rows, slots, sums, out):
    """Per-row weight of the first Hessian term: w (A1c[ke] - A1c[ks]) - event w R1[ke-1]
    (without start times A1c[ks] is 0: ks is the stratum's first slot, not read); over the
    pieces of rows (:func:`~riskset.kernels.cpu.cox_rows.row_pieces`) in parallel."""
    ks, ke, event, piece_ptr = rows.ks, rows.ke, rows.event, rows.piece_ptr
    A1c, R1, efron, has_start = sums.A1c, sums.R1, slots.efron, slots.has_start
    for c in prange(piece_tasks(piece_ptr)):
        lo, hi = task_rows(piece_ptr, c)
        for r in range(lo, hi):
            v = w[r] * (A1c[ke[r]] - A1c[ks[r]]) if has_start else w[r] * A1c[ke[r]]
            if efron and event[r]:
                v -= w[r] * R1[ke[r] - 1]
            out[r] = v


@njit(cache=True, nogil=True, error_model="numpy", parallel=True)
def hessian_vector_rows(u, w, v, rows, slots, sums, U1, E1u, C, z):
    """Row weights z with ``H_AA b = X_A' z`` for ``u = X_A b`` (the dense block of
    ``CoxDatafit.hessian`` applied to b, O(N + n_slots)); ``v`` from :func:`row_hazard_terms`.

    With U1_p / E1u_p the risk-set / event sums of w u at slot p (the numerators N1 / E1
    of the "column" u) and the slot terms c = Q2 U1 - R2 E1u, e = T2 E1u - R2 U1::

        z = -v u + w (C[ke] - C[ks]) + event w e[ke-1]      (C = exclusive cumsum of c)

    Without start times ``ks`` is not read: every row enters at its stratum's first slot,
    where C is 0, and no entry leaves a risk set (one pass over the rows less). The passes
    over rows run over the pieces of rows (:func:`~riskset.kernels.cpu.cox_rows.row_pieces`) in parallel (the sums by
    exit slot too: a slot's rows lie in one piece), the scans over slots in one thread
    (blocked parallel scans, as :func:`~riskset.kernels.cpu.cox_aggregates.refresh_blocked`'s, were no faster here).
    """
    ks, ke, event, piece_ptr = rows.ks, rows.ke, rows.event, rows.piece_ptr
    slot_ptr, efron, has_start = slots.slot_ptr, slots.efron, slots.has_start
    Q2, R2, T2 = sums.Q2, sums.R2, sums.T2
    U1[:] = 0.0
    E1u[:] = 0.0
    C[:] = 0.0
    if has_start:
        for r in range(u.shape[0]):  # C <- w u by entry slot
            C[ks[r]] += w[r] * u[r]
    for c in prange(piece_tasks(piece_ptr)):  # slot sums: U1 <- w u by exit slot, E1u <- events' by theirs
        lo, hi = task_rows(piece_ptr, c)
        for r in range(lo, hi):
            wu = w[r] * u[r]
            U1[ke[r]] += wu
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
    for c in prange(piece_tasks(piece_ptr)):
        lo, hi = task_rows(piece_ptr, c)
        for r in range(lo, hi):
            zr = -v[r] * u[r] + (w[r] * (C[ke[r]] - C[ks[r]]) if has_start else w[r] * C[ke[r]])
            if efron and event[r]:
                zr += w[r] * E1u[ke[r] - 1]
            z[r] = zr


@njit(cache=True, nogil=True, error_model="numpy", inline="always")
def accumulate_row(rowptr, rcol, rval, r, weight, acc, listed, touched, n_touched):
    """acc += weight x_r, a sparse accumulator whose touched positions are listed; returns
    the new count of listed positions."""
    for i in range(rowptr[r], rowptr[r + 1]):
        a = rcol[i]
        if not listed[a]:
            listed[a] = True
            touched[n_touched] = a
            n_touched += 1
        acc[a] += weight * rval[i]
    return n_touched


@njit(cache=True, nogil=True, error_model="numpy", inline="always")
def add_outer(H, scale, acc, touched, n_touched, S, touched_s, n_touched_s):
    """H[a, b] += scale acc[a] S[b] for the listed positions a of ``acc`` and b of ``S``."""
    for t in range(n_touched):
        a = touched[t]
        sa = scale * acc[a]
        for u in range(n_touched_s):
            b = touched_s[u]
            H[a, b] += sa * S[b]


@njit(cache=True, nogil=True, error_model="numpy", inline="always")
def add_inner(H, scale, acc, touched, n_touched):
    """H[a, b] += scale acc[a] acc[b] for the listed positions a, b."""
    for t in range(n_touched):
        a = touched[t]
        sa = scale * acc[a]
        for u in range(n_touched):
            b = touched[u]
            H[a, b] += sa * acc[b]


@njit(cache=True, nogil=True, error_model="numpy", inline="always")
def add_listed(dst, listed, touched, n_touched, scale, acc, acc_touched, n_acc):
    """dst += scale acc over the listed positions of ``acc``, listing them in ``dst``'s
    accumulator; returns its new count."""
    for u in range(n_acc):
        a = acc_touched[u]
        if not listed[a]:
            listed[a] = True
            touched[n_touched] = a
            n_touched += 1
        dst[a] += scale * acc[a]
    return n_touched


@njit(cache=True, nogil=True, error_model="numpy", inline="always")
def clear_listed(acc, listed, touched, n_touched):
    for t in range(n_touched):
        a = touched[t]
        acc[a] = 0.0
        listed[a] = False


@njit(cache=True, nogil=True, error_model="numpy", inline="always")
def add_row_square(H, rowptr, rcol, rval, r, scale):
    """H += scale x_r x_r' over the non-zeros of row r."""
    for p in range(rowptr[r], rowptr[r + 1]):
        sx = scale * rval[p]
        a = rcol[p]
        for q in range(rowptr[r], rowptr[r + 1]):
            H[a, rcol[q]] += sx * rval[q]


@njit(cache=True, nogil=True, error_model="numpy", inline="always")
def fold_halves(H):
    """H <- H + H' (the block walks accumulate half of each symmetric term)."""
    for a in range(H.shape[0]):
        H[a, a] *= 2.0
        for b in range(a + 1, H.shape[0]):
            h = H[a, b] + H[b, a]
            H[a, b] = h
            H[b, a] = h


@njit(cache=True, nogil=True, error_model="numpy")
def hessian_block(rowptr, rcol, rval, w, v, rows, entry, slots, sums, H):
    """The dense Hessian block of ``CoxDatafit.hessian`` on the columns of the row-major
    ``(rowptr, rcol, rval)`` (:meth:`~riskset.core.products.column_products.ColumnProducts.rows_of`)
    in O(nnz x |A| + N), never forming the risk-set sums N1 per slot and column (an n_slots x |A| matrix).

    H = -X' diag(v) X + sum_p [Q2 N1 N1' - R2 (N1 E1' + E1 N1') + T2 E1 E1']_p. Risk-set sums
    are suffix sums over *points* in (stratum, slot descending) order: every row is a point
    +w x at its exit slot ke, and one with a start time after its stratum's first slot is
    also a point -w x at its entry slot ks (``entry``: those rows in that order), so
    ``N1_p = sum of the points of slot > p``. For two points i, j of one stratum the slots p
    with both counted are those below min(slot_i, slot_j), hence, with A2c[k] = sum of Q2
    over the stratum's slots below k::

        sum_p Q2_p N1_p N1_p' = sum_{i, j} v_i v_j' A2c[min(slot_i, slot_j)]
                              = sum_groups A2c[k] (R S' + S R' - R R')

    over the groups of points of one slot k in walk order, R the group's sum, S the running
    sum (after the group: N1_{k-1}). The Efron terms of slot k - 1 pair S with E1_{k-1}, the
    group's event rows. Each group costs (its non-zero columns) x |A|.
    """
    ks, ke, event = rows.ks, rows.ke, rows.event
    slot_stratum, efron = slots.slot_stratum, slots.efron
    A2c, R2, T2 = sums.A2c, sums.R2, sums.T2
    m = H.shape[0]
    n = rowptr.shape[0] - 1
    n_entry = entry.shape[0]
    S = np.zeros(m)
    R = np.zeros(m)
    E = np.zeros(m)
    in_s = np.zeros(m, np.bool_)
    in_r = np.zeros(m, np.bool_)
    in_e = np.zeros(m, np.bool_)
    touched_s = np.empty(m, np.int64)
    touched_r = np.empty(m, np.int64)
    touched_e = np.empty(m, np.int64)
    ns = 0
    H[:, :] = 0.0
    i = 0
    t = 0
    stratum = -1
    while True:
        while i < n and rowptr[i] == rowptr[i + 1]:
            i += 1
        while t < n_entry and rowptr[entry[t]] == rowptr[entry[t] + 1]:
            t += 1
        if i == n and t == n_entry:
            break
        if t == n_entry:
            key = ke[i]
        elif i == n:
            key = ks[entry[t]]
        else:  # the next point in (stratum ascending, slot descending) order
            k1 = ke[i]
            k2 = ks[entry[t]]
            s1 = slot_stratum[k1]
            s2 = slot_stratum[k2]
            key = k1 if s1 < s2 or (s1 == s2 and k1 >= k2) else k2
        if slot_stratum[key] != stratum:  # S restarts (and stays sparse within small strata)
            stratum = slot_stratum[key]
            clear_listed(S, in_s, touched_s, ns)
            ns = 0
        nr = 0
        ne = 0
        while i < n and ke[i] == key:
            wr = w[i]
            nr = accumulate_row(rowptr, rcol, rval, i, wr, R, in_r, touched_r, nr)
            if efron and event[i]:
                ne = accumulate_row(rowptr, rcol, rval, i, wr, E, in_e, touched_e, ne)
            add_row_square(H, rowptr, rcol, rval, i, -0.5 * v[i])  # -X' diag(v) X, halved
            i += 1
        while t < n_entry and ks[entry[t]] == key:
            r = entry[t]
            nr = accumulate_row(rowptr, rcol, rval, r, -w[r], R, in_r, touched_r, nr)
            t += 1
        ns = add_listed(S, in_s, touched_s, ns, 1.0, R, touched_r, nr)
        c = A2c[key]  # halves of the terms of H + H' (R S' + S R' - R R' -> R S' - R R' / 2)
        if c != 0.0:
            add_outer(H, c, R, touched_r, nr, S, touched_s, ns)
            add_inner(H, -0.5 * c, R, touched_r, nr)
        if ne > 0:
            add_outer(H, -R2[key - 1], E, touched_e, ne, S, touched_s, ns)
            add_inner(H, 0.5 * T2[key - 1], E, touched_e, ne)
        clear_listed(R, in_r, touched_r, nr)
        clear_listed(E, in_e, touched_e, ne)
    fold_halves(H)
