"""An exact Cox fit over rows split into shards, whose risk sets span the shards: each shard
reduces its rows to vectors over a global grid of event times, and a driver combines them.
Only per-grid-point vectors and scalars travel, never rows.

Notation and formulas: :mod:`riskset.kernels.cpu.shared_risk_sets` (unstratified Cox, Breslow or
Efron ties, (start, stop] or right-censored rows, case weights and offsets, R's ``coxph``
conventions as :class:`riskset.models.cox.CoxDatafit`). The protocol:

0. once: each shard's :meth:`CoxRowShard.event_times`, merged by the driver's
   :func:`event_time_grid`; each shard built on that grid; :func:`combine_counts` of their
   :meth:`~CoxRowShard.counts` (the static d_g and m_g);
1. per beta: each shard's :meth:`~CoxRowShard.sums` (S0, E0 scaled by exp(-s) with its own
   shift s, and sum c eta over its events), combined by :func:`combine_sums` (M = max s, S0 =
   sum exp(s - M) S0_s); :func:`log_likelihood`;
2. :func:`multipliers` (A, B and M) sent to the shards, whose :meth:`~CoxRowShard.gradient`
   (with a Jacobi curvature) the driver adds;
3. per Hessian-vector product H_AA v: each shard's :meth:`~CoxRowShard.hvp_sums` (S0u, E0u at M),
   added (:func:`combine_hvp_sums`); :func:`hvp_multipliers` sent back; each shard's
   :meth:`~CoxRowShard.hvp`, added.

The grid holds the event times of positive weight only. :class:`~riskset.models.cox.CoxDatafit`
also gives an event of weight 0 an event slot, but that slot's event weight d is 0 and it adds
nothing to the likelihood, so the two agree.

:class:`RowShard` holds what such a shard does whatever the model; its rows may also be *late*
(the kernels' module docstring): in the risk sets after they leave them, with a factor and a
per-grid-point scale. :class:`~riskset.sharded.competing_risks.FineGrayRowShard` makes its
competing events late rows; the driver's functions here serve it with Breslow ties.
"""
from __future__ import annotations

import math
import threading
from collections import OrderedDict
from functools import cached_property
from typing import NamedTuple, Self

import numpy as np
import scipy.sparse as sp

from riskset.core.design import CompactCSC, canonical_csc
from riskset.core.products.column_products import ColumnProducts
from riskset.exceptions import InputError
from riskset.kernels.cpu.shared_risk_sets import (grid_hvp_multipliers, grid_loglik, grid_multipliers, grid_sums,
                                                  hazard_rows, hessian_rows, late_hazard_rows, late_hessian_rows,
                                                  late_sums, row_weights, shard_shift)
from riskset.validation import one_of

TIES = ("breslow", "efron")

#: Coefficient vectors whose linear predictor (and weights) a shard keeps: the driver asks for
#: the sums, the gradient and the Hessian-vector products at one beta, a line search at a few.
KEPT_POINTS = 4


class EventCounts(NamedTuple):
    """Per grid point: the event weight d (sum of case weights) and the number m of event rows
    of positive weight (Efron's ties)."""

    d: np.ndarray
    m: np.ndarray


class RiskSums(NamedTuple):
    """A shard's (or, combined, the global) risk-set sums at one beta, scaled by exp(-shift)."""

    shift: float        # the largest eta of the rows that take part (below), 0 if none
    S0: np.ndarray      # per grid point: sum of w over the rows at risk
    E0: np.ndarray      # per grid point: sum of w over its event rows
    event_eta: float    # sum over the event rows of c eta (not shifted)
    rows: int           # rows of positive weight at risk at some grid point (none: the sums add nothing)


class Multipliers(NamedTuple):
    """The driver's per-grid-point multipliers of the gradient at one beta, and the global shift M
    that the shards' weights take from then on."""

    A: np.ndarray
    B: np.ndarray
    shift: float


