"""A Fine-Gray coordinate's gradient and curvature and its move: the walk over the column's
non-zeros in event-slot order, by chunks (one pass, the same bits on any number of threads),
and the O(N) scan formulation. Notation: :mod:`riskset.kernels.cpu.fine_gray`.

The walk's curvature term (:mod:`riskset.kernels.cpu.fine_gray`, ``S_j``) is a sum over the
column's runs of non-zeros of one slot of ``c^2 dA2 + 2 c e dA2G + e^2 dA2GG``, where ``c`` is
the running sum of ``w x`` and ``e = E -`` the running sum of ``w x cinv`` over competing rows,
``E`` that sum over the whole column. A chunk of whole runs, walked from ``c = cc = 0``, keeps
besides its ``g``, ``h`` and its own ``S`` the sums that the carries of the chunks before it
multiply: with ``C``, ``CC`` the running sums at the chunk's start and ``F = E - CC``, its
runs add (``c -> C + c``, ``e -> F - cc``)::

    S_loc + C^2 sum dA2 + 2 C sum c dA2 + 2 C F sum dA2G - 2 C sum cc dA2G
          + 2 F sum c dA2G + F^2 sum dA2GG - 2 F sum cc dA2GG,

    S_loc = sum c^2 dA2 - 2 c cc dA2G + cc^2 dA2GG

and ``E`` is the sum of the chunks' ``cc``: one pass over the non-zeros, where a serial walk
needs a first one for ``E``. The chunks (:func:`~riskset.kernels.cpu.cox_walks.walk_chunks`,
cut at changes of slot) are fixed by the data and their parts added in chunk order, so one
thread and sixteen give the same bits; on more than one thread a long column walks them in
parallel.
"""
import math

import numpy as np
from numba import njit, prange

from riskset.core.prefetch import DISTANCE, prefetch
from riskset.kernels.cpu.cox_rows import moved_weight
from riskset.kernels.cpu.cox_walks import walk_chunks

#: Stored non-zeros per chunk of a column's walk (:func:`~riskset.kernels.cpu.cox_walks.walk_chunks`);
#: a column of more than two chunks walks and moves them in parallel on more than one thread.
WALK_CHUNK = 1 << 13

#: The fields of a chunk's part (:func:`walk_chunk`).
(P_G, P_H, P_S, P_DA2, P_C_DA2, P_DA2G, P_CC_DA2G, P_C_DA2G, P_DA2GG, P_CC_DA2GG, P_C, P_CC) = range(12)
PART = 12


@njit(cache=True, nogil=True, error_model="numpy", inline="always")
def walk_chunk(lo, hi, b, indices, values, vs, w, slot, cinv, A1, B1, A2, A2G, A2GG, gradient_only, out):
    """The part (:data:`PART` fields, module docstring) of the whole runs lo .. hi-1 of a column
    ending at ``b``; ``gradient_only``: its g alone. Flat arguments: it runs inside the
    parallel loop of :func:`chunked_walk`."""
    K = A1.shape[0] - 1
    sb0 = B1[0]
    g = 0.0
    h = 0.0
    s_loc = 0.0
    c = 0.0
    cc = 0.0
    t_a2 = 0.0
    t_c_a2 = 0.0
    t_g = 0.0
    t_cc_g = 0.0
    t_c_g = 0.0
    t_gg = 0.0
    t_cc_gg = 0.0
    for i in range(lo, hi):
        if i + DISTANCE < hi:
            prefetch(w, indices[i + DISTANCE])
        r = indices[i]
        x = values[i + vs]
        wx = w[r] * x
        s = slot[r]
        br = A1[s]
        ig = cinv[r]
        if ig != 0.0:
            br += (sb0 - B1[s]) * ig
            cc += wx * ig
        g -= wx * br
        if gradient_only:
            continue
        h -= wx * x * br
        c += wx
        s2 = slot[indices[i + 1]] if i + 1 < b else K
        if s2 != s:
            d2 = A2[s] - A2[s2]
            dg = A2G[s] - A2G[s2]
            dgg = A2GG[s] - A2GG[s2]
            s_loc += c * c * d2 - 2.0 * c * cc * dg + cc * cc * dgg
            t_a2 += d2
            t_c_a2 += c * d2
            t_g += dg
            t_cc_g += cc * dg
            t_c_g += c * dg
            t_gg += dgg
            t_cc_gg += cc * dgg
    out[P_G] = g
    out[P_H] = h
    out[P_S] = s_loc
    out[P_DA2] = t_a2
    out[P_C_DA2] = t_c_a2
    out[P_DA2G] = t_g
    out[P_CC_DA2G] = t_cc_g
    out[P_C_DA2G] = t_c_g
    out[P_DA2GG] = t_gg
    out[P_CC_DA2GG] = t_cc_gg
    out[P_C] = c
    out[P_CC] = cc


