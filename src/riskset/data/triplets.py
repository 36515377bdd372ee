"""Building a canonical CSC matrix from (row, column, value) triplets in O(nnz): the compiled
passes behind the long-table reader (:mod:`riskset.data.long_covariates`)."""
import numpy as np
from numba import njit


@njit(cache=True, error_model="numpy")
def fill_columns(rows, cols, vals, has_value, indptr, fill, indices, data):
    """Place each triplet at its column's next free position ``fill[c]`` (advanced), with its
    value where ``has_value`` (without, ``data`` is not written: every value is 1). Returns
    the first column that would pass its end ``indptr[c + 1]`` (nothing of that triplet
    written), or -1."""
    for k in range(rows.shape[0]):
        c = cols[k]
        f = fill[c]
        if f >= indptr[c + 1]:
            return c
        indices[f] = rows[k]
        if has_value:
            data[f] = vals[k]
        fill[c] = f + 1
    return -1


@njit(cache=True, error_model="numpy")
def sort_columns(indptr, indices, data):
    """Sort each column's rows (with their values, where ``data`` holds one per row; a sorted
    column is left as it is). Returns the position of a repeated (row, column) pair, or -1."""
    duplicate = -1
    for c in range(indptr.shape[0] - 1):
        a, b = indptr[c], indptr[c + 1]
        for k in range(a + 1, b):
            if indices[k] < indices[k - 1]:
                order = np.argsort(indices[a:b], kind="mergesort")
                indices[a:b] = indices[a:b][order]
                if data.shape[0] == indices.shape[0]:
                    data[a:b] = data[a:b][order]
                break
        for k in range(a + 1, b):
            if indices[k] == indices[k - 1] and duplicate < 0:
                duplicate = k
    return duplicate


@njit(cache=True, error_model="numpy")
def dense_positions(wanted, low, table, out):
    """out[k] = table[wanted[k] - low] (a row id's position), -1 outside the table."""
    for k in range(wanted.shape[0]):
        i = wanted[k] - low
        out[k] = table[i] if 0 <= i < table.shape[0] else -1
