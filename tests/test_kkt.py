"""Honest convergence: a fit that says "converged" meets the optimality (KKT) conditions to
``kkt_tol`` (relative to its L1 rate), and the violation it reports is the true one.

The violation is recomputed here from the datafit's gradient, independently of the solver's
bookkeeping, for every family.
"""
import dataclasses

import numpy as np
import pytest

import riskset
from riskset.core.interface import Reweightable
from riskset.selection.folds import resampling_units
from riskset.solver.ccd import SolverOptions, fit_ccd
from test_data_weights import FAMILIES


def _subgradient_distance(beta, grad, gamma, penalized):
    """max_j of the distance from 0 to the subdifferential of l(beta) - gamma sum_pen |beta_j|."""
    out = []
    for b, g, pen in zip(beta, grad, penalized):
        if not pen:
            out.append(abs(g))
        elif b == 0.0:
            out.append(max(abs(g) - gamma, 0.0))
        else:
            out.append(abs(g - gamma * np.sign(b)))
    return max(out)


def _setup(family):
    data, model, _ = FAMILIES[family]()
    datafit = model.datafit(data)
    names = model.coef_names(data)
    penalized = np.array([n not in model.unpenalized_names() for n in names])
    at_max = fit_ccd(datafit, np.where(penalized, 1e12, 0.0), np.zeros(datafit.n_coef))
    return datafit, penalized, 0.2 * at_max.gamma_max


def _assert_at_the_optimum(datafit, fit, reference, gamma, penalized):
    """``fit`` and ``reference`` converged; ``fit`` at the KKT tolerance 1e-6, reporting the true
    violation (recomputed from the datafit's gradient), at ``reference``'s objective."""
    assert fit.converged and reference.converged, (fit.message, reference.message)
    grad = datafit.gradient(datafit.new_state(fit.beta))
    true = _subgradient_distance(fit.beta, grad, gamma, penalized) / gamma
    assert true <= 1e-6 and fit.kkt == pytest.approx(true, rel=1e-6, abs=1e-12)
    assert fit.objective == pytest.approx(reference.objective, rel=1e-10, abs=1e-9)


def _record_openings(monkeypatch, sweeps):
    """Each call of ``ccd.Solver.polish``, as (its opening or None, how many sweeps ``sweeps`` held then)."""
    from riskset.solver import ccd

    calls, polish = [], ccd.Solver.polish
    monkeypatch.setattr(ccd.Solver, "polish", lambda self, opening=None: calls.append((opening, len(sweeps)))
                        or polish(self, opening))
    return calls


@pytest.mark.parametrize("family", list(FAMILIES))
def test_a_loose_objective_tolerance_still_ends_at_the_kkt_tolerance(family):
    """tol = 1e-3 alone would stop far from the optimum; the KKT check keeps the fit going."""
    datafit, penalized, gamma = _setup(family)
    l1 = np.where(penalized, gamma, 0.0)
    res = fit_ccd(datafit, l1, np.zeros_like(l1), options=SolverOptions(tol=1e-3, kkt_tol=1e-6, polish_max_active=0))
    assert res.converged, res.message
    grad = datafit.gradient(datafit.new_state(res.beta))
    true = _subgradient_distance(res.beta, grad, gamma, penalized) / gamma
    assert true <= 1e-6
    assert res.kkt == pytest.approx(true, rel=1e-6, abs=1e-12)


@pytest.mark.parametrize("family", list(FAMILIES))
def test_the_reported_violation_of_an_unfinished_fit_is_the_true_one(family):
    datafit, penalized, gamma = _setup(family)
    l1 = np.where(penalized, gamma, 0.0)
    res = fit_ccd(datafit, l1, np.zeros_like(l1), options=SolverOptions(max_iter=1, polish_max_active=0))
    grad = datafit.gradient(datafit.new_state(res.beta))
    true = _subgradient_distance(res.beta, grad, gamma, penalized) / gamma
    assert res.kkt == pytest.approx(true, rel=1e-9, abs=1e-15)
    if true > 1e-4:
        assert not res.converged


def test_fit_reports_its_kkt_violation_in_the_result_and_json():
    data = riskset.simulate(n=2000, p=20, model="cox", seed=4)
    fit = riskset.fit(data, "cox", riskset.Laplace(variance=1.0))
    assert fit.converged and 0 <= fit.kkt <= 1e-4
    again = riskset.FitResult.from_json(fit.to_json())
    assert again.kkt == fit.kkt
    assert "KKT violation" in fit.summary()


