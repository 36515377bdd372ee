"""GPU backend (issue 7): the same checks in Numba's CUDA simulator or on a real GPU.

numba.cuda chooses simulator mode when it is imported, so the GPU checks run in a
subprocess (tests/gpu_checks.py, tiny inputs): on the machine's CUDA GPU where one is
usable (``python -m pytest tests/test_gpu.py`` on a GPU machine runs them on hardware, and
also the checks the simulator cannot run: the cooperative whole-grid sweep over many
blocks), else with NUMBA_ENABLE_CUDASIM=1. ``RISKSET_GPU_CHECKS=simulator`` forces the
simulator. The "no device" error is checked in a subprocess without the simulator
(skipped where a real CUDA device is present).
"""
from __future__ import annotations

import json
import os
import pathlib
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest

from helpers import HANG_SECONDS

HERE = pathlib.Path(__file__).parent
SIM_ENV = {**os.environ, "NUMBA_ENABLE_CUDASIM": "1"}
NO_SIM_ENV = {k: v for k, v in os.environ.items() if k != "NUMBA_ENABLE_CUDASIM"}


def _on_device() -> bool:
    """Whether the checks run on a real CUDA GPU: one is usable and the simulator is not forced."""
    if os.environ.get("RISKSET_GPU_CHECKS") == "simulator":
        return False
    r = subprocess.run([sys.executable, "-c", "from numba import cuda; print(cuda.is_available())"], env=NO_SIM_ENV,
                       capture_output=True, text=True, timeout=HANG_SECONDS)
    return r.returncode == 0 and r.stdout.strip().endswith("True")


ON_DEVICE = _on_device()
CHECK_ENV = NO_SIM_ENV if ON_DEVICE else SIM_ENV

CHECKS = ["grid_scans", "sweep_logistic", "sweep_poisson", "sweep_least_squares", "sweep_cox", "sweep_cox_strata",
          "sweep_cox_float32", "sweep_fine_gray", "sweep_fine_gray_float32", "fit_logistic", "fit_poisson",
          "fit_cox", "fit_cox_strata", "fit_logistic_float32", "fit_cox_float32", "fit_fine_gray",
          "fit_fine_gray_float32", "ccd_logistic_no_polish", "ccd_cox_strata_no_polish", "ccd_fine_gray_no_polish",
          "replicates_logistic", "replicates_cox_strata", "replicates_fine_gray", "unsupported_family",
          "sweep_conditional_poisson", "sweep_conditional_poisson_float32", "sweep_conditional_logistic_exact",
          "sweep_conditional_logistic_breslow", "fit_sccs", "fit_conditional_poisson_float32",
          "fit_conditional_logistic_exact", "fit_conditional_logistic_breslow", "fit_conditional_logistic_float32",
          "replicates_conditional_poisson", "replicates_conditional_logistic_exact", "conditional_limits",
          "ccd_conditional_logistic_no_polish", "sweep_cox_startstop", "sweep_cox_startstop_strata",
          "sweep_cox_efron", "sweep_cox_efron_startstop_strata", "fit_cox_startstop", "fit_cox_startstop_strata",
          "fit_cox_efron", "fit_cox_efron_startstop", "fit_cox_time_varying", "ccd_cox_efron_startstop_no_polish",
          "replicates_cox_startstop", "replicates_cox_efron_startstop", "float32_range_refused",
          "fit_cox_strata_uncentered", "fit_fine_gray_uncentered", "fit_conditional_poisson_uncentered"]

#: checks that need a real GPU (the simulator runs a cooperative grid as one block, and these sizes for days)
DEVICE_ONLY_CHECKS = ["whole_grid_logistic", "whole_grid_poisson", "whole_grid_least_squares", "whole_grid_cox",
                      "whole_grid_cox_efron_strata", "whole_grid_fine_gray"]

#: every family (Cox variant) with device kernels, as ``DEVICE_FAMILIES`` in tests/gpu_checks.py
DEVICE_FAMILIES = ["logistic", "poisson", "least_squares", "cox", "cox_efron_strata", "cox_startstop", "fine_gray",
                   "conditional_poisson", "sccs", "conditional_logistic_breslow", "conditional_logistic_exact"]
