"""Building a canonical CSC matrix from (row, column, value) triplets in O(nnz): the compiled
pass behind the long-table builders (:mod:`riskset.data.ingest`)."""
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
    for k in range(nnz):
        c = cols[k]
        indices[fill[c]] = rows[k]
        data[fill[c]] = vals[k]
        fill[c] += 1
    duplicate = -1
    for c in range(n_cols):
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
    return indptr, indices, data, duplicate
