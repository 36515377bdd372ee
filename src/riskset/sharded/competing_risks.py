"""An exact Fine-Gray fit over rows split into shards, whose subdistribution risk sets span the
shards: each shard reduces its rows to vectors over a global grid of event times, and a driver
combines them. Only per-grid-point vectors and scalars travel, never rows.

The model is :class:`riskset.models.fine_gray.FineGrayDatafit`'s (``cmprsk::crr``'s conventions,
Breslow ties, case weights c, offsets; no strata, no (start, stop] rows). The grid t_1 < ... < t_G
holds the times of the events of interest of positive weight over every shard; with w = c exp(eta)::

    S0_g = sum_{T_r >= t_g} w_r + G(t_g-) sum_{competing r, T_r < t_g} w_r / G(T_r-)
    l = sum_{events of interest} c eta - sum_g d_g log S0_g

A row of any status is in the ordinary risk set of the grid points t_g <= T_r (a competing event
tied with an event time is in it with weight 1); a competing event stays in the later ones with
weight G(t_g-)/G(T_r-). Those are the *late rows* of :class:`~riskset.sharded.risk_sets.RowShard`
(factor 1/G(T_r-), scale G(t_g-): :mod:`riskset.kernels.cpu.shared_risk_sets`), so the sums, the
gradient and the Hessian-vector products are the Cox shards' with Breslow ties, and so are the
driver's functions (:func:`log_likelihood`, :func:`multipliers`, :func:`hvp_multipliers` here
fix the ties).

G, the censoring survival, and its left limits G(s-) (censoring at s excluded: crr evaluates G at
``s (1 - 100 eps)``) at the event times and at the competing rows' times:

* computed (the default, :func:`~riskset.models.fine_gray.censoring_survival`): the Kaplan-Meier of
  the censoring over every row of every shard, case-weighted, censored rows its events and every
  row at risk until its time: G(u) = prod_{v <= u} (1 - cens_v / n_v) over the censoring times v of
  positive weight, cens_v the censored weight at v, n_v the weight of the rows with T >= v. One
  extra static exchange: each shard's :meth:`FineGrayRowShard.censoring_times`, merged by
  :func:`~riskset.sharded.risk_sets.event_time_grid`; each shard's
  :meth:`~FineGrayRowShard.censoring_counts` on that grid, added (:func:`combine_censoring_counts`);
  :func:`kaplan_meier_censoring`, sent to every shard;
* given per row (``censor_weights``, Cyclops' ``censorWeights``: G(T-) of each row): a competing
  row is divided by its own; G(t_g-) is that of the events at t_g, which every shard reports
  (:meth:`~FineGrayRowShard.event_censor_weights`; tied events, in any shards, must agree):
  :func:`given_censoring`.

The protocol is then :mod:`riskset.sharded.risk_sets`' with the shards built on the grid and G:
:func:`~riskset.sharded.risk_sets.combine_counts`, per beta ``sums`` and
:func:`~riskset.sharded.risk_sets.combine_sums`, :func:`log_likelihood`, :func:`multipliers` and
``gradient``, ``hvp_sums``, :func:`~riskset.sharded.risk_sets.combine_hvp_sums`,
:func:`hvp_multipliers` and ``hvp``.
"""
from __future__ import annotations

from typing import NamedTuple

import numpy as np

from riskset.exceptions import InputError
from riskset.models.fine_gray import CompetingRiskOutcome, check_censor_weights, classify_status
from riskset.sharded import risk_sets
from riskset.sharded.risk_sets import (EventCounts, HvpMultipliers, HvpSums, Multipliers, RiskSums, RowShard,
                                       _design, _grid, _nonempty, _row_values, _same_length)


class CensoringCounts(NamedTuple):
    """Per censoring time v (a grid of them): the censored weight at v and the weight of the rows
    with T >= v (the Kaplan-Meier's events and rows at risk)."""

    censored: np.ndarray
    at_risk: np.ndarray


class EventCensorWeights(NamedTuple):
    """A shard's distinct event-of-interest times and the given G(t-) of their events."""

    times: np.ndarray
    values: np.ndarray


class Censoring(NamedTuple):
    """The censoring survival the shards weight competing rows by: ``at_grid``, G(t_g-) per grid
    point, and, computed by the Kaplan-Meier, the step function G (``times``: the censoring times,
    ascending; ``survival``: G from each on); both None where each row's G(T-) is given."""

    at_grid: np.ndarray
    times: np.ndarray | None
    survival: np.ndarray | None

    def left_limits(self, t) -> np.ndarray:
        """G(t-) at the times ``t`` (the Kaplan-Meier step function)."""
        if self.times is None or self.survival is None:
            raise InputError("the censoring weights were given per row: G(t-) is not known at any time")
        k = np.searchsorted(self.times, np.asarray(t, dtype=np.float64), side="left")
        return np.where(k > 0, self.survival[np.maximum(k - 1, 0)], 1.0)


