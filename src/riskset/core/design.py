"""Preparing a design matrix: canonical CSC and rows in a family's order, in O(nnz).

Every datafit holds its design as a float64 CSC matrix in *canonical* form (row indices
strictly increasing within each column: sorted, no duplicates) with its rows in the
family's order (e.g. Cox rows by stratum and descending time). scipy reaches that with
``X[order]`` (a gather through CSR-like fancy indexing) followed by ``sort_indices`` (a
comparison sort of every column): O(nnz log nnz) and several copies. Here:

* :func:`canonical_csc` checks canonical form in one O(nnz) pass and only falls back to
  scipy's ``sum_duplicates`` / ``sort_indices`` when the check fails;
* :func:`take_rows` builds ``X[rows]`` (a permutation or a selection of rows without
  repeats): column pointers follow from per-column counts, and each column's new row
  indices are sorted by a least-significant-digit radix sort (O(nnz_j) per pass, two
  passes for up to ~4M rows), the values moving with them. Columns are independent, so
  they run in parallel (``prange``) and the result does not depend on the thread count.

The output equals scipy's ``X[rows]`` after ``sort_indices`` (tests/test_design.py).

The prepared design is a :class:`CompactCSC`: the values of a column whose stored values
are all 1 (an indicator, the common covariate of claims data) are not stored, so an
indicator design holds 4 bytes per non-zero (its row indices) instead of 12.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp
from numba import njit, prange

#: Columns with at most this many kept non-zeros are sorted by insertion (no counters).
SMALL_COLUMN = 32
#: Largest radix digit, in bits (2^11 counters fit in L1 with the column in L2).
MAX_DIGIT_BITS = 11


@njit(cache=True, nogil=True, parallel=True, error_model="numpy")
def is_canonical(indptr, indices, n_rows):
    """Whether row indices lie in [0, n_rows) and strictly increase within every column."""
    n_cols = indptr.shape[0] - 1
    ok = np.ones(n_cols, np.bool_)
    for j in prange(n_cols):
        previous = -1
        for k in range(indptr[j], indptr[j + 1]):
            r = indices[k]
            if r <= previous or r >= n_rows:
                ok[j] = False
                break
            previous = r
    return bool(np.all(ok)) and (n_cols == 0 or indptr[0] == 0)


def row_indices(indices: np.ndarray) -> np.ndarray:
    """The canonical CSC's row indices as the kernels read them: 32-bit ones as unsigned
    (shared, not copied). A compiled loop indexing an N-vector by a signed row index tests
    it for a negative (wrap-around) value on every access; unsigned it does not (about a
    third off a gradient, docs/performance.md). 64-bit
    indices stay signed: numba promotes mixed uint64 / int64 arithmetic to float."""
    indices = np.ascontiguousarray(indices)
    return indices.view(np.uint32) if indices.dtype == np.int32 else indices


def index_type(largest: int):
    """The narrowest signed integer type the derived index arrays use for 0..``largest``
    (int32 where it holds them: half the bytes of an array with an entry per non-zero)."""
    return np.int32 if largest < 2**31 else np.int64


def column_runs(indptr, indices, row_stratum, starts: bool = True):
    """(col_runs, run_start, run_stratum): the runs of equal stratum among each column's
    non-zeros (rows sorted by stratum: a column's runs are the distinct strata of its rows,
    ascending); column j's runs are col_runs[j]:col_runs[j + 1], run k spans the non-zeros
    run_start[k]:run_start[k + 1] and lies in stratum run_stratum[k]. The stratified kernels
    walk a column run by run, or refresh only its strata, instead of looking up each
    non-zero's row. O(nnz), O(P) with one stratum; no temporary per non-zero.
    ``run_start`` and ``run_stratum`` (up to one entry per non-zero) are int32 where their
    values fit; ``run_start`` is None unless ``starts``."""
    p, nnz = indptr.shape[0] - 1, int(indptr[-1])
    single = row_stratum.shape[0] == 0 or row_stratum[0] == row_stratum[-1]
    col_runs = np.zeros(p + 1, np.int64)
    _count_runs(indptr, indices, row_stratum, single, col_runs)
    np.cumsum(col_runs, out=col_runs)
    n_runs = int(col_runs[p])
    run_start = np.empty(n_runs + 1 if starts else 0, index_type(nnz))
    run_stratum = np.empty(n_runs, index_type(int(row_stratum[-1]) if row_stratum.shape[0] else 0))
    _fill_runs(indptr, indices, row_stratum, single, col_runs, run_start, run_stratum)
    return col_runs, (run_start if starts else None), run_stratum


@njit(cache=True, nogil=True, parallel=True, error_model="numpy")
def _count_runs(indptr, indices, row_stratum, single, col_runs):
    """col_runs[j + 1] = the runs of one stratum among column j's non-zeros (columns on all threads)."""
    for j in prange(indptr.shape[0] - 1):
        n, prev = 0, -1
        for i in range(indptr[j], indptr[j + 1]):
            s = row_stratum[indices[i]]
            if s != prev:
                n += 1
                prev = s
                if single:
                    break
        col_runs[j + 1] = n


