"""What lives on a worker: one shard's prepared likelihood, resident for a whole fit, and the
questions the client asks of it.

A worker reads its shard (:meth:`~riskset.sharded.sources.ShardSource.load`), summarizes it
for the client (:func:`summarize`: covariates, column ranges, event times, strata), then builds
the shard's likelihood on the columns of the whole data (:func:`build_separable`,
:func:`build_risk_sets`, :func:`build_fine_gray`) and keeps it. Every question names a state by a key and its
coefficients; a shard computes the state the first time it is asked and keeps the last few
(:class:`SeparableShard`), so that a line search's trial, its gradient and its Hessian-vector
products share one pass X beta. A shard rebuilt elsewhere after a worker is lost computes the
same answers from the coefficients alone.
"""
from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass, replace

import numpy as np
import scipy.sparse as sp

from riskset.core.interface import Datafit, FitState, Reweightable
from riskset.data.dataset import Dataset
from riskset.data.risksets import check_survival
from riskset.exceptions import InputError
from riskset.models.base import Model
from riskset.models.cox import CoxModel
from riskset.models.fine_gray import FineGrayModel
from riskset.results import fit_roles
from riskset.sharded.competing_risks import Censoring, CensoringCounts, EventCensorWeights, FineGrayRowShard
from riskset.sharded.risk_sets import CoxRowShard, RowShard

#: States a shard keeps (a line search's trial beside the accepted state, and the next one).
KEPT_STATES = 4


@dataclass(frozen=True)
class ShardSummary:
    """What the client needs to know of a shard before building it: its size, covariates and
    their range over its rows (implicit zeros included), weighted events and their distinct
    times (survival models; Fine-Gray: the events of interest), strata labels, and the roles its
    columns play; for Fine-Gray also its competing rows, whether it gives censoring weights and,
    if not, the distinct times of its censored rows of positive weight."""

    n_rows: int
    covariate_names: list
    column_min: np.ndarray
    column_max: np.ndarray
    events: float
    event_times: np.ndarray | None
    strata_labels: np.ndarray | None
    roles: dict
    competing: int = 0
    censor_weights: bool = False
    censoring_times: np.ndarray | None = None


def summarize(data: Dataset, model: Model, label: str) -> ShardSummary:
    """The summary of one shard's ``data`` for ``model``; bad data raise an InputError naming
    the shard (``label``)."""
    fine_gray: dict = {}
    try:
        survival = data.time is not None and data.status is not None
        if isinstance(model, FineGrayModel):
            fine_gray = _competing_summary(data, model)
        elif survival:
            check_survival(data.time, data.status, data.start, data.subject, data.row_ids, need_event=False)
        model.check_roles(data)
    except InputError as err:
        raise InputError(f"shard {label}: {err}") from None
    X = sp.csc_matrix(data.X)
    low, high = _column_range(X)
    events, times = 0.0, None
    if fine_gray:
        events, times = fine_gray.pop("events"), fine_gray.pop("event_times")
    elif survival:
        weights = np.ones(data.n_rows) if data.weights is None else np.asarray(data.weights, np.float64)
        events = float(weights[np.asarray(data.status) == 1].sum())
        times = CoxRowShard.event_times(data.time, data.status, data.weights)
    elif data.y is not None:
        events = float(np.count_nonzero(np.asarray(data.y)))
    labels = None
    if data.strata is not None:
        labels = np.asarray(data.strata_labels if data.strata_labels is not None else np.unique(data.strata))
    return ShardSummary(data.n_rows, list(data.covariate_names), low, high, events, times, labels,
                        fit_roles(data, model), **fine_gray)


def _competing_summary(data: Dataset, model: FineGrayModel) -> dict:
    """A Fine-Gray shard checked as :meth:`~riskset.models.fine_gray.FineGrayModel.prepare` checks
    the whole data (a shard may lack events of interest), and what its summary holds of it."""
    time, outcome, given_weights = model.checked(data, require_event=False)
    weights = np.ones(data.n_rows) if data.weights is None else np.asarray(data.weights, np.float64)
    given = given_weights is not None
    codes = fine_gray_codes(model)
    return {"events": float(weights[outcome.event == 1].sum()),
            "event_times": FineGrayRowShard.event_times(time, data.status, data.weights, **codes),
            "competing": int(outcome.competing.sum()), "censor_weights": given,
            "censoring_times": None if given else FineGrayRowShard.censoring_times(time, data.status, data.weights,
                                                                                   **codes)}


def fine_gray_codes(model: FineGrayModel) -> dict:
    """The status codes of ``model`` as the keywords of :class:`FineGrayRowShard`."""
    return {"event_of_interest": model.event_of_interest, "competing_events": model.competing_events,
            "censor_code": model.censor_code}


def censoring_counts(data: Dataset, model: FineGrayModel, censor_grid: np.ndarray) -> CensoringCounts:
    """A Fine-Gray shard's censored weight and rows at risk per censoring time of every shard."""
    return FineGrayRowShard.censoring_counts(data.time, data.status, censor_grid, data.weights,
                                             **fine_gray_codes(model))


