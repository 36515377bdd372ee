"""Building a canonical CSC matrix from (row, column, value) triplets in O(nnz): the compiled
passes behind the long-table builders (:mod:`riskset.data.ingest`,
:mod:`riskset.data.long_covariates`)."""
import numpy as np
from numba import njit


@njit(cache=True, error_model="numpy")
def triplets_to_csc(rows, cols, vals, n_cols):
    """Counting sort by column, rows sorted within each column (kept if already sorted).

    Returns (indptr, indices, data, duplicate) where ``duplicate`` is the position of
    a repeated (row, column) pair in the output, or -1.
    """
    nnz = rows.shape[0]
    indptr = np.zeros(n_cols + 1, np.int64)
    for k in range(nnz):
        indptr[cols[k] + 1] += 1
    for c in range(n_cols):
        indptr[c + 1] += indptr[c]
    fill = indptr[:-1].copy()
    indices = np.empty(nnz, np.int64)
    data = np.empty(nnz, np.float64)
    fill_columns(rows, cols, vals, True, indptr, fill, indices, data)
    return indptr, indices, data, sort_columns(indptr, indices, data)


@njit(cache=True, error_model="numpy")
def fill_columns(rows, cols, vals, has_value, indptr, fill, indices, data):
    """Place each triplet at its column's next free position ``fill[c]`` (advanced), its value
    or, without ``has_value``, 1. Returns the first column that would pass its end
    ``indptr[c + 1]`` (nothing of that triplet written), or -1."""
    for k in range(rows.shape[0]):
        c = cols[k]
        f = fill[c]
        if f >= indptr[c + 1]:
            return c
        indices[f] = rows[k]
        data[f] = vals[k] if has_value else 1.0
        fill[c] = f + 1
    return -1


@njit(cache=True, error_model="numpy")
def sort_columns(indptr, indices, data):
    """Sort each column's rows (with their values; a sorted column is left as it is).
    Returns the position of a repeated (row, column) pair, or -1."""
    duplicate = -1
    for c in range(indptr.shape[0] - 1):
        a, b = indptr[c], indptr[c + 1]
        for k in range(a + 1, b):
            if indices[k] < indices[k - 1]:
                order = np.argsort(indices[a:b], kind="mergesort")
                indices[a:b] = indices[a:b][order]
                data[a:b] = data[a:b][order]
                break
        for k in range(a + 1, b):
            if indices[k] == indices[k - 1] and duplicate < 0:
                duplicate = k
    return duplicate


@njit(cache=True, error_model="numpy")
def dense_positions(wanted, low, table, out):
    """out[k] = table[wanted[k] - low] (a row id's position), -1 outside the table. Returns the
    first k without a position, or -1."""
    bad = -1
    for k in range(wanted.shape[0]):
        i = wanted[k] - low
        p = table[i] if 0 <= i < table.shape[0] else -1
        out[k] = p
        if p < 0 and bad < 0:
            bad = k
    return bad
