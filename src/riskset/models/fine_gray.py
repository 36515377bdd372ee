"""Fine-Gray proportional subdistribution hazards (Fine & Gray 1999), cmprsk::crr conventions.

Log pseudo partial likelihood maximized (Breslow ties), for event-of-interest times
``t_k`` with weighted event counts ``d_k``::

    l = sum_{events of interest} c eta - sum_k d_k log D_k,
    D_k = sum_{T_r >= t_k} w_r + sum_{competing r, T_r < t_k} w_r G(t_k-) / G(T_r-)

with ``w = c exp(eta)`` (case weight c; computed as ``c exp(eta - max eta)``, to which l is
invariant: :func:`~riskset.kernels.cpu.fine_gray.sync`), ``G`` the Kaplan-Meier estimate of the
censoring distribution (censored rows are its events, every row is at risk; case
weights used) and ``G(s-)`` its left limit. Competing rows tied with an event time are
in the ordinary risk set (weight 1). This is exactly crr's risk set and weighting
(crr evaluates G at ``time * (1 - 100 eps)``); with no competing events the model is
the Breslow Cox model.

Two formulations of the per-coordinate gradient and Hessian (``formulation=``):

* ``"sparse"`` (default): O(nnz_j) per coordinate (docs/math.md section 3); ``move``
  keeps per-slot weight sums current in O(nnz_j) and the aggregates are refreshed in
  O(K) (K = distinct event-of-interest times) rather than O(N) -- the DESIGN tie
  groups over all rows are compressed to event slots, the same deviation as the Cox
  model's. See :mod:`riskset.kernels.cpu.fine_gray`.
* ``"scan"``: the papers' O(N) forward + backward scans per coordinate, kept for
  benchmarks and cross-checks.

Robust (sandwich) standard errors, predicted cumulative incidence and the
Aalen-Johansen estimator: :mod:`riskset.competing_risks`.
"""
from __future__ import annotations

from functools import cached_property

import warnings
from dataclasses import dataclass

import numba
import numpy as np
import scipy.sparse as sp

from riskset.core.design import canonical_csc, index_type
from riskset.data.dataset import row_label
from riskset.data.ordering import lexsort
from riskset.data.risksets import later_event_times
from riskset.exceptions import DataWarning, InputError
from riskset.kernels.cpu import fine_gray as fine_gray_kernels
from riskset.kernels.cpu import fine_gray_walks
from riskset.kernels.cpu.cox_rows import row_pieces
from riskset.core.interface import Reweightable, RunsOnDevice, SlopeRows
from riskset.models.base import (Datafit, FitState, LocalQuadratic, Model, carry_static_gradient,
                                 drop_constant_covariates, refuse_kind, require_information, risk_set_block_work,
                                 weight_overflow, HAZARD_KINDS, NO_RESPONSE, VARIANCES)

FORMULATIONS = ("sparse", "scan")


def censoring_survival(time, censored, weights=None):
    """Kaplan-Meier of the censoring distribution and its left limits.

    Returns ``(utimes, G, G_left)`` at the distinct times ``utimes`` (ascending):
    ``G(u)`` and ``G(u-)``. Censored rows are the 'events'; every row is at risk
    until its time (rows with an event at ``u`` are at risk at ``u``); case weights
    weight both counts.
    """
    utimes, code = distinct_times(np.asarray(time, dtype=np.float64))
    G, G_left = _censoring_survival_at(utimes.shape[0], code, censored, weights)
    return utimes, G, G_left


def distinct_times(time):
    """``np.unique(time, return_inverse=True)``, by one linear pass where ``time`` is already
    in descending order (a Fine-Gray datafit's rows), else by NumPy's sort."""
    if time.shape[0] > 1 and not np.all(time[1:] <= time[:-1]):
        return np.unique(time, return_inverse=True)
    ascending = time[::-1]
    new = np.empty(ascending.shape[0], np.bool_)
    new[:1] = True
    np.not_equal(ascending[1:], ascending[:-1], out=new[1:])
    return ascending[new], (np.cumsum(new) - 1)[::-1]


