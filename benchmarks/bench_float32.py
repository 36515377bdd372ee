"""Covariate values stored in float32 against float64 on the CPU, one fit each, paired.

    python benchmarks/bench_float32.py [--n 400000] [--p 300] [--density 0.1] [--repeats 3]

Continuous covariates (normal values, so the values array is read by every kernel; indicator
columns are never read, whatever their type) for a logistic and a Cox L1 fit. The float32 run
casts the datafit's values (the kernels accumulate in float64 whatever the input type), after
a warm-up fit of each type so that compilation is not timed; best of ``--repeats``. The table
gives both times, their ratio and the largest coefficient difference.
"""
from __future__ import annotations

import argparse
import dataclasses
import time

import numpy as np
import pandas as pd
import scipy.sparse as sp


def timed_fit(model, data, dtype, penalty):
    from riskset.core.products.column_products import ColumnProducts
    from riskset.models import get_model
    from riskset.solver.ccd import fit_ccd

    datafit = get_model(model).datafit(data)
    if dtype == "float32":
        datafit.design = dataclasses.replace(datafit.design, values=datafit.values.astype(np.float32))
        datafit.products = ColumnProducts(datafit.design)
    t0 = time.perf_counter()
    result = fit_ccd(datafit, np.full(datafit.n_coef, penalty), np.zeros(datafit.n_coef))
    return time.perf_counter() - t0, result


def main():
    import riskset

    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--n", type=int, default=400_000)
    ap.add_argument("--p", type=int, default=300)
    ap.add_argument("--density", type=float, default=0.1)
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args()
    rng = np.random.default_rng(0)
    X = sp.random(args.n, args.p, density=args.density, format="csc", random_state=1,
                  data_rvs=lambda k: rng.normal(size=k))
    eta = X @ (rng.normal(size=args.p) * 0.05)
    cases = {"logistic": riskset.from_arrays(X, y=(rng.random(args.n) < 1 / (1 + np.exp(-eta))).astype(float)),
             "cox": riskset.from_arrays(X, time=rng.exponential(np.exp(-eta)),
                                        status=(rng.random(args.n) < 0.3).astype(int))}
    rows = []
    for model, data in cases.items():
        small = data.subset(np.arange(2000))
        for dtype in ("float64", "float32"):
            timed_fit(model, small, dtype, 5.0)
        best, coef = {}, {}
        for _ in range(args.repeats):
            for dtype in ("float64", "float32"):
                seconds, result = timed_fit(model, data, dtype, 50.0)
                best[dtype] = min(best.get(dtype, np.inf), seconds)
                coef[dtype] = result.beta
        rows.append(dict(model=model, float64_s=best["float64"], float32_s=best["float32"],
                         speedup=best["float64"] / best["float32"],
                         max_coef_diff=float(np.max(np.abs(coef["float64"] - coef["float32"]))),
                         nonzero=int(np.count_nonzero(coef["float64"]))))
    print(f"N = {args.n:,}, P = {args.p:,}, density {args.density:g}, {X.nnz:,} non-zeros, one thread")
    print(pd.DataFrame(rows).to_string(index=False, float_format=lambda v: f"{v:.3g}"))


if __name__ == "__main__":
    main()
