"""Conditional logistic and conditional Poisson: derivatives, exactness, equivalences, bad input."""
import itertools
import warnings

import numpy as np
import pytest
import scipy.sparse as sp

import riskset
from riskset.data.dataset import Dataset
from riskset.exceptions import DataWarning, InputError
from riskset.models.conditional import ConditionalLogistic, ConditionalPoisson
from riskset.solver.ccd import SolverOptions, fit_ccd


def sparse_X(rng, n, p, density=0.4):
    X = rng.normal(size=(n, p)) * (rng.random((n, p)) < density)
    X[:, 0] = rng.integers(0, 2, n)  # an indicator column
    return sp.csc_matrix(X)


def matched_data(rng, n_sets=25, max_size=6, max_cases=3, p=3, weights=False):
    sizes = rng.integers(2, max_size + 1, n_sets)
    strata = np.repeat(np.arange(n_sets), sizes)
    y = np.zeros(strata.size)
    start = np.cumsum(sizes) - sizes
    for s in range(n_sets):  # m cases per set, 1 <= m < size (loop over a tiny test set only)
        m = rng.integers(1, min(max_cases, sizes[s] - 1) + 1)
        y[start[s] + rng.choice(sizes[s], m, replace=False)] = 1
    X = sparse_X(rng, strata.size, p)
    w = np.repeat(rng.integers(1, 4, n_sets).astype(float), sizes) if weights else None
    return Dataset(X=X, covariate_names=[f"x{j}" for j in range(p)], row_ids=np.arange(strata.size), y=y,
                   strata=strata, weights=w)


def count_data(rng, n_strata=30, p=3, offset=True):
    sizes = rng.integers(1, 7, n_strata)
    strata = np.repeat(np.arange(n_strata), sizes)
    n = strata.size
    X = sparse_X(rng, n, p)
    off = np.log(rng.uniform(1, 50, n)) if offset else None
    rate = np.exp(X @ np.array([0.5, -0.3, 0.2][:p]) + (off if offset else 0) - 2 + rng.normal(size=n_strata)[strata])
    y = rng.poisson(rate).astype(float)
    y[np.cumsum(sizes) - sizes] += 1  # every stratum has an event
    return Dataset(X=X, covariate_names=[f"x{j}" for j in range(p)], row_ids=np.arange(n), y=y, strata=strata,
                   offset=off)


