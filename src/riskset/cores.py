"""How many CPU threads riskset's work may use: by default every core this process may run on.

The count is bounded by what the process is allowed, not by the host: its CPU affinity
(``taskset``, a batch scheduler's cpuset) and its cgroup CPU quota (a container's
``--cpus``), whichever is smaller. ``RISKSET_NUM_THREADS`` in the environment replaces that
default; an explicit ``n_jobs`` (``--jobs``) replaces both.

BLAS (NumPy's linear algebra: the Newton polish's Hessian blocks) belongs to the same
budget: :func:`blas_threads` limits it while a fit or a batch of fits runs, so that a pool of
k fitting threads never runs k BLAS pools of the whole machine. Inside one fit BLAS runs on
one thread, and on the fit's threads only for a dense block of
:data:`THREADED_BLAS_MIN` rows or more (:func:`dense_algebra`): OpenBLAS's workers spin for a
while after every call, and a spinning worker takes a core from the fit's compiled kernels
(docs/performance.md, "Every core").
"""
from __future__ import annotations

import math
import os
from contextlib import contextmanager
from functools import lru_cache

import numpy as np

import numba

from riskset import validation as check
from riskset.exceptions import InputError

#: The environment variable that sets the default number of threads.
ENV = "RISKSET_NUM_THREADS"

#: Fewest rows of a dense block whose factorization BLAS runs on the fit's threads: below it a
#: second thread gains nothing (a symmetric eigendecomposition of 400 rows: 15.3 ms on one
#: thread, 14.3 on two; of 800: 97 and 68 ms), while the worker it woke spins after the call.
THREADED_BLAS_MIN = 800

#: Least work (stored non-zeros + rows of the data) of one fit whose kernels run on ``n_jobs``
#: threads; a smaller fit runs on one. Its kernels take microseconds, and each parallel region
#: wakes a team whose workers then spin through the Python between kernels, for no speed
#: (docs/performance.md, "Parallel preparation, small fits on one thread").
THREADED_FIT_MIN = 1 << 18


def usable_cores() -> int:
    """The cores this process may run on: its CPU affinity, bounded by its cgroup CPU quota.

    >>> usable_cores() >= 1
    True
    """
    try:
        cores = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # not Linux
        cores = os.cpu_count() or 1
    quota = cgroup_cpu_quota()
    return max(1, min(cores, quota) if quota else cores)


def cgroup_cpu_quota(root: str = "/sys/fs/cgroup") -> int | None:
    """The CPU quota of this process's cgroup in whole cores (rounded up), or None without one.

    cgroup v2 writes it in ``cpu.max`` as ``QUOTA PERIOD`` (``max`` when unlimited); v1 in
    ``cpu/cpu.cfs_quota_us`` (-1 when unlimited) and ``cpu/cpu.cfs_period_us``.
    """
    def read(path):
        try:
            with open(os.path.join(root, path)) as f:
                return f.read().split()
        except OSError:
            return None

    v2 = read("cpu.max")
    if v2 and len(v2) == 2 and v2[0] != "max":
        quota, period = float(v2[0]), float(v2[1])
    else:
        q, p = read("cpu/cpu.cfs_quota_us"), read("cpu/cpu.cfs_period_us")
        if not q or not p or float(q[0]) <= 0:
            return None
        quota, period = float(q[0]), float(p[0])
    return max(1, math.ceil(quota / period)) if period > 0 else None


def default_threads() -> int:
    """``RISKSET_NUM_THREADS`` if set (a positive integer, else InputError), else :func:`usable_cores`."""
    value = os.environ.get(ENV, "").strip()
    if not value:
        return usable_cores()
    try:
        return check.positive_int(ENV, int(value))
    except ValueError:
        raise InputError(f"{ENV} must be a positive integer, got {value!r}") from None


def fit_kernel_threads(n_jobs: int, work: int | None) -> int:
    """The threads of one fit's kernels: ``n_jobs``, or one where the fit's ``work`` (stored
    non-zeros + rows; None: not known) is below :data:`THREADED_FIT_MIN`.

    >>> fit_kernel_threads(8, 1_000), fit_kernel_threads(8, 10_000_000), fit_kernel_threads(8, None)
    (1, 8, 8)
    """
    return 1 if work is not None and work < THREADED_FIT_MIN else n_jobs


def resolve_jobs(n_jobs) -> int:
    """The threads of an ``n_jobs`` argument: None or -1 (the default: :func:`default_threads`),
    or a positive integer taken as given.

    >>> resolve_jobs(3)
    3
    >>> resolve_jobs(None) == resolve_jobs(-1) >= 1
    True
    """
    if n_jobs is None or (isinstance(n_jobs, (int, np.integer)) and not isinstance(n_jobs, bool) and n_jobs == -1):
        return default_threads()
    return check.positive_int("n_jobs (None or -1: every usable core)", n_jobs)


@lru_cache(maxsize=1)
def _blas_controller():
    import scipy.linalg  # noqa: F401  (SciPy's own BLAS, loaded before the controller looks)
    from threadpoolctl import ThreadpoolController

    return ThreadpoolController()


@contextmanager
def blas_threads(n: int):
    """Inside: NumPy's BLAS uses at most ``n`` threads (process-wide; restored after)."""
    with _blas_controller().limit(limits=int(n), user_api="blas"):
        yield


@contextmanager
def dense_algebra(rows: int):
    """Inside: BLAS runs on this thread's kernel threads (``numba.get_num_threads()``: a fit's
    ``n_jobs``, one in a worker of a replicate pool) where a dense block of ``rows`` rows is
    worth them (:data:`THREADED_BLAS_MIN`); else as it was (one thread inside a fit)."""
    threads = numba.get_num_threads()
    if rows < THREADED_BLAS_MIN or threads == 1:
        yield
        return
    with blas_threads(threads):
        yield