def event_censor_weights(data: Dataset, model: FineGrayModel) -> EventCensorWeights:
    """A Fine-Gray shard's event times and their given censoring weights G(t-)."""
    return FineGrayRowShard.event_censor_weights(data.time, data.status, data.censor_weights,
                                                 **fine_gray_codes(model))


def aligned(data: Dataset, names: list) -> Dataset:
    """``data`` with the covariate columns ``names`` (those of the whole data), in that order:
    a covariate the shard lacks is a column of zeros; one not in ``names`` is left out."""
    position = {name: j for j, name in enumerate(data.covariate_names)}
    if list(data.covariate_names) == list(names):
        return data
    X = sp.csc_matrix(data.X)
    local = np.array([position.get(name, -1) for name in names], dtype=np.int64)
    counts = np.where(local >= 0, np.diff(X.indptr)[np.maximum(local, 0)], 0)
    indptr = np.concatenate([[0], np.cumsum(counts)])
    take = np.concatenate([np.arange(X.indptr[j], X.indptr[j + 1]) for j in local[local >= 0]] or [np.zeros(0, int)])
    out = sp.csc_matrix((X.data[take], X.indices[take], indptr), shape=(data.n_rows, len(names)))
    return replace(data, X=out, covariate_names=list(names))


class SeparableShard:
    """A shard whose log-likelihood is a term of the whole data's sum (a GLM's rows, whole
    strata of a stratified Cox, conditional or SCCS model): each question is answered by the
    shard's own datafit (None: rows that carry no information, which answer zeros)."""

    #: who the rows are (set where the shard is built; replicates read it)
    units: "RowUnits | None" = None

    def __init__(self, datafit: Datafit | None, coef_names: list):
        self.datafit, self.coef_names, self.n_coef = datafit, coef_names, len(coef_names)
        self._states: OrderedDict = OrderedDict()
        self._quadratics: dict = {}

    def scaled(self, factor: np.ndarray) -> "SeparableShard":
        """The same rows with case weights multiplied by ``factor`` (Dataset row order: a fold's
        training or held-out rows, a bootstrap draw), sharing the design."""
        if self.datafit is None:
            return self
        base = self._fit.data_weights()
        if not isinstance(self.datafit, Reweightable):
            raise InputError(f"the {type(self.datafit).__name__} family cannot be reweighted for replicates")
        view = SeparableShard(self.datafit.reweighted(base * np.asarray(factor, dtype=np.float64)[: base.shape[0]]),
                              self.coef_names)
        view.units = self.units
        return view

    @property
    def nbytes(self) -> int:
        """Bytes held (Dask's sizeof: a shard is worth keeping where it is)."""
        if self.datafit is None:
            return 64
        design = self.datafit.design
        return int(design.indices.nbytes + design.values.nbytes + 80 * design.n_rows)

    @property
    def hessian_rank(self) -> int:
        return 0 if self.datafit is None else self.datafit.hessian_rank

    @property
    def _fit(self) -> Datafit:
        """The datafit, where a state exists (only a shard with a datafit has states)."""
        assert self.datafit is not None
        return self.datafit

    def state(self, key: int, beta: np.ndarray) -> FitState | None:
        """The state at ``beta`` (named ``key`` by the client), computed once; None without a
        datafit (every method then answers zeros)."""
        if self.datafit is None:
            return None
        if key not in self._states:
            self._states[key] = self.datafit.new_state(beta)
            self._quadratics = {k: q for k, q in self._quadratics.items() if k[0] in self._states}
            while len(self._states) > KEPT_STATES:
                self._states.popitem(last=False)
        return self._states[key]

    def loglik(self, key: int, beta: np.ndarray) -> float:
        state = self.state(key, beta)
        return 0.0 if state is None else float(self._fit.loglik(state))

    def diagnose(self, key: int, beta: np.ndarray) -> str | None:
        state = self.state(key, beta)
        return None if state is None else self._fit.diagnose(state, beta)

    def gradient(self, key: int, beta: np.ndarray, columns: np.ndarray | None = None) -> np.ndarray:
        state = self.state(key, beta)
        size = self.n_coef if columns is None else len(columns)
        if state is None:
            return np.zeros(size)
        return self._fit.gradient(state) if columns is None else self._fit.slopes(state, columns)

    def hessian(self, key: int, beta: np.ndarray, columns: np.ndarray) -> np.ndarray:
        state = self.state(key, beta)
        return np.zeros((len(columns), len(columns))) if state is None else self._fit.hessian(state, columns)

    def quadratic(self, key: int, beta: np.ndarray, columns: np.ndarray) -> QuadraticPart:
        """The shard's part of the local quadratic on ``columns`` (its Hessian-vector products
        are asked next, by :meth:`hessian_times`)."""
        state = self.state(key, beta)
        if state is None:
            zero = np.zeros(len(columns))
            return QuadraticPart(zero, zero, None, None)
        quad = self._fit.local_quadratic(state, columns)
        if quad is None:  # a family without a matrix-free form: its block, formed once
            block = self._fit.hessian(state, columns)
            gradient = self._fit.slopes(state, columns)
            self._quadratics[key, columns.tobytes()] = lambda v: block @ v
            return QuadraticPart(gradient, -np.diag(block), None, None)
        self._quadratics[key, columns.tobytes()] = quad.hessian_times
        return QuadraticPart(quad.gradient, quad.curvature, quad.intercept, quad.coupling)

    def hessian_times(self, key: int, columns: np.ndarray, v: np.ndarray) -> np.ndarray:
        if self.datafit is None:
            return np.zeros(len(columns))
        return self._quadratics[key, columns.tobytes()](v)

    def information_scale(self, key: int, beta: np.ndarray, columns: np.ndarray) -> np.ndarray:
        state = self.state(key, beta)
        return np.zeros(len(columns)) if state is None else self._fit.information_scale(state, columns)

    def reach(self, direction: np.ndarray) -> float:
        return 0.0 if self.datafit is None else self.datafit.reach(direction)


