"""The one internal data set every model is fitted from.

A :class:`Dataset` is model-agnostic: a sparse covariate matrix plus named outcome
arrays. Each model reads the fields it needs, validates them and prepares its own
row order (see ``Model.datafit``). Builders for the supported input shapes live in
:mod:`riskset.data.ingest`.
"""
from __future__ import annotations

import math
import warnings
from dataclasses import dataclass, field, replace
from typing import NamedTuple

import numpy as np
import scipy.sparse as sp
from numba import njit, prange

from riskset.core.design import as_indicator_csc, indicator_csc, stores_no_values
from riskset.exceptions import DataWarning, InputError
from riskset.validation import coef_mapping, coef_names

#: Outcome fields a Dataset may carry; each is an array of length n_rows or None.
OUTCOME_FIELDS = ("y", "time", "status", "start", "weights", "offset", "censor_weights")

#: Largest |covariate value| accepted, and smallest largest-|value| of a covariate column.
#: The fits square covariate values (x^2 w in every Hessian): measured, a column scaled
#: by 1e150 or 1e-150 fits exactly as the unscaled one, but from 1e155 (x^2 overflows) a
#: "converged" fit sets the coefficient to 0, and from 1e-160 (x^2 underflows) the
#: standard error is infinite. These bounds leave 50 orders of magnitude for sums over
#: rows, weights and products of two columns; values beyond them are refused
#: (:func:`check_covariate_values`), never fitted wrongly.
COVARIATE_MAX = 1e100
COVARIATE_MIN = 1e-100

#: Largest total of the case weights. A fit's standard errors shrink as 1/sqrt(total weight)
#: while the rounding error of its gradient, a weighted sum, grows as 1e-16 x total weight; the
#: convergence check asks the gradient to be below kkt_tol (1e-4) standard errors. Measured (60
#: rows, every weight scaled alike: the same estimates): logistic, Poisson, least squares and
#: Cox fits converge up to a total of 6e23; from 6e24 (Poisson), 6e25 (Cox), 6e26 (logistic,
#: least squares) they run 1000 cycles and do not converge; a weight of 1e300 also overflows
#: the sums (NumPy warnings). 1e20 leaves a margin of 1e3 (1e8 rows of weight 1e6 fit).
WEIGHT_TOTAL_MAX = 1e20


class _IndicatorPattern(NamedTuple):
    """An :func:`~riskset.core.design.indicator_csc` matrix as pickled: where its ones are."""

    indices: np.ndarray
    indptr: np.ndarray
    shape: tuple


