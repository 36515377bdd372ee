"""The parallel preparation of the risk-set families: ``riskset.data.ordering.lexsort`` is
``np.lexsort``, and the risk sets and Fine-Gray slots built by linear passes over its order are
the arrays that NumPy's sorts, ``np.unique`` and ``searchsorted`` gave, bit for bit."""
from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from helpers import numpy_risk_sets
from riskset.data.ordering import lexsort
from riskset.data.risksets import build_risk_sets
from riskset.models.fine_gray import FineGrayDatafit, censoring_survival, classify_status


def assert_same_arrays(a, b):
    for name in vars(b):
        x, y = getattr(a, name), getattr(b, name)
        if isinstance(y, np.ndarray):
            assert x.dtype == y.dtype, name
            np.testing.assert_array_equal(x, y, err_msg=name)
        else:
            assert x == y, name


def awkward_floats(rng, n):
    """Ties, signed zeros, infinities, NaN and subnormals among exponential times."""
    t = rng.exponential(size=n)
    t[rng.random(n) < 0.2] = 0.0
    t[rng.random(n) < 0.1] = -0.0
    t[rng.random(n) < 0.1] *= -1
    t[rng.random(n) < 0.02] = np.nan
    t[rng.random(n) < 0.02] = -np.inf
    t[rng.random(n) < 0.02] = np.inf
    t[rng.random(n) < 0.02] = 5e-324
    t[rng.random(n) < 0.3] = 1.5  # a run of ties
    return t


@pytest.mark.parametrize("n", [0, 1, 2, 3, 50, 1000, 70_000])
def test_lexsort_is_numpys_on_awkward_keys(n):
    rng = np.random.default_rng(n)
    t = awkward_floats(rng, n)
    status = (rng.random(n) < 0.3).astype(np.uint8)
    strata = rng.integers(-3, 10, n)
    flags = rng.random(n) < 0.5
    for keys in [(t,), (-status.astype(np.int64), -t), (-status.astype(np.int64), -t, strata),
                 (status, flags, np.round(t * 10)), (strata.astype(np.int32), np.uint16(7) * status)]:
        for parallel_from in (1, 10**9):  # the radix sort and NumPy's, whatever the size
            np.testing.assert_array_equal(lexsort(keys, parallel_from=parallel_from), np.lexsort(keys))


@settings(max_examples=60, deadline=None)
@given(hnp.arrays(np.float64, st.integers(2, 300), elements=st.sampled_from([0.0, -0.0, 1.0, 2.5, -3.0, np.inf,
                                                                               -np.inf, np.nan, 1e-300])),
       st.integers(0, 2**32 - 1))
def test_lexsort_of_few_values_is_numpys(t, seed):
    keys = (np.random.default_rng(seed).integers(0, 3, t.shape[0]), t)
    np.testing.assert_array_equal(lexsort(keys, parallel_from=1), np.lexsort(keys))


def survival_rows(rng, n, days):
    time = rng.integers(1, 40, n).astype(float) if days else np.round(rng.exponential(size=n), 3)
    status = (rng.random(n) < 0.4).astype(np.uint8)
    start = np.where(rng.random(n) < 0.3, -np.inf, time - rng.integers(0, 30, n) / (1 if days else 20))
    start[rng.random(n) < 0.05] = np.inf if n else 0.0
    weights = np.where(rng.random(n) < 0.1, 0.0, rng.random(n))
    return time, status, start, weights


@pytest.mark.parametrize("n, days, n_strata", [(1, True, 1), (7, False, 1), (400, True, 1), (400, False, 5),
                                               (50_000, True, 1), (50_000, False, 40)])
def test_risk_sets_are_the_numpy_ones(n, days, n_strata):
    rng = np.random.default_rng(n + n_strata)
    time, status, start, weights = survival_rows(rng, n, days)
    strata = rng.integers(0, n_strata, n)
    status[np.unique(strata, return_index=True)[1]] = 1  # an event in every stratum
    for args in [(time, status), (time, status, start), (time, status, None, strata, weights),
                 (time, status, start, strata, weights)]:
        assert_same_arrays(build_risk_sets(*args), numpy_risk_sets(*args))


def old_fine_gray_slots(time, event, cens, cw):
    """The Fine-Gray datafit's slots and censoring weights as NumPy's sorts gave them."""
    order = np.lexsort((-event.astype(np.int64), -time))
    t, e, c, w = time[order], event[order], cens[order], cw[order]
    slot_time = np.unique(t[e == 1])[::-1]
    slot = slot_time.shape[0] - np.searchsorted(slot_time[::-1], t, side="right")
    utimes, inv = np.unique(t, return_inverse=True)
    n_at = np.bincount(inv, weights=w, minlength=utimes.shape[0])
    n_cens = np.bincount(inv, weights=w * c, minlength=utimes.shape[0])
    at_risk = np.cumsum(n_at[::-1])[::-1]
    with np.errstate(divide="ignore", invalid="ignore"):
        frac = np.where(at_risk > 0, n_cens / at_risk, 0.0)
    G_left = np.r_[1.0, np.cumprod(1.0 - np.minimum(frac, 1.0))[:-1]]
    return order, slot_time, slot, G_left[np.searchsorted(utimes, t)], G_left[np.searchsorted(utimes, slot_time)]


@pytest.mark.parametrize("n, days", [(3, True), (500, False), (60_000, True), (60_000, False)])
def test_fine_gray_slots_and_censoring_weights_are_the_numpy_ones(n, days):
    rng = np.random.default_rng(n)
    time = rng.integers(0, 50, n).astype(float) if days else np.round(rng.exponential(size=n), 4)
    status = rng.choice([0, 1, 2], n, p=[0.5, 0.3, 0.2])
    status[0] = 1
    outcome = classify_status(status)
    cw = np.where(rng.random(n) < 0.1, 0.0, rng.integers(1, 4, n).astype(float))
    fit = FineGrayDatafit(sp.csc_matrix(np.ones((n, 1))), time, outcome.event, outcome.competing,
                          outcome.censored, weights=cw)
    order, slot_time, slot, G_rows, G_slots = old_fine_gray_slots(time, outcome.event, outcome.censored, cw)
    np.testing.assert_array_equal(fit.order, order)
    np.testing.assert_array_equal(fit.slot_time, slot_time)
    np.testing.assert_array_equal(fit.slot, slot)
    with np.errstate(divide="ignore"):
        np.testing.assert_array_equal(fit.invG, np.where(G_rows > 0, 1.0 / G_rows, 0.0))
    np.testing.assert_array_equal(fit.Gev, G_slots)
    ut, G, G_left = censoring_survival(time, outcome.censored, cw)  # input order: NumPy's unique
    np.testing.assert_array_equal(ut, np.unique(time))
    np.testing.assert_array_equal(censoring_survival(fit.time, fit.cens, fit.cw)[2], G_left)  # sorted: one pass
