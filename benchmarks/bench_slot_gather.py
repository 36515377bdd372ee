"""What the Cox model's exit slot per non-zero (``ken``, 4 bytes) buys (issue 46).

    python benchmarks/bench_slot_gather.py [--n 1000000,10000000] [--columns 100] [--density 0.05]

A Cox walk reads, at each non-zero k of a column, the row's weight ``w[indices[k]]`` (a gather)
and the cumulative aggregate at the row's exit slot. The slot can be stored per non-zero
(``A1c[ken[k]]``, streamed), gathered through the row (``A1c[slot[indices[k]]]``, 4 bytes a
non-zero fewer), or kept beside w in one row record. Each compiled walk sums
``w[row] * A1c[slot]`` over the columns; rows are in time order, so the slots ascend with them.
Prints per-column times (best of 7, one thread) and the ratios to the stored slot.
"""
from __future__ import annotations

import argparse
import time

import numpy as np
from numba import njit


@njit(nogil=True)
def walk_stored(indptr, indices, ken, w, A, cols):
    s = 0.0
    for j in cols:
        for k in range(indptr[j], indptr[j + 1]):
            s += w[indices[k]] * A[ken[k]]
    return s


@njit(nogil=True)
def walk_gathered(indptr, indices, slot, w, A, cols):
    s = 0.0
    for j in cols:
        for k in range(indptr[j], indptr[j + 1]):
            r = indices[k]
            s += w[r] * A[slot[r]]
    return s


@njit(nogil=True)
def walk_row_record(indptr, indices, ws, A, cols):
    s = 0.0
    for j in cols:
        for k in range(indptr[j], indptr[j + 1]):
            r = indices[k]
            s += ws[r, 0] * A[np.int64(ws[r, 1])]
    return s


def best_of(fn, *args, repeats=7):
    fn(*args)
    best, value = np.inf, None
    for _ in range(repeats):
        t = time.perf_counter()
        value = fn(*args)
        best = min(best, time.perf_counter() - t)
    return best, value


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", default="1000000,10000000", help="rows, comma-separated")
    ap.add_argument("--columns", type=int, default=100)
    ap.add_argument("--density", type=float, default=0.05)
    args = ap.parse_args(argv)
    print("| N | non-zeros a column | stored slot (ms / column) | gathered | ratio | row record | ratio |")
    print("|---|---|---|---|---|---|---|")
    for n in (int(v) for v in args.n.split(",")):
        rng = np.random.default_rng(0)
        columns = [np.flatnonzero(rng.random(n) < args.density).astype(np.int32) for _ in range(args.columns)]
        indptr = np.concatenate([[0], np.cumsum([c.size for c in columns])]).astype(np.int64)
        indices = np.concatenate(columns)
        slot = np.sort(rng.integers(0, n // 2, n)).astype(np.int32)
        w, A, cols = rng.random(n), rng.random(n // 2), np.arange(args.columns)
        stored, a = best_of(walk_stored, indptr, indices, slot[indices], w, A, cols)
        gathered, b = best_of(walk_gathered, indptr, indices, slot, w, A, cols)
        record, c = best_of(walk_row_record, indptr, indices, np.column_stack([w, slot.astype(np.float64)]), A, cols)
        assert a == b == c
        per = 1e3 / args.columns
        print(f"| {n:,} | {indptr[-1] / args.columns:,.0f} | {stored * per:.3f} | {gathered * per:.3f} | "
              f"{gathered / stored:.2f} | {record * per:.3f} | {record / stored:.2f} |")


if __name__ == "__main__":
    main()