@njit(cache=True, nogil=True, parallel=True, error_model="numpy")
def _fill_runs(indptr, indices, row_stratum, single, col_runs, run_start, run_stratum):
    """Fill the runs counted by :func:`_count_runs` (``run_start`` if it has room; columns on all threads)."""
    with_starts = run_start.shape[0] > 0
    for j in prange(indptr.shape[0] - 1):
        k, prev = col_runs[j], -1
        for i in range(indptr[j], indptr[j + 1]):
            s = row_stratum[indices[i]]
            if s != prev:
                if with_starts:
                    run_start[k] = i
                run_stratum[k] = s
                k += 1
                prev = s
                if single:
                    break
    if with_starts:
        run_start[run_start.shape[0] - 1] = indptr[indptr.shape[0] - 1]


def indicator_csc(indices: np.ndarray, indptr: np.ndarray, shape) -> sp.csc_matrix:
    """The CSC matrix with a 1 at each (row ``indices[k]``, column of k) and no value stored
    per non-zero: its ``data`` is a read-only stride-0 view of one 1.0 (``np.broadcast_to``).
    ``indices`` and ``indptr`` are used as they are, not copied.

    >>> import numpy as np
    >>> X = indicator_csc(np.array([0, 1, 1], np.int32), np.array([0, 2, 3], np.int32), (2, 2))
    >>> X.data.strides, X.toarray().tolist()
    ((0,), [[1.0, 0.0], [1.0, 1.0]])
    """
    ones = np.broadcast_to(np.float64(1.0), indices.shape)
    return sp.csc_matrix((ones, indices, indptr), shape=shape, copy=False)


def stores_no_values(X) -> bool:
    """Whether X is an :func:`indicator_csc` matrix (its values one shared 1.0; a stride-0
    array of another value is not)."""
    return (sp.issparse(X) and X.data.ndim == 1 and X.data.strides == (0,)
            and (X.data.size == 0 or X.data[0] == 1.0))


def unit_of(X: sp.csc_matrix) -> np.ndarray:
    """Boolean per column of a CSC ``X``: every stored value is 1 (:func:`unit_columns`; all
    True for an :func:`indicator_csc` matrix, without reading it)."""
    if stores_no_values(X):
        return np.ones(X.shape[1], np.bool_)
    return unit_columns(np.asarray(X.indptr, dtype=np.int64), X.data)


def as_indicator_csc(X):
    """A canonical float64 CSC ``X`` whose every stored value is 1 as an :func:`indicator_csc`
    matrix (sharing its indices); any other ``X`` as it is."""
    if (sp.isspmatrix_csc(X) and X.dtype == np.float64 and not stores_no_values(X) and unit_of(X).all()
            and is_canonical(X.indptr, X.indices, X.shape[0])):
        return indicator_csc(X.indices, X.indptr, X.shape)
    return X


