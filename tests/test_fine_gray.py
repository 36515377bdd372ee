"""Fine-Gray subdistribution hazards: likelihood, derivatives, formulations, invariances, inputs,
robust standard errors against cmprsk::crr, cumulative incidence."""
import json
from dataclasses import replace

import numpy as np
import pandas as pd
import pytest
import scipy.sparse as sp

import riskset
from conftest import reference_dir
from helpers import check_derivatives, check_move
from riskset.data import from_arrays
from riskset.exceptions import DataWarning, InputError
from riskset.models.fine_gray import FineGrayDatafit, censoring_survival


def tied_data(rng, n=60, p=5, n_times=6, density=0.4, weights=True):
    """Heavy ties: integer times; codes 0 censored, 1 event, 2 and 3 competing; some
    competing rows tied with events and censorings."""
    time = rng.integers(1, n_times + 1, n).astype(float)
    status = rng.choice([0, 1, 2, 3], size=n, p=[0.25, 0.35, 0.25, 0.15])
    # make sure every kind of tie exists at time 3
    time[:4] = 3.0
    status[:4] = [1, 2, 0, 3]
    # rows before every event time (slot K), including time 0, and after the last one
    time[4:8] = [0.0, 0.5, 0.5, n_times + 1]
    status[4:8] = [2, 0, 3, 2]
    X = sp.random(n, p, density=density, random_state=np.random.RandomState(rng.integers(1 << 30)),
                  data_rvs=lambda k: rng.normal(size=k)).tocsc()
    ind = sp.csc_matrix((rng.random(n) < 0.3).astype(float)[:, None])  # an indicator column
    X = sp.hstack([ind, X[:, 1:]], format="csc")
    w = rng.uniform(0.5, 2.0, n) if weights else None
    return X, time, status, w


def brute_loglik(X, time, status, beta, w=None, offset=None, event=1, censor=0):
    """crr's pseudo-likelihood written directly from its definition (O(N^2))."""
    n = len(time)
    c = np.ones(n) if w is None else w
    eta = np.asarray(X @ beta).ravel() + (0 if offset is None else offset)
    # censoring KM, left limits, by brute force
    ut = np.unique(time)
    G_left = {}
    g = 1.0
    for u in ut:
        G_left[u] = g
        at = c[time >= u].sum()
        ce = c[(time == u) & (status == censor)].sum()
        g *= 1 - ce / at
    comp = (status != event) & (status != censor)
    ll = 0.0
    for t in np.unique(time[status == event]):
        d = c[(time == t) & (status == event)].sum()
        ll += (c * eta)[(time == t) & (status == event)].sum()
        r = c * np.exp(eta)
        wt = np.where(time >= t, 1.0, np.where(comp, [G_left[t] / G_left[u] for u in time], 0.0))
        ll -= d * np.log(np.sum(r * wt))
    return ll


def datafit(X, time, status, w=None, offset=None, formulation="sparse"):
    ev = (status == 1).astype(np.uint8)
    cens = (status == 0).astype(np.uint8)
    comp = ((status != 1) & (status != 0)).astype(np.uint8)
    return FineGrayDatafit(X, time, ev, comp, cens, w, offset, formulation=formulation)


def test_censoring_km_left_limits():
    ut, G, G_left = censoring_survival([1, 2, 2, 3, 4], [0, 1, 0, 1, 0])
    # censored at 2 (1 of 4 at risk) and at 3 (1 of 2 at risk)
    assert ut.tolist() == [1, 2, 3, 4]
    assert np.allclose(G, [1, 0.75, 0.375, 0.375])
    assert np.allclose(G_left, [1, 1, 0.75, 0.375])


def test_loglik_matches_definition(rng):
    X, time, status, w = tied_data(rng)
    off = rng.normal(scale=0.3, size=len(time))
    beta = rng.normal(scale=0.5, size=X.shape[1])
    for form in ("sparse", "scan"):
        df = datafit(X, time, status, w, off, formulation=form)
        ll = df.loglik(df.new_state(beta))
        assert ll == pytest.approx(brute_loglik(X, time, status, beta, w, off), rel=1e-12)


