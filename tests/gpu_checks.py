"""GPU backend checks, run by tests/test_gpu.py in a subprocess under Numba's CUDA simulator.

``python tests/gpu_checks.py OUT.json [check ...]`` runs the named checks (all by
default) and writes {check: "ok" | error text} to OUT.json. NUMBA_ENABLE_CUDASIM=1
must be set before Python starts (numba.cuda picks simulator mode at import time).
Inputs are tiny: the simulator runs every GPU thread as a Python thread.
"""
from __future__ import annotations

import dataclasses
import json
import sys
import time
import traceback
import warnings

import numpy as np

sys.setswitchinterval(1e-4)  # the simulator's block manager polls its threads: switch often

import riskset  # noqa: E402
from riskset.kernels.gpu import fit_replicates, to_device  # noqa: E402
from riskset.solver.ccd import SolverOptions, fit_ccd  # noqa: E402

CHECKS = {}


def check(fn):
    CHECKS[fn.__name__] = fn
    return fn


def rel(a, b, floor=1e-3):
    a, b = np.asarray(a, float), np.asarray(b, float)
    return float(np.max(np.abs(a - b) / np.maximum(np.abs(b), floor))) if a.size else 0.0


def close(a, b, tol, what):
    err = rel(a, b)
    if not err <= tol:
        raise AssertionError(f"{what}: relative difference {err:.3g} > {tol:g}\n"
                             f" gpu {np.asarray(a)}\n cpu {np.asarray(b)}")


def data_for(model, n=100, p=5, seed=3, strata=False):
    data = riskset.simulate(n=n, p=p, model=model, seed=seed)
    if model == "cox":  # about 20 distinct times (ties; few slots keep the simulator quick)
        t = np.asarray(data.time, float)
        coarse = np.searchsorted(np.quantile(t, np.linspace(0, 1, 21)), t).astype(float) + 1.0
        data = dataclasses.replace(data, time=coarse)
    if strata:
        data = dataclasses.replace(data, strata=np.arange(data.n_rows) % 3)
    return data


# -- kernels against the CPU kernels, one step at a time ---------------------------------
def _sweep_check(model, strata=False, dtype="float64", tol=1e-12):
    data = data_for(model, strata=strata)
    df = riskset.models.get_model(model).datafit(data)
    dev = to_device(df, dtype=dtype)
    p = df.n_coef
    rng = np.random.default_rng(5)
    beta = rng.normal(scale=0.3, size=p)
    sc, sg = df.new_state(beta), dev.new_state(beta)
    close(dev.loglik(sg), df.loglik(sc), tol, f"{model} loglik")
    for j in range(p):
        close(dev.coordinate(sg, j), df.coordinate(sc, j), tol, f"{model} coordinate {j}")
    close(dev.gradient(sg), df.gradient(sc), tol, f"{model} gradient")
    close(dev.hessian(sg, np.arange(p)), df.hessian(sc, np.arange(p)), tol, f"{model} hessian")
    l1, l2 = np.full(p, 0.5), np.full(p, 0.1)
    bc, bg = beta.copy(), beta.copy()
    rc, rg = np.full(p, 0.7), np.full(p, 0.7)
    for _ in range(3):  # three whole sweeps: the device path must follow the CPU one step by step
        df.cycle(sc, np.arange(p), bc, l1, l2, rc)
        dev.cycle(sg, np.arange(p), bg, l1, l2, rg)
        close(bg, bc, tol, f"{model} beta after a sweep")
        close(rg, rc, tol, f"{model} trust region after a sweep")
        close(dev.loglik(sg), df.loglik(sc), tol, f"{model} loglik after a sweep")
    dev.move(sg, 1, 0.25)
    df.move(sc, 1, 0.25)
    close(dev.coordinate(sg, 2), df.coordinate(sc, 2), tol, f"{model} coordinate after move")


@check
def sweep_logistic():
    _sweep_check("logistic")


@check
def sweep_poisson():
    _sweep_check("poisson")


@check
def sweep_least_squares():
    _sweep_check("least_squares")


@check
def sweep_cox():
    _sweep_check("cox")


@check
def sweep_cox_strata():
    _sweep_check("cox", strata=True)


@check
def sweep_cox_float32():
    _sweep_check("cox", dtype="float32", tol=1e-5)


# -- whole fits through riskset.fit -------------------------------------------------------
def _fit_check(model, dtype, tol, strata=False, gamma=0.8):
    data = data_for(model, strata=strata, n=120, seed=7)
    prior = riskset.Laplace(gamma=gamma)
    cpu = riskset.fit(data, model, prior)
    gpu = riskset.fit(data, model, prior, backend="gpu", dtype=dtype)
    assert gpu.converged, gpu.message
    assert np.count_nonzero(cpu.coef.values) >= 2, "test data: too few non-zero coefficients"
    close(gpu.coef.values, cpu.coef.values, tol, f"{model} {dtype} coefficients")
    close(gpu.loglik, cpu.loglik, tol, f"{model} {dtype} loglik")


@check
def fit_logistic():
    _fit_check("logistic", "float64", 1e-8)


@check
def fit_poisson():
    _fit_check("poisson", "float64", 1e-8)


@check
def fit_cox():
    _fit_check("cox", "float64", 1e-8)


@check
def fit_cox_strata():
    _fit_check("cox", "float64", 1e-8, strata=True)


@check
def fit_logistic_float32():
    _fit_check("logistic", "float32", 1e-4)


