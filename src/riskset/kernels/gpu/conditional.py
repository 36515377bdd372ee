"""Conditional likelihoods over strata (conditional Poisson, SCCS, conditional logistic) on the device.

Mirrors :mod:`riskset.kernels.cpu.conditional`. State per replicate: eta, ``w = exp(eta)``
per row and ``W_s = sum_{r in s} w_r`` per stratum (float64). A multinomial stratum
(conditional Poisson, SCCS, conditional logistic with Breslow ties or one case per
set) touched by column j contributes, with ``S1 = sum w x`` and ``S2 = sum w x^2`` over
its non-zeros and ``mu = S1 / W_s``,

    g_j -= n_s mu,        h_j -= n_s (S2 / W_s - mu^2),

on top of the static ``g_j = sum_r y_r x_rj``; an exact stratum (conditional logistic,
m_s >= 2 cases) contributes ``-c_s`` times the first and second derivatives of
``log e_m(w_s)`` along column j, by the Gail-Lubin-Rubinstein recursion of the CPU
kernels (the same source, compiled as a device function), O(n_s m_s).

The non-zeros of a column are sorted by row, so those of one stratum are consecutive:
a *run*. Runs are precomputed per column (``col_runs``, ``run_start``, ``run_stratum``)
and each thread of the replicate's block takes whole runs, summing S1, S2 (and moving
eta, w and W_s) in row order as the CPU does; no two threads touch one stratum, so W_s
needs no atomics and equals the CPU's. These are the family's device functions of the
persistent sweep (:mod:`.sweep`), which reduces the per-thread terms over the block,
takes the step and has every thread move its runs. A stratum is handled by one
thread, so very large strata serialize.

Precision: X values and w in ``dtype``, eta, W_s and every sum in float64. With exact
strata w stays float64: log e_m is computed from the stored w, and float32 weights would
make the log-likelihood (the solver's convergence test) jitter at 1e-7.
"""
from __future__ import annotations

import math

import numpy as np
from numba import cuda, float64

from riskset.kernels.cpu import conditional as cpu_kernels

from .base import DeviceDatafit
from .blocks import block_sum2
from .device import MAX_THREADS, device_copy, row_blocks
from .sweep import compile_gradient, compile_sweep

#: Largest number of cases of an exact (n:m) matched set on the device.
MAX_EXACT_CASES = 64
_WORK = MAX_EXACT_CASES + 1  # per-thread work arrays of the recursion, B_0 .. B_m (compile-time size)

# The CPU recursions, compiled for the device (one definition of the math for both backends).
stratum_scale = cuda.jit(device=True)(cpu_kernels._stratum_scale.py_func)
log_esp = cuda.jit(device=True)(cpu_kernels._log_esp.py_func)
exact_stratum_derivs = cuda.jit(device=True)(cpu_kernels._exact_stratum_derivs.py_func)
stratum_shift = cuda.jit(device=True)(cpu_kernels.stratum_shift.py_func)


@cuda.jit
def sync_kernel(eta, w, W, y_raw, c_s, n_s, stratum_ptr, exact_m, partial):
    """w = exp(eta - shift) and W from eta (exact: no drift of the moves; the CPU's
    ``stratum_shift``) for every stratum of
    replicate blockIdx.y (grid-stride over strata), and partial[r, blockIdx.x] = this
    block's share of the conditional log-likelihood (as the CPU ``loglik``)."""
    sa = cuda.shared.array(MAX_THREADS, float64)
    sb = cuda.shared.array(MAX_THREADS, float64)
    B = cuda.local.array(_WORK, float64)
    r = cuda.blockIdx.y
    tid = cuda.threadIdx.x
    nt = cuda.blockDim.x
    total = 0.0
    for s in range(cuda.blockIdx.x * nt + tid, stratum_ptr.shape[0] - 1, cuda.gridDim.x * nt):
        a = stratum_ptr[s]
        b = stratum_ptr[s + 1]
        c = c_s[r, s]
        tot = 0.0
        shift = stratum_shift(eta[r], a, b)
        for i in range(a, b):
            e = math.exp(eta[r, i] - shift)
            w[r, i] = e
            tot += e
            total += (y_raw[i] * c) * (eta[r, i] - shift)  # y_r eta_r with y = c_s y_raw
        W[r, s] = tot
        m = exact_m[s]
        if m > 0:
            wr = w[r]
            total -= c * log_esp(wr, a, b, m, stratum_scale(wr, a, b), B)
        elif n_s[r, s] > 0:
            total -= n_s[r, s] * math.log(tot)
    block_sum2(sa, sb, total, 0.0, tid, nt)
    if tid == 0:
        partial[r, cuda.blockIdx.x] = sa[0]