@pytest.mark.parametrize("formulation", ["sparse", "scan"])
def test_derivatives_heavy_ties(rng, formulation):
    X, time, status, w = tied_data(rng)
    df = datafit(X, time, status, w, formulation=formulation)
    beta = rng.normal(scale=0.4, size=X.shape[1])
    check_derivatives(df, beta, rel=1e-6)
    check_move(df, beta, 1, 0.37)
    check_move(df, beta, 0, -0.8)


def test_sparse_and_scan_agree(rng):
    X, time, status, w = tied_data(rng, n=300, p=12, n_times=25, density=0.15)
    beta = rng.normal(scale=0.3, size=X.shape[1])
    a = datafit(X, time, status, w, formulation="sparse")
    b = datafit(X, time, status, w, formulation="scan")
    sa, sb = a.new_state(beta), b.new_state(beta)
    for j in range(X.shape[1]):
        ga, ha = a.coordinate(sa, j)
        gb, hb = b.coordinate(sb, j)
        assert ga == pytest.approx(gb, rel=1e-10, abs=1e-10)
        assert ha == pytest.approx(hb, rel=1e-10)
    data = from_arrays(X, time=time, status=status, weights=w)
    fits = [riskset.fit(data, "fine_gray", riskset.Laplace(gamma=1.5), formulation=f, tol=1e-13)
            for f in ("sparse", "scan")]
    assert np.abs(fits[0].coef.to_numpy()).max() > 0.01
    np.testing.assert_allclose(fits[0].coef.to_numpy(), fits[1].coef.to_numpy(), rtol=1e-7, atol=1e-9)
    assert fits[0].objective == pytest.approx(fits[1].objective, rel=1e-12)


def test_no_competing_events_equals_cox(rng):
    X, time, status, w = tied_data(rng, n=120, p=4)
    status = np.where(status > 1, 0, status)  # no competing events
    data = from_arrays(X, time=time, status=status, weights=w)
    with pytest.warns(DataWarning, match="reduces to the Cox model"):
        fg = riskset.fit(data, "fine_gray", tol=1e-13, variance="model-based")
    cox = riskset.fit(data, "cox", ties="breslow", tol=1e-13)
    np.testing.assert_allclose(fg.coef.to_numpy(), cox.coef.to_numpy(), atol=1e-8)
    np.testing.assert_allclose(fg.se.to_numpy(), cox.se.to_numpy(), rtol=1e-7)
    assert fg.loglik == pytest.approx(cox.loglik, abs=1e-9)


def test_competing_events_change_the_fit(rng):
    X, time, status, w = tied_data(rng, n=120, p=4)
    data = from_arrays(X, time=time, status=status, weights=w)
    fg = riskset.fit(data, "fine_gray", tol=1e-12)
    cox = riskset.fit(replace(data, status=np.where(status > 1, 0, status)), "cox",
                      tol=1e-12)
    assert np.abs(fg.coef.to_numpy() - cox.coef.to_numpy()).max() > 1e-3


def test_row_order_invariance(rng):
    X, time, status, w = tied_data(rng, n=80)
    perm = rng.permutation(len(time))
    a = riskset.fit(from_arrays(X, time=time, status=status, weights=w), "fine_gray", riskset.Normal(variance=2.0),
                    tol=1e-13)
    b = riskset.fit(from_arrays(X[perm], time=time[perm], status=status[perm], weights=w[perm]), "fine_gray",
                    riskset.Normal(variance=2.0), tol=1e-13)
    np.testing.assert_allclose(a.coef.to_numpy(), b.coef.to_numpy(), atol=1e-9)
    assert a.loglik == pytest.approx(b.loglik, rel=1e-12)


