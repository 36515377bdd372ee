"""Ill-posed inputs (issue #13): every bad argument is an InputError naming the argument
and the value; roles are never taken from a column name by surprise; predictions check
covariate names; integer covariate ids name coefficients; corrupt Parquet is refused."""
import json
import re
import warnings

import numpy as np
import pandas as pd
import pyarrow.parquet as pq
import pytest

import riskset
from riskset.api import _align_start
from riskset.data.export import write_parquet
from riskset.exceptions import DataWarning, InputError
from riskset.results import FitResult


@pytest.fixture(scope="module")
def logistic_data():
    return riskset.simulate(n=300, p=4, density=0.5, model="logistic", seed=3)


@pytest.fixture(scope="module")
def cox_data():
    return riskset.simulate(n=300, p=3, density=0.5, model="cox", seed=4)


def long_tables(n=200, seed=0):
    """OHDSI-style outcomes (with a body-weight column called 'weight' and strata) and
    covariates with integer ids 1000 and 2000."""
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n, 2))
    y = (rng.random(n) < 1 / (1 + np.exp(-(0.8 * x[:, 0] - 0.5 * x[:, 1])))).astype(int)
    out = pd.DataFrame({"row_id": np.arange(n), "y": y, "time": rng.exponential(size=n) + 0.01, "status": y,
                        "stratum_id": np.arange(n) % 5, "weight": rng.uniform(40, 120, n)})
    cov = pd.DataFrame({"row_id": np.repeat(np.arange(n), 2), "covariate_id": np.tile([1000, 2000], n),
                        "value": x.ravel()})
    return out, cov


