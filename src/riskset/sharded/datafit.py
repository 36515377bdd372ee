"""The client's side of a sharded fit: a :class:`~riskset.core.interface.Likelihood` whose
every question is a round of tasks on the shards' workers and a sum of their answers.

Two couplings of the shards:

* :class:`SeparableDatafit`: the log-likelihood is a sum over shards (a GLM's rows; whole strata
  of a stratified Cox, conditional or SCCS model). Each value, gradient, Hessian block or
  Hessian-vector product is one round: every shard answers for its rows, the client adds.
* :class:`RiskSetDatafit`: a Cox model without strata, or a Fine-Gray model, rows split anyhow,
  so that a risk set spans shards. A state is one round that gathers per-event-time sums of
  w = c exp(eta) (the seed paper's scan one level up: each shard's totals over the global event
  times); the log-likelihood follows on the client; a gradient is one more round (each shard's
  X' (c delta - w rho) given the per-time multipliers); a Hessian-vector product two
  (:mod:`riskset.sharded.risk_sets`). The shards are any :class:`~riskset.sharded.risk_sets.RowShard`:
  :class:`~riskset.sharded.risk_sets.CoxRowShard`, or
  :class:`~riskset.sharded.competing_risks.FineGrayRowShard`, whose competing events stay in the
  later risk sets weighted by the censoring survival (its sums are Cox's with Breslow ties, and so
  are the client's functions of them). Only vectors over event times or coefficients travel.

:class:`Exchange` counts the rounds and the bytes sent and received.
"""
from __future__ import annotations

import itertools

import numpy as np

from riskset.core.interface import FitState, Likelihood, LocalQuadratic
from riskset.exceptions import ShardLostError
from riskset.sharded import risk_sets
from riskset.sharded.shards import SeparableShard
from riskset.sharded.risk_sets import RowShard


class Exchange:
    """The shards of a fit on a Dask client, and the traffic with them: ``rounds`` (each one task
    per shard and a gather) and ``bytes`` (arguments sent plus answers received). The shards
    answer with their whole rows (``replicate`` None; a replicate's exchange:
    :class:`riskset.sharded.replicates.ReplicateChannel`)."""

    replicate = None

    def __init__(self, client, shards: list):
        self.client, self.shards = client, shards
        self.rounds, self.bytes = 0, 0

    def each(self, method, *args) -> list:
        """``method(shard, *args)`` on every shard, where it lives; their answers in shard order.
        A shard whose workers kept dying (Dask reads it again on another each time, up to its
        ``allowed-failures``) ends the fit with :class:`~riskset.exceptions.ShardLostError`."""
        from dask.sizeof import sizeof
        from distributed import KilledWorker

        futures = [self.client.submit(method, shard, *args, pure=False) for shard in self.shards]
        try:
            answers = self.client.gather(futures)
        except KilledWorker as err:
            lost = next((k for k, f in enumerate(futures) if f.status == "error"), None)
            raise ShardLostError(f"the sharded fit stopped: {'shard ' + str(lost) if lost is not None else 'a shard'}"
                                 f" was lost with the workers that held it ({err})") from None
        self.rounds += 1
        self.bytes += len(self.shards) * sum(sizeof(a) for a in args) + sum(sizeof(a) for a in answers)
        return answers

    def total(self, method, *args):
        """The sum of the shards' answers."""
        return sum(self.each(method, *args))


class ShardedState(FitState):
    """A state of a sharded fit: its key (the shards keep their own arrays under it) and the
    coefficients; the rows' arrays live on the workers (``eta`` is empty here)."""

    _keys = itertools.count()

    def __init__(self, beta: np.ndarray):
        super().__init__(np.zeros(0))
        self.key, self.beta = next(self._keys), beta.copy()


class RiskSetState(ShardedState):
    """A state of a Cox or Fine-Gray fit over row shards: the per-event-time sums of the whole data, and the
    multipliers of its gradient once asked."""

    def __init__(self, beta: np.ndarray, sums: risk_sets.RiskSums):
        super().__init__(beta)
        self.sums = sums
        self.multipliers: risk_sets.Multipliers | None = None


