"""Pooled logistic regression on virtual person-intervals."""
import json
import pathlib

import numpy as np
import pytest
import scipy.sparse as sp

import riskset
from riskset.data.dataset import Dataset
from riskset.exceptions import DataWarning, InputError
from riskset.models.glm import LogisticRegression
from riskset.models.pooled_logistic import PooledLogistic, n_intervals, person_period_table
from riskset.solver.ccd import fit_ccd

REF = pathlib.Path(__file__).parent / "reference" / "pooled_logistic_lung"


def subjects(rng, n=150, p=3, weights=False, offset=False):
    X = rng.normal(size=(n, p)) * (rng.random((n, p)) < 0.6)
    X[:, 0] = rng.integers(0, 2, n)
    time = rng.exponential(80, n) + 0.5
    status = (rng.random(n) < 0.7).astype(float)
    return Dataset(X=sp.csc_matrix(X), covariate_names=[f"z{j}" for j in range(p)], row_ids=np.arange(n),
                   time=time, status=status, weights=rng.integers(1, 4, n).astype(float) if weights else None,
                   offset=rng.normal(scale=0.3, size=n) if offset else None)


def sqrt_fn(k):
    return np.sqrt(k)


EFFECTS = {"intercept": ["linear", "log"], "z0": "linear", "z1": ["quadratic", ("sqrt", sqrt_fn)]}


def materialize(model, data):
    """Person-period design (dense, small data) with the model's coefficient order."""
    subj, k, y = person_period_table(data, model.interval_width)
    Z = data.X.toarray()[subj]
    ftab = model.function_table(int(k.max()))
    src, fidx = model._structure(data)
    cols = [(np.ones(len(subj)) if s < 0 else Z[:, s]) * ftab[m, k] for s, m in zip(src, fidx)]
    A = np.column_stack(cols)
    w = None if data.weights is None else data.weights[subj]
    off = None if data.offset is None else data.offset[subj]
    return A, y, w, off


