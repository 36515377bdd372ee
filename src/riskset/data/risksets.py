"""Risk-set bookkeeping for the Cox family (all static, computed once per data set).

Every Cox variant (plain, stratified, counting-process ``(start, stop]``, step-function
time-varying coefficients) is reduced to one representation:

* rows sorted by (stratum ascending, stop time descending);
* **slots**: the distinct event times of each stratum in ascending order, followed by
  one empty terminal slot per stratum. Stratum ``s`` owns the slots
  ``offset_s .. offset_s + K_s`` (``K_s`` event times plus the terminal slot), so
  ``n_slots = K + n_strata``;
* per row two slot indices ``ks <= ke``: ``ks = offset_s + #{event times of s <= start}``
  (``offset_s`` when there is no start), ``ke = offset_s + #{event times of s <= stop}``.
  The row is at risk at event slot ``p`` exactly when ``ks <= p < ke`` (risk set
  ``start < t <= stop``); an event row has its event at slot ``ke - 1``.

Risk-set sums are then difference arrays over slots (``+w`` at ``ks``, ``-w`` at ``ke``)
and per-stratum cumulative sums; no per-stratum loop is needed anywhere.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numba import njit, prange

from riskset.data.ordering import lexsort
from riskset.exceptions import InputError


@dataclass
class RiskSets:
    """Static risk-set structure of a Cox data set (see the module docstring).

    Row arrays are in sorted order; ``order[i]`` is the input row of sorted row ``i``.
    """

    order: np.ndarray          # (n,) int64, sorted row -> input row
    ks: np.ndarray             # (n,) slot of entry (int32 where the slots fit, else int64)
    ke: np.ndarray             # (n,) slot of exit (as ks)
    event: np.ndarray          # (n,) uint8 status in sorted order
    row_stratum: np.ndarray    # (n,) int64 stratum code in sorted order
    slot_time: np.ndarray      # (n_slots,) event time (inf for terminal slots)
    slot_stratum: np.ndarray   # (n_slots,) int64
    slot_first: np.ndarray     # (n_slots,) uint8: first slot of its stratum
    slot_last: np.ndarray      # (n_slots,) uint8: terminal slot of its stratum
    slot_d: np.ndarray         # (n_slots,) weighted number of events (sum of case weights)
    slot_m: np.ndarray         # (n_slots,) number of event rows with positive weight (Efron)
    has_start: bool

    @property
    def n_slots(self) -> int:
        return self.slot_time.shape[0]


def build_risk_sets(time, status, start=None, strata=None, weights=None) -> RiskSets:
    """Sort the rows and compute entry/exit slots: one parallel sort
    (:func:`riskset.data.ordering.lexsort`), then linear passes over the sorted rows.

    ``start`` may contain ``-inf`` (at risk from the beginning). ``strata`` are integer
    codes; every stratum is expected to have at least one event (the model drops the
    others beforehand).
    """
    time = np.asarray(time, dtype=np.float64)
    n = time.shape[0]
    status = np.asarray(status).astype(np.uint8)
    strata = np.zeros(n, np.int64) if strata is None else np.asarray(strata, dtype=np.int64)
    weights = np.ones(n) if weights is None else np.asarray(weights, dtype=np.float64)
    has_start = start is not None

    # stratum ascending, time descending (events before censored rows at equal time)
    order = lexsort((-status.astype(np.int64), -time, strata))
    t, s, ev, cw = np.empty(n), np.empty(n, np.int64), np.empty(n, np.uint8), np.empty(n)
    _sorted_rows(order, time, strata, status, weights, t, s, ev, cw)
    n_strata = int(s.max()) + 1 if n else 0

    # event slots: stratum s owns offset_s .. offset_s + K_s, its K_s event times ascending and a
    # terminal slot; a row exits after the event times of its stratum at or before its time
    later, first_at_time = later_event_times(s, t, ev)
    k_per_stratum = np.bincount(s[first_at_time], minlength=n_strata)
    offsets = np.concatenate([[0], np.cumsum(k_per_stratum + 1)]).astype(np.int64)
    n_slots = int(offsets[-1])
    # int32 where the slots fit: the O(N) passes of a state and a Hessian-vector product read them
    itype = np.int32 if n_slots < 2**31 - 1 else np.int64
    last_event_slot = offsets[s] + k_per_stratum[s] - 1  # of the row's stratum
    ke = (last_event_slot + 1 - later).astype(itype)
    slot_stratum = np.repeat(np.arange(n_strata, dtype=np.int64), k_per_stratum + 1)
    slot_time = np.full(n_slots, np.inf)
    slot_time[ke[first_at_time] - 1] = t[first_at_time]
    if has_start:
        ks = np.empty(n, itype)
        _entry_slots(np.asarray(start, dtype=np.float64)[order], s, offsets, k_per_stratum, slot_time, ks)
    else:
        ks = offsets[s].astype(itype)
    slot_first = np.zeros(n_slots, np.uint8)
    slot_first[offsets[:-1]] = 1
    slot_last = np.zeros(n_slots, np.uint8)
    slot_last[offsets[1:] - 1] = 1
    evmask = ev == 1
    eslot = ke[evmask] - 1
    slot_d = np.bincount(eslot, weights=cw[evmask], minlength=n_slots).astype(np.float64)
    slot_m = np.bincount(eslot, weights=(cw[evmask] > 0), minlength=n_slots).astype(np.float64)
    return RiskSets(order=order, ks=ks, ke=ke, event=ev, row_stratum=s,
                    slot_time=slot_time, slot_stratum=slot_stratum, slot_first=slot_first,
                    slot_last=slot_last, slot_d=slot_d, slot_m=slot_m, has_start=has_start)


@njit(cache=True, nogil=True, parallel=True, error_model="numpy")
def _sorted_rows(order, time, strata, status, weights, t, s, ev, cw):
    """The rows' time, stratum, status and weight in the sorted ``order``: one pass of gathers
    on all threads (NumPy's fancy indexing takes four, on one)."""
    for i in prange(order.shape[0]):
        r = order[i]
        t[i] = time[r]
        s[i] = strata[r]
        ev[i] = status[r]
        cw[i] = weights[r]


def later_event_times(stratum, time, event):
    """For rows sorted by (stratum ascending, time descending, events first at a time): the
    number of distinct event times of each row's stratum strictly later than its time, and
    whether a row is the first of its event time (an event that starts its run of equal times).

    >>> later, first = later_event_times(np.zeros(5, np.int64), np.array([5.0, 4.0, 4.0, 3.0, 3.0]),
    ...                                  np.array([1, 1, 1, 0, 1], np.uint8))
    >>> later.tolist(), first.tolist()
    ([0, 1, 1, 2, 2], [True, True, False, False, False])
    """
    later = np.empty(time.shape[0], np.int64)
    first = np.empty(time.shape[0], np.bool_)
    _later_event_times(stratum, time, event, later, first)
    return later, first


@njit(cache=True, nogil=True, error_model="numpy")
def _later_event_times(stratum, time, event, later, first):
    seen = 0  # distinct event times of the stratum so far (all later than the current run)
    before = 0  # ... before the current run of equal times
    for i in range(time.shape[0]):
        if i == 0 or stratum[i] != stratum[i - 1]:
            seen = 0
            starts_run = True
        else:
            starts_run = time[i] != time[i - 1]
        if starts_run:
            before = seen
        later[i] = before
        first[i] = starts_run and event[i] == 1
        if first[i]:
            seen += 1


@njit(cache=True, nogil=True, parallel=True, error_model="numpy")
def _entry_slots(start, stratum, offsets, k_per_stratum, slot_time, ks):
    """ks[i] = offset_s + #{event times of stratum s <= start[i]} (a binary search of the
    stratum's ascending event slots; 0 of them for -inf)."""
    for i in prange(start.shape[0]):
        s = stratum[i]
        lo, hi = offsets[s], offsets[s] + k_per_stratum[s]
        while lo < hi:
            mid = (lo + hi) // 2
            if slot_time[mid] <= start[i]:
                lo = mid + 1
            else:
                hi = mid
        ks[i] = lo


#: Slot counts below which the per-non-zero slots are 16-bit (times in days: claims data).
NARROW_SLOTS = 2**16


def slots_at_nonzeros(indices, rs: RiskSets, statuses: bool):
    """Entry slot, exit slot and status of the row of every stored non-zero (``indices``: their
    rows): ``ks[indices]``, ``ke[indices]`` and ``event[indices]``. The slots are uint16 where
    every slot index (0 .. n_slots) fits, as with times in days (2 bytes per non-zero each, not
    4), else of ``ks``'s type (int32 when the slots fit). Without start times every row enters
    at its stratum's first slot, which the kernels know: the entry slots are not stored (an
    empty array). The statuses are stored only if ``statuses`` (Efron's ties: the kernels read
    a non-zero's status only for a tied event's correction; Breslow's never do), else an
    empty array."""
    nnz = indices.shape[0]
    stype = np.uint16 if rs.n_slots < NARROW_SLOTS else rs.ks.dtype
    ksn = np.empty(nnz if rs.has_start else 0, stype)
    ken, evn = np.empty(nnz, stype), np.empty(nnz if statuses else 0, np.uint8)
    _gather_rows(indices, rs.ks, rs.ke, rs.event, rs.has_start, statuses, ksn, ken, evn)
    return ksn, ken, evn


@njit(cache=True, nogil=True, parallel=True, error_model="numpy")
def _gather_rows(indices, ks, ke, event, has_start, statuses, ksn, ken, evn):
    for k in prange(indices.shape[0]):
        r = indices[k]
        if has_start:
            ksn[k] = ks[r]
        ken[k] = ke[r]
        if statuses:
            evn[k] = event[r]


def column_breakpoints(indptr, indices, ks, ke):
    """Per column, the non-zeros' entry (+) and exit (-) breakpoints sorted by slot.

    Returns ``codes`` of length ``2 * nnz``: column j owns ``codes[2*indptr[j]:2*indptr[j+1]]``;
    code ``2*e`` is the entry of non-zero ``e`` (slot ``ks[indices[e]]``), ``2*e+1`` its exit
    (slot ``ke[indices[e]]``). int32 when it fits.
    """
    nnz = indices.shape[0]
    col = np.repeat(np.arange(indptr.shape[0] - 1, dtype=np.int64), np.diff(indptr))
    pos = np.empty(2 * nnz, np.int64)
    pos[0::2] = ks[indices]
    pos[1::2] = ke[indices]
    colx = np.repeat(col, 2)
    perm = np.lexsort((pos, colx))
    dtype = np.int32 if 2 * nnz < 2**31 - 1 else np.int64
    return perm.astype(dtype)


def split_at_cuts(start, stop, status, cuts):
    """Split follow-up ``(start, stop]`` at ``cuts`` for a step-function coefficient.

    Interval ``i`` is ``(c_{i-1}, c_i]`` in event time (``c_0 = -inf``, ``c_m = inf``), as
    R's ``survSplit`` and ``coxph``'s ``tt()``: an event exactly at a cut point belongs to
    the interval that ends there, and a row starting at a cut lies wholly in the later ones.
    Every piece is ``(max(start, c_{i-1}), min(stop, c_i)]``; only the last piece of a row
    keeps its status. Vectorized; returns ``(row, piece_start, piece_stop, piece_status,
    interval)``.

    >>> row, lo, hi, st, iv = split_at_cuts([0.0, 10.0], [10.0, 25.0], [1, 1], [10.0, 20.0])
    >>> row.tolist(), lo.tolist(), hi.tolist(), st.tolist(), iv.tolist()
    ([0, 1, 1], [0.0, 10.0, 20.0], [10.0, 20.0, 25.0], [1, 0, 1], [0, 1, 2])
    """
    cuts = np.unique(np.asarray(cuts, dtype=np.float64))
    lo = np.concatenate([[-np.inf], cuts])
    hi = np.concatenate([cuts, [np.inf]])
    start = np.asarray(start, dtype=np.float64)
    stop = np.asarray(stop, dtype=np.float64)
    # interval of the first and last piece of each row
    first = np.searchsorted(cuts, start, side="right")  # start >= c_i -> after interval i
    last = np.searchsorted(cuts, stop, side="left")     # stop <= c_i -> interval i or earlier
    last = np.maximum(last, first)
    npieces = last - first + 1
    row = np.repeat(np.arange(start.shape[0], dtype=np.int64), npieces)
    within = np.arange(row.shape[0]) - np.repeat(np.cumsum(npieces) - npieces, npieces)
    interval = first[row] + within
    p_start = np.maximum(start[row], lo[interval])
    p_stop = np.minimum(stop[row], hi[interval])
    is_last = within == npieces[row] - 1
    p_status = np.where(is_last, np.asarray(status)[row], 0)
    keep = p_start < p_stop
    return row[keep], p_start[keep], p_stop[keep], p_status[keep], interval[keep]


def expand_time_varying(X, names, start, stop, status, time_varying):
    """Split rows at the cut points and give each time-varying covariate one column per interval.

    ``time_varying``: covariate name -> cut points. Rows are split once at the union of
    all cuts (:func:`split_at_cuts`); covariate ``v`` with cuts ``c`` is replaced by the
    columns ``v(0,c1]``, ``v(c1,c2]``, ..., ``v(cm,inf)`` holding its value on the pieces of
    that interval (event times in it, an event at ``c1`` in the first) and 0 elsewhere.
    Returns ``(X, names, row, start, stop, status)`` of the pieces (``row`` = original row
    of each piece; ``start`` is -inf where there was none).
    """
    import scipy.sparse as sp

    n = np.asarray(stop).shape[0]
    st = np.full(n, -np.inf) if start is None else np.asarray(start, dtype=np.float64)
    all_cuts = np.asarray(sorted({float(c) for v in time_varying.values() for c in v}), dtype=np.float64)
    row, p_start, p_stop, p_status, piece_iv = split_at_cuts(st, stop, status, all_cuts)
    Xp = sp.csr_matrix(X)[row].tocsc()
    piece_lo = np.concatenate([[-np.inf], all_cuts])[piece_iv]  # lower event-time bound of each piece
    blocks, new_names = [], []
    for j, name in enumerate(names):  # loop over covariates (columns), not rows
        col = Xp[:, j]
        if name not in time_varying:
            blocks.append(col)
            new_names.append(name)
            continue
        cuts = np.unique(np.asarray(time_varying[name], dtype=np.float64))
        own = np.searchsorted(cuts, piece_lo, side="right")  # this covariate's interval of each piece
        for i, lab in enumerate(interval_labels(cuts, lower=0.0)):
            blocks.append(sp.csc_matrix(sp.diags((own == i).astype(np.float64)) @ col))
            new_names.append(f"{name}{lab}")
    Xn = sp.hstack(blocks, format="csc") if blocks else sp.csc_matrix((row.shape[0], 0))
    return Xn, new_names, row, p_start, p_stop, np.asarray(p_status).astype(np.uint8)


def interval_labels(cuts, lower=0.0) -> list[str]:
    """Names ``(lo,c1]``, ``(c1,c2]`` ... ``(cm,inf)`` of the intervals of :func:`split_at_cuts`
    (closed on the right as R's ``survSplit``: an event at ``c1`` is in ``(lo,c1]``).

    >>> interval_labels([10, 365])
    ['(0,10]', '(10,365]', '(365,inf)']
    """
    cuts = np.unique(np.asarray(cuts, dtype=np.float64))
    edges = [lower] + list(cuts) + [np.inf]
    return [f"({_fmt(a)},{_fmt(b)}{')' if np.isinf(b) else ']'}" for a, b in zip(edges[:-1], edges[1:])]


def _fmt(v) -> str:
    if np.isinf(v):
        return "inf" if v > 0 else "-inf"
    return f"{v:g}"


def check_survival(time, status, start=None, subject=None, row_ids=None, need_event: bool = True):
    """Validate a survival outcome; raise :class:`InputError` naming the first bad row (and,
    if ``need_event``, saying that no row has an event)."""
    n = len(time)
    ids = np.arange(n) if row_ids is None else row_ids

    def where(mask):
        i = int(np.flatnonzero(mask)[0])
        return i, _py(ids[i])

    def finite_nonnegative(values, what):
        values = np.asarray(values, dtype=np.float64)
        bad = ~np.isfinite(values)
        if bad.any():
            i, rid = where(bad)
            raise InputError(f"{what} is not finite ({values[i]}) at row {rid!r}")
        if np.any(values < 0):
            i, rid = where(values < 0)
            raise InputError(f"negative {what} {values[i]} at row {rid!r}")
        return values

    time = finite_nonnegative(time, "survival time")
    st = np.asarray(status)
    stf = st.astype(np.float64)
    badst = ~np.isin(stf, (0.0, 1.0))
    if badst.any():
        i, rid = where(badst)
        codes = np.unique(stf[badst])[:5]
        raise InputError(f"status must be 0 (censored) or 1 (event); found {_py(st[i])!r} at row {rid!r} "
                         f"(codes {', '.join(f'{c:g}' for c in codes)}); competing events need the fine_gray model")
    if need_event and not np.any(stf == 1):
        raise InputError("all rows are censored: the Cox model needs at least one event")
    if start is not None:
        start = finite_nonnegative(start, "start time")
        if np.any(start >= time):
            i, rid = where(start >= time)
            raise InputError(f"start time {start[i]} is not before stop time {time[i]} at row {rid!r} "
                             "(counting-process intervals are (start, stop] with start < stop)")
        if subject is not None:
            subject = np.asarray(subject)
            o = np.lexsort((start, subject))
            same = subject[o][1:] == subject[o][:-1]
            overlap = same & (start[o][1:] < time[o][:-1])
            if overlap.any():
                k = int(np.flatnonzero(overlap)[0])
                a, b = o[k], o[k + 1]
                raise InputError(f"overlapping intervals for subject {_py(subject[a])!r}: rows {_py(ids[a])!r} "
                                 f"({start[a]:g}, {time[a]:g}] and {_py(ids[b])!r} ({start[b]:g}, {time[b]:g}]")


def _py(v):
    return v.item() if isinstance(v, np.generic) else v


def risk_set_rank(ks, ke, weights, slot_d) -> int:
    """Sum over event slots with a positive weighted count ``slot_d`` of (rows at risk there with
    a positive weight - 1): a bound on the rank of a Cox Hessian, each event time's term being
    a weighted covariance over its risk set (rows by entry and exit slots ``ks``, ``ke``)."""
    at_risk = rows_at_risk(ks, ke, weights, slot_d.shape[0])
    return int(np.maximum(at_risk[slot_d > 0] - 1, 0).sum())


def some_event_has_company(ks, ke, event, weights, n_slots: int) -> bool:
    """Whether some event (``event == 1``) of positive weight has another row of positive weight
    in its risk set: at its slot ke - 1, rows with ks <= ke - 1 < their ke are at risk.

    >>> ks, ke = np.zeros(3, np.int64), np.array([1, 2, 2])   # slots 0, 1 (times 2, 1)
    >>> some_event_has_company(ks, ke, np.array([0, 1, 0], np.uint8), np.ones(3), 2)
    True
    >>> some_event_has_company(ks, ke, np.array([0, 1, 0], np.uint8), np.array([1.0, 1.0, 0.0]), 2)
    False
    """
    return _event_with_company(rows_at_risk(ks, ke, weights, n_slots), ke, event, weights)


@njit(cache=True, nogil=True, error_model="numpy")
def rows_at_risk(ks, ke, weights, n_slots):
    """Per slot k, the rows of positive weight at risk there (ks <= k < ke): one pass over the
    rows, one over the slots."""
    at_risk = np.zeros(n_slots + 1, np.int64)
    for r in range(ke.shape[0]):
        if weights[r] > 0.0:
            at_risk[ks[r]] += 1
            at_risk[ke[r]] -= 1
    for k in range(1, n_slots):
        at_risk[k] += at_risk[k - 1]
    return at_risk[:n_slots]


@njit(cache=True, nogil=True, error_model="numpy")
def _event_with_company(at_risk, ke, event, weights):
    for r in range(ke.shape[0]):
        if event[r] == 1 and weights[r] > 0.0 and at_risk[ke[r] - 1] >= 2:
            return True
    return False
