"""Folds, cross-validation, regularization paths, bootstrap, and the executors."""
import numpy as np
import pandas as pd
import pytest

import riskset
from riskset.selection.common import Context, prior_with_variance
from riskset.selection.folds import assign_folds, bootstrap_weights, has_event, resampling_units


def grouped_data(rng, n_subjects=120):
    rows = rng.integers(1, 4, n_subjects)
    subject = np.repeat(np.arange(n_subjects), rows)
    x = rng.normal(size=(subject.size, 3))
    y = (rng.random(subject.size) < 1 / (1 + np.exp(-x[:, 0]))).astype(float)
    return riskset.from_arrays(x, y=y, subject=subject)


def test_folds_keep_subjects_whole_balance_events_and_follow_the_seed(rng):
    data = grouped_data(rng)
    folds = assign_folds(data, n_folds=5, n_repeats=3, seed=7)
    for r in range(3):
        per_subject = pd.Series(folds[r]).groupby(data.subject).nunique()
        assert (per_subject == 1).all()
    assert not np.array_equal(folds[0], folds[1])
    assert np.array_equal(folds, assign_folds(data, n_folds=5, n_repeats=3, seed=7))
    unit_events = pd.Series(has_event(data)).groupby(data.subject).any()
    unit_fold = pd.Series(folds[0]).groupby(data.subject).first()
    per_fold = unit_events.groupby(unit_fold).sum()
    assert per_fold.max() - per_fold.min() <= 1


def test_conditional_models_resample_whole_strata(rng):
    data = riskset.from_arrays(np.eye(6), y=np.array([1, 0, 1, 0, 0, 1.0]), strata=[0, 0, 1, 1, 2, 2])
    assert np.array_equal(resampling_units(data, "conditional_logistic"), data.strata)
    assert np.array_equal(resampling_units(data, "logistic"), np.arange(6))
    w = bootstrap_weights(data, np.random.default_rng(0), "conditional_logistic")
    assert np.all(w[0::2] == w[1::2])


def test_cross_validation_picks_a_variance_in_the_flat_optimum_of_a_brute_force_grid(rng):
    data = riskset.simulate(n=3000, p=40, model="logistic", seed=11)
    prior = riskset.Laplace(gamma=1.0)
    grid = np.logspace(-3, 1, 9)
    cv = riskset.cross_validate(data, "logistic", prior, variances=grid, n_folds=5, seed=3, progress=False,
                                auto=True)
    # brute force: the same folds, each training subset fitted from scratch and scored on its own
    folds = assign_folds(data, 5, 1, seed=3)
    brute = {}
    for v in grid:
        total = 0.0
        for k in range(5):
            fit = riskset.fit(data.subset(folds[0] != k), "logistic", prior_with_variance(prior, v))
            test = data.subset(folds[0] == k)
            datafit = riskset.models.get_model("logistic").datafit(test)
            total += datafit.loglik(datafit.new_state(fit.coef.to_numpy()))
        brute[v] = total / 5
    cv_grid = cv.summary.set_index("variance")["mean"].reindex(grid).to_numpy()
    # the grid is walked until two variances score below the peak (early_stop=2), no further
    peak = int(np.argmax([brute[v] for v in grid]))
    assert peak + 3 < grid.size and np.array_equal(np.isnan(cv_grid), np.arange(grid.size) > peak + 2)
    scored = ~np.isnan(cv_grid)
    assert np.allclose(cv_grid[scored], [brute[v] for v in grid[scored]], atol=1e-4)  # warm starts change nothing
    best = max(brute.values())
    se = cv.summary["se"].max()
    assert cv.summary.set_index("variance").loc[cv.selected_variance, "mean"] >= best - se
    assert cv.fit.converged and cv.prior.kind == "laplace"


