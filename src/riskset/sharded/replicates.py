"""Replicates of a sharded fit (cross-validation folds, bootstrap draws) as weights drawn where
the rows are, fitted together: every round of tasks carries every live replicate's question.

A replicate is named by a small record (:class:`Fold`, :class:`PoissonDraw`) that a worker turns
into a factor on its rows' case weights from the rows' own ids (a hash of the unit and the
seed: the same row gets the same fold or count on whichever worker reads it), and keeps as a
view of its resident shard (:meth:`~riskset.sharded.shards.SeparableShard.scaled`: the design
shared). The client fits R replicates in R threads, each the single fit's outer Newton
iterations on its own :class:`~riskset.sharded.datafit.ShardedDatafit`, whose exchange is a
:class:`ReplicateChannel`: a question waits until every live replicate has asked one, then one
task per shard answers them all (:class:`ReplicateRounds`). R fits cost the rounds of the
slowest, not R times the rounds.
"""
from __future__ import annotations

import hashlib
import threading
import weakref
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Callable

import numpy as np
import pandas as pd

from riskset.sharded import competing_risks
from riskset.sharded.datafit import Exchange, RiskSetDatafit, ShardedDatafit

#: Units a replicate draws: rows, or whole strata (matched sets, SCCS cases).
UNITS = ("row", "stratum")


def unit_hash(ids: np.ndarray, seed: int, salt: str) -> np.ndarray:
    """A uint64 per id, the same for the same (id, seed, salt) on every machine."""
    key = f"{salt}{seed}".rjust(16, "0")[-16:]
    return pd.util.hash_array(np.asarray(ids).astype(str), hash_key=key, categorize=True)


def assign_folds(ids: np.ndarray, n_folds: int, seed: int) -> np.ndarray:
    """The fold (0 .. n_folds - 1) of each unit id: a hash of the id and the seed, so that a
    unit's fold does not depend on which shard holds it nor on the other units.

    >>> folds = assign_folds(np.array([10, 11, 10, 12]), 3, seed=1)
    >>> bool(folds[0] == folds[2]), bool(np.all((folds >= 0) & (folds < 3)))
    (True, True)
    """
    return (unit_hash(ids, seed, "fold") % np.uint64(n_folds)).astype(np.int64)


@dataclass(frozen=True)
class Fold:
    """The training (``held_out=False``) or held-out rows of fold ``fold`` of ``n_folds``."""

    seed: int
    n_folds: int
    fold: int
    held_out: bool
    unit: str = "row"

    def __post_init__(self):
        _check_unit(self.unit)

    def factor(self, units) -> np.ndarray:
        inside = assign_folds(_ids(units, self.unit), self.n_folds, self.seed) == self.fold
        return (inside if self.held_out else ~inside).astype(np.float64)


@dataclass(frozen=True)
class PoissonDraw:
    """Bootstrap draw ``draw``: each unit's count ~ Poisson(1) (the Poisson bootstrap: units
    drawn independently where they are, no count of the whole data needed), from a hash of the
    unit, the seed and the draw."""

    seed: int
    draw: int
    unit: str = "row"

    def __post_init__(self):
        _check_unit(self.unit)

    def factor(self, units) -> np.ndarray:
        u = (unit_hash(_ids(units, self.unit), self.seed * 1_000_003 + self.draw, "boot") >> np.uint64(11))
        uniform = (u.astype(np.float64) + 0.5) / 2.0**53
        return _poisson_one(uniform)


class Recensored:
    """A Fine-Gray replicate whose competing rows are weighted by the Kaplan-Meier of censoring of
    its own case weights (as one machine's reweighted Fine-Gray datafit recomputes G)."""

    def __init__(self, replicate, censoring):
        self.replicate, self.censoring = replicate, censoring
        self._key = (replicate, hashlib.sha1(np.ascontiguousarray(censoring.at_grid).tobytes()).hexdigest())

    def __eq__(self, other) -> bool:
        return isinstance(other, Recensored) and self._key == other._key

    def __hash__(self) -> int:
        return hash(self._key)

    def view(self, shard):
        return view_of(shard, self.replicate).recensored(self.censoring)


def own_censoring(datafit, channel):
    """A Fine-Gray replicate's datafit on its own censoring survival: one round for the censoring
    counts of its weights, the Kaplan-Meier on the client, and its questions asked of the shards
    reweighted by it (other datafits, and the whole data, as they are)."""
    if not isinstance(datafit, RiskSetDatafit) or datafit.censor_grids is None or channel.replicate is None:
        return datafit
    grid, censor_grid = datafit.censor_grids
    counts = competing_risks.combine_censoring_counts(channel.each(_censoring_now, censor_grid))
    censoring = competing_risks.kaplan_meier_censoring(grid, censor_grid, counts)
    return datafit.on(channel.as_replicate(Recensored(channel.replicate, censoring)))


