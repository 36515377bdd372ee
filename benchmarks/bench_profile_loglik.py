"""Profile log-likelihood at 20 points (riskset.profile_loglik) against 20 separate fits.

    python benchmarks/bench_profile_loglik.py                          # Cox N=1M, P=50; SCCS 100k cases
    python benchmarks/bench_profile_loglik.py --n 200000 --cases 20000 --jobs 2
    python benchmarks/bench_profile_loglik.py --n 100000 --cases 10000 --cyclops   # Cyclops' time beside

'batched' is riskset.profile_loglik: every point one replicate of one batch, each started
from the estimate moved along the profile's tangent (on --jobs threads). 'separate' is what a
caller without it does: one riskset.fit(..., fixed={coef: point}) per point, each from
scratch. Both run after the estimate (the batched call fits it; its time is included and
shown apart). The table prints wall seconds, the ratio, and the largest difference of the
profile values between the two (both fits stop at a relative change of 1e-10). With
--cyclops, Cyclops' getCyclopsProfileLogLikelihood of the Cox case (its time excludes its fit;
'ratio' is then Cyclops over riskset's batched time, which includes riskset's fit). The SCCS model has a
Normal prior (variance
1) on every drug but the profiled one, as SelfControlledCaseSeries' default.
"""
from __future__ import annotations

import argparse
import sys
import time

import numpy as np

import riskset
sys.path.insert(0, __file__.rsplit("/", 1)[0])
from _common import cached_simulation, load, print_table  # noqa: E402


def cox_data(n, p, density):
    X, o = load(cached_simulation("cox", n, p, density))
    return riskset.from_arrays(X, time=o["time"], status=o["status"])


def sccs_data(cases, drugs, seed=0):
    """bench_sccs's eras (3 exposures a case, 10 drugs with an effect), events drawn from them."""
    import dataclasses
    import warnings

    from bench_sccs import simulate

    obs, exp, out, beta = simulate(cases, drugs, 3, 10, seed)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", riskset.DataWarning)
        data = riskset.build_sccs(obs, exp, out)
    b = beta[np.array([int(n) for n in data.covariate_names])]
    rate = 2.5 * np.exp(data.offset - np.log(730.0) + data.X @ b)
    return dataclasses.replace(data, y=np.random.default_rng(seed + 1).poisson(rate).astype(float), meta={})


CYCLOPS_PROFILE = r"""
suppressPackageStartupMessages(library(Cyclops))
a <- commandArgs(trailingOnly = TRUE)
o <- read.csv(file.path(a[1], "out.csv")); cv <- read.csv(file.path(a[1], "cov.csv"))
cd <- convertToCyclopsData(o, cv, modelType = "cox", addIntercept = FALSE, quiet = TRUE)
f <- fitCyclopsModel(cd, control = createControl(tolerance = 1e-10, noiseLevel = "silent"))
pts <- as.numeric(strsplit(a[2], ",")[[1]])
t0 <- proc.time(); p <- getCyclopsProfileLogLikelihood(f, "1", x = pts, returnDerivatives = TRUE)
cat(sprintf("%.4f\n", (proc.time() - t0)[3]))
write.csv(p, file.path(a[1], "profile.csv"), row.names = FALSE)
"""


def cyclops_profile(X, time, status, points) -> dict:
    """Cyclops' getCyclopsProfileLogLikelihood of the first covariate at ``points`` (Rscript; Cyclops
    built as ../shared/bench/README.md says): {"seconds", "value"}."""
    import os
    import subprocess
    import tempfile

    import pandas as pd

    with tempfile.TemporaryDirectory() as folder:
        coo = X.tocoo()
        pd.DataFrame({"rowId": coo.row + 1, "covariateId": coo.col + 1, "covariateValue": coo.data}).to_csv(
            os.path.join(folder, "cov.csv"), index=False)
        pd.DataFrame({"rowId": np.arange(1, X.shape[0] + 1), "time": time, "y": status}).to_csv(
            os.path.join(folder, "out.csv"), index=False)
        script = os.path.join(folder, "profile.R")
        with open(script, "w") as f:
            f.write(CYCLOPS_PROFILE)
        run = subprocess.run(["Rscript", script, folder, ",".join(map(repr, points))], capture_output=True,
                             text=True, check=True)
        return {"seconds": float(run.stdout.split()[-1]),
                "value": pd.read_csv(os.path.join(folder, "profile.csv"))["value"].to_numpy()}


def compare(name, data, model, coef, points, jobs, prior=None):
    t0 = time.perf_counter()
    riskset.fit(data, model, prior, n_jobs=jobs)
    t_fit = time.perf_counter() - t0
    t0 = time.perf_counter()
    batched = riskset.profile_loglik(data, model, prior, coef=coef, points=points, n_jobs=jobs)
    t_batched = time.perf_counter() - t0
    t0 = time.perf_counter()
    separate = np.array([riskset.fit(data, model, prior, fixed={coef: x}).objective for x in points])
    t_separate = time.perf_counter() - t0
    return {"case": name, "rows": data.n_rows, "points": len(points), "estimate s": t_fit,
            "batched s": t_batched, "separate s": t_separate, "ratio": t_separate / t_batched,
            "max |diff|": float(np.max(np.abs(batched["value"].to_numpy() - separate))),
            "all converged": bool(batched["converged"].all())}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--n", type=int, default=1_000_000, help="Cox rows")
    ap.add_argument("--p", type=int, default=50)
    ap.add_argument("--density", type=float, default=0.1)
    ap.add_argument("--cases", type=int, default=100_000, help="SCCS cases (strata)")
    ap.add_argument("--drugs", type=int, default=200)
    ap.add_argument("--jobs", type=int, default=1)
    ap.add_argument("--cyclops", action="store_true", help="also time Cyclops' profile of the Cox case (Rscript)")
    args = ap.parse_args()
    riskset.profile_loglik(riskset.simulate(n=500, p=3, model="cox", seed=1), "cox", coef="x0",
                           points=[0.0, 0.1])  # compile the kernels first
    rows = []
    cox = cox_data(args.n, args.p, args.density)
    points = np.linspace(-0.5, 1.0, 20)
    rows.append(compare(f"cox N={args.n:,} P={args.p}", cox, "cox", "x0", points, args.jobs))
    if args.cyclops:
        cyclops = cyclops_profile(cox.X, cox.time, cox.status, points.tolist())
        ours = riskset.profile_loglik(cox, "cox", coef="x0", points=points)["value"].to_numpy()
        rows.append({"case": "  Cyclops, the same profile (after its fit)", "rows": cox.n_rows, "points": 20,
                     "batched s": cyclops["seconds"], "ratio": cyclops["seconds"] / rows[0]["batched s"],
                     "max |diff|": float(np.max(np.abs(cyclops["value"] - ours)))})
    sccs = sccs_data(args.cases, args.drugs)
    rows.append(compare(f"sccs {args.cases:,} cases", sccs, "sccs", sccs.covariate_names[0],
                        np.linspace(-0.5, 1.0, 20), args.jobs, riskset.Normal(variance=1.0,
                                                                             exclude=[sccs.covariate_names[0]])))
    print_table(rows, list(rows[0]))


if __name__ == "__main__":
    main()
