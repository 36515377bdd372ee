"""A/B timing of two source trees of riskset on the same fits, interleaved, in one run.

Each tree gets one long-lived worker process (``PYTHONPATH=<tree>/src``) that builds the
data of a case once (same seeds on both sides) and times ``riskset.fit`` on it; the
driver asks both workers in turn, ``--repeats`` times, and keeps each side's best CPU
time. The table prints the ratio B / A and checks the fits agree (objective, cycles):
a faster fit that stops elsewhere is not faster.

    python benchmarks/bench_ab.py --a /path/to/old/checkout --b . [--cases cox_v1,logistic_v1] [--repeats 3]
    python benchmarks/bench_ab.py --a OLD --b . --b-options '{"kkt_tol": 1e300}'   # B's rule as A's

``--b-options`` passes extra keyword arguments to B's ``riskset.fit`` (e.g. to switch off
a stopping rule that A does not have, or to measure its cost).
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys


#: name -> (model, model options, prior (kind, variance), data recipe)
CASES = {
    "cox_v1": ("cox", {}, ("laplace", 1.0), dict(kind="cox", n=100_000, p=1000)),
    "cox_v1e-5": ("cox", {}, ("laplace", 1e-5), dict(kind="cox", n=100_000, p=1000)),
    "cox_50k_strata": ("cox", {}, ("laplace", 1.0), dict(kind="cox", n=100_000, p=1000, strata=50_000)),
    "cox_50k_strata_v1e-5": ("cox", {}, ("laplace", 1e-5), dict(kind="cox", n=100_000, p=1000, strata=50_000)),
    "cox_1M_v1": ("cox", {}, ("laplace", 1.0), dict(kind="cox", n=1_000_000, p=1000)),
    "fine_gray_v1e-5": ("fine_gray", {}, ("laplace", 1e-5), dict(kind="fine_gray", n=100_000, p=1000)),
    "sccs_l1": ("conditional_poisson", {}, ("laplace", 0.01), dict(kind="conditional", n=300_000, p=1000,
                                                                       strata=30_000)),
    "sccs_l2": ("conditional_poisson", {}, ("normal", 1.0), dict(kind="conditional", n=300_000, p=1000,
                                                                    strata=30_000)),
    "sccs_small": ("conditional_poisson", {}, ("laplace", 0.01), dict(kind="conditional", n=2_000, p=1000,
                                                                          strata=200)),
    "pooled_logistic": ("pooled_logistic", {"interval_width": 1.0}, ("laplace", 1.0),
                        dict(kind="cox", n=20_000, p=200)),
    "logistic_v1": ("logistic", {}, ("laplace", 1.0), dict(kind="logistic", n=100_000, p=1000)),
    "logistic_v1e-5": ("logistic", {}, ("laplace", 1e-5), dict(kind="logistic", n=100_000, p=1000)),
}

WORKER = r'''
import dataclasses, json, sys, time
import numpy as np
import riskset

def make(recipe):
    kind, n, p = recipe["kind"], recipe["n"], recipe["p"]
    rng = np.random.default_rng(11)
    if kind == "conditional":
        data = riskset.simulate(n=n, p=p, model="poisson", seed=1)
        strata = np.sort(rng.integers(0, recipe["strata"], n))
        return dataclasses.replace(data, strata=strata)
    data = riskset.simulate(n=n, p=p, model="cox" if kind == "fine_gray" else kind, seed=1)
    if kind == "fine_gray":
        status = np.asarray(data.status).copy()
        status[(status == 1) & (rng.random(n) < 0.3)] = 2
        data = dataclasses.replace(data, status=status)
    if recipe.get("strata"):
        data = dataclasses.replace(data, strata=rng.integers(0, recipe["strata"], n))
    return data

cache = {}
extra = json.loads(sys.argv[1])
for line in sys.stdin:
    name, model, options, (kind, variance), recipe = json.loads(line)
    key = json.dumps(recipe, sort_keys=True)
    if key not in cache:
        cache.clear()
        cache[key] = make(recipe)
    data = cache[key]
    prior = riskset.Laplace(variance=variance) if kind == "laplace" else riskset.Normal(variance)
    c0, t0 = time.process_time(), time.perf_counter()
    fit = riskset.fit(data, model, prior, tol=1e-8, **options, **extra)
    out = dict(cpu=time.process_time() - c0, wall=time.perf_counter() - t0, objective=fit.objective,
               n_iter=fit.n_iter, converged=bool(fit.converged), nonzero=int(np.count_nonzero(fit.coef)))
    print(json.dumps(out), flush=True)
'''


def worker(tree: str, extra: dict) -> subprocess.Popen:
    env = dict(os.environ, PYTHONPATH=os.path.join(os.path.abspath(tree), "src"), NUMBA_NUM_THREADS="1")
    return subprocess.Popen([sys.executable, "-c", WORKER, json.dumps(extra)], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, text=True, env=env)


def ask(proc, name):
    model, options, prior, recipe = CASES[name]
    proc.stdin.write(json.dumps([name, model, options, prior, recipe]) + "\n")
    proc.stdin.flush()
    return json.loads(proc.stdout.readline())


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--a", required=True, help="source tree A (the baseline)")
    p.add_argument("--b", default=".", help="source tree B")
    p.add_argument("--cases", default=",".join(c for c in CASES if c != "cox_1M_v1"),
                   help=f"comma-separated, from: {', '.join(CASES)}")
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--b-options", default="{}", help="JSON keyword arguments for B's riskset.fit")
    args = p.parse_args(argv)
    a, b = worker(args.a, {}), worker(args.b, json.loads(args.b_options))
    rows = []
    for name in args.cases.split(","):
        ask(a, name), ask(b, name)  # data built, kernels compiled
        best = {"A": None, "B": None}
        for _ in range(args.repeats):
            for side, proc in (("A", a), ("B", b)):
                r = ask(proc, name)
                if best[side] is None or r["cpu"] < best[side]["cpu"]:
                    best[side] = r
        ra, rb = best["A"], best["B"]
        rows.append((name, ra["cpu"], rb["cpu"], rb["cpu"] / ra["cpu"], ra["n_iter"], rb["n_iter"],
                     rb["objective"] - ra["objective"], ra["nonzero"], rb["converged"]))
        print(f"{name:18s} A {ra['cpu']:7.3f} s  B {rb['cpu']:7.3f} s  B/A {rows[-1][3]:5.2f}  cycles "
              f"{ra['n_iter']}/{rb['n_iter']}  objective B-A {rows[-1][6]:+.2e}", flush=True)
    for proc in (a, b):
        proc.stdin.close()
        proc.wait()
    print("\n| case | A (s) | B (s) | B / A | cycles A / B | objective B - A | non-zero | B converged |")
    print("|---|---|---|---|---|---|---|---|")
    for r in rows:
        print(f"| {r[0]} | {r[1]:.3f} | {r[2]:.3f} | {r[3]:.2f} | {r[4]} / {r[5]} | {r[6]:+.1e} | {r[7]} | {r[8]} |")


if __name__ == "__main__":
    main()