@dataclass(frozen=True)
class Dataset:
    """Covariates and outcomes of ``n_rows`` observations.

    Parameters
    ----------
    X : scipy.sparse.csc_matrix, shape (n_rows, n_covariates)
        Covariates; indicator, sparse and dense columns alike. When every stored value is 1
        (indicator covariates: claims data), ``X.data`` is one read-only 1.0 seen at every
        non-zero (:func:`riskset.core.design.indicator_csc`): no 8 bytes per non-zero.
        Products and slicing work as usual; in-place changes of ``X.data`` are refused
        (copy ``X`` first).
    covariate_names : list of str
        One name per column of X.
    row_ids : ndarray
        Identifier of each row as given by the user (used in error messages).
    y : ndarray, optional
        Response: 0/1 for logistic, counts for Poisson, real for least squares,
        case indicator for conditional logistic, event counts for SCCS.
    time, status, start : ndarray, optional
        Survival outcome. ``time`` is the event/censoring time (the interval end for
        counting-process data), ``start`` the interval start, ``status`` an integer
        code (0 censored, 1 event, other codes competing events).
    strata : ndarray of int, optional
        Stratum code 0..n_strata-1 of each row (matched set, person, stratum).
    strata_labels : ndarray, optional
        Original label of each stratum code.
    subject : ndarray of int, optional
        Subject code of each row, when a subject has several rows.
    weights : ndarray, optional
        Non-negative case weights, adding up to at most :data:`WEIGHT_TOTAL_MAX`.
    offset : ndarray, optional
        Fixed part of the linear predictor (already on the log/logit scale).
    censor_weights : ndarray, optional
        Fine-Gray censoring weights, the censoring survival G(T-) of each row in [0, 1]
        (Cyclops' ``censorWeights``); without them the Fine-Gray model takes the
        Kaplan-Meier estimate. Other models refuse them.
    meta : dict
        What the builders record, e.g. ``meta['roles']``: which column played which role.
    covariate_labels : dict
        Display name of covariates that have one (``covariate_name`` of an OHDSI
        reference table, keyed by covariate name = id); names stay the keys of
        coefficients, labels are only shown (tables, plots, summaries).

    Examples
    --------
    >>> import riskset
    >>> riskset.from_arrays([[1.0, 0.0], [0.0, 2.0], [1.0, 1.0]], y=[1, 0, 1])
    Dataset: 3 rows, 2 covariates
      outcome: y
      covariates: 'x0', 'x1'
      roles: unweighted, unstratified, no offset
    """

    X: sp.csc_matrix
    covariate_names: list[str]
    row_ids: np.ndarray
    y: np.ndarray | None = None
    time: np.ndarray | None = None
    status: np.ndarray | None = None
    start: np.ndarray | None = None
    weights: np.ndarray | None = None
    offset: np.ndarray | None = None
    censor_weights: np.ndarray | None = None
    strata: np.ndarray | None = None
    strata_labels: np.ndarray | None = None
    subject: np.ndarray | None = None
    meta: dict = field(default_factory=dict)
    covariate_labels: dict = field(default_factory=dict)

    def __repr__(self) -> str:
        """A short summary: sizes, outcome fields, the first covariates and the roles."""
        roles = self.meta.get("roles", {})
        described = {role: roles.get(role, role) for role in ("weights", "offset", "censor_weights")
                     if getattr(self, role) is not None}
        if self.strata is not None:
            described.update(strata=roles.get("strata", "strata"), n_strata=self.n_strata)
        outcome = [f for f in OUTCOME_FIELDS if f not in ("weights", "offset", "censor_weights")
                   and getattr(self, f) is not None]
        lines = [f"Dataset: {self.n_rows:,} rows, {self.n_covariates:,} covariates",
                 f"  outcome: {', '.join(outcome) or 'none'}",
                 f"  covariates: {self._some_covariates()}",
                 f"  roles: {describe_roles(described)}"]
        if self.subject is not None:
            lines.append(f"  subjects: {int(self.subject.max()) + 1:,}")
        return "\n".join(lines)

    def _some_covariates(self, k: int = 5) -> str:
        """The first ``k`` covariate names (with their labels), then how many more."""
        shown = [repr(n) + (f" ({self.covariate_labels[n]})" if n in self.covariate_labels else "")
                 for n in self.covariate_names[:k]]
        more = self.n_covariates - len(shown)
        return ", ".join(shown) + (f", ... ({more:,} more)" if more > 0 else "") if shown else "none"

    def with_covariate_labels(self, labels) -> "Dataset":
        """The same data with display names for covariates (replacing any it had): a mapping name -> label
        (integer covariate ids name ``str(id)``); names not in the data raise.

        >>> import riskset
        >>> d = riskset.from_arrays([[1.0], [0.0]], y=[1, 0], covariate_names=["1002"])
        >>> d.with_covariate_labels({1002: "age group: 20-24"}).covariate_labels
        {'1002': 'age group: 20-24'}
        """
        labels = coef_mapping("covariate labels", labels)
        self.covariate_index(list(labels))
        return replace(self, covariate_labels={n: str(v) for n, v in labels.items()})

    def __post_init__(self):
        n = self.X.shape[0]
        if n == 0:
            raise InputError("the data set is empty (no rows)")
        if len(self.covariate_names) != self.X.shape[1]:
            raise InputError(
                f"{len(self.covariate_names)} covariate names for {self.X.shape[1]} columns"
            )
        if len(set(self.covariate_names)) != len(self.covariate_names):
            dup = _first_duplicate(self.covariate_names)
            raise InputError(f"covariate name {dup!r} appears more than once")
        for name in OUTCOME_FIELDS + ("strata", "subject", "row_ids"):
            arr = getattr(self, name)
            if arr is not None and len(arr) != n:
                raise InputError(f"{name} has {len(arr)} values for {n} rows")
        for name in OUTCOME_FIELDS:
            arr = getattr(self, name)
            if arr is not None:
                check_finite(arr, name, self.row_ids)
        if not stores_no_values(self.X):
            check_covariate_values(self.X, self.covariate_names, self.row_ids)
            object.__setattr__(self, "X", as_indicator_csc(self.X))
        if self.weights is not None:
            check_weights(self.weights, self.row_ids)

    def __getstate__(self) -> dict:
        """Pickled (to a worker process or a Dask worker) with an indicator X as its pattern
        alone: no 1.0 per non-zero is sent, and the copy holds none either."""
        state = dict(self.__dict__)
        if stores_no_values(self.X):
            state["X"] = _IndicatorPattern(self.X.indices, self.X.indptr, self.X.shape)
        return state

    def __setstate__(self, state: dict) -> None:
        X = state["X"]
        if isinstance(X, _IndicatorPattern):
            state = {**state, "X": indicator_csc(X.indices, X.indptr, X.shape)}
        self.__dict__.update(state)

    @property
    def n_rows(self) -> int:
        return self.X.shape[0]

    @property
    def n_covariates(self) -> int:
        return self.X.shape[1]

    @property
    def n_strata(self) -> int:
        return 0 if self.strata is None else int(self.strata.max()) + 1

    def require(self, *fields_: str, model: str) -> None:
        """Raise a clear error if a field the model needs is missing."""
        for f in fields_:
            if getattr(self, f) is None:
                raise InputError(f"the {model} model needs a {f!r} column, and the data have none")

    def subset(self, rows: np.ndarray) -> "Dataset":
        """The rows ``rows`` (indices or boolean mask), strata re-coded densely."""
        rows = np.flatnonzero(rows) if np.asarray(rows).dtype == bool else np.asarray(rows)
        kw = {f: (None if getattr(self, f) is None else getattr(self, f)[rows]) for f in OUTCOME_FIELDS}
        strata, labels = self.strata, self.strata_labels
        if strata is not None:
            used, strata = np.unique(strata[rows], return_inverse=True)
            labels = None if labels is None else labels[used]
        subject = None if self.subject is None else np.unique(self.subject[rows], return_inverse=True)[1]
        every_row = rows.shape[0] == self.n_rows and np.array_equal(rows, np.arange(self.n_rows))
        X = self.X if every_row else self.X[rows].tocsc()  # every row: the matrix itself, not a copy
        return replace(self, X=X, row_ids=self.row_ids[rows], strata=strata, strata_labels=labels, subject=subject,
                       **kw)

    def select(self, names) -> "Dataset":
        """The same rows with only the covariates ``names`` (in that order; integer
        covariate ids name ``str(id)``)."""
        cols = self.covariate_index(names)
        every_column = np.array_equal(cols, np.arange(self.n_covariates))
        return replace(self, X=self.X if every_column else self.X[:, cols],
                       covariate_names=[self.covariate_names[j] for j in cols])

    def drop_empty_covariates(self) -> "Dataset":
        """Drop covariates without a non-zero value, with a warning naming them."""
        X = self.X
        if not X.data.all():  # stored zeros, counted out on a copy (X itself is left as it is)
            X = X.copy()
            X.eliminate_zeros()
        empty = np.flatnonzero(np.diff(X.indptr) == 0)
        if empty.size == 0:
            return self
        names = [self.covariate_names[j] for j in empty]
        warnings.warn(f"dropped {len(names)} covariate(s) with no non-zero value: {first_names(names)}",
                      DataWarning, stacklevel=3)
        keep = np.setdiff1d(np.arange(X.shape[1]), empty)
        return replace(self, X=X[:, keep], covariate_names=[self.covariate_names[j] for j in keep])

    def covariate_index(self, names) -> np.ndarray:
        """Column indices of covariates ``names`` (integer ids name ``str(id)``); unknown names raise."""
        names = coef_names("covariate names", names)
        pos = {n: i for i, n in enumerate(self.covariate_names)}
        missing = [n for n in names if n not in pos]
        if missing:
            raise InputError(f"unknown covariate(s): {', '.join(map(repr, missing))}")
        return np.array([pos[n] for n in names], dtype=np.int64)


