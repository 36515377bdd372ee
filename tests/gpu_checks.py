"""GPU backend checks, run by tests/test_gpu.py in a subprocess under Numba's CUDA simulator.

``python tests/gpu_checks.py OUT.json [check ...]`` runs the named checks (all by
default) and writes {check: "ok" | error text} to OUT.json; ``--list`` prints the
names of all checks as JSON. NUMBA_ENABLE_CUDASIM=1
must be set before Python starts (numba.cuda picks simulator mode at import time).
Inputs are tiny: the simulator runs every GPU thread as a Python thread.
"""
from __future__ import annotations

import dataclasses
import functools
import json
import sys
import time
import traceback
import warnings

import numpy as np
import scipy.sparse as sp
from numba import cuda, float64, int32

sys.setswitchinterval(1e-4)  # the simulator's block manager polls its threads: switch often

import riskset  # noqa: E402
from riskset.data.dataset import Dataset  # noqa: E402
from riskset.kernels.gpu import replicate_batch, to_device  # noqa: E402
from riskset.kernels.gpu.device import MAX_THREADS, device_copy, grid_blocks, threads_per_block  # noqa: E402
from riskset.kernels.gpu.gridscan import grid_segscan2  # noqa: E402
from riskset.solver.ccd import SolverOptions, fit_ccd  # noqa: E402
from riskset.solver.replicates import fit_replicates  # noqa: E402

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


def close_coordinate(a, b, tol, what):
    """(g, h) of one coordinate: h relative to max(|h|, 1e-3), g relative to max(|g|, 1e-3, 1e-3 |h|),
    i.e. the Newton step g / h to ``tol`` (steps below 1e-3 in absolute terms): near a coordinate's
    optimum g is far smaller than its terms and differs by their rounding (so do the CPU's own
    sparse and scan formulations)."""
    (ga, ha), (gb, hb) = a, b
    close(ha, hb, tol, f"{what} (h)")
    err = abs(ga - gb) / max(abs(gb), 1e-3, 1e-3 * abs(hb))
    if not err <= tol:
        raise AssertionError(f"{what} (g): relative difference {err:.3g} > {tol:g}\n gpu {a}\n cpu {b}")


#: models conditioning on the stratum (strata are their resampling units; no intercept)
CONDITIONAL = ("conditional_poisson", "sccs", "conditional_logistic")


def conditional_data(model, n, p, seed):
    """Strata of 2-6 rows (the last one may be cut short): counts with an offset (log era
    length) for conditional Poisson and SCCS, 1-3 cases per matched set for conditional
    logistic (n:m sets for the exact likelihood); column 0 is an indicator."""
    rng = np.random.default_rng(seed)
    strata = np.repeat(np.arange(n), rng.integers(2, 7, n))[:n]
    X = rng.normal(size=(n, p)) * (rng.random((n, p)) < 0.5)
    X[:, 0] = rng.integers(0, 2, n)
    eta = X @ np.linspace(0.8, -0.5, p)
    offset = None
    if model == "conditional_logistic":
        score = eta + rng.gumbel(size=n)
        y = np.zeros(n)
        for s in np.unique(strata):
            rows = np.flatnonzero(strata == s)
            m = rng.integers(1, min(3, rows.size - 1) + 1) if rows.size > 1 else 1
            y[rows[np.argsort(-score[rows])[:m]]] = 1.0
    else:
        offset = np.log(rng.uniform(1, 20, n))
        y = rng.poisson(np.exp(eta + offset - 2.0)).astype(float)
    return Dataset(X=sp.csc_matrix(X), covariate_names=[f"x{j}" for j in range(p)], row_ids=np.arange(n), y=y,
                   strata=strata, offset=offset)


