"""One fit over rows split into shards on Dask workers (riskset.sharded) ends at the one-machine
optimum: every family that shards (Fine-Gray with the censoring Kaplan-Meier or given censoring
weights included), every prior, weights, offsets, strata, start-stop rows and ties, on 2-5 shards
of unequal size (one without events, one of a single row or stratum); on a
LocalCluster, on a scheduler and workers started as processes, and through the loss of a worker.
"""
import dataclasses
import json
import os
import subprocess
import sys
import time
import warnings

import numpy as np
import pandas as pd
import pytest
import scipy.sparse as sp

import riskset
from riskset.exceptions import InputError
from riskset.sharded import ShardedData, InMemoryShard, parquet_shards, split
from riskset.sharded.replicates import PoissonDraw, assign_folds
from riskset.sharded.shards import RowUnits
from riskset.solver.ccd import SolverOptions, fit_ccd
from riskset.solver.proximal_newton import fit_proximal_newton

distributed = pytest.importorskip("distributed")

KKT_TOL = 1e-8
PRIORS = {"none": None, "laplace": riskset.Laplace(gamma=6.0), "normal": riskset.Normal(variance=0.5),
          "elastic_net": riskset.ElasticNet(gamma=4.0, variance=1.0)}


@pytest.fixture(scope="module")
def client():
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=False, dashboard_address=None) as c, \
            distributed.Client(c) as cl:
        yield cl


def _design(rng, n, p):
    X = sp.random(n, p, density=0.15, random_state=rng, data_rvs=lambda k: np.ones(k)).tocsc()
    X[:, 0] = rng.normal(size=(n, 1))  # one dense, valued column
    return sp.csc_matrix(X)


def survival_data(seed=0, n=600, p=12, start=False, weights=False, offset=False, strata=None):
    """Cox data with heavy ties (integer times 1..15)."""
    rng = np.random.default_rng(seed)
    X = _design(rng, n, p)
    eta = X @ rng.normal(scale=0.4, size=p)
    time_ = np.ceil(rng.exponential(8 * np.exp(-eta))).clip(1, 15)
    status = (rng.random(n) < 0.7).astype(int)
    entry = np.where(rng.random(n) < 0.4, rng.uniform(0, 1, n) * (time_ - 0.5), 0.0) if start else None
    return riskset.from_arrays(X, time=time_, status=status, start=entry,
                               weights=rng.choice([0.0, 1.0, 2.5], size=n, p=[0.1, 0.7, 0.2]) if weights else None,
                               offset=rng.normal(scale=0.3, size=n) if offset else None,
                               strata=None if strata is None else rng.integers(0, strata, n))


def competing_data(seed=0, n=600, p=12, weights=False, offset=False, censor_weights=False, start=False):
    """Competing-risks data with heavy ties (integer times 1..15): status 1 (event of interest),
    2 (competing) or 0 (censored); given censoring weights, where asked, a function of time for
    the events of interest (tied events share it) and anything in (0.3, 1) for the other rows."""
    rng = np.random.default_rng(seed)
    X = _design(rng, n, p)
    eta = X @ rng.normal(scale=0.4, size=p)
    time_ = np.ceil(rng.exponential(8 * np.exp(-eta))).clip(1, 15)
    status = rng.choice([0, 1, 2], size=n, p=[0.3, 0.45, 0.25])
    return riskset.from_arrays(X, time=time_, status=status,
                               start=np.zeros(n) if start else None,
                               weights=rng.choice([0.0, 1.0, 2.5], size=n, p=[0.1, 0.7, 0.2]) if weights else None,
                               offset=rng.normal(scale=0.3, size=n) if offset else None,
                               censor_weights=np.where(status == 1, np.exp(-0.05 * time_), rng.uniform(0.3, 1.0, n))
                               if censor_weights else None)


def matched_data(seed=0, n_sets=120, size=4, p=8):
    rng = np.random.default_rng(seed)
    n = n_sets * size
    X = _design(rng, n, p)
    y = np.zeros(n)
    y[np.arange(n_sets) * size + rng.integers(0, size, n_sets)] = 1
    return riskset.from_arrays(X, y=y, strata=np.repeat(np.arange(n_sets), size))