#: families whose profile, cross-validation and bootstrap paths the simulator checks: one of each
#: kind of device kernel (GLM, Cox, Cox with Efron ties and strata, Fine-Gray, conditional); every
#: family's sweeps, fits and replicate batches are in CHECKS, and a real GPU runs the paths of all
SIMULATED_PATH_FAMILIES = ["logistic", "cox", "cox_efron_strata", "fine_gray", "conditional_poisson"]
PATHS = ("profile", "cross_validation", "bootstrap")
#: profile intervals, cross-validation and the bootstrap on the device against the CPU, per family
REPLICATE_PATH_CHECKS = [f"{path}_on_device_{family}" for family in SIMULATED_PATH_FAMILIES for path in PATHS]
#: the other families' paths: on a real GPU only (the simulator runs the shared batch code above)
DEVICE_ONLY_PATH_CHECKS = [f"{path}_on_device_{family}" for family in DEVICE_FAMILIES
                           if family not in SIMULATED_PATH_FAMILIES for path in PATHS]


def run_checks(directory, names) -> dict:
    """{check: "ok" | error} of the named checks, run in one subprocess on the GPU or in the
    simulator (each group of checks has its own time limit, far above its run time on a
    loaded machine)."""
    out = directory / "results.json"
    proc = subprocess.run([sys.executable, str(HERE / "gpu_checks.py"), str(out), *names], env=CHECK_ENV,
                          capture_output=True, text=True, timeout=HANG_SECONDS)
    if not out.exists():
        pytest.fail(f"GPU checks crashed (rc {proc.returncode}):\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}")
    return json.loads(out.read_text())


@pytest.fixture(scope="module")
def sim_results(tmp_path_factory):
    return run_checks(tmp_path_factory.mktemp("gpu"), CHECKS)


@pytest.fixture(scope="module")
def replicate_path_results(tmp_path_factory):
    return run_checks(tmp_path_factory.mktemp("gpu_paths"), REPLICATE_PATH_CHECKS)


@pytest.fixture(scope="module")
def device_only_results(tmp_path_factory):
    if not ON_DEVICE:
        pytest.skip("needs a real CUDA GPU")
    return run_checks(tmp_path_factory.mktemp("gpu_device"), DEVICE_ONLY_CHECKS + DEVICE_ONLY_PATH_CHECKS)


def assert_ok(results, name):
    assert name in results, f"check {name} did not run"
    assert results[name] == "ok", results[name]


@pytest.mark.parametrize("name", CHECKS)
def test_simulator(sim_results, name):
    """Device kernels equal the CPU kernels (sweeps to 1e-12, fits to 1e-8 in float64, 1e-4 in float32),
    Cox also for (start, stop] rows, Efron ties and time-varying coefficients."""
    assert_ok(sim_results, name)


@pytest.mark.parametrize("name", REPLICATE_PATH_CHECKS)
def test_replicate_paths_on_simulator(replicate_path_results, name):
    """Profile bounds (1e-7), cross-validation scores and bootstrap estimates (1e-8) on the device
    equal the CPU ones for every family with device kernels."""
    assert_ok(replicate_path_results, name)


@pytest.mark.parametrize("name", DEVICE_ONLY_CHECKS + DEVICE_ONLY_PATH_CHECKS)
def test_on_device_only(device_only_results, name):
    """On a real GPU: a single GLM, Cox or Fine-Gray fit at N = 200,000 sweeps with the cooperative whole-grid
    kernel, every block holding rows, and equals the CPU fit to 1e-8; and the profile, cross-validation and
    bootstrap paths of the families the simulator leaves to the device (:data:`DEVICE_ONLY_PATH_CHECKS`)."""
    assert_ok(device_only_results, name)