@dataclass(frozen=True)
class QuadraticPart:
    """One shard's part of a local quadratic (:class:`~riskset.core.interface.LocalQuadratic`,
    all of its fields add over shards but ``intercept``, the same in every shard)."""

    gradient: np.ndarray
    curvature: np.ndarray
    intercept: int | None
    coupling: np.ndarray | None


@dataclass(frozen=True)
class RowUnits:
    """Who each row of a shard is, in Dataset row order, for replicates drawn where the rows are:
    its row id and, with strata, its stratum's label (a matched set resampled whole)."""

    row_ids: np.ndarray
    strata: np.ndarray | None

    @staticmethod
    def of(data: Dataset) -> "RowUnits":
        strata = None
        if data.strata is not None:
            codes = np.asarray(data.strata)
            strata = np.asarray(data.strata_labels)[codes] if data.strata_labels is not None else codes
        return RowUnits(np.asarray(data.row_ids), strata)


def build_separable(data: Dataset, model: Model, names: list, label: str) -> SeparableShard:
    """The resident shard of a model whose shards' log-likelihoods add up, on the covariates
    ``names`` of the whole data (its coefficients: those names where the model drops constant
    covariates, else the model's names of them, e.g. with an intercept)."""
    register_sizes()
    data = aligned(data, names)
    try:
        coef_names = names if model.drops_constant_covariates else model.coef_names(data)
        shard = SeparableShard(model.shard_datafit(data), coef_names)
    except InputError as err:
        raise InputError(f"shard {label}: {err}") from None
    shard.units = RowUnits.of(data)
    return shard


def build_risk_sets(data: Dataset, model: CoxModel, names: list, grid: np.ndarray, label: str) -> CoxRowShard:
    """The resident shard of a Cox model without strata, whose risk sets span shards."""
    register_sizes()
    data = aligned(data, names)
    try:
        shard = CoxRowShard(data.X, data.time, data.status, grid, start=data.start, weights=data.weights,
                            offset=data.offset, ties=model.ties)
    except InputError as err:
        raise InputError(f"shard {label}: {err}") from None
    shard.units = RowUnits.of(data)
    return shard


def build_fine_gray(data: Dataset, model: FineGrayModel, names: list, grid: np.ndarray, censoring: Censoring,
                    label: str) -> FineGrayRowShard:
    """The resident shard of a Fine-Gray model, whose subdistribution risk sets span shards."""
    register_sizes()
    data = aligned(data, names)
    try:
        shard = FineGrayRowShard(data.X, data.time, data.status, grid, censoring, weights=data.weights,
                                 offset=data.offset, censor_weights=data.censor_weights, **fine_gray_codes(model))
    except InputError as err:
        raise InputError(f"shard {label}: {err}") from None
    shard.units = RowUnits.of(data)
    return shard


def _column_range(X: sp.csc_matrix) -> tuple[np.ndarray, np.ndarray]:
    """Per column, its least and largest value over every row (a column with fewer stored
    values than rows has zeros)."""
    n, p = X.shape
    low, high = np.zeros(p), np.zeros(p)
    counts = np.diff(X.indptr)
    filled = counts > 0
    if filled.any():
        starts = X.indptr[:-1][filled]
        low[filled] = np.minimum.reduceat(X.data, starts) if X.data.size else 0.0
        high[filled] = np.maximum.reduceat(X.data, starts) if X.data.size else 0.0
    sparse = counts < n
    low[sparse], high[sparse] = np.minimum(low[sparse], 0.0), np.maximum(high[sparse], 0.0)
    return low, high


def register_sizes() -> None:
    """Tell Dask what a shard weighs, so that its tasks run where it lives instead of moving it
    (where it is built: Dask is imported only by a sharded fit)."""
    from dask.sizeof import sizeof

    @sizeof.register(SeparableShard)
    @sizeof.register(RowShard)
    def _shard_size(shard) -> int:
        return shard.nbytes
