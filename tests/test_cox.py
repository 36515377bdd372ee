"""Cox family: derivatives, sparse vs scan formulations, invariances, variants, bad input."""
import json
import warnings

import numpy as np
import pandas as pd
import pytest
import scipy.sparse as sp

from helpers import check_derivatives, check_move, loglik_at
from riskset.data.dataset import Dataset
from riskset.exceptions import DataWarning, InputError
from riskset.models.cox import CoxDatafit, CoxModel
from riskset.solver.ccd import fit_ccd

TIES = ["breslow", "efron"]


def make_data(n=60, p=4, seed=0, n_strata=None, start=False, heavy_ties=True, weights=False, offset=False):
    """Small data with heavy ties, sparse and dense columns, optional strata / (start, stop]."""
    rng = np.random.default_rng(seed)
    dense = rng.normal(size=(n, p))
    dense[:, 1:] *= rng.random((n, p - 1)) < 0.4  # sparse columns
    dense[:, -1] = (rng.random(n) < 0.3).astype(float)  # indicator
    X = sp.csc_matrix(dense)
    time = rng.integers(1, 7, n).astype(float) if heavy_ties else rng.exponential(5, n)
    status = (rng.random(n) < 0.7).astype(np.int64)
    st = None
    if start:
        st = np.floor(rng.random(n) * time * 0.8)
        st = np.where(rng.random(n) < 0.3, 0.0, st)
    strata = None if n_strata is None else rng.integers(0, n_strata, n)
    w = rng.integers(1, 4, n).astype(float) if weights else None
    off = rng.normal(scale=0.3, size=n) if offset else None
    return dict(X=X, time=time, status=status, start=st, strata=strata, weights=w, offset=off)


def datafit(d, **kw):
    return CoxDatafit(d["X"], d["time"], d["status"], d["start"], d["strata"], d["weights"], d["offset"], **kw)


def dataset(d, names=None):
    p = d["X"].shape[1]
    return Dataset(X=d["X"], covariate_names=names or [f"x{j}" for j in range(p)], row_ids=np.arange(len(d["time"])),
                   time=d["time"], status=d["status"], start=d["start"], weights=d["weights"], offset=d["offset"],
                   strata=d["strata"])


VARIANTS = {
    "plain": dict(),
    "strata": dict(n_strata=4),
    "startstop": dict(start=True),
    "startstop_strata": dict(start=True, n_strata=3),
    "weights_offset": dict(weights=True, offset=True, n_strata=2),
    "startstop_weights": dict(start=True, weights=True, offset=True),
}


@pytest.mark.parametrize("ties", TIES)
@pytest.mark.parametrize("variant", list(VARIANTS))
@pytest.mark.parametrize("formulation", ["sparse", "scan"])
def test_derivatives_match_finite_differences(variant, ties, formulation):
    d = make_data(seed=list(VARIANTS).index(variant), **VARIANTS[variant])  # the same data in every run
    df = datafit(d, ties=ties, formulation=formulation)
    beta = np.array([0.3, -0.5, 0.2, 0.4])
    check_derivatives(df, beta, rel=1e-6)
    check_move(df, beta, 1, 0.37)


@pytest.mark.parametrize("ties", TIES)
@pytest.mark.parametrize("variant", list(VARIANTS))
def test_sparse_and_scan_agree_after_moves(variant, ties):
    d = make_data(n=120, seed=7, **VARIANTS[variant])
    a = datafit(d, ties=ties, formulation="sparse")
    b = datafit(d, ties=ties, formulation="scan")
    sa, sb = a.new_state(np.zeros(4)), b.new_state(np.zeros(4))
    rng = np.random.default_rng(3)
    for _ in range(12):  # incremental path: moves without any exact re-synchronisation
        j, delta = int(rng.integers(4)), float(rng.normal(scale=0.5))
        a.move(sa, j, delta)
        b.move(sb, j, delta)
        for k in range(4):
            ga, ha = a.coordinate(sa, k)
            gb, hb = b.coordinate(sb, k)
            assert ga == pytest.approx(gb, rel=1e-10, abs=1e-10)
            assert ha == pytest.approx(hb, rel=1e-10, abs=1e-10)
    assert a.loglik(sa) == pytest.approx(b.loglik(sb), rel=1e-12)


