"""The replicate driver: a batch fitted in lockstep equals its replicates fitted one by one."""
import numpy as np
import pytest

import riskset
from riskset.core.replicates import ViewReplicates
from riskset.solver.ccd import SolverOptions, fit_ccd
from riskset.solver.replicates import fit_replicates


def weightings(n, rng):
    """Two cross-validation folds, two bootstrap draws and the full data."""
    W = np.ones((5, n))
    W[0, rng.random(n) < 0.2] = 0.0
    W[1, rng.random(n) < 0.2] = 0.0
    W[2] = rng.poisson(1.0, n)
    W[3] = rng.poisson(1.0, n)
    return W


@pytest.mark.parametrize("model, options", [("cox", {}), ("cox", {"ties": "efron"}), ("logistic", {}),
                                            ("poisson", {})])
def test_batched_replicates_equal_separate_fits(rng, model, options):
    data = riskset.simulate(n=1500, p=25, model=model, seed=3)
    if options.get("ties") == "efron":
        from dataclasses import replace

        data = replace(data, time=np.ceil(data.time * 4))  # many tied event times
    datafit = riskset.models.get_model(model, **options).datafit(data)
    P = datafit.n_coef
    W = weightings(data.n_rows, rng)
    l1 = np.tile(np.full(P, 4.0), (5, 1))
    l1[1] *= 3.0          # another grid point
    l1[:, 0] = 0.0        # one unpenalized coefficient (the intercept for GLMs)
    l1[4] = 1e6           # everything penalized stays at zero: the gamma_max test
    l1[4, 0] = 0.0
    opts = SolverOptions(tol=1e-10)
    views = [datafit.reweighted(w) for w in W]
    batch = fit_replicates(ViewReplicates(views), l1, np.zeros(P), options=opts)
    for r, view in enumerate(views):
        alone = fit_ccd(view, l1[r], np.zeros(P), options=opts)
        assert np.allclose(batch.beta[r], alone.beta, rtol=1e-10, atol=1e-10)
        assert batch.n_iter[r] == alone.n_iter and batch.converged[r] == alone.converged
        assert batch.objective[r] == pytest.approx(alone.objective, rel=1e-12)
        assert np.isclose(batch.gamma_max[r], alone.gamma_max, rtol=1e-10)
    assert np.all(batch.beta[4, 1:] == 0) and batch.beta[4, 0] != 0
    assert "gamma_max" in batch.messages[4]


def test_fixed_coordinates_and_warm_starts_follow_the_single_fit(rng):
    """Profile-likelihood points: a coordinate held at a value per replicate."""
    data = riskset.simulate(n=1000, p=10, model="cox", seed=5)
    datafit = riskset.models.get_model("cox").datafit(data)
    P = datafit.n_coef
    beta0 = np.zeros((3, P))
    beta0[:, 2] = [-0.5, 0.0, 0.5]
    free = np.ones((3, P), bool)
    free[:, 2] = False
    batch = fit_replicates(ViewReplicates([datafit] * 3), np.zeros(P), np.zeros(P), beta0=beta0, free=free)
    for r in range(3):
        alone = fit_ccd(datafit, np.zeros(P), np.zeros(P), beta0=beta0[r], fixed=~free[r])
        assert batch.beta[r, 2] == beta0[r, 2]
        assert np.allclose(batch.beta[r], alone.beta, rtol=1e-10, atol=1e-10)


def test_a_replicate_that_does_not_converge_says_so():
    data = riskset.simulate(n=500, p=5, model="logistic", seed=1)
    datafit = riskset.models.get_model("logistic").datafit(data)
    res = fit_replicates(ViewReplicates([datafit, datafit]), np.zeros(datafit.n_coef), np.zeros(datafit.n_coef),
                         options=SolverOptions(max_iter=1, polish_max_active=0))  # a polish would settle it
    assert not res.converged.any()
    assert all("max_iter" in m for m in res.messages)


@pytest.mark.parametrize("model", ["cox", "logistic"])
def test_warm_started_replicates_equal_separate_fits(rng, model):
    """Folds and draws started from the full-data fit: Cox's open with a polish
    (solver.entrants.opening_entrants), logistic's with a sweep; each replicate as its separate fit."""
    data = riskset.simulate(n=1500, p=25, model=model, seed=3)
    datafit = riskset.models.get_model(model).datafit(data)
    P = datafit.n_coef
    l1 = np.full(P, 4.0)
    l1[0] = 0.0
    full = fit_ccd(datafit, l1, np.zeros(P))
    views = [datafit.reweighted(w) for w in weightings(data.n_rows, rng)[:4]]
    batch = fit_replicates(ViewReplicates(views), l1, np.zeros(P), beta0=full.beta)
    for r, view in enumerate(views):
        alone = fit_ccd(view, l1, np.zeros(P), beta0=full.beta)
        assert np.allclose(batch.beta[r], alone.beta, rtol=1e-10, atol=1e-10)
        assert batch.n_iter[r] == alone.n_iter and batch.converged[r] and alone.converged
        assert batch.objective[r] == pytest.approx(alone.objective, rel=1e-12)


def test_an_opening_that_reads_its_likely_entrants_alone_ends_where_the_exact_one_does(rng, monkeypatch):
    """Cox folds started from the full-data fit: an opening that reads the slopes of the likely
    entrants alone (solver.entrants.likely_entrants), or of none (every entrant missed), ends where
    the opening that reads the gradient does; the exact gradient after its polish finds the rest."""
    from riskset.solver import ccd, replicates
    from riskset.solver.entrants import likely_entrants

    data = riskset.simulate(n=3000, p=60, model="cox", seed=8)
    datafit = riskset.models.get_model("cox").datafit(data)
    P = datafit.n_coef
    l1 = np.full(P, 12.0)
    pen = ccd.Penalty(l1, np.zeros(P), np.zeros(P))
    full = fit_ccd(datafit, l1, np.zeros(P), options=SolverOptions(tol=1e-10))
    likely = likely_entrants(full.beta, datafit.gradient(full.state), pen)
    assert 0 < likely.sum() < P / 2
    W = np.ones((4, data.n_rows))
    for r in range(4):
        W[r, rng.random(data.n_rows) < 0.25] = 0.0
    views = [datafit.reweighted(w) for w in W]
    opened, read = [], []
    monkeypatch.setattr(replicates, "opening_entrants",
                        lambda *a: opened.append(ccd.opening_entrants(*a)) or opened[-1])
    slopes = ViewReplicates.slopes
    monkeypatch.setattr(ViewReplicates, "slopes",
                        lambda self, s, r, cols: read.append(cols) or slopes(self, s, r, cols))

    def fit(hint):
        opened.clear(), read.clear()
        return fit_replicates(ViewReplicates(views), l1, np.zeros(P), beta0=full.beta, likely=hint,
                              options=SolverOptions(tol=1e-10))

    exact = fit(None)
    assert not read and sum(e.size for e in opened) > 0  # some fold has entrants at its warm start
    for hint in (likely, np.zeros(P, bool)):
        res = fit(hint)
        assert len(read) == (4 if hint.any() else 0)
        assert all(np.array_equal(cols, np.flatnonzero(hint)) for cols in read)
        assert res.converged.all() and np.all(res.kkt <= SolverOptions().kkt_tol)
        np.testing.assert_allclose(res.beta, exact.beta, atol=1e-7)
