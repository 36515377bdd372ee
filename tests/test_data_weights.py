"""``Datafit.data_weights()``: every family reports its case weights in Dataset row order,
the order ``reweighted`` takes them (the points of a profile likelihood on the device are
replicates with these weights)."""
import dataclasses
import warnings

import numpy as np
import pytest
import scipy.sparse as sp

import riskset
from riskset.core.interface import Datafit
from riskset.data.dataset import Dataset
from riskset.models.base import get_model
from riskset.models.pooled_logistic import PooledLogistic

from helpers import BareDatafit


def _weights(n, seed=2):
    return np.random.default_rng(seed).integers(1, 4, n).astype(float)


def _glm(model):
    data = riskset.simulate(n=30, p=3, model=model, density=0.5, seed=1)
    return data, get_model(model), np.arange(data.n_rows)


def _cox(**options):
    """Strata 0 and 2 without events: their rows (the last rows among them) are dropped."""
    data = riskset.simulate(n=30, p=3, model="cox", density=0.5, seed=1)
    strata = np.repeat([1, 0, 3, 2], [12, 4, 10, 4])
    status = np.where(np.isin(strata, [0, 2]), 0, np.asarray(data.status))
    status[:2] = 1
    data = dataclasses.replace(data, strata=strata, status=status, start=np.zeros(30))
    return data, get_model("cox", **options), np.flatnonzero(np.isin(strata, [1, 3]))


def _fine_gray():
    data = riskset.simulate(n=30, p=3, model="cox", density=0.5, seed=1)
    status = np.asarray(data.status).copy()
    status[::4] = 2 * (status[::4] > 0)
    return dataclasses.replace(data, status=status), get_model("fine_gray"), np.arange(30)


def _conditional(model, **options):
    """Six strata of five rows; stratum 5 (the last rows) has no case and is dropped."""
    rng = np.random.default_rng(4)
    strata = np.repeat(np.arange(6), 5)
    y = np.zeros(30)
    y[[0, 6, 7, 12, 18, 21]] = 1.0
    data = Dataset(X=sp.csc_matrix(rng.normal(size=(30, 2))), covariate_names=["a", "b"], row_ids=np.arange(30),
                   y=y, strata=strata, offset=np.log(rng.uniform(1, 5, 30)))
    return data, get_model(model, **options), np.arange(25)


def _pooled():
    """Subject 3 has follow-up time 0 and is dropped."""
    data = riskset.simulate(n=30, p=3, model="cox", density=0.5, seed=1)
    time = np.asarray(data.time, float).copy()
    time[3] = 0.0
    return dataclasses.replace(data, time=time), PooledLogistic(0.5), np.delete(np.arange(30), 3)


FAMILIES = {
    "logistic": lambda: _glm("logistic"), "poisson": lambda: _glm("poisson"),
    "least_squares": lambda: _glm("least_squares"),
    "cox": _cox, "cox_efron": lambda: _cox(ties="efron"),
    "cox_time_varying": lambda: _cox(time_varying={"x0": [0.5]}),
    "fine_gray": _fine_gray,
    "conditional_poisson": lambda: _conditional("conditional_poisson"),
    "sccs": lambda: _conditional("sccs"),
    "conditional_logistic": lambda: _conditional("conditional_logistic", ties="exact"),
    "pooled_logistic": _pooled,
}


def _prepare(family):
    """(datafit of the data with case weights, those weights, the Dataset rows it keeps)."""
    data, model, kept = FAMILIES[family]()
    unit = data.strata if family.startswith(("conditional", "sccs")) else np.arange(data.n_rows)
    weights = _weights(int(np.max(unit)) + 1)[unit]  # constant within a stratum for the conditional models
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        df = model.datafit(dataclasses.replace(data, weights=weights))
    return df, weights, kept


@pytest.mark.parametrize("family", list(FAMILIES))
def test_data_weights_are_the_case_weights_in_dataset_order(family):
    df, weights, kept = _prepare(family)
    w = df.data_weights()
    np.testing.assert_array_equal(w[kept], weights[kept])
    dropped = np.setdiff1d(np.arange(w.shape[0]), kept)
    np.testing.assert_array_equal(w[dropped], 0.0)
    assert w.shape[0] == kept.max() + 1


@pytest.mark.parametrize("family", [f for f in FAMILIES if f != "pooled_logistic"])
def test_reweighting_by_data_weights_gives_the_same_datafit(family):
    df, _, _ = _prepare(family)
    same = df.reweighted(df.data_weights())
    beta = np.linspace(0.3, -0.2, df.n_coef)
    s0, s1 = df.new_state(beta), same.new_state(beta)
    assert same.loglik(s1) == pytest.approx(df.loglik(s0), rel=1e-14)
    np.testing.assert_allclose(same.gradient(s1), df.gradient(s0), rtol=1e-13, atol=1e-13)


def test_a_family_without_weights_says_so():
    """Case weights are part of the required core: a family without them cannot be built."""

    class NoWeights(BareDatafit):
        data_weights = Datafit.data_weights

    with pytest.raises(TypeError, match="NoWeights.*data_weights"):
        NoWeights(sp.csc_matrix(np.eye(2)))
