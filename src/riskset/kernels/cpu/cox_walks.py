"""A Cox coordinate's gradient and curvature and its move: walks over the column's
non-zeros in slot order (sorted rows, breakpoints with start times, parallel chunks) and the
O(N) scan formulation. Notation: :mod:`riskset.kernels.cpu.cox`."""
import math

import numpy as np
from numba import njit, prange

from riskset.core.prefetch import DISTANCE, prefetch
from riskset.kernels.cpu.cox_rows import moved_weight


#: Stored non-zeros per chunk of a column's walk and parallel move (:func:`walk_chunks`): a
#: right-censored column is walked by these chunks on any number of threads (the same bits),
#: and on more than one a column of more than two chunks' worth (a few milliseconds of random
#: reads at N = 1M) walks and moves its chunks in parallel.
WALK_CHUNK = 1 << 13


@njit(cache=True, nogil=True, error_model="numpy", inline="always")
def move_run(lo, hi, indices, values, vs, ind, delta, factor, eta, w, ksn, ken, evn, has_start, efron, ex, en,
             ev):
    """beta_j += delta at the stored non-zeros lo .. hi-1 of column j: eta, w
    (:func:`moved_weight`) and the slot sums. Without start times the entry sums ``en`` are
    never read (every row enters at its stratum's first slot), nor without Efron's ties the
    event sums ``ev`` (nor the statuses ``evn``: not stored then). Flat arguments: it runs
    inside the parallel loop of :func:`chunked_move`."""
    for i in range(lo, hi):
        if i + DISTANCE < hi:
            prefetch(w, indices[i + DISTANCE])
            prefetch(eta, indices[i + DISTANCE])
        dw = moved_weight(eta, w, indices[i], values[i + vs], delta, factor, ind)
        ex[ken[i]] += dw
        if has_start:
            en[ksn[i]] += dw
        if efron and evn[i]:
            ev[ken[i] - 1] += dw


@njit(cache=True, nogil=True, error_model="numpy", inline="always")
def gradient_run(lo, hi, g, indices, values, vs, w, ksn, ken, evn, has_start, A1c, R1, efron):
    """``g`` minus the gradient terms of the stored non-zeros lo .. hi-1 of a column (the g of
    :func:`walk_chunk` alone). Without start times a row enters at its stratum's first slot,
    where A1c is 0 (``ksn`` is not stored, nor read). Flat arguments: it runs inside the
    parallel loop of :func:`chunked_walk`."""
    for i in range(lo, hi):
        if i + DISTANCE < hi:
            prefetch(w, indices[i + DISTANCE])
        wx = w[indices[i]] * values[i + vs]
        g -= wx * (A1c[ken[i]] - A1c[ksn[i]] if has_start else A1c[ken[i]])
        if efron and evn[i]:
            g += wx * R1[ken[i] - 1]
    return g


@njit(cache=True, nogil=True, error_model="numpy")
def move_sparse(data, state, j, delta):
    """beta_j += delta: eta, w and the slot sums at the non-zeros of column j (:func:`move_run`)."""
    sums = state.sums
    move_run(data.indptr[j], data.indptr[j + 1], data.indices, data.values, data.value_shift[j], data.indicator[j],
             delta, math.exp(delta), state.eta, state.w, data.ksn, data.ken, data.evn, data.slots.has_start,
             data.slots.efron, sums.ex, sums.en, sums.ev)


@njit(cache=True, nogil=True, error_model="numpy")
def move_scan(indptr, indices, values, value_shift, j, delta, eta, w):
    """beta_j += delta for the scan formulation: eta and w only (w_r *= exp(delta x), as
    :func:`moved_weight`: w carries its stratum's shift, see :func:`stratum_shifts`)."""
    vs = value_shift[j]
    for i in range(indptr[j], indptr[j + 1]):
        r = indices[i]
        x = values[i + vs]
        eta[r] += delta * x
        w[r] *= math.exp(delta * x)



