"""Pooled logistic benchmark: virtual person-intervals against a materialized person-period table.

Simulates N subjects with P sparse binary covariates (density ``--density``), a
discrete-time hazard with a linear time trend and a few time-varying effects, and
censoring such that the median follow-up is about ``--median`` intervals. Then:

1. ``virtual``: riskset's PooledLogistic at full size (subject-level data and O(N)
   state); peak memory (tracemalloc, NumPy buffers) and fit time (Laplace prior,
   intercept and its trend unpenalized).
2. ``materialized``: the person-period table (one row per subject and interval,
   columns intercept, covariates, t, covariate:t) built explicitly and fitted with
   riskset's ordinary logistic regression (same CCD, same prior), at a reduced
   number of subjects ``--materialize-n`` (the full table does not fit in the
   memory of the shared machine); its memory is also extrapolated linearly to N.
   The virtual fit is repeated at the reduced size for a like-for-like comparison
   (and the objectives must agree).

Run by hand (not in CI)::

    python benchmarks/bench_pooled.py --n 400000 --p 1000 --density 0.005 --median 90
"""
from __future__ import annotations

import argparse
import time
import tracemalloc

import numpy as np
import pandas as pd
import scipy.sparse as sp

from riskset.data.dataset import Dataset
from riskset.models.glm import LogisticRegression
from riskset.models.pooled_logistic import PooledLogistic, n_intervals
from riskset.solver.ccd import SolverOptions, fit_ccd
from riskset.solver.prior import Laplace


def simulate(n, p, density, median, n_tv, seed):
    rng = np.random.default_rng(seed)
    nnz = rng.binomial(n * p, density)
    rows = rng.integers(0, n, nnz)
    cols = rng.integers(0, p, nnz)
    Z = sp.csc_matrix((np.ones(nnz), (rows, cols)), shape=(n, p))
    Z.sum_duplicates()
    Z.data[:] = 1.0
    beta = np.zeros(p)
    beta[:20] = rng.uniform(-0.7, 0.7, 20)
    # discrete hazard ~ 0.004 per interval, censoring uniform so that median follow-up ~ median
    lin = -5.5 + Z @ beta
    u = rng.random(n)
    event_k = np.ceil(np.log(u) / np.log1p(-1 / (1 + np.exp(-lin)))).astype(np.int64)
    cens_k = rng.integers(1, int(2 * median * 1.75), n)
    time_k = np.minimum(event_k, cens_k)
    status = (event_k <= cens_k).astype(float)
    time = time_k - rng.random(n) * 0.5  # continuous time inside the last interval (width 1)
    names = [f"c{j}" for j in range(p)]
    data = Dataset(X=Z, covariate_names=names, row_ids=np.arange(n), time=time, status=status)
    effects = {"intercept": "linear", **{names[j]: "linear" for j in range(n_tv)}}
    return data, effects


def materialize(model, data):
    """Person-period design in CSC (intercept, covariates, t, cov:t) and y."""
    K = n_intervals(data.time, model.interval_width)
    subj = np.repeat(np.arange(data.n_rows), K)
    k = (np.arange(K.sum()) - np.repeat(np.cumsum(K) - K, K) + 1).astype(np.float64)
    y = ((k == K[subj]) & (data.status[subj] == 1)).astype(np.float64)
    src, fidx = model._structure(data)
    Zr = data.X.tocsr()[subj]
    n_fixed = (1 if model.intercept else 0) + data.n_covariates
    tv = [(s, m) for s, m in zip(src[n_fixed:], fidx[n_fixed:])]
    blocks = [sp.csc_matrix(np.ones((len(subj), 1))), Zr.tocsc()]
    for s, m in tv:
        col = sp.csc_matrix(k[:, None]) if s < 0 else Zr[:, [s]].multiply(k[:, None]).tocsc()
        blocks.append(col)
    A = sp.hstack(blocks, format="csc")
    return A, y