def sharded(state: FitState) -> ShardedState:
    """``state`` as the sharded state it is (a state the solver got from this datafit)."""
    assert isinstance(state, ShardedState)
    return state


def risk_set_state(state: FitState) -> RiskSetState:
    assert isinstance(state, RiskSetState)
    return state


class ShardedDatafit(Likelihood):
    """A likelihood over rows held by many workers (module docstring); ``exchange`` its shards."""

    def __init__(self, exchange: Exchange, n_coef: int, names: list, rank: int):
        self.exchange, self._n_coef, self._rank = exchange, n_coef, rank
        self.coef_names: list[str] = list(names)
        self.names = self.coef_names

    @property
    def n_coef(self) -> int:
        return self._n_coef

    @property
    def hessian_rank(self) -> int:
        return self._rank

    def new_state(self, beta: np.ndarray) -> ShardedState:
        return ShardedState(np.asarray(beta, dtype=np.float64))

    def on(self, exchange) -> "ShardedDatafit":
        """The same likelihood asked through ``exchange`` (a replicate's channel:
        :mod:`riskset.sharded.replicates`, whose shards answer with their replicate's rows)."""
        return type(self)(exchange, self._n_coef, self.coef_names, self._rank)

    def reach(self, direction: np.ndarray) -> float:
        return max(self.exchange.each(_reach, np.asarray(direction, dtype=np.float64)))


class SeparableDatafit(ShardedDatafit):
    """Shards whose log-likelihoods add up (module docstring)."""

    def loglik(self, state: FitState) -> float:
        return float(self.exchange.total(SeparableShard.loglik, *_point(state)))

    def gradient(self, state: FitState) -> np.ndarray:
        return self.exchange.total(SeparableShard.gradient, *_point(state))

    def slopes(self, state: FitState, coefs: np.ndarray) -> np.ndarray:
        return self.exchange.total(SeparableShard.gradient, *_point(state), np.asarray(coefs, np.int64))

    def hessian(self, state: FitState, columns: np.ndarray) -> np.ndarray:
        return self.exchange.total(SeparableShard.hessian, *_point(state), np.asarray(columns, np.int64))

    def local_quadratic(self, state: FitState, columns: np.ndarray) -> LocalQuadratic:
        columns = np.asarray(columns, np.int64)
        parts = self.exchange.each(SeparableShard.quadratic, *_point(state), columns)
        couplings = [p.coupling for p in parts if p.coupling is not None]
        intercepts = {p.intercept for p in parts if p.intercept is not None}
        return LocalQuadratic(
            gradient=sum(p.gradient for p in parts), curvature=sum(p.curvature for p in parts),
            hessian_times=lambda v: self.exchange.total(SeparableShard.hessian_times, sharded(state).key, columns, v),
            intercept=intercepts.pop() if len(intercepts) == 1 else None,
            coupling=sum(couplings) if couplings and len(intercepts) <= 1 else None)

    def information_scale(self, state: FitState, columns: np.ndarray) -> np.ndarray:
        return self.exchange.total(SeparableShard.information_scale, *_point(state),
                                   np.asarray(columns, np.int64))

    def diagnose(self, state: FitState, beta: np.ndarray) -> str | None:
        problems = [p for p in self.exchange.each(SeparableShard.diagnose, *_point(state)) if p]
        return problems[0] if problems else None


