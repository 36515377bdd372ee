"""L1 logistic regression on `riskset simulate` data: riskset vs scikit-learn and skglm.

    python benchmarks/bench_logistic.py --n 1000000 --p 1000 --density 0.05

Every method solves max l(beta) - gamma ||beta||_1 (intercept unpenalized; sklearn's
liblinear penalizes its intercept, so it is fitted with intercept_scaling large), and
its solution is scored with riskset's objective. Each method runs in its own process
so its peak memory is its own; 'mem/input' is peak RSS growth over the sparse input.
"""
from __future__ import annotations

import argparse

import numpy as np

from _common import cached_simulation, isolated, load, peak_rss_mb, print_table, reset_peak_rss, timed


def objective(X, y, beta, intercept, gamma):
    eta = X @ beta + intercept
    return float(np.sum(y * eta - np.logaddexp(0, eta)) - gamma * np.abs(beta).sum())


def run(method, path, gamma, tol):
    import riskset  # noqa: F401  (imports, like the data, are not part of the peak)
    import sklearn.linear_model  # noqa: F401
    import skglm  # noqa: F401

    X, out = load(path)
    y = out["y"]
    base = reset_peak_rss()
    n = X.shape[0]
    if method == "riskset":

        ds = riskset.Dataset(X=X, covariate_names=[f"x{j}" for j in range(X.shape[1])], row_ids=np.arange(n), y=y)
        fit, sec = timed(lambda: riskset.fit(ds, "logistic", riskset.Laplace(gamma=gamma), tol=tol))
        beta, b0, extra = fit.coef.to_numpy()[1:], fit.coef["intercept"], f"{fit.n_iter} cycles"
    elif method.startswith("sklearn"):
        from sklearn.linear_model import LogisticRegression

        solver = method.split("-")[1]
        kw = {"intercept_scaling": 1e4} if solver == "liblinear" else {}
        m = LogisticRegression(penalty="l1", C=1.0 / gamma, solver=solver, tol=1e-6, max_iter=10_000, **kw)
        Xs = X.tocsr() if solver == "saga" else X
        _, sec = timed(lambda: m.fit(Xs, y))
        beta, b0, extra = m.coef_.ravel(), float(m.intercept_[0]), f"{int(np.max(m.n_iter_))} iter"
    elif method == "skglm":
        from skglm import SparseLogisticRegression

        m = SparseLogisticRegression(alpha=gamma / n, fit_intercept=True, tol=1e-10, max_iter=1000)
        _, sec = timed(lambda: m.fit(X, y))
        beta, b0, extra = m.coef_.ravel(), float(m.intercept_), ""
    else:
        raise ValueError(method)
    return {"method": method, "seconds": sec, "objective": objective(X, y, beta, b0, gamma),
            "nonzero": int(np.count_nonzero(beta)), "peak_mb": peak_rss_mb() - base, "note": extra}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--n", type=int, default=1_000_000)
    ap.add_argument("--p", type=int, default=1000)
    ap.add_argument("--density", type=float, default=0.05)
    ap.add_argument("--gamma-fraction", type=float, default=0.05, help="gamma as a fraction of gamma_max")
    ap.add_argument("--methods", default="riskset,sklearn-liblinear,sklearn-saga,skglm")
    ap.add_argument("--tol", type=float, default=1e-8)
    args = ap.parse_args()
    path = cached_simulation("logistic", args.n, args.p, args.density)
    X, out = load(path)
    input_mb = (X.data.nbytes + X.indices.nbytes + X.indptr.nbytes) / 2**20
    import riskset

    ds = riskset.Dataset(X=X, covariate_names=[f"x{j}" for j in range(X.shape[1])], row_ids=np.arange(X.shape[0]),
                         y=out["y"])
    gamma = args.gamma_fraction * riskset.fit(ds, "logistic", riskset.Laplace(gamma=1e12)).gamma_max
    del X, ds
    print(f"N={args.n} P={args.p} density={args.density} nnz input {input_mb:.0f} MiB; gamma={gamma:.4g} "
          f"({args.gamma_fraction} x gamma_max)\n")
    rows = []
    for method in args.methods.split(","):
        r = isolated(run, method, path, gamma, args.tol)
        r.setdefault("method", method)
        rows.append(r)
    ref = next(r for r in rows if r["method"] == "riskset")
    for r in rows:
        if "seconds" in r:
            r["time/riskset"] = r["seconds"] / ref["seconds"]
            r["obj - riskset"] = r["objective"] - ref["objective"]
            r["mem/input"] = r["peak_mb"] / input_mb
    print_table(rows, ["method", "seconds", "time/riskset", "objective", "obj - riskset", "nonzero",
                       "peak_mb", "mem/input", "note", "error"])


if __name__ == "__main__":
    main()