def test_every_simulator_check_is_asserted():
    """tests/gpu_checks.py holds no check that no test asserts (it would never run)."""
    r = subprocess.run([sys.executable, str(HERE / "gpu_checks.py"), "--list"], env=SIM_ENV, capture_output=True,
                       text=True, timeout=HANG_SECONDS)
    assert r.returncode == 0, r.stderr[-3000:]
    assert sorted(json.loads(r.stdout)) == sorted(CHECKS + REPLICATE_PATH_CHECKS + DEVICE_ONLY_CHECKS
                                                  + DEVICE_ONLY_PATH_CHECKS)


@pytest.mark.parametrize("path", ["fit", "profile", "cross_validation", "bootstrap"])
def test_pooled_logistic_has_no_device_path(path):
    """Pooled logistic has no device kernels: every backend='gpu' path says so, naming the way
    out, before looking for a device (so also on a machine without one)."""
    import riskset
    from riskset.models.pooled_logistic import PooledLogistic

    data = riskset.simulate(n=40, p=2, model="cox", seed=1)
    model, prior = PooledLogistic(1.0), riskset.Laplace(gamma=1.0)
    run = {"fit": lambda: riskset.fit(data, model, backend="gpu"),
           "profile": lambda: riskset.fit(data, model, profile=["x0"], backend="gpu"),
           "cross_validation": lambda: riskset.cross_validate(data, model, prior, variances=[0.1], n_folds=2,
                                                              progress=False, backend="gpu"),
           "bootstrap": lambda: riskset.bootstrap(data, model, prior, n_boot=2, progress=False, backend="gpu")}[path]
    with pytest.raises(NotImplementedError, match="PooledLogistic.*backend='cpu'"):
        run()


def test_no_device_error():
    """Without a CUDA device and without the simulator, to_device says what is missing."""
    code = ("from numba import cuda\n"
            "if cuda.is_available():\n"
            "    print('has a GPU'); raise SystemExit(0)\n"
            "import riskset\n"
            "from riskset.kernels.gpu import to_device\n"
            "d = riskset.simulate(n=50, p=3, model='logistic', seed=1)\n"
            "df = riskset.models.get_model('logistic').datafit(d)\n"
            "try:\n"
            "    to_device(df)\n"
            "except RuntimeError as e:\n"
            "    print('RuntimeError:', e)\n"
            "try:\n"
            "    riskset.fit(d, 'logistic', backend='gpu')\n"
            "except RuntimeError as e:\n"
            "    print('fit RuntimeError:', e)\n"
            "from riskset.kernels.devices import describe_devices\n"
            "print('devices:', describe_devices())\n")
    r = subprocess.run([sys.executable, "-c", code], env=NO_SIM_ENV, capture_output=True, text=True,
                       timeout=HANG_SECONDS)
    assert r.returncode == 0, r.stderr
    if "has a GPU" in r.stdout:
        pytest.skip("a CUDA device is present")
    lines = r.stdout.splitlines()
    err = next(line for line in lines if line.startswith("RuntimeError:"))
    assert "CUDA" in err and "NUMBA_ENABLE_CUDASIM=1" in err and "backend='cpu'" in err
    assert any(line.startswith("fit RuntimeError:") for line in lines)
    dev = next(line for line in lines if line.startswith("devices:"))
    assert "none" in dev.lower() or "unavailable" in dev.lower()


def test_cli_fit_backend_gpu(tmp_path):
    """`riskset fit --backend gpu` (on the GPU or in the simulator) gives the CPU coefficients."""
    import riskset
    from riskset.cli import main

    data = riskset.simulate(n=60, p=4, model="cox", seed=5)
    X = data.X.toarray()
    t = np.asarray(data.time, float)
    frame = pd.DataFrame(X, columns=[f"x{j}" for j in range(X.shape[1])])
    frame["time"] = np.searchsorted(np.quantile(t, np.linspace(0, 1, 16)), t) + 1.0
    frame["status"] = np.asarray(data.status)
    path = tmp_path / "cohort.csv"
    frame.to_csv(path, index=False)
    args = ["fit", "--data", str(path), "--time", "time", "--status", "status", "--model", "cox",
            "--prior", "laplace", "--gamma", "0.5", "--quiet"]
    cpu_out, gpu_out = tmp_path / "cpu.json", tmp_path / "gpu.json"
    assert main(args + ["--out", str(cpu_out)]) == 0
    code = ("import sys; sys.setswitchinterval(1e-4)\n"
            "from riskset.cli import main\n"
            f"sys.exit(main({args + ['--backend', 'gpu', '--out', str(gpu_out)]!r}))\n")
    r = subprocess.run([sys.executable, "-c", code], env=CHECK_ENV, capture_output=True, text=True,
                       timeout=HANG_SECONDS)
    assert r.returncode == 0, r.stderr[-3000:]
    cpu, gpu = json.loads(cpu_out.read_text()), json.loads(gpu_out.read_text())
    assert gpu["converged"]
    cc, gc = pd.Series(cpu["coef"]), pd.Series(gpu["coef"])
    np.testing.assert_allclose(gc.to_numpy(float), cc.to_numpy(float), rtol=1e-8, atol=1e-10)


