"""Cox score residuals and the robust (sandwich) covariance of R's ``coxph(robust = TRUE)``.

The score residual of row i (Therneau and Grambsch 2000, eq. 4.13; R's
``residuals(fit, type = "score")``) is its term of the score at the estimate::

    U_i = delta_i (x_i - xbar(t_i)) - sum_{event times t_j with i at risk} r_i (x_i - xbar(t_j)) dLambda_j

r_i = exp(eta_i), xbar the risk-set mean, dLambda_j = (weighted deaths at t_j) / S0(t_j).
With Efron ties the d deaths of a time are d steps of weight 1/d, step k seeing the risk set
with k/d of the deaths' weight removed; a death row takes part in step k with weight
1 - k/d, and its own term uses the mean of the steps' means (as R's ``coxscore2``).

The robust covariance (Lin and Wei 1989) is ``V (sum_c G_c G_c') V``, V the inverse
information and G_c the weighted sum of w_i U_i over the rows of cluster c: the dataset's
``subject`` where it has one (R's ``cluster(id)``), else its row (the pieces a
time-varying coefficient splits a row into stay one cluster).

All sums are vectorized over rows and event times: per event time through cumulative sums
over rows in (stratum, time) order, per row through cumulative sums over event times.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from riskset.exceptions import InputError


@dataclass(frozen=True)
class CoxRows:
    """A Cox fit's prepared rows: dense covariates of the columns asked for, the full linear
    predictor, outcome, strata (codes), case weights and each row's cluster code."""

    X: np.ndarray
    eta: np.ndarray
    time: np.ndarray
    status: np.ndarray
    start: np.ndarray | None
    strata: np.ndarray
    weights: np.ndarray
    cluster: np.ndarray
    efron: bool


def score_residuals(rows: CoxRows) -> np.ndarray:
    """(N, P) score residuals U_i of ``rows`` (module docstring), unweighted as R's."""
    n, p = rows.X.shape
    event = rows.status == 1
    # per-stratum shift: r and the hazard increments scale inversely, their products do not
    top = np.full(int(rows.strata.max()) + 1 if n else 1, -np.inf)
    np.maximum.at(top, rows.strata, rows.eta)
    r = np.exp(rows.eta - top[rows.strata])
    wr = rows.weights * r

    # event times (stratum, time) and rows as sortable integer keys on one time scale
    scale = np.unique(np.concatenate([rows.time, rows.start if rows.start is not None else []]))
    width = scale.size + 1

    def key(stratum, t):  # rank 1.. of t on the scale; start=None -> 0, before every time
        return stratum * width + (np.searchsorted(scale, t) + 1 if t is not None else 0)

    stop_key = key(rows.strata, rows.time)
    event_key, at_event = np.unique(stop_key[event], return_inverse=True)
    start_key = key(rows.strata, rows.start) if rows.start is not None else rows.strata * width

    # risk-set sums S0, S1 at each event time: rows with start < t <= stop, same stratum
    def at_risk_sums(values):
        order = np.argsort(stop_key, kind="stable")
        stop_sum = _suffix_sums(stop_key[order], values[order], event_key, width)
        if rows.start is None:
            return stop_sum
        order = np.argsort(start_key, kind="stable")
        return stop_sum - _suffix_sums(start_key[order], values[order], event_key, width)

    s0 = at_risk_sums(wr)
    s1 = at_risk_sums(wr[:, None] * rows.X)
    deaths = np.bincount(at_event, minlength=event_key.size)
    death_w = np.bincount(at_event, weights=rows.weights[event], minlength=event_key.size)
    steps = _hazard_steps(rows, s0, s1, deaths, death_w, at_event, wr, event)

    # per row: sum of c0, c1 over the event times it is at risk at (start_key < key <= stop_key)
    c0 = np.r_[0.0, np.cumsum(steps.c0)]
    c1 = np.vstack([np.zeros((1, p)), np.cumsum(steps.c1, axis=0)])
    hi = np.searchsorted(event_key, stop_key, side="right")
    lo = np.searchsorted(event_key, start_key, side="right")
    a0, a1 = c0[hi] - c0[lo], c1[hi] - c1[lo]
    # a death takes part in its own time's steps with weight 1 - k/d (Efron)
    a0[event] += steps.c0_death[at_event] - steps.c0[at_event]
    a1[event] += steps.c1_death[at_event] - steps.c1[at_event]
    U = -r[:, None] * (rows.X * a0[:, None] - a1)
    U[event] += rows.X[event] - steps.mean[at_event]
    return U


