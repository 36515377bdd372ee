"""Competing risks: Aalen-Johansen cumulative incidence, Fine-Gray predictions, robust variance.

* :func:`aalen_johansen` -- nonparametric cumulative incidence of the event of interest
  (and of all competing events together) by group, case weights allowed:
  ``F_1(t) = sum_{s <= t} S(s-) d_1(s) / n(s)``, ``S`` the all-cause Kaplan-Meier.
  Without competing events ``F_1 = 1 - KM``.
* :func:`baseline_subdistribution_hazard` -- Breslow estimator of the baseline cumulative
  subdistribution hazard of a Fine-Gray fit, ``dL_k = d_k / D_k`` at the estimate (crr's
  ``bfitj``), not centred.
* :func:`predict_cif` -- ``F_1(t | x) = 1 - exp(-exp(x beta + offset) L(t))`` (crr's
  ``predict.crr``).
* :func:`robust_covariance` -- the Fine & Gray (1999) sandwich
  ``I^{-1} Sigma I^{-1}`` exactly as ``cmprsk::crr`` computes ``var``: ``Sigma`` sums over
  subjects the outer products of ``eta_i + psi_i`` (score residual plus the term for
  the estimated censoring distribution). Computed in O((N + K) P) time, O(N P) memory:
  meant for the handful of covariates one reports, not for thousands.
"""
from __future__ import annotations

import warnings

import numpy as np
import pandas as pd

from riskset.exceptions import DataWarning, InputError
from riskset.models.fine_gray import FineGrayModel, check_times, classify_status
from riskset.survival import time_table


# -- Aalen-Johansen ------------------------------------------------------------------------
def aalen_johansen(time, status, group=None, weights=None, event_of_interest: int = 1, censor_code: int = 0,
                   competing_events=None) -> pd.DataFrame:
    """Aalen-Johansen estimate of the cumulative incidence, one row per group and distinct time.

    Returns a DataFrame with columns ``group`` (when given), ``time``, ``n_risk``,
    ``n_event`` (event of interest), ``n_competing``, ``n_censor``, ``survival``
    (all-cause Kaplan-Meier, event-free probability), ``cif`` (event of interest),
    ``cif_competing`` (all competing events together) and ``variance`` (of ``cif``: the
    delta-method estimate that R's ``cmprsk::cuminc`` reports, :func:`cif_variance`);
    weighted counts with ``weights`` (the variance then treats them as counts).

    Examples
    --------
    >>> aj = aalen_johansen([1, 2, 3, 4], [1, 2, 0, 1])
    >>> aj["cif"].round(4).tolist()
    [0.25, 0.25, 0.25, 0.75]
    """
    time = check_times(time)
    n = time.shape[0]
    if n == 0:
        raise InputError("aalen_johansen needs at least one row")
    if len(status) != n:
        raise InputError(f"status has {len(status)} values for {n} times")
    out = classify_status(status, event_of_interest, competing_events, censor_code, require_event=False)
    w = np.ones(n) if weights is None else np.asarray(weights, dtype=np.float64)
    if w.shape[0] != n or np.any(~np.isfinite(w)) or np.any(w < 0):
        raise InputError("weights must be finite, non-negative, one per row")
    t = time_table(time, group, w, n_event=out.event, n_competing=out.competing)
    glabels, ug, ut = t.labels, t.group, t.time
    n_event, n_comp, n_total = t.counts["n_event"], t.counts["n_competing"], t.n_total
    n_censor = n_total - n_event - n_comp
    bounds = np.r_[0, t.group_end + 1]
    surv = np.empty_like(n_total)
    cif = np.empty_like(n_total)
    cif2 = np.empty_like(n_total)
    variance = np.empty_like(n_total)
    for a, b in zip(bounds[:-1], bounds[1:]):  # one iteration per group, vectorized within
        nr = t.n_risk[a:b]
        with np.errstate(divide="ignore", invalid="ignore"):
            h1 = np.where(nr > 0, n_event[a:b] / nr, 0.0)
            h2 = np.where(nr > 0, n_comp[a:b] / nr, 0.0)
        s = np.cumprod(np.clip(1.0 - h1 - h2, 0.0, 1.0))
        s_left = np.r_[1.0, s[:-1]]
        surv[a:b] = s
        cif[a:b] = np.cumsum(s_left * h1)
        cif2[a:b] = np.cumsum(s_left * h2)
        variance[a:b] = cif_variance(nr, n_event[a:b], n_comp[a:b], s_left, s, cif[a:b])
    res = pd.DataFrame({"time": ut, "n_risk": t.n_risk, "n_event": n_event, "n_competing": n_comp,
                        "n_censor": n_censor, "survival": surv, "cif": cif, "cif_competing": cif2,
                        "variance": variance})
    if group is not None:
        res.insert(0, "group", glabels[ug])
    return res


