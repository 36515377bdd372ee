"""Numba kernels of the Fine-Gray subdistribution hazards model (cmprsk::crr conventions).

Notation: rows sorted by time descending. The distinct times of events of interest,
descending, are the *event slots* ``k = 0 .. K-1`` (``te_0 > te_1 > ...``) with
weighted event counts ``d_k`` and ``Gev_k = G(te_k-)`` (left limit of the censoring
Kaplan-Meier). Row ``r`` gets the static slot ``s_r = #{k: te_k > T_r}`` in ``0..K``:
it is in the ordinary risk set of the event slots ``k >= s_r`` (``te_k <= T_r``), and,
if it had a competing event, in the risk sets of the earlier slots ``k < s_r``
(``te_k > T_r``) with weight ``Gev_k / G(T_r-)``. ``cinv_r = 1 / G(T_r-)`` for
competing rows and 0 for the others (one array read tells both).
``w = c exp(eta - shift)`` with case weight ``c`` and ``shift`` the largest eta of a row of
positive weight (:func:`sync`; every sum below is a ratio invariant to it).

Per slot sums kept current by ``move`` in O(nnz_j)::

    W[s]  = sum_{s_r = s} w_r            Wc[s] = sum_{s_r = s, competing} w_r cinv_r

Aggregates (``refresh``, O(K): one forward and one fused backward pass, i.e. the
papers' forward + backward scans, but over event slots instead of rows)::

    D_k = sum_{s <= k} W[s] + Gev_k sum_{s > k} Wc[s]
    A1[s] = sum_{k >= s} d/D      B1[s] = sum_{k < s} d Gev/D = SB[0] - SB[s]
    A2[s], A2G[s], A2GG[s] = sum_{k >= s} d/D^2, d Gev/D^2, d Gev^2/D^2     (A*[K] = 0)

(the state array named ``B1`` holds the suffix sums ``SB``).

Coordinate j in O(nnz_j) (docs/math.md section 3, with tie groups replaced by event slots)::

    g_j = sum_events c x - sum_nz w x [A1[s] + cinv B1[s]]
    h_j = - sum_nz w x^2 [A1[s] + cinv B1[s]] + S_j
    S_j = E^2 (A2GG[0] - A2GG[s_1]) + sum_runs c^2 dA2 + 2 c e dA2G + e^2 dA2GG

with ``E = sum_nz,comp w x cinv``, ``c`` the running sum of ``w x`` and ``e = E -``
running sum of competing ``w x cinv`` over the non-zeros walked so far; the
differences are taken between the slot of the current run of non-zeros and the next
one (``K`` after the last). The walk and the move are in :mod:`riskset.kernels.cpu.fine_gray_walks`
(one pass by chunks of runs, in parallel on long columns), with the scan formulation:
``coordinate_scan`` is the papers' O(N) formulation, one pass over all rows accumulating
(w, wx, wx^2) by slot for the ordinary and the competing part, then a backward scan of the
competing part and a forward scan of the ordinary part fused with the reduction to (g_j, h_j).

Each formulation is a compiled family (:mod:`riskset.core.sweep`): :data:`KERNELS`
maps ``"sparse"`` and ``"scan"`` to their :class:`~riskset.core.sweep.CompiledFamily`.
"""
import math
from typing import NamedTuple

import numpy as np
from numba import njit, prange

from riskset.core.sweep import compile_family
from riskset.kernels.cpu.cox_hessian import (accumulate_row, add_inner, add_listed, add_outer, add_row_square,
                                             clear_listed, fold_halves)
from riskset.kernels.cpu.cox_rows import piece_tasks, row_weights, stratum_shifts, task_rows
from riskset.kernels.cpu.cox_walks import move_scan
from riskset.kernels.cpu.fine_gray_walks import coordinate_scan, coordinate_sparse, move_sparse


# -- the records the kernels read (built by FineGrayDatafit.kernel_data and .new_state) -----------

class Data(NamedTuple):
    """The static arrays of both formulations."""

    indptr: np.ndarray       # the design (:class:`riskset.core.design.CompactCSC`)
    indices: np.ndarray
    values: np.ndarray
    value_shift: np.ndarray
    indicator: np.ndarray
    gx0: np.ndarray          # per column: sum over events of interest of c x
    cw: np.ndarray           # per row: case weight, event of interest, static slot s_r, cinv_r
    event: np.ndarray
    slot: np.ndarray
    cinv: np.ndarray
    slot_d: np.ndarray       # per event slot: d_k, Gev_k
    Gev: np.ndarray
    parallel: bool           # more than one kernel thread: long columns walk their chunks in parallel
    walk_chunk: int          # non-zeros per chunk of a column's walk (cox_walks.walk_chunks)