def _censoring_survival_at(n_times, code, censored, weights=None):
    """G and G_left at the distinct times of which ``code`` gives each row's (ascending)."""
    c = np.ones(code.shape[0]) if weights is None else np.asarray(weights, dtype=np.float64)
    n_at = np.bincount(code, weights=c, minlength=n_times)
    n_cens = np.bincount(code, weights=c * np.asarray(censored, dtype=np.float64), minlength=n_times)
    at_risk = np.cumsum(n_at[::-1])[::-1]
    with np.errstate(divide="ignore", invalid="ignore"):
        frac = np.where(at_risk > 0, n_cens / at_risk, 0.0)
    G = np.cumprod(1.0 - np.minimum(frac, 1.0))
    G_left = np.r_[1.0, G[:-1]]
    return G, G_left


@dataclass
class CompetingRiskOutcome:
    """Validated outcome codes: per row (input order) event-of-interest and competing flags."""

    event: np.ndarray      # uint8
    competing: np.ndarray  # uint8
    censored: np.ndarray   # uint8


def classify_status(status, event_of_interest=1, competing_events=None, censor_code=0, row_ids=None,
                    require_event=True) -> CompetingRiskOutcome:
    """Split integer status codes into event of interest / competing / censored, or raise."""
    st = np.asarray(status)
    if st.dtype.kind not in "biuf":
        raise InputError(f"status must hold integer codes, not {st.dtype}")
    stf = st.astype(np.float64)
    bad = ~np.isfinite(stf) | (stf != np.round(stf))
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise InputError(f"status codes must be integers; found {stf[i]:g} at {row_label(row_ids, i)}")
    code = stf.astype(np.int64)
    ev = code == int(event_of_interest)
    cens = code == int(censor_code)
    if competing_events is None:
        comp = ~ev & ~cens
    else:
        comp = np.isin(code, np.asarray(list(competing_events), dtype=np.int64)) & ~ev & ~cens
        unknown = ~(ev | cens | comp)
        if unknown.any():
            i = int(np.flatnonzero(unknown)[0])
            codes = ", ".join(str(int(v)) for v in np.unique(code[unknown])[:10])
            raise InputError(
                f"unknown status code(s) {codes} (first at {row_label(row_ids, i)}): expected "
                f"{int(censor_code)} (censored), {int(event_of_interest)} (event of interest) or a competing "
                f"event in {sorted(int(v) for v in competing_events)}")
    if require_event and not ev.any():
        raise InputError(f"no event of interest (status code {int(event_of_interest)}) in the data: "
                         "the Fine-Gray model needs at least one")
    return CompetingRiskOutcome(ev.astype(np.uint8), comp.astype(np.uint8), cens.astype(np.uint8))


def check_times(time, row_ids=None):
    time = np.asarray(time, dtype=np.float64)
    bad = ~np.isfinite(time)
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise InputError(f"survival time is not finite ({time[i]}) at {row_label(row_ids, i)}")
    if np.any(time < 0):
        i = int(np.flatnonzero(time < 0)[0])
        raise InputError(f"negative survival time {time[i]} at {row_label(row_ids, i)}")
    return time