def data_for(model, n=100, p=5, seed=3, strata=False, start=False, density=None):
    """Small data for ``model``; ``density`` of X defaults to 0.3 for Fine-Gray (runs of
    non-zeros span several simulator chunks), 0.05 otherwise."""
    if model in CONDITIONAL:
        return conditional_data(model, n, p, seed)
    fine_gray = model == "fine_gray"
    data = riskset.simulate(n=n, p=p, model="cox" if fine_gray else model, seed=seed,
                            density=density if density is not None else 0.3 if fine_gray else 0.05)
    if model in ("cox", "fine_gray"):  # about 20 distinct times (ties; few slots keep the simulator quick)
        t = np.asarray(data.time, float)
        coarse = np.searchsorted(np.quantile(t, np.linspace(0, 1, 21)), t).astype(float) + 1.0
        data = dataclasses.replace(data, time=coarse)
    if fine_gray:  # a third of the events become competing events, tied with events and censorings
        status = np.asarray(data.status).copy()
        status[(status == 1) & (np.random.default_rng(seed).random(n) < 0.35)] = 2
        data = dataclasses.replace(data, status=status)
    if start:  # (start, stop] rows: late entries for about half of them, some at tied times
        rng = np.random.default_rng(seed + 100)
        st = np.floor(rng.random(data.n_rows) * np.asarray(data.time) * 0.8)
        data = dataclasses.replace(data, start=np.where(rng.random(data.n_rows) < 0.5, 0.0, st))
    if strata:
        data = dataclasses.replace(data, strata=np.arange(data.n_rows) % 3)
    return data


#: X density of the checks of (start, stop] rows and Efron ties: columns of 15 to 40 non-zeros
#: (30 to 80 breakpoints), so that the column walks span many chunks of the simulator's
#: 4-thread blocks; the whole fits use FIT_DENSE (the simulator is slow).
DENSE, FIT_DENSE = 0.3, 0.2


def _datafit(model, data, **options):
    return riskset.models.get_model(model, **options).datafit(data)


# -- kernels against the CPU kernels, one step at a time ---------------------------------
def _sweep_check(model, strata=False, dtype="float64", tol=1e-12, start=False, density=None, **options):
    data = data_for(model, strata=strata, start=start, density=density)
    df = _datafit(model, data, **options)
    if model == "cox":
        assert df.has_start == start
        assert df.efron == (options.get("ties") == "efron"), "test data: no tied event times"
    dev = to_device(df, dtype=dtype)
    p = df.n_coef
    rng = np.random.default_rng(5)
    beta = rng.normal(scale=0.3, size=p)
    sc, sg = df.new_state(beta), dev.new_state(beta)
    close(dev.loglik(sg), df.loglik(sc), tol, f"{model} loglik")
    for j in range(p):
        close_coordinate(dev.coordinate(sg, j), df.coordinate(sc, j), tol, f"{model} coordinate {j}")
    close(dev.gradient(sg), df.gradient(sc), tol, f"{model} gradient")
    close(dev.hessian(sg, np.arange(p)), df.hessian(sc, np.arange(p)), tol, f"{model} hessian")
    cols = np.arange(1, p)  # the Newton polish's model (on the device for a single Cox or GLM fit in float64)
    qc, qg = df.local_quadratic(sc, cols), dev.local_quadratic(sg, cols)
    close(dev.information_scale(sg, cols), df.information_scale(sc, cols), tol, f"{model} information scale")
    assert (qg is None) == (qc is None), f"{model}: a local quadratic on one side only"
    if qc is not None:  # (None: the family has none, e.g. exact conditional logistic)
        close(qg.gradient, qc.gradient, tol, f"{model} polish gradient")
        close(qg.curvature, qc.curvature, tol, f"{model} polish curvature")
        b = rng.normal(size=cols.size)
        close(qg.hessian_times(b), qc.hessian_times(b), tol, f"{model} Hessian-vector product")
        close(qg.hessian_times(2 * b), qc.hessian_times(2 * b), tol, f"{model} second Hessian-vector product")
        # every coefficient, a GLM's intercept among them: its position and Hessian column as the CPU's
        qc, qg = df.local_quadratic(sc, np.arange(p)), dev.local_quadratic(sg, np.arange(p))
        assert qg.intercept == qc.intercept, f"{model}: the polish's intercept {qg.intercept} != {qc.intercept}"
        if qc.intercept is not None:
            close(qg.coupling, qc.coupling, tol, f"{model} intercept's Hessian column")
    prior = sweep_prior(beta)
    bc, bg = beta.copy(), beta.copy()
    rc, rg = np.full(p, 0.7), np.full(p, 0.7)
    for _ in range(3):  # three whole sweeps: the device path must follow the CPU one step by step
        df.sweep(sc, np.arange(p), bc, prior, rc)
        dev.sweep(sg, np.arange(p), bg, prior, rg)
        close(bg, bc, tol, f"{model} beta after a sweep")
        close(rg, rc, tol, f"{model} trust region after a sweep")
        close(dev.loglik(sg), df.loglik(sc), tol, f"{model} loglik after a sweep")
    dev.move(sg, 1, 0.25)
    df.move(sc, 1, 0.25)
    close_coordinate(dev.coordinate(sg, 2), df.coordinate(sc, 2), tol, f"{model} coordinate after move")


