"""Per-row Cox bookkeeping: case weights, the pieces (runs of rows) of the O(N) passes,
the stratum shifts, the row weights ``w = c exp(eta - shift)`` and the slot sums ``ex/en/ev``
of a new state. Notation: :mod:`riskset.kernels.cpu.cox`."""
import math

import numpy as np
from numba import njit, prange

from riskset.core.prefetch import DISTANCE, prefetch

#: Slots per block of the blocked scans of a large stratum, and rows per block of the
#: O(N) passes: fixed, so the sums (and the fit) do not depend on the thread count.
BLOCK = 4096


@njit(cache=True, nogil=True, error_model="numpy")
def case_weights(weights, data_rows, event, ke, cw, slot_d, slot_m):
    """A reweighting's case weights cw (``weights`` of the Dataset rows, in datafit row order)
    and, per event slot, its events' weight slot_d and number of positive weight slot_m,
    added in row order (one pass, its scattered reads asked 4 x DISTANCE rows ahead: cheaper
    than NumPy's gather and two bincounts, docs/performance.md)."""
    n = cw.shape[0]
    for r in range(n):
        if r + 4 * DISTANCE < n:
            prefetch(weights, data_rows[r + 4 * DISTANCE])
        c = weights[data_rows[r]]
        cw[r] = c
        if event[r] == 1:
            slot_d[ke[r] - 1] += c
            slot_m[ke[r] - 1] += 1.0 if c > 0.0 else 0.0


def row_pieces(row_stratum, exit_slot=None):
    """(piece_ptr, piece_stratum): the rows (sorted by stratum) cut at every stratum boundary
    and about every :data:`BLOCK` rows; piece i spans rows piece_ptr[i]:piece_ptr[i+1] of stratum
    piece_stratum[i]. The shifted weights' passes (:func:`stratum_shifts`, :func:`row_weights`)
    run over pieces in parallel, reading no per-row stratum. With ``exit_slot`` (per row, its
    runs contiguous: rows in (stratum, time descending) order), each cut every BLOCK rows moves
    to the next change of exit slot, so that each slot's rows lie in one piece: the passes that add
    rows into their exit slots (:func:`weights_and_slot_sums`, :func:`hessian_vector_rows`) then run over
    pieces in parallel, each slot's sum in row order as a serial pass adds it (the same bits)."""
    n = row_stratum.shape[0]
    cuts = np.arange(0, n, BLOCK)
    if exit_slot is not None and n:
        changes = np.r_[0, np.flatnonzero(np.diff(exit_slot)) + 1]
        cuts = np.unique(changes[np.minimum(np.searchsorted(changes, cuts), changes.size - 1)])
    cuts = np.union1d(np.flatnonzero(np.diff(row_stratum)) + 1, cuts)
    piece_ptr = np.r_[cuts, n].astype(np.int64) if n else np.zeros(1, np.int64)
    return piece_ptr, np.ascontiguousarray(row_stratum[piece_ptr[:-1]], dtype=np.int64)


#: Pieces per task of the parallel passes over pieces (:func:`row_pieces`).
PIECE_CHUNK = 8


@njit(cache=True, nogil=True, error_model="numpy", inline="always")
def piece_tasks(piece_ptr):
    """The number of tasks of a parallel pass over the pieces ``piece_ptr`` (:data:`PIECE_CHUNK` each)."""
    return (piece_ptr.shape[0] - 1 + PIECE_CHUNK - 1) // PIECE_CHUNK


@njit(cache=True, nogil=True, error_model="numpy", inline="always")
def task_rows(piece_ptr, c):
    """The rows (lo, hi) of task ``c`` of a pass over the pieces ``piece_ptr`` (:func:`piece_tasks`)."""
    return piece_ptr[c * PIECE_CHUNK], piece_ptr[min(piece_ptr.shape[0] - 1, (c + 1) * PIECE_CHUNK)]


