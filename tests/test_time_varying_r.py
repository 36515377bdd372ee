"""Time-varying (step-function) Cox coefficients against R: an event exactly on a cut point.

R's ``survSplit`` and ``coxph(tt=)`` (and Cyclops, whose ``splitTime`` calls ``survSplit``)
split follow-up into ``(start, c1], (c1, c2], ...``: an event at t == c_k belongs to the
interval ending at c_k. riskset's ``time_varying={"cov": cuts}`` follows the same rule, so
its coefficients ``cov(0,c1]``, ``cov(c1,c2]``, ..., ``cov(cm,inf)`` equal coxph's on the
split data. The data below have integer times with 23 events and 6 entry times exactly on
the cuts 4, 6 and 8 (the former rule, an event at a cut in the later interval, moved the
coefficients of these data by up to 0.72).

Reference numbers: R 4.2.2, survival 3.5.3, with ``data.csv`` written from the columns
below by ``frame().to_csv("data.csv", index=False)``::

    library(survival)
    d <- read.csv("data.csv")
    split <- function(use_start) {
      if (use_start) {
        s <- survSplit(Surv(start, time, status) ~ ., d, cut = c(4, 6, 8), episode = "ep")
        names(s)[names(s) == "start"] <- "tstart"
      } else s <- survSplit(Surv(time, status) ~ ., d, cut = c(4, 6, 8), episode = "ep")
      b <- function(lo, hi) s$time > lo & s$time <= hi       # pieces (lo, hi]
      s$x_a <- s$x * b(-Inf, 6); s$x_b <- s$x * b(6, Inf)
      s$trt_a <- s$trt * b(-Inf, 4); s$trt_b <- s$trt * b(4, 8); s$trt_c <- s$trt * b(8, Inf)
      s
    }
    ctl <- coxph.control(eps = 1e-14, toler.chol = 1e-15, iter.max = 200)
    fitit <- function(s, ties, use_strata) {
      f <- if (use_strata) Surv(tstart, time, status) ~ x_a + x_b + trt_a + trt_b + trt_c + z + strata(g)
           else Surv(tstart, time, status) ~ x_a + x_b + trt_a + trt_b + trt_c + z
      coxph(f, s, ties = ties, control = ctl)
    }
    for (ties in c("breslow", "efron")) for (use_start in c(FALSE, TRUE)) for (use_strata in c(FALSE, TRUE)) {
      fit <- fitit(split(use_start), ties, use_strata)
      print(c(coef(fit), sqrt(diag(vcov(fit))), fit$loglik[2]), digits = 15)
    }
    # tt() agrees with survSplit to 1.1e-15 (same convention: t <= 4 is the first interval):
    tt1 <- coxph(Surv(time, status) ~ z + tt(x) + tt(trt), d, ties = "efron", control = ctl,
                 tt = list(function(x, t, ...) cbind(x * (t <= 6), x * (t > 6)),
                           function(x, t, ...) cbind(x * (t <= 4), x * (t > 4 & t <= 8), x * (t > 8))))
    max(abs(coef(tt1)[c(2:6, 1)] - coef(fitit(split(FALSE), "efron", FALSE))))
    s <- split(TRUE)                                          # SPLIT_ROWS below
    cat(sprintf("%d,%g,%g,%d", s$id, s$tstart, s$time, s$status))

Tolerances: coefficients and standard errors 1e-6 relative, log-likelihood 1e-8 absolute
(riskset agrees to ~1e-13; coxph converged to eps = 1e-14).
"""
import numpy as np
import pandas as pd
import pytest

import riskset
from riskset.data.risksets import interval_labels, split_at_cuts

START = [0, 0, 2, 0, 0, 3, 7, 0, 3, 1, 1, 0, 4, 4, 4, 0, 0, 5, 4, 0, 0, 5, 0, 0, 0, 3, 0, 3, 0, 0, 0, 0, 0, 0,
         0, 0, 0, 3, 0, 6, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 3, 0, 0, 0, 4, 0]