def test_weights_equal_duplicated_rows(rng):
    X, time, status, _ = tied_data(rng, n=70, weights=False)
    counts = rng.integers(1, 4, len(time))
    rows = np.repeat(np.arange(len(time)), counts)
    a = riskset.fit(from_arrays(X, time=time, status=status, weights=counts.astype(float)), "fine_gray", tol=1e-13)
    b = riskset.fit(from_arrays(X[rows], time=time[rows], status=status[rows]), "fine_gray", tol=1e-13)
    np.testing.assert_allclose(a.coef.to_numpy(), b.coef.to_numpy(), atol=1e-8)
    np.testing.assert_allclose(a.se.to_numpy(), b.se.to_numpy(), rtol=1e-7)
    assert a.loglik == pytest.approx(b.loglik, rel=1e-11)
    # zero weight = row removed
    keep = rng.random(len(time)) < 0.7
    c = riskset.fit(from_arrays(X, time=time, status=status, weights=keep.astype(float)), "fine_gray", tol=1e-13)
    d = riskset.fit(from_arrays(X[keep], time=time[keep], status=status[keep]), "fine_gray", tol=1e-13)
    np.testing.assert_allclose(c.coef.to_numpy(), d.coef.to_numpy(), atol=1e-8)


def test_reweighted_datafit(rng):
    X, time, status, w = tied_data(rng, n=70)
    base = datafit(X, time, status, None)
    new_w = rng.uniform(0, 2, len(time))
    rw = base.reweighted(new_w)
    fresh = datafit(X, time, status, new_w)
    beta = rng.normal(scale=0.3, size=X.shape[1])
    assert rw.loglik(rw.new_state(beta)) == pytest.approx(fresh.loglik(fresh.new_state(beta)), rel=1e-13)
    assert base.loglik(base.new_state(beta)) == pytest.approx(brute_loglik(X, time, status, beta), rel=1e-12)
    # a view without the latest rows (cross-validation fold): empty late risk sets stay finite
    late = rw.reweighted(np.where(time >= time.max() - 1, 0.0, 1.0))
    st = late.new_state(beta)
    assert np.isfinite(late.loglik(st)) and np.all(np.isfinite(late.hessian(st, np.arange(X.shape[1]))))
    check_derivatives(late, beta)


def test_event_codes_options(rng):
    X, time, status, w = tied_data(rng, n=80)
    # recode: event of interest 2, competing 1 and 3, censored 9
    recoded = np.select([status == 1, status == 2, status == 0], [7, 2, 9], 3)
    a = riskset.fit(from_arrays(X, time=time, status=recoded), "fine_gray", event_of_interest=2,
                    competing_events=[7, 3], censor_code=9, tol=1e-12)
    swapped = np.select([status == 2, status == 1], [1, 2], status)
    b = riskset.fit(from_arrays(X, time=time, status=swapped), "fine_gray", tol=1e-12)
    np.testing.assert_allclose(a.coef.to_numpy(), b.coef.to_numpy(), atol=1e-9)
    # only code 3 competing: code 7 is unknown
    with pytest.raises(InputError, match="unknown status code"):
        riskset.fit(from_arrays(X, time=time, status=recoded), "fine_gray", event_of_interest=2,
                    competing_events=3, censor_code=9)


def test_bad_inputs(rng):
    X, time, status, _ = tied_data(rng, n=30)
    with pytest.raises(InputError, match="no event of interest"):
        riskset.fit(from_arrays(X, time=time, status=np.where(status == 1, 2, status)), "fine_gray")
    t = time.copy()
    t[5] = -1.0
    with pytest.raises(InputError, match="negative survival time"):
        riskset.fit(from_arrays(X, time=t, status=status), "fine_gray")
    t[5] = np.nan
    with pytest.raises(InputError, match="not finite|non-finite"):
        riskset.fit(from_arrays(X, time=t, status=status), "fine_gray")
    bad = status.astype(float)
    bad[3] = 1.5
    with pytest.raises(InputError, match="integer"):
        riskset.fit(from_arrays(X, time=time, status=bad), "fine_gray")
    with pytest.raises(InputError, match="unknown status code"):
        riskset.fit(from_arrays(X, time=time, status=np.where(status == 3, 4, status)), "fine_gray",
                    competing_events=[2, 3])


