"""Cross-validation and bootstrap: batched replicates vs one-by-one fits.

The history of its figures (which change bought what) is in docs/performance.md, "Cross-validation
at N = 1M: the history".

    python benchmarks/bench_cv.py --model cox --n 100000 --p 1000 --folds 10 --repeats 1 --grid 5 --boot 20
    python benchmarks/bench_cv.py --n 1000000 --grid 3 --boot 0 --no-baseline            # absolute time only
    python benchmarks/bench_cv.py --n 1000000 --grid 5 --refine 4 --repeats 2 --boot 0 --no-baseline
    python benchmarks/bench_cv.py --n 1000000 --grid 3 --boot 0 --no-baseline --backend gpu

'batched' is riskset.cross_validate / riskset.bootstrap: every replicate is a
reweighted view of one prepared datafit (shared X and row order, nothing copied),
fitted in threads (``--backend gpu``: all replicates in one device batch), each fold
fit starting from the full-data fit at the same variance (the path, fitted once).
'one-by-one': for each fold, subset the data, prepare it and fit it at each grid point
from the same starting points, one fit at a time; both score the same held-out rows, so
their CV tables must agree (column 'max |diff|'). 'classic': the usual loop without a
path: each fold fitted from zero along the grid, each fit warm-started from the previous.
"""
from __future__ import annotations

import argparse
import time

import numpy as np

import riskset
from _common import cached_simulation, load, print_table
from riskset.selection.common import prior_with_variance
from riskset.selection.folds import assign_folds, bootstrap_weights


def one_by_one_cv(data, model, prior, grid, folds, tol, classic=False):
    """Held-out scores (splits, grid); fits from the full-data path, or (``classic``) along the grid."""
    scores = np.zeros((folds.shape[0] * (folds.max() + 1), len(grid)))
    path = None if classic else riskset.regularization_path(data, model, prior, variances=grid, tol=tol,
                                                            progress=False)
    t = 0
    for r in range(folds.shape[0]):
        for k in range(folds.max() + 1):
            train, test = data.subset(folds[r] != k), data.subset(folds[r] == k)
            warm = None
            for i, v in enumerate(grid):
                start = warm if classic else path.iloc[i]
                fit = riskset.fit(train, model, prior_with_variance(prior, v), tol=tol, warm_start=start)
                warm = fit
                df = riskset.models.get_model(model).datafit(test)
                scores[t, i] = df.loglik(df.new_state(fit.coef.to_numpy()))
            t += 1
    return scores


def one_by_one_bootstrap(data, model, prior, n_boot, seed, tol):
    from dataclasses import replace

    full = riskset.fit(data, model, prior, tol=tol)
    for s in np.random.SeedSequence(seed).spawn(n_boot):
        w = bootstrap_weights(data, np.random.default_rng(s), model)
        keep = w > 0
        riskset.fit(replace(data.subset(keep), weights=w[keep]), model, prior, tol=tol, warm_start=full)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", default="cox")
    ap.add_argument("--n", type=int, default=100_000)
    ap.add_argument("--p", type=int, default=1000)
    ap.add_argument("--density", type=float, default=0.05)
    ap.add_argument("--folds", type=int, default=10)
    ap.add_argument("--repeats", type=int, default=1)
    ap.add_argument("--grid", type=int, default=5)
    ap.add_argument("--default-grid", action="store_true",
                    help="cross_validate's own grid of --grid variances (gamma_max down 10^2.5), not the bench's "
                         "narrower one (gamma_max / 2 down to / 100)")
    ap.add_argument("--refine", type=int, default=0,
                    help="most refinement steps after the grid (cross_validate's auto=True, n_refine)")
    ap.add_argument("--boot", type=int, default=20)
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--tol", type=float, default=1e-8, help="solver tolerance of every fit (default 1e-8)")
    ap.add_argument("--backend", default="cpu", help="backend of the batched runs: cpu or gpu")
    ap.add_argument("--no-baseline", action="store_true", help="skip the one-by-one runs (large N)")
    args = ap.parse_args()
    X, out = load(cached_simulation(args.model, args.n, args.p, args.density))
    data = riskset.Dataset(X=X, covariate_names=[f"x{j}" for j in range(X.shape[1])], row_ids=np.arange(X.shape[0]),
                           **out)
    prior = riskset.Laplace(gamma=1.0)
    gmax = riskset.fit(data, args.model, riskset.Laplace(gamma=1e15)).gamma_max
    grid = np.sort(2.0 / (gmax * np.logspace(0, -2.5, args.grid) if args.default_grid
                          else gmax * np.logspace(-0.3, -2, args.grid)) ** 2)
    folds = assign_folds(data, args.folds, args.repeats, seed=0, model=args.model)
    rows = []

    t = time.perf_counter()
    cv = riskset.cross_validate(data, args.model, prior, variances=grid, n_folds=args.folds, n_repeats=args.repeats,
                                seed=0, n_jobs=args.jobs, progress=False, refit=False, tol=args.tol,
                                backend=args.backend, auto=args.refine > 0, n_refine=args.refine)
    batched = time.perf_counter() - t
    points = cv.summary.shape[0]
    fits = args.folds * args.repeats * points
    task = (f"CV {args.folds}x{args.repeats}, {args.grid} {'default ' if args.default_grid else ''}variances"
            + (f" + {points - args.grid} refined" if args.refine else ""))
    row = {"task": task, "fits": fits, "batched s": batched, "selected variance": cv.selected_variance,
           "10x10 CV est. s": batched / (args.folds * args.repeats) * 100}
    if not args.no_baseline:
        t = time.perf_counter()
        scores = one_by_one_cv(data, args.model, prior, grid, folds, args.tol)
        single = time.perf_counter() - t
        mine = cv.scores.pivot_table(index=["repeat", "fold"], columns="variance", values="score").to_numpy()
        row.update({"one-by-one s": single, "speed-up": single / batched,
                    "max |diff|": float(np.abs(mine - scores).max())})
        t = time.perf_counter()
        classic = one_by_one_cv(data, args.model, prior, grid, folds, args.tol, classic=True)
        elapsed = time.perf_counter() - t
        row.update({"classic s": elapsed, "vs classic": elapsed / batched,
                    "classic |diff|": float(np.abs(mine - classic).max())})
    rows.append(row)
    if args.boot == 0:
        _report(args, rows)
        return
    t = time.perf_counter()
    riskset.bootstrap(data, args.model, prior_with_variance(prior, grid[len(grid) // 2]), n_boot=args.boot,
                      n_jobs=args.jobs, progress=False, tol=args.tol, backend=args.backend)
    batched = time.perf_counter() - t
    row = {"task": f"bootstrap x{args.boot}", "fits": args.boot + 1, "batched s": batched}
    if not args.no_baseline:
        t = time.perf_counter()
        one_by_one_bootstrap(data, args.model, prior_with_variance(prior, grid[len(grid) // 2]), args.boot, 0,
                             args.tol)
        single = time.perf_counter() - t
        row.update({"one-by-one s": single, "speed-up": single / batched})
    rows.append(row)
    _report(args, rows)


def _report(args, rows):
    print(f"{args.model}, N={args.n}, P={args.p}, density {args.density}, L1, {args.jobs} threads, "
          f"batched on {args.backend}, "
          f"tol {args.tol:g}\n")
    print_table(rows, ["task", "fits", "batched s", "selected variance", "one-by-one s", "speed-up", "max |diff|",
                       "classic s",
                       "vs classic", "classic |diff|", "10x10 CV est. s"])


if __name__ == "__main__":
    main()