@cuda.jit(device=True)
def run_terms(r, k, run_start, run_stratum, stratum_ptr, exact_m, indices, values, w, W, c_s, n_s, B, dB, d2B):
    """(g, h) contribution of run k (the non-zeros of one column in one stratum) for replicate r."""
    p = run_start[k]
    q = run_start[k + 1]
    s = run_stratum[k]
    m = exact_m[s]
    if m > 0:
        a = stratum_ptr[s]
        b = stratum_ptr[s + 1]
        wr = w[r]
        d1, d2 = exact_stratum_derivs(wr, a, b, m, stratum_scale(wr, a, b), indices, values, 0, p, q, B, dB, d2B)
        return -c_s[r, s] * d1, -c_s[r, s] * d2
    s1 = 0.0
    s2 = 0.0
    for i in range(p, q):
        x = float(values[i])
        wx = float(w[r, indices[i]]) * x
        s1 += wx
        s2 += wx * x
    mu = s1 / W[r, s]
    ns = n_s[r, s]
    return -ns * mu, -ns * (s2 / W[r, s] - mu * mu)


@cuda.jit(device=True)
def refresh(data, state, r, tid, nt, sa, sb, sf):
    """Nothing to refresh: W_s is current after each move."""


@cuda.jit(device=True)
def terms(data, state, r, j, tid, nt, sa, sb, sf):
    """This thread's share of (g_j, h_j): its runs of column j (the static ``xy`` in thread 0's)."""
    indices, values, indicator, col_runs, run_start, run_stratum, stratum_ptr, exact_m, xy, c_s, n_s = data
    eta, w, W = state
    B = cuda.local.array(_WORK, float64)
    dB = cuda.local.array(_WORK, float64)
    d2B = cuda.local.array(_WORK, float64)
    g = xy[r, j] if tid == 0 else 0.0
    h = 0.0
    for k in range(col_runs[j] + tid, col_runs[j + 1], nt):
        dg, dh = run_terms(r, k, run_start, run_stratum, stratum_ptr, exact_m, indices, values, w, W, c_s, n_s, B,
                           dB, d2B)
        g += dg
        h += dh
    return g, h


@cuda.jit(device=True)
def gradient(data, state, r, j, tid, nt, sa, sb, sf):
    """This thread's share of g_j (a run's first derivative comes with its second)."""
    return terms(data, state, r, j, tid, nt, sa, sb, sf)[0]


@cuda.jit(device=True)
def move(data, state, r, j, step, tid, nt):
    """beta_j += step at this thread's runs: eta, w and W_s in row order, as the CPU move
    (w *= exp(step) for an indicator column, one exp, else exp(step x))."""
    indices, values, indicator, col_runs, run_start, run_stratum, stratum_ptr, exact_m, xy, c_s, n_s = data
    eta, w, W = state
    factor = math.exp(step)
    ind = indicator[j] != 0
    for k in range(col_runs[j] + tid, col_runs[j + 1], nt):
        s = run_stratum[k]
        for i in range(run_start[k], run_start[k + 1]):
            row = indices[i]
            x = float(values[i])
            eta[r, row] += step * x
            wo = float(w[r, row])
            w[r, row] = wo * (factor if ind else math.exp(step * x))
            W[r, s] += float(w[r, row]) - wo


sweep_kernel = compile_sweep(refresh, gradient, terms, move)
#: the full gradient, one block per (coefficient, replicate)
gradient_kernel = compile_gradient(gradient, terms)