class FineGrayRowShard(RowShard):
    """The rows of one shard of a Fine-Gray model, on the global grid of event times.

    ``X`` (N_s x P, any scipy sparse matrix or a :class:`~riskset.core.design.CompactCSC`), ``time``,
    ``status`` (integer codes: ``event_of_interest``, ``censor_code`` and the competing events,
    every other code unless ``competing_events`` lists them, as
    :class:`~riskset.models.fine_gray.FineGrayModel`), ``weights`` (case weights, >= 0), ``offset``
    and ``censor_weights`` (given G(T-), or None: the Kaplan-Meier) are the shard's rows; ``grid`` is
    :func:`~riskset.sharded.risk_sets.event_time_grid` of every shard's :meth:`event_times`;
    ``censoring`` is :func:`kaplan_meier_censoring` or, with ``censor_weights``,
    :func:`given_censoring`. Ties: Breslow.
    """

    def __init__(self, X, time, status, grid, censoring: Censoring, *, weights=None, offset=None, censor_weights=None,
                 event_of_interest: int = 1, competing_events=None, censor_code: int = 0):
        design = _design(X)
        n = design.n_rows
        time, outcome, cw = _outcome(time, status, weights, n, event_of_interest, competing_events, censor_code)
        grid = _grid(grid)
        censoring = _censoring(censoring, grid, given=censor_weights is not None)
        event = ((outcome.event == 1) & (cw > 0)).astype(np.uint8)  # the events of interest of positive weight
        self._build(design, time, event, cw, grid, np.zeros(n, np.int64), offset, "breslow")
        competing = np.flatnonzero(outcome.competing)
        if censor_weights is None:
            left = censoring.left_limits(time[competing])
        else:
            left = _given(censor_weights, time, outcome)[competing]
        self.time, self.censored, self.competing = time, (outcome.censored == 1), competing
        self._set_late(competing, _inverse(left), censoring.at_grid)

    def censoring_now(self, censor_grid) -> CensoringCounts:
        """:meth:`censoring_counts` of these rows under their current case weights (a replicate's)."""
        return _censoring_counts(self.time, self.censored, self.cw, _grid(censor_grid, "censor_grid",
                                                                          "censoring_times"))

    def recensored(self, censoring: Censoring) -> "FineGrayRowShard":
        """These rows weighted by another Kaplan-Meier of censoring (a replicate's own, as
        :meth:`~riskset.models.fine_gray.FineGrayDatafit.reweighted` recomputes G)."""
        censoring = _censoring(censoring, self.grid, given=False)
        view = self.scaled(np.ones(self.n_rows))
        view._set_late(self.competing, _inverse(censoring.left_limits(self.time[self.competing])), censoring.at_grid)
        return view

    @staticmethod
    def event_times(time, status, weights=None, *, event_of_interest: int = 1, competing_events=None,
                    censor_code: int = 0) -> np.ndarray:
        """The sorted distinct times of the events of interest of positive weight."""
        time, outcome, cw = _outcome(time, status, weights, None, event_of_interest, competing_events, censor_code)
        return np.unique(time[(outcome.event == 1) & (cw > 0)])

    @staticmethod
    def censoring_times(time, status, weights=None, *, event_of_interest: int = 1, competing_events=None,
                        censor_code: int = 0) -> np.ndarray:
        """The sorted distinct times of the censored rows of positive weight (the Kaplan-Meier's
        events; merged over the shards by :func:`~riskset.sharded.risk_sets.event_time_grid`)."""
        time, outcome, cw = _outcome(time, status, weights, None, event_of_interest, competing_events, censor_code)
        return np.unique(time[(outcome.censored == 1) & (cw > 0)])

    @staticmethod
    def censoring_counts(time, status, censor_grid, weights=None, *, event_of_interest: int = 1,
                         competing_events=None, censor_code: int = 0) -> CensoringCounts:
        """The shard's censored weight at each time v of ``censor_grid`` (every shard's
        :meth:`censoring_times` merged) and the weight of its rows with T >= v."""
        time, outcome, cw = _outcome(time, status, weights, None, event_of_interest, competing_events, censor_code)
        return _censoring_counts(time, outcome.censored == 1, cw, _grid(censor_grid, "censor_grid", "censoring_times"))

    @staticmethod
    def event_censor_weights(time, status, censor_weights, *, event_of_interest: int = 1, competing_events=None,
                             censor_code: int = 0) -> EventCensorWeights:
        """The distinct times of the shard's events of interest (whatever their weight) and their
        given G(t-) (tied events must share it; the values checked as the model checks them)."""
        time, outcome, _ = _outcome(time, status, None, None, event_of_interest, competing_events, censor_code)
        given = _given(censor_weights, time, outcome)
        events = outcome.event == 1
        times, first = np.unique(time[events], return_index=True)
        return EventCensorWeights(times=times, values=given[events][first])