def check_derivatives(df, beta, eps=1e-5):
    """coordinate(), gradient() and hessian() against central finite differences of loglik;
    the sweep's screen (the compiled ``gradient`` kernel) gives exactly coordinate()'s g."""
    p = df.n_coef
    st = df.new_state(beta)
    def ll(b):
        return df.loglik(df.new_state(b))
    grad = df.gradient(st)
    H = df.hessian(st, np.arange(p))
    for j in range(p):
        e = np.zeros(p)
        e[j] = eps
        fd_g = (ll(beta + e) - ll(beta - e)) / (2 * eps)
        fd_h = (ll(beta + e) - 2 * ll(beta) + ll(beta - e)) / eps**2
        g, h = df.coordinate(st, j)
        assert df.kernels.gradient(df.kernel_data(), st.kernel, j) == g
        assert g == pytest.approx(fd_g, rel=1e-6, abs=1e-6)
        assert h == pytest.approx(fd_h, rel=1e-4, abs=1e-4)
        assert grad[j] == pytest.approx(g, rel=1e-9, abs=1e-9)
        assert H[j, j] == pytest.approx(h, rel=1e-9, abs=1e-9)
        fd_col = (df.gradient(df.new_state(beta + e)) - df.gradient(df.new_state(beta - e))) / (2 * eps)
        np.testing.assert_allclose(H[:, j], fd_col, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(H, H.T, atol=1e-10)


@pytest.mark.parametrize("kind", ["poisson", "breslow", "exact", "exact_weighted"])
def test_derivatives_match_finite_differences(rng, kind):
    if kind == "poisson":
        df = ConditionalPoisson().datafit(count_data(rng))
    else:
        data = matched_data(rng, weights=kind.endswith("weighted"))
        df = ConditionalLogistic(ties=kind.split("_")[0]).datafit(data)
        if kind.startswith("exact"):
            assert np.any(df.exact_m >= 2) and np.any(df.exact_m == 0)  # both paths exercised
    beta = np.array([0.3, -0.4, 0.2])
    check_derivatives(df, beta)


@pytest.mark.parametrize("kind", ["poisson", "breslow_weighted"])
def test_local_quadratic_is_the_hessian_block_without_forming_it(rng, kind):
    """Multinomial strata (conditional Poisson, Breslow ties, weighted sets): gradient =
    gradient(), H b = hessian() @ b, curvature >= -diag(H) > 0. Exact strata: None."""
    if kind == "poisson":
        df = ConditionalPoisson().datafit(count_data(rng))
    else:
        df = ConditionalLogistic(ties="breslow").datafit(matched_data(rng, weights=True))
    state = df.new_state(np.array([0.3, -0.4, 0.2]))
    cols = np.array([2, 0])
    quad = df.local_quadratic(state, cols)
    H = df.hessian(state, cols)
    b = np.array([0.7, -1.3])
    assert np.allclose(quad.gradient, df.gradient(state)[cols], rtol=1e-12, atol=1e-12)
    assert np.allclose(quad.hessian_times(b), H @ b, rtol=1e-12, atol=1e-12)
    assert np.all(quad.curvature >= -np.diag(H) - 1e-12) and np.all(quad.curvature > 0)
    exact = ConditionalLogistic(ties="exact").datafit(matched_data(rng))
    assert np.any(exact.exact_m > 0) and exact.local_quadratic(exact.new_state(np.zeros(3)), cols) is None


def test_moves_keep_state_consistent(rng):
    df = ConditionalLogistic().datafit(matched_data(rng))
    st = df.new_state(np.zeros(3))
    beta = np.zeros(3)
    for j, d in [(0, 0.7), (2, -0.3), (1, 0.4), (0, -0.2)]:
        df.move(st, j, d)
        beta[j] += d
    fresh = df.new_state(beta)
    np.testing.assert_allclose(st.eta, fresh.eta, atol=1e-12)
    stratum = np.repeat(np.arange(df.n_strata), np.diff(df.stratum_ptr))  # w carries its stratum's shift: compare
    np.testing.assert_allclose(st.w / st.W[stratum], fresh.w / fresh.W[stratum], rtol=1e-12)  # the shares w / W
    np.testing.assert_allclose(st.W, st.w @ (stratum[:, None] == np.arange(df.n_strata)), rtol=1e-12)
    for j in range(3):
        np.testing.assert_allclose(df.coordinate(st, j), df.coordinate(fresh, j), rtol=1e-10)
    assert df.loglik(st) == pytest.approx(df.loglik(fresh), rel=1e-12)


def test_exact_likelihood_equals_enumeration(rng):
    data = matched_data(rng, n_sets=8, max_size=6, max_cases=3)
    beta = np.array([0.5, -0.7, 0.3])
    df = ConditionalLogistic(ties="exact").datafit(data)
    eta = data.X @ beta
    total = 0.0
    for s in range(data.n_strata):
        rows = np.flatnonzero(data.strata == s)
        m = int(data.y[rows].sum())
        denom = sum(np.exp(eta[list(c)].sum()) for c in itertools.combinations(rows, m))
        total += eta[rows][data.y[rows] == 1].sum() - np.log(denom)
    assert df.loglik(df.new_state(beta)) == pytest.approx(total, rel=1e-12)
    # Breslow differs when sets have several cases
    br = ConditionalLogistic(ties="breslow").datafit(data)
    assert abs(br.loglik(br.new_state(beta)) - total) > 1e-3


def test_exact_and_breslow_agree_for_one_case_per_set(rng):
    data = matched_data(rng, n_sets=40, max_cases=1)
    fits = [fit_ccd(ConditionalLogistic(ties=t).datafit(data), np.zeros(3), np.zeros(3)) for t in ("exact", "breslow")]
    assert all(f.converged for f in fits)
    np.testing.assert_allclose(fits[0].beta, fits[1].beta, atol=1e-10)
    assert fits[0].loglik == pytest.approx(fits[1].loglik, abs=1e-10)


def test_exact_fit_is_the_maximum(rng):
    data = matched_data(rng, n_sets=40, max_cases=3)
    df = ConditionalLogistic(ties="exact").datafit(data)
    res = fit_ccd(df, np.zeros(3), np.zeros(3))
    assert res.converged
    np.testing.assert_allclose(df.gradient(res.state), 0, atol=1e-6)
    assert np.all(np.linalg.eigvalsh(df.hessian(res.state, np.arange(3))) < 0)


def _poisson_fixed_effects(X, y, offset, strata, iters=50):
    """Newton-Raphson Poisson fit with one dummy per stratum (dense, small)."""
    D = np.eye(strata.max() + 1)[strata]
    A = np.hstack([X, D])
    b = np.zeros(A.shape[1])
    b[X.shape[1]:] = np.log((np.bincount(strata, weights=y) + 0.5) / np.bincount(strata, weights=np.exp(offset)))
    for _ in range(iters):
        mu = np.exp(A @ b + offset)
        step = np.linalg.solve(A.T @ (mu[:, None] * A) + 1e-12 * np.eye(A.shape[1]), A.T @ (y - mu))
        b += step
        if np.max(np.abs(step)) < 1e-13:
            break
    return b[: X.shape[1]]


def test_conditional_poisson_equals_poisson_with_stratum_effects(rng):
    data = count_data(rng, n_strata=40)
    res = fit_ccd(ConditionalPoisson().datafit(data), np.zeros(3), np.zeros(3))
    assert res.converged
    sub = data
    ref = _poisson_fixed_effects(sub.X.toarray(), sub.y, sub.offset, sub.strata)
    np.testing.assert_allclose(res.beta, ref, atol=1e-8)


def test_row_order_invariance(rng):
    data = matched_data(rng, n_sets=30, max_cases=3)
    perm = rng.permutation(data.n_rows)
    shuffled = data.subset(perm)
    a = fit_ccd(ConditionalLogistic().datafit(data), np.zeros(3), np.zeros(3))
    b = fit_ccd(ConditionalLogistic().datafit(shuffled), np.zeros(3), np.zeros(3))
    np.testing.assert_allclose(a.beta, b.beta, atol=1e-10)
    assert a.loglik == pytest.approx(b.loglik, abs=1e-10)


def test_stratum_weights_equal_replicated_sets(rng):
    data = matched_data(rng, n_sets=20, max_cases=2, weights=True)
    reps = np.repeat(np.arange(data.n_rows), data.weights.astype(int))
    # replicate each set w times as separate strata
    set_copy = np.concatenate([np.arange(k) for k in data.weights.astype(int)])
    strata = data.strata[reps] * 10 + set_copy
    rep = Dataset(X=data.X[reps].tocsc(), covariate_names=data.covariate_names, row_ids=np.arange(reps.size),
                  y=data.y[reps], strata=np.unique(strata, return_inverse=True)[1])
    a = fit_ccd(ConditionalLogistic().datafit(data), np.zeros(3), np.zeros(3))
    b = fit_ccd(ConditionalLogistic().datafit(rep), np.zeros(3), np.zeros(3))
    np.testing.assert_allclose(a.beta, b.beta, atol=1e-9)


def test_priors(rng):
    data = count_data(rng, n_strata=60)
    df = ConditionalPoisson().datafit(data)
    # L2: stationarity g = beta / variance
    res = fit_ccd(df, np.zeros(3), np.full(3, 1 / 0.05))
    np.testing.assert_allclose(df.gradient(res.state), res.beta / 0.05, atol=1e-7)
    # L1: KKT, and a rate above gamma_max zeroes everything
    gamma = 2.0
    res = fit_ccd(df, np.full(3, gamma), np.zeros(3))
    g = df.gradient(res.state)
    nz = res.beta != 0
    np.testing.assert_allclose(g[nz], gamma * np.sign(res.beta[nz]), atol=1e-6)
    assert np.all(np.abs(g[~nz]) <= gamma + 1e-8)
    big = fit_ccd(df, np.full(3, 1e4), np.zeros(3))
    assert np.all(big.beta == 0)


def test_api_and_registry(rng):
    data = matched_data(rng, n_sets=30, max_cases=2)
    fit = riskset.fit(data, "conditional_logistic", ties="exact")
    assert fit.converged and list(fit.coef.index) == ["x0", "x1", "x2"]
    assert np.all(np.isfinite(fit.se))
    fit2 = riskset.fit(count_data(rng), "conditional_poisson", riskset.Laplace(gamma=1.0))
    assert fit2.converged


# -- bad input ------------------------------------------------------------------------------
def test_sets_without_case_or_control_are_dropped_with_count(rng):
    data = matched_data(rng, n_sets=10, max_cases=1)
    y = data.y.copy()
    y[data.strata == 0] = 0  # no case
    y[data.strata == 1] = 1  # no control
    y[data.strata == 2] = 0
    bad = Dataset(X=data.X, covariate_names=data.covariate_names, row_ids=data.row_ids, y=y, strata=data.strata)
    with pytest.warns(DataWarning, match=r"dropped 2 matched set\(s\) without a case and 1 without a control"):
        df = ConditionalLogistic().datafit(bad)
    assert df.n_strata == 7
    assert fit_ccd(df, np.zeros(3), np.full(3, 0.1)).converged  # 7 tiny sets: a weak prior avoids separation


def test_all_sets_uninformative_raises(rng):
    data = matched_data(rng, n_sets=3)
    bad = Dataset(X=data.X, covariate_names=data.covariate_names, row_ids=data.row_ids,
                  y=np.zeros(data.n_rows), strata=data.strata)
    with pytest.raises(InputError, match="no matched set"), warnings.catch_warnings():
        warnings.simplefilter("ignore", DataWarning)
        ConditionalLogistic().datafit(bad)


def test_bad_responses_and_weights(rng):
    data = matched_data(rng, n_sets=5)
    y = data.y.copy()
    y[3] = 2
    with pytest.raises(InputError, match="y = 1 \\(case\\) or 0"):
        ConditionalLogistic().datafit(Dataset(X=data.X, covariate_names=data.covariate_names,
                                              row_ids=data.row_ids, y=y, strata=data.strata))
    counts = count_data(rng, n_strata=5)
    y = counts.y.copy()
    y[2] = -1
    with pytest.raises(InputError, match="negative count"):
        ConditionalPoisson().datafit(Dataset(X=counts.X, covariate_names=counts.covariate_names,
                                             row_ids=counts.row_ids, y=y, strata=counts.strata))
    w = np.ones(data.n_rows)
    w[0] = 2.0  # varies within stratum 0
    with pytest.raises(InputError, match="constant within each stratum"):
        ConditionalLogistic().datafit(Dataset(X=data.X, covariate_names=data.covariate_names,
                                              row_ids=data.row_ids, y=data.y, strata=data.strata, weights=w))
    with pytest.raises(InputError, match="strata"):
        ConditionalLogistic().datafit(Dataset(X=data.X, covariate_names=data.covariate_names,
                                              row_ids=data.row_ids, y=data.y))
    with pytest.raises(ValueError, match="ties"):
        ConditionalLogistic(ties="approximate")


def test_strata_without_events_dropped_for_poisson(rng):
    data = count_data(rng, n_strata=10)
    y = data.y.copy()
    y[data.strata == 0] = 0
    y[data.strata == 1] = 0
    d = Dataset(X=data.X, covariate_names=data.covariate_names, row_ids=data.row_ids, y=y, strata=data.strata,
                offset=data.offset)
    n_zero = int(np.sum(np.bincount(d.strata, weights=y) == 0))
    with pytest.warns(DataWarning, match=f"dropped {n_zero} stratum"):
        df = ConditionalPoisson().datafit(d)
    assert df.n_strata == 10 - n_zero


def test_separation_is_reported(rng):
    data = matched_data(rng, n_sets=20, max_cases=1)
    X = data.X.toarray()
    X[:, 1] = data.y  # the covariate is the case indicator
    sep = Dataset(X=sp.csc_matrix(X), covariate_names=data.covariate_names, row_ids=data.row_ids, y=data.y,
                  strata=data.strata)
    res = fit_ccd(ConditionalLogistic().datafit(sep), np.zeros(3), np.zeros(3), options=SolverOptions(max_iter=200))
    assert not res.converged and "separates" in res.message and "#1" in res.message
    ok = fit_ccd(ConditionalLogistic().datafit(sep), np.zeros(3), np.ones(3))  # a prior fixes it
    assert ok.converged


@pytest.mark.parametrize("kind", ["exact", "poisson"])
def test_reweighted_view_equals_prepared_with_weights(rng, kind):
    """reweighted(weights) (Dataset row order, one weight per stratum, 0 removing a stratum) is
    the datafit prepared with those weights; weights varying within a stratum are refused."""
    if kind == "exact":
        data, model = matched_data(rng, n_sets=15), ConditionalLogistic()
    else:
        data, model = count_data(rng, n_strata=15), ConditionalPoisson()
        data.y[data.strata == 2] = 0  # a stratum without events: dropped, so the datafit has fewer rows
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DataWarning)
        df = model.datafit(data)
        w = rng.integers(0, 3, data.strata.max() + 1).astype(float)[data.strata]
        prepared = model.datafit(Dataset(X=data.X, covariate_names=data.covariate_names, row_ids=data.row_ids,
                                         y=data.y, strata=data.strata, offset=data.offset, weights=w))
    view = df.reweighted(w)
    for name in ("c_s", "y", "n_s", "xy"):
        np.testing.assert_array_equal(getattr(view, name), getattr(prepared, name))
    assert df.c_s.tolist() == [1.0] * df.n_strata  # the original is unchanged
    beta = np.array([0.3, -0.2, 0.1])
    assert view.new_state(beta).B is not df.new_state(beta).B  # states own their work arrays (threads)
    assert view.loglik(view.new_state(beta)) == pytest.approx(prepared.loglik(prepared.new_state(beta)), rel=1e-14)
    w[np.flatnonzero(data.strata == data.strata[-1])[0]] += 1.0
    with pytest.raises(InputError, match="constant within each stratum"):
        df.reweighted(w)