class FineGrayDatafit(Datafit, Reweightable, SlopeRows, RunsOnDevice):
    """Fine-Gray log pseudo-likelihood over rows sorted by time descending.

    Parameters: ``X``, ``time`` and the 0/1 flags ``event`` (of interest),
    ``competing``, ``censored`` in *input* order; ``order`` (attribute) maps datafit
    rows to input rows.
    """

    sweep_passes = 30.0  # risk-set sums refreshed per moved coordinate (Datafit.sweep_passes)

    device_datafit = "fine_gray:FineGrayDeviceDatafit"

    def __init__(self, X, time, event, competing, censored, weights=None, offset=None, formulation="sparse",
                 censor_weights=None):
        if formulation not in FORMULATIONS:
            raise InputError(f"formulation must be one of {FORMULATIONS}, not {formulation!r}")
        time = np.asarray(time, dtype=np.float64)
        n = time.shape[0]
        event = np.asarray(event, dtype=np.uint8)
        competing = np.asarray(competing, dtype=np.uint8)
        censored = np.asarray(censored, dtype=np.uint8)
        weights = np.ones(n) if weights is None else np.asarray(weights, dtype=np.float64)
        order = lexsort((-event.astype(np.int64), -time))
        off = None if offset is None else np.asarray(offset, dtype=np.float64)[order]  # large ones: the kernels' sync
        super().__init__(X, off, rows=order)
        self.order = order
        self.formulation = formulation
        self.time = np.ascontiguousarray(time[order])
        self.event = np.ascontiguousarray(event[order])
        self.comp = np.ascontiguousarray(competing[order])
        self.cens = np.ascontiguousarray(censored[order])
        # event slots: distinct event-of-interest times, descending; the slot of each row: the
        # number of event times strictly later than its time
        later, first_at_time = later_event_times(np.zeros(n, np.int64), self.time, self.event)
        self.slot_row = np.flatnonzero(first_at_time)  # the first row of each event slot
        self.slot_time = self.time[self.slot_row]
        self.n_slots = self.slot_time.shape[0]
        self.slot = later.astype(np.int32 if self.n_slots < 2**31 - 1 else np.int64)
        # one stratum, cut where the slot changes: the parallel passes of fine_gray_kernels.sync
        self.row_pieces = row_pieces(np.zeros(n, np.int64), exit_slot=self.slot)
        self.kernels = fine_gray_kernels.KERNELS[formulation]
        self.walk_chunk = fine_gray_walks.WALK_CHUNK  # non-zeros per chunk of a column's walk
        # the user's censoring survival G(T-) per row (sorted order), fixed whatever the case weights
        self.given_G = None if censor_weights is None else np.asarray(censor_weights, dtype=np.float64)[order]
        if self.given_G is not None:  # Cyclops' censorWeights: set once, shared by every reweighted view
            events = np.flatnonzero(self.event == 1)
            Gev = np.empty(self.n_slots)
            Gev[self.slot[events]] = self.given_G[events]  # an event slot's risk set scaled by its events' G
            self._set_censoring(self.given_G, Gev)
        self._set_weights(np.ascontiguousarray(weights[order]))

    def _set_censoring(self, left, Gev):
        """G(T-) of each row (``left``; a competing row is divided by its own) and G(t_k-) of each
        event slot (``Gev``)."""
        with np.errstate(divide="ignore"):
            self.invG = np.where(left > 0, 1.0 / left, 0.0)
        self.cinv = np.ascontiguousarray(np.where(self.comp == 1, self.invG, 0.0))
        self.Gev = np.ascontiguousarray(Gev)

    def _set_weights(self, cw):
        """Case weights (sorted order) and everything that depends on them: G (the Kaplan-Meier
        one, unless given), d (gx0 on first use)."""
        self.cw = cw
        if self.given_G is None:
            n_times, code = self.time_codes
            _, G_left = _censoring_survival_at(n_times, code, self.cens, cw)
            self._set_censoring(G_left[code], G_left[code[self.slot_row]])
        self.slot_d = np.bincount(self.slot[self.event == 1], weights=cw[self.event == 1],
                                  minlength=self.n_slots).astype(np.float64)[:self.n_slots]
        self.__dict__.pop("gx0", None)

    @cached_property
    def time_codes(self):
        """(number of distinct times, each row's index among them ascending, int32 where it
        holds them): found once, shared by every reweighted view (the Kaplan-Meier estimate of
        the censoring in :meth:`_set_weights`)."""
        utimes, code = distinct_times(self.time)
        return utimes.shape[0], code.astype(index_type(utimes.shape[0]))

    @cached_property
    def gx0(self):
        """The gradient's static part, X' (c * event), computed on first use (a view that only
        scores held-out rows or checks its information never needs it)."""
        return self.products.dot(np.arange(self.n_coef), self.cw * self.event)

    def missing_information(self):
        """None if some event of interest of positive weight has another row of positive
        weight in its risk set (rows still at risk, and competing events before it)."""
        if fine_gray_kernels.event_with_company(self.slot, self.event, self.comp, self.cw, self.n_slots):
            return None
        if not np.any((self.event == 1) & (self.cw > 0)):
            return (f"no event of interest has a positive weight ({int(np.sum(self.event == 1))} event(s)), so "
                    "the Fine-Gray likelihood carries no information")
        return ("no event of interest has another row of positive weight in its risk set: the Fine-Gray "
                "likelihood compares each event with the rows at risk, so it carries no information")

    def reweighted(self, weights):
        """The same datafit with case weights ``weights`` (input order): G, event counts recomputed."""
        new = object.__new__(type(self))
        new.__dict__.update(self.__dict__)
        new._set_weights(np.ascontiguousarray(np.asarray(weights, dtype=np.float64)[self.order]))
        carry_static_gradient(self, new)
        return new

    def data_weights(self):
        """Case weights in input (Dataset) row order."""
        return self.scatter_to_data_rows(self.order, self.cw)

    # -- state ----------------------------------------------------------------------------
    def kernel_data(self):
        return fine_gray_kernels.Data(indptr=self.indptr, indices=self.indices, values=self.values,
                                      value_shift=self.value_shift, indicator=self.indicator, gx0=self.gx0, cw=self.cw,
                                      event=self.event, slot=self.slot, cinv=self.cinv, slot_d=self.slot_d,
                                      Gev=self.Gev, parallel=numba.get_num_threads() > 1,
                                      walk_chunk=self.walk_chunk)

    def new_state(self, beta):
        """State at ``beta``. It owns every array a sweep writes (the scan's work arrays
        included), so states of one datafit can be swept in parallel threads. ``dirty[0]``
        says that a move left the aggregates stale (the sparse formulation's refresh)."""
        state = FitState(np.ascontiguousarray(self.linear_predictor(beta), dtype=np.float64))
        ns = self.n_slots
        state.w = np.empty(self.n_rows)
        state.shift = np.zeros(1)  # w = c exp(eta - shift): fine_gray_kernels.sync
        state.W = np.zeros(ns + 1)
        state.Wc = np.zeros(ns + 1)
        state.D = np.zeros(ns)
        for name in ("A1", "B1", "A2", "A2G", "A2GG"):
            setattr(state, name, np.zeros(ns + 1))
        state.dirty = np.zeros(1, dtype=np.bool_)
        if self.formulation == "scan":
            state.xd = np.zeros(self.n_rows)
            state.work = np.zeros((6, ns + 1))
            state.kernel = fine_gray_kernels.ScanState(eta=state.eta, w=state.w, xd=state.xd, work=state.work)
        else:
            state.kernel = fine_gray_kernels.SparseState(eta=state.eta, w=state.w, W=state.W, Wc=state.Wc, D=state.D,
                                                         A1=state.A1, B1=state.B1, A2=state.A2, A2G=state.A2G,
                                                         A2GG=state.A2GG, dirty=state.dirty)
        self._sync(state)
        return state

    def _sync(self, state):
        """w = c exp(eta - shift), the slot sums and the aggregates from scratch, unless current
        (``FitState.synced``)."""
        if state.synced:
            return
        fine_gray_kernels.sync(state.eta, self.cw, self.slot, self.cinv, *self.row_pieces, state.shift, state.w,
                               state.W, state.Wc)
        fine_gray_kernels.refresh(state.W, state.Wc, self.slot_d, self.Gev, state.D, state.A1, state.B1, state.A2,
                                  state.A2G, state.A2GG)
        state.dirty[0] = False
        state.loglik = None
        state.synced = True

    def loglik(self, state):
        self._sync(state)
        if state.loglik is None:
            state.loglik = fine_gray_kernels.loglik_terms(state.eta, self.cw, self.event, state.shift[0], self.slot_d,
                                                          state.D)
        return state.loglik

    def gradient(self, state):
        """dl/dbeta = gx0 - X' v with v the per-row terms (:meth:`_row_terms`)."""
        return self.gx0 - self.products.dot(np.arange(self.n_coef), self._row_terms(state))

    def slopes(self, state, coefs):
        """gx0 - X' v over the columns of ``coefs`` only."""
        coefs = np.asarray(coefs, dtype=np.int64)
        return self.gx0[coefs] - self.products.dot(coefs, self._row_terms(state))

    def slope_rows(self, state):
        """(v, ||x_j||_2): the gradient is gx0 - X' v (:meth:`gradient`), gx0 the same at every
        state (screened KKT checks, :mod:`riskset.solver.screening`)."""
        return self._row_terms(state), self.products.column_norms(np.arange(self.n_coef))

    def _row_terms(self, state):
        """v = :func:`~riskset.kernels.cpu.fine_gray.row_terms` at the (synced) state: the
        gradient is gx0 - X' v and the first Hessian term -X' diag(v) X."""
        self._sync(state)
        v = np.empty(self.n_rows)
        fine_gray_kernels.row_terms(state.w, self.slot, self.cinv, state.A1, state.B1, v)
        return v

    def hessian(self, state, columns):
        """Exact block: -Xc' diag(v) Xc + N1' diag(d / D^2) N1 (N1 = weighted risk-set sums of w x
        per event slot), in O(nnz of the columns x |columns| + N) from the rows of the columns
        (:func:`~riskset.kernels.cpu.fine_gray.hessian_block`)."""
        self._sync(state)
        cols = np.ascontiguousarray(columns, dtype=np.int64)
        v = np.empty(self.n_rows)
        fine_gray_kernels.row_terms(state.w, self.slot, self.cinv, state.A1, state.B1, v)
        rowptr, rcol, rval = self.products.rows_of(cols)
        H = np.empty((cols.shape[0], cols.shape[0]))
        fine_gray_kernels.hessian_block(rowptr, rcol, rval, state.w, v, self.slot, self.cinv, state.A2, state.A2G,
                                        state.A2GG, fine_gray_kernels.hessian_blocks(self.n_rows, cols.shape[0]), H)
        return H

    hessian_work = risk_set_block_work

    def local_quadratic(self, state, columns):
        """Gradient, a diagonal scale and ``b -> H b`` on ``columns`` (the block of
        :meth:`hessian`, never formed): O(nnz of the columns + N + K) per product
        (:func:`~riskset.kernels.cpu.fine_gray.hessian_vector_rows`).

        With v = :func:`~riskset.kernels.cpu.fine_gray.row_terms`, g = gx0 - X' v and the
        first Hessian term is -X' diag(v) X, whose diagonal X^2' v bounds -h_jj from above.
        """
        cols = np.ascontiguousarray(columns, dtype=np.int64)
        v = self._row_terms(state)  # synced: w, D and the aggregates of this state
        xv, x2v = self.products.dot2(cols, v)
        with np.errstate(divide="ignore", invalid="ignore"):
            q2 = np.where(self.slot_d > 0, self.slot_d / state.D ** 2, 0.0)  # d / D^2 per event slot
        U, Uc = np.empty(self.n_slots + 1), np.empty(self.n_slots + 1)
        u, z = np.empty(self.n_rows), np.empty(self.n_rows)

        columns = self.products.on_columns(cols)

        def hessian_times(b):
            columns.times(b, u)
            fine_gray_kernels.hessian_vector_rows(u, state.w, v, self.slot, self.cinv, self.Gev, q2,
                                                  self.row_pieces[0], U, Uc, z)
            return columns.dot(z)

        return LocalQuadratic(self.gx0[cols] - xv, x2v, hessian_times)

    def numerators(self, state, cols):
        """(K, len(cols)) weighted risk-set sums of w x per event slot (state must be synced; the
        robust covariance of :mod:`riskset.competing_risks` reads them)."""
        N1 = np.zeros((self.n_slots, len(cols)))
        fine_gray_kernels.numerators(np.ascontiguousarray(cols, dtype=np.int64), self.indptr, self.indices, self.values,
                     self.value_shift, state.w, self.slot, self.cinv, self.Gev, N1)
        return N1

    def diagnose(self, state, beta):
        return weight_overflow(state)

    # -- baseline subdistribution hazard (used by riskset.competing_risks) ---------------------
    def hazard_increments(self, state):
        """(event time ascending, Breslow increment d_k / D_k) of the baseline subdistribution hazard
        (D_k of the shifted weights times exp(shift): :meth:`_sync`)."""
        self._sync(state)
        keep = self.slot_d > 0
        t = self.slot_time[keep][::-1]
        inc = (self.slot_d[keep] / state.D[keep] * np.exp(-state.shift[0]))[::-1]
        return t, inc