@check
def fit_cox_float32():
    _fit_check("cox", "float32", 1e-4)


def _ccd_only(model, strata=False):
    """Without the host Newton polish: the device CCD alone reaches the CPU CCD result."""
    data = data_for(model, strata=strata, n=120, seed=11)
    df = riskset.models.get_model(model).datafit(data)
    p = df.n_coef
    l1 = np.full(p, 0.8)
    if model != "cox":
        l1[0] = 0.0
    opts = SolverOptions(tol=1e-13, polish_max_active=0)
    c = fit_ccd(df, l1, np.zeros(p), options=opts)
    g = fit_ccd(to_device(df), l1, np.zeros(p), options=opts)
    assert g.converged and c.converged, (g.message, c.message)
    close(g.beta, c.beta, 1e-8, f"{model} CCD without polish")


@check
def ccd_logistic_no_polish():
    _ccd_only("logistic")


@check
def ccd_cox_strata_no_polish():
    _ccd_only("cox", strata=True)


# -- batched replicates ----------------------------------------------------------------------
def _replicates_check(model, strata=False):
    data = data_for(model, strata=strata, n=60, p=4, seed=13)
    df = riskset.models.get_model(model).datafit(data)
    p = df.n_coef
    rng = np.random.default_rng(1)
    R = 3
    W = rng.poisson(1.0, size=(R, df.n_rows)).astype(float)
    W[0] = (rng.random(df.n_rows) < 0.8).astype(float)  # a cross-validation fold
    l1 = np.tile(np.full(p, 0.6), (R, 1))
    l1[2] *= 3.0  # a different grid point
    if model != "cox":
        l1[:, 0] = 0.0
    res = fit_replicates(df, W, l1, tol=1e-10)
    assert res.converged.all(), res.messages
    for r in range(R):
        view = df.reweighted(W[r])
        c = fit_ccd(view, l1[r], np.zeros(p))
        close(res.beta[r], c.beta, 1e-8, f"{model} replicate {r} coefficients")
        close(res.loglik[r], c.loglik, 1e-8, f"{model} replicate {r} loglik")


@check
def replicates_logistic():
    _replicates_check("logistic")


@check
def replicates_cox_strata():
    _replicates_check("cox", strata=True)


@check
def cross_validation_and_bootstrap_on_device():
    """backend='gpu' runs every split (every bootstrap draw) in one device batch; the
    scores and estimates equal the CPU ones."""
    data = data_for("logistic", n=80, p=3, seed=5)
    prior = riskset.Laplace(gamma=1.0)
    kw = dict(variances=[0.05, 0.5], n_folds=3, progress=False, refit=False)
    gpu = riskset.cross_validate(data, "logistic", prior, backend="gpu", **kw)
    cpu = riskset.cross_validate(data, "logistic", prior, **kw)
    close(gpu.scores["score"], cpu.scores["score"], 1e-8, "cross-validation scores")
    gpu = riskset.bootstrap(data, "logistic", prior, n_boot=3, progress=False, backend="gpu")
    cpu = riskset.bootstrap(data, "logistic", prior, n_boot=3, progress=False)
    close(gpu.estimates.to_numpy(), cpu.estimates.to_numpy(), 1e-8, "bootstrap estimates")


@check
def profile_intervals_on_device():
    """backend='gpu' fits each round of the profile searches as one device batch (the
    coefficient fixed per replicate); the intervals equal the CPU ones."""
    for model, profile in (("cox", ["x0", "x1"]), ("logistic", ["x0"])):
        data = data_for(model, n=60, p=3, seed=7)
        gpu = riskset.fit(data, model, profile=profile, backend="gpu")
        cpu = riskset.fit(data, model, profile=profile)
        close(gpu.intervals[["lower", "upper"]].to_numpy(), cpu.intervals[["lower", "upper"]].to_numpy(), 1e-7,
              f"{model} profile intervals")


# -- unsupported families ----------------------------------------------------------------------
@check
def unsupported_family():
    from riskset.models.base import Datafit

    class OddDatafit(Datafit):
        def new_state(self, beta): ...
        def loglik(self, state): ...
        def coordinate(self, state, j): ...
        def move(self, state, j, delta): ...
        def gradient(self, state): ...
        def hessian(self, state, columns): ...

    import scipy.sparse as sp

    try:
        to_device(OddDatafit(sp.csc_matrix(np.eye(3))))
    except NotImplementedError as err:
        assert "OddDatafit" in str(err), str(err)
    else:
        raise AssertionError("no NotImplementedError for an unsupported family")
    data = riskset.from_arrays(np.eye(4)[[0, 1, 2, 3, 0, 1]], time=np.array([1.0, 1, 2, 2, 3, 3]),
                               status=np.ones(6))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        df = riskset.models.get_model("cox", ties="efron").datafit(data)
    try:
        to_device(df)
    except NotImplementedError as err:
        assert "efron" in str(err).lower(), str(err)
    else:
        raise AssertionError("no NotImplementedError for Efron ties")


def main(argv):
    out, names = argv[0], argv[1:] or list(CHECKS)
    results = {}
    for name in names:
        t0 = time.perf_counter()
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                CHECKS[name]()
            results[name] = "ok"
        except Exception:  # reported to the test, which fails with the text
            results[name] = traceback.format_exc()
        print(f"{name}: {time.perf_counter() - t0:.1f} s", file=sys.stderr)
        with open(out, "w") as f:
            json.dump(results, f)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
