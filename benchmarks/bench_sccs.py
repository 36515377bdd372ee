"""SCCS benchmark: sparse O(nnz_j) CCD against a dense O(N)-per-coordinate CCD.

Simulates person-level data (observation periods, exposure eras of many drugs),
builds the era table with :func:`riskset.data.sccs_builder.build_sccs`, simulates
event counts per era with a few true drug effects, and fits the Bayesian SCCS
(Normal prior, as in Suchard et al. 2013, and a Laplace prior) with

- ``sparse``: riskset's datafit (per-case sums, work only in the cases holding a
  non-zero of the coordinate's column);
- ``dense``: the same CCD where every coordinate evaluation and every move scans
  all N eras (the paper's dense CPU formulation); same iterates, so the same cycles.

Run by hand (not in CI)::

    python benchmarks/bench_sccs.py --cases 100000 --drugs 1000
    python benchmarks/bench_sccs.py --cases 1000000 --exposures 15 --no-dense --cv 10   # ~20M eras, L1 + 10-fold CV

``--cv K`` then cross-validates the Laplace prior's variance (``riskset.cross_validate``,
K folds of cases, a grid of ``--grid`` variances plus at most ``--refine`` refinement steps,
``--jobs`` threads) and refits: wall time and peak RSS of the whole selection.

Peak memory is measured with tracemalloc (NumPy buffers) around building and fitting.

Recorded results: docs/benchmarks.md, section 'bench_sccs.py'.
"""
from __future__ import annotations

import argparse
import dataclasses
import math
import time
import tracemalloc
import warnings

import numpy as np
import pandas as pd
from numba import njit

from riskset.core.sweep import compile_family
from riskset.data.sccs_builder import build_sccs
from riskset.exceptions import DataWarning
from riskset.models.sccs import SCCS
from riskset.models.conditional import ConditionalDatafit
from riskset.solver.ccd import SolverOptions, fit_ccd


@njit(cache=True)
def _scatter(indptr, indices, values, j, buf, sign):
    for p in range(indptr[j], indptr[j + 1]):
        buf[indices[p]] = values[p] if sign > 0 else 0.0


@njit(cache=True)
def dense_coordinate(indptr, indices, values, j, xy_j, stratum_ptr, w, n_s, xbuf):
    _scatter(indptr, indices, values, j, xbuf, 1)
    g = xy_j
    h = 0.0
    for s in range(stratum_ptr.shape[0] - 1):
        W = 0.0
        s1 = 0.0
        s2 = 0.0
        for r in range(stratum_ptr[s], stratum_ptr[s + 1]):
            W += w[r]
            wx = w[r] * xbuf[r]
            s1 += wx
            s2 += wx * xbuf[r]
        mu = s1 / W
        g -= n_s[s] * mu
        h -= n_s[s] * (s2 / W - mu * mu)
    _scatter(indptr, indices, values, j, xbuf, -1)
    return g, h


@njit(cache=True)
def dense_move(indptr, indices, values, j, delta, eta, w, W, stratum_ptr, xbuf):
    _scatter(indptr, indices, values, j, xbuf, 1)
    for s in range(stratum_ptr.shape[0] - 1):
        tot = 0.0
        for r in range(stratum_ptr[s], stratum_ptr[s + 1]):
            eta[r] += delta * xbuf[r]
            w[r] = math.exp(eta[r])
            tot += w[r]
        W[s] = tot
    _scatter(indptr, indices, values, j, xbuf, -1)


@njit(cache=True)
def dense_refresh(data, state):
    """Nothing to refresh: every move recomputes w and W."""


@njit(cache=True)
def dense_terms(data, state, j):
    indptr, indices, values, xy, stratum_ptr, n_s = data
    eta, w, W, B, dB, d2B, xbuf = state
    return dense_coordinate(indptr, indices, values, j, xy[j], stratum_ptr, w, n_s, xbuf)


@njit(cache=True)
def dense_gradient(data, state, j):
    return dense_terms(data, state, j)[0]