def test_unpenalized_fit_violation_is_a_score_statistic():
    data = riskset.simulate(n=500, p=4, model="logistic", seed=2)
    fit = riskset.fit(data, "logistic")
    assert fit.converged and fit.kkt <= 1e-4


@pytest.mark.parametrize("lasso", [False, True])
def test_a_diverging_coefficient_never_meets_the_kkt_tolerance_on_its_vanishing_slope(lasso):
    """An intercept with no event diverges to -inf: its slope vanishes, and so does its
    information. Measured in standard errors at the point checked (not at the start, where it
    read 2e-5 at -14 and passed kkt_tol = 1e-4) the violation stays large until the intercept
    is far out, where the existence test reports the divergence."""
    from riskset.core.penalty import Penalty
    from riskset.solver.kkt import kkt_violation

    data = dataclasses.replace(riskset.simulate(n=200, p=3, model="logistic", seed=2), y=np.zeros(200))
    datafit = riskset.models.get_model("logistic").datafit(data)
    P = datafit.n_coef
    pen = Penalty(np.r_[0.0, np.ones(P - 1)] if lasso else np.zeros(P), np.zeros(P))
    free = np.ones(P, bool)
    violation = {}
    for intercept in (-6, -14, -20):
        beta = np.r_[float(intercept), np.zeros(P - 1)]
        violation[intercept] = kkt_violation(datafit, datafit.new_state(beta), beta, pen, free)
    assert violation[-6] > violation[-14] > violation[-20] > 1e-4
    fit = riskset.fit(data, "logistic", riskset.Laplace(variance=1.0) if lasso else None)
    assert fit.status == "estimate_does_not_exist" and "'intercept' -> -inf" in fit.message


@pytest.mark.parametrize("model", ["logistic", "poisson", "cox"])
def test_a_warm_start_off_center_on_a_column_without_information_returns_to_the_center(model):
    """A training fold warm-started from the full-data fit can hold a coefficient whose column
    has no row of positive weight: no curvature, gradient 0, so the L1 optimum is its center.
    The step must take it there (it stayed put, and the fit ran to max_iter with KKT 1)."""
    data = riskset.simulate(n=400, p=5, model=model, seed=3)
    weights = np.where(data.X[:, 3].toarray().ravel() != 0, 0.0, 1.0)
    fit = riskset.fit(dataclasses.replace(data, weights=weights), model, riskset.Laplace(variance=1.0),
                      warm_start={"x3": 0.7})
    assert fit.converged and fit.kkt <= 1e-4, fit.message
    assert fit.coef["x3"] == 0.0


@pytest.mark.parametrize("family", list(FAMILIES))
def test_polish_rounds_end_at_the_optimum_with_fewer_sweeps(family, monkeypatch):
    """Conjugate-gradient polishes (forced for every active set), the active set re-decided by
    one gradient between them: the fit ends at the KKT tolerance it reports, at the optimum
    that coordinate descent alone reaches, in no more full sweeps than without the rounds."""
    from riskset.solver import ccd, newton

    monkeypatch.setattr(newton, "DENSE_NEWTON_MAX", 1)
    datafit, penalized, gamma = _setup(family)
    l1 = np.where(penalized, gamma, 0.0)
    rounds = fit_ccd(datafit, l1, np.zeros_like(l1), options=SolverOptions(kkt_tol=1e-6))
    monkeypatch.setattr(ccd, "POLISH_ROUNDS", 1)  # one polish per cycle: a full sweep after each
    single = fit_ccd(datafit, l1, np.zeros_like(l1), options=SolverOptions(kkt_tol=1e-6))
    plain = fit_ccd(datafit, l1, np.zeros_like(l1), options=SolverOptions(tol=1e-14, kkt_tol=1e-8,
                                                                          polish_max_active=0))
    _assert_at_the_optimum(datafit, rounds, plain, gamma, penalized)
    assert rounds.n_iter <= single.n_iter


