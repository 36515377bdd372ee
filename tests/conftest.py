import os
import pathlib

import pytest

HERE = pathlib.Path(__file__).parent

# Numba's on-disk cache is not safe for processes that compile the same kernel at once
# (its index and data files are updated without a lock: two pytest-xdist workers on a
# cold cache could load each other's machine code for a different signature). Each
# worker, and the simulator subprocesses it starts, gets a cache directory of its own.
if os.environ.get("PYTEST_XDIST_WORKER") and "NUMBA_CACHE_DIR" not in os.environ:
    os.environ["NUMBA_CACHE_DIR"] = str(HERE.parent / ".numba_cache" / os.environ["PYTEST_XDIST_WORKER"])

# Property-based tests run the same examples in every run (derandomize: the examples are
# drawn from a seed fixed per test, not a fresh one) and have no per-example time limit
# (Hypothesis's default 200 ms deadline fails on a loaded machine or at a first Numba compile).
try:
    from hypothesis import settings
except ImportError:  # pragma: no cover - hypothesis is a test extra
    settings = None
if settings is not None:
    settings.register_profile("riskset", derandomize=True, deadline=None, database=None)
    settings.load_profile("riskset")


def reference_dir() -> pathlib.Path:
    """Reference cases: $RISKSET_REFERENCE_DIR if set, else the copies shipped in tests/reference."""
    return pathlib.Path(os.environ.get("RISKSET_REFERENCE_DIR", HERE / "reference"))


@pytest.fixture
def rng():
    import numpy as np

    return np.random.default_rng(20240601)


@pytest.fixture
def ptx_compiler(monkeypatch):
    """For lowering real CUDA kernels (not the simulator) to PTX for sm_90 on a machine
    without a GPU: skips where the simulator is on in this process or NVVM (the CUDA
    toolkit's compiler library) is missing; without a device, device functions are told
    compute capability 9.0. Returns ``numba.cuda``."""
    import types

    from numba import config

    if config.ENABLE_CUDASIM:
        pytest.skip("CUDA simulator enabled in this process")
    from numba import cuda
    from numba.cuda.cudadrv import nvvm

    try:
        if not nvvm.is_available():
            pytest.skip("NVVM not available")
    except Exception as exc:  # pragma: no cover
        pytest.skip(f"NVVM not available: {exc}")
    import numba.cuda.dispatcher as cuda_dispatcher

    if not cuda.is_available():  # device functions ask the current device for its compute capability
        monkeypatch.setattr(cuda_dispatcher, "get_current_device",
                            lambda: types.SimpleNamespace(compute_capability=(9, 0)))
    return cuda


@pytest.fixture(autouse=True)
def threads_at_any_size(monkeypatch):
    """Fits with ``n_jobs`` > 1 run their kernels on that many threads whatever the data's size:
    the tests of threaded kernels use small data, which riskset would fit on one thread
    (``riskset.cores.THREADED_FIT_MIN``). Gives the library's own threshold, for the tests of
    that rule."""
    from riskset import cores

    threshold = cores.THREADED_FIT_MIN
    monkeypatch.setattr(cores, "THREADED_FIT_MIN", 0)
    return threshold