class HvpSums(NamedTuple):
    """Per grid point, the sums of w u over the rows at risk (S0u) and over its event rows (E0u),
    u = X_A v, weights at the global shift M."""

    S0u: np.ndarray
    E0u: np.ndarray


class HvpMultipliers(NamedTuple):
    """The driver's per-grid-point multipliers of a Hessian-vector product."""

    alpha: np.ndarray
    beta: np.ndarray


class ShardGradient(NamedTuple):
    """A shard's share of the gradient dl/dbeta over some coefficients, and of their Jacobi
    curvature sum_k w_k rho_k x_kj^2 (an upper bound of -H_jj)."""

    gradient: np.ndarray
    curvature: np.ndarray


class RowShard:
    """What a shard of rows answers on the global grid of event times (the protocol of the module
    docstring), whatever the model: :class:`CoxRowShard`, and
    :class:`~riskset.sharded.competing_risks.FineGrayRowShard`, whose competing events stay in the
    later risk sets as *late rows* (:mod:`riskset.kernels.cpu.shared_risk_sets`; none here).

    A subclass checks its rows and calls :meth:`_build`, then, with late rows, :meth:`_set_late`.
    The linear predictor of the last :data:`KEPT_POINTS` betas, their weights and the last u = X_A v
    are kept between calls.
    """

    #: who the rows are (riskset.sharded.shards.RowUnits, set where the shard is built; replicates read it)
    units: object | None = None

    def _build(self, design: CompactCSC, time, event, cw, grid, lo, offset, ties: str):
        """The shard's arrays: ``event`` the events of positive weight (uint8), ``lo`` the first
        grid point of each row's risk sets; no late rows."""
        self.ties = ties
        self.design = design
        n = design.n_rows
        self.grid = grid
        self.cw = cw
        self.event = event
        self.event_weight = cw * event  # c delta
        self.hi = np.searchsorted(grid, time, side="right").astype(np.int64)
        self.lo = lo
        _check_on_grid(time, event, self.hi, grid)
        self.offset = None if offset is None else _row_values("offset", offset, n)
        self.products = ColumnProducts(design)
        self._count_events()
        G = grid.shape[0]
        self.late_rows, self.late_factor, self.late_scale = np.zeros(0, np.int64), np.zeros(0), np.zeros(G)
        self.until = self.hi  # a row takes part in the risk sets of lo <= g < until (late rows: up to G)
        self._start_caches()

    def _count_events(self):
        events = self.event == 1
        slot, G = self.hi[events] - 1, self.grid.shape[0]
        self._counts = EventCounts(d=np.bincount(slot, weights=self.cw[events], minlength=G).astype(np.float64),
                                   m=np.bincount(slot, minlength=G).astype(np.float64))

    def scaled(self, factor: np.ndarray) -> Self:
        """The same rows with case weights ``cw * factor`` (a replicate: a fold's training or
        held-out rows, a bootstrap draw), sharing the design, its products, the grid and the
        late rows (a late row of weight 0 adds nothing)."""
        view = object.__new__(type(self))
        view.__dict__.update({k: v for k, v in self.__getstate__().items() if k != "gx0"})  # X' (c delta): its own
        view.cw = self.cw * np.asarray(factor, dtype=np.float64)
        view.event = ((self.event == 1) & (view.cw > 0)).astype(np.uint8)
        view.event_weight = view.cw * view.event
        view._count_events()
        view._start_caches()
        return view

    def _set_late(self, rows, factor, scale):
        """The late rows (their positions, factors f) and the per-grid-point scale s (the kernels'
        module docstring); rows of weight 0 or that leave after the last grid point are left out."""
        rows = np.asarray(rows, dtype=np.int64)
        factor = np.asarray(factor, dtype=np.float64)
        keep = (self.cw[rows] > 0) & (factor != 0) & (self.hi[rows] < self.grid.shape[0])
        self.late_rows, self.late_factor = np.ascontiguousarray(rows[keep]), np.ascontiguousarray(factor[keep])
        self.late_scale = np.ascontiguousarray(scale, dtype=np.float64)
        self.until = self.hi.copy()
        self.until[self.late_rows] = self.grid.shape[0]

    def _start_caches(self):
        self._lock = threading.Lock()
        self._etas, self._weights_kept = OrderedDict(), OrderedDict()
        self._u = None  # (key, u = X_A v) of the last Hessian-vector product

    def __getstate__(self):
        """Pickled (for Dask workers) without the lock and the kept vectors."""
        return {k: v for k, v in self.__dict__.items() if k not in ("_lock", "_etas", "_weights_kept", "_u")}

    def __setstate__(self, state):
        self.__dict__.update(state)
        self._start_caches()

    @property
    def n_coef(self) -> int:
        return self.design.n_cols

    @property
    def n_rows(self) -> int:
        return self.design.n_rows

    @property
    def nbytes(self) -> int:
        """Bytes of the arrays held: the design, the rows, the products' copies and the kept vectors."""
        return _held_bytes(self, self.design, self.products)

    def counts(self) -> EventCounts:
        """The shard's event weight d and event rows m per grid point (static)."""
        return self._counts

    @cached_property
    def gx0(self) -> np.ndarray:
        """The gradient's static part, X' (c delta), over every coefficient."""
        return self.products.dot(np.arange(self.n_coef), self.event_weight)

    # -- phase 1: the sums ---------------------------------------------------------------------
    def sums(self, beta) -> RiskSums:
        """S0, E0 at beta with the shard's own shift, and sum c eta over its events."""
        eta = self._eta(beta)
        shift, rows = shard_shift(eta, self.cw, self.lo, self.until)
        w = self._weights(beta, shift)
        G = self.grid.shape[0]
        S0, E0 = np.empty(G), np.empty(G)
        grid_sums(w, self.lo, self.hi, self.event, S0, E0)
        self._late_sums(w, S0)
        return RiskSums(shift=float(shift), S0=S0, E0=E0, event_eta=float(self.event_weight @ eta), rows=int(rows))

    # -- phase 2: the gradient -----------------------------------------------------------------
    def gradient(self, beta, multipliers: Multipliers, columns=None) -> ShardGradient:
        """The shard's share of dl/dbeta over ``columns`` (every coefficient if None),
        X'(c delta - w rho), and of the curvature (X^2)'(w rho), in one pass over X."""
        cols = self._columns(columns)
        A, B = self._grid_vector("A", multipliers.A), self._grid_vector("B", multipliers.B)
        w = self._weights(beta, multipliers.shift)
        z = np.empty(self.n_rows)
        hazard_rows(w, self.lo, self.hi, self.event, _prefix(A), B, z)
        if self.late_rows.size:
            late_hazard_rows(w, self.late_rows, self.late_factor, self.hi, self._late_suffix(A), z)
        xz, x2z = self.products.dot2(cols, z)
        return ShardGradient(gradient=self.gx0[cols] - xz, curvature=x2z)

    # -- phase 3: Hessian-vector products ----------------------------------------------------------
    def hvp_sums(self, beta, shift, columns, v) -> HvpSums:
        """S0u, E0u of u = X_A v (``columns``: A) with the weights at the global ``shift``."""
        u = self._product(columns, v)
        w = self._weights(beta, shift)
        G = self.grid.shape[0]
        S0u, E0u = np.empty(G), np.empty(G)
        wu = w * u
        grid_sums(wu, self.lo, self.hi, self.event, S0u, E0u)
        self._late_sums(wu, S0u)
        return HvpSums(S0u=S0u, E0u=E0u)

    def hvp(self, beta, columns, v, multipliers: Multipliers, hvp_multipliers: HvpMultipliers) -> np.ndarray:
        """The shard's share of H_AA v, X_A' (H_eta u) (an |A|-vector)."""
        cols = self._columns(columns)
        u = self._product(cols, v)
        A, B = self._grid_vector("A", multipliers.A), self._grid_vector("B", multipliers.B)
        alpha = self._grid_vector("alpha", hvp_multipliers.alpha)
        beta_g = self._grid_vector("beta", hvp_multipliers.beta)
        w = self._weights(beta, multipliers.shift)
        z = np.empty(self.n_rows)
        hessian_rows(w, u, self.lo, self.hi, self.event, _prefix(A), B, _prefix(alpha), beta_g, z)
        if self.late_rows.size:
            late_hessian_rows(w, u, self.late_rows, self.late_factor, self.hi, self._late_suffix(A),
                              self._late_suffix(alpha), z)
        return self.products.dot(cols, z)

    def reach(self, direction) -> float:
        """max_k |x_k direction| over the shard's rows (the separation test's unit)."""
        direction = self._coefficients(direction)
        nz = np.flatnonzero(direction)
        return float(np.max(np.abs(self.products.times(nz, direction[nz])), initial=0.0))

    # -- what is kept between calls -----------------------------------------------------------
    def _eta(self, beta) -> np.ndarray:
        """X beta + offset (read-only), from the columns of the non-zero coefficients."""
        beta = self._coefficients(beta)
        key = beta.tobytes()
        with self._lock:
            if key in self._etas:
                self._etas.move_to_end(key)
                return self._etas[key]
        nz = np.flatnonzero(beta)
        eta = self.products.times_recurring(nz, beta[nz])
        if self.offset is not None:
            eta += self.offset
        eta.flags.writeable = False
        return _keep(self._lock, self._etas, key, eta)

    def _weights(self, beta, shift) -> np.ndarray:
        """w = c exp(eta - shift) (read-only; 0 for the rows outside every risk set)."""
        eta = self._eta(beta)
        key = self._coefficients(beta).tobytes() + np.float64(shift).tobytes()
        with self._lock:
            if key in self._weights_kept:
                self._weights_kept.move_to_end(key)
                return self._weights_kept[key]
        w = np.empty(self.n_rows)
        row_weights(eta, self.cw, self.lo, self.until, float(shift), w)
        w.flags.writeable = False
        return _keep(self._lock, self._weights_kept, key, w)

    # -- the late rows ------------------------------------------------------------------------
    def _late_sums(self, values, S):
        """S += the late rows' part of the sums of ``values`` (nothing without late rows)."""
        if self.late_rows.size:
            late_sums(values, self.late_rows, self.late_factor, self.hi, self.late_scale, S)

    def _late_suffix(self, a) -> np.ndarray:
        """sum_{g >= h} s_g a_g for h = 0 .. G (G + 1 values) of a per-grid vector ``a``."""
        out = np.zeros(a.shape[0] + 1)
        out[:-1] = np.cumsum((self.late_scale * a)[::-1])[::-1]
        return out

    def _product(self, columns, v) -> np.ndarray:
        """u = X_A v, the last one kept (:meth:`hvp_sums` and :meth:`hvp` ask for the same)."""
        cols = self._columns(columns)
        v = _vector("v", v, cols.shape[0], "one value per column of A")
        key = cols.tobytes() + v.tobytes()
        kept = self._u
        if kept is not None and kept[0] == key:
            return kept[1]
        u = self.products.times(cols, v)
        u.flags.writeable = False
        self._u = key, u
        return u

    # -- checks ------------------------------------------------------------------------------
    def _coefficients(self, beta) -> np.ndarray:
        return _vector("beta", beta, self.n_coef, "one coefficient per column of X")

    def _columns(self, columns) -> np.ndarray:
        if columns is None:
            return np.arange(self.n_coef, dtype=np.int64)
        cols = np.asarray(columns)
        if cols.ndim != 1 or (cols.size and not np.issubdtype(cols.dtype, np.integer)):
            raise InputError(f"columns must be a vector of column indices, got {columns!r}")
        cols = cols.astype(np.int64)
        if np.any((cols < 0) | (cols >= self.n_coef)):
            raise InputError(f"columns must lie in 0 .. {self.n_coef - 1}, got {columns!r}")
        return np.ascontiguousarray(cols)

    def _grid_vector(self, name, values) -> np.ndarray:
        values = np.ascontiguousarray(values, dtype=np.float64)
        if values.shape != self.grid.shape:
            raise InputError(f"{name} must hold one value per grid point ({self.grid.shape[0]}), "
                             f"got shape {values.shape}")
        return values


