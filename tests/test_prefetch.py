"""The software prefetch of the sweep kernels (riskset.core.prefetch) compiles for the
arrays and index types the kernels pass, and is only a hint: results are unchanged."""
import numpy as np
import pytest
from numba import njit

from riskset.core.prefetch import DISTANCE, prefetch


@njit(cache=False)
def _gathered(array, rows):
    """sum of array[rows[k]] (first field of 2-D rows), prefetching DISTANCE rows ahead."""
    total = 0.0
    n = rows.shape[0]
    for k in range(n):
        if k + DISTANCE < n:
            prefetch(array, rows[k + DISTANCE])
        total += array[rows[k]] if array.ndim == 1 else array[rows[k], 0]
    return total


@pytest.mark.parametrize("index_type", [np.uint32, np.int32, np.int64])
@pytest.mark.parametrize("ndim", [1, 2])
def test_prefetch_is_only_a_hint(index_type, ndim):
    rng = np.random.default_rng(3)
    array = rng.standard_normal((5000, 6) if ndim == 2 else 5000)
    rows = np.sort(rng.choice(5000, 700, replace=False)).astype(index_type)
    expected = 0.0
    for r in rows:  # the same order of additions
        expected += array[r] if ndim == 1 else array[r, 0]
    assert _gathered(array, rows) == expected


def test_prefetch_refuses_a_row_that_is_not_an_integer():
    @njit(cache=False)
    def by_float(array):
        prefetch(array, 1.5)

    with pytest.raises(Exception, match="prefetch"):
        by_float(np.zeros(4))
