"""Fine-Gray second-order information: Hessian-vector products (the Newton polish's conjugate
gradients) against the dense Hessian block and against finite differences of the gradient."""
import numpy as np
import pytest
from test_fine_gray import datafit, tied_data

import riskset
from riskset.data import from_arrays
from riskset.solver.ccd import SolverOptions, fit_ccd


def products(df, state, cols, vectors):
    quad = df.local_quadratic(state, cols)
    return quad, np.column_stack([quad.hessian_times(b) for b in vectors.T])


@pytest.mark.parametrize("weights", [True, False])
def test_local_quadratic_is_the_hessian_block(rng, weights):
    """gradient = gradient(), H b = hessian() @ b (rows before and after every event time,
    competing rows tied with events, case weights), curvature >= -diag(H) > 0."""
    X, time, status, w = tied_data(rng, n=90, p=7, weights=weights)
    df = datafit(X, time, status, w)
    state = df.new_state(rng.normal(scale=0.4, size=X.shape[1]))
    cols = np.array([4, 0, 2, 6])
    B = rng.normal(size=(cols.size, 3))
    quad, HB = products(df, state, cols, B)
    H = df.hessian(state, cols)
    np.testing.assert_allclose(quad.gradient, df.gradient(state)[cols], rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(HB, H @ B, rtol=1e-12, atol=1e-12 * np.abs(H).max())
    assert np.all(quad.curvature >= -np.diag(H) - 1e-12) and np.all(quad.curvature > 0)


def test_hessian_times_matches_finite_differences_of_the_gradient(rng):
    """H b = (g(beta + h b) - g(beta - h b)) / 2h on every column, from one local quadratic."""
    X, time, status, w = tied_data(rng, n=150, p=9, n_times=12, density=0.3)
    df = datafit(X, time, status, w)
    beta = rng.normal(scale=0.3, size=X.shape[1])
    cols = np.arange(X.shape[1])
    quad = df.local_quadratic(df.new_state(beta), cols)
    for b in (rng.normal(size=cols.size), np.eye(cols.size)[3]):
        step = 1e-5
        fd = (df.gradient(df.new_state(beta + step * b)) - df.gradient(df.new_state(beta - step * b))) / (2 * step)
        Hb = quad.hessian_times(b)
        np.testing.assert_allclose(Hb, fd, rtol=1e-6, atol=1e-6 * np.abs(Hb).max())


def test_reweighted_view_without_late_rows(rng):
    """Empty late risk sets (d_k > 0 with D_k = 0 cannot occur, but zero-weight slots can):
    the products stay finite and equal to the dense block."""
    X, time, status, w = tied_data(rng, n=70)
    df = datafit(X, time, status, w).reweighted(np.where(time >= time.max() - 1, 0.0, 1.0))
    state = df.new_state(rng.normal(scale=0.3, size=X.shape[1]))
    cols = np.arange(X.shape[1])
    b = rng.normal(size=cols.size)
    Hb = df.local_quadratic(state, cols).hessian_times(b)
    np.testing.assert_allclose(Hb, df.hessian(state, cols) @ b, rtol=1e-12, atol=1e-12)


def test_conjugate_gradient_polish_reaches_the_dense_optimum(rng):
    """A fit whose active set exceeds the dense Newton limit (polish by conjugate gradients
    on the products) ends where a fit polished on the formed block ends."""
    X, time, status, w = tied_data(rng, n=400, p=30, n_times=40, density=0.2)
    df = datafit(X, time, status, w)
    p = X.shape[1]
    l1, l2 = np.full(p, 0.5), np.zeros(p)
    dense = fit_ccd(df, l1, l2, options=SolverOptions(tol=1e-13))
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr("riskset.solver.newton.DENSE_NEWTON_MAX", 0)  # every polish by conjugate gradients
        cg_only = fit_ccd(df, l1, l2, options=SolverOptions(tol=1e-13))
    assert dense.converged and cg_only.converged and np.count_nonzero(dense.beta) > 10
    np.testing.assert_allclose(cg_only.beta, dense.beta, atol=1e-7)
    assert cg_only.objective == pytest.approx(dense.objective, rel=1e-12)


def test_public_fit_with_many_active_coefficients(rng):
    X, time, status, w = tied_data(rng, n=300, p=12, n_times=25, density=0.15)
    data = from_arrays(X, time=time, status=status, weights=w)
    fit = riskset.fit(data, "fine_gray", riskset.Normal(variance=1.0))
    assert fit.converged and fit.kkt <= 1e-4


def reference_hessian(df, state, cols):
    """-X' diag(v) X + N1' diag(d / D^2) N1 from the dense (slots x rows) membership
    a_kr = [s_r <= k] + [s_r > k] cinv_r G(t_k-), the likelihood's definition (D = a w)."""
    X = df.design.to_csc(cols).toarray()
    k = np.arange(df.n_slots)[:, None]
    a = (df.slot[None, :] <= k) + (df.slot[None, :] > k) * df.cinv[None, :] * df.Gev[:, None]
    D = a @ state.w
    q1 = np.where(df.slot_d > 0, df.slot_d / D, 0.0)
    v = state.w * (a.T @ q1)
    N1 = a @ (state.w[:, None] * X)
    return -X.T @ (v[:, None] * X) + N1.T @ ((q1 / D)[:, None] * N1)


@pytest.mark.parametrize("seed", [0, 1, 2, 3])
@pytest.mark.parametrize("formulation", ["sparse", "scan"])
def test_hessian_block_equals_the_risk_set_sums(seed, formulation):
    """The block from the walk over rows equals the risk-set sums written out (ties of events,
    competing events and censorings; rows before the first and after the last event time;
    zero weights; an empty column)."""
    rng = np.random.default_rng(seed)
    X, time, status, w = tied_data(rng, n=120, p=8, n_times=10, density=0.35)
    X = X.tolil()
    X[:, 5] = 0.0
    w = np.where(rng.random(len(time)) < 0.1, 0.0, w)
    df = datafit(X.tocsc(), time, status, w, formulation=formulation)
    state = df.new_state(rng.normal(scale=0.4, size=X.shape[1]))
    cols = rng.permutation(X.shape[1])[:6 + seed % 3]
    H = df.hessian(state, cols)
    ref = reference_hessian(df, state, cols)
    np.testing.assert_allclose(H, ref, rtol=0, atol=1e-12 * np.abs(ref).max())
    assert np.array_equal(H, H.T)
