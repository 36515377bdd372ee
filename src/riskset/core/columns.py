"""Static facts about the columns of a CSC matrix, computed once per datafit."""
import numpy as np
from numba import njit


@njit(cache=True, error_model="numpy")
def indicator_columns(indptr, values):
    """Boolean per column: every stored value is 1 (kernels then skip multiplications)."""
    n_cols = indptr.shape[0] - 1
    out = np.ones(n_cols, np.bool_)
    for c in range(n_cols):
        for k in range(indptr[c], indptr[c + 1]):
            if values[k] != 1.0:
                out[c] = False
                break
    return out


@njit(cache=True, nogil=True, error_model="numpy")
def columns_times(indptr, indices, values, cols, b, out):
    """out = X[:, cols] @ b without slicing X (O(nnz of the columns))."""
    out[:] = 0.0
    for a in range(cols.shape[0]):
        j = cols[a]
        ba = b[a]
        if ba != 0.0:
            for k in range(indptr[j], indptr[j + 1]):
                out[indices[k]] += values[k] * ba


@njit(cache=True, nogil=True, error_model="numpy")
def columns_dot(indptr, indices, values, cols, z, out):
    """out = X[:, cols]' @ z without slicing X (O(nnz of the columns))."""
    for a in range(cols.shape[0]):
        j = cols[a]
        s = 0.0
        for k in range(indptr[j], indptr[j + 1]):
            s += values[k] * z[indices[k]]
        out[a] = s


@njit(cache=True, nogil=True, error_model="numpy")
def columns_dot2(indptr, indices, values, cols, z, out, out2):
    """out = X[:, cols]' @ z and out2 = (X[:, cols] ** 2)' @ z in one pass."""
    for a in range(cols.shape[0]):
        j = cols[a]
        s = 0.0
        s2 = 0.0
        for k in range(indptr[j], indptr[j + 1]):
            xz = values[k] * z[indices[k]]
            s += xz
            s2 += values[k] * xz
        out[a] = s
        out2[a] = s2
