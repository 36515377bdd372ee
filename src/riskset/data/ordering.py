"""Stable sort orders of many rows by several keys, on every thread.

:func:`lexsort` gives ``np.lexsort``'s order (stable: equal keys keep their input order; the
last key is the primary one) by a least-significant-digit radix sort, whose passes run on
chunks of rows in parallel. NumPy's sorts run on one thread, and the Cox and Fine-Gray
preparations sort every row by time: at a million rows ``np.lexsort`` of two keys took 0.15 s,
the largest serial step of a two-thread fit.

Each key is mapped to unsigned 64-bit integers in the same order (a float's bits with the sign
bit flipped, or all bits flipped for a negative one; a signed integer's sign bit flipped), and
only the bits that differ between rows are sorted, in digits of at most
:data:`DIGIT_BITS` bits: times in whole days need 2-3 passes, a key of 0/1 one.
"""
from __future__ import annotations

import numba
import numpy as np
from numba import njit, prange

#: Bits per radix pass: 2,048 counters per chunk, which stay in the L1 cache.
DIGIT_BITS = 11

#: Rows below which ``np.lexsort`` is used as it is (one thread sorts them in a millisecond).
PARALLEL_FROM = 1 << 15

#: Rows per chunk at least: fewer chunks than threads where the rows are few.
CHUNK_ROWS = 1 << 14

SIGN = np.uint64(1 << 63)
INF_BITS = np.uint64(0x7FF0000000000000)
ALL_BITS = np.uint64(0xFFFFFFFFFFFFFFFF)


def lexsort(keys, parallel_from: int = PARALLEL_FROM) -> np.ndarray:
    """``np.lexsort(keys)`` (int64), computed on every thread where there are
    ``parallel_from`` rows or more.

    ``keys`` are 1-D arrays of one length, numeric or boolean; the last is the primary key. NaN
    sorts last, and -0.0 equals 0.0, as in NumPy.

    >>> lexsort([np.array([0, 1, 0, 1]), np.array([2.0, 1.0, 1.0, 2.0])], parallel_from=1).tolist()
    [2, 1, 0, 3]
    """
    keys = [np.asarray(k) for k in keys]
    n = keys[0].shape[0] if keys else 0
    if n < max(parallel_from, 2):
        return np.lexsort(keys).astype(np.int64)
    order = np.arange(n, dtype=np.int64)
    spare_order = np.empty(n, np.int64)
    current, spare = np.empty(n, np.uint64), np.empty(n, np.uint64)
    chunks = int(max(1, min(numba.get_num_threads(), n // CHUNK_ROWS)))
    bounds = np.linspace(0, n, chunks + 1).astype(np.int64)
    for key in keys:  # least significant first: each pass is stable
        _ordered_bits(key, order, current)
        varying = int(_varying_bits(current, bounds))
        low = 0
        while varying:
            while not (varying >> low) & 1:
                low += 1
            width = min(DIGIT_BITS, int(varying >> low).bit_length())
            _radix_pass(current, order, spare, spare_order, low, width, bounds)
            current, spare = spare, current
            order, spare_order = spare_order, order
            varying &= ~((1 << (low + width)) - 1)
            low += width
    return order


def _ordered_bits(key: np.ndarray, order: np.ndarray, out: np.ndarray) -> None:
    """``out[i]``: key[order[i]] as an unsigned integer of the same order."""
    kind = key.dtype.kind
    if kind == "f":
        _float_bits(np.ascontiguousarray(key, dtype=np.float64).view(np.uint64), order, out)
    elif kind == "i":
        _signed_bits(np.asarray(key, dtype=np.int64), order, out)
    elif kind in "ub":
        _unsigned_bits(np.asarray(key, dtype=np.uint64), order, out)
    else:
        raise TypeError(f"lexsort: keys must be numeric or boolean, not {key.dtype}")


@njit(cache=True, nogil=True, parallel=True)
def _float_bits(raw, order, out):
    """``raw``: the float64 keys' bits (IEEE 754: sign, exponent, mantissa)."""
    for i in prange(order.shape[0]):
        b = raw[order[i]]
        if b & ~SIGN > INF_BITS:
            out[i] = ALL_BITS  # NaN, after +inf as NumPy sorts it
        elif b == SIGN:
            out[i] = SIGN  # -0.0 is 0.0
        else:
            out[i] = ~b if b & SIGN else b | SIGN


@njit(cache=True, nogil=True, parallel=True)
def _signed_bits(key, order, out):
    for i in prange(order.shape[0]):
        out[i] = np.uint64(key[order[i]]) ^ SIGN


@njit(cache=True, nogil=True, parallel=True)
def _unsigned_bits(key, order, out):
    for i in prange(order.shape[0]):
        out[i] = key[order[i]]


@njit(cache=True, nogil=True, parallel=True)
def _varying_bits(bits, bounds):
    """The bits in which some row differs from the first (an OR of XORs, by chunk)."""
    chunks = bounds.shape[0] - 1
    partial = np.zeros(chunks, np.uint64)
    first = bits[0]
    for c in prange(chunks):
        acc = np.uint64(0)
        for i in range(bounds[c], bounds[c + 1]):
            acc |= bits[i] ^ first
        partial[c] = acc
    total = np.uint64(0)
    for c in range(chunks):
        total |= partial[c]
    return total


@njit(cache=True, nogil=True, parallel=True)
def _radix_pass(bits, order, out_bits, out_order, low, width, bounds):
    """One stable counting pass on the digit ``bits >> low`` (``width`` bits): each chunk
    counts its digits, a digit's rows go chunk after chunk, and each chunk scatters its own."""
    chunks = bounds.shape[0] - 1
    radix = 1 << width
    mask = np.uint64(radix - 1)
    shift = np.uint64(low)
    start = np.zeros((chunks, radix), np.int64)
    for c in prange(chunks):
        for i in range(bounds[c], bounds[c + 1]):
            start[c, (bits[i] >> shift) & mask] += 1
    total = 0
    for d in range(radix):
        for c in range(chunks):
            count = start[c, d]
            start[c, d] = total
            total += count
    for c in prange(chunks):
        for i in range(bounds[c], bounds[c + 1]):
            d = (bits[i] >> shift) & mask
            p = start[c, d]
            start[c, d] = p + 1
            out_bits[p] = bits[i]
            out_order[p] = order[i]
