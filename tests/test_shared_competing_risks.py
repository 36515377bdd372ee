"""A Fine-Gray model over rows split into shards (riskset.sharded.competing_risks): the
log-likelihood, the gradient, the Jacobi curvature and the Hessian-vector products combined from
per-grid-point vectors against FineGrayDatafit on all the rows, with the censoring Kaplan-Meier
built from the shards' counts or the censoring weights given per row, heavy ties (competing and
censored rows tied with events), case weights (zeros included), offsets, other status codes,
1 to 5 shards of unequal size (one without events of interest, one of a single row, one empty)
and linear predictors far beyond exp's range."""
import pickle

import numpy as np

from helpers import assert_same_as_datafit, rows_of, shard_rows
import pytest
import scipy.sparse as sp

from riskset.core.design import CompactCSC
from riskset.exceptions import InputError
from riskset.models.fine_gray import FineGrayDatafit, censoring_survival
from riskset.sharded.competing_risks import (Censoring, CensoringCounts, FineGrayRowShard, combine_censoring_counts,
                                             given_censoring, hvp_multipliers, kaplan_meier_censoring,
                                             log_likelihood, multipliers)
from riskset.sharded.risk_sets import combine_counts, combine_hvp_sums, combine_sums, event_time_grid

CODES = dict(event_of_interest=1, competing_events=None, censor_code=0)


def data(seed, n=300, p=10, weights=False, offset=False, given=False, scale=0.3):
    """A sparse design with dense and indicator columns, integer times 1..8 (heavy ties), ~40%
    events of interest (code 1), ~30% competing (codes 2 and 3), ~30% censored."""
    rng = np.random.default_rng(seed)
    X = sp.random(n, p, density=0.15, random_state=np.random.RandomState(seed),
                  data_rvs=lambda k: rng.normal(size=k)).tolil()
    X[:, 0] = rng.normal(size=(n, 1))
    X[:, 1] = rng.uniform(0.5, 1.5, size=(n, 1))
    X[:, 2] = (rng.random((n, 1)) < 0.3).astype(float)
    time = rng.integers(1, 9, n).astype(float)
    status = rng.choice([0, 1, 2, 3], size=n, p=[0.3, 0.4, 0.2, 0.1])
    w = np.where(rng.random(n) < 0.15, 0.0, rng.uniform(0.5, 3.0, n)) if weights else None
    off = rng.normal(scale=0.5, size=n) if offset else None
    G = None
    if given:  # the events' G(t-) a function of time (tied events share it), the others' anything positive
        G = np.where(status == 1, np.exp(-0.07 * time), rng.uniform(0.2, 1.0, n))
    beta = rng.normal(scale=scale, size=p)
    return X.tocsc(), time, status, w, off, G, beta, rng


def partition(rng, status, n_shards):
    """Shards of unequal sizes (:func:`helpers.shard_rows`), one without events."""
    return shard_rows(rng, status != 1, n_shards)


def flags(status, codes=CODES):
    event = status == codes["event_of_interest"]
    censored = status == codes["censor_code"]
    return event.astype(np.uint8), (~event & ~censored).astype(np.uint8), censored.astype(np.uint8)


def censoring_of(time, status, w, G, parts, grid, codes=CODES):
    """The setup exchange: the Kaplan-Meier from the shards' censoring counts, or the given G."""
    if G is not None:
        return given_censoring(grid, [FineGrayRowShard.event_censor_weights(time[r], status[r], G[r], **codes)
                                      for r in parts])
    censor_grid = event_time_grid([FineGrayRowShard.censoring_times(time[r], status[r], rows_of(w, r), **codes)
                                   for r in parts])
    counts = combine_censoring_counts([FineGrayRowShard.censoring_counts(time[r], status[r], censor_grid,
                                                                         rows_of(w, r), **codes) for r in parts])
    return kaplan_meier_censoring(grid, censor_grid, counts)