@njit(cache=True, nogil=True, error_model="numpy", inline="always")
def combine(part, gx0, A2GG, s_first, gradient_only):
    """(g_j, h_j) from the chunks' parts in chunk order (module docstring); ``s_first`` the
    slot of the column's first non-zero."""
    n = part.shape[0]
    g = gx0
    for k in range(n):
        g += part[k, P_G]
    if gradient_only:
        return g, 0.0
    E = 0.0
    for k in range(n):
        E += part[k, P_CC]
    h = 0.0
    S = E * E * (A2GG[0] - A2GG[s_first])
    C = 0.0
    CC = 0.0
    for k in range(n):
        p = part[k]
        F = E - CC
        h += p[P_H]
        S += (p[P_S] + C * C * p[P_DA2] + 2.0 * C * p[P_C_DA2] + 2.0 * C * F * p[P_DA2G]
              - 2.0 * C * p[P_CC_DA2G] + 2.0 * F * p[P_C_DA2G] + F * F * p[P_DA2GG] - 2.0 * F * p[P_CC_DA2GG])
        C += p[P_C]
        CC += p[P_CC]
    return g, h + S


@njit(cache=True, nogil=True, error_model="numpy", inline="always")
def coordinate_sparse(data, state, j, gradient_only):
    """(g_j, h_j) in O(nnz_j) (aggregates must be current) by the chunks of :func:`walk_chunks`,
    in parallel where ``data.parallel`` and the column has more than two;
    ``gradient_only``: (g_j, 0), the same g (the screen of a coordinate at its center).

    ``gradient_only`` goes on as a NumPy bool, which Numba types as a bool where it types the
    callers' ``True`` and ``False`` as literals: the screen and the walk call one compiled
    walk instead of one each."""
    a = data.indptr[j]
    b = data.indptr[j + 1]
    if a == b:
        return data.gx0[j], 0.0
    bounds = walk_chunks(a, b, data.slot, data.indices, data.walk_chunk)
    part = np.empty((bounds.shape[0] - 1, PART))
    if data.parallel and bounds.shape[0] > 3:
        chunked_walk(bounds, b, data.indices, data.values, data.value_shift[j], state.w, data.slot, data.cinv,
                     state.A1, state.B1, state.A2, state.A2G, state.A2GG, np.bool_(gradient_only), part)
    else:
        serial_walk(bounds, b, data.indices, data.values, data.value_shift[j], state.w, data.slot, data.cinv,
                    state.A1, state.B1, state.A2, state.A2G, state.A2GG, np.bool_(gradient_only), part)
    return combine(part, data.gx0[j], state.A2GG, data.slot[data.indices[a]], gradient_only)


@njit(cache=True, nogil=True, error_model="numpy")
def serial_walk(bounds, b, indices, values, vs, w, slot, cinv, A1, B1, A2, A2G, A2GG, gradient_only, part):
    """The parts of the chunks ``bounds`` one after the other."""
    for k in range(bounds.shape[0] - 1):
        walk_chunk(bounds[k], bounds[k + 1], b, indices, values, vs, w, slot, cinv, A1, B1, A2, A2G, A2GG,
                   gradient_only, part[k])


@njit(cache=True, nogil=True, error_model="numpy", parallel=True)
def chunked_walk(bounds, b, indices, values, vs, w, slot, cinv, A1, B1, A2, A2G, A2GG, gradient_only, part):
    """The parts of the chunks ``bounds`` on all threads (flat arguments: a parallel function
    compiles faster on arrays and scalars than on records it unpacks)."""
    for k in prange(bounds.shape[0] - 1):
        walk_chunk(bounds[k], bounds[k + 1], b, indices, values, vs, w, slot, cinv, A1, B1, A2, A2G, A2GG,
                   gradient_only, part[k])