def fit_virtual(model, data, prior, opts):
    tracemalloc.reset_peak()
    base = tracemalloc.get_traced_memory()[0]
    t0 = time.perf_counter()
    df = model.datafit(data)
    names = model.coef_names(data)
    l1, l2 = prior.penalty_arrays(names, model.unpenalized_names())
    res = fit_ccd(df, l1, l2, options=opts)
    sec = time.perf_counter() - t0
    peak = tracemalloc.get_traced_memory()[1] - base
    return res, sec, peak, df.n_person_periods


def fit_materialized(model, data, prior, opts):
    tracemalloc.reset_peak()
    base = tracemalloc.get_traced_memory()[0]
    t0 = time.perf_counter()
    A, y = materialize(model, data)
    names = model.coef_names(data)
    df = LogisticRegression(intercept=False).datafit(
        Dataset(X=A, covariate_names=names, row_ids=np.arange(len(y)), y=y))
    del A
    l1, l2 = prior.penalty_arrays(names, model.unpenalized_names())
    res = fit_ccd(df, l1, l2, options=opts)
    sec = time.perf_counter() - t0
    peak = tracemalloc.get_traced_memory()[1] - base
    return res, sec, peak, len(y)


def run(args):
    tracemalloc.start()
    prior = Laplace(gamma=args.gamma)
    opts = SolverOptions(tol=args.tol, max_iter=200, polish_max_active=0)
    rows = []
    small = None
    for n, which in [(args.materialize_n, ("virtual", "materialized")), (args.n, ("virtual",))]:
        data, effects = simulate(n, args.p, args.density, args.median, args.tv, args.seed)
        model = PooledLogistic(1.0, effects)
        K = n_intervals(data.time, 1.0)
        subj_mib = (data.X.data.nbytes + data.X.indices.nbytes + data.X.indptr.nbytes + 2 * n * 8) / 2**20
        if small is None:  # warm up the JIT on a tiny problem
            tiny, _ = simulate(500, 20, 0.1, 10, 2, 0)
            fit_virtual(PooledLogistic(1.0, {"intercept": "linear", "c0": "linear"}), tiny, prior, opts)
            fit_materialized(PooledLogistic(1.0, {"intercept": "linear", "c0": "linear"}), tiny, prior, opts)
        for method in which:
            fn = fit_virtual if method == "virtual" else fit_materialized
            res, sec, peak, npp = fn(model, data, prior, opts)
            rows.append({"N": n, "method": method, "person-periods": npp, "median K": int(np.median(K)),
                         "subject data MiB": subj_mib, "peak MiB": peak / 2**20, "fit s": sec,
                         "cycles": res.n_iter, "converged": res.converged, "nonzero": int(np.count_nonzero(res.beta)),
                         "objective": res.objective})
        if small is None:
            small = rows[-2:]
    table = pd.DataFrame(rows)
    with pd.option_context("display.width", 220, "display.max_columns", 20):
        print(table.to_string(index=False, float_format=lambda v: f"{v:.6g}"))
    v, m = small
    print(f"N = {v['N']}: materialized / virtual peak memory = {m['peak MiB'] / v['peak MiB']:.1f}x, "
          f"fit time {m['fit s'] / v['fit s']:.2f}x, "
          f"|objective difference| = {abs(v['objective'] - m['objective']):.2e}")
    full = rows[-1]
    extrap = m["peak MiB"] * full["person-periods"] / m["person-periods"]
    print(f"N = {full['N']}: virtual peak {full['peak MiB']:.0f} MiB; materialized extrapolated by person-periods "
          f"{extrap:.0f} MiB ({extrap / full['peak MiB']:.1f}x)")


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=400_000)
    ap.add_argument("--p", type=int, default=1000)
    ap.add_argument("--density", type=float, default=0.005)
    ap.add_argument("--median", type=int, default=90, help="median follow-up in intervals")
    ap.add_argument("--tv", type=int, default=5, help="covariates with a linear time-varying effect")
    ap.add_argument("--gamma", type=float, default=50.0)
    ap.add_argument("--tol", type=float, default=1e-7)
    ap.add_argument("--materialize-n", type=int, default=20_000)
    ap.add_argument("--seed", type=int, default=1)
    run(ap.parse_args())