def test_replicates_as_weighted_views_equal_one_by_one_fits(rng):
    """A batched replicate (zero weights on held-out rows, run in threads) equals a fit of the subset."""
    data = riskset.simulate(n=4000, p=30, model="logistic", seed=8)
    ctx = Context(data, riskset.models.get_model("logistic"), riskset.Laplace(gamma=5.0), 1e-10)
    folds = assign_folds(data, 4, 1, seed=1)[0]
    from riskset.selection.executors import run_tasks

    coefs = run_tasks(lambda c, k: c.fit((folds != k).astype(float), c.prior), ctx, range(4), n_jobs=2,
                      progress=False)
    for k in range(4):
        alone = riskset.fit(data.subset(folds != k), "logistic", riskset.Laplace(gamma=5.0), tol=1e-10)
        assert np.allclose(coefs[k].to_numpy(), alone.coef.to_numpy(), rtol=1e-10, atol=1e-10)


def test_regularization_path_goes_from_zero_to_dense(rng):
    data = riskset.simulate(n=2000, p=15, model="poisson", seed=2)
    path = riskset.regularization_path(data, "poisson", riskset.Laplace(gamma=1.0), n_grid=6, progress=False)
    nonzero = (path.drop(columns="intercept") != 0).sum(axis=1).to_numpy()
    assert nonzero[0] == 0 and nonzero[-1] > nonzero[0]
    assert np.all(np.diff(path.index.to_numpy()) > 0)


def test_bootstrap_intervals_contain_the_estimate_and_are_reproducible(rng):
    data = grouped_data(rng, 300)
    a = riskset.bootstrap(data, "logistic", n_boot=40, seed=5, progress=False)
    b = riskset.bootstrap(data, "logistic", n_boot=40, seed=5, progress=False, n_jobs=2)
    pd.testing.assert_frame_equal(a.estimates, b.estimates)
    t = a.table
    assert np.all((t["lower"] <= t["estimate"]) & (t["estimate"] <= t["upper"]))
    assert np.all(t["nonzero_proportion"] == 1.0)
    full = riskset.fit(data, "logistic")
    # percentile interval width is close to the Wald interval width for a well-conditioned model
    width = (t["upper"] - t["lower"]).to_numpy()
    assert np.allclose(width, 2 * 1.96 * full.se.to_numpy(), rtol=0.5)


def test_lasso_bootstrap_reports_selection_proportions():
    data = riskset.simulate(n=2000, p=20, model="logistic", seed=3)
    b = riskset.bootstrap(data, "logistic", riskset.Laplace(gamma=30.0), n_boot=20, progress=False)
    p = b.table.set_index("name")["nonzero_proportion"]
    assert p["intercept"] == 1.0 and (p < 1).any() and p.between(0, 1).all()


def test_dask_executor_returns_the_same_table_as_the_local_one():
    pytest.importorskip("distributed")
    from distributed import Client, LocalCluster

    data = riskset.simulate(n=800, p=5, model="logistic", seed=9)
    local = riskset.bootstrap(data, "logistic", n_boot=8, seed=1, progress=False)
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None) as cluster, \
            Client(cluster) as client:
        remote = riskset.bootstrap(data, "logistic", n_boot=8, seed=1, progress=False, executor=client)
        cv_local = riskset.cross_validate(data, "logistic", riskset.Normal(1.0), variances=[0.1, 1.0], n_folds=3,
                                          progress=False)
        cv_remote = riskset.cross_validate(data, "logistic", riskset.Normal(1.0), variances=[0.1, 1.0], n_folds=3,
                                           progress=False, executor=client)
    pd.testing.assert_frame_equal(local.table, remote.table)
    pd.testing.assert_frame_equal(cv_local.scores, cv_remote.scores)


def test_plots_are_written(tmp_path):
    data = riskset.simulate(n=1000, p=6, model="logistic", seed=1)
    cv = riskset.cross_validate(data, "logistic", riskset.Laplace(gamma=1.0), n_folds=3, n_grid=4, progress=False)
    cv.plot(tmp_path / "cv.png")
    riskset.bootstrap(data, "logistic", n_boot=5, progress=False).plot(tmp_path / "forest.png")
    from riskset.plots.selection import plot_path

    plot_path(riskset.regularization_path(data, "logistic", riskset.Laplace(gamma=1.0), n_grid=4, progress=False),
              tmp_path / "path.png")
    assert all((tmp_path / f).stat().st_size > 5000 for f in ("cv.png", "forest.png", "path.png"))


