"""The compiled products on a row-major (CSR) copy (:mod:`.row_copy`; ``rval`` empty: every
value is 1): ``X_A b`` at every row or at listed rows, ``X_A' z`` (with its squares), the
update of ``X' z`` over the rows that changed, the Hessian-vector product and the Gram
block of a weighted set, and :func:`sum_blocks`, the block-ordered sum of the row blocks'
partial results (the same bits on any number of threads).
"""
import numpy as np
from numba import njit, prange

from riskset.core.prefetch import DISTANCE, prefetch


@njit(cache=True, nogil=True, parallel=True, error_model="numpy")
def csr_times(rptr, rcol, rval, full, ones, bounds, out):
    """out_i = ones + sum_k x_ik full_k (full: b spread over all columns, 0 off A)."""
    unit = rval.shape[0] == 0
    for blk in prange(bounds.shape[0] - 1):
        for i in range(bounds[blk], bounds[blk + 1]):
            s = 0.0
            s += ones
            if unit:
                for k in range(rptr[i], rptr[i + 1]):
                    s += full[rcol[k]]
            else:
                for k in range(rptr[i], rptr[i + 1]):
                    s += rval[k] * full[rcol[k]]
            out[i] = s


@njit(cache=True, nogil=True, error_model="numpy")
def prefetch_rows_ahead(rptr, rcol, rval, unit, rows, q):
    """While row ``rows[q]`` is read (``unit``: X has no values, ``rval`` is empty): ask for the row pointer
    of the row DISTANCE listed rows ahead, and the first non-zeros of the one DISTANCE / 2 ahead (its pointer
    asked before): reads of scattered rows are bound by memory latency, which the prefetches hide."""
    n = rows.shape[0]
    if q + DISTANCE < n:
        prefetch(rptr, rows[q + DISTANCE])
    if q + DISTANCE // 2 < n:
        k = rptr[rows[q + DISTANCE // 2]]
        prefetch(rcol, k)
        prefetch(rcol, k + 32)
        if not unit:
            prefetch(rval, k)


@njit(cache=True, nogil=True, error_model="numpy")
def csr_rows_times(rptr, rcol, rval, rows, full, ones, out):
    """out_q = ones + sum_k x_ik full_k for row i = rows[q] (:func:`csr_times`' sum, in its order;
    scattered rows: :func:`prefetch_rows_ahead`)."""
    unit = rval.shape[0] == 0
    for q in range(rows.shape[0]):
        prefetch_rows_ahead(rptr, rcol, rval, unit, rows, q)
        i = rows[q]
        s = 0.0
        s += ones
        if unit:
            for k in range(rptr[i], rptr[i + 1]):
                s += full[rcol[k]]
        else:
            for k in range(rptr[i], rptr[i + 1]):
                s += rval[k] * full[rcol[k]]
        out[q] = s


@njit(cache=True, nogil=True, parallel=True, error_model="numpy")
def csr_dot(rptr, rcol, rval, pos, direct, ones, z, bounds, squares, partial, partial2):
    """partial[blk, pos_j] = sum over the block's rows of x_ij z_i (and partial2 of x_ij^2 z_i);
    pos sends the columns off A to a discarded last slot (``direct``: pos is the identity, not
    read: a third off a full gradient), ``ones`` is the slot of
    the ones column (or -1)."""
    unit = rval.shape[0] == 0
    for blk in prange(bounds.shape[0] - 1):
        acc = partial[blk]
        acc2 = partial2[blk] if squares else partial[blk]
        total = 0.0
        for i in range(bounds[blk], bounds[blk + 1]):
            zi = z[i]
            if zi == 0.0:  # e.g. the held-out rows of a fold's view
                continue
            total += zi
            if unit and direct:
                for k in range(rptr[i], rptr[i + 1]):
                    acc[rcol[k]] += zi
            elif unit:
                for k in range(rptr[i], rptr[i + 1]):
                    acc[pos[rcol[k]]] += zi
            else:
                for k in range(rptr[i], rptr[i + 1]):
                    xz = rval[k] * zi
                    p = pos[rcol[k]]
                    acc[p] += xz
                    if squares:
                        acc2[p] += rval[k] * xz
        if unit and squares:
            acc2[:] = acc
        if ones >= 0:
            acc[ones] = total
            if squares:
                acc2[ones] = total


@njit(cache=True, nogil=True, error_model="numpy")
def csr_rows_dot(rptr, rcol, rval, rows, dz, out):
    """out += X[rows]' dz (every column; ``dz`` per listed row), in the order of ``rows``
    (scattered rows: :func:`prefetch_rows_ahead`)."""
    unit = rval.shape[0] == 0
    for q in range(rows.shape[0]):
        prefetch_rows_ahead(rptr, rcol, rval, unit, rows, q)
        i, d = rows[q], dz[q]
        if unit:
            for k in range(rptr[i], rptr[i + 1]):
                out[rcol[k]] += d
        else:
            for k in range(rptr[i], rptr[i + 1]):
                out[rcol[k]] += rval[k] * d


@njit(cache=True, nogil=True, parallel=True, error_model="numpy")
def csr_gram_times(rptr, rcol, rval, b, ones, at_ones, c, bounds, partial):
    """partial[blk, a] = sum over the block's rows of x_ia c_i (x_i . b + ones), on A's row-major
    copy (``rcol``: positions in A); ``ones``: the ones column's coefficient, ``at_ones`` its
    slot in the result (or -1; it has no entries in the copy)."""
    unit = rval.shape[0] == 0
    for blk in prange(bounds.shape[0] - 1):
        acc = partial[blk]
        total = 0.0
        for i in range(bounds[blk], bounds[blk + 1]):
            lo, hi = rptr[i], rptr[i + 1]
            s = 0.0
            s += ones
            if unit:
                for k in range(lo, hi):
                    s += b[rcol[k]]
                s *= c[i]
                for k in range(lo, hi):
                    acc[rcol[k]] += s
            else:
                for k in range(lo, hi):
                    s += rval[k] * b[rcol[k]]
                s *= c[i]
                for k in range(lo, hi):
                    acc[rcol[k]] += rval[k] * s
            total += s
        if at_ones >= 0:
            acc[at_ones] = total


@njit(cache=True, nogil=True, parallel=True, error_model="numpy")
def csr_gram(rptr, rcol, rval, pos, ones, c, bounds, partial):
    """partial[blk] = upper triangle of sum over the block's rows of c_i x_iA' x_iA."""
    unit = rval.shape[0] == 0
    m = partial.shape[1]
    for blk in prange(bounds.shape[0] - 1):
        acc = partial[blk]
        at = np.empty(m + 1, np.int64)
        xs = np.empty(m + 1)
        for i in range(bounds[blk], bounds[blk + 1]):
            n = 0
            if ones >= 0:
                at[0] = ones
                xs[0] = 1.0
                n = 1
            for k in range(rptr[i], rptr[i + 1]):
                p = pos[rcol[k]]
                if p < m:
                    at[n] = p
                    xs[n] = 1.0 if unit else rval[k]
                    n += 1
            ci = c[i]
            for u in range(n):
                cx = ci * xs[u]
                for v in range(n):
                    if at[u] <= at[v]:
                        acc[at[u], at[v]] += cx * xs[v]


@njit(cache=True, nogil=True, parallel=True, error_model="numpy")
def sum_blocks(partial, out):
    """out = the column sums of ``partial`` (block by block, in block order)."""
    for a in prange(out.shape[0]):
        s = 0.0
        for blk in range(partial.shape[0]):
            s += partial[blk, a]
        out[a] = s