class SparseState(NamedTuple):
    """What a sparse sweep writes: eta, w, the slot sums, the aggregates, and ``dirty[0]``: a
    move left the aggregates stale."""

    eta: np.ndarray
    w: np.ndarray
    W: np.ndarray
    Wc: np.ndarray
    D: np.ndarray
    A1: np.ndarray
    B1: np.ndarray           # the suffix sums SB (module docstring)
    A2: np.ndarray
    A2G: np.ndarray
    A2GG: np.ndarray
    dirty: np.ndarray


class ScanState(NamedTuple):
    """What a scan sweep writes: eta, w, the column scattered to rows and the scan's work rows."""

    eta: np.ndarray
    w: np.ndarray
    xd: np.ndarray
    work: np.ndarray


@njit(cache=True, nogil=True, error_model="numpy", parallel=True)
def sync(eta, cw, slot, cinv, piece_ptr, piece_stratum, shift, w, W, Wc):
    """w = c exp(eta - shift), shift the largest eta of a row of positive weight (the Cox
    kernels' :func:`~riskset.kernels.cpu.cox_rows.stratum_shifts` and ``row_weights`` over the
    pieces of one stratum), and the slot sums W, Wc from scratch (O(N)), over the pieces in
    parallel: a slot's rows lie in one piece (``row_pieces`` cut at changes of slot), whose
    task adds them in row order, as one pass would."""
    stratum_shifts(eta, cw, piece_ptr, piece_stratum, shift)
    row_weights(eta, cw, piece_ptr, piece_stratum, shift, w)
    W[:] = 0.0
    Wc[:] = 0.0
    for c in prange(piece_tasks(piece_ptr)):
        lo, hi = task_rows(piece_ptr, c)
        for r in range(lo, hi):
            wr = w[r]
            s = slot[r]
            W[s] += wr
            ig = cinv[r]
            if ig != 0.0:
                Wc[s] += wr * ig


@njit(cache=True, nogil=True, error_model="numpy")
def refresh(W, Wc, slot_d, Gev, D, A1, SB, A2, A2G, A2GG):
    """Denominators and cumulative aggregates from the slot sums, O(K) in two passes.

    Forward pass: prefix sums of W (parked in D). Backward pass, fused: suffix sums of
    Wc, D, one division per slot, and every suffix aggregate. ``B1`` is a prefix sum; it
    is kept as the suffix ``SB[s] = sum_{k >= s} d Gev / D`` and read as
    ``B1[s] = SB[0] - SB[s]``: the subtraction loses at most a factor SB[0] / B1[s] of
    relative accuracy, small because B1[s] (s >= 1) holds the terms of the latest event
    times, the smallest risk sets, which are the largest terms.
    """
    K = slot_d.shape[0]
    pre = 0.0
    for k in range(K):
        pre += W[k]
        D[k] = pre
    suf = 0.0
    a1 = 0.0
    a2 = 0.0
    a2g = 0.0
    a2gg = 0.0
    sb = 0.0
    A1[K] = 0.0
    A2[K] = 0.0
    A2G[K] = 0.0
    A2GG[K] = 0.0
    SB[K] = 0.0
    for k in range(K - 1, -1, -1):
        suf += Wc[k + 1]
        g = Gev[k]
        Dk = D[k] + g * suf
        D[k] = Dk
        d = slot_d[k]
        if d > 0.0:
            inv = 1.0 / Dk
            q = d * inv
            q2 = q * inv
            a1 += q
            sb += q * g
            a2 += q2
            q2 *= g
            a2g += q2
            a2gg += q2 * g
        A1[k] = a1
        SB[k] = sb
        A2[k] = a2
        A2G[k] = a2g
        A2GG[k] = a2gg


#: Rows, or event slots, per block of the log-likelihood's partial sums (:func:`loglik_terms`).
LOGLIK_BLOCK = 1 << 14


