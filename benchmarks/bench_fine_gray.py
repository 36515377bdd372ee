"""Fine-Gray benchmark: O(nnz_j) sparse vs O(N) scan formulation, vs Cox, vs R cmprsk::crr.

Data of the papers' design (Fine & Gray 1999 as used by Kawaguchi et al. 2020 and the
Cyclops GPU paper): N x P binary covariates at 5% density, beta1_j ~ N(0, 1) x
Bernoulli(0.2), beta2 = -beta1. Cause 1 happens with probability
1 - (1 - p)^exp(x beta1) (p = 0.5) and then at a time drawn from the cause-1 CIF
``1 - [1 - p (1 - exp(-t))]^exp(x beta1)`` (a unit exponential mixture with mass 1 - p
at infinity); otherwise cause 2 at an exponential time with rate exp(x beta2).
Independent exponential censoring (rate ``--cens``, about 20% censored by default).

Part 1 (``--n``, default 100,000; P = 1,000): L1 penalty gamma = sqrt(2) (the papers'
weak setting) and a strong penalty (gamma_max / 4): riskset Fine-Gray with the sparse and
the scan formulation, and riskset's Cox (Breslow; competing events as censored) on the
same X. Columns: nnz_b = non-zero coefficients, cyc = CCD cycles, fit_s = solver
seconds, ms/cyc, sweep_ms = one full compiled sweep over all P coordinates at the
solution, obj_rel = relative difference of the penalized objective from the sparse fit.

Part 2: unpenalized fits with 4 covariates (two binary, two normal) on N = 5,000,
10,000, 20,000 rows against ``cmprsk::crr`` (Rscript, when installed; skipped
otherwise). crr_s times the whole ``crr`` call (Newton iterations plus its O(N^2)
or worse variance step, ``variance=FALSE`` where the installed crr supports it is
timed too: crr_fit_s; the full call only up to ``--r-full-max-n``); riskset_s the whole
``riskset.fit`` (preparation, solver, model-based standard errors), riskset_robust_s
adds :func:`riskset.robust_se` (crr's sandwich). ratio =
crr_s / riskset_robust_s, fit_ratio = crr_fit_s / riskset_s; growth = time ratio to
the previous N; coef_maxdiff = max |crr - riskset| coefficient difference.

Run by hand (not in CI)::

    python benchmarks/bench_fine_gray.py                # N = 100,000
    python benchmarks/bench_fine_gray.py --n 1000000 --skip-r --only strong
    python benchmarks/bench_fine_gray.py --n 20000 --p 200 --skip-r   # quick
"""
from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import tempfile
import time

import numpy as np
import pandas as pd
import scipy.sparse as sp

import riskset
from riskset.robust import robust_se
from riskset.core.penalty import Penalty
from riskset.data import from_arrays
from riskset.models.cox import CoxModel
from riskset.models.fine_gray import FineGrayModel
from riskset.solver.ccd import SolverOptions, fit_ccd


def competing_outcome(eta1, eta2, rng, p=0.5, cens_rate=0.1):
    """(time, status) of the Fine-Gray design: status 1 = cause 1, 2 = cause 2, 0 = censored."""
    n = eta1.shape[0]
    e1 = np.exp(eta1)
    p1 = 1.0 - (1.0 - p) ** e1                    # P(cause 1) = F1(inf | x)
    cause1 = rng.random(n) < p1
    u = rng.random(n)
    # invert F1(t)/F1(inf) = u: 1 - p (1 - exp(-t)) = (1 - u F1(inf))^(1/e1)
    inner = (1.0 - (1.0 - u * p1) ** (1.0 / e1)) / p
    t1 = -np.log1p(-np.clip(inner, 0.0, 1.0 - 1e-16))
    t2 = rng.exponential(1.0, n) / np.exp(eta2)
    t = np.where(cause1, t1, t2)
    c = rng.exponential(1.0 / cens_rate, n) if cens_rate > 0 else np.full(n, np.inf)
    status = np.where(t <= c, np.where(cause1, 1, 2), 0)
    return np.minimum(t, c), status


def papers_design(n, p, density=0.05, seed=0, cens_rate=0.1):
    rng = np.random.default_rng(seed)
    nnz_per_col = rng.binomial(n, density, p)
    indptr = np.r_[0, np.cumsum(nnz_per_col)]
    indices = np.concatenate([np.sort(rng.choice(n, k, replace=False)) for k in nnz_per_col])
    X = sp.csc_matrix((np.ones(indices.shape[0]), indices, indptr), shape=(n, p))
    beta1 = rng.normal(size=p) * (rng.random(p) < 0.2)
    eta1 = X @ beta1
    time_, status = competing_outcome(eta1, -eta1, rng, cens_rate=cens_rate)
    return X, time_, status, beta1


