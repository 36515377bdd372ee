"""The compiled row-major (CSR) copies of X's CSC arrays: of every column (X's own copy,
by :func:`csc_row_counts` then :func:`csc_to_csr`), of a column subset A, whose entries
hold their positions in A (:func:`csc_subset_to_csr`), and of a row subset
(:func:`csc_rows_count`, :func:`csc_rows_fill`: serial, built once). The first two run by
row blocks on all threads and fill each row in the same order whatever the threads.
"""
import numpy as np
from numba import njit, prange

from riskset.core.products.csc import first_at_or_after


@njit(cache=True, nogil=True, parallel=True, error_model="numpy")
def csc_row_counts(indptr, indices, bounds, counts):
    """counts[i + 1] = non-zeros of row i (rows by block, so each block's writes stay local)."""
    for blk in prange(bounds.shape[0] - 1):
        lo, hi = bounds[blk], bounds[blk + 1]
        for j in range(indptr.shape[0] - 1):
            end = indptr[j + 1]
            k = first_at_or_after(indices, indptr[j], end, lo)
            while k < end and indices[k] < hi:
                counts[indices[k] + 1] += 1
                k += 1


@njit(cache=True, nogil=True, parallel=True, error_model="numpy")
def csc_to_csr(indptr, indices, values, value_shift, bounds, rptr, rcol, rval):
    """Fill the CSR copy (columns ascending within a row); ``rptr`` holds each row's start
    and ends as its end, which is the next row's start: the row pointers. ``rval`` empty:
    no values stored."""
    store = rval.shape[0] > 0
    for blk in prange(bounds.shape[0] - 1):
        lo, hi = bounds[blk], bounds[blk + 1]
        for j in range(indptr.shape[0] - 1):
            end = indptr[j + 1]
            k = first_at_or_after(indices, indptr[j], end, lo)
            while k < end and indices[k] < hi:
                i = indices[k]
                q = rptr[i + 1]
                rcol[q] = j
                if store:
                    rval[q] = values[k + value_shift[j]]
                rptr[i + 1] = q + 1
                k += 1


@njit(cache=True, nogil=True, error_model="numpy")
def csc_rows_count(indptr, indices, position, rptr):
    """rptr[p + 1] = non-zeros of the row i with position[i] = p >= 0 (a row subset's copy);
    other rows have position -1. Serial: built once per datafit."""
    for j in range(indptr.shape[0] - 1):
        for k in range(indptr[j], indptr[j + 1]):
            p = position[indices[k]]
            if p >= 0:
                rptr[p + 1] += 1
    for p in range(rptr.shape[0] - 1):
        rptr[p + 1] += rptr[p]


@njit(cache=True, nogil=True, error_model="numpy")
def csc_rows_fill(indptr, indices, values, value_shift, position, rptr, rcol, rval):
    """Fill the row-major copy of the rows with a position (:func:`csc_rows_count` gave ``rptr``):
    columns ascending within a row; ``rval`` empty: no values stored."""
    store = rval.shape[0] > 0
    fill = rptr[:-1].copy()
    for j in range(indptr.shape[0] - 1):
        for k in range(indptr[j], indptr[j + 1]):
            p = position[indices[k]]
            if p >= 0:
                q = fill[p]
                rcol[q] = j
                if store:
                    rval[q] = values[k + value_shift[j]]
                fill[p] = q + 1


@njit(cache=True, nogil=True, parallel=True, error_model="numpy")
def csc_subset_to_csr(indptr, indices, values, value_shift, cols, positions, rptr, unit, bounds):
    """(row pointers, positions, values) of the row-major copy of X[:, cols]: the entry of
    column ``cols[a]`` holds ``positions[a]`` in place of the column; no values if ``unit``.
    ``rptr`` (N + 1, any contents) receives the row pointers. By row blocks on all threads:
    each block finds its rows in every column by bisection and fills them in the order of
    ``cols`` (the same copy on any number of threads)."""
    m = cols.shape[0]
    n_rows = rptr.shape[0] - 1
    rptr[:] = 0
    for blk in prange(bounds.shape[0] - 1):
        lo, hi = bounds[blk], bounds[blk + 1]
        for a in range(m):
            end = indptr[cols[a] + 1]
            k = first_at_or_after(indices, indptr[cols[a]], end, lo)
            while k < end and indices[k] < hi:
                rptr[indices[k] + 1] += 1
                k += 1
    for i in range(n_rows):
        rptr[i + 1] += rptr[i]
    rcol = np.empty(rptr[n_rows], np.uint32)  # positions in cols (unsigned: see core.design.row_indices)
    rval = np.empty(0 if unit else rptr[n_rows])
    for blk in prange(bounds.shape[0] - 1):
        lo, hi = bounds[blk], bounds[blk + 1]
        fill = rptr[lo:hi].copy()
        for a in range(m):
            end = indptr[cols[a] + 1]
            k = first_at_or_after(indices, indptr[cols[a]], end, lo)
            while k < end and indices[k] < hi:
                q = fill[indices[k] - lo]
                rcol[q] = positions[a]
                if not unit:
                    rval[q] = values[k + value_shift[cols[a]]]
                fill[indices[k] - lo] = q + 1
                k += 1
    return rptr, rcol, rval

