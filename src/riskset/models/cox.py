"""Cox proportional hazards: Breslow / Efron ties, strata, (start, stop] rows, step-function
time-varying coefficients, case weights and offsets.

Log partial likelihood maximized (per stratum, per event time t with tied event rows
i = 1..m, weighted event count d = sum c_i, ``w = c exp(eta)``)::

    Breslow: l = sum_events c eta - sum_t d log D_t,          D_t = sum_{at risk at t} w
    Efron:   l = sum_events c eta - sum_t (d/m) sum_{l<m} log(D_t - (l/m) E_t),  E_t = sum_{events at t} w

(R's ``coxph`` with case weights). Risk set at t: ``start < t <= stop`` (``time >= t``
without start), within the row's stratum. l is invariant to adding a constant to eta
within a stratum; the sums are computed with the stratum's largest eta subtracted, so
that an uncentered covariate (a calendar year) or the coefficient of a covariate constant within
strata leaves them in floating-point range (:func:`~riskset.kernels.cpu.cox_rows.stratum_shifts`).

Two formulations of the per-coordinate gradient and Hessian (``formulation=``):

* ``"sparse"`` (default): O(nnz_j) per coordinate from cumulative per-event-time
  aggregates (docs/math.md section 3, generalized to Efron ties and to start-stop rows
  through entry/exit slots, see :mod:`riskset.kernels.cpu.cox`). ``move`` keeps the
  per-slot weight sums current in O(nnz_j) and marks the state dirty; the next
  ``coordinate`` refreshes the aggregates in O(number of event times + strata), not
  O(N) (rather than one O(N) refresh per move).
* ``"scan"``: the papers' O(N) scans per coordinate, kept to compare and test against.

Efron ties use the same sparse trick exactly (the extra terms are per-event-row sums
and a cross term in the walk).
"""
from __future__ import annotations

import warnings
from dataclasses import dataclass, replace
from functools import cached_property

import numba
import numpy as np
import scipy.sparse as sp

from riskset.core.design import canonical_csc, column_runs
from riskset.data.risksets import (build_risk_sets, check_survival, column_breakpoints, expand_time_varying,
                                   interval_labels, risk_set_rank, slots_at_nonzeros,
                                   some_event_has_company)
from riskset.exceptions import DataWarning, InputError
from riskset.kernels.cpu import cox as cox_kernels
from riskset.kernels.cpu import cox_walks
from riskset.kernels.cpu.cox_records import (DeviceCox, Rows, ScanData, ScanState, Slots, SparseData, SparseState,
                                             Sums)
from riskset.kernels.cpu.cox_aggregates import loglik_slots, refresh, rows_denominators
from riskset.kernels.cpu.cox_hessian import hessian_block, hessian_vector_rows, row_hazard_terms
from riskset.kernels.cpu.cox_rows import case_weights, row_pieces, weights_and_slot_sums
from riskset.core.interface import Reweightable, RunsOnDevice, SlopeRows
from riskset.models.base import (Datafit, FitState, LocalQuadratic, Model, carry_static_gradient,
                                 drop_constant_covariates, refuse_kind, require_information, risk_set_block_work,
                                 weight_overflow, HAZARD_KINDS, NO_RESPONSE, VARIANCES)
from riskset.validation import coef_mapping, finite_numbers, one_of

TIES = ("breslow", "efron")
FORMULATIONS = ("sparse", "scan")
NO_CODES = np.zeros(0, np.int32)  # the column breakpoints of right-censored data (never read)
#: A view reads its rows of positive weight alone for a log-likelihood (CoxDatafit.loglik_at)
#: where they are at most 1 / FEW_ROWS of its rows.
FEW_ROWS = 4