def _suffix_sums(keys, values, event_key, width):
    """Sum of ``values`` over rows with key >= each event key in the same stratum (``keys``
    ascending): a suffix sum read at the first row >= the event key, less the suffix sum at
    the stratum's end."""
    total = np.concatenate([np.cumsum(values[::-1], axis=0)[::-1], np.zeros((1,) + values.shape[1:])])
    first = np.searchsorted(keys, event_key, side="left")
    stratum_end = np.searchsorted(keys, (event_key // width + 1) * width, side="left")
    return total[first] - total[stratum_end]


@dataclass(frozen=True)
class HazardSteps:
    """Per event time: summed hazard increments c0 and hazard-weighted risk-set means c1 as a
    row at risk sees them, as a death of that time sees them (``_death``: step k weighted
    1 - k/d under Efron), and the mean of its steps' risk-set means."""

    c0: np.ndarray
    c1: np.ndarray
    c0_death: np.ndarray
    c1_death: np.ndarray
    mean: np.ndarray


def _hazard_steps(rows: CoxRows, s0, s1, deaths, death_w, at_event, wr, event) -> HazardSteps:
    if not rows.efron:
        hazard = death_w / s0
        mean = s1 / s0[:, None]
        return HazardSteps(hazard, mean * hazard[:, None], hazard, mean * hazard[:, None], mean)
    e0 = np.bincount(at_event, weights=wr[event], minlength=s0.size)
    e1 = np.zeros_like(s1)
    np.add.at(e1, at_event, wr[event][:, None] * rows.X[event])
    of = np.repeat(np.arange(s0.size), deaths)               # the event time of each step
    k = np.arange(of.size) - np.repeat(np.cumsum(deaths) - deaths, deaths)
    f = k / deaths[of]                                       # share of the deaths removed
    denom = s0[of] - f * e0[of]
    hazard = death_w[of] / deaths[of] / denom
    mean = (s1[of] - f[:, None] * e1[of]) / denom[:, None]

    def per_time(v):
        out = np.zeros((s0.size,) + v.shape[1:])
        np.add.at(out, of, v)
        return out

    return HazardSteps(per_time(hazard), per_time(mean * hazard[:, None]), per_time((1 - f) * hazard),
                       per_time(mean * ((1 - f) * hazard)[:, None]), per_time(mean) / deaths[:, None])


def robust_covariance(rows: CoxRows, information: np.ndarray) -> np.ndarray:
    """``V (sum_c G_c G_c') V``: V the inverse of ``information``, G_c the sum of w_i U_i
    over cluster c."""
    U = score_residuals(rows) * rows.weights[:, None]
    _, cluster = np.unique(rows.cluster, return_inverse=True)
    G = np.zeros((cluster.max() + 1 if cluster.size else 0, U.shape[1]))
    np.add.at(G, cluster, U)
    try:
        V = np.linalg.inv(information)
    except np.linalg.LinAlgError as exc:
        raise InputError("the information matrix is singular: no covariance") from exc
    return V @ (G.T @ G) @ V


def cox_rows(model, data, beta_full: np.ndarray, columns) -> CoxRows:
    """:class:`CoxRows` of ``data`` as ``model`` prepares it (strata without events dropped,
    rows split at a time-varying coefficient's cuts), covariates ``columns`` dense."""
    p = model.prepare(data, warn=False)
    offset = 0.0 if p.offset is None else p.offset
    subject = data.subject if data.subject is not None else np.arange(data.n_rows)
    return CoxRows(X=p.X[:, columns].toarray(), eta=p.X @ beta_full + offset, time=np.asarray(p.time, np.float64),
                   status=np.asarray(p.status), start=None if p.start is None else np.asarray(p.start, np.float64),
                   strata=np.zeros(p.X.shape[0], np.int64) if p.strata is None else np.asarray(p.strata, np.int64),
                   weights=np.ones(p.X.shape[0]) if p.weights is None else np.asarray(p.weights, np.float64),
                   cluster=np.asarray(subject)[p.rows], efron=model.ties == "efron")