# -- the driver ------------------------------------------------------------------------------

def combine_censoring_counts(counts) -> CensoringCounts:
    """The whole data's censored weight and rows at risk per censoring time: the shards' added."""
    counts = _nonempty("censoring counts", counts)
    _same_length("censoring counts", [c.censored for c in counts] + [c.at_risk for c in counts])
    return CensoringCounts(censored=np.sum([c.censored for c in counts], axis=0),
                           at_risk=np.sum([c.at_risk for c in counts], axis=0))


def kaplan_meier_censoring(grid, censor_grid, counts: CensoringCounts) -> Censoring:
    """G, the Kaplan-Meier of the censoring of every shard (:func:`combine_censoring_counts` on
    ``censor_grid``), as :func:`~riskset.models.fine_gray.censoring_survival`: G(v) = prod_{u <= v}
    (1 - min(cens_u / n_u, 1)); and G(t_g-) at the event times ``grid``."""
    grid = _grid(grid)
    censor_grid = _grid(censor_grid, "censor_grid", "censoring_times")
    cens, at_risk = (np.asarray(a, dtype=np.float64) for a in counts)
    if cens.shape != censor_grid.shape or at_risk.shape != censor_grid.shape:
        raise InputError(f"the censoring counts must hold one value per censoring time ({censor_grid.shape[0]}), "
                         f"got shapes {cens.shape} and {at_risk.shape}")
    with np.errstate(divide="ignore", invalid="ignore"):
        frac = np.where(at_risk > 0, cens / at_risk, 0.0)
    survival = np.cumprod(1.0 - np.minimum(frac, 1.0))
    censoring = Censoring(at_grid=np.ones(0), times=censor_grid, survival=survival)
    return censoring._replace(at_grid=censoring.left_limits(grid))


def given_censoring(grid, reported) -> Censoring:
    """G(t_g-) at the event times ``grid`` from the shards' :meth:`~FineGrayRowShard.event_censor_weights`:
    the G of the events at t_g, which must be the same in every shard that has some."""
    grid = _grid(grid)
    reported = _nonempty("event censoring weights", reported)
    times = np.concatenate([np.asarray(r.times, dtype=np.float64) for r in reported])
    values = np.concatenate([np.asarray(r.values, dtype=np.float64) for r in reported])
    order = np.lexsort((values, times))
    times, values = times[order], values[order]
    split = np.flatnonzero((times[1:] == times[:-1]) & (values[1:] != values[:-1]))
    if split.size:
        k = int(split[0])
        raise InputError(f"events tied at time {times[k]:g} in different shards have different censoring weights "
                         f"({values[k]:g} and {values[k + 1]:g}): the weight G(t-) of an event time scales its whole "
                         "risk set, so tied events must share it")
    at = np.searchsorted(times, grid, side="left")
    found = np.zeros(grid.shape, bool)
    inside = at < times.size
    found[inside] = times[at[inside]] == grid[inside]
    if not found.all():
        raise InputError(f"no shard reports the censoring weight of the event time {grid[np.argmin(found)]:g}: "
                         "every shard's event_censor_weights must be given")
    return Censoring(at_grid=np.ascontiguousarray(values[at]), times=None, survival=None)


def log_likelihood(global_sums: RiskSums, counts: EventCounts) -> float:
    """l = sum_events c eta - sum_g d_g (log S0_g + M) from the global sums (Breslow ties)."""
    return risk_sets.log_likelihood(global_sums, counts, "breslow")


def multipliers(global_sums: RiskSums, counts: EventCounts) -> Multipliers:
    """A_g = d_g / S0_g (B = 0) and the shift M the shards then take."""
    return risk_sets.multipliers(global_sums, counts, "breslow")