class CoxRowShard(RowShard):
    """The rows of one shard of a Cox model, on the global grid of event times.

    ``X`` (N_s x P, any scipy sparse matrix or a :class:`~riskset.core.design.CompactCSC`), ``time``
    (stop), ``status`` (0/1), ``start``, ``weights`` (case weights, >= 0) and ``offset`` are the
    shard's rows; ``grid`` is :func:`event_time_grid` of every shard's :meth:`event_times`. The
    design is held compact and read through :class:`~riskset.core.products.column_products.ColumnProducts`.
    """

    def __init__(self, X, time, status, grid, *, start=None, weights=None, offset=None, ties="breslow"):
        ties = one_of("ties", ties, TIES)
        design = _design(X)
        n = design.n_rows
        time, status, cw = _outcome(time, status, weights, n)
        grid = _grid(grid)
        event = ((status == 1) & (cw > 0)).astype(np.uint8)  # the events of positive weight
        lo = (np.zeros(n, np.int64) if start is None
              else np.searchsorted(grid, _start(start, time), side="right").astype(np.int64))
        self._build(design, time, event, cw, grid, lo, offset, ties)

    @staticmethod
    def event_times(time, status, weights=None) -> np.ndarray:
        """The sorted distinct times of the rows with status 1 and a positive weight."""
        time, status, cw = _outcome(time, status, weights, None)
        return np.unique(time[(status == 1) & (cw > 0)])