@pytest.mark.parametrize("ties", TIES)
def test_sparse_and_scan_fits_agree_with_lasso(ties):
    d = make_data(n=300, p=4, seed=11, n_strata=5, heavy_ties=True)
    l1 = np.full(4, 2.0)
    ra = fit_ccd(datafit(d, ties=ties), l1, np.zeros(4))
    rb = fit_ccd(datafit(d, ties=ties, formulation="scan"), l1, np.zeros(4))
    assert ra.converged and rb.converged
    assert ra.objective == pytest.approx(rb.objective, rel=1e-10)
    assert np.allclose(ra.beta, rb.beta, atol=1e-7)


@pytest.mark.parametrize("ties", TIES)
def test_startstop_single_interval_equals_plain(ties):
    d = make_data(n=80, seed=5)
    plain = fit_ccd(datafit(d, ties=ties), np.zeros(4), np.zeros(4))
    d2 = dict(d, start=np.zeros(80))  # all times >= 1 > 0
    ss = fit_ccd(datafit(d2, ties=ties), np.zeros(4), np.zeros(4))
    assert ss.loglik == pytest.approx(plain.loglik, rel=1e-12)
    assert np.allclose(ss.beta, plain.beta, atol=1e-9)


@pytest.mark.parametrize("ties", TIES)
def test_startstop_split_rows_equal_unsplit(ties):
    """Splitting every row's follow-up at fixed times (same covariates) changes nothing."""
    d = make_data(n=50, seed=8, heavy_ties=False)
    data = dataset(d)
    rows, starts, stops, status = [], [], [], []
    for i, (t, s) in enumerate(zip(d["time"], d["status"])):  # explicit reference construction
        edges = [0.0] + [c for c in (2.0, 4.5) if c < t] + [t]
        for k in range(len(edges) - 1):
            rows.append(i)
            starts.append(edges[k])
            stops.append(edges[k + 1])
            status.append(s if k == len(edges) - 2 else 0)
    rows = np.array(rows)
    split = Dataset(X=d["X"][rows], covariate_names=data.covariate_names, row_ids=np.arange(len(rows)),
                    time=np.array(stops), status=np.array(status), start=np.array(starts), subject=rows)
    a = fit_ccd(CoxModel(ties=ties).datafit(data), np.zeros(4), np.zeros(4))
    b = fit_ccd(CoxModel(ties=ties).datafit(split), np.zeros(4), np.zeros(4))
    assert b.loglik == pytest.approx(a.loglik, rel=1e-11)
    assert np.allclose(a.beta, b.beta, atol=1e-8)


@pytest.mark.parametrize("ties", TIES)
@pytest.mark.parametrize("start", [False, True])
def test_time_varying_coefficient_without_cut_equals_plain(ties, start):
    d = make_data(n=90, seed=9, start=start, n_strata=2)
    data = dataset(d)
    m0 = CoxModel(ties=ties)
    m1 = CoxModel(ties=ties, time_varying={"x1": []})
    assert m1.coef_names(data) == ["x0", "x1(0,inf)", "x2", "x3"]
    a = fit_ccd(m0.datafit(data), np.zeros(4), np.zeros(4))
    b = fit_ccd(m1.datafit(data), np.zeros(4), np.zeros(4))
    assert b.loglik == pytest.approx(a.loglik, rel=1e-12)
    assert np.allclose(a.beta, b.beta, atol=1e-9)