def hvp_multipliers(global_sums: RiskSums, counts: EventCounts, hvp_sums_total: HvpSums) -> HvpMultipliers:
    """alpha_g = d_g S0u_g / S0_g^2 (beta = 0) from the global sums and the shards' hvp sums added."""
    return risk_sets.hvp_multipliers(global_sums, counts, hvp_sums_total, "breslow")


# -- checks ------------------------------------------------------------------------------------

def _censoring_counts(time, censored, cw, censor_grid) -> CensoringCounts:
    """The censored weight at each censoring time v and the weight of the rows with T >= v."""
    V = censor_grid.shape[0]
    hi = np.searchsorted(censor_grid, time, side="right")  # row at risk at the censoring times v < hi
    censored = censored & (cw > 0)
    off = censored & ((hi == 0) | (censor_grid[np.maximum(hi - 1, 0)] != time)) if V else censored
    if off.any():
        k = int(np.flatnonzero(off)[0])
        raise InputError(f"the censoring time {time[k]:g} of row {k} is not on the censor grid: it must be "
                         "event_time_grid of every shard's censoring_times")
    leaving = np.bincount(hi, weights=cw, minlength=V + 1)
    at_risk = np.cumsum(leaving[::-1])[::-1][1:]  # the weight of the rows with hi > v
    cens = np.bincount(hi[censored] - 1, weights=cw[censored], minlength=V).astype(np.float64)
    return CensoringCounts(censored=cens, at_risk=np.ascontiguousarray(at_risk, dtype=np.float64))


def _inverse(left: np.ndarray) -> np.ndarray:
    """1 / G(T-) of competing rows, 0 where G(T-) = 0 (as FineGrayDatafit: such a row is dropped)."""
    with np.errstate(divide="ignore"):
        return np.where(left > 0, 1.0 / left, 0.0)


def _outcome(time, status, weights, n, event_of_interest, competing_events,
             censor_code) -> tuple[np.ndarray, CompetingRiskOutcome, np.ndarray]:
    """(time, the status codes classified, case weights) checked: one value per row (``n``, or
    as many as ``time`` if None), times finite and >= 0, codes as the model's, weights >= 0."""
    time = _row_values("time", time, n)
    if np.any(time < 0):
        k = int(np.flatnonzero(time < 0)[0])
        raise InputError(f"negative survival time {time[k]:g} at row {k}")
    codes = np.asarray(status)
    if codes.shape != time.shape:
        raise InputError(f"status must hold one value per row ({time.shape[0]}), got shape {codes.shape}")
    outcome = classify_status(codes, event_of_interest, competing_events, censor_code, require_event=False)
    cw = np.ones(time.shape[0]) if weights is None else _row_values("weights", weights, time.shape[0])
    if np.any(cw < 0):
        k = int(np.flatnonzero(cw < 0)[0])
        raise InputError(f"weights must not be negative, got {cw[k]:g} at row {k}")
    return time, outcome, cw


def _given(censor_weights, time, outcome: CompetingRiskOutcome) -> np.ndarray:
    """The given G(T-) per row, checked as :class:`~riskset.models.fine_gray.FineGrayModel` does."""
    return check_censor_weights(_row_values("censor_weights", censor_weights, time.shape[0]), time, outcome)


def _censoring(censoring, grid, given: bool) -> Censoring:
    """``censoring`` checked against the grid and against how G is known (``given`` per row or not)."""
    if not isinstance(censoring, Censoring):
        raise InputError(f"censoring must be a Censoring (kaplan_meier_censoring or given_censoring), "
                         f"got {type(censoring).__name__}")
    at_grid = np.ascontiguousarray(censoring.at_grid, dtype=np.float64)
    if at_grid.shape != grid.shape or not np.all((at_grid >= 0) & (at_grid <= 1)):
        raise InputError(f"censoring.at_grid must hold one G(t-) in [0, 1] per grid point ({grid.shape[0]})")
    if given != (censoring.times is None):
        raise InputError("censor_weights are given: censoring must be given_censoring of the shards' event censoring "
                         "weights" if given else "censor_weights are not given: censoring must be "
                         "kaplan_meier_censoring of the shards' censoring counts")
    if censoring.times is not None:
        times = _grid(censoring.times, "censoring.times", "censoring_times")
        survival = np.ascontiguousarray(censoring.survival, dtype=np.float64)
        if survival.shape != times.shape or not np.all((survival >= 0) & (survival <= 1)):
            raise InputError("censoring.survival must hold one G in [0, 1] per censoring time")
        return Censoring(at_grid, times, survival)
    return Censoring(at_grid, None, None)