# -- the driver ------------------------------------------------------------------------------

def event_time_grid(times) -> np.ndarray:
    """The sorted distinct event times of every shard (each a :meth:`CoxRowShard.event_times`)."""
    arrays = [np.asarray(t, dtype=np.float64).reshape(-1) for t in times]
    grid = np.unique(np.concatenate(arrays)) if arrays else np.zeros(0)
    if not np.all(np.isfinite(grid)):
        raise InputError("event times must be finite")
    return grid


def combine_counts(counts) -> EventCounts:
    """The global d and m: the shards' added."""
    counts = _nonempty("counts", counts)
    _same_length("counts", [c.d for c in counts] + [c.m for c in counts])
    return EventCounts(d=np.sum([c.d for c in counts], axis=0), m=np.sum([c.m for c in counts], axis=0))


def combine_sums(sums) -> RiskSums:
    """The global sums at shift M, the largest shift of the shards whose rows take part:
    S0 = sum_s exp(s - M) S0_s (likewise E0); a shard without such rows adds nothing."""
    sums = _nonempty("sums", sums)
    _same_length("sums", [s.S0 for s in sums] + [s.E0 for s in sums])
    taking = [s for s in sums if s.rows > 0]
    M = max((s.shift for s in taking), default=0.0)
    S0, E0 = np.zeros_like(sums[0].S0, dtype=np.float64), np.zeros_like(sums[0].E0, dtype=np.float64)
    for s in taking:
        scale = math.exp(s.shift - M)
        S0 += scale * np.asarray(s.S0)
        E0 += scale * np.asarray(s.E0)
    return RiskSums(shift=float(M), S0=S0, E0=E0, event_eta=float(sum(s.event_eta for s in sums)),
                    rows=int(sum(s.rows for s in sums)))