@pytest.mark.parametrize("ties", TIES)
def test_time_varying_coefficient_equals_hand_split_data(ties):
    """x1 gets coefficients on (0,3] and (3,inf); compare with explicitly built pieces (R's survSplit)."""
    d = make_data(n=70, seed=10)
    data = dataset(d)
    model = CoxModel(ties=ties, time_varying={"x1": [3.0]})
    names = model.coef_names(data)
    assert names == ["x0", "x1(0,3]", "x1(3,inf)", "x2", "x3"]
    X = d["X"].toarray()
    Xs, st, sp_, ev = [], [], [], []
    assert np.sum((d["time"] == 3.0) & (d["status"] == 1)) > 0  # events at exactly t = 3 belong to (0,3]
    for i in range(70):
        t = d["time"][i]
        x = X[i]
        if t <= 3.0:
            Xs.append([x[0], x[1], 0, x[2], x[3]]), st.append(0.0), sp_.append(t), ev.append(d["status"][i])
        else:
            Xs.append([x[0], x[1], 0, x[2], x[3]]), st.append(0.0), sp_.append(3.0), ev.append(0)
            Xs.append([x[0], 0, x[1], x[2], x[3]]), st.append(3.0), sp_.append(t), ev.append(d["status"][i])
    hand = CoxDatafit(sp.csc_matrix(np.array(Xs)), np.array(sp_), np.array(ev), np.array(st), ties=ties)
    a = fit_ccd(model.datafit(data), np.zeros(5), np.zeros(5))
    b = fit_ccd(hand, np.zeros(5), np.zeros(5))
    assert a.loglik == pytest.approx(b.loglik, rel=1e-11)
    assert np.allclose(a.beta, b.beta, atol=1e-8)
    assert abs(a.beta[1] - a.beta[2]) > 1e-3  # the two intervals really are estimated separately


@pytest.mark.parametrize("ties", TIES)
@pytest.mark.parametrize("variant", ["plain", "startstop_strata", "weights_offset"])
def test_row_order_invariance(variant, ties):
    d = make_data(n=100, seed=12, **VARIANTS[variant])
    perm = np.random.default_rng(0).permutation(100)
    dp = {k: (None if v is None else (v[perm] if k != "X" else v[perm])) for k, v in d.items()}
    beta = np.array([0.2, -0.1, 0.5, -0.3])
    a, b = datafit(d, ties=ties), datafit(dp, ties=ties)
    assert loglik_at(a, beta) == pytest.approx(loglik_at(b, beta), rel=1e-13)
    assert np.allclose(a.gradient(a.new_state(beta)), b.gradient(b.new_state(beta)), rtol=1e-11, atol=1e-12)


@pytest.mark.parametrize("start", [False, True])
def test_weights_equal_duplicated_rows_breslow(start):
    d = make_data(n=60, seed=13, start=start, n_strata=2, weights=True)
    reps = d["weights"].astype(int)
    idx = np.repeat(np.arange(60), reps)
    dup = {k: (None if v is None or k == "weights" else v[idx]) for k, v in d.items()}
    a = fit_ccd(datafit(d), np.zeros(4), np.zeros(4))
    b = fit_ccd(datafit(dup), np.zeros(4), np.zeros(4))
    assert a.loglik == pytest.approx(b.loglik, rel=1e-12)
    assert np.allclose(a.beta, b.beta, atol=1e-9)
    ha = datafit(d).hessian(a.state, np.arange(4))
    hb = datafit(dup).hessian(b.state, np.arange(4))
    assert np.allclose(ha, hb, rtol=1e-9)


def test_efron_differs_from_breslow_only_with_ties():
    d = make_data(n=60, seed=14, heavy_ties=False)  # continuous times: no ties
    beta = np.array([0.3, -0.2, 0.1, 0.5])
    assert loglik_at(datafit(d, ties="efron"), beta) == pytest.approx(loglik_at(datafit(d), beta), rel=1e-14)
    d = make_data(n=60, seed=14, heavy_ties=True)
    assert abs(loglik_at(datafit(d, ties="efron"), beta) - loglik_at(datafit(d), beta)) > 1e-3