@njit(cache=True, nogil=True, error_model="numpy", parallel=True)
def loglik_terms(eta, cw, event, shift, slot_d, D):
    """sum_events c (eta - shift) - sum_k d_k log D_k (D must be current, from weights with
    the same shift, which cancels: the event weights sum to the slots' d): partial sums over
    fixed blocks of :data:`LOGLIK_BLOCK` rows, then of slots, in parallel, added in block
    order (the same bits on any number of threads)."""
    n = eta.shape[0]
    K = slot_d.shape[0]
    rows = np.zeros((n + LOGLIK_BLOCK - 1) // LOGLIK_BLOCK)
    slots = np.zeros((K + LOGLIK_BLOCK - 1) // LOGLIK_BLOCK)
    for b in prange(rows.shape[0]):
        t = 0.0
        for r in range(b * LOGLIK_BLOCK, min(n, (b + 1) * LOGLIK_BLOCK)):  # no branch: vectorized
            t += (cw[r] * event[r]) * (eta[r] - shift)
        rows[b] = t
    for b in prange(slots.shape[0]):
        t = 0.0
        for k in range(b * LOGLIK_BLOCK, min(K, (b + 1) * LOGLIK_BLOCK)):
            d = slot_d[k]
            if d > 0.0:  # a slot without weight may have D = 0
                t -= d * math.log(D[k])
        slots[b] = t
    ll = 0.0
    for b in range(rows.shape[0]):
        ll += rows[b]
    for b in range(slots.shape[0]):
        ll += slots[b]
    return ll


@njit(cache=True, nogil=True, error_model="numpy")
def event_with_company(slot, event, competing, cw, n_slots):
    """Whether some event of interest of positive weight has another row of positive weight in
    its risk set: at event slot k, the rows with s_r <= k and the competing rows with s_r > k
    (one pass over the rows, one over the slots)."""
    ordinary = np.zeros(n_slots + 1, np.int64)  # positive rows by slot, then their prefix sums
    later = np.zeros(n_slots + 2, np.int64)     # positive competing rows by slot, then suffix sums
    for r in range(slot.shape[0]):
        if cw[r] > 0.0:
            ordinary[slot[r]] += 1
            if competing[r] == 1:
                later[slot[r]] += 1
    for k in range(1, n_slots + 1):
        ordinary[k] += ordinary[k - 1]
    for k in range(n_slots - 1, -1, -1):
        later[k] += later[k + 1]
    for r in range(slot.shape[0]):
        if event[r] == 1 and cw[r] > 0.0 and ordinary[slot[r]] + later[slot[r] + 1] >= 2:
            return True
    return False


@njit(cache=True, nogil=True, error_model="numpy", parallel=True)
def row_terms(w, slot, cinv, A1, B1, out):
    """Per-row weight of the first Hessian term: w [A1[s] + cinv B1[s]]."""
    sb0 = B1[0]
    for r in prange(w.shape[0]):
        s = slot[r]
        br = A1[s]
        ig = cinv[r]
        if ig != 0.0:
            br += (sb0 - B1[s]) * ig
        out[r] = w[r] * br


@njit(cache=True, nogil=True, error_model="numpy")
def numerators(cols, indptr, indices, values, value_shift, w, slot, cinv, Gev, N1):
    """N1[k, a] = sum over the risk set of slot k of (weighted) w x_a, for columns ``cols``."""
    K = Gev.shape[0]
    ex = np.zeros(K + 1)
    ec = np.zeros(K + 1)
    for a in range(cols.shape[0]):
        j = cols[a]
        ex[:] = 0.0
        ec[:] = 0.0
        vs = value_shift[j]
        for i in range(indptr[j], indptr[j + 1]):
            r = indices[i]
            wx = w[r] * values[i + vs]
            s = slot[r]
            ex[s] += wx
            ig = cinv[r]
            if ig != 0.0:
                ec[s] += wx * ig
        suf = 0.0
        for k in range(K - 1, -1, -1):
            suf += ec[k + 1]
            N1[k, a] = Gev[k] * suf
        pre = 0.0
        for k in range(K):
            pre += ex[k]
            N1[k, a] += pre


#: Rows per block of the blocked Hessian walk (:func:`hessian_block`), and most blocks; each
#: block keeps an |A| x |A| matrix, at most :data:`HESSIAN_BLOCKS_BYTES` of them in all.
HESSIAN_BLOCK_ROWS = 1 << 14
HESSIAN_MAX_BLOCKS = 8
HESSIAN_BLOCKS_BYTES = 64 << 20


def hessian_blocks(n_rows: int, m: int) -> int:
    """How many row blocks :func:`hessian_block` walks for N rows and |A| = m columns: a
    function of the shape, never of the threads (the same bits on 1 or 16 threads).

    >>> hessian_blocks(100_000, 88), hessian_blocks(10_000, 88), hessian_blocks(10**6, 4000)
    (6, 1, 1)
    """
    return int(max(1, min(HESSIAN_MAX_BLOCKS, n_rows // HESSIAN_BLOCK_ROWS, HESSIAN_BLOCKS_BYTES // (8 * m * m + 1))))


@njit(cache=True, nogil=True, error_model="numpy")
def hessian_block(rowptr, rcol, rval, w, v, slot, cinv, A2, A2G, A2GG, n_blocks, H):
    """The dense block of ``FineGrayDatafit.hessian`` on the columns of the row-major
    ``(rowptr, rcol, rval)`` (:meth:`~riskset.core.products.column_products.ColumnProducts.rows_of`) in
    O(nnz x |A| + N), never forming the risk-set sums N1 per slot and column.

    H = -X' diag(v) X + sum_k q2_k N1_k N1_k' (:func:`hessian_vector_rows`) and
    sum_k q2_k N1_k N1_k' = sum_{i, j} f(i, j) u_i u_j' over pairs of rows (u = w x), where
    for s_i <= s_j (the membership a_kr summed over the slots k)::

        f(i, j) = A2[s_j] + cinv_j (A2G[s_i] - A2G[s_j]) + cinv_i cinv_j (A2GG[0] - A2GG[s_i])

    Rows come in slot order (s ascending), so a walk over the groups of rows of one slot s
    with the prefix sums of the earlier groups P = sum u, Q = sum (A2G[s_i] u + cinv_i
    (A2GG[0] - A2GG[s_i]) u) adds, per group with sums R = sum u and Rc = sum cinv u,
    ``A2[s] R P' + Rc (Q - A2G[s] P)'`` (its pairs with earlier rows) and
    ``(A2[s] R R' + (A2GG[0] - A2GG[s]) Rc Rc') / 2`` (its pairs within), half of H + H'.

    The rows are walked in ``n_blocks`` blocks (:func:`hessian_blocks`) of whole slot groups,
    in parallel (:func:`walk_blocks`): each block's walk starts with P = Q = 0, and the
    terms of the prefix sums P0, Q0 of the blocks before it are added afterwards as outer
    products, ``SA P0' + SC Q0' - SG P0'`` with SA, SC, SG the block's sums of A2[s] R,
    Rc and A2G[s] Rc over its groups.
    """
    m = H.shape[0]
    n = rowptr.shape[0] - 1
    bounds = group_bounds(slot, n, n_blocks)
    nb = bounds.shape[0] - 1
    if nb == 1:
        sums = np.zeros((5, m))
        walk_rows(rowptr, rcol, rval, w, v, slot, cinv, A2, A2G, A2GG, 0, n, H, sums)
        fold_halves(H)
        return
    parts = np.zeros((nb, m, m))
    sums = np.zeros((nb, 5, m))
    walk_blocks(rowptr, rcol, rval, w, v, slot, cinv, A2, A2G, A2GG, bounds, parts, sums)
    H[:, :] = 0.0
    P0 = np.zeros(m)
    Q0 = np.zeros(m)
    for b in range(nb):
        SA, SC, SG, dP, dQ = sums[b, 0], sums[b, 1], sums[b, 2], sums[b, 3], sums[b, 4]
        for a in range(m):
            for c in range(m):
                H[a, c] += parts[b, a, c] + SA[a] * P0[c] + SC[a] * Q0[c] - SG[a] * P0[c]
        P0 += dP
        Q0 += dQ
    fold_halves(H)


@njit(cache=True, nogil=True, error_model="numpy")
def group_bounds(slot, n, n_blocks):
    """Boundaries of ``n_blocks`` blocks of rows 0 .. n-1, each moved forward to the start of
    a slot group (rows come in slot order): fixed by the data."""
    out = np.empty(n_blocks + 1, np.int64)
    out[0] = 0
    k = 1
    for b in range(1, n_blocks):
        r = max(b * n // n_blocks, out[k - 1] + 1)
        while r < n and slot[r] == slot[r - 1]:
            r += 1
        if r < n:
            out[k] = r
            k += 1
    out[k] = n
    return out[:k + 1]


@njit(cache=True, nogil=True, parallel=True, error_model="numpy")
def walk_blocks(rowptr, rcol, rval, w, v, slot, cinv, A2, A2G, A2GG, bounds, parts, sums):
    """:func:`walk_rows` of each block ``bounds[b] .. bounds[b + 1]`` into ``parts[b]`` and
    ``sums[b]``, the blocks on all threads."""
    for b in prange(bounds.shape[0] - 1):
        walk_rows(rowptr, rcol, rval, w, v, slot, cinv, A2, A2G, A2GG, bounds[b], bounds[b + 1], parts[b], sums[b])


@njit(cache=True, nogil=True, error_model="numpy")
def walk_rows(rowptr, rcol, rval, w, v, slot, cinv, A2, A2G, A2GG, lo, hi, H, sums):
    """Half of the Hessian terms of the slot groups of rows lo .. hi-1 into ``H`` (zeroed
    first), with P = Q = 0 at ``lo`` (:func:`hessian_block`); ``sums`` = (SA, SC, SG, P, Q)
    at ``hi``: the sums over the groups of A2[s] R, Rc and A2G[s] Rc, and the running sums."""
    m = H.shape[0]
    SA, SC, SG, P, Q = sums[0], sums[1], sums[2], sums[3], sums[4]
    V = np.zeros(m)
    R = np.zeros(m)
    Rc = np.zeros(m)
    in_p = np.zeros(m, np.bool_)
    in_r = np.zeros(m, np.bool_)
    in_c = np.zeros(m, np.bool_)
    touched_p = np.empty(m, np.int64)
    touched_r = np.empty(m, np.int64)
    touched_c = np.empty(m, np.int64)
    n_p = 0
    gg0 = A2GG[0]
    H[:, :] = 0.0
    i = lo
    while True:
        while i < hi and rowptr[i] == rowptr[i + 1]:
            i += 1
        if i == hi:
            break
        s = slot[i]
        nr = 0
        nc = 0
        while i < hi and slot[i] == s:
            nr = accumulate_row(rowptr, rcol, rval, i, w[i], R, in_r, touched_r, nr)
            if cinv[i] != 0.0:
                nc = accumulate_row(rowptr, rcol, rval, i, w[i] * cinv[i], Rc, in_c, touched_c, nc)
            add_row_square(H, rowptr, rcol, rval, i, -0.5 * v[i])  # -X' diag(v) X, halved
            i += 1
        add_outer(H, A2[s], R, touched_r, nr, P, touched_p, n_p)
        add_inner(H, 0.5 * A2[s], R, touched_r, nr)
        g = A2G[s]
        gg = gg0 - A2GG[s]
        for u in range(nr):
            a = touched_r[u]
            SA[a] += A2[s] * R[a]
        if nc > 0:
            for u in range(n_p):
                b = touched_p[u]
                V[b] = Q[b] - g * P[b]
            add_outer(H, 1.0, Rc, touched_c, nc, V, touched_p, n_p)
            add_inner(H, 0.5 * gg, Rc, touched_c, nc)
            for u in range(nc):
                a = touched_c[u]
                SC[a] += Rc[a]
                SG[a] += g * Rc[a]
        n_p = add_listed(P, in_p, touched_p, n_p, 1.0, R, touched_r, nr)
        for u in range(nr):  # Q shares P's list (Rc's positions are R's)
            a = touched_r[u]
            Q[a] += g * R[a]
        for u in range(nc):
            a = touched_c[u]
            Q[a] += gg * Rc[a]
        clear_listed(R, in_r, touched_r, nr)
        clear_listed(Rc, in_c, touched_c, nc)


@njit(cache=True, nogil=True, error_model="numpy", parallel=True)
def hessian_vector_rows(u, w, v, slot, cinv, Gev, q2, piece_ptr, U, Uc, z):
    """Row weights z with ``H_AA b = X_A' z`` for ``u = X_A b``: the dense block of
    ``FineGrayDatafit.hessian`` applied to b in O(N + K); ``v`` from :func:`row_terms`,
    ``q2 = d / D^2`` per slot, ``U`` / ``Uc`` scratch of length K + 1. The passes over rows
    run over the pieces ``piece_ptr`` in parallel (as :func:`sync`: the same bits).

    With the risk-set membership ``a_kr = [s_r <= k] + [s_r > k] cinv_r Gev_k`` (D_k =
    sum_r a_kr w_r, G held at the data's censoring Kaplan-Meier), the Hessian of
    ``l = sum c eta - sum_k d_k log D_k`` (docs/math.md section 2) is::

        H = -X' diag(v) X + sum_k q2_k N1_k N1_k',   N1_k = sum_r a_kr w_r x_r,

    so, with the risk-set sums of the "column" u, ``U_k = sum_r a_kr w_r u_r``::

        z_r = -v_r u_r + w_r sum_k a_kr q2_k U_k
            = -v_r u_r + w_r (C1[s_r] + cinv_r C2[s_r]),
        C1[s] = sum_{k >= s} q2_k U_k,   C2[s] = sum_{k < s} Gev_k q2_k U_k.
    """
    K = Gev.shape[0]
    U[:] = 0.0
    Uc[:] = 0.0
    for c in prange(piece_tasks(piece_ptr)):  # slot sums of w u (ordinary) and w u cinv (competing)
        lo, hi = task_rows(piece_ptr, c)
        for r in range(lo, hi):
            wu = w[r] * u[r]
            s = slot[r]
            U[s] += wu
            ig = cinv[r]
            if ig != 0.0:
                Uc[s] += wu * ig
    suf = 0.0  # U_k = sum_{s <= k} U[s] + Gev_k sum_{s > k} Uc[s]; U[k] <- q2_k U_k
    for k in range(K - 1, -1, -1):
        suf += Uc[k + 1]
        Uc[k + 1] = suf
    pre = 0.0  # and, in the same pass, Uc[s] <- C2[s] (prefix; Uc[k] is read at k - 1)
    c2 = 0.0
    for k in range(K):
        pre += U[k]
        uk = q2[k] * (pre + Gev[k] * Uc[k + 1])
        U[k] = uk
        Uc[k] = c2
        c2 += Gev[k] * uk
    Uc[K] = c2
    c1 = 0.0  # U[s] <- C1[s] (suffix)
    U[K] = 0.0
    for k in range(K - 1, -1, -1):
        c1 += U[k]
        U[k] = c1
    for r in prange(u.shape[0]):
        s = slot[r]
        zr = -v[r] * u[r] + w[r] * U[s]
        ig = cinv[r]
        if ig != 0.0:
            zr += w[r] * ig * Uc[s]
        z[r] = zr


# -- the compiled family contract (riskset.core.sweep), one family per formulation --------------

@njit(cache=True, nogil=True, error_model="numpy", inline="always")
def sparse_refresh(data, state):
    """The aggregates from the slot sums, if a move left them stale (``dirty[0]``)."""
    s = state
    if s.dirty[0]:
        refresh(s.W, s.Wc, data.slot_d, data.Gev, s.D, s.A1, s.B1, s.A2, s.A2G, s.A2GG)
        s.dirty[0] = False


@njit(cache=True, nogil=True, error_model="numpy", inline="always")
def sparse_gradient(data, state, j):
    return coordinate_sparse(data, state, j, True)[0]


@njit(cache=True, nogil=True, error_model="numpy", inline="always")
def sparse_terms(data, state, j):
    return coordinate_sparse(data, state, j, False)


@njit(cache=True, nogil=True, error_model="numpy", inline="always")
def sparse_move(data, state, j, delta):
    """beta_j += delta: eta, w and the slot sums; the aggregates are stale until the next refresh."""
    move_sparse(data, state, j, delta)
    state.dirty[0] = True


@njit(cache=True, nogil=True, error_model="numpy", inline="always")
def scan_refresh(data, state):
    """Nothing to refresh: the scan reads no aggregate."""


@njit(cache=True, nogil=True, error_model="numpy", inline="always")
def scan_terms(data, state, j):
    """(g_j, h_j) by a full scan (which costs the same without h_j: no separate screen)."""
    return coordinate_scan(data, state, j)


@njit(cache=True, nogil=True, error_model="numpy", inline="always")
def scan_move(data, state, j, delta):
    """beta_j += delta: eta and w at the non-zeros of column j."""
    move_scan(data.indptr, data.indices, data.values, data.value_shift, j, delta, state.eta, state.w)


#: The compiled family of each formulation (``FineGrayDatafit.kernels``).
KERNELS = {
    "sparse": compile_family("fine_gray_sparse", sparse_refresh, sparse_gradient, sparse_terms, sparse_move),
    "scan": compile_family("fine_gray_scan", scan_refresh, None, scan_terms, scan_move),
}
