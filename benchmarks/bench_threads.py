"""One fit on 1 thread against k threads, every family, paired in one process (issue 48).

Each case builds its data once, then times ``riskset.fit(..., n_jobs=1)`` and
``riskset.fit(..., n_jobs=k)`` in turn, ``--repeats`` times, keeping each side's fastest
wall time (and its CPU time). The table prints the speed-up, the parallel fraction f that
Amdahl's law gives from it (S = 1 / ((1 - f) + f / k)), the speed-ups that f models on 16
and 64 cores, the CPU-time ratio and the objective difference: the threaded fit must stop
at the same optimum (equal up to rounding; a faster fit elsewhere is not faster).

    python benchmarks/bench_threads.py                           # N = 1M, every family
    python benchmarks/bench_threads.py --n 100000 --repeats 3
    python benchmarks/bench_threads.py --cases cox_weak,logistic --n 200000
    python benchmarks/bench_threads.py --cv --n 150000 --p 3000 --repeats 1   # cross-validation 10 x 2

``--cv`` times ``riskset.cross_validate`` (10-fold x 2, three variances around the optimum of
the case's prior, no auto search) instead of one fit.

Run it on a quiet machine: another process on the second core makes the k-thread side slow.
"""
from __future__ import annotations

import argparse
import dataclasses
import time

import numpy as np

import riskset

#: name -> (model, model options, prior (kind, variance), data recipe)
CASES = {
    "cox_weak": ("cox", {}, ("laplace", 1.0), dict(kind="cox")),
    "cox_strong": ("cox", {}, ("laplace", 1e-5), dict(kind="cox")),
    "fine_gray": ("fine_gray", {}, ("laplace", 1e-5), dict(kind="fine_gray")),
    "cox_strata": ("cox", {}, ("laplace", 1e-5), dict(kind="cox", strata=10)),
    "conditional_poisson": ("conditional_poisson", {}, ("laplace", 0.01), dict(kind="conditional", per_stratum=10)),
    "logistic": ("logistic", {}, ("laplace", 1e-3), dict(kind="logistic")),
}


def make(recipe: dict, n: int, p: int, density: float):
    kind = recipe["kind"]
    rng = np.random.default_rng(11)
    if kind == "conditional":
        data = riskset.simulate(n=n, p=p, density=density, model="poisson", seed=1)
        return dataclasses.replace(data, strata=np.arange(n) // recipe["per_stratum"])
    data = riskset.simulate(n=n, p=p, density=density, model="cox" if kind == "fine_gray" else kind, seed=1)
    if kind == "fine_gray":
        status = np.asarray(data.status).copy()
        status[(status == 1) & (rng.random(n) < 0.3)] = 2
        data = dataclasses.replace(data, status=status)
    if recipe.get("strata"):
        data = dataclasses.replace(data, strata=rng.integers(0, recipe["strata"], n))
    return data


def timed_fit(data, model, options, prior, n_jobs, cv=False):
    kind, variance = prior
    prior = riskset.Laplace(variance=variance) if kind == "laplace" else riskset.Normal(variance)
    c0, t0 = time.process_time(), time.perf_counter()
    if cv:
        res = riskset.cross_validate(data, model, prior, variances=variance * np.array([0.5, 1.0, 2.0]), n_folds=10,
                                     n_repeats=2, seed=0, tol=1e-8, n_jobs=n_jobs, refit=False, progress=False,
                                     **options)
        return dict(wall=time.perf_counter() - t0, cpu=time.process_time() - c0,
                    objective=float(res.summary["mean"].max()), nonzero=int(res.selected_variance / variance * 100),
                    converged=bool(res.scores["converged"].all()), threads=n_jobs)
    fit = riskset.fit(data, model, prior, tol=1e-8, n_jobs=n_jobs, **options)
    return dict(wall=time.perf_counter() - t0, cpu=time.process_time() - c0, objective=fit.objective,
                nonzero=int(np.count_nonzero(fit.coef)), converged=bool(fit.converged), threads=fit.threads)


def amdahl(speedup: float, k: int) -> float:
    """The parallel fraction f with 1 / ((1 - f) + f / k) = speedup (clipped to [0, 1])."""
    return float(np.clip((1 - 1 / speedup) / (1 - 1 / k), 0.0, 1.0))


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=1_000_000)
    ap.add_argument("--p", type=int, default=1000)
    ap.add_argument("--density", type=float, default=0.05)
    ap.add_argument("--threads", type=int, default=2, help="k, the threaded side (default 2)")
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--cases", default=",".join(CASES), help=f"comma-separated, from: {', '.join(CASES)}")
    ap.add_argument("--cv", action="store_true", help="time cross-validation (10-fold x 2) instead of one fit")
    args = ap.parse_args(argv)
    rows = []
    for name in args.cases.split(","):
        model, options, prior, recipe = CASES[name]
        data = make(recipe, args.n, args.p, args.density)
        timed_fit(data, model, options, prior, 1, args.cv)  # compiled, caches warm
        best = {}
        for _ in range(args.repeats):
            for jobs in (1, args.threads):
                r = timed_fit(data, model, options, prior, jobs, args.cv)
                if jobs not in best or r["wall"] < best[jobs]["wall"]:
                    best[jobs] = r
        one, many = best[1], best[args.threads]
        s = one["wall"] / many["wall"]
        f = amdahl(s, args.threads)
        rows.append((name, one["wall"], many["wall"], s, f, 1 / ((1 - f) + f / 16), 1 / ((1 - f) + f / 64),
                     many["cpu"] / one["cpu"], many["objective"] - one["objective"], one["nonzero"],
                     one["converged"] and many["converged"], many["threads"]))
        print(f"{name:20s} 1: {one['wall']:7.3f} s  {args.threads}: {many['wall']:7.3f} s  x{s:4.2f}  f {f:4.2f}  "
              f"cpu x{rows[-1][7]:4.2f}  objective diff {rows[-1][8]:+.1e}", flush=True)
        del data
    k = args.threads
    what = "cross-validation 10 x 2 (objective: best mean score; non-zero: selected variance in % of the prior's)" \
        if args.cv else "one fit"
    print(f"\n{what}; N = {args.n:,}, P = {args.p:,}, density {args.density:g}; best of {args.repeats} paired runs\n")
    print(f"| case | 1 thread (s) | {k} threads (s) | speed-up | parallel fraction | model 16 | model 64 | "
          f"CPU {k} / 1 | objective diff | non-zero | converged | threads used |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        print(f"| {r[0]} | {r[1]:.2f} | {r[2]:.2f} | {r[3]:.2f} | {r[4]:.2f} | {r[5]:.1f} | {r[6]:.1f} | "
              f"{r[7]:.2f} | {r[8]:+.1e} | {r[9]} | {r[10]} | {r[11]} |")


if __name__ == "__main__":
    main()
