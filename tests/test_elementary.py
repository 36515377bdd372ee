"""The kernels' vectorizable exp (riskset.kernels.cpu.elementary) against NumPy's."""
import numpy as np
import pytest
from numba import njit

from riskset.kernels.cpu import elementary


@njit(cache=False)
def exp_of(x):
    out = np.empty_like(x)
    for i in range(x.shape[0]):
        out[i] = elementary.exp(x[i])
    return out


def ulps(a, b):
    """Distance in units in the last place between float64 arrays of one sign."""
    return np.abs(a.view(np.int64) - b.view(np.int64))


def test_exp_within_one_unit_in_the_last_place_over_the_whole_range():
    rng = np.random.default_rng(7)
    x = np.concatenate([rng.uniform(-745.0, 709.7, 400_000), rng.normal(0.0, 1.0, 200_000),
                        rng.uniform(-1e-8, 1e-8, 10_000), np.arange(-700.0, 701.0)])
    got, want = exp_of(x), np.exp(x)
    assert np.all(want > 0)
    assert ulps(got, want).max() <= 1
    assert np.mean(got == want) > 0.85  # mostly the correctly rounded value


@pytest.mark.parametrize("x", [0.0, -0.0, 1.0, -1.0, 709.78, 709.79, 1e300, np.inf, -708.5, -745.1, -745.2, -1e300,
                               -np.inf, np.nan])
def test_exp_special_values_as_numpy(x):
    with np.errstate(over="ignore"):
        want = np.exp(np.float64(x))
    got = exp_of(np.array([x]))[0]
    if np.isfinite(want) and want > 0:
        assert ulps(np.array([got]), np.array([want]))[0] <= 1
    else:  # inf, 0 and NaN exactly
        assert got == want or (np.isnan(got) and np.isnan(want))