@njit(cache=True, nogil=True, error_model="numpy")
def coordinate_breakpoints(data, state, j):
    """(g_j, h_j) in O(nnz_j) for (start, stop] rows, walking the column's sorted breakpoints."""
    indptr, indices, values, value_shift = data.indptr, data.indices, data.values, data.value_shift
    ksn, ken, evn = data.ksn, data.ken, data.evn
    codes, slot_stratum, efron = data.codes, data.slots.slot_stratum, data.slots.efron
    w, A1c, A2c, R1, R2, T2 = state.w, state.sums.A1c, state.sums.A2c, state.sums.R1, state.sums.R2, state.sums.T2
    gx0 = data.gx0[j]
    a = indptr[j]
    b = indptr[j + 1]
    vs = value_shift[j]
    g = gx0
    h = 0.0
    for i in range(a, b):
        r = indices[i]
        x = values[i + vs]
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
                e += w[indices[nzk]] * values[nzk + vs]
            k += 1
        if e != 0.0:
            p = pos - 1
            S += e * (e * T2[p] - 2.0 * c * R2[p])
        for q in range(i, k):
            cq = codes[q]
            nzq = cq >> 1
            wx = w[indices[nzq]] * values[nzq + vs]
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
def coordinate_scan(data, state, j):
    """(g_j, h_j) by full O(N + n_slots) scans (the papers' formulation); independent of the
    cached aggregates. ``state.xd`` is a zero work vector of length N (restored on return)."""
    indptr, indices, values, value_shift = data.indptr, data.indices, data.values, data.value_shift
    cw, ks, ke, event = data.rows.cw, data.rows.ks, data.rows.ke, data.rows.event
    slot_d, slot_m, slot_last, efron = data.slots.slot_d, data.slots.slot_m, data.slots.slot_last, data.slots.efron
    xd, w = state.xd, state.w
    a = indptr[j]
    b = indptr[j + 1]
    vs = value_shift[j]
    for i in range(a, b):
        xd[indices[i]] = values[i + vs]
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
def walk_chunks(a, b, key, rows, size):
    """Boundaries of the chunks of a column's stored non-zeros a .. b-1, in slot order: one every
    ``size`` (at least one chunk), each moved forward to the end of its run, the non-zeros of one
    ``key[k]`` (Cox: the exit slot of non-zero k, ``rows`` empty; a run lies in one stratum) or,
    with ``rows``, of one ``key[rows[k]]`` (Fine-Gray: the event slot of its row), so that no
    slot sum is touched by two chunks. Fixed by the data, not by the threads."""
    n = max(1, (b - a + size - 1) // size)
    through = rows.shape[0] > 0
    out = np.empty(n + 1, np.int64)
    out[0] = a
    m = 1
    for c in range(1, n):
        k = max(a + c * size, out[m - 1] + 1)
        while k < b and (key[rows[k]] == key[rows[k - 1]] if through else key[k] == key[k - 1]):
            k += 1
        if k < b:
            out[m] = k
            m += 1
    out[m] = b
    return out[:m + 1]


@njit(cache=True, nogil=True, error_model="numpy", inline="always")
def walk_chunk(lo, hi, b, indices, values, vs, w, slot_stratum, ken, evn, A1c, A2c, R1, R2, T2, efron, out):
    """The walk's sums over the whole runs lo .. hi-1 of a column ending at ``b``, its running
    risk-set sum c and g started at 0. ``out`` = (g, h, S, K0, K1, K2, c, reset):
    K0, K1, K2 are the sums of dA2, c dA2 and e R2 over the runs before the chunk's first
    change of stratum (``reset``), where a carry C of the chunks before adds
    C^2 K0 + 2 C (K1 - K2) to S (S's terms c^2 dA2 and -2 e c R2 with c -> C + c). Rows enter
    at their stratum's first slot, where A1c and A2c are 0; a change of stratum is one of
    ``slot_stratum`` between exit slots. Called inside the parallel loop of
    :func:`chunked_walk`, where Numba passes only arrays and scalars: flat arguments."""
    g = 0.0
    h = 0.0
    S = 0.0
    c = 0.0
    e = 0.0
    k0 = 0.0
    k1 = 0.0
    k2 = 0.0
    first = True
    for i in range(lo, hi):
        if i + DISTANCE < hi:
            prefetch(w, indices[i + DISTANCE])
        x = values[i + vs]
        wx = w[indices[i]] * x
        kr = ken[i]
        a1 = A1c[kr]
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
            same_run = ken[i + 1] == kr
            same_stratum = same_run or slot_stratum[ken[i + 1]] == slot_stratum[kr]
        if not same_run:
            if e != 0.0:
                p = kr - 1
                S += e * (e * T2[p] - 2.0 * c * R2[p])
                if first:
                    k2 += e * R2[p]
                e = 0.0
            d2 = A2c[kr] - A2c[ken[i + 1]] if same_stratum else A2c[kr]
            S += c * c * d2
            if first:
                k0 += d2
                k1 += c * d2
            if not same_stratum:
                c = 0.0
                first = False
    out[0] = g
    out[1] = h
    out[2] = S
    out[3] = k0
    out[4] = k1
    out[5] = k2
    out[6] = c
    out[7] = 0.0 if first else 1.0


@njit(cache=True, nogil=True, error_model="numpy", inline="always")
def coordinate_chunked(data, state, j, gradient_only):
    """(g_j, h_j) in O(nnz_j) for right-censored rows (sorted order = descending exit slot):
    the walk of :func:`walk_chunk` over the chunks of :func:`walk_chunks`, their carries added
    in chunk order. The chunks are fixed by the data, so one thread and sixteen give the same
    bits; on more than one thread a column of more than two chunks walks them in parallel.
    ``gradient_only``: (g_j, 0) from the chunks' g alone, bit for bit the g of the full walk
    (the screen of a coordinate at its center).

    ``ken, evn``: exit slot and status of the row of each stored non-zero (static, so the
    walk reads them sequentially); every row enters at its stratum's first slot, where A1c
    and A2c are 0 (``ken`` stands in for the ``ksn`` not stored).

    ``gradient_only`` goes on as a NumPy bool, which Numba types as a bool where it types the
    callers' ``True`` and ``False`` as literals: the screen and the walk call one compiled
    walk instead of one each (a parallel function: seconds of a first fit's compile time;
    its branch is taken once per chunk)."""
    a = data.indptr[j]
    b = data.indptr[j + 1]
    if a == b:
        return data.gx0[j], 0.0
    sums = state.sums
    bounds = walk_chunks(a, b, data.ken, data.indices[:0], data.walk_chunk)
    part = np.empty((bounds.shape[0] - 1, 8))
    if data.parallel and bounds.shape[0] > 3:
        chunked_walk(bounds, b, data.indices, data.values, data.value_shift[j], state.w, data.slots.slot_stratum,
                     data.ken, data.evn, sums.A1c, sums.A2c, sums.R1, sums.R2, sums.T2, data.slots.efron,
                     np.bool_(gradient_only), part)
    else:
        serial_walk(bounds, b, data.indices, data.values, data.value_shift[j], state.w, data.slots.slot_stratum,
                    data.ken, data.evn, sums.A1c, sums.A2c, sums.R1, sums.R2, sums.T2, data.slots.efron,
                    np.bool_(gradient_only), part)
    return combine_chunks(part, data.gx0[j], gradient_only)


@njit(cache=True, nogil=True, error_model="numpy", inline="always")
def walk_part(lo, hi, b, indices, values, vs, w, slot_stratum, ken, evn, A1c, A2c, R1, R2, T2, efron, gradient_only,
              out):
    """One chunk's part: its g alone (``gradient_only``) or :func:`walk_chunk`'s sums."""
    if gradient_only:
        out[0] = gradient_run(lo, hi, 0.0, indices, values, vs, w, ken, ken, evn, False, A1c, R1, efron)
    else:
        walk_chunk(lo, hi, b, indices, values, vs, w, slot_stratum, ken, evn, A1c, A2c, R1, R2, T2, efron, out)


@njit(cache=True, nogil=True, error_model="numpy")
def serial_walk(bounds, b, indices, values, vs, w, slot_stratum, ken, evn, A1c, A2c, R1, R2, T2, efron, gradient_only,
                part):
    """The parts of the chunks ``bounds`` one after the other."""
    for k in range(bounds.shape[0] - 1):
        walk_part(bounds[k], bounds[k + 1], b, indices, values, vs, w, slot_stratum, ken, evn, A1c, A2c, R1, R2, T2,
                  efron, gradient_only, part[k])


@njit(cache=True, nogil=True, error_model="numpy", parallel=True)
def chunked_walk(bounds, b, indices, values, vs, w, slot_stratum, ken, evn, A1c, A2c, R1, R2, T2, efron, gradient_only,
                 part):
    """The parts of the chunks ``bounds`` on all threads (flat arguments: a parallel function
    compiles faster on arrays and scalars than on records it unpacks)."""
    for k in prange(bounds.shape[0] - 1):
        walk_part(bounds[k], bounds[k + 1], b, indices, values, vs, w, slot_stratum, ken, evn, A1c, A2c, R1, R2, T2,
                  efron, gradient_only, part[k])


@njit(cache=True, nogil=True, error_model="numpy", inline="always")
def combine_chunks(part, gx0, gradient_only):
    """(g_j, h_j) from the chunks' parts in chunk order: a carry C (the running risk-set sum
    at a chunk's start, reset by a change of stratum) adds C^2 K0 + 2 C (K1 - K2) to the
    chunk's S (:func:`walk_chunk`)."""
    n = part.shape[0]
    g = gx0
    if gradient_only:
        for k in range(n):
            g += part[k, 0]
        return g, 0.0
    h = 0.0
    S = 0.0
    C = 0.0
    for k in range(n):
        g += part[k, 0]
        h += part[k, 1]
        S += part[k, 2] + C * C * part[k, 3] + 2.0 * C * (part[k, 4] - part[k, 5])
        C = part[k, 6] if part[k, 7] != 0.0 else C + part[k, 6]
    return g, h + S


@njit(cache=True, nogil=True, error_model="numpy", inline="always")
def move_chunked(data, state, j, delta):
    """:func:`move_sparse` of a right-censored column by chunks of :func:`walk_chunks` in
    parallel: every row and slot sum takes the same additions in the same order (no slot
    is shared by two chunks), so the result is the serial one, bit for bit."""
    sums = state.sums
    chunked_move(data.indptr, data.indices, data.values, data.value_shift[j], data.indicator[j], j, delta, state.eta,
                 state.w, data.ken, data.evn, data.slots.efron, sums.ex, sums.en, sums.ev, data.walk_chunk)


@njit(cache=True, nogil=True, error_model="numpy", parallel=True)
def chunked_move(indptr, indices, values, vs, ind, j, delta, eta, w, ken, evn, efron, ex, en, ev, size):
    """:func:`move_chunked` on flat arguments (a parallel function, as :func:`chunked_walk`)."""
    factor = math.exp(delta)
    bounds = walk_chunks(indptr[j], indptr[j + 1], ken, indices[:0], size)
    for k in prange(bounds.shape[0] - 1):  # right-censored rows: no entry sums (ken stands in for ksn, not read)
        move_run(bounds[k], bounds[k + 1], indices, values, vs, ind, delta, factor, eta, w, ken, ken, evn, False,
                 efron, ex, en, ev)


@njit(cache=True, nogil=True, error_model="numpy")
def gradient_column(data, state, j):
    """dl/dbeta_j alone in O(nnz_j) with start times (:func:`gradient_run`)."""
    return gradient_run(data.indptr[j], data.indptr[j + 1], data.gx0[j], data.indices, data.values,
                        data.value_shift[j], state.w, data.ksn, data.ken, data.evn, data.slots.has_start,
                        state.sums.A1c, state.sums.R1, data.slots.efron)
