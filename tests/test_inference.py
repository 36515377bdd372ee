"""Profile-likelihood intervals as batched replicates: the lockstep root searches equal
sequential Brent searches; replicates of one datafit are fitted safely in parallel threads."""
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace

import numpy as np
import pytest
from scipy import optimize, stats

import riskset
from riskset.data import from_arrays
from riskset.profile_likelihood import MAX_DOUBLINGS, ProfileSearches, profile_intervals
from riskset.core.penalty import Penalty
from riskset.core.replicates import ViewReplicates
from riskset.solver.ccd import SolverOptions, fit_ccd
from riskset.solver.replicates import fit_replicates
from test_conditional import matched_data
from test_fine_gray import tied_data

OPTS = SolverOptions(tol=1e-10)


def brentq_bounds(datafit, beta_hat, objective_hat, l1, l2, j, se, level=0.95):
    """The reference: scipy's brentq on the profile deficit, one bound after the other,
    bracketed by doubling steps of 2 SE from the MLE; every point a cold fit from the MLE."""
    drop = stats.chi2.ppf(level, 1) / 2
    fixed = np.arange(datafit.n_coef) == j

    def deficit(b):
        beta0 = beta_hat.copy()
        beta0[j] = b
        return objective_hat - fit_ccd(datafit, l1, l2, beta0=beta0, fixed=fixed, options=OPTS).objective - drop

    bounds = []
    for side in (-1.0, 1.0):
        inner, outer = beta_hat[j], beta_hat[j] + side * 2.0 * se
        while deficit(outer) <= 0:
            inner, outer = outer, beta_hat[j] + 2.0 * (outer - beta_hat[j])
        xtol = 1e-8 * max(1.0, abs(outer))
        bounds.append((optimize.brentq(deficit, inner, outer, xtol=xtol), xtol))
    return bounds


def cox_data():
    return riskset.simulate(n=800, p=5, model="cox", seed=4), "cox", {}, None


def efron_scan_data():
    data = riskset.simulate(n=600, p=5, model="cox", seed=6)
    return replace(data, time=np.ceil(data.time * 3)), "cox", {"ties": "efron", "formulation": "scan"}, None


def logistic_ridge_data():
    return riskset.simulate(n=800, p=5, model="logistic", seed=5), "logistic", {}, riskset.Normal(variance=0.5)


def fine_gray_lasso_data():
    X, time, status, w = tied_data(np.random.default_rng(7), n=300, p=4)
    return from_arrays(X, time=time, status=status, weights=w), "fine_gray", {}, riskset.Laplace(gamma=1.0)


def conditional_data():
    return matched_data(np.random.default_rng(8), n_sets=60, p=3), "conditional_logistic", {"ties": "exact"}, None


@pytest.mark.parametrize("make", [cox_data, efron_scan_data, logistic_ridge_data, fine_gray_lasso_data,
                                  conditional_data])
def test_lockstep_intervals_equal_sequential_brent(make):
    data, model, options, prior = make()
    m = riskset.models.get_model(model, **options)
    datafit, names = m.datafit(data), m.coef_names(data)
    l1, l2 = (prior or riskset.NoPrior()).penalty_arrays(names, m.unpenalized_names())
    fit = fit_ccd(datafit, l1, l2, options=OPTS)
    cols = np.arange(min(3, len(names)))
    se = np.full(cols.size, 0.3)  # the bracketing step (2 SE), as both searches take it
    table = profile_intervals(datafit, fit.beta, fit.objective, Penalty(l1, l2), cols, names, options=OPTS, se=se)
    assert table["name"].tolist() == [names[j] for j in cols]
    for k, j in enumerate(cols):
        (lower, tol_lo), (upper, tol_hi) = brentq_bounds(datafit, fit.beta, fit.objective, l1, l2, j, se[k])
        # both searches end within xtol of the root of the same profile deficit
        assert abs(table.loc[k, "lower"] - lower) <= 2 * tol_lo
        assert abs(table.loc[k, "upper"] - upper) <= 2 * tol_hi
        assert lower < fit.beta[j] < upper