def check_finite(values: np.ndarray, name: str, row_ids: np.ndarray | None = None) -> None:
    """Raise InputError naming the first row where ``values`` is NaN or infinite."""
    values = np.asarray(values)
    if values.dtype.kind not in "biuf":
        raise InputError(f"column {name!r} is not numeric (dtype {values.dtype})")
    if values.dtype.kind == "f":
        bad = ~np.isfinite(values)
        if bad.any():
            i = int(np.flatnonzero(bad)[0])
            raise InputError(f"column {name!r} has {int(bad.sum())} non-finite value(s), "
                             f"first at {row_label(row_ids, i)}: {values[i]}")


def check_weights(weights: np.ndarray, row_ids) -> None:
    """Raise InputError for a negative case weight, or weights whose total exceeds
    :data:`WEIGHT_TOTAL_MAX` (naming the largest weight and its row, and how to rescale)."""
    if np.any(weights < 0):
        i = int(np.flatnonzero(weights < 0)[0])
        raise InputError(f"negative weight {weights[i]} at {row_label(row_ids, i)}")
    with np.errstate(over="ignore"):
        total = np.sum(weights)
    if total > WEIGHT_TOTAL_MAX:
        i = int(np.argmax(weights))
        raise InputError(
            f"the weights add up to {total:.3g} (largest {weights[i]:g} at {row_label(row_ids, i)}), beyond "
            f"{WEIGHT_TOTAL_MAX:g}: the standard errors shrink as 1/sqrt(total weight) while the rounding error "
            f"of the likelihood's weighted sums grows with the total: fits stop converging from totals of about "
            f"1e24, and larger ones overflow. Fix the weight, or divide every weight by one constant (the "
            f"estimates stay the same; model-based standard errors treat the weights as counts)")


