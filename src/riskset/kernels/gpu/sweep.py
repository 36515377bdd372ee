"""The persistent CCD sweep kernel, written once and specialized per family.

The device side of :mod:`riskset.core.sweep`: a family supplies four block-cooperative
device functions over a tuple ``data`` of static device arrays (and scalars) and a
tuple ``state`` of state device arrays, called by ``nt`` cooperating threads of which
this one is ``tid`` (r: the replicate)::

    refresh(data, state, r, tid, nt, sa, sb, sf)          make the aggregates current
                                                          (a no-op when they are)
    gradient(data, state, r, j, tid, nt, sa, sb, sf)      this thread's share of dl/dbeta_j
                                                          (None where no cheaper than terms)
    terms(data, state, r, j, tid, nt, sa, sb, sf)         this thread's share of (dl/dbeta_j,
                                                          d2l/dbeta_j^2)
    move(data, state, r, j, step, tid, nt)                beta_j += step at this thread's share

``sa``, ``sb`` (float64) and ``sf`` (int32) are the block's shared scratch arrays
(:data:`~riskset.kernels.gpu.device.MAX_THREADS` long) for the family's block scans;
a function that uses them leaves them free (synced) on return. :func:`compile_sweep`
builds the kernel ``sweep(data, state, coords, mask, beta, prior, radius, mode, fixed,
out, partial)`` which, for each coordinate j of ``coords`` with ``mask[r, j]``:

1. refreshes; a penalized coordinate at its prior center moves only if |g_j| > l1_j,
   which the block's reduction of ``gradient`` decides first (the CPU sweep's screen;
   without ``gradient`` the step of the g of ``terms`` is 0 there anyway);
2. reduces (g, h) of ``terms`` over the block;
3. takes the step :func:`riskset.core.step.prior_step_value` under the prior row
   ``prior[r, j]`` (l1, l2, center) and the trust-region half-width ``radius[r, j]``
   (the host's step, compiled for the device). Every thread computes it from the same
   totals (the same value, no broadcast); thread 0 stores beta and the half-width;
4. moves, and synchronizes before the next coordinate.

``mode`` 1 reports (g, h) of the (single) coordinate in ``out[r]`` without moving;
``mode`` 2 applies the given step ``fixed[r]`` (the solver's ``coordinate`` and
``move``). Two drivers run the same skeleton: one block per replicate (``r`` =
``blockIdx.x``; every family), and, for a single fit of a family whose functions are
row-parallel (the GLMs) or written with the grid scans of :mod:`.gridscan` (Cox), the
whole grid as one cooperating group (``grid=True``: ``tid``, ``nt`` span the grid,
reductions go through ``partial`` (2, 2, blocks) and a grid sync, and every block takes
the identical step).
"""
from __future__ import annotations

from numba import cuda, float64, int32

from riskset.core.step import CENTER, L1, L2, prior_step_value

from .blocks import block_sum2
from .device import MAX_THREADS
from .gridscan import grid_place, grid_sum2, grid_sync


def _block_driver():
    """(place, total2, barrier) of one block per replicate."""

    @cuda.jit(device=True)
    def place():
        """(replicate, thread, threads, whether this thread stores the step)."""
        tid = cuda.threadIdx.x
        return cuda.blockIdx.x, tid, cuda.blockDim.x, tid == 0

    @cuda.jit(device=True)
    def total2(sa, sb, a, b, partial, slot):
        """(sum a, sum b) over the block, in every thread."""
        block_sum2(sa, sb, a, b, cuda.threadIdx.x, cuda.blockDim.x)
        return sa[0], sb[0]

    @cuda.jit(device=True)
    def barrier():
        cuda.syncthreads()

    return place, total2, barrier


def _grid_driver():
    """(place, total2, barrier) of a single fit spread over the grid (cooperative launch)."""

    @cuda.jit(device=True)
    def place():
        tid, nt = grid_place()
        return 0, tid, nt, tid == 0

    @cuda.jit(device=True)
    def total2(sa, sb, a, b, partial, slot):
        return grid_sum2(a, b, partial, slot, sa, sb)

    return place, total2, grid_sync


def compile_sweep(refresh, gradient, terms, move, grid: bool = False):
    """The persistent sweep kernel for a family's device functions (see the module docstring)."""
    place, total2, barrier = _grid_driver() if grid else _block_driver()
    screen = gradient is not None  # a constant of the closure: Numba compiles one branch below

    @cuda.jit
    def sweep(data, state, coords, mask, beta, prior, radius, mode, fixed, out, partial):
        sa = cuda.shared.array(MAX_THREADS, float64)
        sb = cuda.shared.array(MAX_THREADS, float64)
        sf = cuda.shared.array(MAX_THREADS, int32)
        r, tid, nt, leader = place()
        for c in range(coords.shape[0]):
            j = coords[c]
            if mask[r, j] == 0:
                continue
            # read before any sync: the leader stores them after the reductions' syncs
            b = beta[r, j]
            l1 = prior[r, j, L1]
            center = prior[r, j, CENTER]
            rad = radius[r, j]
            step = 0.0
            if mode == 2:
                step = fixed[r]
            else:
                refresh(data, state, r, tid, nt, sa, sb, sf)
                if screen:
                    if mode == 0 and l1 > 0.0 and b == center:
                        g, _ = total2(sa, sb, gradient(data, state, r, j, tid, nt, sa, sb, sf), 0.0, partial, 0)
                        barrier()  # every thread has read the total before the scratch is reused
                        if abs(g) <= l1:
                            continue  # a coordinate at its center moves only if |g_j| > l1_j, whatever h_j
                g, h = terms(data, state, r, j, tid, nt, sa, sb, sf)
                g, h = total2(sa, sb, g, h, partial, 1)
                if mode == 1:
                    if leader:
                        out[r, 0] = g
                        out[r, 1] = h
                else:
                    step, new, rad = prior_step_value(g, h, b, l1, prior[r, j, L2], center, rad)
                    if leader and step != 0.0:
                        beta[r, j] = new
                        radius[r, j] = rad
            if step != 0.0:
                move(data, state, r, j, step, tid, nt)
            barrier()

    return sweep


def compile_gradient(gradient, terms):
    """The kernel ``gradient_kernel(data, state, out)`` of the full gradient: block (j, r) of a
    (P, R) grid sums column j's share of ``gradient`` (of ``terms`` where the family has no
    cheaper one) over its threads into ``out[r, j]``, from aggregates made current
    beforehand (the columns are independent: no refresh, no move)."""
    alone = gradient is not None  # a constant of the closure

    @cuda.jit
    def gradient_kernel(data, state, out):
        sa = cuda.shared.array(MAX_THREADS, float64)
        sb = cuda.shared.array(MAX_THREADS, float64)
        sf = cuda.shared.array(MAX_THREADS, int32)
        j = cuda.blockIdx.x
        r = cuda.blockIdx.y
        tid = cuda.threadIdx.x
        nt = cuda.blockDim.x
        if alone:
            g = gradient(data, state, r, j, tid, nt, sa, sb, sf)
        else:
            g, _ = terms(data, state, r, j, tid, nt, sa, sb, sf)
        block_sum2(sa, sb, g, 0.0, tid, nt)
        if tid == 0:
            out[r, j] = sa[0]

    return gradient_kernel
