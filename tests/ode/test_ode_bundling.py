"""Task bundling: same results in caller's order, useful predictor."""

import numpy as np

from riskset.ode import NONFINITE, lockstep_efficiency, solve_batch
from riskset.ode.bundling import StepPredictor, r_squared

from .helpers import seir_sample


def test_lockstep_efficiency_definition():
    assert lockstep_efficiency([5, 5, 5, 5], 2) == 1.0
    # bundles (1, 3) and (2, 2): (1+3+2+2) / (3*2 + 2*2)
    assert np.isclose(lockstep_efficiency([1, 3, 2, 2], 2), 8 / 10)
    # partial last bundle counts its own size: (4+1+1) / (4*2 + 1*1)
    assert np.isclose(lockstep_efficiency([4, 1, 1], 2), 6 / 9)


def test_predictor_recovers_linear_law():
    rng = np.random.default_rng(0)
    F = rng.normal(size=(200, 3))
    y = 3 + 2 * F[:, 0] - F[:, 2]
    m = StepPredictor(1).fit(F, y)
    assert r_squared(y, m.predict(F)) > 0.999


def test_model_selection_picks_log_target_for_multiplicative_law():
    from riskset.ode.bundling import select_model

    rng = np.random.default_rng(1)
    F = rng.normal(size=(400, 2))
    steps = np.exp(4 + 1.5 * F[:, 0] - F[:, 1]
                   + 0.05 * rng.normal(size=400))
    deg, target, r2 = select_model(F, steps)
    assert target == "log" and r2 > 0.9
    lin = 50 + 10 * F[:, 0] + rng.normal(size=400)
    assert select_model(F, lin)[1] == "linear"
    m = StepPredictor(1, "log").fit(F, steps)
    assert r_squared(np.log(steps), np.log(m.predict(F))) > 0.99


def test_bundling_same_results_in_callers_order_and_r2():
    P, y0 = seir_sample(800, seed=11)
    P[5::10, 1] = np.nan  # bad tasks, some of them in the pilot
    t = np.arange(0.0, 366.0)
    plain = solve_batch("seir", P, y0, t, progress=False, bundle=False)
    bund = solve_batch("seir", P, y0, t, progress=False, bundle=True,
                       chunk_size=100, seed=4)
    assert plain.bundling is None
    np.testing.assert_array_equal(bund.states, plain.states)
    np.testing.assert_array_equal(bund.status, plain.status)
    np.testing.assert_array_equal(bund.n_accepted, plain.n_accepted)
    np.testing.assert_array_equal(bund.nfev, plain.nfev)
    # caller's order: a task solved on its own gives the same row
    for i in (0, 5, 417, 799):
        one = solve_batch("seir", P[i:i + 1], y0, t, progress=False)
        np.testing.assert_array_equal(bund.states[i], one.states[0])
    info = bund.bundling
    assert len(info.pilot_idx) == 80
    assert np.isin(np.arange(5, 800, 10), info.pilot_idx).any()
    # every task launched exactly once
    assert sorted(info.order.tolist()) == list(range(800))
    assert np.all(bund.status[5::10] == NONFINITE)
    # after the pilot, tasks were launched sorted by predicted steps
    rest = info.order[len(info.pilot_idx):]
    assert np.all(np.diff(info.predicted[rest]) >= 0)
    assert info.r2_heldout > 0.5
    assert info.efficiency_sorted > info.efficiency_unsorted
    assert info.efficiency_oracle >= info.efficiency_sorted - 1e-12
    steps = plain.n_accepted + plain.n_rejected
    assert np.isclose(info.efficiency_unsorted,
                      lockstep_efficiency(steps, 32))
    assert np.isclose(plain.lockstep_efficiency(32), info.efficiency_unsorted)
    assert np.isclose(plain.lockstep_efficiency(32, "sorted"),
                      info.efficiency_oracle)
    assert np.isclose(bund.lockstep_efficiency(32, info.order),
                      info.efficiency_executed)
    assert "R^2 held-out" in info.summary()


def test_small_batches_are_not_bundled():
    P, y0 = seir_sample(10, seed=1)
    res = solve_batch("seir", P, y0, np.arange(0.0, 10.0), bundle=True,
                      progress=False)
    assert res.bundling is None
