"""Running independent fits: in this process, on threads, or on a Dask cluster.

An executor maps a function over tasks and yields results as they complete, with a
progress bar. No scheduler of our own: threads come from ``concurrent.futures``, the
cluster from Dask distributed (a LocalCluster by default, or a scheduler address).
"""
from __future__ import annotations

from concurrent.futures import as_completed

from riskset.backend import one_thread, serial_kernel_pool
from riskset.cores import resolve_jobs


def run_tasks(fn, context, tasks, *, executor=None, n_jobs: int | None = None, progress: bool = True,
              desc: str = "fits"):
    """Results of ``fn(context, task)`` for each task, in task order (one :meth:`TaskRunner.map`).

    ``context`` (the data, the model) is shared by all tasks: sent once to a Dask
    cluster, not once per task.
    executor : None (this process; ``n_jobs`` threads, by default every usable core:
        :func:`riskset.cores.resolve_jobs`), ``"dask"`` (a new LocalCluster),
        a scheduler address ``"tcp://host:port"``, or a ``distributed.Client``.
    """
    tasks = list(tasks)
    with TaskRunner(context, executor=executor, n_jobs=n_jobs, progress=progress, desc=desc) as runner:
        runner.expect(len(tasks))
        return runner.map(fn, tasks)


class TaskRunner:
    """Rounds of tasks ``fn(context, task)`` on one executor, opened once: a cross-validation
    scores its variances one round after another (each round's tasks depend on the previous
    round's scores), on the same Dask cluster with ``context`` scattered to it once, and with
    one progress bar whose total grows as rounds are planned (:meth:`expect`).

    executor, n_jobs : as in :func:`run_tasks`. Threads in this process are pooled per round
    (:func:`riskset.backend.serial_kernel_pool`), so that the caller's own work between rounds
    (e.g. a full-data fit) keeps every kernel thread.
    """

    def __init__(self, context, *, executor=None, n_jobs: int | None = None, progress: bool = True,
                 desc: str = "fits"):
        self.context, self.executor, self.n_jobs = context, executor, n_jobs
        self.progress, self.desc, self.bar = progress, desc, None
        self._client = self._owned = self._shared = None

    def __enter__(self):
        if self.executor is not None:
            self._client, self._owned = _dask_client(self.executor)
        return self

    def __exit__(self, exc_type, *exc):
        if self._owned:
            self._client.close()
            self._client.cluster.close()
        if self.bar is not None:
            if exc_type is None:  # work planned and not needed (e.g. a search that stopped early) is not owed
                self.bar.total = self.bar.n
                self.bar.refresh()
            self.bar.close()
        return False

    def expect(self, n: int) -> None:
        """Add ``n`` units of work to the progress bar's total."""
        if self.bar is None:
            self.bar = _bar(self.progress, n, self.desc)
        else:
            self.bar.total += n
            self.bar.refresh()

    def done(self, n: int = 1) -> None:
        """Count ``n`` units of work done on the progress bar (the caller's own, between rounds)."""
        if self.bar is not None:
            self.bar.update(n)

    def map(self, fn, tasks) -> list:
        """Results of ``fn(context, task)`` for each task, in task order; each finished task
        counts one unit on the progress bar."""
        tasks = list(tasks)
        results = [None] * len(tasks)
        if self._client is None:
            n_jobs = min(resolve_jobs(self.n_jobs), max(1, len(tasks)))
            with serial_kernel_pool(n_jobs) as pool:  # each task's kernels on one thread
                if pool is None:
                    for i, t in enumerate(tasks):
                        results[i] = fn(self.context, t)
                        self.done()
                else:
                    futures = {pool.submit(fn, self.context, t): i for i, t in enumerate(tasks)}
                    for fut in as_completed(futures):
                        results[futures[fut]] = fut.result()
                        self.done()
            return results
        from distributed import as_completed as dask_completed

        if self._shared is None:
            self._shared = self._client.scatter(self.context, broadcast=True)
        futures = [self._client.submit(_on_one_thread, fn, self._shared, t, pure=False) for t in tasks]
        index = {f.key: i for i, f in enumerate(futures)}
        for fut in dask_completed(futures):
            results[index[fut.key]] = fut.result()
            self.done()
        return results


def _on_one_thread(fn, context, task):
    """``fn(context, task)`` with its kernels and BLAS on one thread: a Dask worker runs as many
    tasks at once as it has threads."""
    with one_thread():
        return fn(context, task)


def _dask_client(executor):
    try:
        from distributed import Client, LocalCluster
    except ImportError as err:
        raise ImportError("the Dask executor needs the 'dask' extra: pip install 'riskset[dask]'") from err
    if isinstance(executor, Client):
        return executor, False
    if executor == "dask":
        cluster = LocalCluster(processes=True, threads_per_worker=1, dashboard_address=None)
        return Client(cluster), True
    if isinstance(executor, str) and "://" in executor:
        return Client(executor), False
    raise ValueError(f"unknown executor {executor!r}: use None, 'dask', a scheduler address or a Client")


def _bar(show, total, desc):
    if not show:
        return None
    from tqdm.auto import tqdm

    return tqdm(total=total, desc=desc, unit="fit")
