"""What the risk-set families (Cox, Fine-Gray) share on the device: the move of one
non-zero's weight, the stratum shifts of an exact state (``w = c exp(eta - shift)``, as the
CPU's :func:`~riskset.kernels.cpu.cox_rows.stratum_shifts`) and :class:`RiskSetDeviceDatafit`,
their launches and grid scratch.
"""
from __future__ import annotations

import math
import os

import numpy as np
from numba import cuda

from .base import DeviceDatafit
from .device import grid_blocks, simulator_enabled


@cuda.jit(device=True)
def move_weight(r, row, x, step, factor, ind, eta, w):
    """beta_j += step at one non-zero x of replicate r: eta += step x and w *= exp(step x)
    (``factor`` = exp(step) for an indicator column, one exp per move as on the CPU);
    returns the change of the stored w."""
    eta[r, row] += step * x
    wo = float(w[r, row])
    if ind:
        w[r, row] = wo * factor
    else:
        w[r, row] = wo * math.exp(step * x)
    return float(w[r, row]) - wo


@cuda.jit(device=True)
def reset_shifts(r, shift, fill, tid, nt):
    """shift[r, s] = fill where it is -inf (``fill`` -inf: every s), at this thread's strata."""
    for s in range(tid, shift.shape[1], nt):
        if fill == -math.inf or shift[r, s] == -math.inf:
            shift[r, s] = fill


@cuda.jit(device=True)
def max_shifts(r, eta, cw, row_stratum, shift, tid, nt):
    """shift[r, s] = max(shift[r, s], eta of this thread's rows of positive weight in stratum s):
    one atomic max per run of the thread's rows in one stratum (rows are sorted by stratum).
    Between :func:`reset_shifts` to -inf and to 0 (for strata without such a row), the CPU's
    :func:`~riskset.kernels.cpu.cox_rows.stratum_shifts`."""
    cur = -1
    top = -math.inf
    for i in range(tid, eta.shape[1], nt):
        if cw[r, i] > 0:
            s = row_stratum[i]
            e = eta[r, i]
            if s != cur:
                if cur >= 0:
                    cuda.atomic.max(shift, (r, cur), top)
                cur = s
                top = e
            elif e > top:
                top = e
    if cur >= 0:
        cuda.atomic.max(shift, (r, cur), top)


class RiskSetDeviceDatafit(DeviceDatafit):
    """What the risk-set families (Cox, Fine-Gray) share on the device: one block per
    replicate (the slot scans of a refresh run within it) or, for a single fit, the whole
    grid with its scratch arrays (:meth:`_allocate_grid_scratch`); replicate weights given in
    Dataset row order, as for the CPU datafit's ``reweighted``; :meth:`_cpu_reweight` is the
    CPU view of one weighting."""

    def __init__(self, cpu, dtype="float64", weights=None):
        super().__init__(cpu, dtype, weights)
        # On a device use the largest block (fewer chunks per scan), falling back to 256
        # threads if the kernel needs too many registers for 1024.
        if not simulator_enabled() and not os.environ.get("RISKSET_GPU_THREADS"):
            self.nt = 1024

    def _launch(self, kernel, *args):
        try:
            kernel[self.n_rep, self.nt](*args)
        except Exception:
            if simulator_enabled() or self.nt <= 256:
                raise
            self.nt = 256  # e.g. CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES at 1024 threads
            kernel[self.n_rep, self.nt](*args)

    def _allocate_grid_scratch(self, state):
        """``gpart`` and ``tmp`` of the whole-grid kernels: the grid scans' block totals (four
        slots) and a column's scanned values (two rows); placeholders where the fit has no grid."""
        if self._grid():
            nnz = int(np.diff(self.design.indptr).max(initial=1))
            state.d["gpart"] = cuda.device_array((4, 3, grid_blocks(self.nt)), dtype=np.float64)
            state.d["tmp"] = cuda.device_array((2, max(nnz, 1)), dtype=np.float64)
        else:
            state.d["gpart"] = cuda.device_array((1, 1, 1), dtype=np.float64)
            state.d["tmp"] = cuda.device_array((1, 1), dtype=np.float64)

    def _loglik_all(self, state):
        self._refresh(state)  # exact recomputation from eta, as the CPU datafit does
        return state.d["ll"].copy_to_host()

    def _cpu_reweight(self, w):
        """The CPU datafit with case weights ``w`` (Dataset row order), sharing X and the sort."""
        return self.cpu.reweighted(w)
