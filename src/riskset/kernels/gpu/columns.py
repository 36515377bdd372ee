"""Products of the device X (CSC) with vectors on a set of columns: the device side of
:class:`riskset.core.products.column_products.ColumnProducts` for the Newton polish of a single fit.

Both kernels give one block (``block_of`` the grid, strided) to each listed column, its
threads strided over the column's non-zeros:

* :func:`scatter_columns`: ``out[i] += sum_c x_i,cols[c] b[c]`` (atomic adds: ``X_A b``);
* :func:`column_dots`: ``out[c] = (sum_i x_i,cols[c] v_i, sum_i x_i,cols[c]^2 v_i)``
  (``X_A' v`` and ``X_A^2' v``, block reductions);

and :func:`scale_rows` multiplies a row vector by row weights (grid-stride).
"""
from numba import cuda, float64

from .blocks import block_sum2
from .device import MAX_THREADS


@cuda.jit(device=True)
def scatter_block(indptr, indices, values, cols, b, out, bx, nb, tid, nt):
    """out[0, i] += x_ij b[c] for the columns j = cols[c] of this block (c = bx, bx + nb, ...)."""
    for c in range(bx, cols.shape[0], nb):
        j = cols[c]
        bj = b[c]
        for k in range(indptr[j] + tid, indptr[j + 1], nt):
            cuda.atomic.add(out, (0, indices[k]), float(values[k]) * bj)


@cuda.jit
def scatter_columns(indptr, indices, values, cols, b, out):
    """out[0] += X_cols b (the caller sets out's start: zeros, or the offset)."""
    scatter_block(indptr, indices, values, cols, b, out, cuda.blockIdx.x, cuda.gridDim.x, cuda.threadIdx.x,
                  cuda.blockDim.x)


@cuda.jit
def column_dots(indptr, indices, values, cols, v, out):
    """out[c] = (x_j' v[0], (x_j^2)' v[0]) for j = cols[c], one block per column."""
    sa = cuda.shared.array(MAX_THREADS, float64)
    sb = cuda.shared.array(MAX_THREADS, float64)
    tid = cuda.threadIdx.x
    nt = cuda.blockDim.x
    for c in range(cuda.blockIdx.x, cols.shape[0], cuda.gridDim.x):
        j = cols[c]
        a = 0.0
        a2 = 0.0
        for k in range(indptr[j] + tid, indptr[j + 1], nt):
            x = float(values[k])
            xv = x * v[0, indices[k]]
            a += xv
            a2 += x * xv
        block_sum2(sa, sb, a, a2, tid, nt)
        if tid == 0:
            out[c, 0] = sa[0]
            out[c, 1] = sb[0]
        cuda.syncthreads()  # every thread is past the totals before the next column's sums


@cuda.jit
def scale_rows(u, weights):
    """u[0] *= weights[0], elementwise."""
    for i in range(cuda.grid(1), u.shape[1], cuda.gridsize(1)):
        u[0, i] *= weights[0, i]
