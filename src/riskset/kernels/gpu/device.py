"""Device availability, precision and launch geometry of the GPU backend.

``numba.cuda`` decides at import time whether it drives a real CUDA device or Numba's
CUDA simulator (``NUMBA_ENABLE_CUDASIM=1``: every kernel runs as Python threads on
the CPU, slowly, which is how the kernels are tested without hardware).
"""
from __future__ import annotations

import os
import sys
import threading
from contextlib import contextmanager

import numpy as np


def _restore_numpy_row_stack() -> None:
    """numba-cuda (0.30.4 and earlier) registers an overload of ``np.row_stack`` when it first
    compiles a kernel; NumPy 2.5 removed that alias of ``np.vstack``, and every kernel compile
    then fails with ``AttributeError`` (seen on an H200 with numpy 2.5.2). Put the alias back
    where it is missing, before any kernel is compiled."""
    if "row_stack" not in np.__dict__:
        np.row_stack = np.vstack


_restore_numpy_row_stack()

#: Largest block size; shared-memory arrays are sized by it (compile-time constant).
MAX_THREADS = 1024


def simulator_enabled() -> bool:
    from numba import config

    return bool(config.ENABLE_CUDASIM)


def require_device() -> None:
    """Raise ``RuntimeError`` naming the problem when no CUDA device can run the kernels."""
    if simulator_enabled():
        _lock_simulator_shared_arrays()
        _count_simulator_module_swaps()
        return
    try:
        from numba import cuda
    except Exception as err:  # pragma: no cover - numba always ships numba.cuda
        raise RuntimeError(f"backend='gpu' needs numba.cuda, which cannot be imported: {err}") from err
    reason = None
    try:
        ok = cuda.is_available()
    except Exception as err:  # broken driver installation
        ok, reason = False, str(err)
    if not ok:
        if reason is None:
            try:
                cuda.detect()
            except Exception as err:
                reason = str(err)
        reason = " ".join(reason.split()).rstrip(": ") if reason else ""
        detail = f" ({reason})" if reason else ""
        raise RuntimeError(
            "backend='gpu' needs a CUDA GPU, but numba.cuda found no usable CUDA driver or device"
            f"{detail}. Install an NVIDIA driver and the GPU extra (pip install 'riskset[gpu]', i.e. "
            "numba-cuda), or set NUMBA_ENABLE_CUDASIM=1 before starting Python to run the GPU kernels in "
            "Numba's CUDA simulator (slow; for testing); or use backend='cpu'.")


def device_copy(a, dtype=None):
    """A device copy of the host array ``a`` (as ``dtype``), handed to numba-cuda with canonical
    C strides. NumPy calls an array C-contiguous when a size-1 axis has stride 0 (``x[None, :]``,
    ``np.broadcast_to``), but numba-cuda's ``to_device`` then copies it one element at a time
    through a Python loop (``dummyarray.iter_contiguous_extent``): seconds per million rows
    (docs/performance.md, "Measurements behind the code's constants and paths")."""
    from numba import cuda

    a = np.ascontiguousarray(a, dtype=dtype)
    if a.size > 1 and 0 in a.strides:
        a = a.copy()  # a fresh array has canonical strides
    return cuda.to_device(a)


def state_dtype(dtype) -> np.dtype:
    """float64 (default) or float32 for the device state; accumulations stay float64."""
    dt = np.dtype(dtype)
    if dt not in (np.dtype(np.float64), np.dtype(np.float32)):
        raise ValueError(f"dtype must be 'float64' or 'float32', not {dtype!r}")
    return dt


def threads_per_block() -> int:
    """Threads of the per-replicate block (a power of two).

    ``RISKSET_GPU_THREADS`` overrides; defaults are 256 on a device and 4 in the
    simulator (every simulated thread is a Python thread).
    """
    env = os.environ.get("RISKSET_GPU_THREADS")
    nt = int(env) if env else (4 if simulator_enabled() else 256)
    if nt < 1 or nt > MAX_THREADS or nt & (nt - 1):
        raise ValueError(f"RISKSET_GPU_THREADS must be a power of two in 1..{MAX_THREADS}, not {nt}")
    return nt


def grid_blocks(nt: int) -> int:
    """Blocks of a cooperative whole-grid kernel of ``nt`` threads per block: one per
    multiprocessor (always co-resident), at most ``nt`` (the grid scans scan the block totals
    in one block). The simulator supports grid sync with one block only."""
    if simulator_enabled():
        return 1
    from numba import cuda

    return int(min(nt, cuda.get_current_device().MULTIPROCESSOR_COUNT))


def row_blocks(n: int, nt: int, cap: int = 1024) -> int:
    """Blocks per replicate for row-parallel (embarrassingly parallel) kernels."""
    if simulator_enabled():  # the simulator runs blocks one after another: one is enough
        return 1
    return max(1, min(cap, (n + nt - 1) // nt))


def _lock_simulator_shared_arrays() -> None:
    """Make the simulator's ``cuda.shared.array`` allocate a block's array once.

    Numba's simulator (numba.cuda.simulator.kernelapi.FakeCUDAShared) looks the array of
    a call site up in a dict and creates it when missing, without a lock: when the
    simulator threads of a block switch between the look-up and the insertion (likely
    on a loaded machine) they get different arrays, and the kernel computes garbage.
    This wraps the same look-up in a lock (call sites keyed by file and line, as there).
    """
    from numba.cuda.simulator import kernelapi

    shared = kernelapi.FakeCUDAShared
    if getattr(shared, "_riskset_locked", False):
        return
    lock = threading.Lock()
    unlocked = shared.array

    def array(self, shape, dtype):
        if shape == 0:  # dynamic shared memory: one buffer, nothing allocated
            return unlocked(self, shape, dtype)
        caller = sys._getframe(1)
        key = (caller.f_code.co_filename, caller.f_lineno)
        with lock:
            res = self._allocations.get(key)
            if res is None:
                if isinstance(dtype, kernelapi.types.Type):
                    dtype = kernelapi.numpy_support.as_dtype(dtype)
                res = self._allocations[key] = np.empty(shape, dtype)
        return res

    shared.array = array
    shared._riskset_locked = True


def _count_simulator_module_swaps() -> None:
    """Make the simulator's swap of ``numba.cuda`` in a device function's module last while any
    simulated thread runs in that module.

    Numba's simulator (numba.cuda.simulator.kernelapi.swapped_cuda_module) points a called
    device function's module globals named ``cuda`` to the launch's fake module and points
    them back when the call returns: while one simulator thread returns from a device
    function of a module, another thread still inside that module's functions (the family
    functions a generic sweep kernel of another module calls) finds the real ``numba.cuda``.
    This counts the calls in progress per module (under a lock) and points the globals back
    when the last one returns.
    """
    from numba import cuda
    from numba.cuda.simulator import kernel

    if getattr(kernel, "_riskset_counted", False):
        return
    lock = threading.Lock()
    active = {}  # id(module globals) -> [calls in progress, the original bindings]

    @contextmanager
    def swapped_cuda_module(fn, fake_cuda_module):
        globs = fn.__globals__
        with lock:
            entry = active.get(id(globs))
            if entry is None:
                orig = {k: v for k, v in globs.items() if v is cuda}
                globs.update((k, fake_cuda_module) for k in orig)
                entry = active[id(globs)] = [0, orig]
            entry[0] += 1
        try:
            yield
        finally:
            with lock:
                entry[0] -= 1
                if entry[0] == 0:
                    globs.update(entry[1])
                    del active[id(globs)]

    kernel.swapped_cuda_module = swapped_cuda_module
    kernel._riskset_counted = True