TIME = [3, 1, 8, 4, 3, 4, 9, 2, 8, 2, 2, 4, 10, 6, 6, 1, 2, 6, 6, 14, 1, 6, 8, 9, 14, 4, 5, 4, 5, 14, 4, 4, 4,
        6, 3, 4, 8, 8, 14, 7, 2, 4, 1, 7, 1, 14, 1, 14, 5, 14, 3, 1, 6, 2, 14, 14, 9, 5, 8, 2]
STATUS = [1, 1, 1, 1, 0, 1, 1, 0, 1, 0, 1, 1, 1, 1, 1, 0, 1, 1, 1, 1, 1, 1, 1, 0, 1, 1, 1, 1, 1, 1, 1, 1, 1,
          1, 0, 1, 1, 1, 1, 0, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0, 0, 1, 1, 0, 0, 0, 0, 0, 1, 1]
X = [0.7, 0.3, 2.7, -1, -1.6, 1, 1, -0.5, -0.1, -0.3, 0.5, -0.4, 0.7, 0.7, -0.2, -0.4, 1.1, 0.5, 1.7, -0.4,
     0.1, -0.5, 0.3, 0.6, -0.2, 0.7, 0.8, 0.5, -0.7, -0.9, 0.2, 0.1, 0.5, 0.6, -0.2, 0.6, -1.4, -1.1, -0.5,
     -1.8, 2.2, 0.8, 0.6, 0, 1, -0.5, 0.5, 0.3, 0.7, -1.4, -1.2, -1.3, -1.6, -1.3, -0.9, -0.2, -0.1, 0.8, 0,
     0.5]
TRT = [1, 0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 1, 0, 0, 0, 1, 1, 1, 0, 0, 0, 1, 0, 0, 1, 1, 1, 1, 0, 0, 1, 0, 1, 0,
       1, 1, 1, 0, 0, 1, 1, 0, 0, 1, 1, 0, 0, 1, 1, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 1]
Z = [1, 2, 0, 1, 1, 2, 1, 0, 2, 0, 2, 0, 1, 2, 1, 1, 2, 1, 0, 0, 2, 0, 2, 1, 2, 0, 2, 1, 0, 1, 1, 1, 0, 2, 1,
     0, 1, 0, 2, 1, 2, 1, 0, 0, 1, 0, 1, 1, 0, 2, 2, 0, 2, 2, 0, 1, 0, 2, 1, 0]
G = [0, 0, 1, 1, 1, 0, 0, 0, 0, 0, 0, 1, 1, 0, 1, 0, 1, 0, 1, 0, 1, 1, 1, 1, 0, 1, 1, 0, 0, 1, 1, 1, 1, 1, 0,
     0, 0, 1, 0, 1, 1, 1, 1, 0, 0, 1, 0, 0, 1, 1, 1, 0, 0, 0, 0, 0, 1, 0, 0, 0]

TIME_VARYING = {"x": [6], "trt": [4, 8]}
NAMES = ["x(0,6]", "x(6,inf)", "trt(0,4]", "trt(4,8]", "trt(8,inf)", "z"]  # coxph: x_a x_b trt_a trt_b trt_c z