def sweep_prior(beta):
    """A penalty table (l1, l2, center) for the sweep checks: prior means off zero (location
    priors), coefficient 0 unpenalized, coefficient 1 starting at its center (the screen)."""
    p = beta.shape[0]
    prior = np.stack([np.full(p, 0.5), np.full(p, 0.1), np.linspace(-0.2, 0.3, p)], axis=1)
    prior[0, :2] = 0.0
    prior[1, 2] = beta[1]
    return prior


def _segscan_reference(x, heads, reverse, exclusive):
    """Segmented scan of x in plain Python (the definition in riskset.kernels.gpu.gridscan), summed in
    extended precision so that its own rounding does not count against the scan under test."""
    n = x.shape[0]
    out = np.empty(n, np.longdouble)
    acc = np.longdouble(0.0)
    for q in range(n):
        p = n - 1 - q if reverse else q
        if heads[p]:
            acc = 0.0
        out[p] = acc if exclusive else acc + x[p]
        acc += x[p]
    return out


@cuda.jit
def _grid_scan_kernel(src, dst, heads, hmask, reverse, exclusive, part):
    """Both rows of ``src`` scanned into ``dst`` by one two-value grid scan (cooperative launch)."""
    sv = cuda.shared.array(MAX_THREADS, float64)
    sw = cuda.shared.array(MAX_THREADS, float64)
    sf = cuda.shared.array(MAX_THREADS, int32)
    grid_segscan2(src, src, dst, dst, 0, 1, src.shape[1], True, heads, 0, hmask, reverse, exclusive, part, 0, sv, sw,
                  sf)


@check
def grid_scans():
    """The grid scan of the cooperative single-fit kernels against its definition: forward and
    reverse, inclusive and exclusive, with and without segment heads, two value arrays at
    once, over one block (simulator) or one per multiprocessor (device), for lengths below,
    at and above the number of threads."""
    nt = threads_per_block()
    nb = grid_blocks(nt)
    rng = np.random.default_rng(17)
    for n in (1, nt * nb - 1, 3 * nt * nb + 5):
        x = rng.normal(size=(2, n))
        heads = (rng.random(n) < 0.2).astype(np.uint8)
        heads[0] = 1
        for hmask in (0, 1):
            for reverse in (False, True):
                for exclusive in (False, True):
                    dst = device_copy(np.zeros((2, n)))
                    _grid_scan_kernel[nb, nt](device_copy(x), dst, device_copy(heads), hmask, reverse, exclusive,
                                              device_copy(np.zeros((4, 3, nb))))
                    got = dst.copy_to_host()
                    for row in (0, 1):
                        want = _segscan_reference(x[row], heads * hmask, reverse, exclusive)
                        # A scan in another order rounds each partial sum by up to ~log2(n) eps times the
                        # sum of |x| it covers, not times its value (which crosses zero).
                        scale = _segscan_reference(np.abs(x[row]), heads * hmask, reverse, False)
                        err = float(np.max(np.abs(got[row] - want) / scale))
                        assert err <= 1e-13, (f"grid scan n={n} heads={hmask} reverse={reverse} exclusive={exclusive}"
                                              f" row {row}: error {err:.3g} of the sum of |x| > 1e-13")


@check
def float32_range_refused():
    """A covariate value float32 cannot square is refused by name, not turned into inf on the device."""
    X = np.eye(4)
    X[2, 1] = 1e30
    data = riskset.from_arrays(X, y=np.array([0.0, 1.0, 0.0, 1.0]))
    try:
        riskset.fit(data, "logistic", backend="gpu", dtype="float32")
    except riskset.InputError as err:
        assert "'x1'" in str(err) and "1e+30" in str(err), str(err)
    else:
        raise AssertionError("a value of 1e30 was accepted on a float32 device")


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


@check
def sweep_fine_gray():
    _sweep_check("fine_gray")


@check
def sweep_fine_gray_float32():
    _sweep_check("fine_gray", dtype="float32", tol=1e-5)


