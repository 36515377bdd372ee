"""The C allocator's handling of the arrays a fit allocates and frees again and again.

A fit at scale allocates N-vectors and per-slot arrays by the dozen per Newton step (a Cox
state at N = 1M: ~50 MB in 13 arrays, the linear predictor, w and the risk-set sums; a
Hessian-vector product's row vectors). glibc's malloc serves blocks above its mmap threshold
(128 KB, raised adaptively up to 32 MB) with fresh pages from the kernel and returns the top
of its heap once more than twice that is free, so the next state of the same size faults
every page in again (a large share of a state's cost at N = 1M: docs/performance.md).

:func:`keep_freed_memory` therefore serves blocks up to 32 MB (glibc's largest mmap
threshold) from the heap and keeps up to :data:`KEPT_BYTES` of freed heap for reuse. Called
once, when riskset is imported; it leaves the allocator alone where it is not glibc's, where
the process has already chosen (``MALLOC_MMAP_THRESHOLD_`` or ``MALLOC_TRIM_THRESHOLD_`` in
the environment, e.g. a Dask worker told to return memory), or where
``RISKSET_KEEP_FREED_MEMORY=0``.
"""
from __future__ import annotations

import ctypes
import os
import platform

#: Largest block served from the heap rather than fresh pages (glibc's largest mmap threshold) ...
HEAP_BLOCK_BYTES = 32 << 20
#: ... and the freed memory at the top of the heap kept for reuse before it goes back to the system.
KEPT_BYTES = 1 << 30

_M_TRIM_THRESHOLD = -1  # mallopt parameters (malloc.h)
_M_MMAP_THRESHOLD = -3


def keep_freed_memory(environ=os.environ) -> bool:
    """Tune glibc's malloc as the module docstring says; True if it did."""
    if environ.get("RISKSET_KEEP_FREED_MEMORY", "1") == "0":
        return False
    if "MALLOC_MMAP_THRESHOLD_" in environ or "MALLOC_TRIM_THRESHOLD_" in environ:
        return False
    if platform.system() != "Linux" or platform.libc_ver()[0] != "glibc":
        return False
    try:
        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError):
        return False
    mallopt.argtypes, mallopt.restype = [ctypes.c_int, ctypes.c_int], ctypes.c_int
    return bool(mallopt(_M_MMAP_THRESHOLD, HEAP_BLOCK_BYTES)) and bool(mallopt(_M_TRIM_THRESHOLD, KEPT_BYTES))
