"""The CCD solver's Newton polish: dense and matrix-free (conjugate-gradient) steps."""
import dataclasses
import warnings

import numpy as np
import pytest

import riskset
from riskset.models import get_model
from riskset.solver import ccd
from riskset.solver import newton as newton_polish
from riskset.core.penalty import Penalty
from riskset.solver.ccd import SolverOptions, fit_ccd
from riskset.solver.newton import newton_steps


def lasso_problem(model, seed=5):
    d = riskset.simulate(n=600, p=40, density=0.3, model=model, seed=seed)
    df = get_model(model).datafit(d)
    gamma = 0.08 * fit_ccd(df, np.full(df.n_coef, 1e9), np.zeros(df.n_coef)).gamma_max
    l1 = np.full(df.n_coef, gamma)
    if model == "logistic":
        l1[0] = 0.0  # the intercept
    return df, l1, np.full(df.n_coef, 0.01)


@pytest.mark.parametrize("model", ["cox", "logistic"])
def test_conjugate_gradient_polish_reaches_the_ccd_optimum(model, monkeypatch):
    df, l1, l2 = lasso_problem(model)
    exact = fit_ccd(df, l1, l2, options=SolverOptions(tol=1e-14, polish_max_active=0, max_iter=5000))
    plain = fit_ccd(df, l1, l2, options=SolverOptions(tol=1e-10, polish_max_active=0))
    monkeypatch.setattr(newton_polish, "DENSE_NEWTON_MAX", 1)  # every polish takes CG steps
    calls = []
    original = newton_polish.newton_step
    monkeypatch.setattr(newton_polish, "newton_step", lambda *a: calls.append(a[3].size) or original(*a))
    newton = fit_ccd(df, l1, l2, options=SolverOptions(tol=1e-10))
    assert newton.converged and max(calls) > 1
    assert newton.n_iter < plain.n_iter
    assert newton.objective >= exact.objective - 1e-9 * abs(exact.objective)
    assert np.allclose(newton.beta, exact.beta, atol=1e-5)
    assert np.array_equal(newton.beta != 0, exact.beta != 0)


@pytest.mark.parametrize("dense_max", [1, 100])
def test_polish_never_worsens_and_stops_crossing_coordinates_at_zero(dense_max, monkeypatch, rng):
    monkeypatch.setattr(newton_polish, "DENSE_NEWTON_MAX", dense_max)
    df, l1, l2 = lasso_problem("cox", seed=7)
    start = rng.normal(scale=0.3, size=df.n_coef)  # far from the optimum: Newton steps cross zero
    state = df.new_state(start)
    before = df.loglik(state) - Penalty(l1, l2).value(start)
    beta, state, objective, *_ = newton_steps(df, start.copy(), state, Penalty(l1, l2), np.ones(df.n_coef, bool), 5000)
    after = df.loglik(state) - Penalty(l1, l2).value(beta)
    assert after > before and objective == after  # the objective it returns is the state's
    assert np.all((np.sign(beta) == np.sign(start)) | (beta == 0))
    assert np.any((beta == 0) & (start != 0))


def test_conjugate_gradient_newton_steps_converge_quadratically(monkeypatch):
    """From a rough CCD point, a few matrix-free Newton steps zero the active-set gradient."""
    monkeypatch.setattr(newton_polish, "DENSE_NEWTON_MAX", 1)
    df, l1, l2 = lasso_problem("cox")
    rough = fit_ccd(df, l1, l2, options=SolverOptions(tol=1e-5, polish_max_active=0))
    steps = []
    original = newton_polish.newton_step
    monkeypatch.setattr(newton_polish, "newton_step", lambda *a: steps.append(1) or original(*a))
    beta, state, *_ = newton_steps(df, rough.beta.copy(), rough.state, Penalty(l1, l2), np.ones(df.n_coef, bool),
                               5000)
    active = np.flatnonzero(beta)
    kkt = df.gradient(state)[active] - l2[active] * beta[active] - l1[active] * np.sign(beta[active])
    assert np.array_equal(active, np.flatnonzero(rough.beta))
    assert len(steps) <= 6 and np.max(np.abs(kkt)) < 1e-8 * np.max(np.abs(df.gradient(state)))