#: coxph on survSplit(cut = c(4, 6, 8)), keyed by (ties, with start times, with strata g)
R_FITS = {
    ("breslow", False, False): dict(
        coef=[0.452610048779428, 0.552737147177158, 0.519931943446643, 0.911397178958301, -0.162751857540149,
              0.0537014663527039],
        se=[0.192197717527779, 0.313332089373843, 0.439840098811964, 0.515796657603502, 0.854343627414334,
            0.195977624470374],
        loglik=-148.618994750145),
    ("breslow", False, True): dict(
        coef=[0.44471449206505, 0.568471558736901, 0.534646197013266, 1.0745885470102, 0.00860751686205485,
              0.0887031793361266],
        se=[0.194308338670759, 0.340002852573073, 0.44253312366271, 0.597972586172965, 0.938988470398352,
            0.201474452023131],
        loglik=-117.014584466121),
    ("breslow", True, False): dict(
        coef=[0.496226152030978, 0.551795415351704, 0.259055329211206, 0.975034633672028, -0.136978947195923,
              0.0121609310363898],
        se=[0.19234460771679, 0.310961579173765, 0.441845750225604, 0.515064842787286, 0.853905868725521,
            0.191039353550047],
        loglik=-140.684262534106),
    ("breslow", True, True): dict(
        coef=[0.477689191952742, 0.574531516463995, 0.272398599950243, 1.17408861039932, 0.0226486789142774,
              0.0607819307961265],
        se=[0.201989298036558, 0.340879349050189, 0.447971800573297, 0.627353201966777, 0.939096239735565,
            0.196594919230949],
        loglik=-108.951995597606),
    ("efron", False, False): dict(
        coef=[0.476952590343147, 0.642587611181683, 0.594767179804554, 0.967783295252738, 0.0603304634324345,
              0.0468074568848358],
        se=[0.18870468826296, 0.328246175373281, 0.441943716417972, 0.515406274311678, 0.859154787839564,
            0.197954858158206],
        loglik=-142.027960249413),
    ("efron", False, True): dict(
        coef=[0.457545923057534, 0.651408759765319, 0.608820891495632, 1.17709425821576, 0.255793737511299,
              0.0866438873063589],
        se=[0.189778780294875, 0.351239343072089, 0.445333039094617, 0.609159571893408, 0.946133210886958,
            0.202442707676706],
        loglik=-111.331570714327),
    ("efron", True, False): dict(
        coef=[0.520615277510449, 0.641908363349362, 0.326995807997016, 1.03970607611137, 0.0852939057200282,
              0.00461965338190105],
        se=[0.186556720451021, 0.326054407676238, 0.443913264311145, 0.514916731725498, 0.858599690812902,
            0.191920379775947],
        loglik=-133.344506581502),
    ("efron", True, True): dict(
        coef=[0.477941275264362, 0.658357728897904, 0.344314318600983, 1.32498577641302, 0.271058047596311,
              0.0575029643647055],
        se=[0.197753860816647, 0.352543995261472, 0.451828706173463, 0.654884872561537, 0.946138873759565,
            0.196342769768822],
        loglik=-102.611604803822),
}

#: survSplit(Surv(start, time, status) ~ ., d, cut = c(4, 6, 8)): id, tstart, time (stop), status per piece
SPLIT_ROWS = """
1,0,3,1 2,0,1,1 3,2,4,0 3,4,6,0 3,6,8,1 4,0,4,1 5,0,3,0 6,3,4,1 7,7,8,0 7,8,9,1 8,0,2,0 9,3,4,0 9,4,6,0
9,6,8,1 10,1,2,0 11,1,2,1 12,0,4,1 13,4,6,0 13,6,8,0 13,8,10,1 14,4,6,1 15,4,6,1 16,0,1,0 17,0,2,1 18,5,6,1
19,4,6,1 20,0,4,0 20,4,6,0 20,6,8,0 20,8,14,1 21,0,1,1 22,5,6,1 23,0,4,0 23,4,6,0 23,6,8,1 24,0,4,0 24,4,6,0
24,6,8,0 24,8,9,0 25,0,4,0 25,4,6,0 25,6,8,0 25,8,14,1 26,3,4,1 27,0,4,0 27,4,5,1 28,3,4,1 29,0,4,0 29,4,5,1
30,0,4,0 30,4,6,0 30,6,8,0 30,8,14,1 31,0,4,1 32,0,4,1 33,0,4,1 34,0,4,0 34,4,6,1 35,0,3,0 36,0,4,1 37,0,4,0
37,4,6,0 37,6,8,1 38,3,4,0 38,4,6,0 38,6,8,1 39,0,4,0 39,4,6,0 39,6,8,0 39,8,14,1 40,6,7,0 41,0,2,1 42,0,4,1
43,0,1,1 44,0,4,0 44,4,6,0 44,6,7,1 45,0,1,1 46,0,4,0 46,4,6,0 46,6,8,0 46,8,14,1 47,0,1,1 48,0,4,0 48,4,6,0
48,6,8,0 48,8,14,1 49,0,4,0 49,4,5,1 50,1,4,0 50,4,6,0 50,6,8,0 50,8,14,0 51,0,3,0 52,0,1,1 53,0,4,0 53,4,6,1
54,0,2,0 55,3,4,0 55,4,6,0 55,6,8,0 55,8,14,0 56,0,4,0 56,4,6,0 56,6,8,0 56,8,14,0 57,0,4,0 57,4,6,0 57,6,8,0
57,8,9,0 58,0,4,0 58,4,5,0 59,4,6,0 59,6,8,1 60,0,2,1
"""


