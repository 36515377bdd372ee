"""scikit-learn estimators (riskset.estimators): the same numbers as riskset.fit, the
scikit-learn protocol (clone, params, Pipeline, GridSearchCV, check_estimator), Harrell's
concordance against a brute-force count, and clear errors for bad targets."""
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest
import scipy.sparse as sp

pytest.importorskip("sklearn")

from sklearn.base import clone  # noqa: E402
from sklearn.model_selection import GridSearchCV  # noqa: E402
from sklearn.pipeline import Pipeline  # noqa: E402
from sklearn.preprocessing import StandardScaler  # noqa: E402
from sklearn.utils.estimator_checks import parametrize_with_checks  # noqa: E402

import riskset  # noqa: E402
from riskset.estimators import (CoxRegression, FineGrayRegression, LogisticRegression,  # noqa: E402
                                NotConvergedError, PoissonRegression, competing_risks_target,
                                concordance_index, survival_target)
from riskset.exceptions import InputError  # noqa: E402


def cox_data(n=120, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 3))
    time = np.round(rng.exponential(np.exp(-(0.8 * X[:, 0] - 0.5 * X[:, 1]))), 2)  # rounded: tied times
    event = rng.random(n) < 0.7
    return X, survival_target(event, time)


def brute_force_concordance(time, event, risk):
    """Harrell's C by looping over all pairs (comparable: i's event before j's time, or
    at j's censoring time)."""
    concordant = comparable = 0.0
    for i in range(len(time)):
        for j in range(len(time)):
            if event[i] and (time[i] < time[j] or (time[i] == time[j] and not event[j])):
                comparable += 1
                concordant += 1.0 if risk[i] > risk[j] else 0.5 if risk[i] == risk[j] else 0.0
    return concordant / comparable


# -- the same numbers as riskset.fit ------------------------------------------------------------
def test_cox_equals_riskset_fit():
    X, y = cox_data()
    model = CoxRegression(penalty="l2", variance=2.0, ties="efron").fit(X, y)
    data = riskset.from_arrays(X, time=y["time"], status=y["event"].astype(int))
    direct = riskset.fit(data, "cox", riskset.Normal(2.0), ties="efron")
    np.testing.assert_allclose(model.coef_, direct.coef.to_numpy(), rtol=1e-12)
    np.testing.assert_allclose(model.predict(X), direct.predict(data, "link"), rtol=1e-12)
    assert model.score(X, y) == pytest.approx(brute_force_concordance(y["time"], y["event"], model.predict(X)))
    assert model.fit_result_.model_options["ties"] == "efron" and model.n_features_in_ == 3


def competing_data(n=150, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 2))
    t_event, t_competing = rng.exponential(np.exp(-0.7 * X[:, 0]), n), rng.exponential(1.0, n)
    status = np.where(t_event < t_competing, 1, 2) * (rng.random(n) < 0.8)
    return X, competing_risks_target(status, np.round(np.minimum(t_event, t_competing), 1))


def test_fine_gray_equals_riskset_fit_and_scores_wolbers_concordance():
    X, y = competing_data()
    model = FineGrayRegression(penalty="l2", variance=5.0).fit(X, y)
    data = riskset.from_arrays(X, time=y["time"], status=y["status"])
    direct = riskset.fit(data, "fine_gray", riskset.Normal(5.0))
    np.testing.assert_allclose(model.coef_, direct.coef.to_numpy(), rtol=1e-12)
    risk = model.predict(X)
    np.testing.assert_allclose(risk, direct.predict(data, "link"), rtol=1e-12)
    t, s = y["time"], y["status"]
    concordant = comparable = 0.0  # Wolbers: a competing event stays comparable with every event of interest
    for i in np.flatnonzero(s == 1):
        later = (t[i] < t) | ((t[i] == t) & (s == 0)) | (s == 2)
        comparable += later.sum()
        concordant += np.sum(risk[i] > risk[later]) + 0.5 * np.sum(risk[i] == risk[later])
    assert model.score(X, y) == pytest.approx(concordant / comparable)
    with pytest.raises(InputError, match="status codes must be integers.*row 1 has 1.5"):
        model.fit(X[:3], np.array([[1.0, 1.0], [2.0, 1.5], [3.0, 0.0]]))


def test_logistic_equals_riskset_fit_with_labels_and_weights():
    rng = np.random.default_rng(1)
    X = rng.normal(size=(150, 2))
    labels = np.where(X[:, 0] + rng.normal(size=150) > 0, "case", "control")
    w = rng.integers(1, 4, size=150).astype(float)
    model = LogisticRegression(penalty="l1", variance=0.5).fit(X, labels, sample_weight=w)
    data = riskset.from_arrays(X, y=(labels == "control").astype(float), weights=w)
    direct = riskset.fit(data, "logistic", riskset.Laplace(variance=0.5))
    np.testing.assert_allclose(np.r_[model.intercept_, model.coef_], direct.coef.to_numpy(), rtol=1e-12)
    np.testing.assert_allclose(model.predict_proba(X)[:, 1], direct.predict(data, "probability"), rtol=1e-12)
    assert model.classes_.tolist() == ["case", "control"]
    assert model.score(X, labels) == pytest.approx(np.mean(model.predict(X) == labels))
    assert set(model.predict(X)) == {"case", "control"}