def combine_hvp_sums(sums) -> HvpSums:
    """The global S0u, E0u: the shards' added (all at the global shift M)."""
    sums = _nonempty("hvp sums", sums)
    _same_length("hvp sums", [s.S0u for s in sums] + [s.E0u for s in sums])
    return HvpSums(S0u=np.sum([s.S0u for s in sums], axis=0), E0u=np.sum([s.E0u for s in sums], axis=0))


def log_likelihood(global_sums: RiskSums, counts: EventCounts, ties: str) -> float:
    """l = sum_events c eta - sum_g wbar_g sum_r (log D_gr + M) from the global sums
    (:func:`combine_sums`). -inf where some D_gr of a grid point with events (S0_g for Breslow)
    is not positive and finite: a weight underflowed, or the sums are not those of the grid."""
    S0, E0, d, m = _grid_arrays(global_sums.S0, global_sums.E0, counts.d, counts.m)
    slots = grid_loglik(S0, E0, d, m, _efron(ties))
    if slots == -np.inf:
        return -np.inf
    return float(global_sums.event_eta + slots - global_sums.shift * d.sum())


def multipliers(global_sums: RiskSums, counts: EventCounts, ties: str) -> Multipliers:
    """A_g = wbar sum_r 1/D_gr, B_g = wbar sum_r (r/m)/D_gr and the shift M the shards then take
    (non-finite where some D_gr is not positive)."""
    S0, E0, d, m = _grid_arrays(global_sums.S0, global_sums.E0, counts.d, counts.m)
    A, B = np.empty(S0.shape[0]), np.empty(S0.shape[0])
    grid_multipliers(S0, E0, d, m, _efron(ties), A, B)
    return Multipliers(A=A, B=B, shift=float(global_sums.shift))