@pytest.mark.parametrize("dense_max", [1, 100])
def test_a_polish_to_machine_precision_stops_after_a_step_that_promised_less_than_it(dense_max, monkeypatch):
    """Polishing to machine precision (tol = 0) takes no Newton step after one whose quadratic model
    promised at most 1e-15 of the objective: at that point a measured gain is rounding (here a
    log-likelihood that creeps up by 1e-13 per evaluation, as sums over 1M rows round), and the
    step after would only be paid for (at N = 1M a step is a Hessian block and a new state)."""
    monkeypatch.setattr(newton_polish, "DENSE_NEWTON_MAX", dense_max)
    df, l1, l2 = lasso_problem("cox")
    rough = fit_ccd(df, l1, l2, options=SolverOptions(tol=1e-5, polish_max_active=0))
    evaluations, loglik = [], df.loglik

    def creeping_loglik(st):
        evaluations.append(1)
        value = loglik(st)
        return value + 1e-13 * abs(value) * len(evaluations)

    monkeypatch.setattr(df, "loglik", creeping_loglik)
    promised, original = [], newton_polish.newton_step

    def recorded_newton_step(*args):
        found = original(*args)
        promised.append(found[1])
        return found

    monkeypatch.setattr(newton_polish, "newton_step", recorded_newton_step)
    beta, state, objective, *_ = newton_steps(df, rough.beta.copy(), rough.state, Penalty(l1, l2),
                                       np.ones(df.n_coef, bool), 5000)
    threshold = 1e-15 * (abs(objective) + 1)
    assert len(promised) >= 2 and promised[-1] <= threshold  # it went to machine precision ...
    assert all(p > threshold for p in promised[:-1])         # ... and stopped at the first tiny promise
    monkeypatch.undo()
    exact = fit_ccd(df, l1, l2, options=SolverOptions(tol=1e-13))
    reached = df.loglik(df.new_state(beta)) - Penalty(l1, l2).value(beta)
    assert reached >= exact.objective - 1e-12 * abs(exact.objective)


