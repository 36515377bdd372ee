"""CPU backend: ``numba.njit(parallel=True)`` with ``prange`` over tasks.

Everything is compiled with ``error_model="numpy"``: a division by zero in a
right-hand side gives inf/NaN (and the task is flagged) instead of raising
inside the parallel loop, and the divisions need no zero checks (about a
third faster).

The solver for a model is built once per process from the shared step math in
:mod:`riskset.ode.dopri`, and the compiled code is cached on disk
(``cache=True``) for the built-in models and for user right-hand sides
defined at the top level of a file. Numba keys the cache of a closure on a
pickle of its closure cells, which contain numba dispatchers whose pickle
holds a random per-process UUID; we give those dispatchers a deterministic
UUID (see :func:`_cache_key`) so that the key is stable across processes and
changes with the equations. The per-model closures also get distinct names,
because numba derives symbol names from ``__qualname__`` and two cached
libraries exposing equal symbols would be linked to each other. Closures
(right-hand sides defined inside functions) are compiled once per process.
"""

import hashlib
import marshal
import os
import re
import threading

import numba
import numpy as np
from numba import njit, prange

from riskset.core.jit import renamed

from . import dopri

_lock = threading.Lock()
_solvers = {}
INLINE = "always"


def _rename(fn, suffix):
    """Give the per-model closures distinct names (:func:`riskset.core.jit.renamed`; two
    cached libraries exposing equal symbol names would be linked to one another)."""
    return renamed(fn, suffix) if suffix else fn


def _make_jit(key, cache, inline="never"):
    """A decorator: ``njit`` plus a stable UUID (for disk caching)."""

    def deco(fn):
        if getattr(fn, "__closure__", None) is not None or \
                "<locals>" in fn.__qualname__:
            fn = _rename(fn, key or "user")
        d = njit(cache=cache, error_model="numpy", inline=inline)(fn)
        if key is not None:
            try:
                d._set_uuid(f"riskset.ode.cpu/{key}/{fn.__qualname__}")
            except Exception:  # pragma: no cover - numba internals changed
                pass
        return d

    return deco


def _build(model, cache_key):
    cache = cache_key is not None
    jit = _make_jit(cache_key, cache=False)
    rhs = jit(model.rhs)
    integrate_task = dopri.make_integrator(
        rhs, jit, model.n_states,
        jit_task=_make_jit(cache_key, cache=False, inline=INLINE))
    n_k = dopri.N_STAGES + 1
    n_s = model.n_states

    def run_chunk(P, Y0, t0, t_eval, rtol, atol, max_steps, idx, out, stats):
        n = n_s
        for k in prange(idx.shape[0]):
            i = idx[k]
            K = np.empty((n_k, n))
            Q = np.empty((4, n))
            y = np.empty(n)
            ynew = np.empty(n)
            ytmp = np.empty(n)
            integrate_task(P[i], Y0[i], t0, t_eval, rtol, atol, max_steps,
                           out[i], stats[i], K, Q, y, ynew, ytmp)

    run = njit(parallel=True, cache=cache, error_model="numpy")(
        _rename(run_chunk, cache_key or "user"))
    if cache_key is not None:
        try:
            run._set_uuid(f"riskset.ode.cpu/{cache_key}/run_chunk")
        except Exception:  # pragma: no cover
            pass
    return run


def _cache_key(model):
    """Stable key for the disk cache, or None when the model can't be cached.

    Built-in models and user right-hand sides defined at the top level of a
    source file are cached. The key holds the function's name, the number of
    states and a hash of its bytecode and of its file's size and
    modification time (numba's own rule for invalidating a cache: the
    compiled code also freezes the module globals the function reads).
    Closures (functions defined inside functions) are compiled per process.
    """
    fn = model.rhs
    code = getattr(fn, "__code__", None)
    qualname = getattr(fn, "__qualname__", "")
    if code is None or "<locals>" in qualname or "<lambda>" in qualname:
        return None
    h = hashlib.sha256(marshal.dumps(code))
    h.update(str(model.n_states).encode())
    try:
        st = os.stat(code.co_filename)
    except OSError:
        return None  # e.g. defined in an interactive session
    h.update(f"{st.st_size}:{st.st_mtime_ns}".encode())
    name = re.sub(r"\W", "_", f"{fn.__module__}_{qualname}")[-60:]
    return f"{name}_{model.n_states}_{h.hexdigest()[:12]}"


def get_solver(model):
    """Compiled ``run_chunk`` for ``model`` (built once per process)."""
    key = (model.rhs, model.n_states)
    with _lock:
        fn = _solvers.get(key)
        if fn is None:
            fn = _build(model, _cache_key(model))
            _solvers[key] = fn
    return fn


def run_tasks(model, P, Y0, t0, t_eval, rtol, atol, max_steps, idx, out,
              stats, chunk_size=None, pbar=None, schedule_chunk=4):
    """Integrate tasks ``idx`` (in that order), writing ``out``/``stats``.

    ``idx`` is split into chunks (one parallel region each) so that a
    progress bar can advance; inside a chunk numba schedules iterations
    dynamically in pieces of ``schedule_chunk`` tasks, which keeps both cores
    busy even when neighbouring tasks differ a lot in cost.
    """
    fn = get_solver(model)
    idx = np.array(idx, dtype=np.int64, order="C", copy=True)
    m = idx.shape[0]
    if m == 0:
        return
    if chunk_size is None or chunk_size <= 0:
        chunk_size = m
    with numba.parallel_chunksize(int(schedule_chunk)):
        for s in range(0, m, chunk_size):
            part = idx[s:s + chunk_size]
            fn(P, Y0, float(t0), t_eval, float(rtol), atol, int(max_steps),
               part, out, stats)
            if pbar is not None:
                pbar.update(part.shape[0])