class ConditionalDeviceDatafit(DeviceDatafit):
    """:class:`~riskset.models.conditional.ConditionalDatafit` with X and the state on the device.

    Replicate weights (:meth:`replicates`, :meth:`reweighted`) are given in Dataset row
    order, constant within each stratum (a weight per matched set / case), as for the
    CPU datafit's ``reweighted``.
    """

    family_name = "conditional"
    sweep_kernel = staticmethod(sweep_kernel)  # a dispatcher binds like a function: no self
    gradient_kernel = staticmethod(gradient_kernel)
    state_fields = ("eta", "w", "W")

    def __init__(self, cpu, dtype="float64", weights=None):
        #: what the device copies besides the design (:class:`~riskset.kernels.cpu.conditional.Device`)
        self.record = cpu.device_record()
        m = int(self.record.data.exact_m.max(initial=0))
        if m > MAX_EXACT_CASES:
            raise NotImplementedError(f"backend='gpu' computes the exact conditional logistic likelihood for matched "
                                      f"sets of at most {MAX_EXACT_CASES} cases; this data has a set with {m}: use "
                                      "ties='breslow' or backend='cpu'")
        super().__init__(cpu, dtype, weights)

    def _make_static(self):
        """Device copies of the record's kernel record and raw outcomes, and of the design's values
        (one per non-zero: the device kernels read no value shift)."""
        data = self.record.data
        stype = np.int32 if self.record.n_strata < 2**31 - 1 else np.int64
        return dict(indices=device_copy(data.indices.astype(self.itype)),
                    values=device_copy(self.design.full_values(self.dtype)),
                    indicator=device_copy(np.asarray(data.indicator, np.uint8)),
                    col_runs=device_copy(data.col_runs), run_start=device_copy(data.run_start),
                    run_stratum=device_copy(data.run_stratum.astype(stype)),
                    stratum_ptr=device_copy(data.stratum_ptr.astype(np.int64)),
                    exact_m=device_copy(data.exact_m.astype(np.int32)),
                    y_raw=device_copy(self.record.y_raw))

    def _rep(self):
        """Weight-dependent device arrays (R rows each) from each replicate's CPU record: c_s,
        n_s and the static gradient term xy."""
        if self._per_rep is None:
            records = [self._cpu_view(r).kernel_data() for r in range(self.n_rep)]
            self._per_rep = dict(c_s=device_copy(np.stack([d.c_s for d in records])),
                                 n_s=device_copy(np.stack([d.n_s for d in records])),
                                 xy=device_copy(np.stack([d.xy for d in records])))
        return self._per_rep

    def _allocate(self, state):
        wtype = np.float64 if self.record.data.exact_m.any() else self.dtype  # see the module docstring
        state.d["w"] = cuda.device_array((self.n_rep, self.n_rows), dtype=wtype)
        state.d["W"] = cuda.device_array((self.n_rep, self.record.n_strata), dtype=np.float64)

    def _sync(self, state):
        """Exact w and W from eta; returns the (R,) log-likelihoods."""
        s, p, d = self._dev_static(), self._rep(), state.d
        bx = row_blocks(self.record.n_strata, self.nt, 64)
        partial = cuda.device_array((self.n_rep, bx), dtype=np.float64)
        sync_kernel[(bx, self.n_rep), self.nt](d["eta"], d["w"], d["W"], s["y_raw"], p["c_s"], p["n_s"],
                                               s["stratum_ptr"], s["exact_m"], partial)
        return partial.copy_to_host().sum(axis=1)

    def _refresh(self, state):
        self._sync(state)

    def _loglik_all(self, state):
        return self._sync(state)  # recomputes w and W from eta, as the CPU loglik does

    def kernel_data(self):
        s, p = self._dev_static(), self._rep()
        return (s["indices"], s["values"], s["indicator"], s["col_runs"], s["run_start"], s["run_stratum"],
                s["stratum_ptr"], s["exact_m"], p["xy"], p["c_s"], p["n_s"])

    def _cpu_reweight(self, w):
        return self.cpu.reweighted(w)