@check
def sweep_conditional_poisson():
    _sweep_check("conditional_poisson")


@check
def sweep_conditional_poisson_float32():
    _sweep_check("conditional_poisson", dtype="float32", tol=1e-5)


@check
def sweep_conditional_logistic_exact():
    _sweep_check("conditional_logistic", ties="exact")


@check
def sweep_conditional_logistic_breslow():
    _sweep_check("conditional_logistic", ties="breslow")


@check
def sweep_cox_startstop():
    _sweep_check("cox", start=True, density=DENSE)


@check
def sweep_cox_startstop_strata():
    _sweep_check("cox", start=True, strata=True, density=DENSE)


@check
def sweep_cox_efron():
    _sweep_check("cox", ties="efron", density=DENSE)


@check
def sweep_cox_efron_startstop_strata():
    _sweep_check("cox", ties="efron", start=True, strata=True, density=DENSE)


# -- whole fits through riskset.fit -------------------------------------------------------
def _fit_check(model, dtype, tol, strata=False, gamma=0.8, start=False, density=None, **options):
    data = data_for(model, strata=strata, n=120, seed=7, start=start, density=density)
    prior = riskset.Laplace(gamma=gamma)
    cpu = riskset.fit(data, model, prior, **options)
    gpu = riskset.fit(data, model, prior, backend="gpu", dtype=dtype, **options)
    assert gpu.converged, gpu.message
    assert np.count_nonzero(cpu.coef.values) >= 2, "test data: too few non-zero coefficients"
    close(gpu.coef.values, cpu.coef.values, tol, f"{model} {dtype} coefficients")
    close(gpu.loglik, cpu.loglik, tol, f"{model} {dtype} loglik")


def _uncentered_check(model):
    """An uncentered calendar year (linear predictor ~400, conditional Poisson ~800): the device
    fit equals the CPU's with the year centered (the likelihood is invariant to the shift; before
    the device's weights were unshifted: d / D^2 underflowed to 0 in the risk-set families'
    Hessian terms, exp(eta) overflowed in the conditional ones)."""
    rng = np.random.default_rng(11)
    n = 150
    year, z = 1950 + rng.uniform(0, 50, n), rng.normal(size=n)
    slope = 0.4 if model == "conditional_poisson" else 0.2  # eta ~ 800: exp overflows unshifted
    lin = slope * (year - 1975) + 0.5 * z
    if model == "conditional_poisson":
        outcome = dict(y=rng.poisson(np.exp(lin - lin.max())).astype(float), strata=np.arange(n) % 3)
    else:
        status = rng.binomial(1, 0.8, n) * (rng.integers(1, 3, n) if model == "fine_gray" else 1)
        outcome = dict(time=rng.exponential(np.exp(-lin)), status=status)
        if model == "cox":
            outcome["strata"] = np.arange(n) % 3

    def data(center):
        return riskset.from_arrays(np.c_[year - center, z], **outcome)

    raw, centered = _datafit(model, data(0.0)), _datafit(model, data(1975.0))
    beta = np.array([slope, 0.5])
    dev = to_device(raw)
    sg, sc = dev.new_state(beta), centered.new_state(beta)
    close(dev.loglik(sg), centered.loglik(sc), 1e-10, f"{model} uncentered loglik at beta")
    for j in range(2):  # the curvature's second term (d / D^2) included
        close_coordinate(dev.coordinate(sg, j), centered.coordinate(sc, j), 1e-10, f"{model} uncentered coordinate {j}")
    cpu = riskset.fit(data(1975.0), model)
    gpu = riskset.fit(data(0.0), model, backend="gpu")
    assert gpu.converged, gpu.message
    close(gpu.coef.values, cpu.coef.values, 1e-8, f"{model} uncentered coefficients")
    close(gpu.loglik, cpu.loglik, 1e-8, f"{model} uncentered loglik")


@check
def fit_cox_strata_uncentered():
    _uncentered_check("cox")


@check
def fit_fine_gray_uncentered():
    _uncentered_check("fine_gray")


@check
def fit_conditional_poisson_uncentered():
    _uncentered_check("conditional_poisson")


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
def fit_cox_startstop():
    _fit_check("cox", "float64", 1e-8, start=True, density=FIT_DENSE)


@check
def fit_cox_startstop_strata():
    _fit_check("cox", "float64", 1e-8, start=True, strata=True, density=FIT_DENSE)