def test_fit_threads_and_progress(capsys):
    data = riskset.simulate(n=600, p=4, model="poisson", seed=2)
    one = riskset.fit(data, "poisson", profile=["x0", "x2"])
    two = riskset.fit(data, "poisson", profile=["x0", "x2"], n_jobs=2, progress=True)
    assert "profile likelihood" in capsys.readouterr().err
    assert one.intervals.equals(two.intervals)  # threads change nothing, not even rounding
    assert np.all(one.intervals["lower"] < one.coef[["x0", "x2"]].to_numpy())


def test_searches_find_roots_superlinearly():
    # an asymmetric deficit, as a profile likelihood of a skewed coefficient
    def deficit(x):
        return 0.5 * x * x + 0.2 * x ** 3 / (1 + x * x) - 1.92

    s = ProfileSearches(np.zeros(2), np.array([-0.5, 0.5]), f_center=-1.92)
    while not s.done.all():
        todo, x = s.proposals()
        s.update(todo, deficit(x))
    for side, root in zip((-1.0, 1.0), s.root):
        exact = optimize.brentq(deficit, 0.0, side * 10.0, xtol=1e-14)
        assert root == pytest.approx(exact, abs=2e-8 * max(1.0, abs(exact)))
    # 3 steps out (to 2), then interpolation: at most 6 steps where bisection of [1, 2] to 1e-8 takes 27
    assert s.rounds <= 9 and s.evaluations.max() == s.rounds


def test_a_bound_that_is_never_crossed_is_infinite():
    # a profile that levels off below the cut-off (e.g. a separating covariate)
    s = ProfileSearches(np.zeros(2), np.array([-1.0, 1.0]), f_center=-1.92)
    while not s.done.all():
        todo, x = s.proposals()
        s.update(todo, np.where(x < 0, 0.5 * x * x - 1.92, -1.92 * np.exp(-x)))  # crosses on the left only
    assert s.root[0] == pytest.approx(-np.sqrt(3.84), abs=2e-8)
    assert s.root[1] == np.inf and s.k[1] == MAX_DOUBLINGS


def _threaded_equals_sequential(datafit, R=4):
    P = datafit.n_coef
    beta0 = np.zeros((R, P))
    beta0[:, 0] = np.linspace(-0.5, 0.5, R)
    free = np.ones((R, P), bool)
    free[:, 0] = False
    alone = fit_replicates(ViewReplicates([datafit] * R), 0.0, 0.0, beta0, free, OPTS)
    with ThreadPoolExecutor(2) as pool:
        together = fit_replicates(ViewReplicates([datafit] * R, pool), 0.0, 0.0, beta0, free, OPTS)
    assert np.array_equal(alone.beta, together.beta)
    assert np.array_equal(alone.objective, together.objective)


@pytest.mark.parametrize("family", ["cox_scan", "fine_gray_scan", "conditional_exact"])
def test_states_of_one_datafit_run_in_parallel_threads(family):
    """Each state owns the arrays its sweeps write (the scans' column work vector, the
    exact conditional likelihood's polynomials): views of one datafit never share them."""
    if family == "cox_scan":
        data = riskset.simulate(n=2000, p=6, density=0.3, model="cox", seed=1)
        datafit = riskset.models.get_model("cox", formulation="scan").datafit(data)
        work = ("xd",)
    elif family == "fine_gray_scan":
        X, time, status, w = tied_data(np.random.default_rng(3), n=400, p=5)
        datafit = riskset.models.get_model("fine_gray", formulation="scan").datafit(
            from_arrays(X, time=time, status=status, weights=w))
        work = ("xd", "work")
    else:
        datafit = riskset.models.get_model("conditional_logistic", ties="exact").datafit(
            matched_data(np.random.default_rng(4), n_sets=80, p=4))
        work = ("B", "dB", "d2B")
    a, b = datafit.new_state(np.zeros(datafit.n_coef)), datafit.new_state(np.zeros(datafit.n_coef))
    for name in work:
        assert not np.shares_memory(getattr(a, name), getattr(b, name))
    _threaded_equals_sequential(datafit)
