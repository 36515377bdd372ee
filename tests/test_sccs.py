"""SCCS: era builder (against a naive per-person construction), model fit, IRRs, bad input."""
import json
import pathlib
import warnings

import numpy as np
import pandas as pd
import pytest

import riskset
from riskset.data.sccs_builder import build_sccs, eras_dataset
from riskset.exceptions import DataWarning, InputError
from riskset.models.sccs import SCCS, incidence_rate_ratios
from riskset.solver.ccd import fit_ccd

REF = pathlib.Path(__file__).parent / "reference" / "sccs_sim"


def random_person_data(rng, n=40, n_drugs=4):
    obs = pd.DataFrame({"person_id": np.arange(100, 100 + n), "start": rng.integers(0, 50, n)})
    obs["end"] = obs["start"] + rng.integers(30, 400, n)
    obs["birth"] = obs["start"] - rng.integers(0, 20000, n)
    m = 3 * n
    who = rng.integers(100, 100 + n, m)
    st = rng.integers(-20, 450, m)
    exp = pd.DataFrame({"person_id": who, "drug": rng.choice([f"d{k}" for k in range(n_drugs)], m), "start": st,
                        "end": st + rng.integers(0, 60, m)})
    k = 2 * n
    out = pd.DataFrame({"person_id": rng.integers(100, 100 + n, k), "date": rng.integers(0, 450, k)})
    return obs, exp, out


def naive_eras(obs, exp, out, rws, rwe, age_cuts, cal_cuts):
    """Per-person reference construction (slow, obvious)."""
    rows = []
    for _, o in obs.iterrows():
        a, b = o.start, o.end
        ev = out.date[(out.person_id == o.person_id) & (out.date >= a) & (out.date < b)].to_numpy()
        if ev.size == 0:
            continue
        e = exp[exp.person_id == o.person_id]
        ws, we = e.start + rws, e.end + rwe
        win = [(d, max(s, a), min(t, b)) for d, s, t in zip(e.drug, ws, we) if min(t, b) > max(s, a)]
        pts = {a, b} | {s for _, s, _ in win} | {t for _, _, t in win}
        pts |= {o.birth + c for c in age_cuts if a < o.birth + c < b} | {c for c in cal_cuts if a < c < b}
        pts = sorted(pts)
        for s, t in zip(pts[:-1], pts[1:]):
            drugs = sorted({d for d, u, v in win if u <= s and t <= v})
            row = [o.person_id, s, t, int(((ev >= s) & (ev < t)).sum()), tuple(drugs),
                   int(np.searchsorted(age_cuts, s - o.birth, side="right")),
                   int(np.searchsorted(cal_cuts, s, side="right"))]
            last = rows[-1] if rows else None
            if last and last[0] == row[0] and last[2] == s and last[4:] == row[4:]:  # same covariates: merge
                last[2] = t
                last[3] += row[3]
            else:
                rows.append(row)
    return rows


@pytest.mark.parametrize("rws,rwe", [(0, 0), (5, 30)])
def test_builder_matches_naive_construction(rng, rws, rwe):
    obs, exp, out = random_person_data(rng)
    age_cuts, cal_cuts = [5000.0, 12000.0], [100.0, 300.0]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DataWarning)
        ds = build_sccs(obs, exp, out, risk_window_start=rws, risk_window_end=rwe, age_cuts=age_cuts,
                        calendar_cuts=cal_cuts)
    ref = naive_eras(obs, exp, out, rws, rwe, age_cuts, cal_cuts)
    eras = ds.meta["eras"]
    assert len(eras) == len(ref)
    assert eras.person.tolist() == [r[0] for r in ref]
    np.testing.assert_array_equal(eras.start, [r[1] for r in ref])
    np.testing.assert_array_equal(eras.end, [r[2] for r in ref])
    np.testing.assert_array_equal(ds.y, [r[3] for r in ref])
    np.testing.assert_allclose(np.exp(ds.offset), eras.length)
    X = ds.X.toarray()
    names = ds.covariate_names
    for i, r in enumerate(ref):
        drugs = {n for n, v in zip(names, X[i]) if v == 1 and not n.startswith(("age", "calendar"))}
        assert drugs == set(r[4]), i
        assert X[i, [k for k, n in enumerate(names) if n.startswith("age")]].sum() == (r[5] > 0)
        assert X[i, [k for k, n in enumerate(names) if n.startswith("calendar")]].sum() == (r[6] > 0)
    # every case keeps all its events, non-cases are gone
    assert ds.meta["sccs"]["cases"] == len(set(eras.person))