def quiet(call):
    """``call()`` with riskset's data warnings silenced."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DataWarning)
        return call()


def sccs_tables():
    obs = pd.DataFrame({"person_id": [1, 2], "start": [0, 0], "end": [100, 100]})
    exp = pd.DataFrame({"person_id": [1], "drug": ["a"], "start": [10], "end": [30]})
    out = pd.DataFrame({"person_id": [1, 1], "date": [15, 50]})
    return obs, exp, out


# -- 8. arguments checked at the door ---------------------------------------------------------
# (id, call taking the fixtures' data, texts the message must contain: the argument and the value)
BAD_ARGUMENTS = [
    ("tol zero", lambda d, c: riskset.fit(d, "logistic", tol=0), ["tol", "0"]),
    ("tol negative", lambda d, c: riskset.fit(d, "logistic", tol=-1e-8), ["tol", "-1e-08"]),
    ("max_iter zero", lambda d, c: riskset.fit(d, "logistic", max_iter=0), ["max_iter", "0"]),
    ("max_iter float", lambda d, c: riskset.fit(d, "logistic", max_iter=2.5), ["max_iter", "2.5"]),
    ("level", lambda d, c: riskset.fit(d, "logistic", profile=["x0"], level=1.5), ["level", "1.5"]),
    ("backend", lambda d, c: riskset.fit(d, "logistic", backend="tpu"), ["backend", "'tpu'"]),
    ("dtype", lambda d, c: riskset.fit(d, "logistic", dtype="float16"), ["dtype", "'float16'"]),
    ("n_jobs", lambda d, c: riskset.fit(d, "logistic", n_jobs=0), ["n_jobs", "0"]),
    ("prior string", lambda d, c: riskset.fit(d, "logistic", "laplace"), ["prior", "'laplace'"]),
    ("data not a Dataset", lambda d, c: riskset.fit(pd.DataFrame({"y": [0, 1]}), "logistic"),
     ["data", "DataFrame"]),
    ("unknown model", lambda d, c: riskset.fit(d, "logit"), ["model", "'logit'", "logistic"]),
    ("unknown option", lambda d, c: riskset.fit(d, "cox", tie="efron"), ["'tie'", "ties"]),
    ("option with instance", lambda d, c: riskset.fit(d, riskset.models.base.get_model("cox"), ties="efron"),
     ["'ties'", "instance"]),
    ("ties value", lambda d, c: riskset.fit(c, "cox", ties="exact"), ["ties", "'exact'"]),
    ("conditional ties", lambda d, c: riskset.models.base.get_model("conditional_logistic", ties="approx"),
     ["ties", "'approx'"]),
    ("fine_gray codes", lambda d, c: riskset.models.base.get_model("fine_gray", event_of_interest=0),
     ["event_of_interest", "censor_code"]),
    ("profile unknown", lambda d, c: riskset.fit(d, "logistic", profile=["age"]), ["profile", "'age'"]),
    ("warm_start unknown", lambda d, c: riskset.fit(d, "logistic", warm_start={"age": 1.0}),
     ["warm_start", "'age'"]),
    ("warm_start NaN", lambda d, c: riskset.fit(d, "logistic", warm_start={"x0": np.nan}),
     ["warm_start['x0']", "nan"]),
    ("time_varying negative cut", lambda d, c: riskset.fit(c, "cox", time_varying={"x0": [5, -3]}),
     ["time_varying['x0']", "-3"]),
    ("time_varying unsorted", lambda d, c: riskset.fit(c, "cox", time_varying={"x0": [0.5, 0.2]}),
     ["time_varying['x0']", "0.5, 0.2"]),
    ("time_varying NaN", lambda d, c: riskset.fit(c, "cox", time_varying={"x0": [np.nan]}),
     ["time_varying['x0']", "nan"]),
    ("bootstrap n_boot 0", lambda d, c: riskset.bootstrap(d, "logistic", n_boot=0, progress=False),
     ["n_boot", "0"]),
    ("bootstrap n_boot -5", lambda d, c: riskset.bootstrap(d, "logistic", n_boot=-5, progress=False),
     ["n_boot", "-5"]),
    ("bootstrap seed", lambda d, c: riskset.bootstrap(d, "logistic", n_boot=2, seed=-1, progress=False),
     ["seed", "-1"]),
    ("bootstrap level", lambda d, c: riskset.bootstrap(d, "logistic", n_boot=2, level=0, progress=False),
     ["level", "0"]),
    ("cv n_folds", lambda d, c: riskset.cross_validate(d, "logistic", riskset.Laplace(1.0), n_folds=1),
     ["n_folds", "1"]),
    ("cv n_repeats", lambda d, c: riskset.cross_validate(d, "logistic", riskset.Laplace(1.0), n_repeats=0),
     ["n_repeats", "0"]),
    ("cv early_stop", lambda d, c: riskset.cross_validate(d, "logistic", riskset.Laplace(1.0), early_stop=0),
     ["early_stop", "0"]),
    ("cv prior none", lambda d, c: riskset.cross_validate(d, "logistic", riskset.NoPrior()),
     ["prior", "'none'"]),
    ("path variances", lambda d, c: riskset.regularization_path(d, "logistic", riskset.Laplace(1.0),
                                                                variances=[1.0, -2.0], progress=False),
     ["variances", "-2.0"]),
    ("path n_grid", lambda d, c: riskset.regularization_path(d, "logistic", riskset.Laplace(1.0), n_grid=0,
                                                             progress=False), ["n_grid", "0"]),
    ("predict kind", lambda d, c: quiet(lambda: riskset.fit(d, "logistic")).predict(d, kind="prob"),
     ["kind", "'prob'"]),
    ("cox predict kind", lambda d, c: quiet(lambda: riskset.fit(c, "cox")).predict(c, kind="survival"),
     ["kind", "'survival'"]),
]


@pytest.mark.parametrize("call, texts", [case[1:] for case in BAD_ARGUMENTS], ids=[c[0] for c in BAD_ARGUMENTS])
def test_bad_argument_is_an_input_error_naming_it(logistic_data, cox_data, call, texts):
    with pytest.raises(InputError) as err:
        call(logistic_data, cox_data)
    for text in texts:
        assert text in str(err.value)


BAD_PRIORS = [
    ("gamma negative", lambda: riskset.Laplace(gamma=-1.0), ["gamma", "-1.0"]),
    ("gamma infinite", lambda: riskset.Laplace(gamma=np.inf), ["gamma", "inf"]),
    ("gamma string", lambda: riskset.Laplace(gamma="1"), ["gamma", "'1'"]),
    ("laplace variance", lambda: riskset.Laplace(variance=-1.0), ["variance", "-1.0"]),
    ("laplace both", lambda: riskset.Laplace(gamma=1.0, variance=1.0), ["gamma=1.0", "variance=1.0"]),
    ("normal variance zero", lambda: riskset.Normal(variance=0.0), ["variance", "0.0"]),
    ("normal variance NaN", lambda: riskset.Normal(variance=np.nan), ["variance", "nan"]),
    ("elastic net variance", lambda: riskset.ElasticNet(1.0, -2.0), ["variance", "-2.0"]),
    ("per-coefficient variance", lambda: riskset.Normal(1.0, variances={"x0": -1.0}), ["variances['x0']", "-1.0"]),
    ("exclude float", lambda: riskset.Laplace(1.0, exclude=[1.5]), ["exclude", "1.5"]),
]


@pytest.mark.parametrize("make, texts", [case[1:] for case in BAD_PRIORS], ids=[c[0] for c in BAD_PRIORS])
def test_bad_prior_is_an_input_error_naming_it(make, texts):
    with pytest.raises(InputError) as err:
        make()
    for text in texts:
        assert text in str(err.value)


def test_prior_naming_an_unknown_coefficient(logistic_data):
    with pytest.raises(InputError, match="exclude names unknown coefficient.*'age'"):
        riskset.fit(logistic_data, "logistic", riskset.Laplace(1.0, exclude=["age"]))


def test_exclude_as_a_single_name_is_not_split_into_letters(logistic_data):
    prior = riskset.Laplace(1.0, exclude="x0")
    assert prior.exclude == ("x0",)


BAD_SCCS = [
    ("window end before start", dict(risk_window_start=0, risk_window_end=-5, risk_window_anchor="start"),
     ["risk_window_end", "-5", "risk_window_start"]),
    ("window anchor", dict(risk_window_anchor="middle"), ["risk_window_anchor", "'middle'"]),
    ("window start NaN", dict(risk_window_start=np.nan), ["risk_window_start", "nan"]),
    ("every window empty", dict(risk_window_start=0, risk_window_end=-40), ["every risk window is empty"]),
    ("age cuts", dict(age_cuts=[10, np.inf]), ["age_cuts", "inf"]),
]


@pytest.mark.parametrize("kwargs, texts", [case[1:] for case in BAD_SCCS], ids=[c[0] for c in BAD_SCCS])
def test_bad_sccs_risk_window_is_an_input_error(kwargs, texts):
    with pytest.raises(InputError) as err:
        riskset.build_sccs(*sccs_tables(), **kwargs)
    for text in texts:
        assert text in str(err.value)


def test_sccs_windows_empty_for_short_exposures_are_named_not_dropped_silently():
    """Anchored on the exposure end, [start + 10, end - 5) is empty for exposures of 15 days or
    less: they are left out with one warning naming the count, the window and the first one."""
    obs, exp, out = sccs_tables()
    exp = pd.DataFrame({"person_id": [1, 1], "drug": ["a", "a"], "start": [10, 50], "end": [30, 60]})
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        data = riskset.build_sccs(obs, exp, out, risk_window_start=10, risk_window_end=-5)
    assert [str(w.message) for w in caught] == [
        "sccs: 1 of 2 exposure(s) have an empty risk window [exposure start + 10, exposure end + -5) and are left "
        "out: they last 15 or less (first at row 1: start 50, end 60)"]
    assert data.meta["eras"][["start", "end"]].values.tolist() == [[0, 20], [20, 25], [25, 100]]


def test_sccs_one_day_window_from_the_exposure_start_with_inclusive_ends():
    """With inclusive ends, risk_window_end == risk_window_start is the one day of the start (refused
    without them: an empty window)."""
    data = riskset.build_sccs(*sccs_tables(), risk_window_start=5, risk_window_end=5, risk_window_anchor="start",
                              inclusive_end=True)
    assert data.meta["eras"][["start", "end"]].values.tolist() == [[0, 15], [15, 16], [16, 101]]
    with pytest.raises(InputError, match=r"risk_window_end \(5\) is not after risk_window_start \(5\)"):
        riskset.build_sccs(*sccs_tables(), risk_window_start=5, risk_window_end=5, risk_window_anchor="start")


def test_text_in_a_value_column_names_the_column_and_row():
    out, cov = long_tables(n=10)
    cov["value"] = cov["value"].astype(object)
    cov.loc[5, "value"] = "abc"
    with pytest.raises(InputError, match=r"column 'value' .*'abc' at row_id 2"):
        quiet(lambda: riskset.from_long(out, cov))


def test_text_in_an_outcome_column_names_the_column_and_row():
    out, cov = long_tables(n=10)
    out["y"] = out["y"].astype(object)
    out.loc[3, "y"] = "abc"
    with pytest.raises(InputError, match=r"column 'y' is not numeric .*'abc' at row 3"):
        quiet(lambda: riskset.from_long(out, cov))


def test_failing_duckdb_query_names_itself(tmp_path):
    import duckdb

    db = str(tmp_path / "cohort.duckdb")
    duckdb.connect(db).close()
    with pytest.raises(InputError, match="outcomes_sql failed: 'SELECT \\* FROM outcomes'"):
        riskset.from_duckdb(db, "SELECT * FROM outcomes", "SELECT * FROM covariates")


def test_coef_table_level(logistic_data):
    with pytest.raises(InputError, match="level .* got 95"):
        riskset.fit(logistic_data, "logistic").coef_table(level=95)


def test_from_arrays_checks_shapes_and_types():
    with pytest.raises(InputError, match="y must be a vector of 3 values"):
        riskset.from_arrays(np.eye(3), y=[0, 1])
    with pytest.raises(InputError, match="X must be a numeric matrix"):
        riskset.from_arrays([["a", "b"]], y=[0])


@pytest.mark.parametrize("text, match", [
    ("not json at all", "is not JSON"),
    ('{"model": "logistic"}', "is not a saved riskset fit"),
])
def test_from_json_on_a_file_that_is_not_a_fit(tmp_path, text, match):
    path = tmp_path / "fit.json"
    path.write_text(text)
    with pytest.raises(InputError, match=f"{re.escape(repr(str(path)))} {match}"):
        FitResult.from_json(path)


# -- 7. integer covariate ids name coefficients -----------------------------------------------
def test_integer_covariate_ids_name_coefficients():
    out, cov = long_tables()
    data = quiet(lambda: riskset.from_long(out, cov))
    assert data.covariate_names == ["1000", "2000"]
    by_str = riskset.fit(data, "logistic", riskset.Laplace(3.0, exclude=["1000"]), profile=["1000"])
    by_int = riskset.fit(data, "logistic", riskset.Laplace(3.0, exclude=[1000]), profile=[np.int64(1000)])
    pd.testing.assert_series_equal(by_int.coef, by_str.coef)
    assert by_int.coef["1000"] != 0 and list(by_int.intervals["name"]) == ["1000"]
    normal = riskset.fit(data, "logistic", riskset.Normal(1.0, variances={2000: 1e-6}))
    assert abs(normal.coef["2000"]) < 1e-3
    assert _align_start({1000: 0.5, np.int32(2000): -0.3}, ["intercept", "1000", "2000"]).tolist() == [0, 0.5, -0.3]
    assert data.select([2000]).covariate_names == ["2000"]
    cox = quiet(lambda: riskset.fit(data, "cox", time_varying={1000: [0.5]}))
    assert {"1000(0,0.5]", "1000(0.5,inf)"} <= set(cox.coef.index)
    pooled = quiet(lambda: riskset.fit(data, "pooled_logistic", interval_width=0.5, time_effects={1000: "linear"}))
    assert "1000:t" in pooled.coef.index  # the linear time effect of covariate 1000


# -- 4. roles only when asked for, and reported ------------------------------------------------
def test_a_weight_column_is_not_used_unless_asked_for():
    out, cov = long_tables()
    with pytest.warns(DataWarning, match=r"column 'weight' that is NOT used as case weights.*weights='weight'"):
        plain = riskset.from_long(out, cov)
    assert plain.weights is None
    weighted = riskset.from_long(out, cov, weights="weight")
    assert np.allclose(weighted.weights, out["weight"])
    a, b = riskset.fit(plain, "logistic"), riskset.fit(weighted, "logistic")
    assert b.se["1000"] < a.se["1000"] / 5  # body weights as case weights: the SE shrinks
    assert a.roles == {"strata": "stratum_id", "n_strata": 5, "strata_ignored_by": "logistic"}
    assert "strata 'stratum_id' (5) NOT used by the logistic model" in a.summary()
    assert b.roles["weights"] == "weight"
    assert "weighted by 'weight'" in b.summary() and "weighted" not in a.summary().split("\n")[2].replace(
        "unweighted", "")
    assert b.coef_table().attrs["roles"]["weights"] == "weight"
    assert FitResult.from_json(b.to_json()).roles == b.roles


def test_offset_column_is_explicit_and_reported():
    out, cov = long_tables()
    out = out.drop(columns="weight").assign(offset=0.5)
    with pytest.warns(DataWarning, match="column 'offset' that is NOT used as offset"):
        assert riskset.from_long(out, cov).offset is None
    data = riskset.from_long(out, cov, offset="offset")
    cox = riskset.fit(data, "cox")
    assert cox.roles == {"strata": "stratum_id", "n_strata": 5, "offset": "offset"}
    assert "stratified by 'stratum_id' (5 strata), offset 'offset'" in cox.summary()
    assert json.loads(cox.to_json())["roles"]["n_strata"] == 5
    with pytest.raises(InputError, match="no column for weights='w'"):
        riskset.from_long(out, cov, weights="w", offset="offset")


def test_unweighted_fit_says_so(logistic_data):
    fit = riskset.fit(logistic_data, "logistic")
    assert fit.roles == {} and "roles: unweighted, unstratified, no offset" in fit.summary()


# -- 6. predictions check covariate names ------------------------------------------------------
def test_predict_on_data_with_other_covariate_names_is_an_error(logistic_data):
    fit = riskset.fit(logistic_data, "logistic")
    renamed = riskset.from_arrays(logistic_data.X, covariate_names=["a", "b", "c", "d"])
    with pytest.raises(InputError, match=r"none of the fit's covariates is in the data.*'x0'.*'a'"):
        fit.predict(renamed, "probability")


def test_predict_warns_about_unknown_and_missing_covariates(logistic_data):
    fit = riskset.fit(logistic_data, "logistic")
    X = logistic_data.X.tocsc()
    part = riskset.from_arrays(X[:, [0, 1, 2]], covariate_names=["x0", "x1", "age"])
    with pytest.warns(DataWarning) as record:
        eta = fit.predict(part, "link")
    messages = " ".join(str(w.message) for w in record)
    assert "not in the fit and are ignored: 'age'" in messages
    assert "taken as 0 for every row: 'x2', 'x3'" in messages
    expected = fit.coef["intercept"] + X[:, [0, 1]] @ fit.coef[["x0", "x1"]].to_numpy()
    assert np.allclose(eta, expected)


def test_cox_predict_checks_covariate_names(cox_data):
    fit = riskset.fit(cox_data, "cox")
    renamed = riskset.from_arrays(cox_data.X, covariate_names=["a", "b", "c"], time=cox_data.time)
    with pytest.raises(InputError, match="none of the fit's covariates"):
        fit.predict(renamed)
    with pytest.raises(InputError, match="none of the fit's covariates"):
        riskset.predict_survival(fit, cox_data, [0.5], newdata=renamed)


# -- 11. Parquet checksums ---------------------------------------------------------------------
def test_corrupt_parquet_page_is_refused(tmp_path):
    data = riskset.simulate(n=2000, p=5, density=0.5, model="cox", seed=5)
    paths = write_parquet(data, str(tmp_path))
    assert np.array_equal(quiet(lambda: riskset.from_long(*paths)).time, data.time)  # intact: reads
    time = pq.ParquetFile(paths[0]).metadata.row_group(0).column(1)
    assert time.path_in_schema == "time"
    raw = bytearray(open(paths[0], "rb").read())
    raw[time.dictionary_page_offset + time.total_compressed_size - 100] ^= 0x10  # inside the data page
    open(paths[0], "wb").write(bytes(raw))
    unverified = pq.read_table(paths[0]).column("time").to_numpy()
    assert not np.array_equal(unverified, data.time)  # the corruption alone goes unnoticed
    with pytest.raises(InputError, match=re.escape(repr(paths[0])) + ".*checksum"):
        riskset.from_long(*paths)