@check
def fit_cox_efron():
    _fit_check("cox", "float64", 1e-8, ties="efron", density=FIT_DENSE)


@check
def fit_cox_efron_startstop():
    _fit_check("cox", "float64", 1e-8, start=True, ties="efron", density=FIT_DENSE)


@check
def fit_cox_time_varying():
    """A step-function coefficient (the CPU splits follow-up into (start, stop] pieces)."""
    _fit_check("cox", "float64", 1e-8, gamma=0.5, time_varying={"x0": [8.0]}, ties="efron", density=FIT_DENSE)


@check
def fit_logistic_float32():
    _fit_check("logistic", "float32", 1e-4)


@check
def fit_cox_float32():
    _fit_check("cox", "float32", 1e-4)


@check
def fit_fine_gray():
    _fit_check("fine_gray", "float64", 1e-8)


@check
def fit_fine_gray_float32():
    _fit_check("fine_gray", "float32", 1e-4)


@check
def fit_sccs():
    _fit_check("sccs", "float64", 1e-8)


@check
def fit_conditional_poisson_float32():
    _fit_check("conditional_poisson", "float32", 1e-4)


@check
def fit_conditional_logistic_exact():
    _fit_check("conditional_logistic", "float64", 1e-8, ties="exact")


@check
def fit_conditional_logistic_breslow():
    _fit_check("conditional_logistic", "float64", 1e-8, ties="breslow")


@check
def fit_conditional_logistic_float32():
    _fit_check("conditional_logistic", "float32", 1e-4, ties="exact")


def _ccd_only(model, strata=False, start=False, density=None, **options):
    """Without the host Newton polish: the device CCD alone reaches the CPU CCD result."""
    data = data_for(model, strata=strata, n=120, seed=11, start=start, density=density)
    df = _datafit(model, data, **options)
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


@check
def ccd_fine_gray_no_polish():
    _ccd_only("fine_gray")


@check
def ccd_conditional_logistic_no_polish():
    _ccd_only("conditional_logistic")  # exact n:m sets


@check
def ccd_cox_efron_startstop_no_polish():
    _ccd_only("cox", strata=True, start=True, ties="efron", density=FIT_DENSE)


# -- batched replicates ----------------------------------------------------------------------
def _replicates_check(model, strata=False, R=3, start=False, density=None, **options):
    data = data_for(model, strata=strata, n=60, p=4, seed=13, start=start, density=density)
    df = _datafit(model, data, **options)
    p = df.n_coef
    rng = np.random.default_rng(1)
    # weights per resampling unit: the row, or for the conditional models the whole stratum
    unit = np.asarray(data.strata) if model in CONDITIONAL else np.arange(df.n_rows)
    n_units = int(unit.max()) + 1
    W = rng.poisson(1.0, size=(R, n_units)).astype(float)
    W[0] = (rng.random(n_units) < 0.8).astype(float)  # a cross-validation fold
    W = W[:, unit]
    l1 = np.tile(np.full(p, 0.6), (R, 1))
    if R > 2:
        l1[2] *= 3.0  # a different grid point
    if model != "cox" and model not in CONDITIONAL:  # the intercept
        l1[:, 0] = 0.0
    center = np.zeros((R, p))
    center[-1] = np.linspace(0.2, -0.1, p)  # a location prior
    opts = SolverOptions(tol=1e-10)
    res = fit_replicates(replicate_batch(df, W), l1, 0.0, options=opts, center=center)
    assert res.converged.all(), res.messages
    for r in range(R):
        view = df.reweighted(W[r])
        c = fit_ccd(view, l1[r], np.zeros(p), options=opts, center=center[r])
        close(res.beta[r], c.beta, 1e-8, f"{model} replicate {r} coefficients")
        close(res.loglik[r], c.loglik, 1e-8, f"{model} replicate {r} loglik")


@check
def replicates_logistic():
    _replicates_check("logistic")


@check
def replicates_cox_strata():
    _replicates_check("cox", strata=True)


@check
def replicates_fine_gray():
    """Each weighting has its own censoring Kaplan-Meier G: the batch must equal the CPU views."""
    _replicates_check("fine_gray")


@check
def replicates_conditional_poisson():
    _replicates_check("conditional_poisson")


@check
def replicates_conditional_logistic_exact():
    _replicates_check("conditional_logistic", ties="exact")


