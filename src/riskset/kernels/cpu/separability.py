"""Numba kernel of the univariable separability check of the GLM families."""
import numpy as np
from numba import njit, prange


@njit(cache=True, nogil=True, error_model="numpy")
def class_ranges(indptr, indices, values, value_shift, columns, row_class, class_size, out):
    """Per column c of ``columns``: the smallest and largest value of x_c within each row class.

    The value of non-zero p of column j is ``values[p + value_shift[j]]`` (core.design.CompactCSC).
    ``row_class[i]`` in {0, 1, 2} (-1: row ignored); ``class_size[k]`` rows are in class k,
    so a class with fewer stored entries than rows also holds an implicit 0.
    ``out[a, k] = (min, max)`` of class k for column ``columns[a]`` (+inf, -inf if empty). O(nnz).
    """
    n_class = class_size.shape[0]
    seen = np.zeros(n_class, np.int64)
    for a in range(columns.shape[0]):
        j = columns[a]
        for k in range(n_class):
            out[a, k, 0], out[a, k, 1] = np.inf, -np.inf
            seen[k] = 0
        for p in range(indptr[j], indptr[j + 1]):
            k = row_class[indices[p]]
            if k < 0:
                continue
            v = values[p + value_shift[j]]
            seen[k] += 1
            out[a, k, 0] = min(out[a, k, 0], v)
            out[a, k, 1] = max(out[a, k, 1], v)
        for k in range(n_class):
            if seen[k] < class_size[k]:
                out[a, k, 0] = min(out[a, k, 0], 0.0)
                out[a, k, 1] = max(out[a, k, 1], 0.0)


@njit(cache=True, nogil=True, parallel=True, error_model="numpy")
def constant_columns(indptr, data, n_rows):
    """Whether each CSC column is constant over the ``n_rows`` rows (its stored values and, where
    it stores fewer than ``n_rows``, the implicit zeros all equal). O(nnz), columns on all threads."""
    n_cols = indptr.shape[0] - 1
    out = np.empty(n_cols, np.bool_)
    for j in prange(n_cols):
        a, b = indptr[j], indptr[j + 1]
        lo = 0.0 if b - a < n_rows or a == b else data[a]
        hi = lo
        for p in range(a, b):
            lo = min(lo, data[p])
            hi = max(hi, data[p])
        out[j] = lo == hi
    return out


@njit(cache=True, nogil=True, parallel=True, error_model="numpy")
def column_moments(indptr, indices, data, columns, y, out):
    """``out[a] = (sum x, sum x^2, sum x y)`` over the stored entries of CSC column ``columns[a]``
    (``data``: a value per stored entry). O(nnz of the columns), no copy of X."""
    for a in prange(columns.shape[0]):
        j = columns[a]
        s = s2 = sy = 0.0
        for p in range(indptr[j], indptr[j + 1]):
            v = data[p]
            s += v
            s2 += v * v
            sy += v * y[indices[p]]
        out[a, 0], out[a, 1], out[a, 2] = s, s2, sy