def _same_optimum(one, sharded):
    assert sharded.converged, sharded.message
    assert sharded.kkt <= KKT_TOL
    assert abs(sharded.objective - one.objective) <= 1e-9 * abs(one.objective)
    np.testing.assert_allclose(sharded.coef.to_numpy(), one.coef.to_numpy(), atol=1e-6)
    assert list(sharded.coef.index) == list(one.coef.index)


@pytest.mark.parametrize("model", ["logistic", "poisson"])
@pytest.mark.parametrize("prior", list(PRIORS))
def test_glm_rows_split_anyhow(client, model, prior):
    data = riskset.simulate(n=900, p=15, model=model, seed=3)
    one = riskset.fit(data, model, PRIORS[prior], kkt_tol=KKT_TOL)
    sharded = riskset.fit(split(data, 4, sizes=[1, 500, 2, 397], seed=1), model, PRIORS[prior], executor=client,
                          kkt_tol=KKT_TOL)
    _same_optimum(one, sharded)
    assert sharded.sharding["shards"] == 4 and sharded.sharding["workers"] >= 1
    if prior == "none":
        np.testing.assert_allclose(sharded.se.to_numpy(), one.se.to_numpy(), rtol=1e-6)


@pytest.mark.parametrize("ties", ["breslow", "efron"])
@pytest.mark.parametrize("roles", [{}, {"weights": True, "offset": True}, {"start": True, "weights": True}])
@pytest.mark.parametrize("prior", ["none", "laplace", "elastic_net"])
def test_cox_risk_sets_span_shards(client, ties, roles, prior):
    data = survival_data(seed=len(roles), **roles)
    one = riskset.fit(data, "cox", PRIORS[prior], ties=ties, kkt_tol=KKT_TOL)
    rows = np.argsort(np.asarray(data.time), kind="stable")  # shard 0: the earliest rows, censored only
    censored_early = rows[np.asarray(data.status)[rows] == 0][:30]
    rest = np.setdiff1d(np.arange(data.n_rows), np.concatenate([censored_early, [rows[-1]]]))
    parts = [censored_early, rows[-1:], rest[: rest.size // 3], rest[rest.size // 3:]]
    sharded_data = ShardedData(tuple(InMemoryShard(data.subset(np.sort(p))) for p in parts))
    sharded = riskset.fit(sharded_data, "cox", PRIORS[prior], ties=ties, executor=client, kkt_tol=KKT_TOL)
    _same_optimum(one, sharded)
    if prior == "none":
        np.testing.assert_allclose(sharded.se.to_numpy(), one.se.to_numpy(), rtol=1e-6)


def _time_ordered_shards(data):
    """Shard 0: the earliest censored rows (no event); shard 1: the latest row alone; the rest in
    two shards of unequal size."""
    rows = np.argsort(np.asarray(data.time), kind="stable")
    censored_early = rows[np.asarray(data.status)[rows] == 0][:30]
    rest = np.setdiff1d(np.arange(data.n_rows), np.concatenate([censored_early, [rows[-1]]]))
    parts = [censored_early, rows[-1:], rest[: rest.size // 3], rest[rest.size // 3:]]
    return ShardedData(tuple(InMemoryShard(data.subset(np.sort(p))) for p in parts))


@pytest.mark.parametrize("roles", [{}, {"weights": True, "offset": True}, {"censor_weights": True, "weights": True}])
@pytest.mark.parametrize("prior", ["none", "laplace", "elastic_net"])
def test_fine_gray_risk_sets_span_shards(client, roles, prior):
    """The subdistribution risk sets span shards, and so does the censoring Kaplan-Meier (built
    from the shards' counts) or, given, the events' censoring weights."""
    data = competing_data(seed=len(roles), **roles)
    one = riskset.fit(data, "fine_gray", PRIORS[prior], variance="model-based", kkt_tol=KKT_TOL)
    sharded_data = _time_ordered_shards(data)
    if prior == "none":
        with pytest.warns(riskset.DataWarning, match="model-based, not robust"):
            sharded = riskset.fit(sharded_data, "fine_gray", None, executor=client, kkt_tol=KKT_TOL)
        _same_optimum(one, sharded)
        np.testing.assert_allclose(sharded.se.to_numpy(), one.se.to_numpy(), rtol=1e-6)
        assert sharded.variance == "model-based"
    else:
        _same_optimum(one, riskset.fit(sharded_data, "fine_gray", PRIORS[prior], executor=client, kkt_tol=KKT_TOL))


def test_fine_gray_status_codes_and_random_shards(client):
    """Event of interest 2, competing 1, censored 0, rows split at random into 3 shards."""
    data = competing_data(seed=12, weights=True, offset=True)
    options = dict(event_of_interest=2, competing_events=[1], variance="model-based")
    one = riskset.fit(data, "fine_gray", riskset.Laplace(gamma=3.0), kkt_tol=KKT_TOL, **options)
    sharded = riskset.fit(split(data, 3, sizes=[1, 300, 299], seed=2), "fine_gray", riskset.Laplace(gamma=3.0),
                          executor=client, kkt_tol=KKT_TOL, **options)
    _same_optimum(one, sharded)


def test_fine_gray_without_competing_events_warns_as_one_machine(client):
    data = survival_data(seed=8, n=300, weights=True)
    with pytest.warns(riskset.DataWarning, match="no competing events"):
        one = riskset.fit(data, "fine_gray", riskset.Laplace(gamma=2.0), kkt_tol=KKT_TOL)
    with pytest.warns(riskset.DataWarning, match="no competing events"):
        sharded = riskset.fit(split(data, 2), "fine_gray", riskset.Laplace(gamma=2.0), executor=client, kkt_tol=KKT_TOL)
    _same_optimum(one, sharded)


def test_fine_gray_refusals_name_the_problem(client):
    data = competing_data(seed=3)
    with pytest.raises(InputError, match=r"shard \d .*does not support \(start, stop\] data"):
        riskset.fit(split(competing_data(seed=3, start=True), 2), "fine_gray", executor=client)
    with pytest.raises(InputError, match=r"shard \d .*fine_gray model does not support strata"):
        riskset.fit(split(survival_data(seed=1, strata=3), 2), "fine_gray", executor=client)
    given = competing_data(seed=3, censor_weights=True)
    mixed = ShardedData((InMemoryShard(given.subset(np.arange(300))), InMemoryShard(data.subset(np.arange(300, 600)))))
    with pytest.raises(InputError, match="censoring weights are given in shard 0 but not in shard 1"):
        riskset.fit(mixed, "fine_gray", executor=client)
    none = riskset.from_arrays(np.eye(4), time=[1.0, 2, 3, 4], status=[0, 2, 0, 2])
    with pytest.raises(InputError, match="no shard has an event of interest \\(status code 1\\)"):
        riskset.fit(split(none, 2), "fine_gray", executor=client)
    with pytest.raises(InputError, match="shard .*unknown status code"):
        riskset.fit(split(data, 2), "fine_gray", executor=client, competing_events=[3])


@pytest.mark.parametrize("model, data", [
    ("cox", lambda: survival_data(seed=4, strata=25, weights=True)),
    ("conditional_logistic", lambda: matched_data(seed=5)),
])
@pytest.mark.parametrize("prior", ["none", "laplace", "normal"])
def test_stratified_models_split_by_stratum(client, model, data, prior):
    data = data()
    one = riskset.fit(data, model, PRIORS[prior], kkt_tol=KKT_TOL)
    strata = np.asarray(data.strata)
    sharded = riskset.fit(split(data, 3, by="stratum"), model, PRIORS[prior], executor=client, kkt_tol=KKT_TOL)
    _same_optimum(one, sharded)
    lone = np.flatnonzero(strata == strata[0])  # a shard of one stratum
    one_stratum = ShardedData((InMemoryShard(data.subset(lone)), InMemoryShard(data.subset(
        np.flatnonzero(strata != strata[0])))), by="stratum")
    _same_optimum(one, riskset.fit(one_stratum, model, PRIORS[prior], executor=client, kkt_tol=KKT_TOL))


def test_sccs_split_by_case(client):
    """SCCS eras (conditional Poisson with log era lengths as offset), whole cases per shard."""
    rng = np.random.default_rng(6)
    n_cases, eras = 150, 5
    X = _design(rng, n_cases * eras, 6)
    length = rng.integers(5, 200, n_cases * eras).astype(float)
    y = rng.poisson(length / length.mean() * np.exp(0.3 * X[:, 1].toarray().ravel()))
    data = riskset.from_arrays(X, y=y, offset=np.log(length), strata=np.repeat(np.arange(n_cases), eras))
    one = riskset.fit(data, "sccs", riskset.Laplace(gamma=2.0), kkt_tol=KKT_TOL)
    _same_optimum(one, riskset.fit(split(data, 3, by="stratum"), "sccs", riskset.Laplace(gamma=2.0),
                                   executor=client, kkt_tol=KKT_TOL))


def test_outer_newton_fits_one_machine_datafits_to_the_ccd_optimum():
    """The outer loop alone (no Dask) on an ordinary datafit reaches coordinate descent's optimum."""
    data = survival_data(seed=7, weights=True)
    datafit = riskset.models.get_model("cox", ties="efron").datafit(data)
    for l1 in (0.0, 3.0, 30.0):
        pen = np.full(datafit.n_coef, l1)
        opts = SolverOptions(kkt_tol=1e-9, tol=1e-14)
        a = fit_ccd(datafit, pen, np.zeros_like(pen), options=opts)
        b = fit_proximal_newton(datafit, pen, np.zeros_like(pen), options=opts)
        assert b.converged and b.kkt <= 1e-9
        assert abs(a.objective - b.objective) <= 1e-11 * abs(a.objective)
        np.testing.assert_array_equal(a.beta == 0, b.beta == 0)


def test_shards_from_parquet_files(client, tmp_path):
    data = survival_data(seed=9, n=300)
    for k, part in enumerate(np.array_split(np.arange(data.n_rows), 3)):
        sub = data.subset(part)
        coo = sp.coo_matrix(sub.X)
        pd.DataFrame({"row_id": sub.row_ids, "time": sub.time, "status": sub.status}).to_parquet(
            tmp_path / f"outcomes-{k}.parquet")
        keep = coo.col != k  # each file lacks one covariate: the fit aligns the shards on their union
        pd.DataFrame({"row_id": sub.row_ids[coo.row[keep]],
                      "covariate_id": [int(name[1:]) for name in np.asarray(sub.covariate_names)[coo.col[keep]]],
                      "value": coo.data[keep]}).to_parquet(tmp_path / f"covariates-{k}.parquet")
    sharded = parquet_shards(str(tmp_path / "outcomes-*.parquet"), str(tmp_path / "covariates-*.parquet"))
    rows = [pd.read_parquet(tmp_path / f"covariates-{k}.parquet") for k in range(3)]
    outcomes = pd.concat([pd.read_parquet(tmp_path / f"outcomes-{k}.parquet") for k in range(3)])
    whole = riskset.from_long(outcomes, pd.concat(rows))
    one = riskset.fit(whole, "cox", riskset.Laplace(gamma=2.0), kkt_tol=KKT_TOL)
    _same_optimum(one, riskset.fit(sharded, "cox", riskset.Laplace(gamma=2.0), executor=client, kkt_tol=KKT_TOL))


def test_refusals_name_the_problem(client):
    stratified = survival_data(seed=1, strata=5)
    with pytest.raises(InputError, match="split by stratum"):
        riskset.fit(split(stratified, 2), "cox", executor=client)
    across = ShardedData(tuple(InMemoryShard(stratified.subset(p)) for p in np.array_split(
        np.arange(stratified.n_rows), 2)), by="stratum")
    with pytest.raises(InputError, match="stratum .* is in shard 0 .* and in shard 1"):
        riskset.fit(across, "cox", executor=client)
    with pytest.raises(InputError, match="executor must be"):
        riskset.fit(split(stratified, 2), "cox", executor=None)
    with pytest.raises(InputError, match="profile=.* is not supported for sharded data"):
        riskset.fit(split(stratified, 2), "cox", executor=client, profile=["x1"])
    no_events = riskset.from_arrays(np.eye(4), time=[1.0, 2, 3, 4], status=[0, 0, 0, 0])
    with pytest.raises(InputError, match="no shard has an event"):
        riskset.fit(split(no_events, 2), "cox", executor=client)
    with pytest.raises(InputError, match="executor is for sharded data"):
        riskset.fit(stratified, "cox", executor=client)
    with pytest.raises(InputError, match="sizes must be"):
        split(stratified, 2, sizes=[1, 2])


def test_a_bad_shard_is_named(client):
    good = survival_data(seed=2, n=50)
    bad = riskset.from_arrays(np.ones((2, 12)), time=[1.0, 2.0], status=[1, 3],
                              covariate_names=good.covariate_names)
    with pytest.raises(InputError, match="shard 1 .*status"):
        riskset.fit(ShardedData((InMemoryShard(good), InMemoryShard(bad))), "cox", executor=client)


def test_process_workers_and_the_loss_of_one():
    """Worker processes (the shards pickled to them); one killed between rounds: its shard is
    read again on another worker and the fit ends at the same optimum."""
    data = survival_data(seed=11, n=800, weights=True)
    one = riskset.fit(data, "cox", riskset.Laplace(gamma=3.0), kkt_tol=KKT_TOL)
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None,
                                  memory_limit="1GiB") as cluster, distributed.Client(cluster) as client:
        from riskset.sharded import datafit as sharded_datafit

        each = sharded_datafit.Exchange.each
        state = {"rounds": 0}

        def each_then_kill(self, method, *args):
            state["rounds"] += 1
            if state["rounds"] == 6:  # mid-fit: lose the worker holding shard 0
                victim = next(iter(client.who_has(self.shards[0]).values()))[0]
                client.run(os._exit, 1, workers=[victim], on_error="ignore")
            return each(self, method, *args)

        sharded_datafit.Exchange.each = each_then_kill
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                sharded = riskset.fit(split(data, 4), "cox", riskset.Laplace(gamma=3.0), executor=client,
                                      kkt_tol=KKT_TOL)
        finally:
            sharded_datafit.Exchange.each = each
        assert state["rounds"] > 6
    _same_optimum(one, sharded)


def test_scheduler_and_workers_started_as_commands(tmp_path):
    """``dask scheduler`` and two ``dask worker`` processes, as a user starts them (on a free
    port, written to a scheduler file); the fit is given the scheduler's address."""
    scheduler_file = tmp_path / "scheduler.json"
    scheduler = subprocess.Popen([sys.executable, "-m", "distributed.cli.dask_scheduler", "--host", "127.0.0.1",
                                  "--port", "0", "--dashboard-address", ":0", "--scheduler-file", str(scheduler_file)],
                                 stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    address = _scheduler_address(scheduler_file, timeout=60)
    workers = [subprocess.Popen([sys.executable, "-m", "distributed.cli.dask_worker", address, "--nthreads", "1",
                                 "--memory-limit", "1GiB", "--no-dashboard"],
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL) for _ in range(2)]
    try:
        with distributed.Client(address, timeout=60) as client:
            client.wait_for_workers(2, timeout=120)
            data = riskset.simulate(n=600, p=10, model="logistic", seed=4)
            one = riskset.fit(data, "logistic", riskset.Laplace(gamma=3.0), kkt_tol=KKT_TOL)
            sharded = riskset.fit(split(data, 3), "logistic", riskset.Laplace(gamma=3.0), executor=address,
                                  kkt_tol=KKT_TOL)
        _same_optimum(one, sharded)
        assert sharded.sharding["workers"] == 2
    finally:
        for proc in [*workers, scheduler]:
            proc.terminate()
        deadline = time.time() + 30
        for proc in [*workers, scheduler]:
            proc.wait(timeout=max(1, deadline - time.time()))


def _scheduler_address(path, timeout: float) -> str:
    """The address a scheduler wrote to its scheduler file, once the file is whole."""
    deadline = time.time() + timeout
    while time.time() < deadline:
        try:
            return json.loads(path.read_text())["address"]
        except (FileNotFoundError, json.JSONDecodeError, KeyError):
            time.sleep(0.2)
    raise AssertionError(f"the scheduler wrote no address to {path} within {timeout} s")


@pytest.mark.parametrize("model, make, by", [
    ("logistic", lambda: riskset.simulate(n=1200, p=12, model="logistic", seed=8), "row"),
    ("cox", lambda: survival_data(seed=8, weights=True), "row"),
    ("fine_gray", lambda: competing_data(seed=8), "row"),
    ("conditional_logistic", lambda: matched_data(seed=8), "stratum"),
])
def test_cross_validation_scores_the_one_machine_folds(client, model, make, by):
    """The folds are weights drawn on the workers from the units' ids; given the same folds, the
    one-machine search scores every variance alike and chooses the same one."""
    data = make()
    units = data.row_ids if by == "row" else np.asarray(data.strata)
    folds = assign_folds(units, 4, seed=5)
    held_out = np.array([folds == k for k in range(4)])
    grid = [0.01, 0.1, 1.0]
    one = riskset.cross_validate(data, model, riskset.Laplace(gamma=1.0), variances=grid, held_out=held_out,
                                 progress=False, early_stop=None)
    sharded = riskset.cross_validate(split(data, 3, by=by), model, riskset.Laplace(gamma=1.0), variances=grid,
                                     n_folds=4, seed=5, executor=client, progress=False, early_stop=None)
    assert sharded.scores["converged"].all()
    # the fits stop within kkt_tol 1e-4 of their optima, each its own way: the scores agree to ~1e-7
    np.testing.assert_allclose(sharded.summary["mean"], one.summary["mean"], rtol=1e-5)
    assert sharded.selected_variance == one.selected_variance
    assert sharded.fit.converged and abs(sharded.fit.objective - one.fit.objective) <= 1e-9 * abs(one.fit.objective)


def test_replicates_are_drawn_from_unit_ids_alone():
    ids = np.arange(1000)
    folds = assign_folds(ids, 5, seed=2)
    np.testing.assert_array_equal(assign_folds(ids[::-1], 5, seed=2), folds[::-1])  # not from positions
    assert set(np.bincount(folds)) <= set(range(160, 241))  # about 200 each
    assert not np.array_equal(assign_folds(ids, 5, seed=3), folds)
    counts = PoissonDraw(seed=1, draw=0).factor(RowUnits(ids, None))
    assert abs(counts.mean() - 1.0) < 0.1 and counts.min() == 0 and np.all(counts == np.round(counts))


@pytest.mark.parametrize("model, make, by", [
    ("cox", lambda: survival_data(seed=12), "row"),
    ("fine_gray", lambda: competing_data(seed=12), "row"),
    ("conditional_logistic", lambda: matched_data(seed=12), "stratum"),
])
def test_bootstrap_draws_are_the_one_machine_fits_of_the_same_weights(client, model, make, by):
    data = make()
    prior = riskset.Laplace(gamma=2.0)
    boot = riskset.bootstrap(split(data, 3, by=by), model, prior, n_boot=3, seed=4, executor=client, progress=False)
    assert boot.estimates.shape == (3, len(boot.fit.coef)) and list(boot.table.columns[:4]) == [
        "name", "estimate", "lower", "upper"]
    units = RowUnits.of(data)
    for b in range(3):
        counts = PoissonDraw(seed=4, draw=b, unit=by).factor(units)
        drawn = dataclasses.replace(data, weights=counts)
        one = riskset.fit(drawn, model, prior, kkt_tol=1e-8)
        np.testing.assert_allclose(boot.estimates.iloc[b].to_numpy(), one.coef.to_numpy(), atol=2e-3)