def test_builder_small_example_by_hand():
    obs = pd.DataFrame({"person_id": ["a", "b", "c"], "start": [0, 0, 0], "end": [99, 99, 99]})
    exp = pd.DataFrame({"person_id": ["a", "a", "a", "b"], "drug": ["x", "x", "y", "x"],
                        "start": [10, 20, 50, 90], "end": [29, 39, 120, 95]})
    out = pd.DataFrame({"person_id": ["a", "a", "b", "z"], "date": [10, 40, 5, 3]})
    with pytest.warns(DataWarning) as record:
        ds = build_sccs(obs, exp, out, inclusive_end=True)
    msgs = " ".join(str(w.message) for w in record)
    assert "dropped 1 outcome event" in msgs  # person z has no observation period
    assert "clipped 1 exposure" in msgs  # y of a runs past the end of observation
    eras = ds.meta["eras"]
    # a: [0,10) [10,40) x (overlapping windows merge) [40,50) [50,100) y ; b: [0,90) [90,96) x [96,100)
    assert eras[["person", "start", "end", "events"]].values.tolist() == [
        ["a", 0, 10, 0], ["a", 10, 40, 1], ["a", 40, 50, 1], ["a", 50, 100, 0],
        ["b", 0, 90, 1], ["b", 90, 96, 0], ["b", 96, 100, 0]]
    assert ds.covariate_names == ["x", "y"]
    np.testing.assert_array_equal(ds.X.toarray(), [[0, 0], [1, 0], [0, 0], [0, 1], [0, 0], [1, 0], [0, 0]])
    assert ds.meta["sccs"]["non_cases_dropped"] == 1  # c has no event
    # risk window anchored at the exposure start: 0..6 days after start
    ds2 = build_sccs(obs.iloc[:1], exp.iloc[:1], out.iloc[:2], risk_window_end=6, risk_window_anchor="start",
                     inclusive_end=True)
    assert ds2.meta["eras"][["start", "end"]].values.tolist() == [[0, 10], [10, 17], [17, 100]]


def test_builder_datetime_input():
    obs = pd.DataFrame({"person_id": [1], "start": pd.to_datetime(["2020-01-01"]),
                        "end": pd.to_datetime(["2020-12-31"])})
    exp = pd.DataFrame({"person_id": [1], "drug": ["x"], "start": pd.to_datetime(["2020-03-01"]),
                        "end": pd.to_datetime(["2020-03-31"])})
    out = pd.DataFrame({"person_id": [1], "date": pd.to_datetime(["2020-03-15"])})
    ds = build_sccs(obs, exp, out, inclusive_end=True)
    assert ds.meta["eras"].length.tolist() == [60, 31, 275]
    assert ds.y.tolist() == [0, 1, 0]


def simulate_sccs(rng, n_cases=400, n_drugs=30, beta=None):
    """Person-level data with true log-IRRs beta (first drugs), others 0."""
    beta = np.zeros(n_drugs) if beta is None else beta
    obs = pd.DataFrame({"person_id": np.arange(n_cases), "start": 0, "end": rng.integers(200, 700, n_cases)})
    m = 4 * n_cases
    who = rng.integers(0, n_cases, m)
    st = rng.integers(0, 600, m)
    exp = pd.DataFrame({"person_id": who, "drug": rng.integers(0, n_drugs, m), "start": st,
                        "end": st + rng.integers(5, 90, m)})
    ds = build_sccs(obs, exp, pd.DataFrame({"person_id": np.arange(n_cases), "date": 0}))
    # events per era ~ Poisson(length * base * exp(x beta)) conditioned on >= 1 per person
    eras = ds.meta["eras"]
    rate = 0.01 * eras.length.to_numpy() * np.exp(ds.X @ beta[: ds.n_covariates])
    y = rng.poisson(rate).astype(float)
    return pd.concat([eras[["person", "length"]], pd.DataFrame(ds.X.toarray(), columns=ds.covariate_names)],
                     axis=1).assign(events=y)