# -- robust standard errors, cumulative incidence -------------------------------------------
def mgus2():
    path = reference_dir() / "fine_gray_mgus2"
    spec = json.loads((path / "case.json").read_text())
    frame = pd.read_csv(path / "data.csv")
    return spec, riskset.from_frame(frame, time="time", status="status", covariates=spec["covariates"])


def test_robust_se_matches_crr():
    from riskset.robust import robust_se

    spec, data = mgus2()
    fit = riskset.fit(data, "fine_gray", tol=1e-13)
    se = robust_se(fit, data)
    for name, ref in spec["expected"]["se"].items():
        assert se[name] == pytest.approx(ref, rel=1e-6), name
        assert fit.se[name] == pytest.approx(ref, rel=1e-6), name  # the fit shows crr's robust SEs
    assert fit.variance == "robust" and fit.coef_table().attrs["variance"] == "robust"
    assert "standard errors: robust (sandwich, as cmprsk::crr)" in fit.summary()
    naive = riskset.fit(data, "fine_gray", tol=1e-13, variance="model-based")
    for name, ref in spec["expected"]["se_model"].items():
        assert naive.se[name] == pytest.approx(ref, rel=1e-3), name
    assert "standard errors: model-based (inverse observed information)" in naive.summary()
    again = riskset.FitResult.from_json(fit.to_json())
    assert again.variance == "robust"


def test_fine_gray_variance_refuses_unknown_kind():
    with pytest.raises(riskset.InputError, match="variance must be one of .*'sandwich'"):
        riskset.models.fine_gray.FineGrayModel(variance="sandwich")


def test_cox_summary_names_its_ties():
    data = from_arrays([[1.0], [0.0], [1.0], [0.0]], time=[1, 1, 2, 3], status=[1, 1, 1, 0])
    assert "ties: Breslow (R's coxph default is Efron: ties='efron')" in riskset.fit(data, "cox").summary()
    assert "\nties: Efron\n" in riskset.fit(data, "cox", ties="efron").summary()
    assert "ties:" not in riskset.fit(from_arrays([[1.0], [0.0], [1.0], [0.0]], y=[1, 0, 0, 1]), "logistic").summary()


def test_aalen_johansen_hand_example():
    from riskset.competing_risks import aalen_johansen

    # times 1..5: event 1 at 1, competing at 2, censored at 3, event 1 at 4, censored at 5
    aj = aalen_johansen([1, 2, 3, 4, 5, 4], [1, 2, 0, 1, 0, 2])
    # n=6; t=1: S=5/6, F=1/6; t=2: S=4/6, F=1/6; t=3 censored; t=4: at risk 3, one of each
    # cause: F = 1/6 + S(4-) * 1/3 = 1/6 + (4/6)(1/3) = 7/18; S = 4/6 * 1/3 = 2/9
    got = dict(zip(aj["time"], aj["cif"]))
    assert got[1.0] == pytest.approx(1 / 6)
    assert got[2.0] == pytest.approx(1 / 6)
    assert got[4.0] == pytest.approx(7 / 18)
    assert got[5.0] == pytest.approx(7 / 18)
    assert dict(zip(aj["time"], aj["survival"]))[4.0] == pytest.approx(2 / 9)
    assert dict(zip(aj["time"], aj["cif_competing"]))[4.0] == pytest.approx(1 / 6 + 2 / 9)


