"""Kaplan-Meier, numbers at risk, Breslow baseline hazard, predicted survival, KM plot."""
import numpy as np
import pandas as pd
import pytest
import scipy.sparse as sp

from riskset.data.dataset import Dataset
from riskset.exceptions import InputError
from riskset.models.cox import CoxModel
from riskset.solver.ccd import fit_ccd
from riskset.survival import baseline_hazard, kaplan_meier, numbers_at_risk, predict_survival


def test_kaplan_meier_hand_example():
    # times 1 2 2+ 3 4+ : S = 4/5, then *3/4, then *1/2
    km = kaplan_meier([2, 1, 4, 3, 2], [0, 1, 0, 1, 1])
    assert km["time"].tolist() == [1, 2, 3, 4]
    assert km["n_risk"].tolist() == [5, 4, 2, 1]
    assert km["n_event"].tolist() == [1, 1, 1, 0]
    assert km["n_censor"].tolist() == [0, 1, 0, 1]
    assert np.allclose(km["survival"], [0.8, 0.6, 0.3, 0.3])
    # Greenwood: var(log S) = sum d / (n (n - d))
    v = np.cumsum([1 / 20, 1 / 12, 1 / 2, 0])
    assert np.allclose(km["std_err"], km["survival"] * np.sqrt(v))
    z = 1.959963984540054
    assert np.allclose(km["lower"], km["survival"] * np.exp(-z * np.sqrt(v)))
    assert np.allclose(km["upper"], np.minimum(1, km["survival"] * np.exp(z * np.sqrt(v))))


def test_kaplan_meier_groups_weights_and_all_dead():
    km = kaplan_meier([1, 2, 3, 1, 5], [1, 0, 1, 0, 1], group=["b", "b", "b", "a", "a"], weights=[2, 1, 1, 1, 1])
    a = km[km["group"] == "a"]
    b = km[km["group"] == "b"]
    assert a["survival"].tolist() == [1.0, 0.0]
    assert np.isnan(a["lower"].iloc[-1])
    assert np.allclose(b["n_risk"], [4, 2, 1])
    assert np.allclose(b["survival"], [0.5, 0.5, 0.0])
    with pytest.raises(InputError, match="status must be 0 or 1"):
        kaplan_meier([1, 2], [1, 2])
    with pytest.raises(InputError, match="row 1"):
        kaplan_meier([1, -2], [1, 0])


def test_numbers_at_risk():
    nar = numbers_at_risk([1, 2, 2, 3, 4, 1, 5], [0, 2, 4.5], group=[0, 0, 0, 0, 0, 1, 1])
    assert nar.loc[0].tolist() == [5, 4, 0]
    assert nar.loc[1].tolist() == [2, 1, 1]


def _toy():
    X = sp.csc_matrix(np.array([[1.0], [0.0], [1.0], [0.0], [1.0], [0.0]]))
    return Dataset(X=X, covariate_names=["x"], row_ids=np.arange(6), time=np.array([1.0, 2, 2, 3, 4, 5]),
                   status=np.array([1, 1, 0, 1, 0, 1]))


def test_baseline_hazard_by_hand():
    data = _toy()
    coef = pd.Series({"x": 0.4})
    base = baseline_hazard(coef, data, CoxModel())
    r = np.exp(0.4 * data.X.toarray().ravel())
    t = data.time
    expected = [1.0 / r[t >= s].sum() for s in (1.0, 2.0, 3.0, 5.0)]
    assert base["time"].tolist() == [1.0, 2.0, 3.0, 5.0]
    assert np.allclose(base["hazard"], expected, rtol=1e-13)
    assert np.allclose(base["cumhaz"], np.cumsum(expected), rtol=1e-13)
    S = predict_survival(coef, data, [0.5, 2.5, 10.0], model=CoxModel())
    assert S.shape == (6, 3)
    assert np.allclose(S[:, 0], 1.0)
    assert np.allclose(S[:, 1], np.exp(-np.sum(expected[:2]) * r))
    assert np.allclose(S[:, 2], np.exp(-np.sum(expected) * r))