@pytest.mark.parametrize("family", list(FAMILIES))
def test_a_warm_start_opened_by_a_polish_ends_at_the_optimum(family, monkeypatch):
    """A fold of the data warm-started from the full-data fit, opened with a gradient and Newton
    polishes before any full sweep (forced here for every family, whatever its sweep costs):
    it ends at the KKT tolerance it reports, at the optimum a cold fit reaches."""
    from riskset.solver import ccd, newton

    monkeypatch.setattr(ccd, "OPENING_SWEEP_PASSES", 0.0)
    monkeypatch.setattr(newton, "DENSE_NEWTON_MAX", 1)  # conjugate-gradient polishes, as for large active sets
    datafit, penalized, gamma = _setup(family)
    l1 = np.where(penalized, gamma, 0.0)
    full = fit_ccd(datafit, l1, np.zeros_like(l1))
    data, model, _ = FAMILIES[family]()
    units = resampling_units(data, model)  # rows, subjects or strata
    held_out = np.random.default_rng(5).random(units.max() + 1) < 0.15
    weights = np.where(held_out[units], 0.0, 1.0 if data.weights is None else data.weights)
    if isinstance(datafit, Reweightable):
        fold = datafit.reweighted(weights)
    else:  # pooled logistic: prepared again
        fold = model.datafit(dataclasses.replace(data, weights=weights))
    opened = fit_ccd(fold, l1, np.zeros_like(l1), beta0=full.beta, options=SolverOptions(kkt_tol=1e-6))
    cold = fit_ccd(fold, l1, np.zeros_like(l1), options=SolverOptions(tol=1e-14, kkt_tol=1e-8, polish_max_active=0))
    _assert_at_the_optimum(fold, opened, cold, gamma, penalized)


@pytest.mark.parametrize("family", list(FAMILIES))
def test_a_cold_start_opened_by_a_polish_ends_at_the_optimum(family, monkeypatch):
    """A fit from the centers (forced here for every family, whatever its sweep costs) lets the
    entrants of its gradient there join its first Newton step, with no sweep before it: it ends
    at the KKT tolerance it reports, at the optimum coordinate descent alone reaches."""
    from riskset.solver import ccd

    monkeypatch.setattr(ccd, "OPENING_SWEEP_PASSES", 0.0)
    datafit, penalized, gamma = _setup(family)
    l1 = np.where(penalized, gamma, 0.0)
    sweeps = []
    openings = _record_openings(monkeypatch, sweeps)
    original = type(datafit).sweep
    monkeypatch.setattr(type(datafit), "sweep", lambda self, state, coords, *a: sweeps.append(len(coords))
                        or original(self, state, coords, *a))
    opened = fit_ccd(datafit, l1, np.zeros_like(l1), options=SolverOptions(kkt_tol=1e-6))
    opening, sweeps_before = next((o, k) for o, k in openings if o is not None)
    assert datafit.n_coef not in sweeps[:sweeps_before]  # no full sweep (the restricted start sweeps the unpenalized)
    assert opening.exact and opening.entrants.size > 0
    assert np.all(penalized[opening.entrants])
    plain = fit_ccd(datafit, l1, np.zeros_like(l1), options=SolverOptions(tol=1e-14, kkt_tol=1e-8,
                                                                          polish_max_active=0))
    _assert_at_the_optimum(datafit, opened, plain, gamma, penalized)


def test_a_cold_start_whose_entrants_exceed_the_polish_opens_with_a_sweep(monkeypatch):
    """Entrants and unpenalized coefficients beyond ``polish_max_active``: no opening, the first
    sweep lets them in (and the fit still ends at the optimum)."""
    from riskset.solver import ccd

    data = riskset.simulate(n=1500, p=30, model="cox", seed=2)
    datafit = riskset.models.get_model("cox").datafit(data)
    l1 = np.full(datafit.n_coef, 2.0)
    enter = ccd.entrants(np.zeros_like(l1), datafit.gradient(datafit.new_state(np.zeros_like(l1))),
                         ccd.Penalty(l1, np.zeros_like(l1)), np.ones_like(l1, bool))
    assert enter.size >= 4
    openings = _record_openings(monkeypatch, [])
    few = fit_ccd(datafit, l1, np.zeros_like(l1), options=SolverOptions(polish_max_active=enter.size - 1))
    assert all(o is None for o, _ in openings)
    many = fit_ccd(datafit, l1, np.zeros_like(l1), options=SolverOptions(polish_max_active=enter.size))
    last, _ = openings[-1]
    assert last is not None and last.entrants.size == enter.size
    assert few.converged and many.converged and few.kkt <= 1e-4 and many.kkt <= 1e-4
    assert few.objective == pytest.approx(many.objective, rel=1e-9)


