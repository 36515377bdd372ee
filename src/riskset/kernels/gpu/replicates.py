"""Batched replicate fits on the device (DESIGN.md section 4).

R weightings of one X (cross-validation folds, bootstrap draws, grid points) are fitted
at once: the state is (R, N) on the device and each sweep is one launch of the
persistent sweep kernel with R blocks, block r fitting replicate r, so one pass over
column j serves all R replicates (the column's indices and values are read once per
block from the same cache lines). Per replicate the host keeps only scalars and the
(R, P) coefficients: the convergence rule, active-set sweeps, restricted start and
the L1 screening test are exactly those of :func:`riskset.solver.ccd.fit_ccd`
(vectorized over R with a per-replicate coordinate mask), so every replicate follows
the same path as its separate CPU fit. Small active sets are polished on the host
with exact Newton steps (as the CPU solver does), which makes the batched
coefficients equal the CPU ones to rounding.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numba import cuda

from riskset.solver import ccd


@dataclass
class ReplicateResult:
    beta: np.ndarray        # (R, P)
    loglik: np.ndarray      # (R,)
    objective: np.ndarray   # (R,)
    converged: np.ndarray   # (R,) bool
    n_iter: np.ndarray      # (R,) cycles
    messages: list


def _penalty(beta, l1, l2):
    return np.sum(l1 * np.abs(beta), axis=1) + 0.5 * np.sum(l2 * beta * beta, axis=1)


def fit_replicates(datafit, weights, l1, l2=None, beta0=None, tol: float = 1e-10, max_iter: int = 1000,
                   dtype: str = "float64", polish_max_active: int = 100) -> ReplicateResult:
    """Fit R row weightings of one datafit at once on the device.

    Parameters
    ----------
    datafit : a CPU datafit (GLM or Breslow Cox) or a device datafit from ``to_device``.
    weights : (R, n) row weights in Dataset row order (as ``Datafit.reweighted``); 0 removes
        a row (a held-out fold), counts give bootstrap draws.
    l1, l2 : (P,) or (R, P) penalty weights (e.g. per-replicate grid points).
    beta0 : (P,) or (R, P) warm starts.
    """
    from . import to_device

    dev = to_device(datafit, dtype=dtype)
    weights = np.atleast_2d(np.asarray(weights, dtype=np.float64))
    R, P = weights.shape[0], dev.n_coef
    batch = dev.replicates(weights)
    l1 = np.ascontiguousarray(np.broadcast_to(np.asarray(l1, dtype=np.float64), (R, P)))
    l2 = np.zeros((R, P)) if l2 is None else np.ascontiguousarray(
        np.broadcast_to(np.asarray(l2, dtype=np.float64), (R, P)))
    beta = np.zeros((R, P)) if beta0 is None else np.array(np.broadcast_to(beta0, (R, P)), dtype=np.float64)
    d = dict(l1=cuda.to_device(l1), l2=cuda.to_device(l2), coords=cuda.to_device(np.arange(P, dtype=np.int64)))
    state = batch.new_state(beta)
    opts = ccd.SolverOptions(tol=tol, max_iter=max_iter, polish_max_active=polish_max_active)
    messages = [""] * R
    done = np.zeros(R, bool)
    penalized = l1 > 0

    # 1. restricted start (replicates with an L1 prior starting at zero on penalized coordinates)
    restricted = np.any(penalized, axis=1) & ~np.any((beta != 0) & penalized, axis=1)
    if restricted.any():
        base = ~penalized & restricted[:, None]
        if base.any():
            beta, state, _, _ = _batched_cycles(batch, state, beta, l1, l2, base, d, opts)
            beta, state = _polish_all(batch, state, beta, l1, l2, base, opts, np.flatnonzero(base.any(axis=1)))
        grads = _gradients(batch, state, np.flatnonzero(restricted))
        for r, g in grads.items():
            if np.all(np.abs(g[penalized[r]]) <= l1[r, penalized[r]]):
                done[r] = True
                messages[r] = "all penalized coefficients are zero: the L1 rate is at or above gamma_max"

    # 2. cycles
    todo = ~done
    converged = done.copy()
    n_iter = np.zeros(R, np.int64)
    if todo.any():
        base = np.broadcast_to(todo[:, None], (R, P)).copy()
        beta, state, conv, info = _batched_cycles(batch, state, beta, l1, l2, base, d, opts)
        n_iter[todo] = info["n_iter"][todo]
        converged[todo] = conv[todo]
        for r in np.flatnonzero(todo):
            messages[r] = info["messages"][r]
        beta, state = _polish_all(batch, state, beta, l1, l2, base, opts, np.flatnonzero(todo & conv))
    ll = batch._loglik_all(state)
    return ReplicateResult(beta, ll, ll - _penalty(beta, l1, l2), converged, n_iter, messages)


def _batched_cycles(batch, state, beta, l1, l2, base, d, opts):
    """``ccd._cycles`` for every replicate at once; ``base`` (R, P) masks each one's coordinates."""
    R, P = beta.shape
    running = base.any(axis=1)
    radius = cuda.to_device(np.ones((R, P)))
    beta_d = cuda.to_device(beta)
    objective = batch._loglik_all(state) - _penalty(beta, l1, l2)
    full = np.ones(R, bool)
    converged = np.zeros(R, bool)
    n_iter = np.zeros(R, np.int64)
    change = np.full(R, np.inf)
    messages = [""] * R
    while running.any():
        active = full[:, None] | (beta != 0) | (l1 == 0)
        mask = base & active & running[:, None]
        batch._sweep(state, d["coords"], cuda.to_device(mask.astype(np.uint8)), beta_d, d["l1"], d["l2"], radius,
                     0, None, None)
        beta = beta_d.copy_to_host()
        state.beta = beta.copy()
        n_iter[running] += 1
        new_obj = batch._loglik_all(state) - _penalty(beta, l1, l2)
        for r in np.flatnonzero(running):
            if not np.isfinite(new_obj[r]):
                messages[r] = f"the objective became non-finite ({new_obj[r]}) at cycle {n_iter[r]}"
                running[r] = False
                continue
            change[r] = abs(new_obj[r] - objective[r]) / (abs(new_obj[r]) + 1.0)
            objective[r] = new_obj[r]
            if change[r] < opts.tol:
                if full[r]:
                    converged[r] = True
                    messages[r] = f"relative objective change {change[r]:.2e} < tol {opts.tol:g}"
                    running[r] = False
                    continue
                full[r] = True
            else:
                full[r] = False
            if n_iter[r] >= opts.max_iter:
                messages[r] = (f"reached max_iter = {opts.max_iter} cycles; relative objective change "
                               f"{change[r]:.2e} >= tol {opts.tol:g}")
                running[r] = False
    return beta, state, converged, dict(n_iter=n_iter, messages=messages)


def _gradients(batch, state, reps):
    return {int(r): batch._cpu_view(int(r)).gradient(batch._host_state(state, int(r))) for r in reps}


def _polish_all(batch, state, beta, l1, l2, free, opts, reps):
    """Host Newton polish (``ccd.polish``) of the replicates ``reps``; the device state is
    rebuilt from the polished coefficients."""
    if opts.polish_max_active <= 0 or len(reps) == 0:
        return beta, state
    changed = False
    beta = beta.copy()
    for r in reps:
        view = batch._cpu_view(int(r))
        host = batch._host_state(state, int(r))
        b, _ = ccd.polish(view, beta[r].copy(), host, l1[r], l2[r], free[r], opts.polish_max_active)
        if not np.array_equal(b, beta[r]):
            beta[r] = b
            changed = True
    if changed:
        state = batch.new_state(beta)
    return beta, state
