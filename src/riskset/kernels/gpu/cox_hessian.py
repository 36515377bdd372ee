"""Cox on the device, the Newton polish of a single fit: the per-row hazard terms v
(``g = gx0 - X' v``; the first Hessian term is ``-X' diag(v) X``) and, by a cooperative
launch over the whole grid, the row weights z of a Hessian-vector product
``H_AA b = X_A' z`` in O(nnz_A + N + n_slots). The device side of
:func:`riskset.kernels.cpu.cox_hessian.row_hazard_terms` and
:func:`riskset.kernels.cpu.cox_hessian.hessian_vector_rows`.
"""
from __future__ import annotations

from numba import cuda, float64, int32

from .columns import scatter_block
from .device import MAX_THREADS
from .gridscan import grid_place, grid_segscan2, grid_sync


@cuda.jit(device=True)
def row_hazard(i, efron, w, ks, ke, event, A1c, R1):
    """v_i of :func:`riskset.kernels.cpu.cox_hessian.row_hazard_terms` (R = 1): g = gx0 - X' v and the
    first Hessian term is -X' diag(v) X."""
    wi = float(w[0, i])
    v = wi * (A1c[0, ke[i]] - A1c[0, ks[i]])
    if efron and event[i] != 0:
        v -= wi * R1[0, ke[i] - 1]
    return v


@cuda.jit
def row_hazards_kernel(efron, w, ks, ke, event, A1c, R1, v):
    for i in range(cuda.grid(1), w.shape[1], cuda.gridsize(1)):
        v[0, i] = row_hazard(i, efron, w, ks, ke, event, A1c, R1)


@cuda.jit
def hessian_rows_kernel(has_start, efron, indptr, indices, values, cols, b, ks, ke, event, w, A1c, R1, Q2, R2, T2,
                        slot_first, slot_last, u, U1, Cn, E1u, z, gpart):
    """Row weights z with ``H_AA b = X_A' z`` for the single fit over the whole grid
    (cooperative launch): :func:`riskset.kernels.cpu.cox_hessian.hessian_vector_rows` step by step,
    u = X_A b by atomic adds, its slot sums by atomic adds, the risk-set sums U1 (and the
    entries after each slot) by exclusive reverse grid scans, the slot terms c (and Efron's
    e), the exclusive forward grid scan of c, then per row
    ``z = -v u + w (C[ke] - C[ks]) + event w e[ke-1]``."""
    sv = cuda.shared.array(MAX_THREADS, float64)
    sf = cuda.shared.array(MAX_THREADS, int32)
    sb = cuda.shared.array(MAX_THREADS, float64)
    tid, nt = grid_place()
    n = w.shape[1]
    ns = U1.shape[1]
    for i in range(tid, n, nt):
        u[0, i] = 0.0
    for p in range(tid, ns, nt):
        U1[0, p] = 0.0
        Cn[0, p] = 0.0
        E1u[0, p] = 0.0
    grid_sync()
    scatter_block(indptr, indices, values, cols, b, u, cuda.blockIdx.x, cuda.gridDim.x, cuda.threadIdx.x,
                  cuda.blockDim.x)
    grid_sync()
    for i in range(tid, n, nt):
        wu = float(w[0, i]) * u[0, i]
        cuda.atomic.add(U1, (0, ke[i]), wu)
        if has_start:
            cuda.atomic.add(Cn, (0, ks[i]), wu)
        if efron and event[i] != 0:
            cuda.atomic.add(E1u, (0, ke[i] - 1), wu)
    grid_sync()
    grid_segscan2(U1, Cn, U1, Cn, 0, 0, ns, has_start, slot_last, 0, 1, True, True, gpart, 0, sv, sb, sf)
    grid_sync()
    for p in range(tid, ns, nt):
        at_risk = U1[0, p]  # sum of w u over the rows at risk at slot p
        if has_start:
            at_risk -= Cn[0, p]
        c = Q2[0, p] * at_risk
        if efron:
            e = E1u[0, p]
            c -= R2[0, p] * e
            E1u[0, p] = T2[0, p] * e - R2[0, p] * at_risk
        Cn[0, p] = c
    grid_sync()
    grid_segscan2(Cn, Cn, Cn, Cn, 0, 0, ns, False, slot_first, 0, 1, False, True, gpart, 1, sv, sb, sf)
    grid_sync()
    for i in range(tid, n, nt):
        wi = float(w[0, i])
        zi = wi * (Cn[0, ke[i]] - Cn[0, ks[i]]) - row_hazard(i, efron, w, ks, ke, event, A1c, R1) * u[0, i]
        if efron and event[i] != 0:
            zi += wi * E1u[0, ke[i] - 1]
        z[0, i] = zi