def test_only_families_with_costly_sweeps_open_warm_starts_with_a_polish(monkeypatch):
    """Cox (a sweep refreshes risk-set sums: ~30 gradients) opens a fold's warm start with a
    polish and needs no full sweep; logistic (a sweep ~5 gradients) sweeps first."""
    from riskset.solver import ccd

    sweeps = []
    for model in ("cox", "logistic"):
        data = riskset.simulate(n=3000, p=40, model=model, seed=8)
        datafit = riskset.models.get_model(model).datafit(data)
        names = riskset.models.get_model(model).coef_names(data)
        l1 = np.where([n != "intercept" for n in names], 8.0, 0.0)
        full = fit_ccd(datafit, l1, np.zeros_like(l1))
        fold = datafit.reweighted(np.where(np.arange(data.n_rows) % 10 == 3, 0.0, 1.0))
        original = type(fold).sweep
        count = []
        monkeypatch.setattr(type(fold), "sweep", lambda self, state, coords, *a: count.append(len(coords))
                            or original(self, state, coords, *a))
        fit = fit_ccd(fold, l1, np.zeros_like(l1), beta0=full.beta)
        assert fit.converged and fit.kkt <= 1e-4, fit.message
        sweeps.append(sum(c == datafit.n_coef for c in count))  # full sweeps
    assert ccd.OPENING_SWEEP_PASSES <= 30 and sweeps[0] == 0
    assert sweeps[1] >= 1


@pytest.mark.parametrize("dense_max", [100, 1], ids=["formed-block", "conjugate-gradients"])
def test_a_warm_starts_entrants_join_its_first_newton_step(monkeypatch, dense_max):
    """A Cox fold warm-started from the full-data fit: the coordinates its opening gradient lets
    into the active set join the first Newton step, on the side their slopes point to, with no
    coordinate sweep before it (at N = 1M a Cox sweep of a fold's 30-50 entrants cost 3-5
    gradients); the fit ends at the optimum a cold fit reaches, at the KKT tolerance."""
    from riskset.core.penalty import Penalty
    from riskset.solver import ccd, newton

    monkeypatch.setattr(newton, "DENSE_NEWTON_MAX", dense_max)
    data = riskset.simulate(n=3000, p=40, model="cox", seed=8)
    datafit = riskset.models.get_model("cox").datafit(data)
    l1 = np.full(datafit.n_coef, 8.0)
    full = fit_ccd(datafit, l1, np.zeros_like(l1))
    fold = datafit.reweighted(np.where(np.arange(data.n_rows) % 10 == 5, 0.0, 1.0))
    pen, free = Penalty(l1, np.zeros_like(l1)), np.ones(datafit.n_coef, bool)
    enter = ccd.opening_entrants(fold, full.beta, fold.gradient(fold.new_state(full.beta)), pen, free, 5000)
    assert enter is not None and enter.size >= 2

    events = []
    step, sweep = newton.newton_step, type(fold).sweep
    monkeypatch.setattr(newton, "newton_step", lambda df, st, b, active, *a: events.append(("newton", active.copy()))
                        or step(df, st, b, active, *a))
    monkeypatch.setattr(type(fold), "sweep", lambda self, st, coords, *a: events.append(("sweep", coords.copy()))
                        or sweep(self, st, coords, *a))
    opened = fit_ccd(fold, l1, np.zeros_like(l1), beta0=full.beta, options=SolverOptions(kkt_tol=1e-6))
    cold = fit_ccd(fold, l1, np.zeros_like(l1), options=SolverOptions(tol=1e-14, kkt_tol=1e-8, polish_max_active=0))
    kind, first = events[0]
    assert kind == "newton" and set(enter) <= set(first)
    assert opened.converged and opened.kkt <= 1e-6, opened.message
    assert opened.objective == pytest.approx(cold.objective, rel=1e-10, abs=1e-9)



def _record_rounds(monkeypatch, datafit):
    """Events of the fits on ``datafit``: ("newton", entrants joining) per call of ``newton_steps``
    in a polish, ("sweep", coordinates) per sweep, ("violators",) per sweep over the violators'
    choice, ("kkt", violation) per KKT check (a list)."""
    from riskset.solver import ccd

    events = []
    steps, sweep, violators, kkt_violation = ccd.newton_steps, type(datafit).sweep, ccd.violators, ccd.kkt_violation
    monkeypatch.setattr(ccd, "newton_steps", lambda *a, joining=None, **k: events.append(
        ("newton", 0 if joining is None else joining[0].size)) or steps(*a, joining=joining, **k))
    monkeypatch.setattr(type(datafit), "sweep", lambda self, state, coords, *a: events.append(("sweep", len(coords)))
                        or sweep(self, state, coords, *a))
    monkeypatch.setattr(ccd, "violators", lambda *a: events.append(("violators",)) or violators(*a))
    monkeypatch.setattr(ccd, "kkt_violation", lambda *a: (lambda v: events.append(("kkt", v)) or v)(kkt_violation(*a)))
    return events


