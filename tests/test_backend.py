"""The backend object (riskset.backend.Backend) and the family facts that are Model attributes."""
import numpy as np
import pandas as pd
import pytest

import riskset
from riskset.backend import Backend
from riskset.core.replicates import ViewReplicates
from riskset.models.base import Model, get_model, model_class
from riskset.results import FitResult
from riskset.selection.folds import assign_folds, bootstrap_weights, resampling_units


@pytest.fixture
def logistic_datafit():
    data = riskset.simulate(n=200, p=3, model="logistic", seed=5)
    return get_model("logistic").datafit(data), data


@pytest.mark.parametrize("args, needle", [(("tpu",), "backend"), (("cpu", "float16"), "dtype"),
                                          (("cpu", "float64", 0), "n_jobs")])
def test_backend_arguments_are_checked_once(args, needle):
    with pytest.raises(riskset.InputError, match=needle):
        Backend.of(*args)


def test_cpu_backend_sweeps_the_datafit_itself_and_reweighted_views(logistic_datafit):
    datafit, data = logistic_datafit
    cpu = Backend.of("cpu")
    assert cpu.prepare(datafit) is datafit and not cpu.on_device and cpu.problem() is None
    weights = np.ones((3, data.n_rows))
    weights[1, :50] = 0.0
    batch = cpu.replicates(datafit, weights)
    assert isinstance(batch, ViewReplicates) and batch.n_replicates == 3 and batch.pool is None
    np.testing.assert_array_equal(batch.view(1).w, weights[1])
    seen = []
    batch = cpu.replicates(datafit, weights[0], view=lambda w: seen.append(w) or datafit.reweighted(w))
    assert batch.n_replicates == 1 and len(seen) == 1
    repeated = cpu.repeated(datafit, 4)
    assert repeated.n_replicates == 4 and all(repeated.view(r) is datafit for r in range(4))


def test_cpu_threads_and_batches():
    with Backend.of("cpu").threads() as pool:
        assert pool is None
    with Backend.of("cpu", n_jobs=2).threads() as pool:
        assert pool is not None and pool.submit(lambda: 7).result() == 7
    assert Backend.of("cpu").batch_size == 1
    Backend.of("cpu").check_executor("dask")  # CPU replicate tasks may run anywhere


def test_gpu_backend_batches_everything_in_this_process():
    gpu = Backend.of("gpu", "float32")
    assert gpu.on_device and gpu.batch_size is None
    with gpu.threads() as pool:
        assert pool is None
    with pytest.raises(ValueError, match="Dask"):
        gpu.check_executor("dask")


def test_gpu_backend_hands_the_datafit_and_the_weights_to_the_gpu_kernels(monkeypatch, logistic_datafit):
    """The contract with riskset.kernels.gpu: to_device(datafit, dtype) and
    replicate_batch(device datafit, weights (R, N), dtype) (stand-ins here: no device needed)."""
    import riskset.kernels.gpu as gpu

    datafit, data = logistic_datafit
    calls = []
    monkeypatch.setattr(gpu, "to_device", lambda d, dtype: calls.append(("to_device", d, dtype)) or "device")
    monkeypatch.setattr(gpu, "replicate_batch", lambda d, w, dtype: calls.append(("batch", d, w.shape, dtype))
                        or "batch", raising=False)
    backend = Backend.of("gpu", "float32")
    assert backend.prepare(datafit) == "device"
    assert backend.replicates("device", np.ones(data.n_rows), view=pytest.fail) == "batch"
    assert calls == [("to_device", datafit, "float32"), ("batch", "device", (1, data.n_rows), "float32")]


def test_profile_intervals_on_threads_equal_one_thread():
    data = riskset.simulate(n=300, p=3, model="poisson", seed=2)
    one = riskset.fit(data, "poisson", profile=["x0", "x1"])
    two = riskset.fit(data, "poisson", profile=["x0", "x1"], n_jobs=2)
    pd.testing.assert_frame_equal(one.intervals, two.intervals)


#: exp(coefficient) in the coefficient table, by model (None: no ratio columns).
RATIO_NAMES = {"cox": "hazard_ratio", "fine_gray": "subdistribution_hazard_ratio", "logistic": "odds_ratio",
               "conditional_logistic": "odds_ratio", "pooled_logistic": "odds_ratio", "poisson": "rate_ratio",
               "conditional_poisson": "rate_ratio", "sccs": "incidence_rate_ratio", "least_squares": None}


@pytest.mark.parametrize("name", sorted(RATIO_NAMES))
def test_family_facts_are_model_attributes(name):
    cls = model_class(name)
    assert cls.ratio_name == RATIO_NAMES[name]
    conditional = name in ("conditional_logistic", "conditional_poisson", "sccs")
    assert cls.resampling_unit == ("stratum" if conditional else "row")
    assert cls.event_of_interest == 1


def test_every_registered_model_has_known_facts():
    get_model("logistic")  # registers the built-in families
    assert set(Model.registry) == set(RATIO_NAMES)
    assert get_model("fine_gray", event_of_interest=2).event_of_interest == 2


def test_coefficient_table_names_the_models_ratio():
    def table(model_name):
        fit = FitResult(model_name=model_name, model_options={}, coef=pd.Series({"x": np.log(2.0)}),
                        se=pd.Series({"x": 0.1}), loglik=-1.0, objective=-1.0, converged=True, message="",
                        n_iter=1, prior=riskset.NoPrior(), n_rows=10)
        return fit.coef_table()

    assert np.isclose(table("cox")["hazard_ratio"].iloc[0], 2.0)
    assert {"odds_ratio", "odds_ratio_lower", "odds_ratio_upper"} <= set(table("conditional_logistic"))
    assert not any("ratio" in c for c in table("least_squares"))


def test_resampling_follows_the_models_unit_and_event():
    strata = np.repeat(np.arange(4), 3)
    status = np.tile([1, 0, 2], 4)
    data = riskset.from_arrays(np.arange(12.0)[:, None], time=np.arange(1.0, 13.0), status=status, strata=strata)
    np.testing.assert_array_equal(resampling_units(data, get_model("sccs")), strata)
    np.testing.assert_array_equal(resampling_units(data, "cox"), np.arange(12))
    np.testing.assert_array_equal(resampling_units(data), np.arange(12))
    w = bootstrap_weights(data, np.random.default_rng(1), "conditional_poisson")
    assert all(np.unique(w[strata == s]).size == 1 for s in range(4))  # strata drawn whole
    folds = assign_folds(data, 3, 1, seed=0, model=get_model("fine_gray", event_of_interest=2))[0]
    assert sorted(np.bincount(folds[status == 2], minlength=3)) == [1, 1, 2]  # events of interest dealt round-robin