def _censoring_now(shard, censor_grid):
    return shard.censoring_now(censor_grid)


def _check_unit(unit: str) -> None:
    if unit not in UNITS:
        raise ValueError(f"a replicate's unit must be one of {UNITS}, not {unit!r}")


def _ids(units, unit: str) -> np.ndarray:
    if unit == "stratum":
        if units.strata is None:
            raise ValueError("a replicate by stratum needs the shard's strata")
        return units.strata
    return units.row_ids


def _poisson_one(uniform: np.ndarray) -> np.ndarray:
    """Inverse CDF of Poisson(1) at ``uniform``."""
    k = np.arange(30)
    cdf = np.cumsum(np.exp(-1.0) / np.cumprod(np.concatenate([[1.0], k[1:].astype(np.float64)])))
    return np.searchsorted(cdf, uniform).astype(np.float64)


# -- on the workers ---------------------------------------------------------------------------

_VIEWS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
_VIEWS_LOCK = threading.Lock()


def view_of(shard, replicate):
    """The shard itself (``replicate`` None) or its replicate's view, made once per shard."""
    if replicate is None:
        return shard
    with _VIEWS_LOCK:
        views = _VIEWS.get(shard, {})
        if replicate in views:
            return views[replicate]
    view = replicate.view(shard) if isinstance(replicate, Recensored) else shard.scaled(replicate.factor(shard.units))
    with _VIEWS_LOCK:
        return _VIEWS.setdefault(shard, {}).setdefault(replicate, view)


def answer_all(shard, questions: list) -> list:
    """One round on one shard: each replicate's question ``(replicate, method, args)``."""
    return [method(view_of(shard, replicate), *args) for replicate, method, args in questions]


# -- on the client ----------------------------------------------------------------------------

class ReplicateRounds:
    """Rounds shared by the replicates fitted in client threads: a question waits until every
    live replicate has one, then one task per shard answers them all."""

    def __init__(self, exchange: Exchange, n_live: int):
        self.exchange, self.live = exchange, n_live
        self._cond = threading.Condition()
        self._questions: dict = {}
        self._answers: dict = {}

    def ask(self, index: int, replicate, method, args) -> list:
        """The shards' answers to replicate ``index``'s question ``method(view, *args)``."""
        with self._cond:
            self._questions[index] = (replicate, method, args)
            self._flush_if_complete()
            self._cond.wait_for(lambda: index in self._answers)
            answer = self._answers.pop(index)
        if isinstance(answer, BaseException):
            raise answer
        return answer

    def leave(self) -> None:
        """A replicate's fit ended: the others no longer wait for it."""
        with self._cond:
            self.live -= 1
            self._flush_if_complete()

    def _flush_if_complete(self) -> None:
        if not self._questions or len(self._questions) < self.live:
            return
        indices, questions = list(self._questions), list(self._questions.values())
        self._questions.clear()
        try:
            per_shard = self.exchange.each(answer_all, questions)
            for i, index in enumerate(indices):
                self._answers[index] = [answers[i] for answers in per_shard]
        except Exception as err:  # every waiting replicate re-raises it
            for index in indices:
                self._answers[index] = err
        self._cond.notify_all()


class ReplicateChannel:
    """One replicate's exchange (the :class:`~riskset.sharded.datafit.Exchange` interface), its
    rounds shared with the other replicates' (:class:`ReplicateRounds`)."""

    def __init__(self, rounds: ReplicateRounds, index: int, replicate):
        self._rounds, self.index, self.replicate = rounds, index, replicate
        self.client, self.shards = rounds.exchange.client, rounds.exchange.shards

    def as_replicate(self, replicate) -> "ReplicateChannel":
        """This replicate's place in the rounds, its shards answering as ``replicate``."""
        return ReplicateChannel(self._rounds, self.index, replicate)

    @property
    def rounds(self) -> int:
        return self._rounds.exchange.rounds

    @property
    def bytes(self) -> int:
        return self._rounds.exchange.bytes

    def each(self, method, *args) -> list:
        return self._rounds.ask(self.index, self.replicate, method, args)

    def total(self, method, *args):
        return sum(self.each(method, *args))


def run_replicates(datafit: ShardedDatafit, replicates: list, work: Callable) -> list:
    """``work(replicate_datafit, r)`` for each of ``replicates`` (records such as :class:`Fold`, or
    None for the whole data), in threads whose questions share rounds; their results in order.
    ``datafit`` is the whole data's (its shards and exchange)."""
    rounds = ReplicateRounds(datafit.exchange, len(replicates))

    def one(r: int):
        try:
            channel = ReplicateChannel(rounds, r, replicates[r])
            return work(own_censoring(datafit.on(channel), channel), r)
        finally:
            rounds.leave()

    with ThreadPoolExecutor(max_workers=len(replicates)) as pool:
        return list(pool.map(one, range(len(replicates))))