@pytest.mark.filterwarnings("ignore::riskset.exceptions.DataWarning")
def test_fit_recovers_effects_and_lasso_selects(rng):
    beta = np.zeros(30)
    beta[:3] = [1.0, -0.7, 0.8]
    table = simulate_sccs(rng, n_cases=600, beta=beta)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DataWarning)
        data = eras_dataset(table, person="person", length="length", events="events")
        fit = riskset.fit(data, "sccs")
        assert fit.converged
        est = fit.coef.to_numpy()[:3]
        assert np.all(np.abs(est - beta[:3]) < 4 * fit.se.to_numpy()[:3] + 0.05)
        lasso = riskset.fit(data, "sccs", riskset.Laplace(gamma=6.0))
    nz = set(np.flatnonzero(lasso.coef.to_numpy()))
    assert {0, 1, 2} <= nz and len(nz) < 15
    irr = incidence_rate_ratios(fit)
    np.testing.assert_allclose(irr.irr, np.exp(fit.coef.to_numpy()))
    assert np.all(irr.irr_lower < irr.irr) and np.all(irr.irr < irr.irr_upper)


def test_reference_case_through_eras_dataset():
    case = json.loads((REF / "case.json").read_text())
    frame = pd.read_csv(REF / "data.csv")
    data = eras_dataset(frame, person="id", length="length", events="y", covariates=case["covariates"])
    df = SCCS().datafit(data)
    res = fit_ccd(df, np.zeros(3), np.zeros(3))
    exp = case["expected"]
    np.testing.assert_allclose(res.beta, [exp["coef"][c] for c in case["covariates"]], atol=1e-7)
    assert res.loglik == pytest.approx(exp["loglik"], abs=1e-6)
    se = np.sqrt(np.diag(np.linalg.inv(-df.hessian(res.state, np.arange(3)))))
    np.testing.assert_allclose(se, [exp["se"][c] for c in case["covariates"]], rtol=1e-6)
    # row order does not matter
    perm = np.random.default_rng(1).permutation(len(frame))
    data2 = eras_dataset(frame.iloc[perm], person="id", length="length", events="y", covariates=case["covariates"])
    res2 = fit_ccd(SCCS().datafit(data2), np.zeros(3), np.zeros(3))
    np.testing.assert_allclose(res2.beta, res.beta, atol=1e-10)


# -- bad input ------------------------------------------------------------------------------
def test_bad_era_tables():
    t = pd.DataFrame({"person_id": [1, 1, 2], "length": [10.0, 0.0, 5.0], "events": [1, 0, 2], "x": [0, 1, 1]})
    with pytest.raises(InputError, match="zero or negative length"):
        eras_dataset(t)
    t.loc[1, "length"] = -3
    with pytest.raises(InputError, match="zero or negative length"):
        eras_dataset(t)
    t.loc[1, "length"] = 4
    t.loc[2, "events"] = -1
    with pytest.raises(InputError, match="negative event count"):
        eras_dataset(t)
    t.loc[2, "events"] = 0
    with pytest.warns(DataWarning, match="dropped 1 stratum"):  # person 2 has no event
        SCCS().datafit(eras_dataset(t))
    no_offset = riskset.from_frame(t, y="events", strata="person_id", covariates=["x"])
    with pytest.raises(InputError, match="era lengths"):
        SCCS().datafit(no_offset)


def test_bad_person_level_inputs():
    obs = pd.DataFrame({"person_id": [1, 2], "start": [0, 0], "end": [100, 100]})
    out = pd.DataFrame({"person_id": [1], "date": [5]})
    exp = pd.DataFrame({"person_id": [1], "drug": ["x"], "start": [50], "end": [40]})
    with pytest.raises(InputError, match="end before they start"):
        build_sccs(obs, exp, out)
    with pytest.raises(InputError, match="zero or negative length"):
        build_sccs(obs.assign(end=[100, 0]), exp.assign(end=60), out)
    with pytest.raises(InputError, match="more than one observation period"):
        build_sccs(pd.concat([obs, obs]), exp.assign(end=60), out)
    with pytest.raises(InputError, match="no cases|no outcome"), pytest.warns(DataWarning, match="dropped 1 outcome"):
        build_sccs(obs, exp.assign(end=60), out.assign(date=500))
    with pytest.raises(InputError, match="no column 'drug'"):
        build_sccs(obs, exp.assign(end=60).drop(columns="drug"), out)
    with pytest.warns(DataWarning, match="dropped 1 lying wholly outside"):
        build_sccs(obs, exp.assign(start=150, end=160), out)