def test_baseline_hazard_stratified_matches_separate_fits():
    rng = np.random.default_rng(2)
    n = 200
    X = sp.csc_matrix(rng.normal(size=(n, 2)))
    time = rng.integers(1, 20, n).astype(float)
    status = (rng.random(n) < 0.6).astype(int)
    strata = rng.integers(0, 2, n)
    data = Dataset(X=X, covariate_names=["a", "b"], row_ids=np.arange(n), time=time, status=status,
                   strata=strata, strata_labels=np.array(["m", "f"]))
    coef = pd.Series({"a": 0.2, "b": -0.3})
    base = baseline_hazard(coef, data, CoxModel())
    assert set(base["stratum"]) == {"m", "f"}
    for code, lab in enumerate(["m", "f"]):
        sub = data.subset(strata == code)
        sub = Dataset(X=sub.X, covariate_names=sub.covariate_names, row_ids=sub.row_ids, time=sub.time,
                      status=sub.status)
        one = baseline_hazard(coef, sub, CoxModel())
        mine = base[base["stratum"] == lab]
        assert np.allclose(mine["cumhaz"], one["cumhaz"], rtol=1e-12)
    S = predict_survival(coef, data, [5.0, 10.0])
    assert S.shape == (n, 2) and np.all((S > 0) & (S <= 1)) and np.all(S[:, 1] <= S[:, 0])


def test_efron_baseline_hazard_increments():
    data = _toy()
    data = Dataset(X=data.X, covariate_names=["x"], row_ids=np.arange(6), time=np.array([1.0, 2, 2, 3, 4, 5]),
                   status=np.array([1, 1, 1, 1, 0, 1]))
    coef = pd.Series({"x": 0.4})
    base = baseline_hazard(coef, data, CoxModel(ties="efron"))
    r = np.exp(0.4 * data.X.toarray().ravel())
    D = r[1:].sum()
    E = r[1] + r[2]
    assert base["hazard"].iloc[1] == pytest.approx(1 / D + 1 / (D - E / 2), rel=1e-13)


def test_plot_km_smoke(tmp_path):
    import matplotlib

    matplotlib.use("Agg")
    from riskset.plots.km import plot_km

    rng = np.random.default_rng(1)
    t = rng.exponential(10, 100)
    fig = plot_km(t, rng.random(100) < 0.7, rng.choice(["A", "B"], 100), title="KM")
    ax = fig.axes[0]
    assert len(ax.get_lines()) >= 2  # one curve per group (plus censoring marks)
    assert len(fig.axes[1].texts) == 2 * len(ax.get_xticks())  # numbers at risk: a row per group, a column per tick
    fig.savefig(tmp_path / "km.png")


def test_efron_matches_statsmodels():
    sm = pytest.importorskip("statsmodels.duration.hazard_regression")
    rng = np.random.default_rng(4)
    n = 150
    Xd = rng.normal(size=(n, 3))
    time = rng.integers(1, 15, n).astype(float)
    status = (rng.random(n) < 0.7).astype(int)
    for ties in ("breslow", "efron"):
        ref = sm.PHReg(time, Xd, status=status, ties=ties).fit()
        data = Dataset(X=sp.csc_matrix(Xd), covariate_names=["a", "b", "c"], row_ids=np.arange(n), time=time,
                       status=status)
        df = CoxModel(ties=ties).datafit(data)
        res = fit_ccd(df, np.zeros(3), np.zeros(3))
        assert np.allclose(res.beta, ref.params, atol=1e-8)
        assert res.loglik == pytest.approx(ref.llf, rel=1e-10)
        se = np.sqrt(np.diag(np.linalg.inv(-df.hessian(res.state, np.arange(3)))))
        assert np.allclose(se, ref.bse, rtol=1e-6)
