"""GPU kernel under numba's CUDA simulator equals the CPU backend.

The simulator must be enabled before numba is imported, so the comparison
runs in a subprocess with NUMBA_ENABLE_CUDASIM=1.
"""

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[2] / "src"

SCRIPT = textwrap.dedent("""
    import json, sys
    import numpy as np
    from numba import config
    assert config.ENABLE_CUDASIM
    from riskset.ode import solve_batch, ode_model
    from riskset.ode.models import pk_initial_state
    sys.path.insert(0, {tests!r})
    from helpers import seir_sample, test_model_rhs

    out = {{}}
    P, y0 = seir_sample(40, seed=7)
    P[3, 0] = np.nan
    t = np.arange(0.0, 120.0, 2.0)
    g = solve_batch("seir", P, y0, t, backend="gpu", progress=False)
    c = solve_batch("seir", P, y0, t, backend="cpu", progress=False)
    out["seir_bundled"] = g.bundling is not None
    out["seir_max_abs"] = float(np.nanmax(np.abs(g.states - c.states)))
    out["seir_nan_same"] = bool(np.array_equal(np.isnan(g.states),
                                               np.isnan(c.states)))
    out["seir_stats_same"] = bool(
        np.array_equal(g.status, c.status)
        and np.array_equal(g.n_accepted, c.n_accepted)
        and np.array_equal(g.n_rejected, c.n_rejected)
        and np.array_equal(g.nfev, c.nfev))
    out["status3"] = int(g.status[3])

    Ppk = np.array([[0.01, 0.05, 0.03, 3.0, 0.5, 0.05, 0.1, 0.2, 0.05],
                    [0.02, 0.1, 0.05, 2.5, 2.0, 0.2, 0.02, 0.5, 0.1]])
    tk = np.linspace(0.0, 100.0, 11)
    gk = solve_batch("pk", Ppk, pk_initial_state(100.0, Ppk), tk,
                     backend="gpu", rtol=1e-7, atol=1e-9, progress=False)
    ck = solve_batch("pk", Ppk, pk_initial_state(100.0, Ppk), tk,
                     backend="cpu", rtol=1e-7, atol=1e-9, progress=False)
    out["pk_max_rel"] = float(np.max(np.abs(gk.states - ck.states)
                                     / (1e-300 + np.abs(ck.states))))
    out["pk_steps_same"] = bool(np.array_equal(gk.n_accepted, ck.n_accepted))

    osc = ode_model(test_model_rhs, ["w", "k", "c"], ["x", "v", "z"])
    Po = np.array([[1.0, 0.5, 0.0], [2.0, 0.0, 1.0]])
    go = solve_batch(osc, Po, [1.0, 0.0, 1.0], [0.0, 0.5, 2.0],
                     backend="gpu", progress=False)
    out["user_status"] = go.status.tolist()
    out["user_x"] = float(go.states[0, 2, 0])
    print("RESULT" + json.dumps(out))
""")


def test_gpu_kernel_in_simulator_matches_cpu():
    env = dict(os.environ)
    env["NUMBA_ENABLE_CUDASIM"] = "1"
    env["PYTHONPATH"] = os.pathsep.join(
        [str(SRC)] + [p for p in [env.get("PYTHONPATH")] if p])
    code = SCRIPT.format(tests=str(Path(__file__).resolve().parent))
    proc = subprocess.run([sys.executable, "-c", code], env=env,
                          capture_output=True, text=True, timeout=300)
    if proc.returncode != 0:
        if "CUDA" in proc.stderr and "simulator" in proc.stderr.lower() \
                and "ImportError" in proc.stderr:
            pytest.skip("numba CUDA simulator unavailable")
        raise AssertionError(proc.stderr[-4000:])
    line = [ln for ln in proc.stdout.splitlines()
            if ln.startswith("RESULT")][-1]
    out = json.loads(line[len("RESULT"):])
    assert out["seir_bundled"]  # bundling is on by default for the GPU
    assert out["seir_max_abs"] <= 1e-6  # populations of 1e6
    assert out["seir_nan_same"] and out["seir_stats_same"]
    assert out["status3"] == 3
    assert out["pk_max_rel"] < 1e-12 and out["pk_steps_same"]
    assert out["user_status"] == [0, 2]
    assert abs(out["user_x"] - __import__("math").cos(2.0)) < 1e-5


def test_gpu_kernel_compiles_to_ptx(ptx_compiler):
    """Without a GPU, still type-check and lower the real CUDA kernel (not
    the simulator) through NVVM to PTX for sm_90, for a built-in and a user
    model. Skipped where NVVM (the CUDA toolkit's compiler library) is
    missing or the simulator is enabled in this process."""
    from numba import float64, int64, void

    from riskset.ode import gpu, ode_model
    from riskset.ode.models import SEIR

    from .helpers import test_model_rhs

    cuda = ptx_compiler
    sig = void(float64[:, ::1], float64[:, ::1], float64, float64[::1],
               float64, float64[::1], int64, float64[:, :, ::1],
               int64[:, ::1])
    user = ode_model(test_model_rhs, ["w", "k", "c"], ["x", "v", "z"])
    for model in (SEIR, user):
        kernel = gpu._build(model)  # fresh, not the process-wide cache
        ptx, _ = cuda.compile_ptx(kernel.py_func, sig, device=False,
                                  cc=(9, 0))
        assert ".entry" in ptx and "sm_90" in ptx
