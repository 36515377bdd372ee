"""Where the coordinate-descent sweeps run, the CPU or a CUDA GPU, decided in one place.

A :class:`Backend` is validated once (:meth:`Backend.of`) and gives ``riskset.fit``, the
selection tools and the profile-likelihood searches the operations that differ between
the two (docs/architecture.md, "Replicates" and "GPU backend"):

* :meth:`~Backend.prepare`: the datafit the solver sweeps, the prepared CPU datafit
  itself or its device copy (X and the state on the device);
* :meth:`~Backend.replicates`: R row weightings of it as one
  :class:`~riskset.core.replicates.ReplicateBatch`, on the CPU one reweighted view per
  replicate (optionally swept on a pool of threads), on the GPU one device batch
  (state R x N on the device, one kernel launch per sweep for all of them);
* :meth:`~Backend.repeated`: R copies of it (the points of a profile likelihood);
* how replicate work is split (:attr:`~Backend.batch_size`, :meth:`~Backend.threads`,
  :meth:`~Backend.check_executor`) and whether the device is usable here
  (:meth:`~Backend.problem`);
* the threads of one fit's compiled kernels (:meth:`~Backend.fit_threads`).

Threads (``n_jobs``; by default every core the process may use, :mod:`riskset.cores`), the
contract: numba's thread count is per calling thread. Inside
:meth:`~Backend.fit_threads` the thread that runs a fit gives its ``@njit(parallel=True)``
kernels ``n_jobs`` threads (``numba.get_num_threads()``); the workers of a replicate pool
(:meth:`~Backend.threads`, :func:`serial_kernel_pool`) give theirs one, so k Python threads
never run k x n_jobs kernel threads. A parallel kernel splits its work into blocks fixed by
the data, never by the thread count, so that its result is the same on 2 or 16 threads; one
whose blocked form costs more work than its serial code runs the serial code on one
thread (the caller reads ``numba.get_num_threads()`` in Python and passes it: a compiled
read keeps a function out of Numba's disk cache). BLAS (the Hessian blocks) is held to the same
count: one thread in each worker of a replicate pool, and in one fit one thread, or ``n_jobs``
for a dense block large enough to pay for them (:func:`riskset.cores.dense_algebra`).

No other module outside :mod:`riskset.kernels` imports the GPU kernels; they are imported
only when a GPU backend is used, so ``import riskset`` never loads ``numba.cuda``.
"""
from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Callable, ClassVar

import numba
import numpy as np

from riskset import validation as check
from riskset.cores import blas_threads, fit_kernel_threads, resolve_jobs
from riskset.core.interface import Datafit
from riskset.core.replicates import ReplicateBatch, ViewReplicates


