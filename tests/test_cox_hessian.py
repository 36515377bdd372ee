"""The Cox Hessian block (CoxDatafit.hessian, kernels/cpu/cox_hessian.hessian_block) against the
risk-set sums written out as dense slot x row matrices, on random designs with ties, Efron
ties, strata, (start, stop] rows, case weights (zeros included) and empty columns."""
import numpy as np
import pytest
import scipy.sparse as sp

from riskset.models.cox import CoxDatafit

TIES = ("breslow", "efron")


def design(seed, n, p, n_strata, start, weights):
    rng = np.random.default_rng(seed)
    X = sp.random(n, p, density=0.3, random_state=np.random.RandomState(seed),
                  data_rvs=lambda k: rng.normal(size=k)).tolil()
    X[:, 0] = (rng.random((n, 1)) < 0.4).astype(float)  # an indicator
    X[:, p - 1] = 0.0  # an empty column
    time = rng.integers(1, 9, n).astype(float)
    status = (rng.random(n) < 0.6).astype(np.int64)
    st = None
    if start:
        st = np.floor(rng.random(n) * time * 0.9)
        st = np.where(rng.random(n) < 0.3, 0.0, st)
    strata = rng.integers(0, n_strata, n) if n_strata else None
    w = np.where(rng.random(n) < 0.15, 0.0, rng.uniform(0.5, 3.0, n)) if weights else None
    return X.tocsc(), time, status, st, strata, w, rng


def reference_hessian(df, state, cols):
    """-X' diag(v) X + N1' Q2 N1 - N1' R2 E1 - E1' R2 N1 + E1' T2 E1 with N1 = AtRisk (w x),
    E1 = EventAt (w x) as dense (n_slots x N) matrices (state synced by df.hessian)."""
    X = df.design.to_csc(cols).toarray()
    slots = np.arange(df.rs.n_slots)[:, None]
    at_risk = (df.ks[None, :] <= slots) & (slots < df.ke[None, :])
    event_at = (df.event[None, :] == 1) & (df.ke[None, :] - 1 == slots)
    wx = state.w[:, None] * X
    N1, E1 = at_risk @ wx, event_at @ wx
    v = state.w * (state.sums.A1c[df.ke] - state.sums.A1c[df.ks])
    if df.efron:
        v = v - df.event * state.w * state.sums.R1[df.ke - 1]
    H = -X.T @ (v[:, None] * X) + N1.T @ (state.sums.Q2[:, None] * N1)
    if df.efron:
        C = N1.T @ (state.sums.R2[:, None] * E1)
        H += -C - C.T + E1.T @ (state.sums.T2[:, None] * E1)
    return H


@pytest.mark.parametrize("ties", TIES)
@pytest.mark.parametrize("n_strata, start", [(0, False), (5, False), (0, True), (4, True)])
@pytest.mark.parametrize("seed", [1, 2, 3])
def test_hessian_block_equals_the_risk_set_sums(ties, n_strata, start, seed):
    X, time, status, st, strata, w, rng = design(seed, n=150, p=9, n_strata=n_strata, start=start,
                                                 weights=seed != 1)
    df = CoxDatafit(X, time, status, st, strata, w, ties=ties)
    state = df.new_state(rng.normal(scale=0.4, size=X.shape[1]))
    cols = rng.permutation(X.shape[1])[:7]
    H = df.hessian(state, cols)
    ref = reference_hessian(df, state, cols)
    np.testing.assert_allclose(H, ref, rtol=0, atol=1e-12 * np.abs(ref).max())
    assert np.array_equal(H, H.T)


def test_one_row_strata_and_many_columns():
    """Strata of one or two rows (the S sums restart at every stratum) and a block of every column."""
    X, time, status, _, _, w, rng = design(7, n=120, p=25, n_strata=0, start=False, weights=True)
    strata = np.arange(120) // 2
    strata[:10] = np.arange(10)  # single-row strata too
    status[::2] = 1
    df = CoxDatafit(X, time, status, None, strata, w, ties="efron")
    state = df.new_state(rng.normal(scale=0.3, size=25))
    cols = np.arange(25)
    ref = reference_hessian(df, state, cols)
    np.testing.assert_allclose(df.hessian(state, cols), ref, rtol=0, atol=1e-12 * np.abs(ref).max())