def cif_variance(n_risk, n_event, n_competing, surv_before, surv, cif) -> np.ndarray:
    """Variance of the Aalen-Johansen cumulative incidence at each distinct time of one group,
    as R's ``cmprsk::cuminc`` (the delta-method estimate of its C routine ``cinc``).

    With S- and S the all-cause survival before and at t, F the incidence, r the number at
    risk and d events (of interest or competing), each time adds to three running sums,
    with w = S-^2 (1 - (d - 1) / (r - 1)) d / r^2 (the tie correction 1 for d = 1):
    an event of interest a = 1 + F / S, b = 1 / S; a competing event a = F / S, b = 1 / S
    (both 0 once S = 0); v1 += a^2 w, v2 += a b w, v3 += b^2 w. The variance is
    v1 + F^2 v3 - 2 F v2.
    """
    with np.errstate(divide="ignore", invalid="ignore"):
        inv = np.where(surv > 0, 1.0 / surv, 0.0)

        def weight(d):
            ties = np.where(d > 1, 1.0 - (d - 1.0) / (n_risk - 1.0), 1.0)
            return np.where((d > 0) & (n_risk > 0), surv_before ** 2 * ties * d / n_risk ** 2, 0.0)

        w_event, w_competing = weight(n_event), weight(n_competing) * (surv > 0)
    a_event, a_competing = 1.0 + inv * cif, inv * cif
    v1 = np.cumsum(a_event ** 2 * w_event + a_competing ** 2 * w_competing)
    v2 = np.cumsum(inv * (a_event * w_event + a_competing * w_competing))
    v3 = np.cumsum(inv ** 2 * (w_event + w_competing))
    return v1 + cif ** 2 * v3 - 2.0 * cif * v2


# -- fitted Fine-Gray models ------------------------------------------------------------------
def _datafit_at_fit(fit, data, model=None):
    """The Fine-Gray datafit of ``data`` and its state at the fitted coefficients."""
    if model is None:
        m = getattr(fit, "model", None)
        model = m if isinstance(m, FineGrayModel) else FineGrayModel(**(getattr(fit, "model_options", {}) or {}))
    coef = pd.Series(fit.coef if hasattr(fit, "coef") else fit, dtype=np.float64)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DataWarning)
        datafit = model.datafit(data)
        names = model.coef_names(data)
    beta = coef.reindex(names).fillna(0.0).to_numpy()
    return datafit, datafit.new_state(beta), names, model


def baseline_subdistribution_hazard(fit, data, model=None) -> pd.DataFrame:
    """Breslow baseline subdistribution hazard of a Fine-Gray fit on its training ``data``.

    Columns ``time`` (distinct event-of-interest times), ``hazard`` (increment
    ``d_k / D_k``) and ``cumhaz``, at ``x = 0`` and offset 0.
    """
    datafit, state, _, _ = _datafit_at_fit(fit, data, model)
    t, inc = datafit.hazard_increments(state)
    return pd.DataFrame({"time": t, "hazard": inc, "cumhaz": np.cumsum(inc)})


def predict_cif(fit, data, times, newdata=None, model=None) -> np.ndarray:
    """Predicted cumulative incidence ``F_1(t | x)`` of the rows of ``newdata`` (default ``data``).

    ``data`` is the training data (for the baseline). Returns shape (rows, len(times)).
    """
    base = baseline_subdistribution_hazard(fit, data, model)
    newdata = data if newdata is None else newdata
    times = np.atleast_1d(np.asarray(times, dtype=np.float64))
    idx = np.searchsorted(base["time"].to_numpy(), times, side="right")
    H = np.r_[0.0, base["cumhaz"].to_numpy()][idx]
    eta = np.asarray(fit.linear_predictor(newdata), dtype=np.float64)
    return -np.expm1(-np.outer(np.exp(eta), H))