def test_efron_loglik_by_brute_force():
    """Efron log partial likelihood from its definition, with weights and start-stop rows."""
    d = make_data(n=40, seed=15, start=True, weights=True, offset=True)
    beta = np.array([0.3, -0.4, 0.2, 0.1])
    eta = d["X"] @ beta + d["offset"]
    w = d["weights"] * np.exp(eta)
    ll = 0.0
    ev = d["status"] == 1
    for t in np.unique(d["time"][ev]):  # reference loop over event times
        at_risk = (d["start"] < t) & (d["time"] >= t)
        dead = ev & (d["time"] == t)
        m = dead.sum()
        D, E = w[at_risk].sum(), w[dead].sum()
        wbar = d["weights"][dead].sum() / m
        ll += (d["weights"][dead] * eta[dead]).sum() - wbar * sum(np.log(D - k / m * E) for k in range(m))
    assert loglik_at(datafit(d, ties="efron"), beta) == pytest.approx(ll, rel=1e-12)


def test_stratified_loglik_is_sum_over_strata_many_strata():
    d = make_data(n=400, seed=16, n_strata=200)  # N/2 strata
    beta = np.array([0.3, -0.4, 0.2, 0.1])
    data = dataset(d)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DataWarning)
        total = loglik_at(CoxModel().datafit(data), beta)
    parts = 0.0
    for s in np.unique(d["strata"]):
        rows = d["strata"] == s
        if d["status"][rows].sum() == 0:
            continue
        parts += loglik_at(CoxDatafit(d["X"][rows], d["time"][rows], d["status"][rows]), beta)
    assert total == pytest.approx(parts, rel=1e-12)


def test_offset_equals_fixed_coefficient():
    d = make_data(n=80, seed=17)
    x0 = d["X"][:, 0].toarray().ravel()
    full = datafit(d)
    d_off = dict(d, X=d["X"][:, 1:], offset=0.7 * x0)
    beta = np.array([0.7, 0.1, -0.2, 0.3])
    assert loglik_at(datafit(d_off), beta[1:]) == pytest.approx(loglik_at(full, beta), rel=1e-13)
    big = dict(d_off, offset=0.7 * x0 + 500.0)  # shifted internally to avoid overflow
    assert loglik_at(datafit(big), beta[1:]) == pytest.approx(loglik_at(full, beta), rel=1e-12)


def test_reference_cases_directly(ref_cases):
    for name, case, d in ref_cases:
        cols = case["columns"]
        cov = case["covariates"]
        X = sp.csc_matrix(d[cov].to_numpy(float))
        time = d[cols.get("time", cols.get("stop"))].to_numpy(float)
        start = d[cols["start"]].to_numpy(float) if "start" in cols else None
        strata = np.unique(d[cols["strata"]], return_inverse=True)[1] if "strata" in cols else None
        l1 = np.full(len(cov), case["penalty"].get("gamma", 0.0))
        for form in ("sparse", "scan"):
            df = CoxDatafit(X, time, d[cols["status"]].to_numpy(), start, strata, ties=case["ties"], formulation=form)
            res = fit_ccd(df, l1, np.zeros(len(cov)))
            exp = case["expected"]
            tol = case["tolerance"]
            assert np.allclose(res.beta, [exp["coef"][c] for c in cov], atol=tol["coef_abs"]), name
            assert res.loglik == pytest.approx(exp["loglik"], abs=tol["loglik_abs"]), name
            if "se" in exp:
                se = np.sqrt(np.diag(np.linalg.inv(-df.hessian(res.state, np.arange(len(cov))))))
                assert np.allclose(se, [exp["se"][c] for c in cov], rtol=tol["se_rel"]), name


@pytest.fixture
def ref_cases():
    from conftest import reference_dir

    out = []
    for name in ("cox_lung", "cox_lung_strata", "cox_heart_startstop", "cox_lasso_lung"):
        for base in (reference_dir(), reference_dir().parent.parent.parent / "shared" / "reference"):
            f = base / name / "case.json"
            if f.exists():
                out.append((name, json.loads(f.read_text()), pd.read_csv(base / name / "data.csv")))
                break
    if not out:
        pytest.skip("no reference cases found")
    return out


# -- bad input -------------------------------------------------------------------------------
def _ds(**kw):
    n = len(kw["time"])
    base = dict(X=sp.csc_matrix(np.arange(n, dtype=float).reshape(n, 1) % 3), covariate_names=["x"],
                row_ids=np.array([f"r{i}" for i in range(n)]))
    base.update(kw)
    return Dataset(**base)


