"""``ColumnProducts``: the products of column sets of one CSC matrix with vectors that a
datafit asks for (:mod:`riskset.core.products` describes the two layouts and the threads),
each on the layout that does less work, and what they keep between calls.
"""
from __future__ import annotations

import hashlib
import threading
from collections import OrderedDict
from functools import cached_property
from typing import Callable

import numpy as np

from riskset.core.design import CompactCSC
from riskset.core.products.csc import (csc_column_norms, csc_gram, csc_tile_offsets, csc_tile_pointers, tiled_dot,
                                       tiled_times)
from riskset.core.products.csr import (csr_dot, csr_gram, csr_gram_times, csr_rows_dot, csr_rows_times, csr_times,
                                       sum_blocks)
from riskset.core.products.partition import row_blocks, row_tiles
from riskset.core.products.row_copy import (csc_row_counts, csc_rows_count, csc_rows_fill, csc_subset_to_csr,
                                            csc_to_csr)

#: Most bytes of the row blocks' partial |A| x |A| blocks of :meth:`ColumnProducts.gram`
#: (fewer, longer blocks for large A).
GRAM_PARTIAL_BYTES = 1 << 26
#: Relative cost of a CSC non-zero (a random access into a tile of an N-vector) to a streamed
#: CSR one, for N-vectors that leave the cache (docs/performance.md) ...
RANDOM_ACCESS_COST = 1.5
#: ... and the N up to which the N-vectors stay in the cache (both layouts cost about the same).
CACHED_ROWS = 1 << 17
#: The product of a :meth:`ColumnProducts.gram_operator` from which A's row-major copy is built
#: (ski rental: the copy costs about as much as the products it then saves after this many;
#: a Newton step preconditioned by centring asks for 2-3).
ROW_COPY_AFTER = 4
#: The ask of a product from which :meth:`ColumnProducts.times_recurring` keeps it: a fit's last
#: state and its held-out score ask for the same product twice, a start that many fits share
#: many times (a second ask kept the scored fits of a cross-validation: 230 MB at the LEGEND
#: shape, never read again) ...
RECURRING_KEPT_FROM = 3
#: ... the products it keeps and their bytes at most (the least recently used go first: a
#: cross-validation's start serves the splits of one variance, and 20 starts of the scored
#: variances kept were 100 MB of the Fine-Gray LEGEND peak) ...
RECURRING_KEPT = 4
RECURRING_BYTES = 1 << 28
#: ... and the products asked fewer times it remembers (by a digest, with their count).
RECURRING_SEEN = 256


class _Kept(threading.local):
    """Per thread: the last row-major copy of a column subset, ``(key, (rptr, rcol, rval))``."""

    rows = None