class RiskSetDatafit(ShardedDatafit):
    """A Cox model without strata or a Fine-Gray model over row shards (module docstring), the
    shards :class:`~riskset.sharded.risk_sets.RowShard`; ``counts`` the weighted events and tied
    event rows per event time of the whole data, ``ties`` Breslow or Efron (Fine-Gray: Breslow)."""

    def __init__(self, exchange: Exchange, n_coef: int, names: list, rank: int, ties: str,
                 censor_grids: tuple | None = None):
        super().__init__(exchange, n_coef, names, rank)
        self.ties = ties
        #: Fine-Gray with the Kaplan-Meier of censoring: (event grid, censoring grid), on which a
        #: replicate computes its own (riskset.sharded.replicates.Recensored); else None
        self.censor_grids = censor_grids
        self.counts = risk_sets.combine_counts(exchange.each(shard_counts))  # the static per-time event counts

    def on(self, exchange) -> "RiskSetDatafit":
        return RiskSetDatafit(exchange, self._n_coef, self.coef_names, self._rank, self.ties, self.censor_grids)

    def new_state(self, beta: np.ndarray) -> RiskSetState:
        beta = np.asarray(beta, dtype=np.float64)
        return RiskSetState(beta, risk_sets.combine_sums(self.exchange.each(RowShard.sums, beta)))

    def _multipliers(self, state: FitState) -> risk_sets.Multipliers:
        own = risk_set_state(state)
        if own.multipliers is None:
            own.multipliers = risk_sets.multipliers(own.sums, self.counts, self.ties)
        return own.multipliers

    def loglik(self, state: FitState) -> float:
        return float(risk_sets.log_likelihood(risk_set_state(state).sums, self.counts, self.ties))

    def _gradient(self, state: FitState, columns=None):
        parts = self.exchange.each(RowShard.gradient, sharded(state).beta, self._multipliers(state), columns)
        return sum(p.gradient for p in parts), sum(p.curvature for p in parts)

    def gradient(self, state: FitState) -> np.ndarray:
        return self._gradient(state)[0]

    def slopes(self, state: FitState, coefs: np.ndarray) -> np.ndarray:
        return self._gradient(state, np.asarray(coefs, np.int64))[0]

    def hessian_times(self, state: FitState, columns: np.ndarray, v: np.ndarray) -> np.ndarray:
        """H_AA v in two rounds: the per-time sums of w x_A v, then each shard's product."""
        own, multipliers = risk_set_state(state), self._multipliers(state)
        totals = risk_sets.combine_hvp_sums(
            self.exchange.each(RowShard.hvp_sums, own.beta, multipliers.shift, columns, v))
        second = risk_sets.hvp_multipliers(own.sums, self.counts, totals, self.ties)
        return self.exchange.total(RowShard.hvp, own.beta, columns, v, multipliers, second)

    def hessian(self, state: FitState, columns: np.ndarray) -> np.ndarray:
        """The block as |A| Hessian-vector products (used for small blocks and standard errors)."""
        columns = np.asarray(columns, np.int64)
        eye = np.eye(columns.size)
        block = np.column_stack([self.hessian_times(state, columns, eye[:, a]) for a in range(columns.size)])
        return 0.5 * (block + block.T)

    def hessian_work(self, columns: np.ndarray) -> float:
        return np.inf  # a formed block costs |A| rounds: conjugate gradients instead

    def local_quadratic(self, state: FitState, columns: np.ndarray) -> LocalQuadratic:
        columns = np.asarray(columns, np.int64)
        gradient, curvature = self._gradient(state, columns)
        return LocalQuadratic(gradient, curvature, lambda v: self.hessian_times(state, columns, v))

    def diagnose(self, state: FitState, beta: np.ndarray) -> str | None:
        sums = risk_set_state(state).sums
        if not (np.isfinite(sums.shift) and np.all(np.isfinite(sums.S0))):
            return "the linear predictor overflowed (exp(eta) is not finite): coefficients diverge"
        return None


def shard_counts(shard) -> risk_sets.EventCounts:
    return shard.counts()


def _point(state: FitState) -> tuple[int, np.ndarray]:
    """(key, coefficients) of a sharded state: how a shard finds or computes it."""
    own = sharded(state)
    return own.key, own.beta


def _reach(shard, direction: np.ndarray) -> float:
    return shard.reach(direction)