def fit_one(datafit, gamma, tol, max_iter):
    p = datafit.n_coef
    l1, l2 = np.full(p, gamma), np.zeros(p)
    t0 = time.perf_counter()
    res = fit_ccd(datafit, l1, l2, options=SolverOptions(tol=tol, max_iter=max_iter))
    seconds = time.perf_counter() - t0
    sweep = np.inf
    for _ in range(2):  # one full compiled sweep at the solution: gradients + Hessians of all P
        b = res.beta.copy()
        state = datafit.new_state(b)
        t0 = time.perf_counter()
        datafit.sweep(state, np.arange(p), b, Penalty(l1, l2).table, np.full(p, 1e-30))
        sweep = min(sweep, time.perf_counter() - t0)
    return res, seconds, sweep


def warmup():
    """Compile (or load from cache) every kernel the timings use, outside the timings."""
    X, t, s, _ = papers_design(3000, 40, density=0.1)
    data = from_arrays(X, time=t, status=s)
    riskset.fit(data.select(data.covariate_names[:3]), "fine_gray")
    for form in ("sparse", "scan"):
        df = FineGrayModel(formulation=form).datafit(data)
        for gamma in (1.0, 30.0):
            fit_one(df, gamma, 1e-8, 50)
    df = CoxModel().datafit(from_arrays(X, time=t, status=(s == 1).astype(int)))
    for gamma in (1.0, 30.0):
        fit_one(df, gamma, 1e-8, 50)


def part1(n, p, tol, max_iter, seed, cens_rate, only_sparse_above, only=None):
    X, t, s, beta1 = papers_design(n, p, seed=seed, cens_rate=cens_rate)
    data = from_arrays(X, time=t, status=s)
    cox_data = from_arrays(X, time=t, status=(s == 1).astype(int))
    print(f"\n# Part 1: N = {n:,}, P = {p:,}, nnz(X) = {X.nnz:,}, true non-zero {int((beta1 != 0).sum())}; "
          f"status counts: censored {int((s == 0).sum()):,}, cause 1 {int((s == 1).sum()):,}, "
          f"cause 2 {int((s == 2).sum()):,}")
    fg_sparse = FineGrayModel(formulation="sparse").datafit(data)
    gmax = fit_ccd(fg_sparse, np.full(p, 1e12), np.zeros(p)).gamma_max
    rows = []
    for label, gamma in (("weak sqrt(2)", np.sqrt(2.0)), ("strong gmax/4", gmax / 4)):
        if only and not label.startswith(only):
            continue
        ref_obj = None
        for name, make in (("fine_gray sparse", lambda: FineGrayModel(formulation="sparse").datafit(data)),
                           ("fine_gray scan", lambda: FineGrayModel(formulation="scan").datafit(data)),
                           ("cox sparse", lambda: CoxModel(formulation="sparse").datafit(cox_data))):
            if name == "fine_gray scan" and n > only_sparse_above:
                continue
            t0 = time.perf_counter()
            df = make()
            prep = time.perf_counter() - t0
            res, seconds, sweep = fit_one(df, gamma, tol, max_iter)
            if name == "fine_gray sparse":
                ref_obj = res.objective
            obj_rel = abs(res.objective - ref_obj) / abs(ref_obj) if name.startswith("fine_gray") else np.nan
            rows.append({"penalty": label, "gamma": round(gamma, 3), "method": name,
                         "nnz_b": int((res.beta != 0).sum()), "cyc": res.n_iter, "conv": res.converged,
                         "prep_s": round(prep, 2), "fit_s": round(seconds, 2),
                         "ms/cyc": round(1000 * seconds / max(res.n_iter, 1), 1),
                         "sweep_ms": round(1000 * sweep, 1), "obj_rel": obj_rel})
            print(f"  {label:14s} {name:17s} fit {seconds:7.2f} s", flush=True)
    table = pd.DataFrame(rows)
    for label in table["penalty"].unique():
        sel = table["penalty"] == label
        base = table.loc[sel & (table["method"] == "fine_gray sparse")]
        table.loc[sel, "fit_x"] = (table.loc[sel, "fit_s"] / float(base["fit_s"].iloc[0])).round(2)
        table.loc[sel, "sweep_x"] = (table.loc[sel, "sweep_ms"] / float(base["sweep_ms"].iloc[0])).round(2)
    with pd.option_context("display.width", 200, "display.max_columns", 30):
        print(table.to_string(index=False))
    return table


R_SCRIPT = r"""
suppressMessages(library(cmprsk))
args <- commandArgs(TRUE)
d <- read.csv(args[1])
X <- as.matrix(d[, c("b1", "b2", "z1", "z2")])
full <- args[2] == "1"
has_var <- "variance" %in% names(formals(crr))
t_fit <- NA
t_all <- NA
if (has_var) {
  t_fit <- system.time(f <- crr(d$time, d$status, X, failcode = 1, cencode = 0, variance = FALSE))[["elapsed"]]
}
if (full || !has_var) {
  t_all <- system.time(f <- crr(d$time, d$status, X, failcode = 1, cencode = 0))[["elapsed"]]
}
cat(t_all, t_fit, f$coef, "\n")
"""