def test_many_specifications_on_dask_match_the_local_table(tmp_path):
    pytest.importorskip("distributed")
    from conftest import reference_dir

    paths = [str(reference_dir() / c / "case.json") for c in ("logistic_ridge", "poisson_offset")]
    local = riskset.fit_specs(paths, progress=False)
    assert set(local["analysis"]) == {"logistic_ridge", "poisson_offset"} and local["converged"].all()
    assert (local["se_variance"] == "model-based").all()  # which standard errors, in every row
    from riskset import cli

    out = tmp_path / "all.csv"
    assert cli.main(["fit", "--spec", paths[0], "--spec", paths[1], "--dask", "local", "--out", str(out),
                     "--quiet"]) == 0
    remote = pd.read_csv(out)
    assert np.allclose(remote["estimate"], local["estimate"], atol=1e-12)


def test_folds_balance_the_models_event_of_interest(rng):
    n = 400
    status = rng.choice([0, 1, 2], n, p=[0.5, 0.1, 0.4])
    data = riskset.from_arrays(rng.normal(size=(n, 2)), time=rng.exponential(size=n), status=status)
    folds = assign_folds(data, 4, 1, seed=0, model=riskset.models.get_model("fine_gray", event_of_interest=2))[0]
    per_fold = np.bincount(folds[status == 2], minlength=4)
    assert per_fold.max() - per_fold.min() <= 1
    cv = riskset.cross_validate(data, "fine_gray", riskset.Normal(1.0), variances=[0.1, 1.0], n_folds=4,
                                progress=False, event_of_interest=2)
    assert np.isfinite(cv.summary["mean"]).all() and (cv.summary["mean"] < 0).all()


def test_the_parabolic_refinement_finds_a_smooth_maximum_in_fewer_steps_than_golden_section():
    """On a smooth score curve (a quartic in log-variance around an off-grid maximum) the
    search ends within the resolution golden-section search would reach with the same
    budget, having used fewer new points; it stays in the bracket."""
    from riskset.selection.cv import _GOLDEN, next_log_variance

    def score(x):
        return -(x - 0.37) ** 2 - 0.3 * (x - 0.37) ** 4

    lo, hi, n_refine = -1.0, 1.0, 4
    resolution = (hi - lo) * _GOLDEN**n_refine / 2
    scores = {x: score(x) for x in (lo, 0.0, hi)}
    used = 0
    while used < n_refine and (x := next_log_variance(scores, resolution)) is not None:
        assert lo < x < hi
        scores[x] = score(x)
        used += 1
    best = max(scores, key=scores.get)
    assert abs(best - 0.37) < resolution and used < n_refine


def test_the_refinement_falls_back_to_golden_section_at_the_bracket_end():
    """A best point at an end of the bracket (the maximum beyond the grid's interior) takes a
    golden-section step into the bracket; a resolved maximum stops the search."""
    from riskset.selection.cv import _GOLDEN, next_log_variance

    x = next_log_variance({0.0: 1.0, 1.0: 0.5, 2.0: 0.0}, 1e-3)
    assert x == pytest.approx((1 - _GOLDEN) * 1.0)
    assert next_log_variance({0.0: 0.0, 0.5: 1.0, 1.0: 0.0}, 1e-3) is None  # symmetric: vertex at the best
    assert next_log_variance({0.0: 0.0, 0.5: 1.0, 1.0: 0.0}, 0.0) is None  # even the first step (never b again)


def test_refined_cross_validation_scores_every_split_at_each_new_variance():
    data = riskset.simulate(n=1500, p=20, model="logistic", seed=5)
    cv = riskset.cross_validate(data, "logistic", riskset.Laplace(gamma=1.0), n_folds=4, n_grid=5, progress=False,
                                auto=True, n_refine=3, early_stop=None)
    counts = cv.scores.groupby("variance").size()
    grid = np.sort(cv.scores["variance"].unique())
    assert (counts == 4).all() and 5 < grid.size <= 8
    assert cv.selected_variance == cv.summary.loc[cv.summary["mean"].idxmax(), "variance"]
    assert cv.fit.converged
