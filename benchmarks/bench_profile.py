"""Profile-likelihood intervals: sequential Brent searches vs the lockstep replicate batches.

    python benchmarks/bench_profile.py                      # Cox N=20,000, P=50, 10 coefficients
    python benchmarks/bench_profile.py --n 100000 --p 200 --coef 20 --jobs 4

'sequential' is the search riskset used before: for each (coefficient, side) in turn,
doubling steps of 2 SE from the MLE, then scipy.optimize.brentq, every point a fit
warm-started from the previous point. 'batched' is riskset.profile_likelihood.profile_intervals:
all searches advance together, one replicate batch per round, on 1 or ``--jobs``
threads. All runs share one prepared datafit and the MLE; the table gives the best of
``--repeat`` interleaved runs, as ratios to the sequential time of the same process (a
shared machine is noisy), the
number of fits, and the largest difference of the bounds from the sequential
ones (the searches stop within xtol = 1e-8 max(1, |bracket end|) of the root).
"""
from __future__ import annotations

import argparse
import time

import numpy as np
from scipy import optimize, stats

import riskset
from _common import cached_simulation, load, print_table
from riskset import inference, profile_likelihood
from riskset.backend import Backend
from riskset.core.penalty import Penalty
from riskset.solver.ccd import SolverOptions, fit_ccd


def sequential(datafit, beta_hat, objective_hat, columns, se, options, level=0.95):
    """(bounds (k, 2), fits): one brentq search per bound, as riskset did before batching."""
    drop = stats.chi2.ppf(level, 1) / 2
    zeros = np.zeros(datafit.n_coef)
    out, fits = [], 0
    for k, j in enumerate(columns):
        fixed = np.arange(datafit.n_coef) == j
        warm = beta_hat.copy()

        def deficit(b):
            nonlocal warm, fits
            beta0 = warm.copy()
            beta0[j] = b
            r = fit_ccd(datafit, zeros, zeros, beta0=beta0, fixed=fixed, options=options)
            warm, fits = r.beta, fits + 1
            return objective_hat - r.objective - drop

        for side in (-1.0, 1.0):
            warm = beta_hat.copy()
            inner, outer = beta_hat[j], beta_hat[j] + side * 2.0 * se[k]
            while deficit(outer) <= 0:
                inner, outer = outer, beta_hat[j] + 2.0 * (outer - beta_hat[j])
            out.append(optimize.brentq(deficit, inner, outer, xtol=1e-8 * max(1.0, abs(outer))))
    return np.array(out).reshape(-1, 2), fits


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--n", type=int, default=20_000)
    ap.add_argument("--p", type=int, default=50)
    ap.add_argument("--density", type=float, default=0.1)
    ap.add_argument("--coef", type=int, default=10, help="coefficients given intervals")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--tol", type=float, default=1e-10)
    ap.add_argument("--repeat", type=int, default=3, help="runs of each method; the best time counts")
    args = ap.parse_args()
    X, out = load(cached_simulation("cox", args.n, args.p, args.density))
    names = [f"x{j}" for j in range(X.shape[1])]
    data = riskset.Dataset(X=X, covariate_names=names, row_ids=np.arange(X.shape[0]), **out)
    model = riskset.models.get_model("cox")
    datafit = model.datafit(data)
    names = model.coef_names(data)
    options = SolverOptions(tol=args.tol)
    zeros = np.zeros(datafit.n_coef)
    mle = fit_ccd(datafit, zeros, zeros, options=options)
    columns = np.arange(min(args.coef, datafit.n_coef))
    se = inference.standard_errors(datafit, mle.state, np.arange(datafit.n_coef))[columns]
    sequential(datafit, mle.beta, mle.objective, columns[:1], se, options)  # compile the kernels first

    runs = {("sequential brentq", 1): lambda: sequential(datafit, mle.beta, mle.objective, columns, se, options)}
    for jobs in sorted({1, args.jobs}):
        runs["batched lockstep", jobs] = lambda jobs=jobs: profile_likelihood.profile_intervals(
            datafit, mle.beta, mle.objective, Penalty(zeros, zeros), columns, names, options=options, se=se,
            backend=Backend.of(n_jobs=jobs))
    best, result = {}, {}
    for _ in range(args.repeat):  # interleaved, best of --repeat: the machine's load changes
        for key, run in runs.items():
            t = time.perf_counter()
            result[key] = run()
            best[key] = min(best.get(key, np.inf), time.perf_counter() - t)
    reference, fits = result["sequential brentq", 1]
    base = best["sequential brentq", 1]
    rows = [{"method": "sequential brentq", "threads": 1, "seconds": base, "ratio": 1.0, "fits": fits}]
    for (method, jobs), took in best.items():
        if method == "batched lockstep":
            table = result[method, jobs]
            diff = float(np.abs(table[["lower", "upper"]].to_numpy() - reference).max())
            rows.append({"method": method, "threads": jobs, "seconds": took, "ratio": took / base,
                         "fits": int(table["evaluations"].sum()), "max |diff|": diff})
    print(f"Cox, N={args.n}, P={args.p}, density {args.density}, profile intervals of {columns.size} "
          f"coefficients ({2 * columns.size} bounds), solver tol {args.tol:g}, best of {args.repeat}\n")
    print_table(rows, ["method", "threads", "seconds", "ratio", "fits", "max |diff|"])


if __name__ == "__main__":
    main()
