"""Harrell's concordance index in O(n log n): one pass over the rows by descending time
with a Fenwick tree of the risk ranks seen so far."""
import numpy as np
from numba import njit


@njit(cache=True, error_model="numpy")
def _fenwick_add(tree, i):
    i += 1
    while i < tree.shape[0]:
        tree[i] += 1
        i += i & -i


@njit(cache=True, error_model="numpy")
def _fenwick_count_below(tree, i):
    """Number of inserted ranks < i."""
    total = 0
    while i > 0:
        total += tree[i]
        i -= i & -i
    return total


@njit(cache=True, error_model="numpy")
def concordance_counts(time, event, rank, order, n_ranks):
    """(concordant, tied_risk, comparable) pair counts of Harrell's C.

    ``order`` visits the rows by descending time and, within a time, censored rows
    before events. A pair (i, j) is comparable when i has an event and j is still at
    risk after it: t_j > t_i, or t_j == t_i with j censored. It is concordant when i's
    risk rank is higher, tied when equal. ``rank`` are dense ranks 0..n_ranks-1 of the
    risk scores.
    """
    tree = np.zeros(n_ranks + 1, np.int64)
    concordant = tied = comparable = 0
    inserted = 0
    n = order.shape[0]
    a = 0
    while a < n:
        b = a
        while b < n and time[order[b]] == time[order[a]]:
            b += 1
        first_event = a
        while first_event < b and not event[order[first_event]]:
            _fenwick_add(tree, rank[order[first_event]])  # censored at this time: still at risk
            first_event += 1
            inserted += 1
        for k in range(first_event, b):
            r = rank[order[k]]
            below = _fenwick_count_below(tree, r)
            concordant += below
            tied += _fenwick_count_below(tree, r + 1) - below
            comparable += inserted
        for k in range(first_event, b):
            _fenwick_add(tree, rank[order[k]])
            inserted += 1
        a = b
    return concordant, tied, comparable