def test_poisson_equals_riskset_fit_and_scores_d2():
    rng = np.random.default_rng(2)
    X = rng.normal(size=(200, 2))
    y = rng.poisson(np.exp(0.3 + 0.6 * X[:, 0]))
    model = PoissonRegression(penalty="elasticnet", variance=1.0, l1_ratio=0.5).fit(X, y)
    data = riskset.from_arrays(X, y=y)
    direct = riskset.fit(data, "poisson", riskset.ElasticNet(gamma=1.0, variance=2.0))
    np.testing.assert_allclose(np.r_[model.intercept_, model.coef_], direct.coef.to_numpy(), rtol=1e-12)
    mu = model.predict(X)
    np.testing.assert_allclose(mu, direct.predict(data, "rate"), rtol=1e-12)

    def deviance(mean):
        return 2 * np.sum(np.where(y > 0, y * np.log(np.where(y > 0, y, 1) / mean), 0) - (y - mean))

    assert model.score(X, y) == pytest.approx(1 - deviance(mu) / deviance(np.full_like(mu, y.mean())))


def test_dataframe_names_sparse_input_and_exclude():
    X, y = cox_data(seed=3)
    frame = pd.DataFrame(X, columns=["drug", "age", "sex"])
    model = CoxRegression(penalty="l1", variance=1e-4, exclude=["drug"]).fit(frame, y)
    assert model.feature_names_in_.tolist() == ["drug", "age", "sex"]
    assert model.fit_result_.coef.index.tolist() == ["drug", "age", "sex"]
    assert model.coef_[0] > 0.3 and np.all(model.coef_[1:] == 0)  # only the excluded one escapes the strong L1
    sparse = CoxRegression(penalty="l1", variance=1e-4, exclude="x0").fit(sp.csr_matrix(X), y)
    np.testing.assert_allclose(sparse.coef_, model.coef_, rtol=1e-12)


def test_prior_parameters_map_to_riskset_priors():
    X, y = cox_data(seed=4)
    at_ends = {"l1": CoxRegression(penalty="elasticnet", variance=0.05, l1_ratio=1.0),
               "l2": CoxRegression(penalty="elasticnet", variance=0.05, l1_ratio=0.0)}
    for penalty, elastic in at_ends.items():
        plain = CoxRegression(penalty=penalty, variance=0.05).fit(X, y)
        np.testing.assert_allclose(elastic.fit(X, y).coef_, plain.coef_, rtol=1e-9, atol=1e-12)
    given = CoxRegression(prior=riskset.Laplace(gamma=3.0)).fit(X, y)
    assert given.fit_result_.prior == riskset.Laplace(gamma=3.0)
    assert CoxRegression().fit(X, y).fit_result_.prior == riskset.NoPrior()


# -- the scikit-learn protocol ---------------------------------------------------------------------
def test_params_clone_and_no_validation_in_init():
    model = CoxRegression(penalty="l1", variance=0.3, exclude=("drug",), ties="efron")
    params = model.get_params()
    assert params["penalty"] == "l1" and params["variance"] == 0.3 and params["ties"] == "efron"
    copy = clone(model)
    assert copy is not model and copy.get_params() == params
    assert copy.set_params(variance=2.0).variance == 2.0 and model.variance == 0.3
    bogus = CoxRegression(penalty="lasso")  # accepted as given; rejected at fit
    X, y = cox_data()
    with pytest.raises(InputError, match="penalty must be 'l1', 'l2', 'elasticnet' or None, not 'lasso'"):
        bogus.fit(X, y)


def test_pipeline_and_grid_search():
    X, y = cox_data(n=90, seed=5)
    pipe = Pipeline([("scale", StandardScaler()), ("cox", CoxRegression(penalty="l1"))])
    search = GridSearchCV(pipe, {"cox__variance": [0.01, 1.0]}, cv=3).fit(X * 10 + 3, y)
    assert search.best_params_["cox__variance"] in (0.01, 1.0)
    assert np.all(np.isfinite(search.cv_results_["mean_test_score"]))
    assert 0.5 < search.score(X * 10 + 3, y) <= 1.0

    rng = np.random.default_rng(6)
    Xl = rng.normal(size=(90, 2))
    yl = (Xl[:, 0] + rng.normal(size=90) > 0).astype(int)
    grid = GridSearchCV(LogisticRegression(penalty="l2"), {"variance": [0.1, 10.0]}, cv=3).fit(Xl, yl)
    assert grid.best_estimator_.variance in (0.1, 10.0)