@njit(cache=True, nogil=True, parallel=True, error_model="numpy")
def unit_columns(indptr, values):
    """Boolean per column: every stored value is 1 (an indicator; kernels skip its values)."""
    n_cols = indptr.shape[0] - 1
    out = np.ones(n_cols, np.bool_)
    for c in prange(n_cols):
        for k in range(indptr[c], indptr[c + 1]):
            if values[k] != 1.0:
                out[c] = False
                break
    return out


@dataclass(frozen=True, eq=False)
class CompactCSC:
    """A canonical CSC design as the kernels read it, without the values of its indicator columns.

    The value of stored non-zero ``k`` of column ``j`` is ``values[k + value_shift[j]]``:
    ``values`` holds the values of the columns that are not all ones (``unit[j]`` False), in
    column order, then one run of ones as long as the longest indicator column, which every
    indicator column reads (its shift points there). A design of indicators stores no value
    per non-zero; one without indicators shares its CSC's values unchanged (shift 0).
    """

    n_rows: int
    n_cols: int
    indptr: np.ndarray  #: int64, n_cols + 1
    indices: np.ndarray  #: row indices as the kernels read them (:func:`row_indices`)
    values: np.ndarray  #: float64: the stored values of the valued columns, then the ones
    value_shift: np.ndarray  #: int64 per column: where its values lie in ``values``, less indptr[j]
    unit: np.ndarray  #: bool per column: every stored value is 1

    @classmethod
    def of(cls, X: sp.csc_matrix, unit: np.ndarray | None = None) -> CompactCSC:
        """The compact form of a canonical float64 CSC ``X``, sharing its row indices (and its
        values when no column is an indicator)."""
        indptr = np.asarray(X.indptr, dtype=np.int64)
        unit = unit_of(X) if unit is None else unit
        values, shift = _compact_values(indptr, X.data, unit)
        return cls(X.shape[0], X.shape[1], indptr, row_indices(X.indices), values, shift, unit)

    @property
    def nnz(self) -> int:
        return int(self.indptr[-1])

    def column(self, j: int) -> tuple[np.ndarray, np.ndarray]:
        """Row indices and values of the non-zeros of column j (views)."""
        a, b, s = self.indptr[j], self.indptr[j + 1], self.value_shift[j]
        return self.indices[a:b], self.values[a + s:b + s]

    def full_values(self, dtype=np.float64) -> np.ndarray:
        """A value per stored non-zero (a new array, for consumers that read X's values by
        position: the device copy, scipy)."""
        out = np.empty(self.nnz, dtype)
        _expand_values(self.indptr, self.values, self.value_shift, out)
        return out

    def to_csc(self, columns=None) -> sp.csc_matrix:
        """The design as a scipy CSC matrix with every value stored (a copy), or only its
        ``columns`` (for the few Python-level uses that need a scipy matrix of a subset)."""
        if columns is None:
            indptr, indices, values = self.indptr, self.indices, self.full_values()
            shape = (self.n_rows, self.n_cols)
        else:
            cols = np.asarray(columns, dtype=np.int64).reshape(-1)
            counts = self.indptr[cols + 1] - self.indptr[cols]
            indptr = np.r_[0, np.cumsum(counts)].astype(np.int64)
            parts = [self.column(j) for j in cols]
            indices = np.concatenate([p[0] for p in parts]) if parts else np.zeros(0, self.indices.dtype)
            values = np.concatenate([p[1] for p in parts]) if parts else np.zeros(0)
            shape = (self.n_rows, cols.shape[0])
        itype = np.int32 if max(self.nnz, self.n_rows) < 2**31 - 1 else np.int64
        out = sp.csc_matrix((values, indices.astype(itype), indptr.astype(itype)), shape=shape)
        out.has_canonical_format = True
        return out


def _compact_values(indptr, data, unit):
    """(values, value_shift) of :class:`CompactCSC` from a value per non-zero."""
    if not unit.any():
        return data, np.zeros(indptr.shape[0] - 1, np.int64)
    values, shift = _compact_layout(indptr, unit)
    if not unit.all():
        _gather_valued(indptr, data, unit, shift, values)
    return values, shift