@check
def replicates_cox_startstop():
    """Two weightings (a fold, a bootstrap draw) of (start, stop] data."""
    _replicates_check("cox", R=2, start=True, density=DENSE)


@check
def replicates_cox_efron_startstop():
    """Efron ties per replicate: the fold's zero weights change the tie counts m."""
    _replicates_check("cox", R=2, start=True, ties="efron", density=DENSE)


# -- profile likelihood, cross-validation and the bootstrap on the device, every family --------------
#: every family (and Cox variant) with device kernels: (model, data_for options, model options).
#: The GLMs and Cox get denser columns so that the profiled coefficients have finite bounds.
DEVICE_FAMILIES = {
    "logistic": ("logistic", dict(density=FIT_DENSE), {}),
    "poisson": ("poisson", dict(density=FIT_DENSE), {}),
    "least_squares": ("least_squares", dict(density=FIT_DENSE), {}),
    "cox": ("cox", dict(density=FIT_DENSE), {}),
    "cox_efron_strata": ("cox", dict(density=FIT_DENSE, strata=True), dict(ties="efron")),
    "cox_startstop": ("cox", dict(density=FIT_DENSE, start=True), {}),
    "fine_gray": ("fine_gray", {}, {}),
    "conditional_poisson": ("conditional_poisson", {}, {}),
    "sccs": ("sccs", {}, {}),
    "conditional_logistic_breslow": ("conditional_logistic", {}, dict(ties="breslow")),
    "conditional_logistic_exact": ("conditional_logistic", {}, dict(ties="exact")),
}


def _family_data(family, n=60):
    model, data_options, options = DEVICE_FAMILIES[family]
    return model, data_for(model, n=n, p=3, seed=5, **data_options), options


def _profile_check(family):
    """backend='gpu' fits each round of the profile searches (four, in lockstep) as one device
    batch of replicates with the datafit's own case weights; the bounds equal the CPU ones."""
    model, data, options = _family_data(family)
    cpu = riskset.fit(data, model, profile=["x0", "x1"], **options)
    gpu = riskset.fit(data, model, profile=["x0", "x1"], backend="gpu", **options)
    bounds = cpu.intervals[["lower", "upper"]].to_numpy()
    assert np.all(np.isfinite(bounds)), f"test data: the CPU profile interval is not finite: {bounds}"
    close(gpu.intervals[["lower", "upper"]].to_numpy(), bounds, 1e-7, f"{family} profile interval")


def _cross_validation_check(family):
    """backend='gpu' fits every training split in one device batch and scores the held-out
    weightings there; the scores equal the CPU ones."""
    model, data, options = _family_data(family)
    kw = dict(variances=[0.05, 5.0], n_folds=3, progress=False, refit=False, **options)
    cpu = riskset.cross_validate(data, model, riskset.Laplace(gamma=1.0), **kw)
    gpu = riskset.cross_validate(data, model, riskset.Laplace(gamma=1.0), backend="gpu", **kw)
    assert np.ptp(cpu.scores["score"]) > 0, "test data: every split scores the same"
    close(gpu.scores["score"], cpu.scores["score"], 1e-8, f"{family} cross-validation scores")


def _bootstrap_check(family):
    """backend='gpu' fits every bootstrap draw (counts of rows, or of whole strata) in one
    device batch; the estimates equal the CPU ones."""
    model, data, options = _family_data(family)
    prior = riskset.Laplace(gamma=1.0)
    cpu = riskset.bootstrap(data, model, prior, n_boot=3, progress=False, **options)
    gpu = riskset.bootstrap(data, model, prior, n_boot=3, progress=False, backend="gpu", **options)
    assert np.ptp(cpu.estimates.to_numpy(), axis=0).max() > 0, "test data: every draw gives the same estimates"
    close(gpu.estimates.to_numpy(), cpu.estimates.to_numpy(), 1e-8, f"{family} bootstrap estimates")


for _family in DEVICE_FAMILIES:
    for _path, _check in (("profile", _profile_check), ("cross_validation", _cross_validation_check),
                          ("bootstrap", _bootstrap_check)):
        CHECKS[f"{_path}_on_device_{_family}"] = functools.partial(_check, _family)


