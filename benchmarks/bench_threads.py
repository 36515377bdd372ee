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
                nonzero=int(np.count_nonzero(fit.coef)), converged=bool(fit.converged), threads=fit.threads,
                prepare=fit.timings["prepare"], solve=fit.timings["solve"])


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
    k = args.threads
    rows = []
    for name in args.cases.split(","):
        model, options, prior, recipe = CASES[name]
        data = make(recipe, args.n, args.p, args.density)
        timed_fit(data, model, options, prior, 1, args.cv)  # compiled, caches warm
        runs = {1: [], k: []}
        for _ in range(args.repeats):
            for jobs in (1, k):
                runs[jobs].append(timed_fit(data, model, options, prior, jobs, args.cv))
        rows.append(paired_row(name, runs[1], runs[k], k))
        r = rows[-1]
        print(f"{name:20s} 1: {r['one']:7.3f} s  {k}: {r['many']:7.3f} s  x{r['speedup']:4.2f} (median x"
              f"{r['median']:4.2f})  f {r['fraction']:4.2f}  cpu x{r['cpu']:4.2f}  objective diff {r['diff']:+.1e}",
              flush=True)
        del data
    what = "cross-validation 10 x 2 (objective: best mean score; non-zero: selected variance in % of the prior's)" \
        if args.cv else "one fit (prepare: the datafit built; solve: the descent and polish)"
    print(f"\n{what}; N = {args.n:,}, P = {args.p:,}, density {args.density:g}; best of {args.repeats} paired runs "
          f"(median: the ratio of the medians)\n")
    phases = "" if args.cv else " prepare speed-up | solve speed-up |"
    print(f"| case | 1 thread (s) | {k} threads (s) | speed-up | median speed-up |{phases} parallel fraction | "
          f"model 16 | model 64 | CPU {k} / 1 | objective diff | non-zero | converged | threads used |")
    print("|---|---|---|---|---|" + ("---|---|" if phases else "") + "---|---|---|---|---|---|---|---|")
    for r in rows:
        split = "" if args.cv else f" {r['prepare']:.2f} | {r['solve']:.2f} |"
        print(f"| {r['case']} | {r['one']:.2f} | {r['many']:.2f} | {r['speedup']:.2f} | {r['median']:.2f} |{split} "
              f"{r['fraction']:.2f} | {r['model16']:.1f} | {r['model64']:.1f} | {r['cpu']:.2f} | {r['diff']:+.1e} | "
              f"{r['nonzero']} | {r['converged']} | {r['threads']} |")


def paired_row(case: str, one: list, many: list, k: int) -> dict:
    """The table's row of a case from its runs on 1 and on k threads: the best wall times, their
    speed-up and the ratio of the medians (a VM's page faults make single runs noisy), the
    phases' best speed-ups (one fit), Amdahl's parallel fraction and what it models on 16 and
    64 cores."""
    def best(runs, key="wall"):
        return min(runs, key=lambda r: r[key])

    b1, bk = best(one), best(many)
    speedup = b1["wall"] / bk["wall"]
    f = amdahl(speedup, k)
    row = dict(case=case, one=b1["wall"], many=bk["wall"], speedup=speedup,
               median=float(np.median([r["wall"] for r in one]) / np.median([r["wall"] for r in many])),
               fraction=f, model16=1 / ((1 - f) + f / 16), model64=1 / ((1 - f) + f / 64), cpu=bk["cpu"] / b1["cpu"],
               diff=bk["objective"] - b1["objective"], nonzero=b1["nonzero"],
               converged=all(r["converged"] for r in one + many), threads=bk["threads"])
    if "prepare" in b1:
        row["prepare"] = best(one, "prepare")["prepare"] / best(many, "prepare")["prepare"]
        row["solve"] = best(one, "solve")["solve"] / best(many, "solve")["solve"]
    return row

if __name__ == "__main__":
    main()