def _compact_layout(indptr, unit):
    """(values, value_shift) of :class:`CompactCSC` for a design of column pointers ``indptr``
    and indicator columns ``unit``: the valued columns' places empty, the ones filled."""
    counts = np.diff(indptr)
    if not unit.any():
        return np.empty(int(indptr[-1])), np.zeros(counts.shape[0], np.int64)
    start = np.r_[0, np.cumsum(np.where(unit, 0, counts))]
    ones_at = int(start[-1])
    values = np.empty(ones_at + int(counts[unit].max(initial=0)))
    values[ones_at:] = 1.0
    return values, (np.where(unit, ones_at, start[:-1]) - indptr[:-1]).astype(np.int64)


@njit(cache=True, nogil=True, parallel=True, error_model="numpy")
def _gather_valued(indptr, data, unit, shift, values):
    for j in prange(indptr.shape[0] - 1):
        if not unit[j]:
            for k in range(indptr[j], indptr[j + 1]):
                values[k + shift[j]] = data[k]


@njit(cache=True, nogil=True, parallel=True, error_model="numpy")
def _expand_values(indptr, values, shift, out):
    for j in prange(indptr.shape[0] - 1):
        for k in range(indptr[j], indptr[j + 1]):
            out[k] = values[k + shift[j]]


def canonical_csc(X) -> sp.csc_matrix:
    """``X`` as a float64 CSC matrix in canonical form, sharing X's arrays when it already
    is one (checked in O(nnz), never assumed); otherwise duplicates are summed and indices
    sorted by scipy."""
    X = sp.csc_matrix(X, dtype=np.float64)
    if is_canonical(X.indptr, X.indices, X.shape[0]):
        X.has_canonical_format = True  # scipy's own flag: its later operations skip the check
    else:
        if not X.data.flags.writeable:  # scipy sorts in place
            X = X.copy()
        X.has_canonical_format = False
        X.sum_duplicates()
        X.sort_indices()
    return X


def take_rows(X: sp.csc_matrix, rows: np.ndarray) -> CompactCSC:
    """``X[rows]`` for a canonical CSC ``X`` and distinct ``rows`` (a permutation or a
    selection), canonical and compact: the values of X's indicator columns are neither
    moved nor stored. Rows already in order (``rows`` is 0 .. N-1: data sorted as the model
    sorts them) share X's row indices, not a copy (:meth:`CompactCSC.of`)."""
    n_rows = X.shape[0]
    rows = np.asarray(rows, dtype=np.int64)
    itype = np.int32 if max(X.nnz, n_rows, rows.shape[0]) < 2**31 - 1 else np.int64
    if rows.shape[0] == n_rows and X.indices.dtype == itype and _in_order(rows):
        return CompactCSC.of(X)
    new_row = np.full(n_rows, -1, np.int64)
    new_row[rows] = np.arange(rows.shape[0])
    if np.count_nonzero(new_row >= 0) != rows.shape[0]:
        raise ValueError("take_rows: the rows must be distinct")
    if rows.shape[0] == n_rows:  # a permutation keeps every column's count
        indptr = X.indptr.astype(np.int64)
    else:
        indptr = np.empty(X.shape[1] + 1, np.int64)
        indptr[0] = 0
        _count_kept(X.indptr, X.indices, new_row, indptr[1:])
        np.cumsum(indptr[1:], out=indptr[1:])
    unit = unit_of(X)
    values, shift = _compact_layout(indptr, unit)
    indices = np.empty(indptr[-1], itype)
    digit_bits = max(1, int(rows.shape[0] - 1).bit_length())
    data = X.data if not unit.all() else np.ones(0)  # the kernel reads the valued columns' values alone
    _fill_sorted(X.indptr, X.indices, data, new_row, indptr, indices, values, shift, unit, digit_bits)
    return CompactCSC(rows.shape[0], X.shape[1], indptr, row_indices(indices), values, shift, unit)


@njit(cache=True, nogil=True, error_model="numpy")
def _in_order(rows) -> bool:
    """rows[i] == i for every i (leaves at the first row out of place)."""
    for i in range(rows.shape[0]):
        if rows[i] != i:
            return False
    return True


