"""GPU backend: a Numba-CUDA kernel, one task per thread.

The kernel is built from the same step math as the CPU backend
(:func:`riskset.ode.dopri.make_integrator` with ``cuda.jit(device=True)``),
with the work arrays, parameters and initial state in thread-local arrays
(``cuda.local.array``; the number of states is a compile-time constant of
each model's kernel, so they can live in registers). The output buffer is
laid out ``(time, state, task)`` on the device so that the threads of a warp
write neighbouring addresses; it is transposed back on the host.

Threads are given tasks in the order of ``idx``: with task bundling the tasks
are sorted by predicted step count, so the 32 threads of a warp integrate
tasks of similar length and idle less (see :mod:`riskset.ode.bundling`).

Without a CUDA GPU the kernel runs under numba's CUDA simulator when the
environment variable ``NUMBA_ENABLE_CUDASIM=1`` is set *before* numba is
imported (slow: plain Python, one OS thread per CUDA thread; for tests on
small inputs only). Otherwise :func:`check_available` raises RuntimeError.
(In the simulator the right-hand side runs as plain Python, so a division
by zero raises ZeroDivisionError there instead of giving inf/NaN as on a
GPU or the CPU backend.)
"""

import threading

import numpy as np
from numba import cuda, float64  # module-level: the simulator swaps `cuda`

from . import dopri

_lock = threading.Lock()
_kernels = {}

THREADS_PER_BLOCK = 64
SIM_THREADS_PER_BLOCK = 8


def simulator_enabled():
    from numba import config

    return bool(getattr(config, "ENABLE_CUDASIM", 0))


def check_available():
    """Raise RuntimeError unless a CUDA GPU or the CUDA simulator is usable."""
    if simulator_enabled():
        return
    try:
        ok = cuda.is_available()
    except Exception:  # pragma: no cover
        ok = False
    if not ok:
        raise RuntimeError(
            "backend='gpu': no CUDA GPU is available (numba.cuda.is_available()"
            " is False) and the CUDA simulator is not enabled. Use "
            "backend='cpu', or set NUMBA_ENABLE_CUDASIM=1 before importing "
            "numba to run the kernel in the (slow) simulator.")


def _build(model):
    jit = cuda.jit(device=True)
    rhs = jit(model.rhs)
    integrate_task = dopri.make_integrator(rhs, jit, model.n_states)
    n = model.n_states
    n_p = model.n_params
    n_pl = max(1, n_p)
    n_k = dopri.N_STAGES + 1

    @cuda.jit
    def kernel(P, Y0, t0, t_eval, rtol, atol, max_steps, out_t, stats):
        # out_t is (n_times, n_states, n_tasks): at a given output time and
        # state, neighbouring threads write neighbouring addresses
        i = cuda.grid(1)
        if i < P.shape[0]:
            p = cuda.local.array(n_pl, float64)  # parameters in registers
            for k in range(n_p):
                p[k] = P[i, k]
            y0 = cuda.local.array(n, float64)
            for j in range(n):
                y0[j] = Y0[i, j]
            K = cuda.local.array((n_k, n), float64)
            Q = cuda.local.array((4, n), float64)
            y = cuda.local.array(n, float64)
            ynew = cuda.local.array(n, float64)
            ytmp = cuda.local.array(n, float64)
            integrate_task(p[:n_p], y0, t0, t_eval, rtol, atol, max_steps,
                           out_t[:, :, i], stats[i], K, Q, y, ynew, ytmp)

    return kernel


def get_kernel(model):
    key = (model.rhs, model.n_states, model.n_params)
    with _lock:
        kern = _kernels.get(key)
        if kern is None:
            kern = _build(model)
            _kernels[key] = kern
    return kern


def run_tasks(model, P, Y0, t0, t_eval, rtol, atol, max_steps, idx, out,
              stats, chunk_size=None, pbar=None, threads_per_block=None):
    """Integrate tasks ``idx`` on the GPU; thread ``k`` of a launch takes
    task ``idx[chunk_start + k]``, so neighbouring threads (a warp) take
    neighbouring entries of ``idx``. Results are scattered back into
    ``out``/``stats`` in the caller's task order."""
    check_available()
    kern = get_kernel(model)
    idx = np.ascontiguousarray(idx, dtype=np.int64)
    m = idx.shape[0]
    if m == 0:
        return
    sim = simulator_enabled()
    tpb = threads_per_block or (SIM_THREADS_PER_BLOCK if sim
                                else THREADS_PER_BLOCK)
    if chunk_size is None or chunk_size <= 0:
        chunk_size = m
    d_te = cuda.to_device(np.ascontiguousarray(t_eval, dtype=np.float64))
    d_atol = cuda.to_device(np.ascontiguousarray(atol, dtype=np.float64))
    # one launch per chunk; the chunk's rows are gathered on the host so that
    # thread k integrates task part[k] and device memory stays O(chunk)
    for s in range(0, m, chunk_size):
        part = idx[s:s + chunk_size]
        d_P = cuda.to_device(np.ascontiguousarray(P[part], dtype=np.float64))
        d_Y0 = cuda.to_device(np.ascontiguousarray(Y0[part],
                                                   dtype=np.float64))
        d_out = cuda.device_array(out.shape[1:] + (part.shape[0],),
                                  dtype=np.float64)
        d_stats = cuda.device_array((part.shape[0], stats.shape[1]),
                                    dtype=np.int64)
        blocks = (part.shape[0] + tpb - 1) // tpb
        kern[blocks, tpb](d_P, d_Y0, float(t0), d_te, float(rtol), d_atol,
                          int(max_steps), d_out, d_stats)
        out[part] = d_out.copy_to_host().transpose(2, 0, 1)
        stats[part] = d_stats.copy_to_host()
        if pbar is not None:
            pbar.update(part.shape[0])