def shards_of(X, time, status, w, off, G, parts, codes=CODES):
    grid = event_time_grid([FineGrayRowShard.event_times(time[r], status[r], rows_of(w, r), **codes) for r in parts])
    censoring = censoring_of(time, status, w, G, parts, grid, codes)
    return [FineGrayRowShard(X[r], time[r], status[r], grid, censoring, weights=rows_of(w, r), offset=rows_of(off, r),
                             censor_weights=rows_of(G, r), **codes) for r in parts]


def sharded(shards, beta, cols, v):
    """(log-likelihood, gradient, curvature, H_AA v) by the protocol of riskset.sharded.competing_risks."""
    counts = combine_counts([s.counts() for s in shards])
    total = combine_sums([s.sums(beta) for s in shards])
    ll = log_likelihood(total, counts)
    mult = multipliers(total, counts)
    parts = [s.gradient(beta, mult) for s in shards]
    gradient = np.sum([p.gradient for p in parts], axis=0)
    curvature = np.sum([p.curvature for p in parts], axis=0)
    hsum = combine_hvp_sums([s.hvp_sums(beta, total.shift, cols, v) for s in shards])
    Hv = np.sum([s.hvp(beta, cols, v, mult, hvp_multipliers(total, counts, hsum)) for s in shards], axis=0)
    return ll, gradient, curvature, Hv


def check_against_fine_gray(X, time, status, w, off, G, beta, parts, rng, codes=CODES):
    df = FineGrayDatafit(X, time, *flags(status, codes), weights=w, offset=off, censor_weights=G)
    p = X.shape[1]
    cols = np.sort(rng.choice(p, size=max(p - 2, 1), replace=False))
    v = rng.normal(size=cols.size)
    shards = shards_of(X, time, status, w, off, G, parts, codes)
    assert_same_as_datafit(df, beta, cols, v, *sharded(shards, beta, cols, v))


@pytest.mark.parametrize("n_shards", [1, 2, 3, 5])
@pytest.mark.parametrize("weights, offset, given", [(False, False, False), (True, False, False), (False, True, False),
                                                    (True, True, False), (False, False, True), (True, True, True)])
def test_sharded_equals_fine_gray_on_all_rows(n_shards, weights, offset, given):
    seed = 11 * n_shards + 3 * weights + 5 * offset + 7 * given
    X, time, status, w, off, G, beta, rng = data(seed, weights=weights, offset=offset, given=given)
    check_against_fine_gray(X, time, status, w, off, G, beta, partition(rng, status, n_shards), rng)


@pytest.mark.parametrize("given", [False, True])
def test_larger_data_in_four_shards(given):
    X, time, status, w, off, G, beta, rng = data(7, n=2000, p=30, weights=True, offset=True, given=given)
    time = time + rng.integers(0, 40, time.shape[0])  # more distinct times
    G = None if G is None else np.where(status == 1, np.exp(-0.01 * time), G)
    check_against_fine_gray(X, time, status, w, off, G, beta, partition(rng, status, 4), rng)


def test_other_status_codes():
    """Event of interest 2, competing events 1 and 3, censored 9."""
    X, time, status, w, off, G, beta, rng = data(3, weights=True, offset=True)
    recoded = np.choose(status, [9, 2, 1, 3])
    codes = dict(event_of_interest=2, competing_events=[1, 3], censor_code=9)
    check_against_fine_gray(X, time, recoded, w, off, None, beta, partition(rng, recoded == 2, 3), rng, codes)


def test_linear_predictors_beyond_exp_range():
    """Offsets of 740 and 760 (exp overflows at 710): the shards' shifts are all beyond exp's range."""
    X, time, status, w, off, G, beta, rng = data(5, weights=True)
    off = np.where(np.arange(X.shape[0]) % 3 == 0, 760.0, 740.0) + rng.normal(size=X.shape[0])
    parts = partition(rng, status, 3)
    shifts = [s.sums(beta).shift for s in shards_of(X, time, status, w, off, G, parts)]
    assert min(shifts) > 710 and len(set(shifts)) == 3
    check_against_fine_gray(X, time, status, w, off, G, beta, parts, rng)