@njit(cache=True, nogil=True, error_model="numpy", parallel=True)
def stratum_shifts(eta, cw, piece_ptr, piece_stratum, shift):
    """shift[s] = the largest eta of a row of positive weight in stratum s (0 if none): the
    pieces' maxima in parallel, then per stratum.

    The likelihood is invariant to adding a constant to eta within a stratum, and so are
    the score and the information; the sums are not. With w = c exp(eta - shift) the
    largest weight of each stratum is its case weight: exp cannot overflow, and the
    denominators' squares in Q2 = d / D^2 stay in range. Unshifted, a stratum whose eta
    is ~350 (an uncentered covariate: a calendar year times 0.2) underflows Q2 to 0 and
    loses the information's second term: a wrong Hessian, hence wrong steps and standard
    errors, and an aliased covariate (constant within strata) that seems informative."""
    n_pieces = piece_stratum.shape[0]
    top = np.empty(n_pieces)
    for c in prange(piece_tasks(piece_ptr)):
        for i in range(c * PIECE_CHUNK, min(n_pieces, (c + 1) * PIECE_CHUNK)):
            t = -np.inf
            for r in range(piece_ptr[i], piece_ptr[i + 1]):
                if cw[r] > 0.0 and eta[r] > t:
                    t = eta[r]
            top[i] = t
    shift[:] = -np.inf
    for i in range(n_pieces):
        s = piece_stratum[i]
        if top[i] > shift[s]:
            shift[s] = top[i]
    for s in range(shift.shape[0]):
        if shift[s] == -np.inf:
            shift[s] = 0.0


@njit(cache=True, nogil=True, error_model="numpy", parallel=True)
def row_weights(eta, cw, piece_ptr, piece_stratum, shift, w):
    """w = c exp(eta - shift of the row's stratum) (:func:`stratum_shifts`), in parallel over
    the pieces of rows (each w_r depends on row r alone)."""
    n_pieces = piece_stratum.shape[0]
    for c in prange(piece_tasks(piece_ptr)):
        for i in range(c * PIECE_CHUNK, min(n_pieces, (c + 1) * PIECE_CHUNK)):
            sh = shift[piece_stratum[i]]
            for r in range(piece_ptr[i], piece_ptr[i + 1]):
                w[r] = cw[r] * math.exp(eta[r] - sh)


@njit(cache=True, nogil=True, error_model="numpy", parallel=True)
def weights_and_slot_sums(eta, rows, slots, w, shift, sums):
    """The stratum shifts, w = c exp(eta - shift) (:func:`stratum_shifts`, :func:`row_weights`)
    and the slot sums ex (w by exit slot), en (w by entry slot; only with start times:
    without, every row enters at its stratum's first slot and en is never read), ev
    (events), added in row order: ex and ev over the pieces in parallel (a slot's rows lie in
    one piece, :func:`row_pieces`), en in one pass (entry slots are not in row order).

    Returns the log-likelihood's row part, sum_events c (eta - shift) (:func:`loglik_slots`
    adds the rest), read in the same pass: partial sums per task, added in task order."""
    cw, ks, ke, event = rows.cw, rows.ks, rows.ke, rows.event
    piece_ptr, piece_stratum = rows.piece_ptr, rows.piece_stratum
    has_start = slots.has_start
    ex, en, ev = sums.ex, sums.en, sums.ev
    stratum_shifts(eta, cw, piece_ptr, piece_stratum, shift)
    row_weights(eta, cw, piece_ptr, piece_stratum, shift, w)
    ex[:] = 0.0
    en[:] = 0.0
    ev[:] = 0.0
    if has_start:
        for r in range(eta.shape[0]):
            en[ks[r]] += w[r]
    n_pieces = piece_stratum.shape[0]
    part = np.zeros(piece_tasks(piece_ptr))
    for c in prange(piece_tasks(piece_ptr)):
        t = 0.0
        for i in range(c * PIECE_CHUNK, min(n_pieces, (c + 1) * PIECE_CHUNK)):
            sh = shift[piece_stratum[i]]
            for r in range(piece_ptr[i], piece_ptr[i + 1]):
                wr = w[r]
                ex[ke[r]] += wr
                if event[r]:
                    ev[ke[r] - 1] += wr
                    t += cw[r] * (eta[r] - sh)
        part[c] = t
    total = 0.0
    for c in range(part.shape[0]):
        total += part[c]
    return total


@njit(cache=True, nogil=True, error_model="numpy", inline="always")
def moved_weight(eta, w, r, x, delta, factor, indicator):
    """eta_r += delta x and w_r *= exp(delta x) (``factor`` = exp(delta), reused for an
    indicator column: one exp per move); returns the change of w_r. The risk-set families'
    moves add it to their slot sums; their log-likelihood recomputes w = c exp(eta - shift) exactly."""
    eta[r] += delta * x
    wo = w[r]
    wn = wo * (factor if indicator else math.exp(delta * x))
    w[r] = wn
    return wn - wo
