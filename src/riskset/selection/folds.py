"""Resampling units and fold assignment.

Rows that belong together stay together: all rows of a subject (start-stop data,
person-periods), and all rows of a stratum for models conditional on it (a matched set
or a case's eras only make sense whole: :attr:`~riskset.models.base.Model.resampling_unit`).
Folds are balanced on the model's events (:attr:`~riskset.models.base.Model.event_of_interest`):
units with an event are dealt round-robin over the folds in random order, then the others.

``model`` arguments are a registered name or a Model (as in :func:`riskset.fit`); None
means the defaults of every model: rows resampled, status 1 the event.
"""
from __future__ import annotations

import numpy as np

from riskset.data.dataset import Dataset
from riskset.exceptions import InputError
from riskset.models.base import Model, as_model


def _model(model) -> Model | type[Model]:
    """``model`` as a Model; for None the class itself, whose attributes are every model's defaults."""
    return Model if model is None else as_model(model)


def resampling_units(data: Dataset, model: str | Model | None = None) -> np.ndarray:
    """Unit code per row: the subject if the data name subjects, else the stratum for a model
    resampling strata whole (conditional models), else the row."""
    if data.subject is not None:
        return data.subject
    if data.strata is not None and _model(model).resampling_unit == "stratum":
        return data.strata
    return np.arange(data.n_rows)


def has_event(data: Dataset, event_code: int = 1) -> np.ndarray:
    """Per row: an event of interest (status ``event_code``) or a positive response."""
    if data.status is not None:
        return data.status == event_code
    if data.y is not None:
        return data.y > 0
    return np.zeros(data.n_rows, bool)


def assign_folds(data: Dataset, n_folds: int = 10, n_repeats: int = 1, seed: int = 0,
                 model: str | Model | None = None) -> np.ndarray:
    """Fold of each row for each repetition, shape (n_repeats, n_rows), reproducible from
    ``seed``: the model's resampling units, balanced on its events.

    >>> import riskset
    >>> d = riskset.simulate(n=100, p=3, model="logistic", seed=0)
    >>> f = assign_folds(d, n_folds=5, n_repeats=2, seed=1)
    >>> f.shape, sorted(set(f[0].tolist()))
    ((2, 100), [0, 1, 2, 3, 4])
    """
    units = resampling_units(data, model)
    n_units = int(units.max()) + 1
    if n_folds < 2 or n_folds > n_units:
        raise InputError(f"n_folds must be between 2 and the number of units ({n_units}), got {n_folds}")
    unit_event = np.zeros(n_units, bool)
    np.logical_or.at(unit_event, units, has_event(data, _model(model).event_of_interest))
    rng = np.random.default_rng(seed)
    folds = np.empty((n_repeats, data.n_rows), np.int64)
    for r in range(n_repeats):
        unit_fold = np.empty(n_units, np.int64)
        offset = rng.integers(n_folds)
        for group in (np.flatnonzero(unit_event), np.flatnonzero(~unit_event)):
            perm = rng.permutation(group)
            unit_fold[perm] = (np.arange(perm.size) + offset) % n_folds
            offset = (offset + perm.size) % n_folds
        folds[r] = unit_fold[units]
    return folds


def bootstrap_weights(data: Dataset, rng: np.random.Generator, model: str | Model | None = None) -> np.ndarray:
    """Row multiplicities of one bootstrap sample of the model's resampling units
    (nonparametric, with replacement)."""
    units = resampling_units(data, model)
    n_units = int(units.max()) + 1
    counts = np.bincount(rng.integers(0, n_units, n_units), minlength=n_units)
    return counts[units].astype(np.float64)


def checked_splits(data: Dataset, held_out, model: str | Model | None = None) -> np.ndarray:
    """User-given splits as a (splits, rows) boolean array (a 1-d mask is one split: e.g. the
    rows of weight 0 held out, Cyclops' weight-based search), checked: each split holds out
    some rows and trains on others, and keeps the model's resampling units (subjects,
    matched sets) whole.

    >>> import numpy as np, riskset
    >>> d = riskset.simulate(n=10, p=2, model="logistic", seed=0)
    >>> checked_splits(d, np.arange(10) < 3).shape
    (1, 10)
    """
    mask = np.asarray(held_out)
    if mask.dtype != bool:
        raise InputError(f"held_out must be a boolean mask of the rows held out (one row per split), got dtype "
                         f"{mask.dtype}")
    mask = np.atleast_2d(mask)
    if mask.ndim != 2 or mask.shape[1] != data.n_rows:
        raise InputError(f"held_out must have one column per row of the data ({data.n_rows}), got shape "
                         f"{np.shape(held_out)}")
    counts = mask.sum(axis=1)
    empty = np.flatnonzero((counts == 0) | (counts == data.n_rows))
    if empty.size:
        raise InputError(f"split {empty[0] + 1} of held_out holds out {counts[empty[0]]} of {data.n_rows} rows: "
                         f"each split needs rows to hold out and rows to train on")
    units = resampling_units(data, model)
    size = np.bincount(units)
    for k, out in enumerate(mask):
        split = np.flatnonzero((np.bincount(units, weights=out, minlength=size.size) % size) != 0)
        if split.size:
            what = "subject" if data.subject is not None else "matched set (stratum)"
            raise InputError(f"split {k + 1} of held_out divides a {what} between training and held-out rows "
                             f"(first: unit {split[0]}): hold out whole {what}s")
    return mask