def _weak_cox(seed, n, p, variance):
    """A Cox datafit of ``riskset.simulate`` data and the L1 rate of a Laplace prior of ``variance``
    on every coefficient (a weak prior: most of them non-zero)."""
    data = riskset.simulate(n=n, p=p, model="cox", seed=seed, density=0.05)
    datafit = riskset.models.get_model("cox").datafit(data)
    return datafit, np.full(datafit.n_coef, np.sqrt(2 / variance))


def test_a_costly_familys_entrants_join_its_next_newton_round(monkeypatch):
    """Cox under a weak prior (185 of 200 non-zero): between polish rounds the entrants whose sweep
    would cost a gradient or more (here 67, then 8: at least P / 30, a Cox sweep costing ~30
    gradients) join the next Newton round, on the side their slopes point to; only fewer are
    swept. No full sweep; the fit ends at the optimum coordinate descent alone reaches. With the
    old rule (every entrant swept) the same optimum, after sweeps over the many."""
    from riskset.solver import ccd

    datafit, l1 = _weak_cox(1, 3000, 200, 1.0)
    least = datafit.n_coef * ccd.JOINING_GRADIENTS / datafit.sweep_passes
    events = _record_rounds(monkeypatch, datafit)
    fit = fit_ccd(datafit, l1, np.zeros_like(l1), options=SolverOptions(kkt_tol=1e-6))
    joined = [k for e, *k in events if e == "newton" for k in k if k]
    swept = [k for e, *k in events if e == "sweep" for k in k]
    assert len(joined) >= 3 and min(joined[1:]) >= least  # the opening's entrants, then the polishes'
    assert all(k < least for k in swept) and datafit.n_coef not in swept
    plain = fit_ccd(datafit, l1, np.zeros_like(l1), options=SolverOptions(tol=1e-14, kkt_tol=1e-8,
                                                                          polish_max_active=0))
    _assert_at_the_optimum(datafit, fit, plain, l1[0], np.ones(datafit.n_coef, bool))

    monkeypatch.setattr(ccd, "JOINING_GRADIENTS", np.inf)
    events.clear()
    old = fit_ccd(datafit, l1, np.zeros_like(l1), options=SolverOptions(kkt_tol=1e-6))
    assert max(k for e, *k in events if e == "sweep" for k in k) >= least
    _assert_at_the_optimum(datafit, old, plain, l1[0], np.ones(datafit.n_coef, bool))


def test_a_stalled_polish_of_a_costly_family_takes_another_newton_round(monkeypatch):
    """Cox under a weak prior, conjugate-gradient polishes forced: a round that no longer gains
    ends with the KKT check failing (1.4e-4) and nothing to enter. Where sweeps are costly the
    next thing is another Newton round, which meets the tolerance (1.6e-8) with no sweep at all
    (a sweep over the violators took 1.4 s of a 1M-row fit that its polishes then did in 0.5);
    the fit ends at the optimum."""
    from riskset.solver import newton

    monkeypatch.setattr(newton, "DENSE_NEWTON_MAX", 1)
    datafit, l1 = _weak_cox(5, 5000, 300, 0.5)
    events = _record_rounds(monkeypatch, datafit)
    fit = fit_ccd(datafit, l1, np.zeros_like(l1), options=SolverOptions(tol=1e-8, kkt_tol=1e-6))
    checks = [v for e, *v in events if e == "kkt" for v in v]
    assert len(checks) == 2 and checks[0] > 1e-6 >= checks[1]
    after = events[[e[0] for e in events].index("kkt"):]
    assert after[1] == ("newton", 0) and not any(e[0] in ("sweep", "violators") for e in events)
    plain = fit_ccd(datafit, l1, np.zeros_like(l1), options=SolverOptions(tol=1e-14, kkt_tol=1e-8,
                                                                          polish_max_active=0))
    _assert_at_the_optimum(datafit, fit, plain, l1[0], np.ones(datafit.n_coef, bool))

def _screen_every_sweep(monkeypatch, datafit):
    """Screen resting coordinates in every sweep that meets one (the screen otherwise starts at
    2^18 rows); returns the sizes of the screens ``datafit``'s family makes (a list)."""
    from riskset.core import interface

    monkeypatch.setattr(interface, "SCREENED_SWEEP_ROWS", 0)
    monkeypatch.setattr(interface, "SCREENED_SWEEP_MIN", 1)
    screens = []
    original = type(datafit).slopes
    monkeypatch.setattr(type(datafit), "slopes", lambda self, state, coefs: screens.append(len(coefs))
                        or original(self, state, coefs))
    return screens