@njit(cache=True)
def dense_move_kernel(data, state, j, delta):
    indptr, indices, values, xy, stratum_ptr, n_s = data
    eta, w, W, B, dB, d2B, xbuf = state
    dense_move(indptr, indices, values, j, delta, eta, w, W, stratum_ptr, xbuf)


class DenseSCCSDatafit(ConditionalDatafit):
    """Same likelihood, O(N) work per coordinate and per move (dense formulation), on the
    same compiled sweep (:func:`riskset.core.sweep.compile_family`) as the sparse datafit."""

    kernels = compile_family("sccs_dense", dense_refresh, dense_gradient, dense_terms, dense_move_kernel)

    def kernel_data(self):
        return (self.indptr, self.indices, self.values, self.xy, self.stratum_ptr, self.n_s)

    def new_state(self, beta):
        st = super().new_state(beta)
        st.xbuf = np.zeros(self.n_rows)
        st.kernel = st.kernel + (st.xbuf,)
        return st


def simulate(n_cases, n_drugs, exposures_per_case, n_effects, seed):
    rng = np.random.default_rng(seed)
    obs = pd.DataFrame({"person_id": np.arange(n_cases), "start": 0,
                        "end": rng.integers(365, 3 * 365, n_cases)})
    m = exposures_per_case * n_cases
    # drug popularity ~ Zipf-like: a few common drugs, a long tail
    pop = 1.0 / np.arange(1, n_drugs + 1) ** 0.8
    st = rng.integers(0, 3 * 365, m)
    exp = pd.DataFrame({"person_id": rng.integers(0, n_cases, m),
                        "drug": rng.choice(n_drugs, m, p=pop / pop.sum()),
                        "start": st, "end": st + rng.integers(7, 120, m)})
    out = pd.DataFrame({"person_id": np.arange(n_cases), "date": 0})  # every person a case (events re-drawn)
    beta = np.zeros(n_drugs)
    chosen = rng.choice(n_drugs, n_effects, replace=False)  # drawn first: the data of earlier runs
    beta[chosen] = rng.choice([-1, 1], n_effects) * rng.uniform(0.4, 1.0, n_effects)
    return obs, exp, out, beta