@pytest.mark.parametrize("module", ["glm", "cox", "fine_gray", "conditional"])
def test_sweep_kernel_is_not_bound_to_the_datafit(module):
    """A CUDA dispatcher binds like a function: a class attribute read through an instance
    would be a bound method (on hardware: "'method' object is not subscriptable" at launch).
    Each device datafit holds its sweep kernel as a static attribute."""
    import importlib

    mod = importlib.import_module(f"riskset.kernels.gpu.{module}")
    cls = next(c for c in vars(mod).values() if isinstance(c, type) and c.__module__ == mod.__name__
               and c.__name__.endswith("DeviceDatafit") and "sweep_kernel" in vars(c))
    assert cls.__new__(cls).sweep_kernel is mod.sweep_kernel


def test_device_copy_hands_numba_canonical_strides(monkeypatch):
    """A (1, N) row from ``x[None, :]`` or ``np.broadcast_to`` has a stride-0 axis that NumPy calls
    C-contiguous and numba-cuda copies element by element (one extent per element; 36 s of a
    61 s Cox fit at N = 1M on an H200): ``device_copy`` passes such arrays as fresh ones."""
    from numba import cuda
    from numba.cuda.cudadrv import dummyarray

    from riskset.kernels.gpu.device import device_copy

    def extents(a):
        return sum(1 for _ in dummyarray.Array.from_desc(0, a.shape, a.strides, a.itemsize).iter_contiguous_extent())

    row = np.arange(1000.0)[None, :]
    assert row.strides[0] == 0 and row.flags.c_contiguous and extents(row) == 1000  # the slow path
    sent = []
    monkeypatch.setattr(cuda, "to_device", lambda a, *args, **kwargs: sent.append(a) or a)
    for a, dtype in [(row, None), (np.broadcast_to(np.arange(5.0), (1, 5)), np.float32), (np.ones((3, 4)), None)]:
        out = device_copy(a, dtype)
        assert extents(out) == 1 and 0 not in out.strides
        np.testing.assert_array_equal(out, a)
        assert out.dtype == (dtype or a.dtype)
    assert len(sent) == 3


def test_backend_gpu_bad_dtype():
    from riskset.kernels.gpu.device import state_dtype

    with pytest.raises(ValueError, match="float64"):
        state_dtype("float16")


