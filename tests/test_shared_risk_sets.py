"""A Cox model over rows split into shards (riskset.sharded.risk_sets): the log-likelihood, the
gradient, the Jacobi curvature and the Hessian-vector products combined from per-grid-point
vectors against CoxDatafit on all the rows, with Breslow and Efron ties, heavy ties, case weights
(zeros included), (start, stop] rows, offsets, sparse and dense columns, 1 to 5 shards of unequal
size (one without events, one of a single row) and linear predictors far beyond exp's range."""
import pickle

import numpy as np

from helpers import assert_same_as_datafit, rows_of, shard_rows
import pytest
import scipy.sparse as sp

from riskset.core.design import CompactCSC
from riskset.exceptions import InputError
from riskset.models.cox import CoxDatafit
from riskset.sharded.risk_sets import (CoxRowShard, EventCounts, RiskSums, combine_counts, combine_hvp_sums,
                                       combine_sums, event_time_grid, hvp_multipliers, log_likelihood, multipliers)

TIES = ("breslow", "efron")


def data(seed, n=300, p=10, start=False, weights=False, offset=False, scale=0.3):
    """A sparse design with two dense columns, integer times 1..8 (heavy ties), ~60% events."""
    rng = np.random.default_rng(seed)
    X = sp.random(n, p, density=0.15, random_state=np.random.RandomState(seed),
                  data_rvs=lambda k: rng.normal(size=k)).tolil()
    X[:, 0] = rng.normal(size=(n, 1))
    X[:, 1] = rng.uniform(0.5, 1.5, size=(n, 1))
    X[:, 2] = (rng.random((n, 1)) < 0.3).astype(float)  # an indicator
    time = rng.integers(1, 9, n).astype(float)
    status = (rng.random(n) < 0.6).astype(np.int64)
    st = None
    if start:
        st = np.floor(rng.random(n) * time * 0.9)
        st = np.where(rng.random(n) < 0.3, -np.inf, st)
    w = np.where(rng.random(n) < 0.15, 0.0, rng.uniform(0.5, 3.0, n)) if weights else None
    off = rng.normal(scale=0.5, size=n) if offset else None
    beta = rng.normal(scale=scale, size=p)
    return X.tocsc(), time, status, st, w, off, beta, rng


def partition(rng, status, n_shards):
    """Shards of unequal sizes (:func:`helpers.shard_rows`), one without events."""
    return shard_rows(rng, status == 0, n_shards)


def shards_of(X, time, status, st, w, off, ties, parts):
    times = [CoxRowShard.event_times(time[r], status[r], rows_of(w, r)) for r in parts]
    grid = event_time_grid(times)
    return [CoxRowShard(X[r], time[r], status[r], grid, start=rows_of(st, r), weights=rows_of(w, r),
                        offset=rows_of(off, r),
                        ties=ties) for r in parts]


def sharded(shards, beta, ties, cols, v):
    """(log-likelihood, gradient, curvature, H_AA v) by the protocol of riskset.sharded.risk_sets."""
    counts = combine_counts([s.counts() for s in shards])
    total = combine_sums([s.sums(beta) for s in shards])
    ll = log_likelihood(total, counts, ties)
    mult = multipliers(total, counts, ties)
    parts = [s.gradient(beta, mult) for s in shards]
    gradient = np.sum([p.gradient for p in parts], axis=0)
    curvature = np.sum([p.curvature for p in parts], axis=0)
    hsum = combine_hvp_sums([s.hvp_sums(beta, total.shift, cols, v) for s in shards])
    hm = hvp_multipliers(total, counts, hsum, ties)
    Hv = np.sum([s.hvp(beta, cols, v, mult, hm) for s in shards], axis=0)
    return ll, gradient, curvature, Hv


def check_against_cox(X, time, status, st, w, off, beta, ties, parts, rng):
    df = CoxDatafit(X, time, status, start=st, weights=w, offset=off, ties=ties)
    p = X.shape[1]
    cols = np.sort(rng.choice(p, size=p - 2, replace=False))
    v = rng.normal(size=cols.size)
    shards = shards_of(X, time, status, st, w, off, ties, parts)
    assert_same_as_datafit(df, beta, cols, v, *sharded(shards, beta, ties, cols, v))


@pytest.mark.parametrize("ties", TIES)
@pytest.mark.parametrize("n_shards", [1, 2, 3, 5])
@pytest.mark.parametrize("start, weights, offset", [(False, False, False), (True, False, True), (False, True, False),
                                                    (True, True, True)])
def test_sharded_equals_cox_on_all_rows(ties, n_shards, start, weights, offset):
    seed = 11 * n_shards + 3 * start + 5 * weights
    X, time, status, st, w, off, beta, rng = data(seed, start=start, weights=weights, offset=offset)
    check_against_cox(X, time, status, st, w, off, beta, ties, partition(rng, status, n_shards), rng)


@pytest.mark.parametrize("ties", TIES)
def test_larger_data_in_four_shards(ties):
    X, time, status, st, w, off, beta, rng = data(7, n=2000, p=30, start=True, weights=True, offset=True)
    check_against_cox(X, time, status, st, w, off, beta, ties, partition(rng, status, 4), rng)


@pytest.mark.parametrize("ties", TIES)
def test_linear_predictors_beyond_exp_range(ties):
    """Offsets of 740 and 760 (exp overflows at 710): the shards' shifts are all beyond exp's range."""
    X, time, status, st, w, off, beta, rng = data(5, start=True, weights=True)
    off = np.where(np.arange(X.shape[0]) % 3 == 0, 760.0, 740.0) + rng.normal(size=X.shape[0])
    parts = partition(rng, status, 3)
    shifts = [s.sums(beta).shift for s in shards_of(X, time, status, st, w, off, ties, parts)]
    assert min(shifts) > 710 and len(set(shifts)) == 3
    check_against_cox(X, time, status, st, w, off, beta, ties, parts, rng)


