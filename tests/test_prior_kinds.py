"""A kind of separable prior is one class (riskset.solver.prior_kinds): declared, it fits,
prints and serializes with no edit elsewhere."""
import numpy as np
import pytest

import riskset
from riskset.solver.prior import Prior
from riskset.solver.prior_kinds import KINDS, PriorKind


@pytest.fixture
def half_laplace():
    """An L1 prior whose rate is half its gamma (a toy kind, removed after the test)."""

    class HalfLaplace(PriorKind):
        name = "test_half_laplace"
        constructor = "HalfLaplace"
        strength_fields = ("gamma",)
        varied = "gamma"
        path_from_gamma_max = True

        def rates(self, gamma, variance):
            return gamma / 2.0, 0.0

        def override(self, l1, l2, j, variance):
            l1[j] = np.sqrt(2.0 / variance)

        def strength_of_variance(self, variance):
            return 2.0 * float(np.sqrt(2.0 / variance))

    yield HalfLaplace
    del KINDS["test_half_laplace"]


def test_a_declared_kind_fits_as_the_prior_it_equals(half_laplace):
    data = riskset.simulate(n=400, p=6, model="logistic", density=0.5, seed=3)
    new = riskset.fit(data, "logistic", Prior("test_half_laplace", gamma=6.0, exclude=["x0"]))
    same = riskset.fit(data, "logistic", riskset.Laplace(gamma=3.0, exclude=["x0"]))
    np.testing.assert_array_equal(new.coef.to_numpy(), same.coef.to_numpy())
    assert repr(new.prior) == "HalfLaplace(gamma=6, exclude=['x0'])"
    assert Prior.from_dict(new.prior.to_dict()) == new.prior


def test_a_declared_kind_is_varied_by_its_variance(half_laplace):
    prior = Prior("test_half_laplace", gamma=None)
    assert prior.is_varied and not prior.strength_is_set
    assert prior.with_variance(2.0).penalty_arrays(["a"])[0].tolist() == riskset.Laplace(variance=2.0).penalty_arrays(
        ["a"])[0].tolist()


def test_an_unknown_kind_is_refused():
    with pytest.raises(riskset.InputError, match="test_unknown"):
        Prior("test_unknown", gamma=1.0)