def test_bad_inputs():
    t = np.array([1.0, 2.0, 3.0, 4.0])
    s = np.array([1, 0, 1, 0])
    m = CoxModel()
    with pytest.raises(InputError, match="negative survival time -2.*'r1'"):
        m.datafit(_ds(time=np.array([1.0, -2.0, 3.0, 4.0]), status=s))
    with pytest.raises(InputError, match="non-finite|not finite"):
        m.datafit(_ds(time=np.array([1.0, np.nan, 3.0, 4.0]), status=s))
    with pytest.raises(InputError, match="status must be 0.*2.*'r2'"):
        m.datafit(_ds(time=t, status=np.array([1, 0, 2, 0])))
    with pytest.raises(InputError, match="all rows are censored"):
        m.datafit(_ds(time=t, status=np.zeros(4, int)))
    with pytest.raises(InputError, match="start time 3.*not before stop time 3.*'r2'"):
        m.datafit(_ds(time=t, status=s, start=np.array([0.0, 1.0, 3.0, 0.0])))
    with pytest.raises(InputError, match="overlapping intervals for subject 0.*'r0'.*'r1'"):
        m.datafit(_ds(time=t, status=s, start=np.array([0.0, 0.5, 0.0, 1.0]), subject=np.array([0, 0, 1, 1])))
    # adjacent intervals of one subject are fine
    m.datafit(_ds(time=t, status=s, start=np.array([0.0, 1.0, 0.0, 3.0]), subject=np.array([0, 0, 1, 1])))
    with pytest.raises(InputError, match="needs a 'time'"):
        m.datafit(_ds(time=None, status=s, y=np.zeros(4)) if False else Dataset(
            X=sp.csc_matrix(np.ones((4, 1))), covariate_names=["x"], row_ids=np.arange(4), status=s))


def test_strata_without_events_dropped_with_warning():
    t = np.array([1.0, 2.0, 3.0, 4.0, 5.0, 6.0])
    s = np.array([1, 0, 1, 0, 0, 0])
    data = _ds(time=t, status=s, strata=np.array([0, 0, 0, 1, 1, 1]), strata_labels=np.array(["a", "b"]))
    with pytest.warns(DataWarning, match="without any event.*'b'"):
        df = CoxModel().datafit(data)
    assert df.n_rows == 3


def test_zero_variance_covariate_dropped_with_warning():
    t = np.array([1.0, 2.0, 3.0, 4.0, 5.0])
    X = sp.csc_matrix(np.column_stack([np.ones(5), [0, 1, 0, 1, 1.0], np.full(5, 2.0)]))
    data = Dataset(X=X, covariate_names=["one", "x", "two"], row_ids=np.arange(5), time=t,
                   status=np.array([1, 1, 0, 1, 0]))
    m = CoxModel()
    with pytest.warns(DataWarning, match="zero variance.*'one', 'two'"):
        df = m.datafit(data)
    assert df.n_coef == 1 and m.coef_names(data) == ["x"]


def test_options_roundtrip():
    m = CoxModel.from_spec({"ties": "efron", "time_varying": {"trt": [10]}})
    assert m.options() == {"ties": "efron", "time_varying": {"trt": [10.0]}}
    assert CoxModel(**m.options()).time_varying == m.time_varying
    with pytest.raises(ValueError, match="ties"):
        CoxModel(ties="exact")


@pytest.mark.parametrize("ties", TIES)
def test_hessian_column_subsets(ties):
    d = make_data(n=80, seed=18, start=True, n_strata=2)
    df = datafit(d, ties=ties)
    state = df.new_state(np.array([0.1, -0.2, 0.3, 0.0]))
    full = df.hessian(state, np.arange(4))
    sub = df.hessian(state, np.array([3, 1]))
    assert np.allclose(sub, full[np.ix_([3, 1], [3, 1])], rtol=1e-13)