def check_covariate_values(X: sp.csc_matrix, names, row_ids) -> None:
    """Raise InputError for a covariate value that is not finite or beyond :data:`COVARIATE_MAX`
    in magnitude, or a covariate whose every value is below :data:`COVARIATE_MIN` (but not all
    zero): the message names the covariate, the row and the value (and says how to rescale).
    One compiled pass over the stored values, no temporary per value."""
    indptr = np.asarray(X.indptr, dtype=np.int64)
    n_cols = indptr.shape[0] - 1
    col_max = np.zeros(n_cols)
    first_bad, first_big, n_big = (np.empty(n_cols, np.int64) for _ in range(3))
    _column_magnitudes(indptr, X.data, COVARIATE_MAX, col_max, first_bad, first_big, n_big)
    bad = first_bad[first_bad >= 0]
    if bad.size:
        e = int(bad.min())
        col = int(np.searchsorted(indptr, e, side="right") - 1)
        raise InputError(f"covariate {names[col]!r} has a non-finite value ({X.data[e]}) at "
                         f"{row_label(row_ids, X.indices[e])}")
    big = first_big[first_big >= 0]
    if big.size:
        e = int(big.min())
        col = int(np.searchsorted(indptr, e, side="right") - 1)
        raise InputError(
            f"covariate {names[col]!r} has the value {X.data[e]:g} at {row_label(row_ids, X.indices[e])} "
            f"({int(n_big.sum())} value(s) beyond +-{COVARIATE_MAX:g}): values this large cannot be fitted in double "
            "precision. Rescale the covariate (e.g. divide it by a power of ten, or take its log) or fix the value")
    tiny = np.flatnonzero((col_max < COVARIATE_MIN) & (col_max > 0))
    if tiny.size:
        col = int(tiny[0])
        a, b = indptr[col], indptr[col + 1]
        e = a + int(np.argmax(np.abs(X.data[a:b])))
        raise InputError(
            f"covariate {names[col]!r} has no value larger than {COVARIATE_MIN:g} in magnitude (largest "
            f"{X.data[e]:g} at {row_label(row_ids, X.indices[e])}): values this small cannot be fitted in double "
            "precision. Rescale the covariate (e.g. multiply it by a power of ten)")