class CoxDatafit(Datafit, Reweightable, SlopeRows, RunsOnDevice):
    """Cox log partial likelihood over rows in (stratum, time descending) order.

    Parameters: ``X`` and the outcome arrays in *input* order; the datafit sorts them.
    ``order`` (attribute) maps datafit rows to input rows.
    """

    sweep_passes = 30.0  # risk-set sums refreshed per moved coordinate (Datafit.sweep_passes)

    device_datafit = "cox:CoxDeviceDatafit"

    def __init__(self, X, time, status, start=None, strata=None, weights=None, offset=None,
                 ties="breslow", formulation="sparse"):
        if ties not in TIES:
            raise ValueError(f"ties must be one of {TIES}, not {ties!r}")
        if formulation not in FORMULATIONS:
            raise ValueError(f"formulation must be one of {FORMULATIONS}, not {formulation!r}")
        n = len(time)
        weights = np.ones(n) if weights is None else np.asarray(weights, dtype=np.float64)
        rs = build_risk_sets(time, status, start, strata, weights)
        order = rs.order
        off = None if offset is None else np.asarray(offset, dtype=np.float64)[order]  # large ones: new_state
        super().__init__(X, off, rows=order)
        self.rs = rs
        self.order = order
        self.ties = ties
        self.formulation = formulation
        self.kernels = cox_kernels.SCAN_KERNELS if formulation == "scan" else cox_kernels.SPARSE_KERNELS
        self.efron = ties == "efron" and bool(np.any(rs.slot_m > 1))
        self.cw = np.ascontiguousarray(weights[order])
        self.ks, self.ke, self.event = rs.ks, rs.ke, rs.event
        self.has_start = rs.has_start
        # static: sum over event rows of c x_j
        # static per stored non-zero: entry / exit slot and status of its row (sequential reads)
        if formulation == "sparse":
            # a status per non-zero only for Efron's ties: a reweighted view is Efron only if its base model is
            self.ksn, self.ken, self.evn = slots_at_nonzeros(self.indices, rs, statuses=ties == "efron")
        self.slot_ptr = np.r_[0, np.flatnonzero(rs.slot_last) + 1].astype(np.int64)
        self.n_strata = self.slot_ptr.shape[0] - 1
        self.strata_ptr, _, self.col_strata = column_runs(self.indptr, self.indices, rs.row_stratum, starts=False)
        # in col_strata's dtype, as the sweep's refresh takes its strata: one compiled refresh (cox.PARTIAL)
        self.all_strata = np.arange(self.n_strata, dtype=self.col_strata.dtype)
        self.row_pieces = row_pieces(rs.row_stratum, rs.ke)  # the O(N) passes in parallel (weights_and_slot_sums)
        self.walk_chunk = cox_walks.WALK_CHUNK  # non-zeros per chunk of a column's parallel walk and move
        self.codes = None
        if formulation == "sparse" and self.has_start:
            self.codes = column_breakpoints(self.indptr, self.indices, self.ks, self.ke)
        self.data_rows = order  # Dataset row of each datafit row (set by CoxModel.datafit)
        self.scored_rows = None  # a view's few rows of positive weight (reweighted), read alone by loglik_at

    def data_weights(self):
        """Case weights in Dataset row order (every piece of a split row carries the row's weight)."""
        return self.scatter_to_data_rows(self.data_rows, self.cw)

    def reweighted(self, weights):
        """The same datafit with case weights ``weights`` (Dataset row order), sharing X, the sort
        and every static structure; weight 0 removes a row exactly (also for Efron ties)."""
        new = object.__new__(type(self))
        new.__dict__.update(self.__dict__)
        cw, slot_d, slot_m = np.empty(self.n_rows), np.zeros(self.rs.n_slots), np.zeros(self.rs.n_slots)
        case_weights(np.ascontiguousarray(weights, dtype=np.float64), self.data_rows, self.event, self.ke, cw, slot_d,
                       slot_m)
        new.rs = replace(self.rs, slot_d=slot_d, slot_m=slot_m)
        new.cw = cw
        new.efron = self.ties == "efron" and bool(np.any(slot_m > 1))
        new.__dict__.pop("gx0", None)
        new.__dict__.pop("hessian_rank", None)
        carry_static_gradient(self, new)
        positive = np.flatnonzero(cw > 0)
        new.scored_rows = positive if positive.size * FEW_ROWS <= self.n_rows else None
        return new

    @cached_property
    def breslow_zeros(self) -> np.ndarray:
        """Efron's per-slot terms R1, R2, T2 of every state without Efron's ties: zeros that the
        kernels read and never write (only Efron's scans store them), one array shared by the
        states of this datafit and its views (a fresh zeroed array per state and term cost a
        serial memset of 8 bytes a slot each)."""
        return np.zeros(self.rs.n_slots)

    @cached_property
    def hessian_rank(self) -> int:
        """The Hessian is the sum over event times of the weighted covariance of x across the
        risk set: rank at most (rows at risk with positive weight - 1) per event time with a
        positive weight (a matched pair: one per event)."""
        return risk_set_rank(self.ks, self.ke, self.cw, self.rs.slot_d)

    @cached_property
    def gx0(self):
        """The gradient's static part, X' (c * event), computed on first use: a view that only
        scores held-out rows or checks its information never needs it (a third of a view's
        cost; a training fold's view has it from the full data's, :meth:`reweighted`)."""
        return self.products.dot(np.arange(self.n_coef), self.cw * self.event)

    def missing_information(self):
        """None if some event of positive weight has another row of positive weight in its
        risk set (the partial likelihood compares each event with the rows at risk)."""
        if some_event_has_company(self.ks, self.ke, self.event, self.cw, self.rs.n_slots):
            return None
        positive = self.cw > 0
        if not np.any((self.event == 1) & positive):
            return (f"no event has a positive weight ({int(np.sum(self.event == 1))} event(s)), so the Cox "
                    "likelihood carries no information")
        n_strata = int(self.rs.row_stratum.max()) + 1
        rows = np.bincount(self.rs.row_stratum, weights=positive, minlength=n_strata)
        if n_strata > 1 and np.all(rows <= 1):
            return (f"all {n_strata} strata with an event have a single row (of positive weight): a stratified Cox "
                    "likelihood compares rows within strata, so it carries no information")
        return ("no event has another row of positive weight in its risk set (in its stratum, at its time): the "
                "Cox likelihood compares each event with the rows at risk, so it carries no information")

    # -- state --------------------------------------------------------------------
    def new_state(self, beta):
        """State at ``beta``. It owns every array a sweep writes (the scan's column work
        vector ``xd`` included), so states of one datafit can be swept in parallel threads.
        ``moved`` (their count, then their indices) lists the columns that sparse moves changed
        since the aggregates of their strata were last refreshed (:mod:`riskset.kernels.cpu.cox`, bottom)."""
        state = FitState(np.ascontiguousarray(self.linear_predictor(beta), dtype=np.float64))
        n, ns = self.n_rows, self.rs.n_slots
        state.w = np.empty(n)
        state.shift = np.empty(self.n_strata)  # per stratum: w = c exp(eta - shift), stratum_shifts
        # every slot written by _sync; Efron's R1, R2, T2 written with ties, else read as zeros
        R1, R2, T2 = (np.zeros(ns) for _ in range(3)) if self.efron else (self.breslow_zeros,) * 3
        state.sums = Sums(ex=np.empty(ns), en=np.empty(ns), ev=np.empty(ns), D=np.empty(ns), Q1=np.empty(ns),
                          Q2=np.empty(ns), R1=R1, R2=R2, T2=T2, A1c=np.empty(ns), A2c=np.empty(ns))
        state.moved = np.zeros(cox_kernels.MOVED_COLUMNS + 1, np.int64)
        self._sync(state)
        if self.formulation == "scan":
            state.xd = np.zeros(n)  # the column of the scan, scattered to rows
            state.kernel = ScanState(eta=state.eta, w=state.w, xd=state.xd)
        else:
            state.kernel = SparseState(eta=state.eta, w=state.w, sums=state.sums, moved=state.moved)
        return state

    def slots(self) -> Slots:
        """The event slots as the kernels read them (built per call: a reweighted view has its
        own event counts and ties)."""
        rs = self.rs
        return Slots(slot_ptr=self.slot_ptr, slot_stratum=rs.slot_stratum, slot_last=rs.slot_last,
                     slot_d=rs.slot_d, slot_m=rs.slot_m, has_start=self.has_start, efron=self.efron)

    def rows(self) -> Rows:
        """The rows as the kernels read them (built per call: a reweighted view has its own case weights)."""
        piece_ptr, piece_stratum = self.row_pieces
        return Rows(cw=self.cw, ks=self.ks, ke=self.ke, event=self.event, row_stratum=self.rs.row_stratum,
                    piece_ptr=piece_ptr, piece_stratum=piece_stratum)

    def kernel_data(self):
        """The static arrays of the formulation's kernels (:mod:`riskset.kernels.cpu.cox`, bottom), and
        whether they may run in parallel (the calling thread's numba thread count, see
        :mod:`riskset.backend`)."""
        if self.formulation == "scan":
            return ScanData(indptr=self.indptr, indices=self.indices, values=self.values, value_shift=self.value_shift,
                            rows=self.rows(), slots=self.slots())
        return SparseData(indptr=self.indptr, indices=self.indices, values=self.values, value_shift=self.value_shift,
                          indicator=self.indicator, gx0=self.gx0, ksn=self.ksn, ken=self.ken, evn=self.evn,
                          codes=NO_CODES if self.codes is None else self.codes, slots=self.slots(),
                          strata_ptr=self.strata_ptr, col_strata=self.col_strata,
                          parallel=numba.get_num_threads() > 1, walk_chunk=self.walk_chunk)

    def device_record(self) -> DeviceCox:
        """What the device datafit copies besides the design (:class:`~riskset.kernels.cpu.cox_records.DeviceCox`):
        the kernels' rows and slots and what no kernel record carries."""
        return DeviceCox(rows=self.rows(), slots=self.slots(), slot_first=self.rs.slot_first, codes=self.codes,
                         data_rows=self.data_rows, products=self.products)

    def _sync(self, state):
        """Exact recomputation of w, the slot sums and the aggregates from eta (O(N)), unless
        current (``FitState.synced``)."""
        if state.synced:
            return
        state.event_terms = weights_and_slot_sums(state.eta, self.rows(), self.slots(), state.w, state.shift,
                                                  state.sums)
        self._refresh(state, full=True)
        state.hazards = state.hazard_sums = None  # v and X' v of this state, once asked (_row_hazards, gradient)
        state.loglik = None
        state.synced = True

    def _refresh(self, state, full=False):
        """The aggregates of every stratum from the slot sums; none is stale after it."""
        refresh(self.all_strata, self.n_strata, self.slots(), state.sums, full, numba.get_num_threads() > 1)
        state.moved[0] = 0

    def loglik(self, state):
        self._sync(state)
        if state.loglik is None:
            state.loglik = state.event_terms + loglik_slots(state.sums.D, state.sums.ev, self.rs.slot_d,
                                                            self.rs.slot_m, self.efron)
        return state.loglik

    def loglik_at(self, beta):
        """The log-likelihood at ``beta``; a view whose rows of positive weight are few (at most
        1 / :data:`FEW_ROWS` of the rows: a fold's held-out rows) reads them alone: their linear
        predictor by the row-major copy of X, their slot sums and denominators in one pass
        (:func:`~riskset.kernels.cpu.cox_aggregates.rows_denominators`), where a state passes over every
        row."""
        rows = self.scored_rows
        if rows is None:
            return super().loglik_at(beta)
        nz = np.flatnonzero(beta)
        eta = self.products.times_at(rows, self.columns(nz), beta[nz])
        if self.has_offset:
            eta += self.offset[rows]
        ns = self.rs.n_slots
        ex, en, ev, D = np.empty(ns), np.empty(ns), np.empty(ns), np.empty(ns)
        event_terms = rows_denominators(rows, eta, self.rows(), self.slots(), np.empty(self.n_strata), ex, en, ev, D)
        return event_terms + loglik_slots(D, ev, self.rs.slot_d, self.rs.slot_m, self.efron)

    def gradient(self, state):
        """dl/dbeta = gx0 - X' v with v the per-row hazard terms (:meth:`_row_hazards`); X' v is
        kept with the state (a Newton step asked next at the same state reads its columns)."""
        state.hazard_sums = self.products.dot(np.arange(self.n_coef), self._row_hazards(state))
        return self.gx0 - state.hazard_sums

    def slopes(self, state, coefs):
        """gx0 - X' v over the columns of ``coefs`` only."""
        coefs = np.asarray(coefs, dtype=np.int64)
        return self.gx0[coefs] - self.products.dot(coefs, self._row_hazards(state))

    def slope_rows(self, state):
        """(v, ||x_j||_2): the gradient is gx0 - X' v (:meth:`gradient`)."""
        return self._row_hazards(state), self.products.column_norms(np.arange(self.n_coef))

    def _row_hazards(self, state):
        """v = :func:`~riskset.kernels.cpu.cox_hessian.row_hazard_terms` at the (synced) state, computed
        once per state: the gradient is gx0 - X' v and the first Hessian term -X' diag(v) X."""
        self._sync(state)
        if state.hazards is None:
            state.hazards = np.empty(self.n_rows)
            row_hazard_terms(state.w, self.rows(), self.slots(), state.sums, state.hazards)
        return state.hazards

    def hessian(self, state, columns):
        """Exact block: -Xc' diag(v) Xc + N1' diag(Q2) N1 - N1' diag(R2) E1 - E1' diag(R2) N1 + E1' diag(T2) E1
        (N1 / E1: risk-set / event sums of w x per event slot), in O(nnz of the columns x
        |columns| + N) from the rows of the columns (:func:`~riskset.kernels.cpu.cox_hessian.hessian_block`).
        """
        self._sync(state)
        cols = np.ascontiguousarray(columns, dtype=np.int64)
        m = cols.shape[0]
        v = self._row_hazards(state)
        rowptr, rcol, rval = self.products.rows_of(cols)
        H = np.empty((m, m))
        hessian_block(rowptr, rcol, rval, state.w, v, self.rows(), self._entry_points, self.slots(), state.sums, H)
        return H

    @cached_property
    def _entry_points(self):
        """Rows entering their risk sets after their stratum's first slot (start times), in
        (stratum ascending, entry slot descending) order: the entry points of
        :func:`~riskset.kernels.cpu.cox_hessian.hessian_block`."""
        late = np.flatnonzero(self.rs.slot_first[self.ks] == 0)
        return np.ascontiguousarray(late[np.lexsort((-self.ks[late], self.rs.slot_stratum[self.ks[late]]))])

    hessian_work = risk_set_block_work

    def local_quadratic(self, state, columns):
        """Gradient, a diagonal scale and ``b -> H b`` on ``columns`` (the block of
        :meth:`hessian`, never formed): O(nnz of the columns + N + n_slots) per product.

        With v = :meth:`_row_hazards`, g = gx0 - X' v and the first Hessian term is
        -X' diag(v) X, whose diagonal X^2' v bounds -h_jj from above. After a :meth:`gradient`
        at this state, columns of indicators (X^2 = X) read both from its X' v: no pass over them.
        """
        cols = np.ascontiguousarray(columns, dtype=np.int64)
        v = self._row_hazards(state)  # w and the full aggregates (Q2, R2, T2) of this state
        if state.hazard_sums is not None and np.all(self.indicator[cols]):
            xv = x2v = state.hazard_sums[cols]
        else:
            xv, x2v = self.products.dot2(cols, v)
        ns = self.rs.n_slots
        U1, E1u, C = np.empty(ns), np.empty(ns), np.empty(ns)
        rows, slots = self.rows(), self.slots()
        u, z = np.empty(self.n_rows), np.empty(self.n_rows)

        columns = self.products.on_columns(cols)

        def hessian_times(b):
            columns.times(b, u)
            hessian_vector_rows(u, state.w, v, rows, slots, state.sums, U1, E1u, C, z)
            return columns.dot(z)

        return LocalQuadratic(self.gx0[cols] - xv, x2v, hessian_times)

    def diagnose(self, state, beta):
        return weight_overflow(state)

    # -- baseline hazard (used by riskset.survival) ---------------------------------------
    def hazard_increments(self, state):
        """(slot_time, slot_stratum, increment) of the Breslow (or Efron) baseline hazard: Q1 of the
        shifted weights times exp(-shift) of the slot's stratum
        (:func:`~riskset.kernels.cpu.cox_rows.stratum_shifts`)."""
        self._sync(state)
        keep = self.rs.slot_d > 0
        stratum = self.rs.slot_stratum[keep]
        return self.rs.slot_time[keep], stratum, state.sums.Q1[keep] * np.exp(-state.shift[stratum])