def test_through_public_api_with_efron_and_time_varying():
    riskset = pytest.importorskip("riskset")
    d = make_data(n=150, seed=19, n_strata=2)
    data = dataset(d)
    fit = riskset.fit(data, "cox", ties="efron", time_varying={"x3": [3.0]})
    assert fit.converged
    assert list(fit.coef.index) == ["x0", "x1", "x2", "x3(0,3]", "x3(3,inf)"]
    assert np.all(np.isfinite(fit.se.to_numpy()))
    table = fit.coef_table()
    assert np.allclose(table["hazard_ratio"], np.exp(fit.coef.to_numpy()))
    risk = CoxModel(ties="efron", time_varying={"x3": [3.0]}).predict(fit, data, kind="risk")
    assert risk.shape == (150,) and np.all(risk > 0)


@pytest.mark.parametrize("ties", TIES)
def test_time_varying_datafit_derivatives(ties):
    d = make_data(n=60, seed=20, n_strata=2)
    df = CoxModel(ties=ties, time_varying={"x0": [2.0, 4.0], "x3": [3.0]}).datafit(dataset(d))
    assert df.n_coef == 7
    check_derivatives(df, np.linspace(-0.3, 0.4, 7), rel=1e-6)


@pytest.mark.parametrize("ties", TIES)
@pytest.mark.parametrize("variant", ["plain", "startstop_strata", "tv"])
def test_reweighted_view_equals_subset(variant, ties):
    """Weight 0 removes a row exactly (cross-validation views), Efron ties included."""
    d = make_data(n=120, seed=21, **(VARIANTS["strata"] if variant == "tv" else VARIANTS[variant]))
    data = dataset(d)
    model = CoxModel(ties=ties, time_varying={"x0": [3.0]} if variant == "tv" else None)
    full = model.datafit(data)
    keep = np.random.default_rng(5).random(120) < 0.6
    view = full.reweighted(keep.astype(float))
    sub = CoxModel(ties=ties, time_varying=model.time_varying).datafit(data.subset(keep))
    beta = np.linspace(-0.3, 0.3, full.n_coef)
    assert loglik_at(view, beta) == pytest.approx(loglik_at(sub, beta), rel=1e-12)
    assert np.allclose(view.gradient(view.new_state(beta)), sub.gradient(sub.new_state(beta)), rtol=1e-10, atol=1e-12)
    assert loglik_at(full.reweighted(np.ones(120)), beta) == pytest.approx(loglik_at(full, beta), rel=1e-14)
    a = fit_ccd(view, np.zeros(full.n_coef), np.zeros(full.n_coef))
    b = fit_ccd(sub, np.zeros(full.n_coef), np.zeros(full.n_coef))
    assert np.allclose(a.beta, b.beta, atol=1e-8)


@pytest.mark.parametrize("ties", TIES)
@pytest.mark.parametrize("variant", ["plain", "startstop_strata", "weights_offset", "tv"])
def test_a_view_of_few_rows_scores_them_alone(variant, ties):
    """A view keeping at most a quarter of the rows (a fold's held-out rows) reads them alone
    for its log-likelihood at beta (CoxDatafit.loglik_at): as its state's, and as the subset's."""
    d = make_data(n=200, seed=22, **(VARIANTS["strata"] if variant == "tv" else VARIANTS[variant]))
    data = dataset(d)
    model = CoxModel(ties=ties, time_varying={"x0": [3.0]} if variant == "tv" else None)
    full = model.datafit(data)
    rng = np.random.default_rng(6)
    keep = rng.random(200) < 0.2
    weights = np.where(keep, rng.integers(1, 4, 200), 0).astype(float)
    view = full.reweighted(weights)
    assert view.scored_rows is not None and full.reweighted(np.ones(200)).scored_rows is None
    sub = CoxModel(ties=ties, time_varying=model.time_varying).datafit(data.subset(keep)).reweighted(weights[keep])
    for beta in (np.linspace(-0.3, 0.3, full.n_coef), np.zeros(full.n_coef)):
        assert view.loglik_at(beta) == pytest.approx(loglik_at(view, beta), rel=1e-13)
        assert view.loglik_at(beta) == pytest.approx(loglik_at(sub, beta), rel=1e-12)


