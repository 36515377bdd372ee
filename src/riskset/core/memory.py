"""The C allocator's handling of the arrays a fit allocates and frees again and again.

A fit at scale allocates N-vectors and per-slot arrays by the dozen per Newton step (a Cox
state at N = 1M: ~50 MB in 13 arrays, the linear predictor, w and the risk-set sums; a
Hessian-vector product's row vectors). glibc's malloc serves blocks above its mmap threshold
(128 KB, raised adaptively up to 32 MB) with fresh pages from the kernel and returns the top
of its heap once more than twice that is free, so the next state of the same size faults
every page in again (a large share of a state's cost at N = 1M: docs/performance.md).

:func:`keep_freed_memory` therefore serves blocks up to 32 MB (glibc's largest mmap
threshold) from the heap and keeps up to :data:`KEPT_BYTES` of freed heap for reuse, also in
the arenas of other threads (:data:`TOP_PAD_BYTES`). Called once, when riskset is imported;
it leaves the allocator alone where it is not glibc's, where the process has already chosen
(``MALLOC_MMAP_THRESHOLD_``, ``MALLOC_TRIM_THRESHOLD_`` or ``MALLOC_TOP_PAD_`` in the
environment, e.g. a Dask worker told to return memory), or where
``RISKSET_KEEP_FREED_MEMORY=0``.

What is kept serves the call that freed it. :func:`returns_freed_memory` marks riskset's
top-level calls (``fit``, ``cross_validate``, ``bootstrap``, ...): when the outermost one
ends, the freed heap goes back to the system (glibc's ``malloc_trim``) if it is more than
:data:`RELEASED_ABOVE`, so that a study's next step starts from what the process holds, not
from the last step's high-water mark (the Fine-Gray step of the LEGEND-HTN benchmark started
holding 0.3 GB of the Cox step's freed heap).
"""
from __future__ import annotations

import ctypes
import functools
import os
import platform
import threading

#: Largest block served from the heap rather than fresh pages (glibc's largest mmap threshold) ...
HEAP_BLOCK_BYTES = 32 << 20
#: ... and the freed memory at the top of the heap kept for reuse before it goes back to the system.
KEPT_BYTES = 1 << 30
#: Padding of every heap extension. glibc gives a thread that allocates its own arena, a chain
#: of heaps of at most 64 MB each, and unmaps a heap whole once nothing in it is in use unless
#: the heap before it has less room than this padding (its ``heap_trim``; the trim threshold
#: does not apply): the arrays of the fits on replicate threads (a cross-validation's folds,
#: 50-100 MB each at N = 1M) took fresh pages again and again (900k page faults in a 10-fold x 2
#: Cox cross-validation at N = 1M on two threads, 53k on one). A heap's size, so no heap goes.
#: Only address space: pages are faulted in when first used.
TOP_PAD_BYTES = 64 << 20
#: The freed heap above which the end of a top-level call gives it back (less stays for the next
#: call: faulting it in again made a loop of small fits 10% slower).
RELEASED_ABOVE = 256 << 20

_M_TRIM_THRESHOLD = -1  # mallopt parameters (malloc.h)
_M_MMAP_THRESHOLD = -3
_M_TOP_PAD = -2


_tuned = False  # keep_freed_memory tuned the allocator: its kept heap is released after a call
_calls = 0      # riskset's top-level calls under way, in all threads
_calls_lock = threading.Lock()


def keep_freed_memory(environ=os.environ) -> bool:
    """Tune glibc's malloc as the module docstring says; True if it did."""
    global _tuned
    tuned = _tune(environ)
    _tuned = _tuned or tuned  # the allocator stays tuned
    return tuned


def _tune(environ) -> bool:
    if environ.get("RISKSET_KEEP_FREED_MEMORY", "1") == "0":
        return False
    if any(name in environ for name in ("MALLOC_MMAP_THRESHOLD_", "MALLOC_TRIM_THRESHOLD_", "MALLOC_TOP_PAD_")):
        return False
    if platform.system() != "Linux" or platform.libc_ver()[0] != "glibc":
        return False
    mallopt = _libc("mallopt", [ctypes.c_int, ctypes.c_int], ctypes.c_int)
    if mallopt is None:
        return False
    return (bool(mallopt(_M_MMAP_THRESHOLD, HEAP_BLOCK_BYTES)) and bool(mallopt(_M_TRIM_THRESHOLD, KEPT_BYTES))
            and bool(mallopt(_M_TOP_PAD, TOP_PAD_BYTES)))


def _libc(name: str, argtypes: list, restype):
    """The C library's function ``name``, typed, or None where the process's C library has none."""
    try:
        function = getattr(ctypes.CDLL(None), name)
    except (OSError, AttributeError):
        return None
    function.argtypes, function.restype = argtypes, restype
    return function


class _MallInfo2(ctypes.Structure):
    """glibc's ``struct mallinfo2`` (malloc.h), summed over every arena."""

    _fields_ = [(name, ctypes.c_size_t) for name in
                ("arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks", "fsmblks", "uordblks", "fordblks",
                 "keepcost")]


def freed_heap_bytes() -> int | None:
    """The free bytes that glibc's heaps hold (``mallinfo2().fordblks``, every arena), or None
    where it cannot say (not glibc, or older than 2.33)."""
    mallinfo2 = _libc("mallinfo2", [], _MallInfo2)
    return None if mallinfo2 is None else int(mallinfo2().fordblks)


def release_freed_memory() -> bool:
    """Give the freed heap that :func:`keep_freed_memory` keeps back to the system (glibc's
    ``malloc_trim(0)``: the free top of each heap and the free pages inside it) once it holds
    more than :data:`RELEASED_ABOVE`; True if memory was released. Nothing where the allocator
    was not tuned."""
    if not _tuned:
        return False
    freed = freed_heap_bytes()
    if freed is not None and freed <= RELEASED_ABOVE:
        return False
    trim = _libc("malloc_trim", [ctypes.c_size_t], ctypes.c_int)
    return trim is not None and bool(trim(0))


def returns_freed_memory(call):
    """Decorate a top-level call of riskset: when the outermost such call under way in the
    process ends (a ``cross_validate`` that refits calls ``fit``; both may run in threads),
    :func:`release_freed_memory`."""

    @functools.wraps(call)
    def top_level(*args, **kwargs):
        global _calls
        with _calls_lock:
            _calls += 1
        try:
            return call(*args, **kwargs)
        finally:
            with _calls_lock:
                _calls -= 1
                outermost = _calls == 0
            if outermost:
                release_freed_memory()

    return top_level