def hvp_multipliers(global_sums: RiskSums, counts: EventCounts, hvp_sums_total: HvpSums, ties: str) -> HvpMultipliers:
    """alpha_g = wbar sum_r (S0u - (r/m) E0u)/D_gr^2, beta_g = wbar sum_r (r/m)(S0u - (r/m) E0u)/D_gr^2
    from the global sums and the shards' :meth:`~CoxRowShard.hvp_sums` added."""
    S0, E0, d, m, S0u, E0u = _grid_arrays(global_sums.S0, global_sums.E0, counts.d, counts.m, hvp_sums_total.S0u,
                                          hvp_sums_total.E0u)
    alpha, beta = np.empty(S0.shape[0]), np.empty(S0.shape[0])
    grid_hvp_multipliers(S0, E0, S0u, E0u, d, m, _efron(ties), alpha, beta)
    return HvpMultipliers(alpha=alpha, beta=beta)


# -- checks and helpers ----------------------------------------------------------------------

def _design(X) -> CompactCSC:
    if isinstance(X, CompactCSC):
        design = X
    elif sp.issparse(X):
        design = CompactCSC.of(canonical_csc(X))
    else:
        raise InputError(f"X must be a scipy sparse matrix or a CompactCSC, got {type(X).__name__}")
    if not np.all(np.isfinite(design.values)):
        raise InputError("X has non-finite values")
    return design


def _row_values(name, values, n, minus_inf=False) -> np.ndarray:
    """``values`` as a float vector of one finite value per row (``n`` rows; any number if None),
    -inf allowed with ``minus_inf``."""
    try:
        arr = np.asarray(values, dtype=np.float64)
    except (TypeError, ValueError):
        raise InputError(f"{name} must be numbers") from None
    if arr.ndim != 1 or (n is not None and arr.shape[0] != n):
        raise InputError(f"{name} must hold one value per row{'' if n is None else f' of X ({n})'}, "
                         f"got shape {arr.shape}")
    bad = (np.isnan(arr) | (arr == np.inf)) if minus_inf else ~np.isfinite(arr)
    if bad.any():
        k = int(np.flatnonzero(bad)[0])
        raise InputError(f"{name} is not finite ({arr[k]}) at row {k}")
    return np.ascontiguousarray(arr)


def _outcome(time, status, weights, n):
    """(time, status, case weights) checked: one value per row (``n``, or as many as ``time`` if None),
    finite, status 0/1, weights >= 0."""
    time = _row_values("time", time, n)
    status = _row_values("status", status, time.shape[0])
    if not np.all((status == 0) | (status == 1)):
        k = int(np.flatnonzero((status != 0) & (status != 1))[0])
        raise InputError(f"status must be 0 (censored) or 1 (event), got {status[k]:g} at row {k}")
    cw = np.ones(time.shape[0]) if weights is None else _row_values("weights", weights, time.shape[0])
    if np.any(cw < 0):
        k = int(np.flatnonzero(cw < 0)[0])
        raise InputError(f"weights must not be negative, got {cw[k]:g} at row {k}")
    return time, status, cw