@pytest.mark.parametrize("ties", ["exact", "breslow"])
def test_hessian_rank_bounds_the_numerical_rank(ties):
    """Matched sets of 3 with one case: two ranks of curvature per set, none from a set without
    a case or of weight 0 (a fold's view), whatever the number of covariates."""
    rng = np.random.default_rng(4)
    n_sets, p = 30, 120
    strata = np.repeat(np.arange(n_sets), 3)
    y = np.zeros(3 * n_sets)
    y[3 * np.arange(n_sets - 4)] = 1.0  # the last 4 sets hold no case
    X = sp.csc_matrix(rng.normal(size=(3 * n_sets, p)))
    data = Dataset(X=X, covariate_names=[f"x{j}" for j in range(p)], row_ids=np.arange(3 * n_sets), y=y,
                   strata=strata)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DataWarning)  # the sets without a case are dropped
        df = ConditionalLogistic(ties=ties).datafit(data)
    view = df.reweighted(np.where(strata % 5 == 0, 0.0, 1.0))
    assert df.hessian_rank == 2 * (n_sets - 4) and view.hessian_rank == 2 * (n_sets - 4 - 6)
    for fit in (df, view):
        H = fit.hessian(fit.new_state(rng.normal(scale=0.1, size=p)), np.arange(p))
        assert np.linalg.matrix_rank(H, tol=1e-9 * np.abs(H).max()) == fit.hessian_rank