def test_kernels_compile_to_ptx(ptx_compiler):
    """The real CUDA exact-state kernels (not the simulator) type-check and lower to PTX for
    sm_90, in float64 and float32, with the argument types the device datafits pass. Skipped
    where NVVM (the CUDA toolkit's compiler library) is missing."""
    from numba import float32, float64, int32, int64, uint8, void

    cuda = ptx_compiler
    from riskset.kernels.gpu import columns, cox, fine_gray, glm

    f8 = float64
    for F in (float64, float32):
        sigs = {
            glm.refresh_kernel: (int64, f8[:, ::1], F[::1], F[:, ::1], F[:, ::1], F[:, ::1], F[:, ::1]),
            glm.loglik_kernel: (int64, f8[:, ::1], F[::1], F[:, ::1], f8[:, ::1]),
            cox.sync_kernel: (int64, int64, f8[:, ::1], F[:, ::1], F[:, ::1], int64[::1], int64[::1], uint8[::1],
                              int32[::1], f8[:, ::1], f8[:, ::1], f8[:, ::1], f8[:, ::1], f8[:, ::1], f8[:, ::1],
                              uint8[::1], uint8[::1],
                              f8[:, ::1], f8[:, ::1], f8[:, ::1], f8[:, ::1], f8[:, ::1], f8[:, ::1], f8[:, ::1],
                              f8[:, ::1], int32[::1], f8[::1]),
            fine_gray.sync_kernel: (f8[:, ::1], F[:, ::1], F[:, ::1], F[:, ::1], int32[::1], uint8[::1], uint8[::1],
                                    *[f8[:, ::1]] * 5, uint8[::1], *[f8[:, ::1]] * 7, int32[::1], f8[::1]),
        }
        sigs[cox.sync_grid_kernel] = sigs[cox.sync_kernel] + (f8[:, :, ::1], f8[:, :, ::1])  # + the grid scratch
        sigs[fine_gray.sync_grid_kernel] = sigs[fine_gray.sync_kernel] + (f8[:, :, ::1], f8[:, :, ::1])
        # the Newton polish of a single fit on the device (float64 states; X values in either precision)
        sigs[cox.hessian_rows_kernel] = (int64, int64, int64[::1], int32[::1], F[::1], int64[::1], f8[::1], int64[::1],
                                         int64[::1], uint8[::1], f8[:, ::1], *[f8[:, ::1]] * 5, uint8[::1],
                                         uint8[::1], *[f8[:, ::1]] * 5, f8[:, :, ::1])
        sigs[cox.row_hazards_kernel] = (int64, f8[:, ::1], int64[::1], int64[::1], uint8[::1], f8[:, ::1],
                                        f8[:, ::1], f8[:, ::1])
        sigs[cox.nz_flags_kernel] = (int64[::1], int32[::1], int32[::1], uint8[::1])
        sigs[columns.scatter_columns] = (int64[::1], int32[::1], F[::1], int64[::1], f8[::1], f8[:, ::1])
        sigs[columns.column_dots] = (int64[::1], int32[::1], F[::1], int64[::1], f8[:, ::1], f8[:, ::1])
        sigs[columns.scale_rows] = (f8[:, ::1], f8[:, ::1])
        for kernel, sig in sigs.items():
            ptx, _ = cuda.compile_ptx(kernel.py_func, void(*sig), device=False, cc=(9, 0))
            assert ".entry" in ptx and "sm_90" in ptx
            row_parallel = (glm.refresh_kernel, cox.row_hazards_kernel, cox.nz_flags_kernel, columns.scatter_columns,
                            columns.scale_rows)
            assert "bar.sync" in ptx or kernel in row_parallel  # block-level synchronization present
            cooperative = (cox.sync_grid_kernel, cox.hessian_rows_kernel, fine_gray.sync_grid_kernel)
            assert ("cudaCGGetIntrinsicHandle" in ptx) == (kernel in cooperative)  # a cooperative launch


def test_conditional_kernels_compile_to_ptx(ptx_compiler):
    """The conditional models' exact-state kernel lowers to PTX for sm_90 with the argument
    types the device datafit passes: w in the state precision (multinomial strata only) or
    float64 (exact strata). Skipped where NVVM is missing."""
    from numba import float32, float64, int32, int64, void

    cuda = ptx_compiler
    from riskset.kernels.gpu import conditional

    f8 = float64
    for Fw in (float64, float32):
        sigs = {
            conditional.sync_kernel: (f8[:, ::1], Fw[:, ::1], f8[:, ::1], f8[::1], f8[:, ::1], f8[:, ::1], int64[::1],
                                      int32[::1], f8[:, ::1]),
        }
        for kernel, sig in sigs.items():
            ptx, _ = cuda.compile_ptx(kernel.py_func, void(*sig), device=False, cc=(9, 0))
            assert ".entry" in ptx and "sm_90" in ptx and "bar.sync" in ptx