def _start(start, time) -> np.ndarray:
    start = _row_values("start", start, time.shape[0], minus_inf=True)
    if np.any(start >= time):
        k = int(np.flatnonzero(start >= time)[0])
        raise InputError(f"start time {start[k]:g} is not before stop time {time[k]:g} at row {k} "
                         "(rows are (start, stop] with start < stop)")
    return start


def _grid(grid, name="grid", source="event_times") -> np.ndarray:
    """``grid`` checked: finite, strictly increasing times (event_time_grid of the shards' ``source``)."""
    try:
        grid = np.ascontiguousarray(grid, dtype=np.float64)
    except (TypeError, ValueError):
        raise InputError(f"{name} must be numbers") from None
    if grid.ndim != 1 or not np.all(np.isfinite(grid)) or np.any(np.diff(grid) <= 0):
        raise InputError(f"{name} must be a vector of finite, strictly increasing times (event_time_grid of every "
                         f"shard's {source})")
    return grid


def _check_on_grid(time, event, hi, grid):
    """Every event of positive weight has its time on the grid."""
    rows = np.flatnonzero(event)
    off = rows[(hi[rows] == 0) | (grid[np.maximum(hi[rows] - 1, 0)] != time[rows])] if grid.size else rows
    if off.size:
        k = int(off[0])
        raise InputError(f"the event time {time[k]:g} of row {k} is not on the grid: the grid must be "
                         "event_time_grid of every shard's event_times")


def _vector(name, values, n, what) -> np.ndarray:
    try:
        arr = np.ascontiguousarray(values, dtype=np.float64)
    except (TypeError, ValueError):
        raise InputError(f"{name} must be numbers") from None
    if arr.shape != (n,):
        raise InputError(f"{name} must hold {what} ({n}), got shape {arr.shape}")
    if not np.all(np.isfinite(arr)):
        raise InputError(f"{name} must be finite")
    return arr


def _prefix(a) -> np.ndarray:
    """The exclusive prefix sums of a per-grid vector (G + 1)."""
    out = np.zeros(a.shape[0] + 1)
    np.cumsum(a, out=out[1:])
    return out


def _efron(ties) -> bool:
    return one_of("ties", ties, TIES) == "efron"


def _grid_arrays(*arrays):
    contiguous = [np.ascontiguousarray(a, dtype=np.float64) for a in arrays]
    _same_length("the grid vectors", contiguous)
    return contiguous


def _same_length(what, arrays):
    if len({np.shape(a) for a in arrays}) > 1 or any(np.ndim(a) != 1 for a in arrays):
        raise InputError(f"{what} must be vectors over one grid, got shapes {sorted({np.shape(a) for a in arrays})}")


def _nonempty(what, items) -> list:
    items = list(items)
    if not items:
        raise InputError(f"no {what} to combine")
    return items


def _keep(lock, kept: OrderedDict, key, value):
    """``value`` kept under ``key``, the oldest dropped beyond :data:`KEPT_POINTS`."""
    with lock:
        kept[key] = value
        while len(kept) > KEPT_POINTS:
            kept.popitem(last=False)
    return value


def _held_bytes(*objects) -> int:
    """Bytes of the distinct arrays among the attributes of ``objects`` (and in the tuples, lists and
    dicts they hold)."""
    seen = {}

    def add(value):
        if isinstance(value, np.ndarray):
            seen[id(value)] = value.nbytes
        elif isinstance(value, (tuple, list)):
            for item in value:
                add(item)
        elif isinstance(value, dict):
            for item in value.values():
                add(item)

    for obj in objects:
        for value in vars(obj).values():
            add(value)
    return sum(seen.values())