@njit(cache=True, nogil=True, parallel=True, error_model="numpy")
def _column_magnitudes(indptr, data, limit, col_max, first_bad, first_big, n_big):
    """Per column: the largest finite |value| (0 without one), its first stored value that is not
    finite and its first beyond ``limit`` in magnitude (-1 without), and how many are beyond."""
    for j in prange(indptr.shape[0] - 1):
        m, bad, big, count = 0.0, -1, -1, 0
        for p in range(indptr[j], indptr[j + 1]):
            v = abs(data[p])
            if not math.isfinite(v):
                if bad < 0:
                    bad = p
                continue
            if v > limit:
                count += 1
                if big < 0:
                    big = p
            m = max(m, v)
        col_max[j], first_bad[j], first_big[j], n_big[j] = m, bad, big, count


def check_dataset(name: str, value) -> Dataset:
    """``value``, which must be a riskset Dataset (else InputError naming the argument ``name``)."""
    if not isinstance(value, Dataset):
        raise InputError(f"{name} must be a riskset Dataset (from riskset.from_frame, from_long, from_duckdb or "
                         f"from_arrays), got {type(value).__name__}")
    return value


def describe_roles(roles: dict) -> str:
    """One line for a summary: 'weighted by ..., stratified by ... (K strata), offset ...'."""
    parts = []
    if "weights" in roles:
        parts.append(f"weighted by {roles['weights']!r}")
    if "strata_ignored_by" in roles:
        parts.append(f"strata {roles['strata']!r} ({roles.get('n_strata', '?')}) NOT used by the "
                     f"{roles['strata_ignored_by']} model")
    elif "strata" in roles:
        parts.append(f"stratified by {roles['strata']!r} ({roles.get('n_strata', '?')} strata)")
    if "offset" in roles:
        parts.append(f"offset {roles['offset']!r}")
    if "censor_weights" in roles:
        parts.append(f"censoring weights {roles['censor_weights']!r}")
    return ", ".join(parts) if parts else "unweighted, unstratified, no offset"


def plain(x):
    """A NumPy scalar as the Python scalar it holds, for readable messages."""
    return x.item() if hasattr(x, "item") else x


def first_names(items, k: int = 10) -> str:
    """The first ``k`` of ``items`` as reprs, ' ...' after them if there are more (for messages).

    >>> first_names(["a", "b", "c"], k=2)
    "'a', 'b' ..."
    """
    items = list(items)
    return ", ".join(map(repr, items[:k])) + (" ..." if len(items) > k else "")


def row_label(row_ids, i) -> str:
    """How row ``i`` is named in messages: its user-given id."""
    return f"position {i}" if row_ids is None else f"row {plain(row_ids[i])!r}"


def _first_duplicate(items):
    seen = set()
    for x in items:
        if x in seen:
            return x
        seen.add(x)
    return None