def test_loglik_and_derivatives_equal_materialized_logistic(rng):
    data = subjects(rng, weights=True, offset=True)
    model = PooledLogistic(10.0, EFFECTS)
    df = model.datafit(data)
    A, y, w, off = materialize(model, data)
    glm = LogisticRegression(intercept=False).datafit(
        Dataset(X=sp.csc_matrix(A), covariate_names=[f"a{j}" for j in range(A.shape[1])],
                row_ids=np.arange(len(y)), y=y, weights=w, offset=off))
    assert df.n_coef == A.shape[1] == 9
    assert df.n_person_periods == len(y)
    beta = rng.normal(scale=0.05, size=df.n_coef)
    st, gst = df.new_state(beta), glm.new_state(beta)
    assert df.loglik(st) == pytest.approx(glm.loglik(gst), rel=1e-12)
    np.testing.assert_allclose(df.gradient(st), glm.gradient(gst), rtol=1e-10, atol=1e-9)
    cols = np.arange(df.n_coef)
    np.testing.assert_allclose(df.hessian(st, cols), glm.hessian(gst, cols), rtol=1e-10, atol=1e-9)
    for j in cols:
        np.testing.assert_allclose(df.coordinate(st, j), glm.coordinate(gst, j), rtol=1e-10, atol=1e-9)
    # moves keep the cached per-subject sums exact
    for j, d in [(0, 0.1), (4, -0.2), (6, 0.05), (2, 0.3)]:
        df.move(st, j, d)
        glm.move(gst, j, d)
        beta[j] += d
    fresh = df.new_state(beta)
    assert df.loglik(st) == pytest.approx(glm.loglik(gst), rel=1e-12)
    np.testing.assert_allclose(st.G, fresh.G, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(df.gradient(st), glm.gradient(gst), rtol=1e-9, atol=1e-9)


def test_derivatives_match_finite_differences(rng):
    data = subjects(rng, n=60)
    df = PooledLogistic(15.0, EFFECTS).datafit(data)
    beta = rng.normal(scale=0.05, size=df.n_coef)
    def ll(b):
        return df.loglik(df.new_state(b))
    st = df.new_state(beta)
    H = df.hessian(st, np.arange(df.n_coef))
    eps = 1e-6
    for j in range(df.n_coef):
        e = np.zeros(df.n_coef)
        e[j] = eps
        g, h = df.coordinate(st, j)
        assert g == pytest.approx((ll(beta + e) - ll(beta - e)) / (2 * eps), rel=1e-5, abs=1e-5)
        fd = (df.gradient(df.new_state(beta + e)) - df.gradient(df.new_state(beta - e))) / (2 * eps)
        np.testing.assert_allclose(H[:, j], fd, rtol=1e-5, atol=1e-4)
        assert h == pytest.approx(H[j, j], rel=1e-10)


@pytest.mark.parametrize("cols", [[0, 1, 2, 3, 4, 5, 6, 7, 8], [7, 2, 5], [4]])
def test_local_quadratic_is_the_hessian_block_without_forming_it(rng, cols):
    """Several time functions (pairs of them), a covariate carrying two, the constant: gradient =
    gradient(), H b = hessian() @ b, curvature = -diag(H) (exact)."""
    data = subjects(rng, weights=True, offset=True)
    df = PooledLogistic(10.0, EFFECTS).datafit(data)
    state = df.new_state(rng.normal(scale=0.05, size=df.n_coef))
    cols = np.array(cols)
    quad = df.local_quadratic(state, cols)
    H = df.hessian(state, cols)
    b = rng.normal(size=cols.size)
    np.testing.assert_allclose(quad.gradient, df.gradient(state)[cols], rtol=1e-10, atol=1e-10)
    np.testing.assert_allclose(quad.hessian_times(b), H @ b, rtol=1e-10, atol=1e-10)
    np.testing.assert_allclose(quad.curvature, -np.diag(H), rtol=1e-12)


def _newton(df, p, l2=0.0, iters=60):
    beta = np.zeros(p)
    for _ in range(iters):
        st = df.new_state(beta)
        step = np.linalg.solve(-(df.hessian(st, np.arange(p)) - np.diag(l2 * np.ones(p))),
                               df.gradient(st) - l2 * beta)
        beta += step
        if np.max(np.abs(step)) < 1e-12:
            break
    return beta


def test_ccd_fit_equals_materialized_fit(rng):
    data = subjects(rng, n=300)
    model = PooledLogistic(20.0, {"intercept": "linear", "z1": "linear"})
    df = model.datafit(data)
    A, y, _, _ = materialize(model, data)
    glm = LogisticRegression(intercept=False).datafit(
        Dataset(X=sp.csc_matrix(A), covariate_names=[f"a{j}" for j in range(A.shape[1])],
                row_ids=np.arange(len(y)), y=y))
    p = df.n_coef
    l2 = np.full(p, 1.0)
    l2[0] = l2[-2] = 0.0  # intercept and its trend unpenalized
    res = fit_ccd(df, np.zeros(p), l2)
    ref = _newton(glm, p, l2=l2)
    assert res.converged
    np.testing.assert_allclose(res.beta, ref, atol=1e-6)
    # lasso: same path on both representations
    l1 = np.where(l2 > 0, 3.0, 0.0)
    a = fit_ccd(df, l1, np.zeros(p))
    b = fit_ccd(glm, l1, np.zeros(p))
    np.testing.assert_allclose(a.beta, b.beta, atol=1e-6)
    assert a.objective == pytest.approx(b.objective, abs=1e-8)


def test_reference_lung_likelihood_and_se():
    case = json.loads((REF / "case.json").read_text())
    frame = __import__("pandas").read_csv(REF / "data.csv")
    data = riskset.from_frame(frame, time="time", status="status", covariates=case["covariates"])
    model = PooledLogistic.from_spec(case)
    names = model.coef_names(data)
    assert names == ["intercept", "age", "sex", "t", "age:t"]
    df = model.datafit(data)
    assert df.n_person_periods == case["n_person_periods"]
    exp = case["expected"]
    beta = np.array([exp["coef"][n] for n in names])
    st = df.new_state(beta)
    assert df.loglik(st) == pytest.approx(exp["loglik"], abs=1e-8)
    assert np.max(np.abs(df.gradient(st))) < 1e-5
    se = np.sqrt(np.diag(np.linalg.inv(-df.hessian(st, np.arange(5)))))
    np.testing.assert_allclose(se, [exp["se"][n] for n in names], rtol=1e-6)
    np.testing.assert_allclose(_newton(df, 5), beta, atol=1e-7)
    assert model.unpenalized_names() == ["intercept", "t"]


def test_state_is_subject_level(rng):
    data = subjects(rng, n=200)
    df = PooledLogistic(1.0, EFFECTS).datafit(data)  # ~80 intervals per subject
    assert df.n_person_periods > 40 * data.n_rows
    st = df.new_state(np.zeros(df.n_coef))
    arrays = {id(v): v for v in vars(st).values() if isinstance(v, np.ndarray)}
    state_size = sum(v.size for v in arrays.values())
    assert state_size == (3 * df.nf + 1) * data.n_rows  # lin, G, H: (1 + #functions) x N; SP: N
    assert state_size < df.n_person_periods / 4


def test_row_order_invariance(rng):
    data = subjects(rng, n=120)
    model = PooledLogistic(25.0, {"intercept": "linear", "z0": "log"})
    perm = rng.permutation(data.n_rows)
    p = model.datafit(data).n_coef
    a = _newton(model.datafit(data), p)
    b = _newton(model.datafit(data.subset(perm)), p)
    np.testing.assert_allclose(a, b, atol=1e-10)


def test_discretization_rule():
    assert n_intervals([30, 31, 60, 0.5, 59.999999], 30).tolist() == [1, 2, 2, 1, 2]
    assert n_intervals([0.3, 0.6, 0.7], 0.1).tolist() == [3, 6, 7]  # 0.3 / 0.1 = 2.9999999999999996
    d = Dataset(X=sp.csc_matrix(np.ones((3, 1))), covariate_names=["x"], row_ids=np.arange(3),
                time=np.array([45.0, 60.0, 10.0]), status=np.array([1.0, 0.0, 1.0]))
    subj, k, y = person_period_table(d, 30)
    assert subj.tolist() == [0, 0, 1, 1, 2] and k.tolist() == [1, 2, 1, 2, 1]
    assert y.tolist() == [0, 1, 0, 0, 1]


def test_predictions(rng):
    data = subjects(rng, n=100)
    fit = riskset.fit(data, PooledLogistic(20.0, {"intercept": "linear", "z0": "linear"}),
                      riskset.Normal(variance=1.0))
    model = fit.model
    assert isinstance(model, PooledLogistic)
    h = fit.predict(data, "hazard")
    K = int(n_intervals(data.time, 20.0).max())
    assert h.shape == (data.n_rows, K)
    c = fit.coef
    z0 = data.X[:, 0].toarray().ravel()
    kk = np.arange(1, K + 1)
    eta = (c["intercept"] + c["t"] * kk[None, :] + (data.X @ c[["z0", "z1", "z2"]].to_numpy())[:, None]
           + c["z0:t"] * z0[:, None] * kk[None, :])
    np.testing.assert_allclose(h, 1 / (1 + np.exp(-eta)), rtol=1e-12)
    s = fit.predict(data, "survival")
    np.testing.assert_allclose(s[:, 2], (1 - h[:, 0]) * (1 - h[:, 1]) * (1 - h[:, 2]), rtol=1e-12)
    assert np.all(np.diff(s, axis=1) <= 0)
    assert model.hazard(fit, data, n_intervals=3).shape == (data.n_rows, 3)


# -- bad input ------------------------------------------------------------------------------
def test_bad_input(rng):
    for width in (0, -5, float("nan"), "wide"):
        with pytest.raises(InputError, match="interval_width"):
            PooledLogistic(width)
    with pytest.raises(InputError, match="interval_width"):
        PooledLogistic.from_spec({"model": "pooled_logistic"})
    data = subjects(rng, n=10)
    with pytest.raises(InputError, match="unknown covariate"):
        PooledLogistic(5, {"age": "linear"}).datafit(data)
    with pytest.raises(InputError, match="unknown time effect"):
        PooledLogistic(5, {"intercept": "spline"})
    with pytest.raises(InputError, match="finite value"):
        PooledLogistic(5, {"intercept": ("bad", lambda k: np.log(k - 1))}).datafit(data)
    st = data.status.copy()
    st[3] = 2
    bad = Dataset(X=data.X, covariate_names=data.covariate_names, row_ids=data.row_ids, time=data.time, status=st)
    with pytest.raises(InputError, match="status 0 \\(censored\\) or 1"):
        PooledLogistic(5).datafit(bad)
    t = data.time.copy()
    t[1] = -1
    bad = Dataset(X=data.X, covariate_names=data.covariate_names, row_ids=data.row_ids, time=t, status=data.status)
    with pytest.raises(InputError, match="time must be >= 0"):
        PooledLogistic(5).datafit(bad)
    t[1] = 0.0
    zero = Dataset(X=data.X, covariate_names=data.covariate_names, row_ids=data.row_ids, time=t, status=data.status)
    with pytest.warns(DataWarning, match="dropped 1 subject"):
        df = PooledLogistic(5).datafit(zero)
    assert df.n_rows == 9
    with pytest.raises(InputError, match="'time'"):
        PooledLogistic(5).datafit(Dataset(X=data.X, covariate_names=data.covariate_names, row_ids=data.row_ids,
                                          y=data.status))