def test_newton_cg_steps_far_from_the_optimum_are_solved_loosely(monkeypatch):
    """The forcing term: after a step whose quadratic model was poor, the next conjugate-gradient
    solve stops at a looser residual (at most NEWTON_CG_RTOL_MAX); the fit ends at the same
    optimum, to its KKT tolerance, as with every step solved to NEWTON_CG_RTOL."""
    import dataclasses

    monkeypatch.setattr(newton_polish, "DENSE_NEWTON_MAX", 1)
    data = riskset.simulate(n=3000, p=30, model="poisson", seed=4)
    data = dataclasses.replace(data, strata=np.arange(3000) // 10)
    used, original = [], newton_polish.newton_step

    def recording(*args):
        used.append(args[5])
        return original(*args)

    monkeypatch.setattr(newton_polish, "newton_step", recording)
    loose = riskset.fit(data, "conditional_poisson", riskset.Normal(variance=1.0))
    assert max(used) > newton_polish.NEWTON_CG_RTOL and max(used) <= newton_polish.NEWTON_CG_RTOL_MAX
    monkeypatch.setattr(newton_polish, "NEWTON_CG_RTOL_MAX", newton_polish.NEWTON_CG_RTOL)
    tight = riskset.fit(data, "conditional_poisson", riskset.Normal(variance=1.0))
    assert loose.converged and tight.converged and loose.kkt <= 1e-4
    assert loose.objective == pytest.approx(tight.objective, rel=1e-10)


def test_a_costly_hessian_block_is_not_formed_and_the_fit_still_meets_its_kkt_tolerance(monkeypatch):
    """A Cox block costs nnz_A x |A| to form (at N = 1M, |A| = 94: 0.75 s a step); above
    DENSE_WORK_MAX the polish takes conjugate-gradient steps instead, and skips the
    machine-precision polish before the KKT check, which still decides convergence."""
    df, l1, l2 = lasso_problem("cox")
    cols = np.arange(10)
    assert df.hessian_work(cols) == df.products.nnz(cols) * 10
    assert get_model("logistic").datafit(riskset.simulate(n=50, p=3, model="logistic", seed=1)).hessian_work(cols) == 0
    formed = []
    original = df.hessian
    monkeypatch.setattr(df, "hessian", lambda *a: formed.append(1) or original(*a))
    dense = fit_ccd(df, l1, l2, options=SolverOptions(tol=1e-10))
    assert dense.converged and formed  # the default: this small block is formed
    formed.clear()
    monkeypatch.setattr(newton_polish, "DENSE_WORK_MAX", 0.0)
    costly = fit_ccd(df, l1, l2, options=SolverOptions(tol=1e-10))
    assert costly.converged and not formed
    assert costly.kkt <= SolverOptions().kkt_tol
    assert costly.objective >= dense.objective - 1e-9 * abs(dense.objective)
    assert np.allclose(costly.beta, dense.beta, atol=1e-5)


def test_a_polish_round_far_from_the_optimum_hands_its_forcing_term_to_the_next(monkeypatch):
    """Conditional Poisson (SCCS-like strata) from zero, conjugate-gradient polishes forced: a round
    that gained more than POLISH_FAR of the objective starts the next round's first solve at the
    forcing term its last step reached (looser than NEWTON_CG_RTOL: far from the optimum an exact
    solve of the Newton system is wasted), and the fit ends at the optimum of tight solves."""
    import dataclasses

    monkeypatch.setattr(newton_polish, "DENSE_NEWTON_MAX", 1)
    rng = np.random.default_rng(11)
    data = riskset.simulate(n=20000, p=100, model="poisson", seed=1)
    data = dataclasses.replace(data, strata=np.sort(rng.integers(0, 2000, 20000)))
    first_solves = []
    steps = ccd.newton_steps

    def recording(*args, **kwargs):
        first_solves.append(kwargs.get("rtol", newton_polish.NEWTON_CG_RTOL))
        return steps(*args, **kwargs)

    monkeypatch.setattr(ccd, "newton_steps", recording)
    loose = riskset.fit(data, "conditional_poisson", riskset.Laplace(variance=0.01), tol=1e-8)
    assert max(first_solves) > 10 * newton_polish.NEWTON_CG_RTOL
    monkeypatch.setattr(ccd, "POLISH_FAR", np.inf)
    first_solves.clear()
    tight = riskset.fit(data, "conditional_poisson", riskset.Laplace(variance=0.01), tol=1e-8)
    assert max(first_solves) == newton_polish.NEWTON_CG_RTOL
    assert loose.converged and tight.converged and loose.kkt <= 1e-4
    assert loose.objective == pytest.approx(tight.objective, rel=1e-10)


@pytest.mark.parametrize("dense_max", [1, 100])
def test_a_polish_that_settles_on_a_small_step_reports_the_gain_expected_next(dense_max, monkeypatch):
    """A Newton step that gained less than tol / 10 ends the polish; what it reports as settled is
    the gain the next step would make (``gain_ahead``: the square of the step's model error and of
    its residual times its promise), not the gain just made, which is the gap *before* the step. A
    polish that settles below tol x POLISH_SETTLED is then checked, not polished again (a Cox CV fold
    fit at N = 1M whose last step gained 2.5e-10 of the objective, with 5e-15 left, took a third
    Newton step: 8 Hessian-vector products and a new state)."""
    monkeypatch.setattr(newton_polish, "DENSE_NEWTON_MAX", dense_max)
    df, l1, l2 = lasso_problem("cox")
    rough = fit_ccd(df, l1, l2, options=SolverOptions(tol=1e-5, polish_max_active=0))
    steps, original = [], newton_polish.gain_ahead
    monkeypatch.setattr(newton_polish, "gain_ahead", lambda *a: steps.append(a) or original(*a))
    tol = 1e-4
    beta, state, objective, settled, _ = newton_steps(df, rough.beta.copy(), rough.state, Penalty(l1, l2),
                                                np.ones(df.n_coef, bool), 5000, tol)
    scale = abs(objective) + 1
    gain, predicted, rtol = steps[-1]
    assert min(gain, predicted) <= tol / 10 * scale  # the last step gained or promised less than tol / 10
    assert settled == pytest.approx(min(gain, original(gain, predicted, rtol)) / scale, rel=1e-12)
    assert settled < 1e-3 * gain / scale and settled < tol * ccd.POLISH_SETTLED


def test_the_centring_preconditioner_inverts_a_system_coupled_only_through_its_intercept(rng):
    """S = X' W X of an intercept (k) and covariates whose centred columns are W-orthogonal: every
    coupling goes through the intercept, S_jl = S_jk S_lk / S_kk off the diagonal. Centring on k
    removes it, so the preconditioner is S's exact inverse; without an intercept it is Jacobi's."""
    m, k = 9, 4
    coupling = rng.uniform(0.1, 2.0, m)
    coupling[k] = 10.0
    variances = rng.uniform(0.5, 2.0, m)
    S = np.outer(coupling, coupling) / coupling[k] + np.diag(variances)
    S[k, k] = coupling[k]
    assert np.all(np.linalg.eigvalsh(S) > 0)
    scale = np.diag(S).copy()
    x = rng.normal(size=m)
    assert np.allclose(newton_polish.preconditioner(scale, k, coupling.copy()).matvec(S @ x), x, rtol=1e-12, atol=1e-12)
    assert np.allclose(newton_polish.preconditioner(scale).matvec(S @ x), (S @ x) / scale)


def test_logistic_newton_steps_centred_on_the_intercept_take_fewer_products_to_the_same_optimum(monkeypatch):
    """Binary covariates beside an intercept: Jacobi-preconditioned conjugate gradients stall on
    the intercept's coupling to every column (7-10 products a step at N = 1M, P = 20k); centred,
    the system is nearly diagonal. Same optimum, converged, fewer Hessian-vector products."""
    monkeypatch.setattr(newton_polish, "DENSE_NEWTON_MAX", 1)  # every polish takes CG steps
    data = riskset.simulate(n=4000, p=60, density=0.2, model="logistic", seed=3)
    datafit = get_model("logistic").datafit(data)
    counted = []
    original = type(datafit).local_quadratic

    def counting(self, state, columns):
        quad = original(self, state, columns)
        inner = quad.hessian_times
        quad.hessian_times = lambda b: counted.append(1) or inner(b)
        return quad

    monkeypatch.setattr(type(datafit), "local_quadratic", counting)
    prior = riskset.Laplace(variance=1.0)
    centred = riskset.fit(data, "logistic", prior, tol=1e-10)
    n_centred = len(counted)
    jacobi = newton_polish.preconditioner
    monkeypatch.setattr(newton_polish, "preconditioner", lambda scale, intercept=None, coupling=None: jacobi(scale))
    counted.clear()
    plain = riskset.fit(data, "logistic", prior, tol=1e-10)
    assert centred.converged and plain.converged and centred.kkt <= 1e-4
    assert centred.objective == pytest.approx(plain.objective, rel=1e-12)
    assert 0 < n_centred < len(counted)


def claims_like_logistic(n=5000, p=200, seed=3):
    """Binary covariates with log-normal prevalences (0.01% to 50%) beside an intercept."""
    import scipy.sparse as sp

    rng = np.random.default_rng(seed)
    prevalence = np.exp(rng.normal(np.log(0.02), 1.5, p)).clip(1e-4, 0.5)
    X = sp.csc_matrix((rng.random((n, p)) < prevalence).astype(float))
    effect = np.where(rng.random(p) < 0.2, rng.normal(0, 0.5, p), 0)
    y = (rng.random(n) < 1 / (1 + np.exp(1 - X @ effect))).astype(float)
    return riskset.Dataset(X=X, covariate_names=[f"x{j}" for j in range(p)], row_ids=np.arange(n), y=y)


def claims_like_fold_fit(seed, rate, tol):
    """A CV fold fit of :func:`claims_like_logistic` (90% of its rows), its L1 rate ``rate`` x
    gamma_max, started from the full data's fit at ``tol``: (fold datafit, l1, l2, start)."""
    data = claims_like_logistic(seed=seed)
    logistic = get_model("logistic")
    full = logistic.datafit(data)
    l1 = np.r_[0.0, np.full(full.n_coef - 1, rate * fit_ccd(full, np.r_[0.0, np.full(full.n_coef - 1, 1e9)],
                                                              np.zeros(full.n_coef)).gamma_max)]
    l2 = np.zeros(full.n_coef)
    start = fit_ccd(full, l1, l2, options=SolverOptions(tol=tol)).beta
    fold = logistic.datafit(data.subset(np.random.default_rng(100 + seed).random(len(data.y)) > 0.1))
    return fold, l1, l2, start


@pytest.mark.parametrize("seed, rate, violators_swept, full_sweeps, old_full_sweeps",
                         [(8, 0.02, [1], 1, 2), (3, 0.05, [71, 27], 2, 2)])
def test_a_failed_kkt_check_after_polishes_that_no_longer_gain_sweeps_only_the_violators(
        seed, rate, violators_swept, full_sweeps, old_full_sweeps, monkeypatch):
    """A CV fold fit warm-started from the full data's fit, conjugate-gradient polishes forced: its
    polish rounds stall on steps that cross zero with the KKT check failing on active coordinates.
    Sweeps over those alone, each followed by the check, end the fit at the optimum without another
    full sweep (seed 8: one coordinate; logistic at N = 1M, P = 20k: an intercept alone, 10 ms
    against a 3.9 s sweep), while the violation falls at least VIOLATIONS_FALL-fold (seed 3: 71
    violators, then 27, after which it fell 3.5-fold: the full sweep follows, as it did at once
    before)."""
    monkeypatch.setattr(newton_polish, "DENSE_NEWTON_MAX", 1)
    options = SolverOptions(tol=1e-6)
    fold, l1, l2, start = claims_like_fold_fit(seed, rate, options.tol)
    swept, fixed, checked = [], [], []
    sweep, violators, kkt_violation = type(fold).sweep, ccd.violators, ccd.kkt_violation
    monkeypatch.setattr(type(fold), "sweep", lambda self, state, coords, *a: swept.append(len(coords))
                        or sweep(self, state, coords, *a))
    before = []  # the number of KKT checks made before each sweep over the violators
    monkeypatch.setattr(ccd, "violators",
                        lambda *a: before.append(len(checked)) or fixed.append(violators(*a)) or fixed[-1])
    monkeypatch.setattr(ccd, "kkt_violation", lambda *a: checked.append(kkt_violation(*a)) or checked[-1])
    fit = fit_ccd(fold, l1, l2, beta0=start, options=options)
    assert fit.converged and fit.kkt <= options.kkt_tol
    assert [f.size for f in fixed] == violators_swept
    at = swept.index(violators_swept[0])
    assert swept[at:at + len(violators_swept)] == violators_swept  # each one a sweep over the violators alone
    assert swept.count(fold.n_coef) == full_sweeps  # the opening's, and one after violations that did not fall
    if full_sweeps == 1:
        assert swept[-1] == violators_swept[-1]
    else:
        falls = np.array(checked[before[0] - 1:before[-1] + 1])  # the checks before, between and after them
        assert falls[1] * ccd.VIOLATIONS_FALL <= falls[0] and falls[2] * ccd.VIOLATIONS_FALL > falls[1]
    tight = fit_ccd(fold, l1, l2, beta0=start, options=SolverOptions(tol=1e-14, kkt_tol=1e-9))
    assert fit.objective == pytest.approx(tight.objective, rel=1e-9)

    monkeypatch.setattr(ccd, "violators", lambda *a: np.zeros(0, np.int64))  # the old rule: a full sweep
    swept.clear()
    old = fit_ccd(fold, l1, l2, beta0=start, options=options)
    assert old.converged and swept.count(fold.n_coef) == old_full_sweeps
    assert old.objective == pytest.approx(tight.objective, rel=1e-9)


def test_a_non_finite_objective_after_a_sweep_between_polishes_ends_the_fit(monkeypatch):
    """The sweeps between polishes (over the entrants, over the violators) are not cycles, but a
    non-finite objective after one ends the fit as after a cycle: not converged, saying where,
    and nothing swept or polished after it."""
    monkeypatch.setattr(newton_polish, "DENSE_NEWTON_MAX", 1)
    fold, l1, l2, start = claims_like_fold_fit(8, 0.02, 1e-6)
    swept, events = [], []
    sweep, loglik, violators = type(fold).sweep, type(fold).loglik, ccd.violators
    monkeypatch.setattr(type(fold), "sweep", lambda self, state, coords, *a: swept.append(len(coords))
                        or events.append("sweep") or sweep(self, state, coords, *a))
    monkeypatch.setattr(ccd, "violators", lambda *a: events.append("violators") or violators(*a))
    monkeypatch.setattr(type(fold), "loglik", lambda self, state: np.nan if events[-2:] == ["violators", "sweep"]
                        else loglik(self, state))
    fit = fit_ccd(fold, l1, l2, beta0=start, options=SolverOptions(tol=1e-6))
    assert not fit.converged and fit.status == "not_converged"
    assert "sweeping the coordinates violating the KKT conditions: the objective became nan" in fit.message
    assert events[-2:] == ["violators", "sweep"] and swept[-1] == 1


def test_newton_step_leaves_numerically_null_directions_alone():
    """Two identical columns make the Newton block singular to rounding: the step moves along
    the curvature it has and not along x1 - x2 (a plain solve moved them to +-1e12)."""
    from riskset.solver.newton import null_free_solve

    A = np.array([[2.0, 1.0, 1.0], [1.0, 1.0, 1.0], [1.0, 1.0, 1.0 + 1e-17]])
    step, dropped = null_free_solve(A, np.array([1.0, 0.5, 0.5]))
    assert dropped and np.all(np.abs(step) < 10) and step[1] == pytest.approx(step[2])
    regular, dropped = null_free_solve(np.diag([1e-200, 1.0, 4.0]), np.array([1e-200, 1.0, 2.0]))
    assert not dropped
    np.testing.assert_allclose(regular, [1.0, 1.0, 0.5])


def test_quasi_separation_hidden_by_rounding_is_no_converged_fit():
    """x2 - x1 separates the outcome (ties aside) and x3 duplicates x1: the fit must not say
    'converged' at coefficients of hundreds with standard errors larger still."""
    x1 = np.array([-1.76, 0, -0.067, 0, 0, 0, -0.64, -1.9, 1, 0.21, 0, 1, 1])
    x2 = np.array([0, 0, 0, 0, 1, 0, 1, 1, 0, 1, 0, 1, 1.0])
    y = np.array([1, 0, 1, 0, 1, 1, 1, 1, 0, 1, 1, 1, 0.0])
    data = riskset.from_arrays(np.c_[x1, x2, x1], y=y, weights=[2, 2, 1, 1, 1, 1, 1, 2, 1, 1, 1, 1, 2])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fit = riskset.fit(data, "logistic")
    big = fit.coef.abs() > 10
    assert not (fit.converged and big.any()), fit.coef


def test_large_active_sets_are_polished_by_default(monkeypatch):
    """A ridge fit moves every coefficient: the default polish takes Newton (conjugate-gradient)
    steps on all 6,000 of them (the bound of 5,000 it once had left such sets to coordinate
    descent, one full sweep per cycle) and ends at the plain coordinate-descent optimum."""
    d = riskset.simulate(n=800, p=6000, density=0.01, model="logistic", seed=3)
    df = get_model("logistic").datafit(d)
    l1, l2 = np.zeros(df.n_coef), np.full(df.n_coef, 2.0)
    plain = fit_ccd(df, l1, l2, options=SolverOptions(tol=1e-14, polish_max_active=0, max_iter=5000))
    calls = []
    original = newton_polish.newton_step
    monkeypatch.setattr(newton_polish, "newton_step", lambda *a: calls.append(a[3].size) or original(*a))
    newton = fit_ccd(df, l1, l2)
    assert SolverOptions().polish_max_active is None and max(calls) == df.n_coef > 5000
    assert newton.converged and newton.n_iter < plain.n_iter
    assert newton.objective >= plain.objective - 1e-10 * abs(plain.objective)


def test_newton_blocks_singular_by_count_are_left_to_coordinate_steps(monkeypatch):
    """A Cox model stratified by matched pairs with more L1 coordinates active than events has a
    singular Newton block: conjugate gradients would run to their cap for nothing, so no
    conjugate-gradient step is asked on such a set; the fit still converges (KKT)."""
    monkeypatch.setattr(newton_polish, "DENSE_NEWTON_MAX", 1)  # every polish would take CG steps
    n, p = 400, 300
    data = riskset.simulate(n=n, p=p, density=0.3, model="cox", seed=4)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # pairs without an event are dropped
        df = get_model("cox").datafit(dataclasses.replace(data, strata=np.repeat(np.arange(n // 2), 2)))
    sizes, refused = [], []
    newton, singular = newton_polish.newton_step, newton_polish.singular_by_rank
    monkeypatch.setattr(newton_polish, "newton_step", lambda *a: sizes.append(a[3].size) or newton(*a))
    monkeypatch.setattr(newton_polish, "singular_by_rank", lambda *a: refused.append(singular(*a)) or refused[-1])
    l1 = np.full(p, 0.02 * fit_ccd(df, np.full(p, 1e9), np.zeros(p)).gamma_max)
    res = fit_ccd(df, l1, np.zeros(p), options=SolverOptions(max_iter=5000))
    assert res.converged and any(refused)
    assert sizes and max(sizes) <= df.hessian_rank


def test_truncated_conjugate_gradient_steps_still_ascend(monkeypatch):
    """Conjugate gradients stopped by their iteration cap return their iterate, an ascent step on
    the quadratic model (the line search then takes what it gains), not nothing; the fit still
    reaches the optimum."""
    monkeypatch.setattr(newton_polish, "DENSE_NEWTON_MAX", 1)
    monkeypatch.setattr(newton_polish, "CG_MAX_ITER", 2)
    df, l1, l2 = lasso_problem("cox")
    exact = fit_ccd(df, l1, l2, options=SolverOptions(tol=1e-14, polish_max_active=0, max_iter=5000))
    rough = fit_ccd(df, l1, l2, options=SolverOptions(tol=1e-5, polish_max_active=0))
    active = np.flatnonzero(rough.beta)
    found = newton_polish.newton_step(df, rough.state, rough.beta, active, Penalty(l1, l2), 1e-12,
                                      np.sign(rough.beta[active]))
    assert found is not None and found[1] > 0 and active.size > 2
    newton = fit_ccd(df, l1, l2, options=SolverOptions(tol=1e-10))
    assert newton.converged and newton.objective >= exact.objective - 1e-9 * abs(exact.objective)


def test_an_ill_conditioned_fit_forms_larger_blocks_once_conjugate_gradients_run_out(monkeypatch):
    """A conjugate-gradient step that runs out of iterations marks the fit's blocks
    ill-conditioned: its later Newton steps form blocks up to twice ``DENSE_NEWTON_MAX`` (a fit of
    2,000 rows and 1,000 covariates took 235 truncated steps before), at the same optimum."""
    df, l1, l2 = lasso_problem("cox")
    exact = fit_ccd(df, l1, l2, options=SolverOptions(tol=1e-14, polish_max_active=0, max_iter=5000))
    size = np.count_nonzero(exact.beta)
    monkeypatch.setattr(newton_polish, "DENSE_NEWTON_MAX", (size + 1) // 2)  # the active set is above it
    monkeypatch.setattr(newton_polish, "CG_MAX_ITER", 2)  # and its conjugate gradients run out
    choices, original = [], newton_polish.newton_step

    def recording(datafit, state, beta, active, pen, rtol, side, conditioning):
        choices.append((active.size, bool(newton_polish.dense_newton(datafit, active, conditioning))))
        return original(datafit, state, beta, active, pen, rtol, side, conditioning)

    monkeypatch.setattr(newton_polish, "newton_step", recording)
    newton = fit_ccd(df, l1, l2, options=SolverOptions(tol=1e-10))
    large = [dense for m, dense in choices if m > newton_polish.DENSE_NEWTON_MAX]
    assert not large[0] and True in large  # conjugate gradients first, then the formed block
    assert large[large.index(True):] == [True] * (len(large) - large.index(True))
    assert newton.converged and newton.objective >= exact.objective - 1e-9 * abs(exact.objective)
    assert np.array_equal(newton.beta != 0, exact.beta != 0)
    fresh = newton_polish.BlockConditioning()
    assert fresh.dense_max() == newton_polish.DENSE_NEWTON_MAX
    fresh.cg_ran_out = True
    assert fresh.dense_max() == 2 * newton_polish.DENSE_NEWTON_MAX