# -- on a real GPU only: the cooperative whole-grid sweep ---------------------------------------
def _whole_grid_check(model, strata=False, **options):
    """A single fit at N = 200,000 sweeps with the cooperative whole-grid kernel, one block
    per multiprocessor, every block holding rows of every column and (Cox) slots of the risk
    sets, so that the grid scans carry across blocks (the simulator runs a grid as one
    block), and equals the CPU fit."""
    from riskset.kernels.gpu import cox, fine_gray, glm, simulator_enabled
    from riskset.kernels.gpu.device import grid_blocks

    if simulator_enabled():
        raise AssertionError("needs a real CUDA GPU")
    risk_set = model in ("cox", "fine_gray")
    data = riskset.simulate(n=200_000, p=40, model="cox" if risk_set else model, seed=11, density=0.2)
    if risk_set:  # about 2,000 distinct times: ties for Efron
        data = dataclasses.replace(data, time=np.ceil(np.asarray(data.time, float) * 2000 / np.max(data.time)))
    if model == "fine_gray":  # a third of the events become competing events
        status = np.asarray(data.status).copy()
        status[(status == 1) & (np.random.default_rng(11).random(data.n_rows) < 1 / 3)] = 2
        data = dataclasses.replace(data, status=status)
    if strata:
        data = dataclasses.replace(data, strata=np.arange(data.n_rows) % 7)
    prior = riskset.Laplace(gamma=30.0)
    cpu = riskset.fit(data, model, prior, **options)
    gpu = riskset.fit(data, model, prior, backend="gpu", **options)
    device_class = {"cox": cox.CoxDeviceDatafit, "fine_gray": fine_gray.FineGrayDeviceDatafit}.get(
        model, glm.GLMDeviceDatafit)
    assert device_class.single_fit_grid, "the cooperative launch fell back to one block"
    assert grid_blocks(256) > 1, "one multiprocessor"
    assert gpu.converged, gpu.message
    assert np.count_nonzero(cpu.coef.values) >= 5, "test data: too few non-zero coefficients"
    close(gpu.coef.values, cpu.coef.values, 1e-8, f"{model} whole-grid coefficients")
    close(gpu.loglik, cpu.loglik, 1e-10, f"{model} whole-grid loglik")


for _model in ("logistic", "poisson", "least_squares", "cox", "fine_gray"):
    CHECKS[f"whole_grid_{_model}"] = functools.partial(_whole_grid_check, _model)
CHECKS["whole_grid_cox_efron_strata"] = functools.partial(_whole_grid_check, "cox", strata=True, ties="efron")


# -- unsupported families ----------------------------------------------------------------------
@check
def unsupported_family():
    from helpers import BareDatafit

    try:
        to_device(BareDatafit(sp.csc_matrix(np.eye(3))))
    except NotImplementedError as err:
        assert "BareDatafit" in str(err), str(err)
    else:
        raise AssertionError("no NotImplementedError for an unsupported family")


@check
def conditional_limits():
    """An exact matched set with more cases than the device recursion holds is refused, naming
    the alternatives; replicate weights that vary within a stratum are an InputError."""
    from riskset.exceptions import InputError
    from riskset.kernels.gpu.conditional import MAX_EXACT_CASES

    n = 2 * MAX_EXACT_CASES + 4
    y = (np.arange(n) <= MAX_EXACT_CASES).astype(float)  # one set, MAX_EXACT_CASES + 1 cases
    data = Dataset(X=sp.csc_matrix(np.arange(n, dtype=float)[:, None] % 3), covariate_names=["x"],
                   row_ids=np.arange(n), y=y, strata=np.zeros(n, np.int64))
    try:
        to_device(riskset.models.get_model("conditional_logistic", ties="exact").datafit(data))
    except NotImplementedError as err:
        assert "ties='breslow'" in str(err) and "backend='cpu'" in str(err), str(err)
    else:
        raise AssertionError("no NotImplementedError for an exact set beyond the device limit")
    dev = to_device(riskset.models.get_model("conditional_logistic", ties="breslow").datafit(data))
    w = np.ones(n)
    w[3] = 2.0
    try:
        dev.replicates(w[None, :]).new_state(np.zeros(1))
    except InputError as err:
        assert "constant within each stratum" in str(err), str(err)
    else:
        raise AssertionError("no InputError for weights varying within a stratum")


def main(argv):
    if argv == ["--list"]:
        print(json.dumps(list(CHECKS)))
        return 0
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