def test_aalen_johansen_matches_cuminc():
    from riskset.competing_risks import aalen_johansen

    _, data = mgus2()
    sex = np.asarray(data.X[:, data.covariate_names.index("sex01")].todense()).ravel()
    aj = aalen_johansen(data.time, data.status, group=sex)
    # cmprsk::cuminc(time, status, group = sex01), timepoints at 12, 60, 120, 240 months
    ref = {(0, "cif"): [0.01284465077729936, 0.0402381514609321, 0.0730452177193992, 0.1045498982360556],
           (1, "cif"): [0.00669344042838019, 0.0295835666730379, 0.0556369020383935, 0.0958800869816754],
           (0, "cif_competing"): [0.09466068395881695, 0.2653294021303905, 0.4827806045720913,
                                  0.6979870359963115],
           (1, "cif_competing"): [0.14725568942436412, 0.3705926840758794, 0.5757433462368083,
                                  0.7482754721171208]}
    for (g, col), values in ref.items():
        part = aj[aj["group"] == g]
        idx = np.searchsorted(part["time"].to_numpy(), [12, 60, 120, 240], side="right") - 1
        np.testing.assert_allclose(part[col].to_numpy()[idx], values, rtol=1e-12)


def test_robust_se_weights_equal_duplicated_rows(rng):
    from riskset.robust import robust_se

    X, time, status, _ = tied_data(rng, n=80, p=3, weights=False)
    counts = rng.integers(1, 4, len(time))
    rows = np.repeat(np.arange(len(time)), counts)
    a_data = from_arrays(X, time=time, status=status, weights=counts.astype(float))
    b_data = from_arrays(X[rows], time=time[rows], status=status[rows])
    a = robust_se(riskset.fit(a_data, "fine_gray", tol=1e-13), a_data)
    b = robust_se(riskset.fit(b_data, "fine_gray", tol=1e-13), b_data)
    np.testing.assert_allclose(a.to_numpy(), b.to_numpy(), rtol=1e-7)


def test_aalen_johansen_without_competing_is_one_minus_km(rng):
    from riskset.competing_risks import aalen_johansen
    from riskset.survival import kaplan_meier

    time = rng.integers(1, 15, 200).astype(float)
    status = (rng.random(200) < 0.6).astype(int)
    group = rng.integers(0, 2, 200)
    w = rng.uniform(0.5, 2, 200)
    aj = aalen_johansen(time, status, group=group, weights=w)
    km = kaplan_meier(time, status, group=group, weights=w)
    np.testing.assert_allclose(aj["cif"].to_numpy(), 1 - km["survival"].to_numpy(), atol=1e-12)
    np.testing.assert_array_equal(aj["time"].to_numpy(), km["time"].to_numpy())


def test_predict_cif(rng):
    from riskset.competing_risks import baseline_subdistribution_hazard, predict_cif

    spec, data = mgus2()
    fit = riskset.fit(data, "fine_gray", tol=1e-13)
    base = baseline_subdistribution_hazard(fit, data)
    assert np.all(np.diff(base["cumhaz"].to_numpy()) > 0)
    times = np.array([0.0, 12.0, 120.0, 400.0])
    cif = predict_cif(fit, data, times)
    assert cif.shape == (data.n_rows, 4)
    assert np.all(cif[:, 0] == 0) and np.all(np.diff(cif, axis=1) >= 0) and np.all(cif < 1)
    eta = fit.linear_predictor(data)
    Hs = base["cumhaz"].to_numpy()[np.searchsorted(base["time"].to_numpy(), 120.0, side="right") - 1]
    assert Hs > 0
    np.testing.assert_allclose(cif[:, 2], 1 - np.exp(-np.exp(eta) * Hs), rtol=1e-12)
    # cmprsk::predict.crr for (age, sex01, hgb) = (70, 1, 13) and (80, 0, 11) at 12, 60, 118, 238
    # months (the last event times <= 12, 60, 120, 240); crr fitted with gtol = 1e-8
    new = riskset.from_frame(pd.DataFrame({"age": [70, 80], "sex01": [1, 0], "hgb": [13.0, 11.0]}),
                             covariates=["age", "sex01", "hgb"])
    got = predict_cif(fit, data, [12, 60, 120, 240], newdata=new)
    crr = np.array([[0.00834533283017125, 0.03030274671879285, 0.05593524400208660, 0.08802465324428388],
                    [0.00907863586066771, 0.03293310396302984, 0.06071983819588667, 0.09541217456930318]])
    np.testing.assert_allclose(got, crr, rtol=1e-6)
    # the mean predicted CIF tracks the Aalen-Johansen estimate
    from riskset.competing_risks import aalen_johansen

    aj = aalen_johansen(data.time, data.status)
    f120 = aj["cif"].to_numpy()[np.searchsorted(aj["time"].to_numpy(), 120.0, side="right") - 1]
    assert cif[:, 2].mean() == pytest.approx(f120, abs=0.02)