def frame() -> pd.DataFrame:
    return pd.DataFrame({"id": np.arange(1, 61), "start": START, "time": TIME, "status": STATUS, "x": X,
                         "trt": TRT, "z": Z, "g": G})


def split_rows() -> pd.DataFrame:
    rows = np.array([[float(v) for v in piece.split(",")] for piece in SPLIT_ROWS.split()])
    return pd.DataFrame(rows, columns=["id", "tstart", "tstop", "status"]).astype({"id": int, "status": int})


def data(start: bool, strata: bool):
    return riskset.from_frame(frame(), time="time", status="status", start="start" if start else None,
                              strata="g" if strata else None, covariates=["x", "trt", "z"])


def check_against_r(fit, ref):
    assert fit.converged, fit.message
    assert list(fit.coef.index) == NAMES
    np.testing.assert_allclose(fit.coef.to_numpy(), ref["coef"], rtol=1e-6)
    np.testing.assert_allclose(fit.se.to_numpy(), ref["se"], rtol=1e-6)
    assert fit.loglik == pytest.approx(ref["loglik"], abs=1e-8)


@pytest.mark.parametrize("ties,start,strata", list(R_FITS))
def test_time_varying_fit_equals_coxph_on_survsplit(ties, start, strata):
    fit = riskset.fit(data(start, strata), "cox", ties=ties, time_varying=TIME_VARYING)  # no prior: unpenalized
    check_against_r(fit, R_FITS[ties, start, strata])


def test_split_at_cuts_gives_survsplit_pieces():
    """riskset's pieces of the counting-process data are survSplit's, row for row."""
    d = frame()
    row, lo, hi, status, _ = split_at_cuts(d["start"], d["time"], d["status"], [4, 6, 8])
    r = split_rows()
    np.testing.assert_array_equal(d["id"].to_numpy()[row], r["id"])
    np.testing.assert_array_equal(lo, r["tstart"])
    np.testing.assert_array_equal(hi, r["tstop"])
    np.testing.assert_array_equal(status, r["status"])


