"""Pooled logistic never hangs: its cost does not grow with the number of intervals when it
need not, and work that would is refused up front with the numbers (issue #13, item 5).

Nothing here is timed (a timing depends on the machine's load and on compiling the kernels):
what makes a fit's cost independent of the number of intervals is asserted instead (the
closed form per subject, arrays of the subjects' size, the memory a refusal allocates), under
a guard that fails a true hang (before the fix the first two ran for minutes).
"""
import tracemalloc

import numpy as np
import pytest
import scipy.sparse as sp

import riskset
from helpers import hang_guard
from riskset.data.dataset import Dataset
from riskset.exceptions import DataWarning, InputError
from riskset.models import pooled_logistic
from riskset.models.glm import LogisticRegression
from riskset.models.pooled_logistic import PooledLogistic, person_period_table


def cohort(times, status, x=None):
    n = len(times)
    x = np.zeros(n) if x is None else np.asarray(x, dtype=float)
    return Dataset(X=sp.csc_matrix(x.reshape(-1, 1)), covariate_names=["x"], row_ids=np.arange(n),
                   time=np.asarray(times, dtype=float), status=np.asarray(status, dtype=float))


def fit_in_subject_time(data, model):
    """The fit, after asserting that its cost is O(subjects), whatever the intervals: each
    subject's sums are K_i times one term (one time function: the intercept), and no kernel
    array is longer than the design's rows and non-zeros."""
    datafit = model.datafit(data)
    assert datafit.nf == 1, "a time effect would sum over every interval"
    longest = max(a.size for a in datafit.kernel_data() if isinstance(a, np.ndarray))
    assert longest <= max(data.n_rows, data.X.nnz) + 1
    with hang_guard():
        return riskset.fit(data, model)


def test_one_time_of_1e9_with_unit_width_fits_at_once():
    # 1e9 + 9 person-intervals, 3 events: the constant hazard's MLE is logit(events / person-intervals)
    data = cohort([1e9, 2.0, 3.0, 4.0], [0, 1, 1, 1], x=[0, 1, 0, 1])
    fit = fit_in_subject_time(data.select([]), PooledLogistic(1.0))
    assert fit.converged
    p = 3 / (1e9 + 9)
    assert fit.coef["intercept"] == pytest.approx(np.log(p / (1 - p)), rel=1e-9)


def test_tiny_width_costs_the_same_as_a_wide_one():
    rng = np.random.default_rng(3)
    t = rng.exponential(100, 50) + 1
    data = cohort(t, rng.random(50) < 0.7, x=rng.integers(0, 2, 50))
    fit = fit_in_subject_time(data, PooledLogistic(1e-6))  # about 5e9 person-intervals
    assert fit.converged and np.all(np.isfinite(fit.coef))


def test_closed_form_equals_materialized_logistic():
    # without time effects the per-subject sums are K_i times one term: same fit as the person-period table
    rng = np.random.default_rng(4)
    n = 60
    data = cohort(rng.exponential(8, n) + 0.3, rng.random(n) < 0.6, x=rng.normal(size=n))
    fit = riskset.fit(data, PooledLogistic(1.5))
    subject, _, y = person_period_table(data, 1.5)
    rows = Dataset(X=sp.csc_matrix(data.X.toarray()[subject]), covariate_names=["x"],
                   row_ids=np.arange(len(y)), y=y)
    ref = riskset.fit(rows, LogisticRegression())
    np.testing.assert_allclose(fit.coef.to_numpy(), ref.coef.to_numpy(), rtol=1e-8)
    assert fit.loglik == pytest.approx(ref.loglik, rel=1e-10)


@pytest.mark.parametrize("times, width, numbers", [
    ([1e9, 2.0, 3.0], 1.0, ["1e+09 person-intervals", "largest time 1e+09 -> 1e+09 intervals", "limit is 1e+07"]),
    ([50.0, 80.0, 100.0], 1e-6, ["2.3e+08 person-intervals", "1e+08 intervals", "limit is 1e+07"]),
    ([9e6] * 12, 1.0, ["1.08e+08 person-intervals", "max_person_intervals=1e+08"]),
])
def test_time_effects_over_too_many_intervals_are_refused_with_the_numbers(times, width, numbers):
    data = cohort(times, np.arange(len(times)) % 2)
    tracemalloc.start()
    try:
        with pytest.raises(InputError, match="use a wider interval_width") as err:
            riskset.fit(data, PooledLogistic(width, {"intercept": "linear"}))
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 2**20, f"refused after allocating {peak} bytes: the intervals were built first"
    for number in numbers:
        assert number in str(err.value)


def test_person_interval_limit_is_an_option_and_slow_fits_warn(monkeypatch):
    data = cohort([40.0, 40.0, 40.0], [1, 0, 1])  # 120 person-intervals
    with pytest.raises(InputError, match="120 person-intervals.*max_person_intervals=100"):
        PooledLogistic(1.0, {"intercept": "log"}, max_person_intervals=100).datafit(data)
    PooledLogistic(1.0, max_person_intervals=100).datafit(data)  # without time effects the count does not matter
    for bad in ("lots", 0, float("nan")):
        with pytest.raises(InputError, match="max_person_intervals must be"):
            PooledLogistic(1.0, max_person_intervals=bad)
    monkeypatch.setattr(pooled_logistic, "SLOW_PERSON_INTERVALS", 100)
    with pytest.warns(DataWarning, match="120 person-intervals.*may take minutes"):
        PooledLogistic(1.0, {"intercept": "log"}).datafit(data)


def test_times_huge_relative_to_the_width_are_refused():
    with pytest.raises(InputError, match="time 1e\\+300 .* more than can be counted.*wider interval_width"):
        riskset.fit(cohort([1e300, 2.0], [1, 1]), PooledLogistic(1.0))


def test_prediction_over_too_many_intervals_is_refused():
    data = cohort([1e9, 2.0, 3.0, 4.0], [0, 1, 1, 1])
    fit = riskset.fit(data.select([]), PooledLogistic(1.0))
    with pytest.raises(InputError, match="smaller n_intervals"):
        fit.predict(data.select([]), "hazard")
    assert PooledLogistic(1.0, horizon=5).hazard(fit, data.select([])).shape == (4, 5)
