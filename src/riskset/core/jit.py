"""Compiled closures that Numba can cache on disk.

Numba keys the disk cache of a closure on its bytecode and a pickle of its closure
cells. Cells holding compiled functions pickle with each function's UUID, random per
process, and with its Python function, whose globals bring the compiled functions it
calls (with theirs) and the intrinsics it uses (e.g.
:func:`riskset.core.prefetch.prefetch`, likewise pickled with a random UUID), so the
key would change every run and every process would compile the sweeps again (seconds
per family). :func:`stable_uuid` gives a compiled function, and every compiled function and
intrinsic it reaches through its globals, a UUID from its qualified name and its source
file's size and modification time (Numba's own rule for when a cache is stale): stable
across processes, new when a source changes, so a sweep that inlines a changed family
kernel (or step, or intrinsic) recompiles.
:func:`closure_jit` also gives each closure a distinct name, since Numba derives symbol
names from ``__qualname__`` and two cached libraries exposing one symbol would be
linked to each other.

Kernels take named records (NamedTuples), so a cache index names their classes. Numba
unpickles an index before it checks that the index is fresh: an index written by an
older riskset whose record class has since moved would raise instead of reading as
stale. :func:`tolerant_cache_index` (applied on import) reads such an index as empty, as
Numba reads one of another Numba version: the function is compiled again and the index
rewritten.
"""
from __future__ import annotations

import os
import pickle
import types

from numba import njit
from numba.core.caching import IndexDataCacheFile
from numba.core.dispatcher import Dispatcher
from numba.core.extending import _Intrinsic

OPTIONS = dict(cache=True, nogil=True, error_model="numpy")


def stable_uuid(dispatcher, _seen=None) -> None:
    """Give a compiled function, and the compiled functions and intrinsics it calls,
    deterministic UUIDs (see the module docstring)."""
    seen = set() if _seen is None else _seen
    if id(dispatcher) in seen:
        return
    seen.add(id(dispatcher))
    fn = dispatcher.py_func
    _set_stable_uuid(dispatcher, fn)
    for name in _global_names(fn.__code__):
        callee = fn.__globals__.get(name)
        if isinstance(callee, Dispatcher):
            stable_uuid(callee, seen)
        elif isinstance(callee, _Intrinsic):
            _set_stable_uuid(callee, callee._defn)


def _set_stable_uuid(compiled, fn) -> None:
    """The UUID of ``compiled`` (a dispatcher or an intrinsic) from its Python function ``fn``."""
    try:
        st = os.stat(fn.__code__.co_filename)
        stamp = f"{st.st_size}:{st.st_mtime_ns}"
    except OSError:  # pragma: no cover - no source file
        stamp = "?"
    try:
        compiled._set_uuid(f"riskset/{fn.__module__}.{fn.__qualname__}/{stamp}")
    except AssertionError:  # already set (a kernel shared by two families)
        pass


def _global_names(code) -> set:
    """Names a code object (and the code nested in it) may read as globals."""
    names = set(code.co_names)
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            names |= _global_names(const)
    return names


def renamed(fn, suffix: str):
    """A copy of the function ``fn`` named ``<name>__<suffix>`` (its closure shared): closures
    compiled from one factory get distinct symbol names."""
    new = types.FunctionType(fn.__code__, fn.__globals__, f"{fn.__name__}__{suffix}", fn.__defaults__,
                             fn.__closure__)
    new.__qualname__ = f"{fn.__qualname__}__{suffix}"
    new.__module__ = fn.__module__
    new.__doc__ = fn.__doc__
    return new


def closure_jit(fn, suffix: str, **options):
    """``njit`` of the closure ``fn`` :func:`renamed` with ``suffix``, with a stable UUID."""
    dispatcher = njit(**{**OPTIONS, **options})(renamed(fn, suffix))
    stable_uuid(dispatcher)
    return dispatcher


def tolerant_cache_index(cache_file_class=IndexDataCacheFile) -> None:
    """Make a Numba cache index that cannot be unpickled (it names a class or module no longer
    there: a stale cache) read as empty instead of raising (see the module docstring)."""
    load = cache_file_class._load_index
    if getattr(load, "tolerant", False):
        return

    def _load_index(self):
        try:
            return load(self)
        except (AttributeError, ImportError, EOFError, pickle.UnpicklingError):
            return {}

    _load_index.tolerant = True
    cache_file_class._load_index = _load_index


tolerant_cache_index()
