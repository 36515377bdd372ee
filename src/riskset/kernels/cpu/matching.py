"""Greedy nearest-neighbour matching on a score, as CohortMethod's ``matchOnPs`` (its ``Match``
class): rounds ``r = 1 .. max_ratio``; in round r every treated row whose matched set holds
fewer than r comparators takes the nearest unmatched comparator, pairs taken in order of
increasing distance (a heap of candidate pairs), and only pairs closer than the caliper. A
candidate whose comparator was taken meanwhile is replaced by the treated row's nearest
remaining comparator (doubly linked neighbours over the sorted scores). Rows must be sorted
by score. Pairs at equal distance are taken in the order (distance, treated row, comparator
row), so that the result never depends on the heap's layout.
"""
from __future__ import annotations

import numpy as np
from numba import njit

from riskset.core.jit import OPTIONS


@njit(**OPTIONS)
def _before(a_d, a_t, a_c, b_d, b_t, b_c):
    """Whether pair a is taken before pair b."""
    if a_d != b_d:
        return a_d < b_d
    if a_t != b_t:
        return a_t < b_t
    return a_c < b_c


@njit(**OPTIONS)
def _push(heap_d, heap_t, heap_c, size, d, t, c):
    """Push (d, t, c) on the binary min-heap of ``size`` entries; returns the arrays (grown if full)."""
    if size == heap_d.shape[0]:
        grown = 2 * size + 16
        nd, nt, nc = np.empty(grown), np.empty(grown, np.int64), np.empty(grown, np.int64)
        nd[:size], nt[:size], nc[:size] = heap_d[:size], heap_t[:size], heap_c[:size]
        heap_d, heap_t, heap_c = nd, nt, nc
    i = size
    while i > 0:
        parent = (i - 1) // 2
        if not _before(d, t, c, heap_d[parent], heap_t[parent], heap_c[parent]):
            break
        heap_d[i], heap_t[i], heap_c[i] = heap_d[parent], heap_t[parent], heap_c[parent]
        i = parent
    heap_d[i], heap_t[i], heap_c[i] = d, t, c
    return heap_d, heap_t, heap_c


@njit(**OPTIONS)
def _pop(heap_d, heap_t, heap_c, size):
    """Remove the top of the heap of ``size`` entries (the caller read it first)."""
    size -= 1
    d, t, c = heap_d[size], heap_t[size], heap_c[size]
    i = 0
    while True:
        child = 2 * i + 1
        if child >= size:
            break
        if child + 1 < size and _before(heap_d[child + 1], heap_t[child + 1], heap_c[child + 1],
                                        heap_d[child], heap_t[child], heap_c[child]):
            child += 1
        if not _before(heap_d[child], heap_t[child], heap_c[child], d, t, c):
            break
        heap_d[i], heap_t[i], heap_c[i] = heap_d[child], heap_t[child], heap_c[child]
        i = child
    heap_d[i], heap_t[i], heap_c[i] = d, t, c


@njit(**OPTIONS)
def greedy_match(score, treated, max_ratio, caliper):
    """Matched-set code of each row (-1: unmatched) of rows sorted by ``score``; ``treated`` 0/1."""
    n = score.shape[0]
    stratum = np.full(n, -1, np.int64)
    # nearest unmatched comparator before / after each row (-1: none), kept as comparators are taken
    back, forth = np.full(n, -1, np.int64), np.full(n, -1, np.int64)
    last = -1
    for i in range(n):
        back[i] = last
        if treated[i] == 0:
            last = i
    last = -1
    for i in range(n - 1, -1, -1):
        forth[i] = last
        if treated[i] == 0:
            last = i
    n_treated = 0
    for i in range(n):
        n_treated += treated[i]
    n_comparators = n - n_treated
    sizes = np.zeros(n_treated, np.int64)  # comparators in each matched set
    n_sets = 0
    matched_comparators = 0
    heap_d, heap_t, heap_c = np.empty(2 * n_treated + 16), np.empty(2 * n_treated + 16, np.int64), \
        np.empty(2 * n_treated + 16, np.int64)
    for ratio in range(1, max_ratio + 1):
        size = 0
        for direction in (1, -1):  # each treated row with its nearest unmatched comparator on either side
            near = -1
            start, stop = (0, n) if direction == 1 else (n - 1, -1)
            for i in range(start, stop, direction):
                if treated[i] == 1 and near != -1:
                    heap_d, heap_t, heap_c = _push(heap_d, heap_t, heap_c, size, abs(score[i] - score[near]), i, near)
                    size += 1
                elif treated[i] == 0 and stratum[i] == -1:
                    near = i
        if size == 0:
            break
        matched_this_round = 0
        while size > 0 and matched_comparators < n_comparators and matched_this_round < n_treated:
            d, t, c = heap_d[0], heap_t[0], heap_c[0]
            _pop(heap_d, heap_t, heap_c, size)
            size -= 1
            if not d < caliper:
                break
            s = stratum[t]
            if stratum[c] == -1 and (s == -1 or sizes[s] < ratio):
                if s == -1:
                    s = n_sets
                    n_sets += 1
                    stratum[t] = s
                stratum[c] = s
                sizes[s] += 1
                matched_this_round += 1
                matched_comparators += 1
                # take comparator c out of the neighbour lists
                nxt, prv = forth[c], back[c]
                for k in range(c, (n - 1 if nxt == -1 else nxt) + 1):
                    back[k] = prv
                for k in range(0 if prv == -1 else prv, c + 1):
                    forth[k] = nxt
            elif stratum[c] != -1 and (s == -1 or sizes[s] < ratio):
                # c was taken: the treated row's nearest remaining comparator instead
                b, f = back[t], forth[t]
                if b != -1 or f != -1:
                    db = abs(score[t] - score[b]) if b != -1 else np.inf
                    df = abs(score[t] - score[f]) if f != -1 else np.inf
                    best, dist = (b, db) if db < df else (f, df)
                    heap_d, heap_t, heap_c = _push(heap_d, heap_t, heap_c, size, dist, t, best)
                    size += 1
        if matched_comparators == n_comparators or matched_this_round == 0:
            break
    return stratum
