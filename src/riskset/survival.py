"""Survival curves: Kaplan-Meier, the Breslow baseline hazard of a Cox fit, predicted survival.

* :func:`kaplan_meier` — product-limit estimate by group, Greenwood standard errors,
  confidence intervals on the log scale (R ``survfit``'s default ``conf.type = "log"``),
  numbers at risk / events / censored at each distinct time; case weights allowed.
* :func:`numbers_at_risk` — subjects still at risk (time >= t) at given times, by group.
* :func:`baseline_hazard` — Breslow estimator of the baseline (cumulative) hazard of a
  fitted Cox model, per stratum, not centred (R ``basehaz(fit, centered = FALSE)``);
  with ``ties='efron'`` the Efron increments ``sum_l wbar / (D - (l/m) E)``.
* :func:`predict_survival` — ``S(t | x) = exp(-H0_s(t) exp(x beta + offset))``.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy import special

import warnings

from riskset import validation as check
from riskset.exceptions import DataWarning, InputError
from riskset.results import FitResult


@dataclass
class TimeTable:
    """Weighted counts per distinct (group, time), ascending within each group."""

    labels: np.ndarray  # group label of each group code
    group: np.ndarray  # group code of each (group, time) pair
    time: np.ndarray
    n_total: np.ndarray  # weight of the rows at this time
    n_risk: np.ndarray  # weight of the group's rows with time >= this time
    counts: dict  # name -> weighted count of flagged rows at this time
    group_end: np.ndarray  # index of the last pair of each group


def time_table(time, group=None, weights=None, **flags) -> TimeTable:
    """Tabulate rows by (group, time): the shared first step of Kaplan-Meier and Aalen-Johansen.

    ``flags`` are per-row indicators (events, competing events) counted per pair.
    """
    n = time.shape[0]
    w = np.ones(n) if weights is None else np.asarray(weights, dtype=np.float64)
    if group is None:
        labels, g = np.array([None]), np.zeros(n, np.int64)
    else:
        labels, g = np.unique(np.asarray(group), return_inverse=True)
    order = np.lexsort((time, g))
    gs, ts = g[order], time[order]
    new = np.ones(n, bool)
    new[1:] = (gs[1:] != gs[:-1]) | (ts[1:] != ts[:-1])
    pair = np.cumsum(new) - 1
    ug, wo = gs[new], w[order]
    n_total = np.bincount(pair, weights=wo)
    counts = {name: np.bincount(pair, weights=wo * np.asarray(flag, dtype=np.float64)[order])
              for name, flag in flags.items()}
    # at risk = weight of the group with time >= t: reverse cumulative sum within group
    rev = np.cumsum(n_total[::-1])[::-1]
    gend = np.flatnonzero(np.r_[ug[1:] != ug[:-1], True])
    after = np.r_[rev[gend[:-1] + 1], 0.0]
    n_risk = rev - np.repeat(after, np.diff(np.r_[-1, gend]))
    return TimeTable(labels, ug, ts[new], n_total, n_risk, counts, gend)


@check.renamed(conf_level="level")
def kaplan_meier(time, status, group=None, weights=None, level: float = 0.95) -> pd.DataFrame:
    """Kaplan-Meier estimate (one row per group and distinct time, events or censorings).

    Returns a DataFrame with columns ``group`` (when given), ``time``, ``n_risk``,
    ``n_event``, ``n_censor``, ``survival``, ``std_err`` (Greenwood, of the survival),
    ``lower``, ``upper`` (pointwise interval at ``level``, on the log scale; the old
    keyword ``conf_level`` still works, deprecated). Vectorized over groups.

    Examples
    --------
    >>> km = kaplan_meier([1, 2, 2, 3, 4], [1, 1, 0, 1, 0])
    >>> km["survival"].round(4).tolist()
    [0.8, 0.6, 0.3, 0.3]
    """
    time = np.asarray(time, dtype=np.float64)
    status = np.asarray(status)
    n = time.shape[0]
    if n == 0:
        raise InputError("kaplan_meier needs at least one row")
    if not np.all(np.isfinite(time)) or np.any(time < 0):
        i = int(np.flatnonzero(~(np.isfinite(time) & (time >= 0)))[0])
        raise InputError(f"survival time must be finite and >= 0; row {i} has {time[i]}")
    if not np.all(np.isin(status, (0, 1))):
        i = int(np.flatnonzero(~np.isin(status, (0, 1)))[0])
        raise InputError(f"status must be 0 or 1; row {i} has {status[i]!r}")
    t = time_table(time, group, weights, n_event=status.astype(np.float64))
    glabels, ug, ut, n_risk, n_event, gend = t.labels, t.group, t.time, t.n_risk, t.counts["n_event"], t.group_end
    n_censor = t.n_total - n_event
    with np.errstate(divide="ignore", invalid="ignore"):
        frac = np.where(n_risk > 0, n_event / n_risk, 0.0)
        all_dead = frac >= 1.0  # survival drops to 0: kept out of the sums (no -inf)
        logs = np.where(all_dead, 0.0, np.log1p(-np.minimum(frac, 1.0)))
        green = np.where((n_event > 0) & ~all_dead, n_event / (n_risk * (n_risk - n_event)), 0.0)
    glen = np.diff(np.r_[-1, gend])

    def cumsum_by_group(v):
        c = np.cumsum(v)
        base = np.repeat(np.r_[0.0, c[gend[:-1]]], glen)
        return c - base

    dead = cumsum_by_group(all_dead.astype(np.float64)) > 0
    surv = np.where(dead, 0.0, np.exp(cumsum_by_group(logs)))
    se_log = np.sqrt(np.maximum(cumsum_by_group(green), 0.0))
    z = special.ndtri(0.5 + check.probability("level", level) / 2)
    lower = np.clip(surv * np.exp(-z * se_log), 0, 1)
    upper = np.clip(surv * np.exp(z * se_log), 0, 1)
    std_err = np.where(dead, np.nan, surv * se_log)
    lower = np.where(surv > 0, lower, np.nan)
    upper = np.where(surv > 0, upper, np.nan)
    out = pd.DataFrame({"time": ut, "n_risk": n_risk, "n_event": n_event, "n_censor": n_censor,
                        "survival": surv, "std_err": std_err, "lower": lower, "upper": upper})
    if group is not None:
        out.insert(0, "group", glabels[ug])
    return out


def numbers_at_risk(time, times, group=None, weights=None) -> pd.DataFrame:
    """Number (weight) of rows with ``time >= t`` for each ``t`` in ``times``, by group.

    Rows of the result are groups (index), columns the requested times.
    """
    time = np.asarray(time, dtype=np.float64)
    times = np.asarray(times, dtype=np.float64)
    w = np.ones(time.shape[0]) if weights is None else np.asarray(weights, dtype=np.float64)
    if group is None:
        glabels, g = np.array(["all"]), np.zeros(time.shape[0], np.int64)
    else:
        glabels, g = np.unique(np.asarray(group), return_inverse=True)
    # per group: weights sorted by time, suffix sums
    order = np.lexsort((time, g))
    gs, ts, ws = g[order], time[order], w[order]
    bounds = np.searchsorted(gs, np.arange(glabels.shape[0] + 1))
    rev = np.r_[np.cumsum(ws[::-1])[::-1], 0.0]
    table = np.empty((glabels.shape[0], times.shape[0]))
    for k in range(glabels.shape[0]):  # loop over groups (few), not rows
        a, b = bounds[k], bounds[k + 1]
        pos = a + np.searchsorted(ts[a:b], times, side="left")
        table[k] = rev[pos] - rev[b]
    return pd.DataFrame(table, index=pd.Index(glabels, name="group"), columns=times)


# -- Cox: baseline hazard and predicted survival --------------------------------------------
def _model_and_coef(fit, model):
    from riskset.models.cox import CoxModel

    if model is None:
        model = getattr(fit, "model", None)
        if model is None or not isinstance(model, CoxModel):
            opts = getattr(fit, "model_options", {}) or {}
            model = CoxModel(**opts)
    coef = fit.coef if hasattr(fit, "coef") else fit
    return model, pd.Series(coef, dtype=np.float64)


def baseline_hazard(fit, data, model=None) -> pd.DataFrame:
    """Breslow baseline hazard of a Cox fit on its training ``data``.

    ``fit``: a FitResult (or a Series of coefficients by name). Returns columns
    ``stratum`` (label, when stratified), ``time`` (event times), ``hazard``
    (increment) and ``cumhaz``, at ``x = 0`` and offset 0 (not centred).
    """
    model, coef = _model_and_coef(fit, model)
    prep = model.prepare(data, warn=False)
    beta = np.array([coef.get(n, 0.0) for n in prep.names])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DataWarning)
        datafit = model.datafit(data)
    if datafit.n_coef != beta.shape[0]:
        raise InputError("the fit's coefficients do not match the data")
    state = datafit.new_state(beta)
    t, s, inc = datafit.hazard_increments(state)
    out = pd.DataFrame({"time": t, "hazard": inc})
    out["cumhaz"] = out.groupby(s)["hazard"].cumsum().to_numpy() if s.size else []
    if data.strata is not None:
        codes = prep.stratum_labels[s]
        labels = data.strata_labels
        out.insert(0, "stratum", labels[codes] if labels is not None else codes)
    return out


def predict_survival(fit, data, times, newdata=None, model=None) -> np.ndarray:
    """Predicted survival ``S(t | x)`` for the rows of ``newdata`` (default: ``data``) at ``times``.

    ``data`` is the training data (for the baseline hazard). Returns an array of shape
    (rows of newdata, len(times)). Stratified fits match strata of ``newdata`` by label.
    """
    model, coef = _model_and_coef(fit, model)
    if model.time_varying:
        raise NotImplementedError("predicted survival with time-varying coefficients is not implemented")
    from riskset.models.cox import linear_predictor

    newdata = data if newdata is None else newdata
    if isinstance(fit, FitResult):
        fit.check_covariates(newdata)
    times = np.atleast_1d(np.asarray(times, dtype=np.float64))
    base = baseline_hazard(coef, data, model)
    eta = linear_predictor(model, coef, newdata)
    risk = np.exp(eta)
    out = np.empty((newdata.n_rows, times.shape[0]))
    if "stratum" in base:
        if newdata.strata is None:
            raise InputError("the fit is stratified: newdata needs strata")
        new_lab = newdata.strata_labels[newdata.strata] if newdata.strata_labels is not None else newdata.strata
        keys = base["stratum"].to_numpy()
        for lab in np.unique(new_lab):  # loop over strata of newdata, vectorized within
            rows = np.flatnonzero(new_lab == lab)
            sel = keys == lab
            if not sel.any():
                raise InputError(f"stratum {lab!r} of newdata has no events in the training data")
            H = _step(base["time"].to_numpy()[sel], base["cumhaz"].to_numpy()[sel], times)
            out[rows] = np.exp(-np.outer(risk[rows], H))
        return out
    H = _step(base["time"].to_numpy(), base["cumhaz"].to_numpy(), times)
    return np.exp(-np.outer(risk, H))


def _step(t, cum, times):
    idx = np.searchsorted(t, times, side="right")
    return np.r_[0.0, cum][idx]