@pytest.mark.filterwarnings("ignore:invalid value encountered in cast:RuntimeWarning")  # sklearn's NaN-target check
@parametrize_with_checks([LogisticRegression(penalty="l2"), PoissonRegression(penalty="l2")])
def test_sklearn_check_estimator(estimator, check):
    check(estimator)


def test_import_riskset_does_not_import_sklearn():
    code = "import sys, riskset; assert 'sklearn' not in sys.modules; print(riskset.estimators.CoxRegression.__name__)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "CoxRegression"


# -- concordance ------------------------------------------------------------------------------
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_concordance_equals_brute_force_with_ties(seed):
    rng = np.random.default_rng(seed)
    n = 60
    time = rng.integers(1, 8, n).astype(float)  # many tied times
    event = rng.random(n) < 0.5
    risk = rng.integers(0, 5, n).astype(float)  # many tied risks
    assert concordance_index(time, event, risk) == pytest.approx(brute_force_concordance(time, event, risk))


def test_concordance_without_comparable_pairs_is_an_error():
    with pytest.raises(InputError, match="no comparable pairs"):
        concordance_index([1.0, 2.0], [0, 0], [0.3, 0.1])


# -- errors that name the problem ----------------------------------------------------------------------
def test_survival_targets_accepted_forms():
    X, y = cox_data(seed=7)
    reference = CoxRegression().fit(X, y).coef_
    two_columns = np.column_stack([y["time"], y["event"]])
    frame = pd.DataFrame({"time": y["time"], "event": y["event"].astype(int)})
    sksurv_like = np.array(list(zip(y["event"], y["time"])), dtype=[("Status", "?"), ("Survival_in_days", "<f8")])
    for target in (two_columns, frame, sksurv_like):
        np.testing.assert_allclose(CoxRegression().fit(X, target).coef_, reference, rtol=1e-12)


@pytest.mark.parametrize("target, message", [
    (np.arange(5.0), r"y must be a survival target.*shape \(5,\)"),
    (np.zeros(5, dtype=[("event", "<i8"), ("time", "<f8")]), "one boolean event field.*'event' \\(int64\\)"),
    (np.column_stack([np.ones(5), [1, 0, 2, 1, 0]]), "event indicator must be 0/1.*row 2 has 2$"),
    (np.column_stack([[1, 2, np.nan, 4, 5], np.ones(5)]), r"time \(column 0 of y\) is not finite \(nan\) at row 2"),
])
def test_bad_survival_targets(target, message):
    X = np.random.default_rng(8).normal(size=(5, 2))
    with pytest.raises(InputError, match=message):
        CoxRegression().fit(X, target)


def test_bad_inputs_name_the_problem():
    rng = np.random.default_rng(9)
    X = pd.DataFrame({"age": rng.normal(size=6), "bmi": rng.normal(size=6)})
    y = np.array([0, 1, 0, 1, 1, 0])
    X.loc[3, "bmi"] = np.nan
    with pytest.raises(InputError, match="covariate 'bmi' is NaN at row 3 of X"):
        LogisticRegression().fit(X, y)
    with pytest.raises(InputError, match="column 'sex' of X is not numeric"):
        LogisticRegression().fit(X.assign(sex=list("fmfmfm")), y)
    with pytest.raises(InputError, match="Only binary classification is supported: y has 3 classes"):
        LogisticRegression().fit(X.fillna(0), [0, 1, 2, 0, 1, 2])
    with pytest.raises(InputError, match="sample_weight has 2 values for 6 rows"):
        LogisticRegression().fit(X.fillna(0), y, sample_weight=[1.0, 2.0])
    with pytest.raises(InputError, match="X has a column named 'intercept'"):
        LogisticRegression().fit(X.fillna(0).rename(columns={"age": "intercept"}), y)
    with pytest.raises(InputError, match="give either prior= or penalty="):
        LogisticRegression(penalty="l2", prior=riskset.Normal(1.0)).fit(X.fillna(0), y)
    with pytest.raises(InputError, match="variance must be a positive finite number, got -1"):
        LogisticRegression(penalty="l2", variance=-1).fit(X.fillna(0), y)
    with pytest.raises(InputError, match="l1_ratio must be a number, got 'half'"):
        LogisticRegression(penalty="elasticnet", l1_ratio="half").fit(X.fillna(0), y)


def test_not_converged_raises_with_the_fit():
    X = np.array([[-2.0], [-1.0], [1.0], [2.0]])
    y = np.array([0, 0, 1, 1])  # perfectly separated: the maximum likelihood estimate does not exist
    with pytest.warns(riskset.ConvergenceWarning), pytest.raises(NotConvergedError, match="separates") as err:
        LogisticRegression().fit(X, y)
    assert not err.value.fit_result.converged
    assert LogisticRegression(penalty="l2").fit(X, y).n_iter_ > 0
