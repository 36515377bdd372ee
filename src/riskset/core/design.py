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
"""
from __future__ import annotations

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
    n_runs = int(col_runs[p])
    run_start = np.empty(n_runs + 1 if starts else 0, index_type(nnz))
    run_stratum = np.empty(n_runs, index_type(int(row_stratum[-1]) if row_stratum.shape[0] else 0))
    _fill_runs(indptr, indices, row_stratum, single, col_runs, run_start, run_stratum)
    return col_runs, (run_start if starts else None), run_stratum


@njit(cache=True, nogil=True, error_model="numpy")
def _count_runs(indptr, indices, row_stratum, single, col_runs):
    for j in range(indptr.shape[0] - 1):
        n, prev = 0, -1
        for i in range(indptr[j], indptr[j + 1]):
            s = row_stratum[indices[i]]
            if s != prev:
                n += 1
                prev = s
                if single:
                    break
        col_runs[j + 1] = col_runs[j] + n


@njit(cache=True, nogil=True, error_model="numpy")
def _fill_runs(indptr, indices, row_stratum, single, col_runs, run_start, run_stratum):
    """Fill the runs counted by :func:`_count_runs` (``run_start`` if it has room)."""
    with_starts = run_start.shape[0] > 0
    for j in range(indptr.shape[0] - 1):
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


def canonical_csc(X) -> sp.csc_matrix:
    """``X`` as a float64 CSC matrix in canonical form, sharing X's arrays when it already
    is one (checked in O(nnz), never assumed); otherwise duplicates are summed and indices
    sorted by scipy."""
    X = sp.csc_matrix(X, dtype=np.float64)
    if is_canonical(X.indptr, X.indices, X.shape[0]):
        X.has_canonical_format = True  # scipy's own flag: its later operations skip the check
    else:
        X.has_canonical_format = False
        X.sum_duplicates()
        X.sort_indices()
    return X


def take_rows(X: sp.csc_matrix, rows: np.ndarray) -> sp.csc_matrix:
    """``X[rows]`` for a canonical CSC ``X`` and distinct ``rows`` (a permutation or a
    selection), canonical, with the index dtype scipy would give it."""
    n_rows = X.shape[0]
    rows = np.asarray(rows, dtype=np.int64)
    new_row = np.full(n_rows, -1, np.int64)
    new_row[rows] = np.arange(rows.shape[0])
    if np.count_nonzero(new_row >= 0) != rows.shape[0]:
        raise ValueError("take_rows: the rows must be distinct")
    itype = np.int32 if max(X.nnz, n_rows, rows.shape[0]) < 2**31 - 1 else np.int64
    if rows.shape[0] == n_rows:  # a permutation keeps every column's count
        indptr = X.indptr.astype(itype)
    else:
        indptr = np.empty(X.shape[1] + 1, itype)
        indptr[0] = 0
        _count_kept(X.indptr, X.indices, new_row, indptr[1:])
        np.cumsum(indptr[1:], out=indptr[1:])
    indices = np.empty(indptr[-1], itype)
    values = np.empty(indptr[-1])
    digit_bits = max(1, int(rows.shape[0] - 1).bit_length())
    _fill_sorted(X.indptr, X.indices, X.data, new_row, indptr, indices, values, digit_bits)
    out = sp.csc_matrix((values, indices, indptr), shape=(rows.shape[0], X.shape[1]))
    out.has_canonical_format = True
    return out


@njit(cache=True, nogil=True, parallel=True, error_model="numpy")
def _count_kept(indptr, indices, new_row, counts):
    """counts[j] = number of non-zeros of column j whose row is kept (new_row >= 0)."""
    for j in prange(indptr.shape[0] - 1):
        c = 0
        for k in range(indptr[j], indptr[j + 1]):
            c += new_row[indices[k]] >= 0
        counts[j] = c


@njit(cache=True, nogil=True, parallel=True, error_model="numpy")
def _fill_sorted(indptr, indices, values, new_row, out_ptr, out_indices, out_values, key_bits):
    """Each column's kept non-zeros at their new rows, sorted by new row (keys < 2^key_bits)."""
    for j in prange(indptr.shape[0] - 1):
        a, b = out_ptr[j], out_ptr[j + 1]
        _radix_column(indptr[j], indptr[j + 1], indices, values, new_row, out_indices[a:b], out_values[a:b],
                      key_bits)


@njit(cache=True, nogil=True, error_model="numpy")
def _radix_column(k0, k1, indices, values, new_row, out_indices, out_values, key_bits):
    """A column's kept non-zeros k0 <= k < k1 in new row order: gathered, then sorted unless
    they came in order (radix sort; insertion sort for short columns)."""
    t = 0
    in_order = True
    for k in range(k0, k1):
        r = new_row[indices[k]]
        if r >= 0:
            out_indices[t] = r
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
    for a in range(1, keys.shape[0]):
        k, v = keys[a], values[a]
        b = a - 1
        while b >= 0 and keys[b] > k:
            keys[b + 1] = keys[b]
            values[b + 1] = values[b]
            b -= 1
        keys[b + 1] = k
        values[b + 1] = v


@njit(cache=True, nogil=True, error_model="numpy")
def _radix_sort(keys, values, bits, passes):
    """Least-significant-digit radix sort of ``keys`` (< 2^(bits passes)), ``values`` alongside:
    per pass, the digit counts of every key, then one stable counting scatter."""
    m = keys.shape[0]
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
            dst_v[t] = src_v[a]
        src_k, dst_k = dst_k, src_k
        src_v, dst_v = dst_v, src_v
    if passes % 2:
        keys[:] = src_k
        values[:] = src_v
