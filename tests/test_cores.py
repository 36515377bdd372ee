"""Threads by default: every core the process may use (riskset.cores), reported by the fit."""
import numpy as np
import pytest

import riskset
from riskset import cores
from riskset.exceptions import InputError


def write(root, path, text):
    target = root / path
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(text)


@pytest.mark.parametrize("files, quota", [
    ({"cpu.max": "max 100000\n"}, None),
    ({"cpu.max": "150000 100000\n"}, 2),            # 1.5 cores: rounded up
    ({"cpu.max": "50000 100000\n"}, 1),
    ({"cpu/cpu.cfs_quota_us": "-1\n", "cpu/cpu.cfs_period_us": "100000\n"}, None),
    ({"cpu/cpu.cfs_quota_us": "400000\n", "cpu/cpu.cfs_period_us": "100000\n"}, 4),
    ({}, None),
])
def test_cgroup_quota_v1_and_v2(tmp_path, files, quota):
    for path, text in files.items():
        write(tmp_path, path, text)
    assert cores.cgroup_cpu_quota(str(tmp_path)) == quota


def test_usable_cores_is_the_smaller_of_affinity_and_quota(monkeypatch):
    monkeypatch.setattr(cores.os, "sched_getaffinity", lambda pid: {0, 1, 2, 3, 4, 5}, raising=False)
    monkeypatch.setattr(cores, "cgroup_cpu_quota", lambda: 3)
    assert cores.usable_cores() == 3
    monkeypatch.setattr(cores, "cgroup_cpu_quota", lambda: None)
    assert cores.usable_cores() == 6


def test_default_from_the_environment_or_the_cores(monkeypatch):
    monkeypatch.setattr(cores, "usable_cores", lambda: 7)
    monkeypatch.delenv(cores.ENV, raising=False)
    assert cores.resolve_jobs(None) == cores.resolve_jobs(-1) == 7
    monkeypatch.setenv(cores.ENV, "3")
    assert cores.resolve_jobs(None) == 3
    assert cores.resolve_jobs(5) == 5
    monkeypatch.setenv(cores.ENV, "two")
    with pytest.raises(InputError, match="RISKSET_NUM_THREADS must be a positive integer, got 'two'"):
        cores.resolve_jobs(None)
    for bad in (0, -2, 1.5, True):
        with pytest.raises(InputError, match="n_jobs"):
            cores.resolve_jobs(bad)


def test_fit_reports_its_threads_and_gives_the_same_fit(monkeypatch):
    data = riskset.simulate(n=3000, p=30, model="cox", seed=3)
    prior = riskset.Laplace(variance=0.5)
    one = riskset.fit(data, "cox", prior, n_jobs=1)
    monkeypatch.setenv(cores.ENV, "2")
    two = riskset.fit(data, "cox", prior)
    assert (one.threads, two.threads) == (1, 2)
    assert "2 threads" in two.summary().splitlines()[0]
    assert riskset.FitResult.from_json(two.to_json()).threads == 2
    np.testing.assert_allclose(two.coef.to_numpy(), one.coef.to_numpy(), rtol=0, atol=1e-9)
    assert two.objective == pytest.approx(one.objective, rel=1e-12)


def test_a_small_fit_runs_on_one_thread(threads_at_any_size, monkeypatch):
    """Below THREADED_FIT_MIN (stored non-zeros + rows) a fit's kernels run on one thread, whatever
    n_jobs, and the fit says so; above it, on n_jobs threads."""
    from riskset.backend import fit_work

    monkeypatch.setattr(cores, "THREADED_FIT_MIN", threads_at_any_size)  # the library's rule
    small = riskset.simulate(n=3000, p=30, model="cox", seed=3)
    large = riskset.simulate(n=30_000, p=200, density=0.05, model="logistic", seed=1)
    assert fit_work(small) < cores.THREADED_FIT_MIN <= fit_work(large)
    prior = riskset.Laplace(variance=0.5)
    fit = riskset.fit(small, "cox", prior, n_jobs=2)
    assert fit.threads == 1 and "1 thread" in fit.summary().splitlines()[0]
    assert fit.objective == riskset.fit(small, "cox", prior, n_jobs=1).objective
    assert riskset.fit(large, "logistic", riskset.Laplace(variance=1e-3), n_jobs=2).threads == 2


def test_blas_held_to_the_budget():
    from threadpoolctl import threadpool_info

    with cores.blas_threads(1):
        assert all(lib["num_threads"] == 1 for lib in threadpool_info() if lib["user_api"] == "blas")


def test_blas_inside_a_fit_on_one_thread_but_for_large_dense_blocks(monkeypatch):
    """A fit's BLAS runs on one thread (an OpenBLAS worker spins after each call, taking a
    core from the fit's kernels); a dense block of THREADED_BLAS_MIN rows or more gets the
    fit's threads."""
    from threadpoolctl import threadpool_info

    from riskset.backend import Backend, kernel_threads

    def blas():
        return {lib["num_threads"] for lib in threadpool_info() if lib["user_api"] == "blas"}

    with Backend.of("cpu", n_jobs=2).fit_threads():
        assert blas() == {1}
        with cores.dense_algebra(cores.THREADED_BLAS_MIN - 1):
            assert blas() == {1}
        with cores.dense_algebra(cores.THREADED_BLAS_MIN):
            assert blas() == {min(2, riskset.backend.numba.config.NUMBA_NUM_THREADS)}
        assert blas() == {1}
    with kernel_threads(1), cores.blas_threads(1), cores.dense_algebra(10 * cores.THREADED_BLAS_MIN):
        assert blas() == {1}  # a worker of a replicate pool keeps its one thread
