"""Cox model diagnostics: Schoenfeld residuals and the proportional-hazards test of R's
``survival::cox.zph`` (survival 3.x), and the coefficients' covariance matrix.

The test (Grambsch and Therneau 1994, in survival 3's form) is the score test of adding
x g(t) to the model, g a transform of time centred at its mean over the events, at
(beta_hat, 0): the score of the added terms is sum over event times of g(t) times the
Schoenfeld residuals, and the information is the extended model's, blocks
(I, I_g, I_gg) = sums of (1, g, g^2) times the risk-set covariance of x. Each covariate's
test uses the added term of that covariate alone (1 df), GLOBAL all of them.

Breslow and Efron ties as the fit (Efron: the d tied deaths of a time see the risk set
with k/d of their own weight removed, k = 0..d-1; their residuals use the mean of those
d risk-set means), strata, case weights, right-censored or ``(start, stop]`` rows (at risk
at t: start < t <= stop; the times are the stops, as cox.zph's). Unpenalized fits only (the
score test is at the maximum likelihood estimate).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy import special

from riskset.exceptions import InputError
from riskset.models.base import get_model
from riskset.results import FitResult
from riskset.robust import robust_covariance

TRANSFORMS = ("km", "rank", "identity", "log")


@dataclass(frozen=True)
class RiskSetMoments:
    """Per event time of a Cox fit (in stratum, time order): the time, its stratum, the
    summed case weight of its deaths and their weighted covariates, the risk-set means
    (averaged over Efron's steps) and the weighted sum of risk-set covariances (P x P)."""

    time: np.ndarray
    stratum: np.ndarray
    death_weight: np.ndarray
    death_x: np.ndarray        # (T, P): sum of w_i x_i over the time's deaths
    mean: np.ndarray           # (T, P)
    covariance: np.ndarray     # (T, P, P): sum over the deaths' steps of weight x covariance


def risk_set_moments(X, time, status, strata, weights, eta, efron: bool, start=None) -> RiskSetMoments:
    """:class:`RiskSetMoments` of right-censored data, or of ``(start, time]`` rows, at linear
    predictor ``eta`` (dense X).

    Within each stratum the event times are visited from the last, the risk-set sums
    S0, S1, S2 growing by the rows between consecutive event times (one matrix product per
    event time) and, with ``start``, shrinking by the rows that enter at or after the time:
    O(N P^2) time, O(P^2) memory beyond the data.
    """
    p = X.shape[1]
    order = np.lexsort((time, strata))
    X, time, status, strata, w = X[order], time[order], status[order], strata[order], weights[order]
    start = None if start is None else start[order]
    risk = w * np.exp(eta[order] - np.max(eta))
    rows_out = []
    for s in np.unique(strata):
        rows = np.flatnonzero(strata == s)
        t, xs, r, ws, dead = time[rows], X[rows], risk[rows], w[rows], status[rows] == 1
        sums = _RiskSums(xs, r)
        # rows by start time, and their start times (none without start times)
        entering = np.arange(0) if start is None else np.argsort(start[rows], kind="stable")
        entry = None if start is None else start[rows][entering]
        end, gone = t.size, t.size
        for u in np.unique(t[dead])[::-1]:
            at = int(np.searchsorted(t, u, side="left"))  # the first row with time >= u
            sums.add(np.arange(at, end), 1.0)
            end = at
            if entry is not None:                         # rows with start >= u are not at risk at u
                first_gone = int(np.searchsorted(entry, u, side="left"))
                sums.add(entering[first_gone:gone], -1.0)
                gone = first_gone
            deaths = dead & (t == u)
            d, dw = int(deaths.sum()), float(ws[deaths].sum())
            xd, rd = xs[deaths], r[deaths]
            e0, e1, e2 = rd.sum(), rd @ xd, xd.T @ (rd[:, None] * xd)
            steps = np.arange(d) / d if efron and d > 1 else np.zeros(1)
            means, cov = np.zeros(p), np.zeros((p, p))
            for f in steps:
                z0, z1, z2 = sums.s0 - f * e0, sums.s1 - f * e1, sums.s2 - f * e2
                mean = z1 / z0
                means += mean / steps.size
                cov += (dw / steps.size) * (z2 / z0 - np.outer(mean, mean))
            rows_out.append((u, s, dw, ws[deaths] @ xd, means, cov))
    rows_out.sort(key=lambda row: (row[1], row[0]))
    if not rows_out:
        return RiskSetMoments(np.zeros(0), np.zeros(0, np.int64), np.zeros(0), np.zeros((0, p)), np.zeros((0, p)),
                              np.zeros((0, p, p)))
    columns = [np.array(a) for a in zip(*rows_out)]
    return RiskSetMoments(*columns)


class _RiskSums:
    """The running risk-set sums S0 = sum r, S1 = sum r x, S2 = sum r x x' of a stratum."""

    def __init__(self, X, risk):
        self.X, self.risk = X, risk
        p = X.shape[1]
        self.s0, self.s1, self.s2 = 0.0, np.zeros(p), np.zeros((p, p))

    def add(self, rows, sign: float):
        block, r = self.X[rows], sign * self.risk[rows]
        self.s0 += r.sum()
        self.s1 = self.s1 + r @ block
        self.s2 = self.s2 + block.T @ (r[:, None] * block)


@dataclass(frozen=True)
class CoxData:
    """The dense covariates, outcome and fitted linear predictor of an unpenalized Cox fit."""

    X: np.ndarray
    time: np.ndarray
    start: np.ndarray | None
    status: np.ndarray
    strata: np.ndarray
    weights: np.ndarray
    eta: np.ndarray
    names: list
    beta: np.ndarray
    efron: bool

    def moments(self) -> RiskSetMoments:
        return risk_set_moments(self.X, self.time, self.status, self.strata, self.weights, self.eta, self.efron,
                                self.start)


def _cox_data(fit: FitResult, data) -> CoxData:
    if fit.model_name != "cox":
        raise InputError(f"Cox diagnostics need a cox fit, got a {fit.model_name} fit")
    if fit.prior.kind != "none":
        raise InputError(f"the proportional-hazards test is a score test at the maximum likelihood estimate: the "
                         f"fit has a {fit.prior!r} prior; refit without it")
    if fit.model_options.get("time_varying"):
        raise InputError("Cox diagnostics of time-varying coefficients are not implemented (their covariates are "
                         "interactions with time already)")
    names = [n for n in fit.coef.index if n not in fit.aliased]
    missing = [n for n in names if n not in data.covariate_names]
    if missing:
        raise InputError(f"the data lack the fit's covariate(s) {', '.join(map(repr, missing[:5]))}")
    cols = [data.covariate_names.index(n) for n in names]
    X = data.X[:, cols].toarray()
    beta = fit.coef[names].to_numpy(dtype=np.float64)
    offset = 0.0 if data.offset is None else data.offset
    start = None if data.start is None else np.asarray(data.start, np.float64)
    return CoxData(X, np.asarray(data.time, np.float64), start, np.asarray(data.status), np.zeros(data.n_rows, np.int64)
                   if data.strata is None else np.asarray(data.strata), np.ones(data.n_rows) if data.weights is None
                   else np.asarray(data.weights, np.float64), X @ beta + offset, names, beta,
                   fit.model_options.get("ties", "breslow") == "efron")


def schoenfeld_residuals(fit: FitResult, data, *, scaled: bool = False) -> pd.DataFrame:
    """One row per event (stratum, then time order), its ``time``, ``stratum`` and per
    coefficient x_i - (risk-set mean at its time), as R's ``residuals(coxph_fit,
    type = "schoenfeld")``; ``scaled``: d V r + beta with V the inverse information and
    d the number of events (``type = "scaledsch"``).

    >>> import riskset
    >>> data = riskset.simulate(n=200, p=2, model="cox", seed=1)
    >>> res = schoenfeld_residuals(riskset.fit(data, "cox"), data)
    >>> list(res.columns), len(res) == int(data.status.sum())
    (['time', 'stratum', 'x0', 'x1'], True)
    """
    cox = _cox_data(fit, data)
    m = cox.moments()
    dead, resid = _event_residuals(cox, m)
    if scaled:
        resid = _scaled(resid, m.covariance.sum(axis=0), cox.beta)
    out = pd.DataFrame(resid, columns=cox.names)
    out.insert(0, "stratum", cox.strata[dead])
    out.insert(0, "time", cox.time[dead])
    return out


def _event_residuals(cox: CoxData, m: RiskSetMoments) -> tuple[np.ndarray, np.ndarray]:
    """(the event rows in stratum, then time order; x_i - the risk-set mean at each one's time)."""
    order = np.lexsort((cox.time, cox.strata))
    dead = order[cox.status[order] == 1]
    return dead, cox.X[dead] - m.mean[_event_time_index(m, cox.time[dead], cox.strata[dead])]


def _scaled(resid, information, beta) -> np.ndarray:
    """Scaled Schoenfeld residuals d I^-1 r + beta (d events), R's ``scaledsch`` and cox.zph's y."""
    return resid.shape[0] * resid @ np.linalg.inv(information) + beta


def _event_time_index(m: RiskSetMoments, time, stratum) -> np.ndarray:
    """Row of ``m`` (event time of a stratum) of each event."""
    keys = pd.MultiIndex.from_arrays([m.stratum, m.time])
    return keys.get_indexer(pd.MultiIndex.from_arrays([stratum, time]))


@dataclass(frozen=True)
class ZphResult:
    """:func:`cox_zph`: the ``table`` (chisq, df, p per coefficient and GLOBAL), and for
    plots the transformed event times ``x``, their ``time``, the scaled residuals ``y``
    (R's ``cox.zph`` object: y = r V^-1 d + beta, one column per coefficient) and the fit's
    ``estimate`` (beta, around which y scatters under proportional hazards)."""

    table: pd.DataFrame
    x: np.ndarray
    time: np.ndarray
    y: pd.DataFrame
    transform: str
    estimate: pd.Series

    def plot(self, columns=None):
        """The scaled residuals against transformed time, one panel per coefficient
        (:func:`riskset.plots.plot_zph`)."""
        from riskset.plots.zph import plot_zph

        return plot_zph(self, columns)


def cox_zph(fit: FitResult, data, transform="km", *, global_test: bool = True) -> ZphResult:
    """The proportional-hazards test of R's ``survival::cox.zph`` (survival 3.x).

    ``transform`` of time: ``"km"`` (1 - the Kaplan-Meier estimate just before t, over all
    rows, unweighted: R's default), ``"rank"``, ``"identity"``, ``"log"`` or a function of
    the times. One test per coefficient (1 df) and, with ``global_test``, GLOBAL.

    >>> import riskset
    >>> data = riskset.simulate(n=300, p=2, model="cox", seed=2)
    >>> z = cox_zph(riskset.fit(data, "cox"), data)
    >>> z.table.index.tolist()
    ['x0', 'x1', 'GLOBAL']
    """
    cox = _cox_data(fit, data)
    g_all = _transformed(transform, cox.time, cox.status, cox.start)
    event = cox.status == 1
    centred = g_all - g_all[event].mean()
    m = cox.moments()
    first = {(s, t): g for s, t, g in zip(cox.strata[event], cox.time[event], centred[event])}
    g = np.array([first[(s, t)] for s, t in zip(m.stratum, m.time)])
    score = m.death_x - m.death_weight[:, None] * m.mean             # (T, P): summed residuals per time
    u = (g[:, None] * score).sum(axis=0)
    p = len(cox.names)
    info = np.zeros((2 * p, 2 * p))
    info[:p, :p] = m.covariance.sum(axis=0)
    info[:p, p:] = info[p:, :p] = (g[:, None, None] * m.covariance).sum(axis=0)
    info[p:, p:] = (g[:, None, None] ** 2 * m.covariance).sum(axis=0)
    rows = []
    for j in range(p):
        keep = np.r_[np.arange(p), p + j]
        full = np.r_[np.zeros(p), u[j]]
        rows.append(float(full @ np.linalg.solve(info[np.ix_(keep, keep)], full)))
    names = list(cox.names)
    df = [1] * p
    if global_test:
        full = np.r_[np.zeros(p), u]
        rows.append(float(full @ np.linalg.solve(info, full)))
        names.append("GLOBAL")
        df.append(p)
    table = pd.DataFrame({"chisq": rows, "df": df, "p": special.chdtrc(df, rows)}, index=pd.Index(names))
    dead, resid = _event_residuals(cox, m)
    y = _scaled(resid, info[:p, :p], cox.beta)
    name = transform if isinstance(transform, str) else getattr(transform, "__name__", "user")
    return ZphResult(table, g_all[dead], cox.time[dead], pd.DataFrame(y, columns=cox.names), name,
                     pd.Series(cox.beta, index=cox.names))


def _transformed(transform, time, status, start=None) -> np.ndarray:
    """The transform of every row's time, as cox.zph's ``ttimes`` (``km``: at risk at t the
    rows with start < t <= time)."""
    if callable(transform):
        return np.asarray(transform(time), dtype=np.float64)
    if transform == "identity":
        return time.astype(np.float64)
    if transform == "log":
        return np.log(time)
    if transform == "rank":
        return pd.Series(time).rank().to_numpy()  # average ranks of ties, as R's rank
    if transform == "km":  # 1 - S(t-), the unweighted Kaplan-Meier over every row
        times, inverse = np.unique(time, return_inverse=True)
        deaths = np.bincount(inverse, weights=(status == 1).astype(float))
        at_risk = np.cumsum(np.bincount(inverse)[::-1])[::-1]
        if start is not None:  # less the rows that enter at or after each time
            at_risk = at_risk - (start.size - np.searchsorted(np.sort(start), times, side="left"))
        surv = np.cumprod(1.0 - deaths / at_risk)
        return 1.0 - np.r_[1.0, surv[:-1]][inverse]
    raise InputError(f"transform must be one of {', '.join(TRANSFORMS)} or a function of the times, got "
                     f"{transform!r}")


def covariance(fit: FitResult, data, kind: str = "model-based") -> pd.DataFrame:
    """The coefficients' covariance matrix: ``"model-based"`` (the inverse observed
    information at the estimate, R's ``vcov``) for any unpenalized fit, or ``"robust"``
    (the sandwich of ``cmprsk::crr`` for Fine-Gray fits, of ``coxph(robust = TRUE)`` for Cox
    fits, clustered by the data's ``subject``: :mod:`riskset.robust`). Aliased and fixed
    coefficients are left out.

    >>> import riskset
    >>> data = riskset.simulate(n=300, p=2, model="logistic", seed=2)
    >>> f = riskset.fit(data, "logistic")
    >>> v = covariance(f, data)
    >>> bool(abs(v.loc["x0", "x0"] ** 0.5 - f.se["x0"]) < 1e-10)
    True
    """
    if kind not in ("model-based", "robust"):
        raise InputError(f"kind must be 'model-based' or 'robust', got {kind!r}")
    if fit.prior.kind != "none":
        raise InputError(f"a covariance from the information needs an unpenalized fit; this one has a {fit.prior!r} "
                         f"prior (use riskset.bootstrap for penalized estimates)")
    model = get_model(fit.model_name, **fit.model_options)
    names = model.coef_names(data)
    keep = [j for j, n in enumerate(names) if n not in fit.aliased and n not in fit.fixed]
    kept = [names[j] for j in keep]
    if kind == "robust":
        return robust_covariance(fit, data, model, columns=np.array(keep))
    datafit = model.datafit(data)
    datafit.names = names
    beta = fit.coef.reindex(names).fillna(0.0).to_numpy(dtype=np.float64)
    info = -datafit.hessian(datafit.new_state(beta), np.array(keep, dtype=np.int64))
    return pd.DataFrame(np.linalg.inv(info), index=kept, columns=kept)