@pytest.mark.parametrize("ties", TIES)
@pytest.mark.parametrize("variant", list(VARIANTS))
def test_local_quadratic_is_the_hessian_block_without_forming_it(ties, variant):
    """local_quadratic: gradient = gradient(), H b = hessian() @ b, curvature >= -diag(H) > 0."""
    d = make_data(n=90, seed=23, **VARIANTS[variant])
    df = datafit(d, ties=ties)
    state = df.new_state(np.array([0.2, -0.1, 0.0, 0.4]))
    cols = np.array([3, 0, 1])
    quad = df.local_quadratic(state, cols)
    H = df.hessian(state, cols)
    b = np.array([0.7, -1.3, 0.4])
    assert np.allclose(quad.gradient, df.gradient(state)[cols], rtol=1e-12, atol=1e-12)
    assert np.allclose(quad.hessian_times(b), H @ b, rtol=1e-12, atol=1e-12)
    assert np.all(quad.curvature >= -np.diag(H) - 1e-12) and np.all(quad.curvature > 0)


def test_a_newton_step_after_a_gradient_reads_its_sums_and_a_move_forgets_them(monkeypatch):
    """local_quadratic at a state whose gradient() is known reads X' v of its indicator columns
    from it (no pass over them: at N = 1M ~15 ms of each Newton step of a CV fold fit); after a
    move the state has changed, and the sums are computed afresh. Both equal a fresh state's."""
    import riskset
    from riskset.core.products.column_products import ColumnProducts

    data = riskset.simulate(n=400, p=6, model="cox", seed=2)  # indicator covariates
    df = riskset.models.get_model("cox").datafit(data)
    beta, cols = np.array([0.3, -0.2, 0.0, 0.5, 0.1, 0.0]), np.array([4, 0, 3])
    passes = []
    dot2 = ColumnProducts.dot2
    monkeypatch.setattr(ColumnProducts, "dot2", lambda self, *a: passes.append(1) or dot2(self, *a))

    def fresh(b):
        quad = df.local_quadratic(df.new_state(b), cols)
        return quad.gradient, quad.curvature

    state = df.new_state(beta)
    df.gradient(state)
    before = len(passes)
    quad = df.local_quadratic(state, cols)
    assert len(passes) == before  # read from the gradient's sums
    for got, want in zip((quad.gradient, quad.curvature), fresh(beta)):
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-14)
    df.move(state, 3, 0.25)
    beta[3] += 0.25
    before = len(passes)
    quad = df.local_quadratic(state, cols)
    assert len(passes) == before + 1  # afresh
    for got, want in zip((quad.gradient, quad.curvature), fresh(beta)):
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("pairs", [True, False])
def test_hessian_rank_bounds_the_numerical_rank(pairs):
    """Matched pairs: one rank per pair whose event has its partner still at risk (for generic
    covariates the bound is the rank itself); an unstratified model: the rows at risk at each
    event time less one. A fold's view (weight 0 on every seventh row) counts only its rows."""
    rng = np.random.default_rng(3)
    n, p = 80, 120
    time = rng.exponential(size=n)
    status = np.zeros(n, np.int64)
    status[rng.choice(n, 25, replace=False)] = 1
    X = sp.csc_matrix(rng.normal(size=(n, p)))
    df = CoxDatafit(X, time, status, strata=np.repeat(np.arange(n // 2), 2) if pairs else None)
    view = df.reweighted(np.where(np.arange(n) % 7 == 0, 0.0, 1.0))
    for fit in (df, view):
        H = fit.hessian(fit.new_state(rng.normal(scale=0.1, size=p)), np.arange(p))
        rank = np.linalg.matrix_rank(H, tol=1e-9 * max(np.abs(H).max(), 1.0))
        assert rank == fit.hessian_rank if pairs else rank <= fit.hessian_rank
    assert 0 < view.hessian_rank < df.hessian_rank