@dataclass(frozen=True)
class Backend:
    """Where the sweeps run (``name``), the precision of the device state (``dtype``) and the
    CPU threads (``n_jobs``): of one fit's kernels, or of the replicate sweeps (each serial).

    >>> Backend.of("cpu", n_jobs=2)
    Backend(name='cpu', dtype='float64', n_jobs=2)
    >>> Backend.of("tpu")
    Traceback (most recent call last):
    riskset.exceptions.InputError: backend must be one of 'cpu', 'gpu'; got 'tpu'
    """

    name: str = "cpu"
    dtype: str = "float64"
    n_jobs: int = 1

    #: Where the sweeps can run (``backend`` of ``riskset.fit``).
    NAMES: ClassVar[tuple[str, ...]] = ("cpu", "gpu")
    #: Precisions of the device state (``dtype`` of ``riskset.fit``; accumulations stay float64).
    DTYPES: ClassVar[tuple[str, ...]] = ("float64", "float32")

    @classmethod
    def of(cls, name: str = "cpu", dtype: str = "float64", n_jobs: int | None = None) -> "Backend":
        """The backend of the user's ``backend``, ``dtype`` and ``n_jobs`` arguments, checked
        (``n_jobs`` None or -1: :func:`riskset.cores.resolve_jobs`)."""
        return cls(check.one_of("backend", name, cls.NAMES), check.one_of("dtype", dtype, cls.DTYPES),
                   resolve_jobs(n_jobs))

    @property
    def on_device(self) -> bool:
        """Whether the sweeps run on a CUDA device (or Numba's CUDA simulator)."""
        return self.name == "gpu"

    def problem(self) -> str | None:
        """Why this backend cannot run here (no usable CUDA device, the simulator off), or None."""
        if not self.on_device:
            return None
        from numba import config

        if config.ENABLE_CUDASIM:
            return None
        try:
            from numba import cuda

            usable = cuda.is_available()
        except Exception:  # a broken driver installation: describe_devices says what is wrong
            usable = False
        if usable:
            return None
        from riskset.kernels.devices import describe_devices

        return describe_devices()

    def prepare(self, datafit: Datafit) -> Datafit:
        """The datafit the solver sweeps: ``datafit`` itself on the CPU, its device copy on the GPU
        (:func:`riskset.kernels.gpu.to_device`, which takes ``datafit.names`` along)."""
        if not self.on_device:
            return datafit
        from riskset.kernels.gpu import to_device

        return to_device(datafit, dtype=self.dtype)

    def replicates(self, datafit: Datafit, weights: np.ndarray, view: Callable[[np.ndarray], Datafit] | None = None,
                   pool=None) -> ReplicateBatch:
        """The replicates of ``datafit`` (from :meth:`prepare`) with row weights ``weights``
        (R, n_rows; Dataset row order; 0 removes a row): on the GPU one device batch
        (:func:`riskset.kernels.gpu.replicate_batch`); on the CPU one view per replicate,
        ``view(w)`` (default ``datafit.reweighted(w)``), swept on ``pool``'s threads if given."""
        weights = np.atleast_2d(weights)
        if self.on_device:
            from riskset.kernels.gpu import replicate_batch

            return replicate_batch(datafit, weights, self.dtype)
        view = view or datafit.reweighted
        return ViewReplicates([view(w) for w in weights], pool)

    def repeated(self, datafit: Datafit, n: int, pool=None) -> ReplicateBatch:
        """``n`` replicates of ``datafit`` (from :meth:`prepare`) with its own row weights: the
        points of a profile likelihood, which differ only in the coefficients held fixed."""
        if self.on_device:
            from riskset.kernels.gpu.replicates import DeviceReplicates

            return DeviceReplicates.repeated(datafit, n)
        return ViewReplicates([datafit] * n, pool)

    @property
    def batch_size(self) -> int | None:
        """Replicates per batch: all of them in one device batch on the GPU (None); one per
        task on the CPU, the tasks running in parallel."""
        return None if self.on_device else 1

    @contextmanager
    def threads(self):
        """A pool of ``n_jobs`` threads that sweeps the CPU replicates of one batch in
        parallel (the kernels release the GIL), or None: the device, or one thread, the caller's
        (:func:`serial_kernel_pool`)."""
        if self.on_device:
            yield None
            return
        with serial_kernel_pool(self.n_jobs) as pool:
            yield pool

    def fit_thread_count(self, work: int | None = None) -> int:
        """The CPU threads of one fit's kernels: ``n_jobs``; 1 where the device sweeps, or where
        the fit's ``work`` (:func:`fit_work`) is too small to pay for a second
        (:func:`~riskset.cores.fit_kernel_threads`)."""
        return 1 if self.on_device else fit_kernel_threads(self.n_jobs, work)

    @contextmanager
    def fit_threads(self, work: int | None = None):
        """Inside: the compiled kernels called from this thread (one fit's, of ``work``) use up to
        :meth:`fit_thread_count` threads (:func:`kernel_threads`), the count it yields; BLAS one,
        or as many for a large dense block (:func:`~riskset.cores.dense_algebra`)."""
        threads = self.fit_thread_count(work)
        with kernel_threads(threads), blas_threads(1):
            yield threads

    def check_executor(self, executor) -> None:
        """A device batch runs in this process: no Dask executor with the GPU."""
        if self.on_device and executor is not None:
            raise ValueError(f"backend={self.name!r} fits all replicates in one device batch in this process; "
                             "a Dask executor cannot be combined with it")


def fit_work(data) -> int:
    """The work of one fit of a Dataset, as :func:`~riskset.cores.fit_kernel_threads` counts it:
    X's stored non-zeros + its rows."""
    return int(data.X.nnz) + int(data.n_rows)


@contextmanager
def kernel_threads(n: int):
    """Inside: numba's parallel kernels called from this thread use up to ``n`` threads (at most
    ``NUMBA_NUM_THREADS``); the thread's previous count is restored after."""
    before = numba.get_num_threads()
    numba.set_num_threads(max(1, min(int(n), numba.config.NUMBA_NUM_THREADS)))
    try:
        yield
    finally:
        numba.set_num_threads(before)


@contextmanager
def one_thread():
    """Inside: the compiled kernels and BLAS called from this thread run on one thread."""
    with kernel_threads(1), blas_threads(1):
        yield


@contextmanager
def serial_kernel_pool(n_jobs: int):
    """A pool of ``n_jobs`` threads whose compiled kernels and BLAS each run on one thread: a
    batch of fits in parallel threads (replicates, folds) uses ``n_jobs`` threads in all. With
    ``n_jobs`` 1 there is no pool (None): the tasks run in the caller's thread, its kernels and
    BLAS on one thread (left at their defaults, an idle OpenMP or OpenBLAS worker spinning
    beside the caller stalls every parallel region)."""
    if n_jobs == 1:
        with one_thread():
            yield None
        return
    with blas_threads(1), ThreadPoolExecutor(n_jobs, initializer=numba.set_num_threads, initargs=(1,)) as pool:
        yield pool