def test_an_empty_shard_adds_nothing():
    X, time, status, w, off, G, beta, rng = data(4, weights=True, offset=True)
    parts = partition(rng, status, 2) + [np.zeros(0, np.int64)]
    check_against_fine_gray(X, time, status, w, off, G, beta, parts, rng)


def test_without_competing_events_it_is_breslow_cox():
    from riskset.models.cox import CoxDatafit

    X, time, status, w, off, G, beta, rng = data(6, weights=True, offset=True)
    status = np.where(status == 1, 1, 0)
    shards = shards_of(X, time, status, w, off, None, partition(rng, status, 3))
    counts = combine_counts([s.counts() for s in shards])
    ll = log_likelihood(combine_sums([s.sums(beta) for s in shards]), counts)
    cox = CoxDatafit(X, time, status, weights=w, offset=off, ties="breslow")
    ref = cox.loglik(cox.new_state(beta))
    assert abs(ll - ref) <= 1e-12 * abs(ref)


@pytest.mark.parametrize("weights", [False, True])
def test_kaplan_meier_from_shard_counts(weights):
    """G(t-) at the event times and at the competing rows' times equals the whole data's."""
    X, time, status, w, off, G, beta, rng = data(8, weights=weights)
    time = time + rng.integers(0, 5, time.shape[0]) / 10
    parts = partition(rng, status, 4)
    grid = event_time_grid([FineGrayRowShard.event_times(time[r], status[r], rows_of(w, r)) for r in parts])
    censoring = censoring_of(time, status, w, None, parts, grid)
    ut, _, G_left = censoring_survival(time, status == 0, w)
    np.testing.assert_allclose(censoring.at_grid, G_left[np.searchsorted(ut, grid)], rtol=1e-14)
    np.testing.assert_allclose(censoring.left_limits(ut), G_left, rtol=1e-14)


def test_a_competing_event_before_every_event_time_stays_in_every_risk_set():
    """Rows: a competing event at 0.5 (before the first event time), events at 1 and 2, a
    censored row at 1.5: D_g = w_event-free + G(t_g-)/G(0.5-) w_competing."""
    X = sp.csc_matrix(np.array([[1.0], [0.0], [0.5], [2.0]]))
    time, status = np.array([0.5, 1.0, 2.0, 1.5]), np.array([2, 1, 1, 0])
    parts = [np.array([0]), np.array([1, 2, 3])]
    beta = np.array([0.7])
    check_against_fine_gray(X, time, status, None, None, None, beta, parts, np.random.default_rng(1))
    shard = shards_of(X, time, status, None, None, None, parts)[0]
    assert shard.late_rows.tolist() == [0] and shard.sums(beta).rows == 1
    G = censoring_of(time, status, None, None, parts, np.array([1.0, 2.0]))
    assert G.at_grid.tolist() == [1.0, 0.5]  # the censoring at 1.5 halves G after it


def test_given_weights_of_tied_events_must_agree_across_shards():
    time, status = np.array([1.0, 1.0, 2.0]), np.array([1, 1, 2])
    a = FineGrayRowShard.event_censor_weights(time[:1], status[:1], [0.9])
    b = FineGrayRowShard.event_censor_weights(time[1:], status[1:], [0.8, 0.5])
    with pytest.raises(InputError, match="tied at time 1 in different shards have different censoring weights"):
        given_censoring(np.array([1.0]), [a, b])
    with pytest.raises(InputError, match="tied at time 1 have different censoring weights"):
        FineGrayRowShard.event_censor_weights(time, status, [0.9, 0.8, 0.5])
    with pytest.raises(InputError, match="no shard reports the censoring weight of the event time 3"):
        given_censoring(np.array([1.0, 3.0]), [a])


def test_a_shard_pickles_without_its_kept_vectors():
    X, time, status, w, off, G, beta, rng = data(3, n=60)
    shard = shards_of(X, time, status, w, off, G, [np.arange(60)])[0]
    before = shard.nbytes
    sums = shard.sums(beta)
    assert shard.nbytes > before
    copy = pickle.loads(pickle.dumps(shard))
    np.testing.assert_array_equal(copy.sums(beta).S0, sums.S0)
    assert (copy.n_rows, copy.n_coef) == (60, X.shape[1])