#: every specialization of the persistent sweep: (model, data_for options, model options)
SWEEP_VARIANTS = {
    "logistic": ("logistic", {}, {}),
    "cox": ("cox", {}, {}),
    "cox_efron_strata": ("cox", dict(strata=True), dict(ties="efron")),
    "cox_efron_startstop_strata": ("cox", dict(start=True, strata=True), dict(ties="efron")),
    "fine_gray": ("fine_gray", {}, {}),
    "conditional_poisson": ("conditional_poisson", {}, {}),
    "conditional_logistic_exact": ("conditional_logistic", {}, dict(ties="exact")),
}


def _device_datafit_on_host(cuda, monkeypatch, variant, dtype):
    """The device datafit of ``variant`` and a state, with host arrays in place of its device
    arrays (``cuda.to_device`` and ``cuda.device_array`` patched: no device needed), so that
    ``numba.typeof`` gives the types of the arguments it passes to its kernels."""
    import importlib.util

    from riskset.kernels.gpu import _device_class
    from riskset.kernels.gpu.base import DeviceState

    spec = importlib.util.spec_from_file_location("gpu_checks", HERE / "gpu_checks.py")
    checks = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(checks)
    model, data_options, options = SWEEP_VARIANTS[variant]
    cpu = checks._datafit(model, checks.data_for(model, n=40, p=3, density=0.3, **data_options), **options)
    monkeypatch.setattr(cuda, "to_device", lambda a, *args, **kwargs: np.array(a))
    monkeypatch.setattr(cuda, "device_array", lambda shape, dtype=np.float64, **kwargs: np.empty(shape, dtype))
    for module in ("base", "risk_sets"):  # the grid of an H100 or H200, without asking a device
        monkeypatch.setattr(f"riskset.kernels.gpu.{module}.grid_blocks", lambda nt: 132)
    dev = _device_class(cpu)(cpu, dtype)
    dev._dev_static().setdefault("nzf", np.zeros(1, np.uint8))  # Cox's whole-grid flags come from a kernel
    state = DeviceState(np.zeros((1, dev.n_rows)), np.zeros((1, dev.n_coef)))
    dev._allocate(state)
    return dev, tuple(state.d[name] for name in dev.state_fields)


@pytest.mark.parametrize("variant", SWEEP_VARIANTS)
def test_sweep_kernels_compile_to_ptx(ptx_compiler, monkeypatch, variant):
    """Every family's specialization of the persistent sweep (and its whole-grid one where it
    has one, a cooperative kernel) and of the gradient kernel lowers to PTX for sm_90 in float64 and float32, with the
    argument types its device datafit passes (tuples of device arrays). Skipped where NVVM is
    missing."""
    import numba
    from numba import float64 as f8, int64, uint8, void

    cuda = ptx_compiler
    for dtype in ("float64", "float32"):
        dev, state = _device_datafit_on_host(cuda, monkeypatch, variant, dtype)
        data_t, state_t = numba.typeof(dev.kernel_data()), numba.typeof(state)
        assert (dtype == "float32") == ("float32" in str(data_t))  # X values in the state precision
        sig = void(data_t, state_t, int64[::1], uint8[:, ::1], f8[:, ::1], f8[:, :, ::1], f8[:, ::1], int64, f8[::1],
                   f8[:, ::1], f8[:, :, ::1])
        grid = dev.sweep_grid_kernel if dev._grid() else None
        for kernel in [dev.sweep_kernel] + ([grid] if grid is not None else []):
            ptx, _ = cuda.compile_ptx(kernel.py_func, sig, device=False, cc=(9, 0))
            assert ".entry" in ptx and "sm_90" in ptx and "bar.sync" in ptx
            # numba launches a kernel cooperatively iff its PTX takes the grid group's handle
            assert ("cudaCGGetIntrinsicHandle" in ptx) == (kernel is grid)
        ptx, _ = cuda.compile_ptx(dev.gradient_kernel.py_func, void(data_t, state_t, f8[:, ::1]), device=False,
                                  cc=(9, 0))  # the full gradient
        assert ".entry" in ptx and "bar.sync" in ptx