@njit(cache=True, nogil=True, error_model="numpy", inline="always")
def move_run(lo, hi, indices, values, vs, ind, delta, factor, eta, w, slot, cinv, W, Wc):
    """beta_j += delta at the stored non-zeros lo .. hi-1 of column j: eta, w
    (:func:`~riskset.kernels.cpu.cox_rows.moved_weight`) and the slot sums."""
    for i in range(lo, hi):
        if i + DISTANCE < hi:
            prefetch(w, indices[i + DISTANCE])
            prefetch(eta, indices[i + DISTANCE])
        r = indices[i]
        dw = moved_weight(eta, w, r, values[i + vs], delta, factor, ind)
        s = slot[r]
        W[s] += dw
        ig = cinv[r]
        if ig != 0.0:
            Wc[s] += dw * ig


@njit(cache=True, nogil=True, error_model="numpy", inline="always")
def move_sparse(data, state, j, delta):
    """beta_j += delta: eta, w and the slot sums at the non-zeros of column j (O(nnz_j)); a long
    column by the chunks of :func:`walk_chunks` in parallel where ``data.parallel``: no slot
    is shared by two chunks, so every sum takes the serial move's additions in its order
    (the same bits)."""
    a = data.indptr[j]
    b = data.indptr[j + 1]
    if data.parallel and b - a > 2 * data.walk_chunk:
        chunked_move(walk_chunks(a, b, data.slot, data.indices, data.walk_chunk), data.indices, data.values,
                     data.value_shift[j], data.indicator[j], delta, state.eta, state.w, data.slot, data.cinv, state.W,
                     state.Wc)
    else:
        move_run(a, b, data.indices, data.values, data.value_shift[j], data.indicator[j], delta, math.exp(delta),
                 state.eta, state.w, data.slot, data.cinv, state.W, state.Wc)


@njit(cache=True, nogil=True, error_model="numpy", parallel=True)
def chunked_move(bounds, indices, values, vs, ind, delta, eta, w, slot, cinv, W, Wc):
    """:func:`move_sparse` of the chunks ``bounds`` on all threads (flat arguments)."""
    factor = math.exp(delta)
    for k in prange(bounds.shape[0] - 1):
        move_run(bounds[k], bounds[k + 1], indices, values, vs, ind, delta, factor, eta, w, slot, cinv, W, Wc)


@njit(cache=True, nogil=True, error_model="numpy")
def coordinate_scan(data, state, j):
    """(g_j, h_j) by full O(N + K) scans, independent of any cached aggregate.

    ``state.xd`` is a zero work vector of length N (restored on return); ``state.work`` a
    (6, K + 1) scratch array (overwritten).
    """
    indptr, indices, values, value_shift = data.indptr, data.indices, data.values, data.value_shift
    cw, event, slot, cinv, slot_d, Gev = data.cw, data.event, data.slot, data.cinv, data.slot_d, data.Gev
    xd, w, work = state.xd, state.w, state.work
    a = indptr[j]
    b = indptr[j + 1]
    vs = value_shift[j]
    for i in range(a, b):
        xd[indices[i]] = values[i + vs]
    work[:, :] = 0.0
    g = 0.0
    # one pass over all rows: (w, wx, wx^2) per slot, ordinary and competing (/G) parts
    for r in range(xd.shape[0]):
        x = xd[r]
        wr = w[r]
        u = wr * x
        v = u * x
        s = slot[r]
        work[0, s] += wr
        work[1, s] += u
        work[2, s] += v
        ig = cinv[r]
        if ig != 0.0:
            work[3, s] += wr * ig
            work[4, s] += u * ig
            work[5, s] += v * ig
        if event[r]:
            g += cw[r] * x
    K = slot_d.shape[0]
    # backward scan (suffix sums of the competing part, strictly later slots)
    c0 = 0.0
    c1 = 0.0
    c2 = 0.0
    for k in range(K - 1, -1, -1):
        c0 += work[3, k + 1]
        c1 += work[4, k + 1]
        c2 += work[5, k + 1]
        work[3, k + 1] = c0
        work[4, k + 1] = c1
        work[5, k + 1] = c2
    # forward scan (prefix sums of the ordinary part) fused with the reduction
    p0 = 0.0
    p1 = 0.0
    p2 = 0.0
    h = 0.0
    for k in range(K):
        p0 += work[0, k]
        p1 += work[1, k]
        p2 += work[2, k]
        d = slot_d[k]
        if d > 0.0:
            G = Gev[k]
            D = p0 + G * work[3, k + 1]
            N1 = p1 + G * work[4, k + 1]
            N2 = p2 + G * work[5, k + 1]
            q = d / D
            g -= N1 * q
            h -= N2 * q - N1 * N1 * q / D
    for i in range(a, b):
        xd[indices[i]] = 0.0
    return g, h