@pytest.mark.parametrize("ties", ["breslow", "efron"])
def test_data_split_beforehand_equals_coxph_and_the_time_varying_fit(ties):
    """survSplit's (start, stop] rows with the interval columns built on them, given to riskset as
    counting-process data, fit as coxph does on them and as riskset's own time_varying fit."""
    d, r = frame().set_index("id"), split_rows()
    per = d.loc[r["id"]].reset_index()
    stop = r["tstop"].to_numpy()
    wide = pd.DataFrame({
        "tstart": r["tstart"], "tstop": stop, "status": r["status"], "g": per["g"], "subject": r["id"],
        "x_a": per["x"] * (stop <= 6), "x_b": per["x"] * (stop > 6), "trt_a": per["trt"] * (stop <= 4),
        "trt_b": per["trt"] * ((stop > 4) & (stop <= 8)), "trt_c": per["trt"] * (stop > 8), "z": per["z"]})
    covariates = ["x_a", "x_b", "trt_a", "trt_b", "trt_c", "z"]
    pre = riskset.from_frame(wide, time="tstop", status="status", start="tstart", strata="g", subject="subject",
                             covariates=covariates)
    split_fit = riskset.fit(pre, "cox", ties=ties)
    own = riskset.fit(data(start=True, strata=True), "cox", ties=ties, time_varying=TIME_VARYING)
    ref = R_FITS[ties, True, True]
    assert split_fit.converged and list(split_fit.coef.index) == covariates
    np.testing.assert_allclose(split_fit.coef.to_numpy(), ref["coef"], rtol=1e-6)
    assert split_fit.loglik == pytest.approx(ref["loglik"], abs=1e-8)
    np.testing.assert_allclose(split_fit.coef.to_numpy(), own.coef.to_numpy(), rtol=1e-9, atol=1e-12)
    assert split_fit.loglik == pytest.approx(own.loglik, abs=1e-10)


def test_interval_names_are_closed_on_the_right():
    assert interval_labels([4, 8]) == ["(0,4]", "(4,8]", "(8,inf)"]
    assert interval_labels([]) == ["(0,inf)"]


def test_a_time_on_a_cut_predicts_with_the_interval_ending_there():
    fit = riskset.fit(data(False, False), "cox", ties="breslow", time_varying=TIME_VARYING)
    b = fit.coef
    t = np.array([2.0, 4.0, 4.5, 6.0, 6.5, 8.0, 9.0])
    new = riskset.from_frame(pd.DataFrame({"time": t, "status": 1, "x": 1.0, "trt": 1.0, "z": 2.0}),
                             time="time", status="status", covariates=["x", "trt", "z"])
    expected = [b[x] + b[trt] + 2 * b["z"] for x, trt in [
        ("x(0,6]", "trt(0,4]"), ("x(0,6]", "trt(0,4]"), ("x(0,6]", "trt(4,8]"), ("x(0,6]", "trt(4,8]"),
        ("x(6,inf)", "trt(4,8]"), ("x(6,inf)", "trt(4,8]"), ("x(6,inf)", "trt(8,inf)")]]
    np.testing.assert_allclose(fit.predict(new, kind="link"), expected, rtol=1e-14)
    assert abs(b["trt(0,4]"] - b["trt(4,8]"]) > 0.1  # the intervals differ: a wrong one would show


def test_coefficients_under_the_former_names_are_refused_not_read_as_zero():
    """A fit saved when the intervals were named [a,b) cannot predict silently with zeros."""
    from riskset.exceptions import InputError
    from riskset.models.cox import CoxModel, linear_predictor

    old = {"x[0,6)": 0.5, "x[6,inf)": 0.6, "trt[0,4)": 0.1, "trt[4,8)": 1.0, "trt[8,inf)": 0.4, "z": 0.05}
    with pytest.raises(InputError, match=r"'x\(0,6\]', 'x\(6,inf\)'.*missing.*'x\[0,6\)'"):
        linear_predictor(CoxModel(time_varying=TIME_VARYING), old, data(False, False))


def test_prediction_without_times_is_refused_not_read_at_time_zero():
    """A time-varying coefficient needs the time of each row: no silent first interval."""
    from riskset.exceptions import InputError

    fit = riskset.fit(data(False, False), "cox", ties="breslow", time_varying=TIME_VARYING)
    new = riskset.from_frame(pd.DataFrame({"x": [1.0, 0.0], "trt": [1.0, 1.0], "z": [2.0, 0.0]}),
                             covariates=["x", "trt", "z"])
    with pytest.raises(InputError, match="'x' has time-varying coefficients.*'time' column"):
        fit.predict(new, kind="link")