# -- the user-facing model -----------------------------------------------------------------
@dataclass
class _Prepared:
    X: sp.csc_matrix
    names: list
    time: np.ndarray
    outcome: CompetingRiskOutcome
    weights: np.ndarray | None
    offset: np.ndarray | None
    censor_weights: np.ndarray | None


def check_censor_weights(G, time, outcome: CompetingRiskOutcome, row_ids=None) -> np.ndarray:
    """User-supplied censoring weights G(T-) (Cyclops' ``censorWeights``), validated: each in [0, 1],
    positive on competing rows (their contribution is divided by it), and one value per event time
    (it scales that time's risk set). Raises InputError naming the row and value."""
    G = np.asarray(G, dtype=np.float64)
    bad = (G < 0) | (G > 1)
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise InputError(f"censoring weights must lie in [0, 1] (a censoring survival probability G(T-)); "
                         f"found {G[i]:g} at {row_label(row_ids, i)}")
    zero = (outcome.competing == 1) & (G == 0)
    if zero.any():
        i = int(np.flatnonzero(zero)[0])
        raise InputError(f"censoring weight 0 on a competing event at {row_label(row_ids, i)}: its contribution "
                         f"to later risk sets is divided by its weight G(T-), which must be positive")
    ev = np.flatnonzero(outcome.event == 1)
    by_time = np.lexsort((G[ev], time[ev]))
    t, g = time[ev][by_time], G[ev][by_time]
    split = np.flatnonzero((t[1:] == t[:-1]) & (g[1:] != g[:-1]))
    if split.size:
        a, b = ev[by_time][split[0]], ev[by_time][split[0] + 1]
        raise InputError(f"events tied at time {time[a]:g} have different censoring weights ({G[a]:g} at "
                         f"{row_label(row_ids, a)}, {G[b]:g} at {row_label(row_ids, b)}): the weight G(t-) of an "
                         f"event time scales its whole risk set, so tied events must share it")
    return G