def robust_covariance(fit, data, model=None, columns=None) -> pd.DataFrame:
    """Fine & Gray (1999) sandwich covariance of the coefficients, as ``cmprsk::crr``'s ``var``.

    Case weights act as frequency weights (a weight-2 row counts as two subjects). With the
    data's own ``censor_weights`` the weights are taken as known: the sandwich has no term for
    estimating G (as ``coxph(..., cluster = id)`` on the Fine-Gray expansion with those weights).
    ``columns`` (positions among the coefficients; default all): the coefficients it is
    computed for, the others held at their values (a fit's aliased or diverging ones).
    """
    datafit, state, names, _ = _datafit_at_fit(fit, data, model)
    cols = np.arange(datafit.n_coef) if columns is None else np.asarray(columns, dtype=np.int64)
    names = [names[j] for j in cols]
    P, Kn = len(cols), datafit.n_slots
    info = -datafit.hessian(state, cols)
    X = datafit.design.to_csc(cols).toarray()
    cw, w = datafit.cw, state.w
    r = np.exp(state.eta - state.shift[0])      # relative hazard on the scale of w and D (K.sync)
    ev, comp, cens = datafit.event.astype(bool), datafit.comp.astype(bool), datafit.cens.astype(bool)
    slot, invG, Gev, d, D = datafit.slot, datafit.invG, datafit.Gev, datafit.slot_d, state.D
    N1 = datafit.numerators(state, cols)              # (K, P)
    Dsafe = np.where(d > 0, D, 1.0)              # slots without (weighted) events carry nothing
    Ebar = np.where(d[:, None] > 0, N1 / Dsafe[:, None], 0.0)
    dL = np.where(d > 0, d / Dsafe, 0.0)
    # cumulative sums over event slots: A1/F suffixes (k >= s), B1/FB prefixes (k < s)
    A1 = np.r_[np.cumsum(dL[::-1])[::-1], 0.0]
    F = np.vstack([np.cumsum((dL[:, None] * Ebar)[::-1], axis=0)[::-1], np.zeros((1, P))])
    B1 = np.r_[0.0, np.cumsum(dL * Gev)]
    FB = np.vstack([np.zeros((1, P)), np.cumsum((dL * Gev)[:, None] * Ebar, axis=0)])
    # eta_i: score residual of subject i
    U = np.zeros((datafit.n_rows, P))
    U[ev] = X[ev] - Ebar[slot[ev]]
    U -= r[:, None] * (X * A1[slot][:, None] - F[slot])
    U[comp] -= (r * invG)[comp][:, None] * (X[comp] * B1[slot[comp]][:, None] - FB[slot[comp]])
    if datafit.given_G is not None:  # censoring weights given: known, no term for estimating them
        return _sandwich(U, cw, info, names)
    # psi_i: term of the censoring Kaplan-Meier, at distinct censoring times u
    ut, inv = np.unique(datafit.time, return_inverse=True)            # ascending distinct times
    n_at = np.bincount(inv, weights=cw, minlength=ut.shape[0])
    n_c = np.bincount(inv, weights=cw * cens, minlength=ut.shape[0])
    Y = np.cumsum(n_at[::-1])[::-1]
    cw_comp = np.where(comp, w * invG, 0.0)
    S0c_t = np.bincount(inv, weights=cw_comp, minlength=ut.shape[0])
    Sxc_t = np.zeros((ut.shape[0], P))
    np.add.at(Sxc_t, inv[comp], X[comp] * cw_comp[comp][:, None])
    S0c = np.r_[0.0, np.cumsum(S0c_t)[:-1]]                      # competing rows with T < u
    Sxc = np.vstack([np.zeros((1, P)), np.cumsum(Sxc_t, axis=0)[:-1]])
    m = Kn - np.searchsorted(datafit.slot_time[::-1], ut, side="left")  # event slots with te >= u: k < m
    q = Sxc * B1[m][:, None] - S0c[:, None] * FB[m]
    with np.errstate(divide="ignore", invalid="ignore"):
        jump = np.where(n_c > 0, n_c / Y ** 2, 0.0)
        own = np.where(Y > 0, 1.0 / Y, 0.0)
    cum = np.cumsum(q * jump[:, None], axis=0)                    # sum over u <= t
    psi = -cum[inv]
    psi[cens] += q[inv[cens]] * own[inv[cens]][:, None]
    return _sandwich(U + psi, cw, info, names)


def _sandwich(Z, cw, info, names) -> pd.DataFrame:
    """I^{-1} (sum_i c_i Z_i Z_i') I^{-1} from per-row score residuals ``Z`` (case weights ``cw``)."""
    sigma = (Z * cw[:, None]).T @ Z
    hinv = np.linalg.inv(info)
    cov = hinv @ sigma @ hinv
    return pd.DataFrame(cov, index=names, columns=names)