def test_a_compact_design():
    X, time, status, w, off, G, beta, rng = data(2)
    parts = partition(rng, status, 2)
    plain = shards_of(X, time, status, w, off, G, parts)
    compact = [FineGrayRowShard(CompactCSC.of(X[r].tocsc()), time[r], status[r], s.grid,
                                censoring_of(time, status, w, G, parts, s.grid)) for r, s in zip(parts, plain)]
    for a, b in zip(plain, compact):
        np.testing.assert_allclose(a.sums(beta).S0, b.sums(beta).S0, rtol=1e-14)


KM = Censoring(at_grid=np.array([1.0, 0.9, 0.8]), times=np.array([1.5]), survival=np.array([0.8]))


@pytest.mark.parametrize("change, message", [
    (dict(time=np.ones(3)), "time must hold one value per row"),
    (dict(time=[1.0, -2.0, 3.0, 4.0]), "negative survival time -2 at row 1"),
    (dict(status=[0, 1.5, 1, 0]), "status codes must be integers"),
    (dict(status=[0, 7, 1, 0], competing_events=[2]), "unknown status code"),
    (dict(weights=[1, -1, 1, 1]), "weights must not be negative"),
    (dict(offset=[0, 0, np.inf, 0]), "offset is not finite"),
    (dict(grid=[1.0, 3.0], censoring=KM._replace(at_grid=np.ones(2))), "event time 2 of row 1 is not on the grid"),
    (dict(grid=[2.0, 1.0, 4.0]), "strictly increasing"),
    (dict(censoring=KM._replace(at_grid=np.ones(2))), "one G\\(t-\\) in \\[0, 1\\] per grid point"),
    (dict(censoring=KM._replace(times=None, survival=None)), "censor_weights are not given"),
    (dict(censor_weights=[1.0, 0.9, 0.9, 0.8]), "censor_weights are given"),
    (dict(censoring=KM._replace(times=None, survival=None), censor_weights=[1.0, 0.9, 0.0, 0.8]),
     "censoring weight 0 on a competing event"),
    (dict(censoring=KM._replace(times=None, survival=None), censor_weights=[1.0, 1.2, 0.9, 0.8]),
     "censoring weights must lie in \\[0, 1\\]"),
    (dict(censoring=(1.0, 0.9, 0.8)), "censoring must be a Censoring"),
    (dict(X=np.ones((4, 1))), "X must be a scipy sparse matrix"),
])
def test_bad_inputs_are_named(change, message):
    args = dict(X=sp.csc_matrix(np.ones((4, 1))), time=[1.0, 2.0, 3.0, 4.0], status=[0, 1, 2, 1],
                grid=[1.0, 2.0, 4.0], censoring=KM)
    args.update(change)
    X, time, status, grid, censoring = (args.pop(k) for k in ("X", "time", "status", "grid", "censoring"))
    with pytest.raises(InputError, match=message):
        FineGrayRowShard(X, time, status, grid, censoring, **args)


def test_bad_censoring_grids_and_counts_are_named():
    time, status = np.array([1.0, 2.0, 3.0]), np.array([0, 1, 0])
    with pytest.raises(InputError, match="censoring time 3 of row 2 is not on the censor grid"):
        FineGrayRowShard.censoring_counts(time, status, [1.0])
    with pytest.raises(InputError, match="censor_grid must be a vector of finite, strictly increasing times"):
        FineGrayRowShard.censoring_counts(time, status, [3.0, 1.0])
    counts = FineGrayRowShard.censoring_counts(time, status, [1.0, 3.0])
    assert counts.censored.tolist() == [1.0, 1.0] and counts.at_risk.tolist() == [3.0, 1.0]
    with pytest.raises(InputError, match="one value per censoring time"):
        kaplan_meier_censoring([2.0], [1.0], counts)
    with pytest.raises(InputError, match="censoring counts must be vectors over one grid"):
        combine_censoring_counts([counts, CensoringCounts(np.ones(3), np.ones(3))])
