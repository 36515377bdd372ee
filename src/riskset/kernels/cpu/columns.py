"""Static facts about the columns of a CSC matrix, computed once per datafit."""
import numpy as np
from numba import njit


@njit(cache=True)
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