@pytest.mark.parametrize("family", list(FAMILIES))
def test_sweeps_that_screen_their_resting_coordinates_end_at_the_optimum(family, monkeypatch):
    """Every sweep that moves some coordinates screens its resting ones by their slopes (as at
    scale): a fit started with one penalized coefficient off zero (so that its first sweep
    screens the others), by sweeps alone and with Newton polishes, ends at the KKT tolerance it
    reports, at the optimum of sweeps that step every coordinate in turn."""
    datafit, penalized, gamma = _setup(family)
    l1 = np.where(penalized, gamma, 0.0)
    plain = fit_ccd(datafit, l1, np.zeros_like(l1), options=SolverOptions(tol=1e-14, kkt_tol=1e-8,
                                                                          polish_max_active=0))
    start = np.zeros(datafit.n_coef)
    start[np.argmax(np.where(penalized, np.abs(plain.beta), -1.0))] = 0.1
    screens = _screen_every_sweep(monkeypatch, datafit)
    for options in (SolverOptions(kkt_tol=1e-6, polish_max_active=0), SolverOptions(kkt_tol=1e-6)):
        screened = fit_ccd(datafit, l1, np.zeros_like(l1), beta0=start, options=options)
        assert screened.converged, screened.message
        grad = datafit.gradient(datafit.new_state(screened.beta))
        true = _subgradient_distance(screened.beta, grad, gamma, penalized) / gamma
        assert true <= 1e-6 and screened.kkt == pytest.approx(true, rel=1e-6, abs=1e-12)
        assert screened.objective == pytest.approx(plain.objective, rel=1e-10, abs=1e-9)
    assert screens, "no sweep screened its resting coordinates"


@pytest.mark.parametrize("model", ["logistic", "cox"])
def test_a_screened_sweep_reads_the_resting_slopes_once_and_steps_only_those_beyond_their_rate(model,
                                                                                                 monkeypatch):
    """A sweep over 40 coordinates, 5 of them free of the L1 term: after those moved, the 35
    resting ones (penalized, at zero) are screened by one read of their slopes; those within
    their rate stay at zero, and the first beyond it moves. Below the row threshold, and in a
    sweep of resting coordinates alone (a polish's entrants), no slope is read."""
    from riskset.core.penalty import Penalty

    data = riskset.simulate(n=2000, p=40, model=model, seed=3)
    datafit = riskset.models.get_model(model).datafit(data)
    coords = np.arange(datafit.n_coef)
    free_of_l1 = coords[-5:] if model == "cox" else np.r_[0, coords[-5:]]  # the intercept too
    resting = np.setdiff1d(coords, free_of_l1)
    start = np.zeros(datafit.n_coef)
    start[free_of_l1] = 0.1

    def sweep(rate, over=coords):
        beta = start.copy()
        state = datafit.new_state(beta)
        pen = Penalty(np.where(np.isin(coords, free_of_l1), 0.0, rate), np.zeros_like(beta))
        datafit.sweep(state, over, beta, pen.table, np.ones_like(beta))
        return beta, state

    screens = _screen_every_sweep(monkeypatch, datafit)
    from riskset.core import interface

    monkeypatch.setattr(interface, "SCREENED_SWEEP_ROWS", datafit.n_rows + 1)
    sweep(1.0)
    assert screens == []  # below the row threshold
    monkeypatch.setattr(interface, "SCREENED_SWEEP_ROWS", 0)
    _, after = sweep(1.0, over=free_of_l1)  # what the screen sees: the free coordinates moved
    assert screens == []  # nothing resting in that sweep
    slope = datafit.gradient(after)[resting]
    steepest = np.sort(np.abs(slope))
    rate = 0.5 * (steepest[-3] + steepest[-4])  # three resting slopes beat it
    screens.clear()  # (a GLM's gradient reads its slopes too)
    beta, _ = sweep(rate)
    assert screens == [resting.size]
    np.testing.assert_array_equal(beta[resting[np.abs(slope) < rate]], 0.0)
    assert beta[resting[np.abs(slope) > rate][0]] != 0.0  # the first entrant sees the screen's state
    screens.clear()
    sweep(rate, over=resting)
    assert screens == []