class ColumnProducts:
    """``X_A b``, ``X_A' z`` and ``X_A' diag(c) X_A`` for sets A of columns of one CSC matrix
    (``-1``: the column of ones), on the CSC or a row-major copy, whichever does less work.

    Built once per datafit from its CSC arrays (shared, not copied); reweighted views of
    the datafit share it, and its row-major copy.
    """

    def __init__(self, design: CompactCSC):
        self.indptr, self.indices = design.indptr, design.indices
        # the value of non-zero k of column j is values[k + value_shift[j]] (CompactCSC)
        self.values, self.value_shift, self.unit = design.values, design.value_shift, design.unit
        self.n_rows, self.n_cols = design.n_rows, design.n_cols
        self.bounds = row_blocks(self.n_rows)
        self.tiles = row_tiles(self.n_rows, self.n_cols, design.nnz)
        self._tile_ptr = self._tile_rows = None
        self._csr = None
        self._support = None  # the row-major copy of some rows alone (_support_rows)
        self._kept = _Kept()
        self._norms = None
        self._lock = threading.Lock()
        self._recurring, self._seen = OrderedDict(), OrderedDict()

    def __getstate__(self):
        """Pickled (e.g. for dask workers) without the lock, nor the row-major copy, tile
        pointers and offsets and recurring products: a worker builds its own if it needs them."""
        return {**self.__dict__, "_lock": None, "_csr": None, "_support": None, "_kept": None, "_tile_ptr": None,
                "_tile_rows": None, "_recurring": None, "_seen": None}

    def __setstate__(self, state):
        self.__dict__.update(state)
        self._lock, self._kept = threading.Lock(), _Kept()
        self._recurring, self._seen = OrderedDict(), OrderedDict()

    # -- the products ------------------------------------------------------------------
    def times(self, cols, b, out=None) -> np.ndarray:
        """out = X[:, cols] @ b (an N-vector); :meth:`on_columns` for many products with one A.

        Each row adds its terms in the order of the columns (ones first) on either layout,
        so both give the same bits.
        """
        return self.on_columns(cols).times(b, out)

    def on_columns(self, cols) -> "ColumnSet":
        """The products of one column set A with many vectors (a Newton step's conjugate
        gradients: hundreds on one A), its layout and index work decided once."""
        return ColumnSet(self, _index(cols))

    def times_at(self, rows, cols, b) -> np.ndarray:
        """X[rows, cols] @ b (a len(rows)-vector) on the row-major copy: a few rows (the held-out
        rows of a fold) without the O(N) pass of :meth:`times`; the same bits as its rows."""
        cols, b = _index(cols), np.ascontiguousarray(b, dtype=np.float64)
        rptr, rcol, rval = self.row_major()
        full, ones = self._spread(cols, b)
        out = np.empty(rows.shape[0])
        csr_rows_times(rptr, rcol, rval, np.ascontiguousarray(rows, dtype=np.int64), full, ones, out)
        return out

    def times_recurring(self, cols, b) -> np.ndarray:
        """A new N-vector X[:, cols] @ b (:meth:`times`), kept from its
        :data:`RECURRING_KEPT_FROM`-th ask on: the linear predictor of a starting point that
        many fits share (every split of a cross-validation starts from the full-data fit at its
        variance, every bootstrap replicate from the estimate; a copy of a kept product costs a
        tenth of the product). A product asked fewer times is only remembered by a digest and
        its count (the last :data:`RECURRING_SEEN`); at most :data:`RECURRING_KEPT` products and
        :data:`RECURRING_BYTES` are kept, the least recently used dropped first. The same bits
        as :meth:`times`."""
        cols, b = _index(cols), np.ascontiguousarray(b, dtype=np.float64)
        key = cols.tobytes() + b.tobytes()
        digest = hashlib.blake2b(key, digest_size=16).digest()
        with self._lock:
            kept = self._recurring.get(digest)
            if kept is not None and kept[0] == key:
                self._recurring.move_to_end(digest)
                return kept[1].copy()
            asks = self._seen.pop(digest, 0) + 1
            self._seen[digest] = asks
            while len(self._seen) > RECURRING_SEEN:
                self._seen.popitem(last=False)
        out = self.times(cols, b)
        if asks >= RECURRING_KEPT_FROM and out.nbytes <= RECURRING_BYTES:
            with self._lock:
                self._recurring[digest] = key, out.copy()
                while (len(self._recurring) > RECURRING_KEPT
                       or sum(v[1].nbytes for v in self._recurring.values()) > RECURRING_BYTES):
                    self._recurring.popitem(last=False)
        return out

    def dot(self, cols, z, out=None) -> np.ndarray:
        """out = X[:, cols]' @ z (an |A|-vector); :meth:`on_columns` for many products with one A."""
        return self.on_columns(cols).dot(z, out)

    def dot2(self, cols, z) -> tuple[np.ndarray, np.ndarray]:
        """(X[:, cols]' @ z, (X[:, cols] ** 2)' @ z) in one pass."""
        columns = self.on_columns(cols)
        out2 = np.empty(columns.cols.shape[0])
        return columns.dots(z, None, out2), out2

    def dot_changed(self, known, z_old, z_new, support=None) -> np.ndarray | None:
        """X' z_new over every column from ``known`` = X' z_old, reading only the rows where z
        changed (a training fold's static gradient from the full data's: its held-out event
        rows, ~4% of X's non-zeros at 10 folds, where a product reads them all). The rows come
        from X's row-major copy where it is at hand, else from a kept copy of the ``support``
        rows alone (sorted; rows outside which z never changes: a risk-set family's event rows),
        built on first use where they are at most a quarter of the rows. None where neither
        holds them or over a quarter changed: a direct product then costs less. Serial: the same
        bits on any number of threads."""
        rows = np.flatnonzero(z_new != z_old)
        if 4 * rows.size > self.n_rows:
            return None
        if self._csr is not None:
            (rptr, rcol, rval), at = self.row_major(), rows
        else:
            kept = self._support_rows(support)
            if kept is None:
                return None
            (rptr, rcol, rval), support = kept
            at = np.searchsorted(support, rows)
            if at.size and (at[-1] >= support.size or not np.array_equal(support[at], rows)):
                return None  # z changed outside the support
        out = np.array(known, dtype=np.float64)
        csr_rows_dot(rptr, rcol, rval, at, np.ascontiguousarray(z_new[rows] - z_old[rows]), out)
        return out

    def _support_rows(self, support):
        """((row pointers, columns, values), rows): the row-major copy of the sorted rows
        ``support`` alone (its row i is X's row ``support[i]``), kept for the next call with the
        same rows (a cross-validation's folds share their event rows); None without support rows
        or where they are over a quarter of X's (the full copy would then be as cheap)."""
        if support is None or 4 * support.size > self.n_rows:
            return None
        with self._lock:
            if self._support is None or not np.array_equal(self._support[1], support):
                position = np.full(self.n_rows, -1, np.int64)
                position[support] = np.arange(support.size)
                rptr = np.zeros(support.size + 1, np.int64)
                csc_rows_count(self.indptr, self.indices, position, rptr)
                rcol = np.empty(rptr[-1], column_index_type(self.n_cols))
                rval = np.empty(0 if np.all(self.unit) else rptr[-1])
                csc_rows_fill(self.indptr, self.indices, self.values, self.value_shift, position, rptr, rcol, rval)
                self._support = (rptr, rcol, rval), np.array(support, np.int64)
            return self._support

    def gram_operator(self, cols, c) -> Callable[[np.ndarray], np.ndarray]:
        """``b -> X[:, cols]' diag(c) X[:, cols] b`` (:meth:`ColumnSet.gram_times`) for the
        products of one Newton step: the first :data:`ROW_COPY_AFTER` - 1 on the CSC, the later
        ones on A's row-major copy where that layout is the cheaper per product. The layout
        follows the operator's own count, never the threads or another fit's kept copy: the same
        bits on any number of threads."""
        columns, c = self.on_columns(cols), np.ascontiguousarray(c, dtype=np.float64)
        asked = 0

        def times(b):
            nonlocal asked
            asked += 1
            return columns.gram_times(c, b, copy=asked >= ROW_COPY_AFTER)

        return times

    def gram_times(self, cols, c, b, copy: bool = True) -> np.ndarray:
        """X[:, cols]' diag(c) X[:, cols] b (an |A|-vector; a GLM's Hessian-vector product):
        :meth:`ColumnSet.gram_times`."""
        return self.on_columns(cols).gram_times(np.ascontiguousarray(c, dtype=np.float64), b, copy)

    def gram(self, cols, c) -> np.ndarray:
        """The dense block X[:, cols]' diag(c) X[:, cols]: pairs of CSC columns merged, or
        (:meth:`_gram_on_rows`) each row's outer product over the rows of A's own row-major
        copy (built for the call) or of X's (when A holds most of X), by row blocks."""
        cols, c = _index(cols), np.ascontiguousarray(c, dtype=np.float64)
        m = cols.shape[0]
        out = np.zeros((m, m))
        layout = self._gram_on_rows(cols)
        if layout is None:
            csc_gram(self.indptr, self.indices, self.values, self.value_shift, cols, c, out)
            return np.triu(out) + np.triu(out, 1).T
        if layout == "subset":
            real = cols >= 0
            rptr, rcol, rval = self._subset_rows(cols, bool(np.all(self.unit[cols[real]])))
            pos, ones = np.arange(m, dtype=np.int64), (int(np.flatnonzero(~real)[0]) if not real.all() else -1)
        else:
            rptr, rcol, rval = self.row_major()
            pos, ones = self._positions(cols)
        bounds = row_blocks(self.n_rows, max(1, GRAM_PARTIAL_BYTES // (8 * m * m)))
        partial = np.zeros((bounds.shape[0] - 1, m, m))
        csr_gram(rptr, rcol, rval, pos, ones, c, bounds, partial)
        sum_blocks(partial.reshape(partial.shape[0], m * m), out.reshape(m * m))
        return np.triu(out) + np.triu(out, 1).T

    def rows_of(self, cols) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """X[:, cols] in row-major form ``(rowptr, rcol, rval)``: row r holds
        ``rcol[rowptr[r]:rowptr[r+1]]`` (positions in ``cols``, ascending) and their values
        ``rval`` (O(N + nnz of the columns)). The last set's copy is kept: the Newton steps
        of a polish ask for the Hessian block of one active set again and again. It is valid
        until the calling thread asks for another set (whose copy reuses its row pointers)."""
        return self._subset_rows(_index(cols), False)

    def _subset_rows(self, cols, unit: bool):
        """The row-major copy of the real columns of ``cols`` (entries hold their positions in
        ``cols``; the ones column, -1, has none; no values if ``unit``), the last one kept by
        each thread (the replicates' polishes run in threads, each on its own active set). A
        new copy fills the row pointers of the last one: an N-vector of fresh pages per active
        set was a third of the page faults of an SCCS cross-validation at 6M eras."""
        key = (cols.tobytes(), unit)
        kept = self._kept.rows
        if kept is None or kept[0] != key:
            real = np.flatnonzero(cols >= 0)
            rptr = np.empty(self.n_rows + 1, np.int64) if kept is None else kept[1][0]
            kept = key, csc_subset_to_csr(self.indptr, self.indices, self.values, self.value_shift, cols[real], real,
                                          rptr, unit, self.bounds)
            self._kept.rows = kept
        return kept[1]

    def tile_rows(self) -> tuple[np.ndarray, np.ndarray]:
        """``(ptr, rows)``: ``ptr`` (tiles + 1, columns), where each column's non-zeros of each
        row tile start; ``rows`` (nnz), each non-zero's row less its tile's first row, as
        uint16 where every tile holds at most 2^16 rows (:data:`~.partition.TILE_ROWS` = 4096
        unless X is very wide and sparse), else uint32. Built on first use (O(nnz) once, 2 bytes
        per non-zero), shared by the reweighted views. The products read these offsets instead
        of the 4-byte row indices (half the bytes)."""
        with self._lock:
            if self._tile_ptr is None:
                ptr = csc_tile_pointers(self.indptr, self.indices, self.tiles)
                narrow = np.diff(self.tiles).max(initial=0) <= 1 << 16
                rows = np.empty(self.indices.shape[0], np.uint16 if narrow else np.uint32)
                csc_tile_offsets(ptr, self.indices, self.tiles, rows)
                self._tile_ptr, self._tile_rows = ptr, rows
        return self._tile_ptr, self._tile_rows

    def column_norms(self, cols) -> np.ndarray:
        """||x_j||_2 of the columns ``cols`` (sqrt(N) for the ones column, -1); the norms of all
        columns are computed on first use and shared by the reweighted views."""
        with self._lock:
            if self._norms is None:
                self._norms = csc_column_norms(self.indptr, self.values, self.value_shift)
        cols = _index(cols)
        out = np.full(cols.shape[0], np.sqrt(self.n_rows))
        real = cols >= 0
        out[real] = self._norms[cols[real]]
        return out

    # -- layouts -----------------------------------------------------------------------
    def row_major(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(indptr, column indices, values) of the CSR copy, built on first use; the values
        are empty when every stored value is 1."""
        with self._lock:
            if self._csr is None:
                self._csr = self._build_row_major()
        return self._csr

    def _build_row_major(self):
        itype = column_index_type(self.n_cols)
        unit = bool(np.all(self.unit))
        counts = np.zeros(self.n_rows + 1, np.int64)
        csc_row_counts(self.indptr, self.indices, self.bounds, counts)
        rptr = np.cumsum(counts)
        rptr[1:] = rptr[:-1].copy()
        rptr[0] = 0
        rcol = np.empty(self.indptr[-1], itype)
        rval = np.empty(0 if unit else self.indptr[-1])
        csc_to_csr(self.indptr, self.indices, self.values, self.value_shift, self.bounds, rptr, rcol, rval)
        return rptr, rcol, rval

    def nnz(self, cols) -> int:
        """Stored non-zeros of the columns ``cols`` (N for the ones column, -1)."""
        real = cols[cols >= 0]
        return int(np.sum(self.indptr[real + 1] - self.indptr[real])) + self.n_rows * int(np.sum(cols < 0))

    def _rows_cheaper(self, cols, csc_factor: int = 1) -> bool:
        """Whether a product over the CSR (every non-zero of X, streamed) does less work than
        over the CSC (the non-zeros of A, each a random access into a tile once N-vectors
        leave the cache), the CSC's work counted ``csc_factor`` times (its passes against
        one over the rows)."""
        random_cost = RANDOM_ACCESS_COST if self.n_rows > CACHED_ROWS else 1.0
        return random_cost * self.nnz(cols) * csc_factor > self.indptr[-1] + self.n_rows

    def _gram_on_rows(self, cols) -> str | None:
        """Whether the rows' outer products (~nnz_A^2 / N products, after a row-major copy of
        A: ~2 nnz_A + N, or reading X's: nnz + N) do less work than merging each pair of CSC
        columns (~|A| nnz_A); a factor 2 for the rows' scattered writes into the block.
        Returns None (merge), ``"subset"`` (A's own copy) or ``"all"`` (X's copy, kept: A
        holds most of X's non-zeros)."""
        nnz = self.nnz(cols)
        real = nnz - self.n_rows * int(np.sum(cols < 0))
        whole = 2 * real > self.indptr[-1]
        copy = (self.indptr[-1] if whole else 2 * real) + self.n_rows
        if cols.shape[0] * nnz <= 2 * (copy + nnz * nnz / max(self.n_rows, 1)):
            return None
        return "all" if whole else "subset"

    def _spread(self, cols, b):
        """b as a vector over all columns (0 off A) and the coefficient of the ones column."""
        full = np.zeros(self.n_cols)
        real = cols >= 0
        full[cols[real]] = b[real]
        return full, float(b[~real].sum())

    def _positions(self, cols):
        """Position in A of each column of X (|A|, a discarded slot, where not in A) and that
        of the ones column (-1 where not in A)."""
        m = cols.shape[0]
        pos = np.full(self.n_cols, m, np.int64)
        real = np.flatnonzero(cols >= 0)
        pos[cols[real]] = real
        ones = np.flatnonzero(cols < 0)
        return pos, int(ones[0]) if ones.size else -1


class ColumnSet:
    """``X_A b`` and ``X_A' z`` for one column set A of a :class:`ColumnProducts` (``-1``: the
    column of ones) and many vectors: whether the rows are the cheaper layout (A's stored
    non-zeros counted once), A in column order for ``X_A b`` and each column's position in A
    for ``X_A' z`` on the rows, each found on first use and kept."""

    def __init__(self, products: ColumnProducts, cols: np.ndarray):
        self.products, self.cols = products, cols
        self.on_rows = products._rows_cheaper(cols)

    @cached_property
    def _ascending(self):
        """(A in ascending column order, the order): ``X_A b`` adds each row's terms by column."""
        order = np.argsort(self.cols, kind="stable")
        return self.cols[order], order

    @cached_property
    def _positions(self):
        """(each column's position in A, that of the ones column, whether A is every column in
        order): the scatter of ``X_A' z`` on the rows."""
        pos, ones = self.products._positions(self.cols)
        direct = self.cols.shape[0] == self.products.n_cols and bool(np.all(pos == np.arange(self.cols.shape[0])))
        return pos, ones, direct

    def times(self, b, out=None) -> np.ndarray:
        """out = X_A @ b (an N-vector)."""
        x = self.products
        cols, order = self._ascending
        b = np.ascontiguousarray(b, dtype=np.float64)[order]
        out = np.empty(x.n_rows) if out is None else out
        if self.on_rows:
            rptr, rcol, rval = x.row_major()
            full, ones = x._spread(cols, b)
            csr_times(rptr, rcol, rval, full, ones, x.bounds, out)
        else:
            ptr, rows = x.tile_rows()
            tiled_times(ptr, x.tiles, rows, x.values, x.value_shift, x.unit, cols, b, out)
        return out

    def dot(self, z, out=None) -> np.ndarray:
        """out = X_A' z (an |A|-vector)."""
        return self.dots(z, out, None)

    @cached_property
    def _gram_on_rows(self) -> bool:
        """Whether ``X_A' diag(c) X_A b`` does less work in one pass over A's own row copy than
        in the CSC's two (:meth:`times`, then :meth:`dot`): the switch point measured before the
        tiles (two passes at the untiled cost 3 = four at the tiled 1.5)."""
        return self.products._rows_cheaper(self.cols, 4)

    def gram_times(self, c, b, copy: bool = True) -> np.ndarray:
        """X_A' diag(c) X_A b (an |A|-vector; a GLM's Hessian-vector product; ``c`` float64).

        On A's own row-major copy (:meth:`ColumnProducts._subset_rows`, kept: the
        conjugate-gradient steps of a polish may ask for many products with one A; built only if
        ``copy``) each row's ``x_iA b`` and its share ``c_i (x_iA b) x_iA`` of the result are one
        pass over the row, by row blocks on all threads; on the CSC it is :meth:`times` and then
        :meth:`dot`. The layout follows the work and ``copy``, never the threads, so the bits are
        the same on any number of threads.
        """
        x, cols = self.products, self.cols
        b = np.ascontiguousarray(b, dtype=np.float64)
        if not copy or not self._gram_on_rows:
            z = self.times(b)
            z *= c
            return self.dot(z)
        m = cols.shape[0]
        real = cols >= 0
        rptr, rcol, rval = x._subset_rows(cols, bool(np.all(x.unit[cols[real]])))
        at_ones = -1 if real.all() else int(np.flatnonzero(~real)[0])
        ones = 0.0 if at_ones < 0 else float(b[at_ones])
        partial = np.zeros((x.bounds.shape[0] - 1, m))
        csr_gram_times(rptr, rcol, rval, b, ones, at_ones, c, x.bounds, partial)
        out = np.empty(m)
        sum_blocks(partial, out)
        return out

    def dots(self, z, out, out2):
        """out = X_A' z and, unless ``out2`` is None, out2 = (X_A ** 2)' z, in one pass."""
        x, cols = self.products, self.cols
        z = np.ascontiguousarray(z, dtype=np.float64)
        m = cols.shape[0]
        out = np.empty(m) if out is None else out
        squares = out2 is not None
        if self.on_rows:
            rptr, rcol, rval = x.row_major()
            pos, ones, direct = self._positions
            nb = x.bounds.shape[0] - 1
            partial = np.zeros((nb, m + 1))
            partial2 = np.zeros((nb, m + 1) if squares else (0, 0))
            csr_dot(rptr, rcol, rval, pos, direct, ones, z, x.bounds, squares, partial, partial2)
            sum_blocks(partial[:, :m], out)
            if squares:
                sum_blocks(partial2[:, :m], out2)
        else:
            nt = x.tiles.shape[0] - 1
            partial = np.empty((nt, m))
            partial2 = np.empty((nt, m) if squares else (0, 0))
            ptr, rows = x.tile_rows()
            tiled_dot(ptr, x.tiles, rows, x.values, x.value_shift, x.unit, cols, z, squares, partial, partial2)
            sum_blocks(partial, out)
            if squares:
                sum_blocks(partial2, out2)
        return out


def _index(cols) -> np.ndarray:
    return np.ascontiguousarray(cols, dtype=np.int64)


def column_index_type(n_cols: int):
    """The narrowest unsigned type of a row-major copy's column indices (see
    :func:`riskset.core.design.row_indices`): a full gradient streams them all (N = 1M, P = 1000,
    50M non-zeros: 200 -> 100 MB per X' z)."""
    return np.uint16 if n_cols <= 2**16 else np.uint32 if n_cols < 2**32 else np.int64