# -- the user-facing model -------------------------------------------------------------
@dataclass
class _Prepared:
    X: sp.csc_matrix
    names: list
    time: np.ndarray
    status: np.ndarray
    start: np.ndarray | None
    strata: np.ndarray | None
    weights: np.ndarray | None
    offset: np.ndarray | None
    rows: np.ndarray          # prepared row -> dataset row
    stratum_labels: np.ndarray | None  # prepared stratum code -> dataset stratum code


class CoxModel(Model):
    """Cox proportional hazards model (stratified when the data have ``strata``).

    Parameters
    ----------
    ties : 'breslow' (default, as Cyclops, CohortMethod and glmnet) or 'efron'. R's
        ``coxph`` and lifelines default to Efron: pass ``ties='efron'`` to compare with them
        on data with tied event times (without ties the two are the same likelihood).
    time_varying : dict covariate -> cut points, optional
        Step-function coefficients: follow-up is split at the cut points and the
        covariate gets one coefficient per interval, named ``cov(0,10]``,
        ``cov(10,inf)``. As R's ``survSplit`` / ``coxph(tt=)``, the intervals are
        closed on the right: an event exactly at a cut belongs to the interval that ends
        there (at time 10: ``cov(0,10]``), and so does the prediction of a row whose
        ``time`` is 10.
    formulation : 'sparse' (O(nnz_j) per coordinate, default) or 'scan' (O(N)).
    variance : the standard errors a fit shows: 'model-based' (default: the inverse
        information, R's ``coxph``) or 'robust' (the sandwich of ``coxph(robust = TRUE)``,
        clustered by the data's ``subject`` where it has one, as ``cluster(id)``:
        :mod:`riskset.cox_scores`).

    Reads ``time`` (stop), ``status`` (0/1), optional ``start`` (counting process,
    risk set start < t <= stop), ``strata``, ``subject`` (checked for overlapping
    intervals), ``weights``, ``offset``.

    The model reads X's rows sorted by stratum (ascending), then time (descending), events
    before censored rows at a time. Data already in that order (e.g. a query's ``ORDER BY
    stratum_id, time DESC, status DESC``, every stratum with an event) are read in place;
    otherwise the model holds a sorted copy of X's row indices (4 bytes a non-zero).

    Examples
    --------
    >>> import riskset
    >>> d = riskset.from_arrays([[1.0], [0.0], [1.0]], time=[5, 10, 20], status=[1, 1, 0],
    ...                         covariate_names=["trt"])
    >>> CoxModel(time_varying={"trt": [10]}).coef_names(d)
    ['trt(0,10]', 'trt(10,inf)']
    """

    name = "cox"
    uses_strata = True
    drops_constant_covariates = True
    ratio_name = "hazard_ratio"
    r_ties = "efron"

    def __init__(self, ties: str = "breslow", time_varying: dict | None = None, formulation: str = "sparse",
                 variance: str = "model-based"):
        self.ties = one_of("ties", str(ties).lower(), TIES)
        self.formulation = one_of("formulation", formulation, FORMULATIONS)
        self.variance = one_of("variance", variance, VARIANCES)
        self.time_varying = {name: _cut_points(name, cuts)
                             for name, cuts in coef_mapping("time_varying", time_varying).items()}

    @classmethod
    def from_spec(cls, spec):
        return cls(ties=spec.get("ties", "breslow"), time_varying=spec.get("time_varying"),
                   formulation=spec.get("formulation", "sparse"), variance=spec.get("variance", "model-based"))

    def options(self):
        opts = {"ties": self.ties}
        if self.time_varying:
            opts["time_varying"] = {k: list(v) for k, v in self.time_varying.items()}
        if self.formulation != "sparse":
            opts["formulation"] = self.formulation
        if self.variance != "model-based":
            opts["variance"] = self.variance
        return opts

    # -- preparation ----------------------------------------------------------------------
    def prepare(self, data, warn: bool = True, keep_columns: bool = False) -> _Prepared:
        """Validate, drop strata without events and (unless ``keep_columns``) zero-variance
        covariates, split at cuts."""
        data.require("time", "status", model=self.name)
        check_survival(data.time, data.status, data.start, data.subject, data.row_ids)
        status = np.asarray(data.status).astype(np.float64).astype(np.uint8)
        rows = np.arange(data.n_rows)
        strata = None if data.strata is None else np.asarray(data.strata, dtype=np.int64)
        labels = None
        if strata is not None:
            n_ev = np.bincount(strata, weights=status, minlength=int(strata.max()) + 1)
            present = np.bincount(strata, minlength=n_ev.shape[0]) > 0
            empty = np.flatnonzero(present & (n_ev == 0))
            if empty.size:
                if warn:
                    lab = data.strata_labels
                    shown = [repr(lab[s]) if lab is not None and s < len(lab) else repr(int(s)) for s in empty[:10]]
                    warnings.warn(f"dropped {empty.size} stratum/strata without any event (no information): "
                                  f"{', '.join(shown)}{' ...' if empty.size > 10 else ''}", DataWarning, stacklevel=4)
                rows = rows[n_ev[strata] > 0]
            # the strata kept, coded 0 .. in label order (np.unique's inverse, without its sort)
            kept = present & (n_ev > 0)
            labels, strata = np.flatnonzero(kept), (np.cumsum(kept) - 1)[strata[rows]]

        X = canonical_csc(data.X[rows] if rows.shape[0] < data.n_rows else data.X)
        names = list(data.covariate_names)
        if not keep_columns:
            X, names = drop_constant_covariates(X, names, warn)

        def take(a):
            return None if a is None else np.asarray(a)[rows]

        time, start = take(data.time).astype(np.float64), take(data.start)
        weights, offset = take(data.weights), take(data.offset)
        if self.time_varying:
            X, names, time, status_r, start, strata, weights, offset, piece_rows = self._split(
                X, names, time, status[rows], start, strata, weights, offset)
            rows = rows[piece_rows]
            return _Prepared(X, names, time, status_r, start, strata, weights, offset, rows, labels)
        return _Prepared(X, names, time, status[rows], start, strata, weights, offset, rows, labels)

    def _split(self, X, names, time, status, start, strata, weights, offset):
        missing = [c for c in self.time_varying if c not in names]
        if missing:
            raise InputError(f"time-varying coefficient for unknown or constant covariate(s): "
                             f"{', '.join(map(repr, missing))}")
        Xn, new_names, row, p_start, p_stop, p_status = expand_time_varying(X, names, start, time, status,
                                                                            self.time_varying)
        s = None if strata is None else strata[row]
        w = None if weights is None else np.asarray(weights)[row]
        o = None if offset is None else np.asarray(offset)[row]
        return Xn, new_names, p_stop, p_status, p_start, s, w, o, row

    # -- Model interface -----------------------------------------------------------------------
    def datafit(self, data) -> CoxDatafit:
        self._cache = None
        p = self._prepared(data, warn=True)
        datafit = CoxDatafit(p.X, p.time, p.status, p.start, p.strata, p.weights, p.offset, ties=self.ties,
                        formulation=self.formulation)
        datafit.data_rows = np.ascontiguousarray(p.rows[datafit.order])
        return require_information(datafit, self.name)

    def shard_datafit(self, data) -> CoxDatafit | None:
        """A shard of whole strata (:mod:`riskset.sharded`; a Cox model without strata shares its
        risk sets across shards instead: :mod:`riskset.sharded.risk_sets`)."""
        if self.time_varying:
            raise InputError("time-varying coefficients cannot be fitted on sharded data")
        p = self.prepare(data, warn=False, keep_columns=True)
        if not np.any(p.status):
            return None
        datafit = CoxDatafit(p.X, p.time, p.status, p.start, p.strata, p.weights, p.offset, ties=self.ties,
                             formulation=self.formulation)
        datafit.data_rows = np.ascontiguousarray(p.rows[datafit.order])
        return datafit

    def coef_names(self, data):
        return list(self._prepared(data, warn=False).names)

    def covariate_of(self, coef_name):
        return self._interval_covariates.get(coef_name, coef_name)

    @cached_property
    def _interval_covariates(self) -> dict:
        """Coefficient name of each interval of a time-varying covariate -> the covariate."""
        return {f"{name}{lab}": name for name, cuts in self.time_varying.items()
                for lab in interval_labels(np.asarray(cuts, dtype=np.float64), lower=0.0)}

    def predict(self, fit, data, kind="link"):
        """'link' (R's 'lp') = x beta + offset, 'risk' = exp(link) (relative hazard), in data order.
        R's 'response' is refused, as R's predict.coxph has none.

        With time-varying coefficients the coefficient of the interval containing each
        row's ``time`` is used (intervals ``(c_{k-1}, c_k]``: at ``time == c_k``, the one
        ending there). Survival curves: :func:`riskset.survival.predict_survival`.
        """
        if kind not in HAZARD_KINDS:
            refuse_kind("cox", kind, HAZARD_KINDS, NO_RESPONSE + "; survival curves: riskset.survival.predict_survival")
        fit.check_covariates(data)
        eta = linear_predictor(self, fit.coef, data)
        return np.exp(eta) if kind == "risk" else eta