@njit(cache=True, nogil=True, parallel=True, error_model="numpy")
def _count_kept(indptr, indices, new_row, counts):
    """counts[j] = number of non-zeros of column j whose row is kept (new_row >= 0)."""
    for j in prange(indptr.shape[0] - 1):
        c = 0
        for k in range(indptr[j], indptr[j + 1]):
            c += new_row[indices[k]] >= 0
        counts[j] = c


@njit(cache=True, nogil=True, parallel=True, error_model="numpy")
def _fill_sorted(indptr, indices, values, new_row, out_ptr, out_indices, out_values, out_shift, unit, key_bits):
    """Each column's kept non-zeros at their new rows, sorted by new row (keys < 2^key_bits);
    the values of the valued columns move with them (to ``out_values[k + out_shift[j]]``)."""
    for j in prange(indptr.shape[0] - 1):
        a, b = out_ptr[j], out_ptr[j + 1]
        s = 0 if unit[j] else b - a  # an indicator column's values are not moved
        column_values = out_values[a + out_shift[j]:a + out_shift[j] + s]
        _radix_column(indptr[j], indptr[j + 1], indices, values, new_row, out_indices[a:b], column_values, key_bits)


@njit(cache=True, nogil=True, error_model="numpy")
def _radix_column(k0, k1, indices, values, new_row, out_indices, out_values, key_bits):
    """A column's kept non-zeros k0 <= k < k1 in new row order: gathered, then sorted unless
    they came in order (radix sort; insertion sort for short columns); their values alongside
    unless ``out_values`` is empty."""
    t = 0
    in_order = True
    with_values = out_values.shape[0] > 0
    for k in range(k0, k1):
        r = new_row[indices[k]]
        if r >= 0:
            out_indices[t] = r
            if with_values:
                out_values[t] = values[k]
            in_order = in_order and (t == 0 or out_indices[t - 1] < r)
            t += 1
    if in_order:
        return
    if t <= SMALL_COLUMN:
        _insertion_sort(out_indices, out_values)
        return
    bits = min(MAX_DIGIT_BITS, max(1, int(np.log2(t))))  # counters no more than the keys
    passes = (key_bits + bits - 1) // bits
    _radix_sort(out_indices, out_values, (key_bits + passes - 1) // passes, passes)


@njit(cache=True, nogil=True, error_model="numpy")
def _insertion_sort(keys, values):
    """Sort ``keys``, and ``values`` alongside unless it is empty."""
    with_values = values.shape[0] > 0
    for a in range(1, keys.shape[0]):
        k = keys[a]
        v = values[a] if with_values else 0.0
        b = a - 1
        while b >= 0 and keys[b] > k:
            keys[b + 1] = keys[b]
            if with_values:
                values[b + 1] = values[b]
            b -= 1
        keys[b + 1] = k
        if with_values:
            values[b + 1] = v


@njit(cache=True, nogil=True, error_model="numpy")
def _radix_sort(keys, values, bits, passes):
    """Least-significant-digit radix sort of ``keys`` (< 2^(bits passes)), ``values`` alongside
    unless empty: per pass, the digit counts of every key, then one stable counting scatter."""
    m = keys.shape[0]
    with_values = values.shape[0] > 0
    src_k, src_v = keys, values
    dst_k, dst_v = np.empty_like(keys), np.empty_like(values)
    mask = (1 << bits) - 1
    start = np.empty(mask + 2, np.int64)
    for p in range(passes):
        shift = p * bits
        start[:] = 0
        for a in range(m):
            start[((src_k[a] >> shift) & mask) + 1] += 1
        for d in range(mask + 1):
            start[d + 1] += start[d]
        for a in range(m):
            d = (src_k[a] >> shift) & mask
            t = start[d]
            start[d] = t + 1
            dst_k[t] = src_k[a]
            if with_values:
                dst_v[t] = src_v[a]
        src_k, dst_k = dst_k, src_k
        src_v, dst_v = dst_v, src_v
    if passes % 2:
        keys[:] = src_k
        if with_values:
            values[:] = src_v