@pytest.mark.parametrize("ties", TIES)
def test_an_empty_shard_adds_nothing(ties):
    X, time, status, st, w, off, beta, rng = data(4, start=True, weights=True, offset=True)
    parts = partition(rng, status, 2) + [np.zeros(0, np.int64)]
    check_against_cox(X, time, status, st, w, off, beta, ties, parts, rng)


def test_right_censored_without_options_on_a_compact_design():
    X, time, status, st, w, off, beta, rng = data(2)
    parts = partition(rng, status, 2)
    df = CoxDatafit(X, time, status)
    times = [CoxRowShard.event_times(time[r], status[r]) for r in parts]
    shards = [CoxRowShard(CompactCSC.of(X[r].tocsc()), time[r], status[r], event_time_grid(times)) for r in parts]
    counts = combine_counts([s.counts() for s in shards])
    total = combine_sums([s.sums(beta) for s in shards])
    ref = df.loglik(df.new_state(beta))
    assert abs(log_likelihood(total, counts, "breslow") - ref) <= 1e-12 * abs(ref)


def test_counts_and_grid_hold_the_events_of_positive_weight():
    time, status, w = np.array([1.0, 2.0, 2.0, 3.0, 4.0]), np.array([1, 1, 1, 1, 0]), np.array([2.0, 1.0, 0.5, 0, 1])
    grid = event_time_grid([CoxRowShard.event_times(time, status, w)])
    assert grid.tolist() == [1.0, 2.0]
    shard = CoxRowShard(sp.csc_matrix(np.ones((5, 1))), time, status, grid, weights=w)
    assert shard.counts().d.tolist() == [2.0, 1.5]
    assert shard.counts().m.tolist() == [1.0, 2.0]


def test_a_shard_outside_every_risk_set_adds_nothing():
    """Rows censored before the first event time take part in no risk set, whatever their eta."""
    shard = CoxRowShard(sp.csc_matrix(np.array([[1.0], [2.0]])), [0.5, 0.7], [0, 0], np.array([1.0, 2.0]))
    sums = shard.sums(np.array([1000.0]))
    assert sums.rows == 0 and sums.shift == 0.0 and not sums.S0.any()
    mult = multipliers(sums, EventCounts(np.ones(2), np.ones(2)), "breslow")
    assert np.all(shard.gradient(np.array([1000.0]), mult).gradient == 0.0)


def test_log_likelihood_is_minus_inf_without_a_positive_risk_set():
    sums = RiskSums(shift=0.0, S0=np.array([2.0, 0.0]), E0=np.array([1.0, 0.0]), event_eta=0.5, rows=2)
    counts = EventCounts(d=np.array([1.0, 1.0]), m=np.array([1.0, 1.0]))
    for ties in TIES:
        assert log_likelihood(sums, counts, ties) == -np.inf


def test_a_shard_pickles_without_its_kept_vectors():
    X, time, status, st, w, off, beta, rng = data(3, n=50)
    grid = event_time_grid([CoxRowShard.event_times(time, status)])
    shard = CoxRowShard(X, time, status, grid)
    before = shard.nbytes
    sums = shard.sums(beta)
    assert shard.nbytes > before
    copy = pickle.loads(pickle.dumps(shard))
    np.testing.assert_array_equal(copy.sums(beta).S0, sums.S0)
    assert (copy.n_rows, copy.n_coef) == (50, X.shape[1])


@pytest.mark.parametrize("change, message", [
    (dict(time=np.ones(3)), "time must hold one value per row"),
    (dict(time=np.r_[np.nan, np.ones(3)]), "time is not finite"),
    (dict(status=[0, 2, 1, 0]), "status must be 0"),
    (dict(weights=[1, -1, 1, 1]), "weights must not be negative"),
    (dict(start=[0.0, 3.0, 0.0, 0.0]), "start time 3 is not before stop time 2"),
    (dict(offset=[0, 0, np.inf, 0]), "offset is not finite"),
    (dict(grid=[1.0, 3.0]), "event time 2 of row 1 is not on the grid"),
    (dict(grid=[2.0, 1.0]), "strictly increasing"),
    (dict(ties="exact"), "ties must be one of"),
    (dict(X=np.ones((4, 1))), "X must be a scipy sparse matrix"),
])
def test_bad_inputs_are_named(change, message):
    args = dict(X=sp.csc_matrix(np.ones((4, 1))), time=[1.0, 2.0, 3.0, 4.0], status=[1, 1, 0, 1],
                grid=[1.0, 2.0, 4.0])
    args.update(change)
    X, time, status, grid = args.pop("X"), args.pop("time"), args.pop("status"), args.pop("grid")
    with pytest.raises(InputError, match=message):
        CoxRowShard(X, time, status, grid, **args)


def test_bad_coefficients_and_multipliers_are_named():
    shard = CoxRowShard(sp.csc_matrix(np.ones((3, 2))), [1.0, 2.0, 3.0], [1, 1, 0], [1.0, 2.0])
    with pytest.raises(InputError, match="beta must hold one coefficient per column"):
        shard.sums(np.zeros(3))
    with pytest.raises(InputError, match="A must hold one value per grid point"):
        shard.gradient(np.zeros(2), multipliers(shard.sums(np.zeros(2)), shard.counts(), "breslow")._replace(
            A=np.zeros(3)))
    with pytest.raises(InputError, match="columns must lie in"):
        shard.hvp_sums(np.zeros(2), 0.0, [2], [1.0])