def test_column_runs_are_the_runs_of_equal_stratum_in_int32():
    """Each column's non-zeros split into runs of one stratum, as a NumPy reading of the
    definition gives them; the arrays with an entry per run (up to one per non-zero) in int32."""
    from riskset.core.design import column_runs

    rng = np.random.default_rng(5)
    X = sp.random(900, 40, density=0.1, format="csc", random_state=2)
    X.sort_indices()
    strata = np.sort(rng.integers(0, 120, 900))
    col_runs, run_start, run_stratum = column_runs(X.indptr, X.indices, strata)
    assert run_start.dtype == np.int32 and run_stratum.dtype == np.int32
    for j in range(X.shape[1]):
        s = strata[X.indices[X.indptr[j]:X.indptr[j + 1]]]
        heads = X.indptr[j] + np.flatnonzero(np.r_[True, s[1:] != s[:-1]]) if s.size else np.zeros(0, int)
        runs = slice(col_runs[j], col_runs[j + 1])
        np.testing.assert_array_equal(run_start[runs], heads)
        np.testing.assert_array_equal(run_stratum[runs], strata[X.indices[heads]])
    assert run_start[-1] == X.nnz
    again = column_runs(X.indptr, X.indices, strata, starts=False)
    assert again[1] is None and np.array_equal(again[0], col_runs) and np.array_equal(again[2], run_stratum)
    one = column_runs(X.indptr, X.indices, np.zeros(900, np.int64))  # one stratum: a run per non-empty column
    np.testing.assert_array_equal(np.diff(one[0]), np.diff(X.indptr) > 0)
    np.testing.assert_array_equal(one[1][:-1], X.indptr[:-1][np.diff(X.indptr) > 0])
    assert not one[2].any()