class FineGrayModel(Model):
    """Fine-Gray subdistribution hazards model for one event of interest.

    Parameters
    ----------
    event_of_interest : status code of the event of interest (default 1).
    competing_events : int or list of status codes of competing events; default: every
        code other than ``event_of_interest`` and ``censor_code``. When given, any other
        code is an error.
    censor_code : status code of censored rows (default 0).
    formulation : 'sparse' (O(nnz_j) per coordinate, default) or 'scan' (O(N)).
    variance : the standard errors a fit shows: 'robust' (default: Fine & Gray's sandwich,
        as ``cmprsk::crr`` reports them) or 'model-based' (inverse observed information of
        the pseudo partial likelihood, crr's ``inf``).

    Reads ``time``, ``status``, optional ``weights``, ``offset`` and ``censor_weights``. Ties:
    Breslow. Without ``censor_weights`` the censoring survival G is the Kaplan-Meier estimate
    of the (case-weighted) data, recomputed for each cross-validation fold and bootstrap draw,
    as ``cmprsk::crr``; with them (Cyclops' ``censorWeights``, e.g. from a model of the
    censoring) G(T-) of each row is taken as given and fixed across replicates, and the robust
    standard errors treat it as known (the sandwich without crr's term for estimating G).

    Examples
    --------
    >>> FineGrayModel().variance, FineGrayModel(variance="model-based").options()["variance"]
    ('robust', 'model-based')
    """

    name = "fine_gray"
    drops_constant_covariates = True
    ratio_name = "subdistribution_hazard_ratio"
    reads_censor_weights = True

    def __init__(self, event_of_interest: int = 1, competing_events=None, censor_code: int = 0,
                 formulation: str = "sparse", variance: str = "robust"):
        if formulation not in FORMULATIONS:
            raise InputError(f"formulation must be one of {FORMULATIONS}, not {formulation!r}")
        if variance not in VARIANCES:
            raise InputError(f"variance must be one of {VARIANCES}, not {variance!r}")
        self.variance = variance
        self.event_of_interest = int(event_of_interest)
        if competing_events is not None:
            competing_events = [int(c) for c in np.atleast_1d(competing_events)]
        self.competing_events = competing_events
        self.censor_code = int(censor_code)
        if self.event_of_interest == self.censor_code:
            raise InputError("event_of_interest and censor_code must differ")
        if competing_events is not None and (self.event_of_interest in competing_events
                                             or self.censor_code in competing_events):
            raise InputError("competing_events must not contain event_of_interest or censor_code")
        self.formulation = formulation

    @classmethod
    def from_spec(cls, spec):
        ties = str(spec.get("ties", "breslow")).lower()
        if ties != "breslow":
            raise ValueError(f"the fine_gray model supports Breslow ties only, not {ties!r}")
        comp = spec.get("competing_events", spec.get("competing_event"))
        return cls(event_of_interest=spec.get("event_of_interest", 1), competing_events=comp,
                   censor_code=spec.get("censor_code", 0), formulation=spec.get("formulation", "sparse"),
                   variance=spec.get("variance", "robust"))

    def options(self):
        opts = {"event_of_interest": self.event_of_interest, "censor_code": self.censor_code}
        if self.competing_events is not None:
            opts["competing_events"] = list(self.competing_events)
        if self.formulation != "sparse":
            opts["formulation"] = self.formulation
        if self.variance != "robust":
            opts["variance"] = self.variance
        return opts

    def classify(self, data, require_event=True) -> CompetingRiskOutcome:
        return classify_status(data.status, self.event_of_interest, self.competing_events, self.censor_code,
                               data.row_ids, require_event=require_event)

    def checked(self, data, require_event: bool = True):
        """(times, classified status, given G(T-) or None) of ``data``, checked: no (start, stop]
        rows, no strata, valid times, codes and censoring weights (and an event of interest if
        ``require_event``: a shard of sharded data may have none)."""
        data.require("time", "status", model=self.name)
        if data.start is not None:
            raise InputError("the fine_gray model does not support (start, stop] data (left truncation)")
        if data.strata is not None:
            raise InputError("the fine_gray model does not support strata")
        time = check_times(data.time, data.row_ids)
        outcome = self.classify(data, require_event=require_event)
        G = None if data.censor_weights is None else check_censor_weights(data.censor_weights, time, outcome,
                                                                          data.row_ids)
        return time, outcome, G

    def prepare(self, data, warn: bool = True) -> _Prepared:
        """Validate the data and drop zero-variance covariates (with a warning)."""
        time, outcome, G = self.checked(data)
        if warn and not outcome.competing.any():
            warnings.warn("no competing events in the data: the Fine-Gray model reduces to the Cox model "
                          "(Breslow ties)", DataWarning, stacklevel=4)
        X = canonical_csc(data.X)
        X, names = drop_constant_covariates(X, list(data.covariate_names), warn)
        return _Prepared(X, names, time, outcome, data.weights, data.offset, G)

    def datafit(self, data) -> FineGrayDatafit:
        self._cache = None
        p = self._prepared(data, warn=True)
        return require_information(FineGrayDatafit(p.X, p.time, p.outcome.event, p.outcome.competing,
                                                   p.outcome.censored, p.weights, p.offset,
                                                   formulation=self.formulation, censor_weights=p.censor_weights),
                                   self.name)

    def coef_names(self, data):
        return list(self._prepared(data, warn=False).names)

    def predict(self, fit, data, kind="link"):
        """'link' (R's 'lp') = x beta + offset, 'risk' = exp(link) (relative subdistribution hazard).

        Cumulative incidence curves: :func:`riskset.competing_risks.predict_cif`.
        """
        if kind not in HAZARD_KINDS:
            refuse_kind("fine_gray", kind, HAZARD_KINDS,
                        NO_RESPONSE + "; cumulative incidence: riskset.competing_risks.predict_cif")
        eta = fit.linear_predictor(data)
        return np.exp(eta) if kind == "risk" else eta
