"""A large propensity score: L1 logistic regression, 10-fold cross-validation of the prior variance.

    python benchmarks/bench_propensity.py                 # N = 1M, P = 20k, subsample 100k: ~25 min
    python benchmarks/bench_propensity.py --systems sklearn-saga@sub   # saga on 100k rows alone: hours
    python benchmarks/bench_propensity.py --small         # N = 50k, P = 2k, every system on all rows
    python benchmarks/bench_propensity.py --n 200000 --p 5000 --subsample 50000 \
        --systems riskset,glmnet,cyclops,sklearn-liblinear,cyclops@sub,riskset@sub

Data: a claims-like simulation (seeded, cached under benchmarks/.cache): binary
covariates whose prevalences are log-normal (``--skew`` is its log-sd), so a few
columns are common and most are rare, mean density ``--density``; a treatment drawn
from a sparse logistic model with an intercept (``--true-nonzero`` effects).

Every system solves  max_beta  l(beta) - lambda sum_j |beta_j|  (l the summed
log-likelihood, the intercept unpenalized), riskset's Laplace prior with variance
v = 2 / lambda^2, and chooses v on one grid (``--grid`` log-spaced variances) by
10-fold cross-validation of the held-out log-likelihood, then refits on all rows:

* riskset: ``riskset.cross_validate`` (folds from ``assign_folds``, seed 0).
* sklearn-saga / sklearn-liblinear: ``LogisticRegressionCV`` with ``l1_ratios=[1]``,
  ``Cs = 1 / lambda``, the same folds, ``scoring="neg_log_loss"``. liblinear penalizes
  its intercept; it is fitted with ``intercept_scaling=1e4`` so that the penalty on the
  intercept (lambda |b0| / 1e4) is negligible.
* glmnet (R): ``cv.glmnet(standardize = FALSE, foldid = the same folds)`` on the
  dgCMatrix of the same CSC arrays, ``lambda_glmnet = lambda / N``. glmnet scales its
  penalty per observation, so its fold fits (0.9 N rows) are penalized by 0.9 lambda.
* cyclops (R): ``fitCyclopsModel(createPrior("laplace", useCrossValidation = TRUE),
  createControl(cvType = "grid", fold = 10, lowerLimit/upperLimit/gridSteps = the
  grid))``. Cyclops draws its own folds (seed 1).

A system written ``name@sub`` runs on the first ``--subsample`` rows (a random
subsample: rows are i.i.d.), for systems too slow for all of them (Cyclops at N = 1M);
``riskset@sub`` gives the comparison at the same size.

Each system runs in its own process: 'cv+refit' is the wall / CPU time of the
cross-validation and the refit as the system reports it (without loading the data),
'process' the whole child process, 'peak MiB' its peak RSS (os.wait4). The final
coefficients of every system are scored by one objective (riskset's penalized
log-likelihood at the system's chosen variance, on its rows); 'gap' is the tight
riskset optimum (tol 1e-12) minus that objective: the accuracy at which the time was
bought.

Full size: N = 1M, P = 20k at 0.5% density is 1e8 non-zeros (X: 1.1 GiB as CSC
float64 + int32). ``--jobs`` is passed to every system (riskset: ``cross_validate(n_jobs=)``;
at ``--jobs 1`` its folds run one after another, its Numba threads working inside each fold
fit); glmnet is serial.

Recorded results: docs/benchmarks.md, section 'bench_propensity.py'.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time

import numpy as np
import scipy.sparse as sp

from _common import cached_dir, peak_rss_mb, print_table, reset_peak_rss, run_measured

SYSTEMS = "riskset,sklearn-liblinear,sklearn-saga,glmnet,cyclops"
FULL_SYSTEMS = "riskset,glmnet,riskset@sub,cyclops@sub,sklearn-liblinear@sub"


# ---------------------------------------------------------------- data

def simulate_claims(folder, n, p, density, skew, true_nonzero, seed):
    """Write a claims-like data set to ``folder`` as raw arrays R and NumPy both read:
    CSC ``indices.i32`` / ``indptr.i32`` of a binary X (n x p), ``y.i32``, ``folds.i32``
    (riskset's 10 folds, seed 0), ``beta.f64`` (true effects, intercept first)."""
    rng = np.random.default_rng(seed)
    prevalence = _lognormal_prevalence(rng, p, density, skew)
    counts = rng.binomial(n, prevalence)
    rows = [np.sort(rng.choice(n, size=k, replace=False)).astype(np.int32) for k in counts]
    indptr = np.concatenate([[0], np.cumsum(counts)]).astype(np.int32)
    X = sp.csc_matrix((np.ones(indptr[-1]), np.concatenate(rows), indptr), shape=(n, p))
    del rows
    true_nonzero = min(true_nonzero, p)
    beta = np.zeros(p)
    beta[rng.choice(p, size=true_nonzero, replace=False)] = rng.normal(0.0, 0.5, true_nonzero)
    xb = X @ beta
    intercept = _intercept_for_rate(xb, 0.3)
    y = (rng.random(n) < 1.0 / (1.0 + np.exp(-(intercept + xb)))).astype(np.int32)
    X.indices.astype(np.int32).tofile(f"{folder}/indices.i32")
    indptr.tofile(f"{folder}/indptr.i32")
    y.tofile(f"{folder}/y.i32")
    np.concatenate([[intercept], beta]).tofile(f"{folder}/beta.f64")
    _folds(X, y).astype(np.int32).tofile(f"{folder}/folds.i32")


def _lognormal_prevalence(rng, p, density, skew):
    """Column prevalences exp(mu + skew z), capped at 0.5, with mean ``density``."""
    z = rng.standard_normal(p)
    mu = np.log(density) - skew ** 2 / 2
    for _ in range(20):  # the cap lowers the mean: move mu until the mean is right
        prevalence = np.minimum(np.exp(mu + skew * z), 0.5)
        mu += np.log(density / prevalence.mean())
    return prevalence


def _intercept_for_rate(xb, rate):
    """Intercept giving a mean treatment probability ``rate`` (bisection)."""
    lo, hi = -20.0, 20.0
    for _ in range(60):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if np.mean(1.0 / (1.0 + np.exp(-(mid + xb)))) < rate else (lo, mid)
    return (lo + hi) / 2


def _folds(X, y):
    from riskset.selection.folds import assign_folds

    return assign_folds(_dataset(X, y), n_folds=10, n_repeats=1, seed=0, model="logistic")[0]


def load(folder, rows=None):
    """X (CSC, float64), y and the folds of the first ``rows`` rows (all by default)."""
    indices = np.fromfile(f"{folder}/indices.i32", np.int32)
    indptr = np.fromfile(f"{folder}/indptr.i32", np.int32)
    y, folds = np.fromfile(f"{folder}/y.i32", np.int32), np.fromfile(f"{folder}/folds.i32", np.int32)
    X = sp.csc_matrix((np.ones(indices.size), indices, indptr), shape=(y.size, indptr.size - 1))
    if rows is not None and rows < y.size:
        X, y, folds = X[:rows], y[:rows], folds[:rows]
    return X, y.astype(np.float64), folds


def _dataset(X, y):
    import riskset

    return riskset.Dataset(X=X, covariate_names=[f"x{j}" for j in range(X.shape[1])], row_ids=np.arange(X.shape[0]),
                           y=np.asarray(y, np.float64))


def variance_grid(X, y, n_grid, decades):
    """Variances 2 / lambda^2 for lambda log-spaced from gamma_max / 2 down ``decades``
    decades (gamma_max = max_j |x_j' (y - mean y)|: every covariate at zero)."""
    gamma_max = np.abs(X.T @ (y - y.mean())).max()
    lambdas = gamma_max * np.logspace(-0.3, -decades, n_grid)
    return np.sort(2.0 / lambdas ** 2)


def objective(X, y, intercept, beta, variance):
    """riskset's objective: the summed log-likelihood minus sqrt(2 / v) ||beta||_1."""
    eta = X @ beta + intercept
    return float(np.sum(y * eta - np.logaddexp(0.0, eta)) - np.sqrt(2.0 / variance) * np.abs(beta).sum())


# ---------------------------------------------------------------- the systems (each in its own process)

def run_riskset(X, y, folds, grid, args):
    import riskset

    data = _dataset(X, y)
    start = _clock()
    cv = riskset.cross_validate(data, "logistic", riskset.Laplace(variance=1.0), variances=grid, n_folds=10,
                                seed=0, n_jobs=args.jobs, progress=False, tol=args.tol)
    coef = cv.fit.coef.to_numpy()
    unconverged = int((~cv.scores["converged"]).sum())
    return _result(start, cv.selected_variance, coef[0], coef[1:], kkt=cv.fit.kkt,
                   note=f"refit {cv.fit.n_iter} cycles; {unconverged} of {len(cv.scores)} fold fits unconverged")


def run_sklearn(X, y, folds, grid, args, solver):
    from sklearn.linear_model import LogisticRegressionCV

    splits = [(np.flatnonzero(folds != k), np.flatnonzero(folds == k)) for k in range(folds.max() + 1)]
    extra = {"intercept_scaling": 1e4} if solver == "liblinear" else {}
    model = LogisticRegressionCV(Cs=1.0 / np.sqrt(2.0 / grid), l1_ratios=[1.0], cv=splits, scoring="neg_log_loss",
                                 solver=solver, tol=args.sk_tol, max_iter=args.sk_max_iter, n_jobs=args.jobs,
                                 refit=True, use_legacy_attributes=False, **extra)
    start = _clock()
    model.fit(X, y)
    variance = 2.0 * float(np.ravel(model.C_)[0]) ** 2  # C = 1 / lambda
    return _result(start, variance, float(np.ravel(model.intercept_)[0]), model.coef_.ravel(),
                   note=f"{int(np.max(model.n_iter_))} iter max")


def _clock():
    return time.perf_counter(), time.process_time(), reset_peak_rss()


def _result(start, variance, intercept, beta, kkt=None, note=""):
    wall, cpu, rss = start
    return {"cv+refit wall s": time.perf_counter() - wall, "cv+refit cpu s": time.process_time() - cpu,
            "fit peak MiB": peak_rss_mb() - rss, "variance": float(variance), "intercept": float(intercept),
            "beta": np.asarray(beta, float).tolist(), "kkt": kkt, "note": note}


def python_worker(args):
    X, y, folds = load(args.data, args.rows)
    grid = np.fromfile(args.grid_file)
    if args.worker == "riskset":
        out = run_riskset(X, y, folds, grid, args)
    else:
        out = run_sklearn(X, y, folds, grid, args, solver=args.worker.split("-")[1])
    with open(args.out, "w") as f:
        json.dump(out, f)


R_READ = r"""
a <- commandArgs(trailingOnly = TRUE)
dir <- a[1]; grid <- readBin(a[2], "double", 1e6); rows <- as.integer(a[3]); out <- a[4]
threads <- as.integer(a[5]); tol <- as.numeric(a[6])
size <- function(f, b) file.size(file.path(dir, f)) / b
indptr <- readBin(file.path(dir, "indptr.i32"), "integer", size("indptr.i32", 4))
i <- readBin(file.path(dir, "indices.i32"), "integer", size("indices.i32", 4))
y <- readBin(file.path(dir, "y.i32"), "integer", size("y.i32", 4))
folds <- readBin(file.path(dir, "folds.i32"), "integer", size("folds.i32", 4))
col <- rep.int(seq_len(length(indptr) - 1L), diff(indptr))
keep <- i < rows; i <- i[keep]; col <- col[keep]; y <- y[seq_len(rows)]; folds <- folds[seq_len(rows)]
rm(keep); invisible(gc())
P <- length(indptr) - 1L
report <- function(t, variance, b, note) {
  t <- proc.time() - t
  writeLines(sprintf('{"cv+refit wall s": %.17g, "cv+refit cpu s": %.17g, "variance": %.17g, "intercept": %.17g,
    "beta": [%s], "note": "%s"}', t[["elapsed"]], t[["user.self"]] + t[["sys.self"]], variance, b[1],
    paste(sprintf("%.17g", b[-1]), collapse = ","), note), out)
}
"""

R_GLMNET = R_READ + r"""
suppressPackageStartupMessages(library(glmnet))
x <- Matrix::sparseMatrix(i = i + 1L, j = col, x = 1, dims = c(rows, P))
rm(i, col); invisible(gc())
lambda <- sqrt(2 / sort(grid)) / rows   # glmnet's objective is per observation
t <- proc.time()
cv <- cv.glmnet(x, y, family = "binomial", lambda = lambda, foldid = folds + 1L, standardize = FALSE,
                type.measure = "deviance", thresh = tol, maxit = 1e6)
b <- as.numeric(coef(cv, s = "lambda.min"))
report(t, 2 / (cv$lambda.min * rows)^2, b, sprintf("thresh %g", tol))
"""

R_CYCLOPS = R_READ + r"""
suppressPackageStartupMessages(library(Cyclops))
outcomes <- data.frame(rowId = seq_len(rows), y = y)
covariates <- data.frame(rowId = i + 1L, covariateId = col, covariateValue = 1)
rm(i, col); invisible(gc())
covariates <- covariates[order(covariates$rowId, covariates$covariateId), ]
t <- proc.time()
cd <- convertToCyclopsData(outcomes, covariates, modelType = "lr", addIntercept = TRUE, quiet = TRUE)
rm(covariates); invisible(gc())
control <- createControl(cvType = "grid", fold = 10, lowerLimit = min(grid), upperLimit = max(grid),
                         gridSteps = length(grid), cvRepetitions = 1, seed = 1, threads = threads,
                         tolerance = tol, noiseLevel = "silent")
fit <- fitCyclopsModel(cd, prior = createPrior("laplace", useCrossValidation = TRUE), control = control)
b <- coef(fit)
beta <- numeric(P); beta[as.integer(names(b)[-1])] <- b[-1]
report(t, fit$variance, c(b[["(Intercept)"]], beta), sprintf("tolerance %g; its own folds; incl. conversion", tol))
"""


def command(system, args, folder, rows, grid_file, out):
    """The command line of one system's process."""
    if system in ("glmnet", "cyclops"):
        script = os.path.join(os.path.dirname(out), f"{system}.R")
        with open(script, "w") as f:
            f.write(R_GLMNET if system == "glmnet" else R_CYCLOPS)
        tol = args.glmnet_thresh if system == "glmnet" else args.cyclops_tol
        return ["Rscript", script, folder, grid_file, str(rows), out, str(args.jobs), str(tol)]
    return [sys.executable, __file__, "--worker", system, "--data", folder, "--rows", str(rows),
            "--grid-file", grid_file, "--out", out, "--jobs", str(args.jobs), "--tol", str(args.tol),
            "--sk-tol", str(args.sk_tol), "--sk-max-iter", str(args.sk_max_iter)]


# ---------------------------------------------------------------- the table

def reference(X, y, variance, start, tol):
    """riskset's objective at its tight optimum at ``variance`` (warm-started at ``start``)."""
    import pandas as pd
    import riskset

    data = _dataset(X, y)
    warm = pd.Series(start, index=["intercept"] + list(data.covariate_names))
    fit = riskset.fit(data, "logistic", riskset.Laplace(variance=variance), tol=tol, warm_start=warm)
    coef = fit.coef.to_numpy()
    return objective(X, y, coef[0], coef[1:], variance)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--n", type=int, default=1_000_000)
    ap.add_argument("--p", type=int, default=20_000)
    ap.add_argument("--small", action="store_true", help="N = 50k, P = 2k, subsample 20k")
    ap.add_argument("--density", type=float, default=0.005, help="mean column prevalence")
    ap.add_argument("--skew", type=float, default=2.0, help="log-sd of the column prevalences")
    ap.add_argument("--true-nonzero", type=int, default=200, help="non-zero true effects")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--grid", type=int, default=10, help="number of variances")
    ap.add_argument("--decades", type=float, default=2.5, help="lambda from gamma_max/2 down this many decades")
    ap.add_argument("--subsample", type=int, default=100_000, help="rows of the systems written name@sub")
    ap.add_argument("--systems", default=FULL_SYSTEMS,
                    help=f"comma-separated, name@sub on the subsample; default {FULL_SYSTEMS}; --small: all of "
                         f"{SYSTEMS} on all rows, then cyclops@sub and riskset@sub")
    ap.add_argument("--jobs", type=int, default=1, help="threads / processes of each system")
    ap.add_argument("--tol", type=float, default=1e-8, help="riskset's tolerance")
    ap.add_argument("--sk-tol", type=float, default=1e-6)
    ap.add_argument("--sk-max-iter", type=int, default=10_000)
    ap.add_argument("--glmnet-thresh", type=float, default=1e-10)
    ap.add_argument("--cyclops-tol", type=float, default=1e-8)
    ap.add_argument("--reference-tol", type=float, default=1e-12)
    ap.add_argument("--worker", help=argparse.SUPPRESS)
    ap.add_argument("--data", help=argparse.SUPPRESS)
    ap.add_argument("--rows", type=int, help=argparse.SUPPRESS)
    ap.add_argument("--grid-file", help=argparse.SUPPRESS)
    ap.add_argument("--out", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.worker:
        return python_worker(args)
    if args.small:
        args.n, args.p, args.subsample = 50_000, 2_000, 20_000
        if args.systems == FULL_SYSTEMS:
            args.systems = SYSTEMS + ",cyclops@sub,riskset@sub"
    name = f"propensity_{args.n}_{args.p}_{args.density}_{args.skew}_{args.true_nonzero}_{args.seed}"
    t0 = time.perf_counter()
    folder = cached_dir(name, lambda d: simulate_claims(d, args.n, args.p, args.density, args.skew,
                                                        args.true_nonzero, args.seed))
    X, y, _ = load(folder)
    print(f"data {folder} ({time.perf_counter() - t0:.1f} s): N={args.n} P={args.p} nnz={X.nnz} "
          f"(density {X.nnz / args.n / args.p:.4f}, "
          f"column prevalence median {np.median(np.diff(X.indptr)) / args.n:.2g}"
          f" max {np.diff(X.indptr).max() / args.n:.2g}), treated {y.mean():.3f}")
    grid = variance_grid(X, y, args.grid, args.decades)
    print(f"variance grid {grid[0]:.3g} .. {grid[-1]:.3g} ({args.grid} points), lambda {np.sqrt(2 / grid[-1]):.3g} .. "
          f"{np.sqrt(2 / grid[0]):.3g}; {args.jobs} job(s) per system\n", flush=True)
    rows, references = [], {}
    with tempfile.TemporaryDirectory() as tmp:
        grid_file = os.path.join(tmp, "grid.f64")
        grid.tofile(grid_file)
        for system in args.systems.split(","):
            base, _, sub = system.partition("@")
            n_rows = min(args.subsample, args.n) if sub else args.n
            out = os.path.join(tmp, f"{system}.json")
            row = {"system": system, "N": n_rows}
            row.update(run_measured(command(base, args, folder, n_rows, grid_file, out)))
            if row.pop("returncode") != 0 or not os.path.exists(out):
                rows.append(row | {"note": "failed"})
                continue
            with open(out) as f:
                result = json.load(f)
            beta = np.asarray(result.pop("beta"))
            Xs, ys = (X[:n_rows], y[:n_rows]) if n_rows < args.n else (X, y)
            row.update(result, nonzero=int(np.count_nonzero(beta)),
                       objective=objective(Xs, ys, result["intercept"], beta, result["variance"]))
            key = (n_rows, result["variance"])
            if key not in references:
                references[key] = reference(Xs, ys, result["variance"], np.r_[result["intercept"], beta],
                                            args.reference_tol)
            row["gap"] = references[key] - row["objective"]
            rows.append(row)
            print_table([row], COLUMNS)
            print(flush=True)
    print(f"\nN={args.n} P={args.p} nnz={X.nnz}; X as CSC float64 + int32 indices: "
          f"{(X.data.nbytes + X.indices.nbytes + X.indptr.nbytes) / 2**20:.0f} MiB\n")
    print_table(rows, COLUMNS)


COLUMNS = ["system", "N", "cv+refit wall s", "cv+refit cpu s", "process wall s", "process cpu s", "peak MiB",
           "fit peak MiB", "variance", "nonzero", "objective", "gap", "kkt", "note"]


if __name__ == "__main__":
    main()