def _cut_points(name: str, cuts) -> list[float]:
    """Cut points of a time-varying coefficient: finite, > 0 and increasing (follow-up
    starts at time 0, so a cut at or below 0 would make an empty interval)."""
    arr = finite_numbers(f"time_varying[{name!r}]", cuts)
    if np.any(arr <= 0) or np.any(np.diff(arr) <= 0):
        raise InputError(f"time_varying[{name!r}] cut points must be > 0 and strictly increasing, "
                         f"got {arr.tolist()}")
    return arr.tolist()


def linear_predictor(model: CoxModel, coef, data) -> np.ndarray:
    """x beta + offset per row of ``data`` (data order), matching coefficients by name."""
    coef = dict(coef.items()) if hasattr(coef, "items") else dict(coef)
    names = list(data.covariate_names)
    beta = np.zeros(len(names))
    eta = np.zeros(data.n_rows)
    for j, n in enumerate(names):
        if n in model.time_varying:
            cuts = np.asarray(model.time_varying[n], dtype=np.float64)
            if data.time is None:  # the coefficient depends on the time: no silent default interval
                raise InputError(f"predict: {n!r} has time-varying coefficients, so the data need a 'time' "
                                 "column (the time at which each row's linear predictor is wanted)")
            t = np.asarray(data.time, dtype=np.float64)
            iv = np.searchsorted(cuts, t, side="left")  # interval (c_{k-1}, c_k] containing t
            wanted = [f"{n}{lab}" for lab in interval_labels(cuts, lower=0.0)]
            absent = [w for w in wanted if w not in coef]
            if absent:  # e.g. a fit saved before the intervals were named (a,b] as R's survSplit
                raise InputError(f"coef: the time-varying coefficients {absent} of {n!r} are missing "
                                 f"(the fit has {sorted(k for k in coef if k.startswith(n))})")
            b_iv = np.array([coef[w] for w in wanted])
            col = np.asarray(data.X[:, j].todense()).ravel()
            eta += col * b_iv[iv]
        else:
            beta[j] = coef.get(n, 0.0)
    eta += np.asarray(data.X @ beta).ravel()
    if data.offset is not None:
        eta += data.offset
    return eta
