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
    """Results of ``fn(context, task)`` for each task, in task order.

    ``context`` (the data, the model) is shared by all tasks: sent once to a Dask
    cluster, not once per task.
    executor : None (this process; ``n_jobs`` threads, by default every usable core:
        :func:`riskset.cores.resolve_jobs`), ``"dask"`` (a new LocalCluster),
        a scheduler address ``"tcp://host:port"``, or a ``distributed.Client``.
    """
    tasks = list(tasks)
    bar = _bar(progress, len(tasks), desc)
    results = [None] * len(tasks)
    if executor is None:
        n_jobs = min(resolve_jobs(n_jobs), max(1, len(tasks)))
        with serial_kernel_pool(n_jobs) as pool:  # each task's kernels on one thread
            if pool is None:
                for i, t in enumerate(tasks):
                    results[i] = fn(context, t)
                    bar and bar.update(1)
            else:
                futures = {pool.submit(fn, context, t): i for i, t in enumerate(tasks)}
                for fut in as_completed(futures):
                    results[futures[fut]] = fut.result()
                    bar and bar.update(1)
    else:
        client, owned = _dask_client(executor)
        try:
            shared = client.scatter(context, broadcast=True)
            futures = [client.submit(_on_one_thread, fn, shared, t, pure=False) for t in tasks]
            index = {f.key: i for i, f in enumerate(futures)}
            from distributed import as_completed as dask_completed

            for fut in dask_completed(futures):
                results[index[fut.key]] = fut.result()
                bar and bar.update(1)
        finally:
            if owned:
                client.close()
                client.cluster.close()
    bar and bar.close()
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