def part2(sizes, seed, cens_rate, r_timeout, full_max_n):
    print("\n# Part 2: unpenalized, 4 covariates, riskset vs cmprsk::crr")
    rscript = shutil.which("Rscript")
    ok = False
    if rscript:
        ok = subprocess.run([rscript, "-e", "library(cmprsk)"], capture_output=True).returncode == 0
    if not ok:
        print("  R / cmprsk not available: skipped (apt-get install -y r-cran-cmprsk)")
    rng = np.random.default_rng(seed + 1)
    nmax = max(sizes)
    Xf = np.column_stack([rng.random(nmax) < 0.3, rng.random(nmax) < 0.3, rng.normal(size=nmax),
                          rng.normal(size=nmax)]).astype(float)
    beta1 = np.array([0.5, -0.5, 0.3, 0.0])
    tf, sf = competing_outcome(Xf @ beta1, -(Xf @ beta1), rng, cens_rate=cens_rate)
    rows = []
    tmp = tempfile.mkdtemp()
    rpath = os.path.join(tmp, "bench.R")
    with open(rpath, "w") as f:
        f.write(R_SCRIPT)
    crr_dead = False
    for n in sizes:
        X, t, s = Xf[:n], tf[:n], sf[:n]
        data = from_arrays(X, time=t, status=s, covariate_names=["b1", "b2", "z1", "z2"])
        best = np.inf
        for _ in range(5):  # the machine is shared: fastest of 5
            t0 = time.perf_counter()
            fit = riskset.fit(data, "fine_gray", tol=1e-12)
            best = min(best, time.perf_counter() - t0)
        best_robust = np.inf
        for _ in range(5):
            t0 = time.perf_counter()
            fit_r = riskset.fit(data, "fine_gray", tol=1e-12)
            robust_se(fit_r, data)
            best_robust = min(best_robust, time.perf_counter() - t0)
        row = {"N": n, "events": int((s == 1).sum()), "competing": int((s == 2).sum()),
               "riskset_s": round(best, 3), "riskset_robust_s": round(best_robust, 3)}
        if ok and not crr_dead:
            csv = os.path.join(tmp, f"d{n}.csv")
            pd.DataFrame({"time": t, "status": s, "b1": X[:, 0], "b2": X[:, 1], "z1": X[:, 2],
                          "z2": X[:, 3]}).to_csv(csv, index=False, float_format="%.17g")
            try:
                full = "1" if n <= full_max_n else "0"
                out = subprocess.run([rscript, rpath, csv, full], capture_output=True, text=True, timeout=r_timeout)
                vals = [float(v) if v != "NA" else np.nan for v in out.stdout.split()]
                row["crr_s"] = vals[0]
                row["crr_fit_s"] = vals[1]
                row["coef_maxdiff"] = float(np.max(np.abs(np.array(vals[2:6]) - fit.coef.to_numpy())))
                row["ratio"] = round(vals[0] / best_robust, 1) if np.isfinite(vals[0]) else np.nan
                if np.isfinite(vals[1]):
                    row["fit_ratio"] = round(vals[1] / best, 1)
            except subprocess.TimeoutExpired:
                row["crr_s"] = f">{r_timeout}"
                crr_dead = True
            except (ValueError, IndexError):
                row["crr_s"] = "error"
        rows.append(row)
        print(f"  N = {n:,}: {row}", flush=True)
    table = pd.DataFrame(rows)
    for col in ("riskset_s", "crr_s", "crr_fit_s"):
        table[col] = pd.to_numeric(table.get(col), errors="coerce") if col in table else np.nan
        if col in table and pd.api.types.is_numeric_dtype(table[col]):
            table[f"{col[:-2]}_growth"] = (table[col] / table[col].shift()).round(2)
    with pd.option_context("display.width", 200, "display.max_columns", 30):
        print(table.to_string(index=False))
    return table


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--n", type=int, default=100_000)
    ap.add_argument("--p", type=int, default=1_000)
    ap.add_argument("--tol", type=float, default=1e-8)
    ap.add_argument("--max-iter", type=int, default=500)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--cens", type=float, default=0.1, help="censoring rate (exponential)")
    ap.add_argument("--scan-max-n", type=int, default=200_000, help="skip the O(N) scan above this N")
    ap.add_argument("--r-sizes", type=str, default="5000,10000,20000")
    ap.add_argument("--r-timeout", type=float, default=600)
    ap.add_argument("--r-full-max-n", type=int, default=10_000,
                    help="largest N for which crr also computes its (O(N^2) or worse) variance")
    ap.add_argument("--skip-r", action="store_true")
    ap.add_argument("--skip-part1", action="store_true")
    ap.add_argument("--only", choices=["weak", "strong"], help="run one penalty regime of part 1")
    args = ap.parse_args(argv)
    warmup()
    if not args.skip_part1:
        part1(args.n, args.p, args.tol, args.max_iter, args.seed, args.cens, args.scan_max_n, args.only)
    if not args.skip_r:
        part2([int(v) for v in args.r_sizes.split(",")], args.seed, args.cens, args.r_timeout, args.r_full_max_n)


if __name__ == "__main__":
    main()