def run(args):
    rows = []
    tracemalloc.start()
    obs, exp, out, beta = simulate(args.cases, args.drugs, args.exposures, args.effects, args.seed)
    tracemalloc.reset_peak()
    t0 = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DataWarning)
        data = build_sccs(obs, exp, out)
    t_build = time.perf_counter() - t0
    build_peak = tracemalloc.get_traced_memory()[1]
    del obs, exp, out
    b = np.zeros(data.n_covariates)
    b[: len(beta)] = beta[np.array([int(n) for n in data.covariate_names])]
    rng = np.random.default_rng(args.seed + 1)
    rate = 2.5 * np.exp(data.offset - np.log(730.0) + data.X @ b)
    data = dataclasses.replace(data, y=rng.poisson(rate).astype(float), meta={})
    print(f"SCCS data: {len(np.unique(data.strata[data.y > 0]))} cases with events, {data.n_rows} eras, "
          f"{data.n_covariates} drugs, "
          f"{data.X.nnz} non-zeros, {int(data.y.sum())} events; era builder {t_build:.2f} s, "
          f"peak {build_peak / 2**20:.0f} MiB")

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DataWarning)
        sparse_df = SCCS().datafit(data)
        dense_df = None if args.no_dense else DenseSCCSDatafit(sparse_df.design.to_csc(), sparse_df.y_raw,
                                                                sparse_df.row_stratum, sparse_df.offset)
    p = sparse_df.n_coef
    for df in (sparse_df, dense_df):  # warm up the JIT
        if df is not None:
            fit_ccd(df, np.zeros(p), np.ones(p), options=SolverOptions(max_iter=1, polish_max_active=0))

    methods = [("sparse", sparse_df, 1000)] + ([] if args.no_dense else [("dense", dense_df, args.dense_cycles)])
    for prior, l1, l2 in [("Normal(var=1)", np.zeros(p), np.ones(p)),
                          (f"Laplace(gamma={args.gamma:g})", np.full(p, args.gamma), np.zeros(p))]:
        for name, df, max_iter in methods:
            # identical iterates: dense runs the same cycles (to convergence unless --dense-cycles caps it)
            tracemalloc.reset_peak()
            base = tracemalloc.get_traced_memory()[0]
            t0 = time.perf_counter()
            res = fit_ccd(df, l1, l2, options=SolverOptions(tol=1e-8, max_iter=max_iter, polish_max_active=0))
            sec = time.perf_counter() - t0
            peak = tracemalloc.get_traced_memory()[1] - base
            rows.append({"prior": prior, "method": name, "cycles": res.n_iter, "converged": res.converged,
                         "s/cycle": sec / res.n_iter, "total s": sec, "objective": res.objective,
                         "nonzero": int(np.count_nonzero(res.beta)), "fit peak MiB": peak / 2**20})
            if name == "sparse":
                sparse_first = fit_ccd(sparse_df, l1, l2, options=SolverOptions(
                    tol=1e-8, max_iter=min(args.dense_cycles, res.n_iter), polish_max_active=0)).objective
            else:
                rows[-1]["|objective - sparse|"] = f"{abs(res.objective - sparse_first):.1e}"
    table = pd.DataFrame(rows)
    with pd.option_context("display.width", 200, "display.max_columns", 20):
        print(table.to_string(index=False, float_format=lambda v: f"{v:.4g}"))
    data_mib = (data.X.data.nbytes + data.X.indices.nbytes + data.X.indptr.nbytes + 3 * data.n_rows * 8) / 2**20
    print(f"data (X + y + offset + strata): {data_mib:.0f} MiB")
    if args.cv:
        cross_validation(data, args)


def cross_validation(data, args):
    """Select the Laplace prior's variance by K-fold CV of cases, then refit: wall time, peak RSS."""
    import resource

    import riskset

    t0 = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DataWarning)
        cv = riskset.cross_validate(data, "sccs", riskset.Laplace(gamma=1.0), n_folds=args.cv, n_grid=args.grid,
                                    auto=args.refine > 0, n_refine=args.refine, n_jobs=args.jobs, progress=True)
    sec = time.perf_counter() - t0
    refined = cv.summary.shape[0] - args.grid
    fits = len(cv.scores) + args.grid + refined + 1
    print(f"cross-validation: {args.cv} folds x {args.grid} variances + {refined} refined (at most {args.refine}) "
          f"({len(cv.scores)} fold fits, {fits} fits with the path, the refined variances and the refit) on "
          f"{args.jobs} thread(s): "
          f"{sec:.1f} s wall; selected variance {cv.selected_variance:.4g}, "
          f"{int(np.count_nonzero(cv.fit.coef))} non-zero, refit {cv.fit.status} (KKT {cv.fit.kkt:.1e}); "
          f"peak RSS of the process {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**10:.0f} MiB")


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cases", type=int, default=100_000)
    ap.add_argument("--drugs", type=int, default=1000)
    ap.add_argument("--exposures", type=int, default=10, help="exposure eras per case")
    ap.add_argument("--effects", type=int, default=20, help="drugs with a true effect")
    ap.add_argument("--gamma", type=float, default=20.0)
    ap.add_argument("--dense-cycles", type=int, default=1000, help="cap on the dense fit's cycles")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--no-dense", action="store_true", help="skip the dense formulation (large data)")
    ap.add_argument("--cv", type=int, default=0, metavar="K", help="then K-fold cross-validation of the variance")
    ap.add_argument("--grid", type=int, default=8, help="variances of the CV grid")
    ap.add_argument("--refine", type=int, default=4, help="most refinement steps after the grid (parabolic search)")
    ap.add_argument("--jobs", type=int, default=2, help="threads of the cross-validation")
    run(ap.parse_args())
