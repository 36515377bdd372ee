"""Broken adaptive ridge (BAR, BIC penalty) on a Cox data set, riskset beside BrokenAdaptiveRidge.

    python benchmarks/bench_bar.py --data DIR            # DIR made by gen_big.py when missing
    python benchmarks/bench_bar.py --data DIR --n 200000 --threads 1 2

DIR holds a data set of ``../shared/bench/cyclops/gen_big.py`` (Cox, P = 1,000 indicator
covariates at 5%, N = 1M by default). BrokenAdaptiveRidge 1.0.1 runs over Cyclops (both built
from their public sources, ``../shared/bench/README.md``) through ``bar_cyclops.R`` with its
defaults; riskset runs ``riskset.fit(data, "cox", riskset.BAR())`` in a fresh process per thread
count after a small warm-up fit.

Both estimates are judged by one function: BAR's fixed point. At a BAR estimate b each selected
coefficient solves the ridge condition with its own variance b_j^2 / penalty, i.e. the
log-likelihood's slope g_j(b) equals penalty / b_j; the table shows the largest
|g_j b_j / penalty - 1| over the selected coefficients (0 at an exact fixed point), how many
were selected, and the two estimates' largest difference and selection agreement.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
import warnings

import numpy as np
import pandas as pd

HERE = os.path.dirname(os.path.abspath(__file__))
GEN_BIG = os.path.join(HERE, "..", "..", "shared", "bench", "cyclops", "gen_big.py")


def load(data_dir, nrows=None):
    import pyarrow.parquet as pq
    import riskset

    out = pd.read_csv(os.path.join(data_dir, "outcomes.csv"))
    cov = pq.read_table(os.path.join(data_dir, "covariates.parquet")).to_pandas()
    if nrows is not None:
        out, cov = out[out.row_id < nrows], cov[cov.row_id < nrows]
    return riskset.from_long(out[["row_id", "time", "status"]], cov)


def child(spec):
    """In a fresh process: a warm-up fit, then the timed BAR fit; prints one JSON line."""
    import riskset

    data = load(spec["data"])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        riskset.fit(load(spec["data"], nrows=3000), "cox", riskset.BAR())
        c0, w0 = time.process_time(), time.perf_counter()
        fit = riskset.fit(data, "cox", riskset.BAR(), n_jobs=spec["threads"])
        cpu, wall = time.process_time() - c0, time.perf_counter() - w0
    print(json.dumps(dict(cpu_s=cpu, wall_s=wall, status=fit.status,
                          coef={str(k): float(v) for k, v in fit.coef.items()})))


def run_riskset(args, threads):
    env = dict(os.environ, NUMBA_NUM_THREADS=str(threads), OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1")
    spec = json.dumps(dict(data=args.data, threads=threads))
    run = subprocess.run([sys.executable, __file__, "--data", args.data, "--child", spec], env=env,
                         capture_output=True, text=True)
    if run.returncode:
        sys.exit(f"riskset's run on {threads} thread(s) failed:\n{run.stderr}")
    return json.loads(run.stdout.strip().splitlines()[-1])


def run_package(args):
    coef_csv = os.path.join(args.data, "bar_cyclops_coef.csv")
    timing = os.path.join(args.data, "bar_cyclops_time.json")
    if args.rerun_r or not os.path.exists(timing):
        run = subprocess.run(["Rscript", os.path.join(HERE, "bar_cyclops.R"), args.data, coef_csv],
                             capture_output=True, text=True)
        if run.returncode:
            sys.exit(f"BrokenAdaptiveRidge's run failed:\n{run.stderr}")
        with open(timing, "w") as f:
            f.write(run.stdout.strip().splitlines()[-1])
    with open(timing) as f:
        out = json.load(f)
    c = pd.read_csv(coef_csv, dtype={"name": str})
    out["coef"] = dict(zip(c.name, c.beta))
    return out


def fixed_point_residual(data, vectors):
    """Largest |g_j b_j / penalty - 1| over each vector's non-zero coefficients, and its count."""
    from riskset.models.base import get_model

    m = get_model("cox")
    datafit, names = m.datafit(data), m.coef_names(data)
    penalty = np.log(data.n_rows) / 2.0
    out = {}
    for label, coef in vectors.items():
        beta = np.array([coef.get(n, 0.0) for n in names])
        g = datafit.gradient(datafit.new_state(beta))
        on = beta != 0
        out[label] = dict(residual=float(np.max(np.abs(g[on] * beta[on] / penalty - 1.0))), nonzero=int(on.sum()),
                          beta=beta)
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", required=True, help="folder of the data set (made when missing)")
    ap.add_argument("--n", type=int, default=1_000_000, help="rows of a data set to make")
    ap.add_argument("--threads", nargs="+", type=int, default=[1, 2], help="riskset thread counts")
    ap.add_argument("--rerun-r", action="store_true", help="run BrokenAdaptiveRidge again even if DIR has its result")
    ap.add_argument("--child", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        return child(json.loads(args.child))
    if not os.path.exists(os.path.join(args.data, "outcomes.csv")):
        subprocess.run([sys.executable, GEN_BIG, args.data, str(args.n)], check=True)
    package = run_package(args)
    ours = {t: run_riskset(args, t) for t in args.threads}
    data = load(args.data)
    judged = fixed_point_residual(data, {"package": package["coef"], **{t: r["coef"] for t, r in ours.items()}})
    rows = [dict(system="BrokenAdaptiveRidge 1.0.1 (Cyclops 3.7.0)", clock="CPU", seconds=package["cpu_s"],
                 speedup=1.0, nonzero=judged["package"]["nonzero"], residual=judged["package"]["residual"],
                 max_diff=0.0, same_selection=True)]
    ref = judged["package"]["beta"]
    for t, r in ours.items():
        clock = "cpu_s" if t == 1 else "wall_s"
        j = judged[t]
        rows.append(dict(system=f"riskset, {t} thread(s)", clock="CPU" if t == 1 else "wall", seconds=r[clock],
                         speedup=package["cpu_s"] / r[clock], nonzero=j["nonzero"], residual=j["residual"],
                         max_diff=float(np.max(np.abs(j["beta"] - ref))),
                         same_selection=bool(np.array_equal(j["beta"] != 0, ref != 0))))
    print(f"BAR (penalty BIC = log(N)/2), Cox, N = {data.n_rows:,}, P = {data.n_covariates:,}, "
          f"{data.X.nnz:,} non-zeros; the package's data conversion took {package['convert_cpu_s']:.1f} CPU s "
          "(not in its time)")
    print(pd.DataFrame(rows).to_string(index=False, float_format=lambda v: f"{v:.3g}"))


if __name__ == "__main__":
    main()