def test_plot_cif(rng):
    import matplotlib

    matplotlib.use("Agg")
    from riskset.plots.cif import plot_cif

    time = rng.integers(1, 15, 100).astype(float)
    status = rng.choice([0, 1, 2], 100)
    group = rng.choice(["a", "b"], 100)
    fig = plot_cif(time, status, group=group)
    ax = fig.axes[0]
    assert len(ax.get_lines()) >= 2
    assert [t.get_text() for t in ax.get_legend().get_texts()][:2] == ["a", "b"]


def test_fit_shows_crr_robust_se_on_small_tied_data():
    """R 4 / cmprsk (script: the comment below): crr's coef, sqrt(diag(var)) (robust) and
    sqrt(diag(solve(inf))) (model-based) on 20 rows with tied times; tolerance rel 1e-6.

    library(cmprsk)
    f <- crr(time, status, cbind(x1, x2), failcode = 1, cencode = 0, gtol = 1e-10)
    sprintf("%.12g", c(f$coef, sqrt(diag(f$var)), sqrt(diag(solve(f$inf)))))
    """
    time = [1, 2, 2, 3, 4, 4, 5, 6, 6, 7, 8, 9, 9, 10, 11, 12, 12, 13, 14, 15]
    status = [1, 2, 0, 1, 1, 2, 0, 1, 2, 0, 1, 1, 2, 0, 1, 2, 1, 0, 1, 0]
    x1 = [0.5, -1.2, 0.3, 1.1, -0.4, 0.8, -0.9, 0.2, 1.5, -0.3, 0.7, -1.1, 0.4, 0.9, -0.6, 0.1, 1.3, -0.8, 0.6, -0.2]
    x2 = [1, 0, 1, 1, 0, 0, 1, 0, 1, 1, 0, 1, 0, 0, 1, 1, 0, 1, 0, 1]
    data = from_arrays(np.column_stack([x1, x2]), time=time, status=status, covariate_names=["x1", "x2"])
    fit = riskset.fit(data, "fine_gray", tol=1e-14)
    np.testing.assert_allclose(fit.coef.to_numpy(), [0.0957388242834, -0.149170512098], rtol=1e-6)
    np.testing.assert_allclose(fit.se.to_numpy(), [0.422013670307, 0.717976085843], rtol=1e-6)
    naive = riskset.fit(data, "fine_gray", tol=1e-14, variance="model-based")
    np.testing.assert_allclose(naive.se.to_numpy(), [0.437912918809, 0.707054827728], rtol=1e-6)
    assert naive.coef_table().attrs["variance"] == "model-based"


def test_robust_se_of_a_fit_with_an_aliased_column_is_the_fit_without_it(rng):
    X, time, status, _ = tied_data(rng, n=120, p=3, weights=False)
    data = from_arrays(X, time=time, status=status)
    twice = from_arrays(sp.hstack([X, X[:, 0]], format="csc"), time=time, status=status)
    with pytest.warns(riskset.DataWarning, match="aliased"):
        fit = riskset.fit(twice, "fine_gray", tol=1e-13)
    alone = riskset.fit(data, "fine_gray", tol=1e-13)
    assert fit.aliased == ["x3"] and np.isnan(fit.se["x3"]) and fit.variance == "robust"
    np.testing.assert_allclose(fit.se[["x0", "x1", "x2"]].to_numpy(), alone.se.to_numpy(), rtol=1e-7)
