"""riskset beside Cyclops, side by side on the same data, at equal accuracy.

    python benchmarks/bench_cyclops.py --data DATA --out OUT              # every case
    python benchmarks/bench_cyclops.py --data DATA --out OUT --cases cox_v1 logistic_v1 --threads 1 2

DATA holds the seed papers' data sets made by ``../shared/bench/cyclops/gen_data.sh`` (and
``gen_big.py DATA/cox1M``): ``cox100k``, ``cox100k_s1000``, ``cox100k_s50000``, ``fg100k``,
``cox1M``. Cyclops (built as ``../shared/bench/README.md`` says) runs once per case with
``createControl(tolerance = 1e-8)`` through ``../shared/bench/cyclops/cyclops_fit.R``; its
times and coefficients are kept in OUT and reused (``--rerun-cyclops`` runs it again).
riskset runs in a fresh process per thread count (``NUMBA_NUM_THREADS`` = that count,
``fit(n_jobs=...)``), after a small warm-up fit so compilation is not timed, best of
``--repeats``.

Every coefficient vector, riskset's and Cyclops', is then evaluated by one objective
function: riskset's datafit for the log-likelihood, objective = -loglik + lambda sum |beta_j|
with lambda = sqrt(2 / variance) (intercept unpenalized), and the largest KKT violation
``max_j dist(0, subdifferential_j)`` divided by lambda (the unit of ``fit.kkt``). The table
gives CPU seconds of one thread (the machine may be shared: CPU time is the fair clock),
wall seconds for more threads, the ratios to Cyclops, and each system's objective gap to
the better of the two.

Recorded results: docs/benchmarks.md, section 'bench_cyclops.py'.
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
import pyarrow.parquet as pq

HERE = os.path.dirname(os.path.abspath(__file__))
CYCLOPS_R = os.path.join(HERE, "..", "..", "shared", "bench", "cyclops", "cyclops_fit.R")

#: case -> (data set, riskset model, Cyclops model, prior variance); Cyclops' files in OUT are
#: named by the case
CASES = {
    "cox_v1": ("cox100k", "cox", "cox", "1"),
    "cox_v1e-5": ("cox100k", "cox", "cox", "1e-5"),
    "cox_s1000_v1": ("cox100k_s1000", "cox", "cox", "1"),
    "cox_s50000_v1": ("cox100k_s50000", "cox", "cox", "1"),
    "cox_s50000_v1e-5": ("cox100k_s50000", "cox", "cox", "1e-5"),
    "fine_gray_v1": ("fg100k", "fine_gray", "fgr", "1"),
    "fine_gray_v1e-5": ("fg100k", "fine_gray", "fgr", "1e-5"),
    "logistic_v1": ("cox100k", "logistic", "lr", "1"),
    "logistic_v1e-5": ("cox100k", "logistic", "lr", "1e-5"),
    "cox_1M_v1": ("cox1M", "cox", "cox", "1"),
}


def load(data_dir, model, nrows=None):
    """The data set as a riskset Dataset (logistic: the Cox outcomes' status as y)."""
    import riskset

    out = pd.read_csv(os.path.join(data_dir, "outcomes.csv"))
    cov = pq.read_table(os.path.join(data_dir, "covariates.parquet")).to_pandas()
    if nrows is not None:
        out, cov = out[out.row_id < nrows], cov[cov.row_id < nrows]
    if model == "logistic":
        out = out.rename(columns={"status": "y"}).drop(columns=["time"])
    strata = {"strata": "stratum"} if "stratum" in out else {}
    return riskset.from_long(out, cov, **strata)


def run_cyclops(args, case):
    """Cyclops' result row for ``case`` (run once, then read from OUT)."""
    data_set, _, cy_model, v = CASES[case]
    results = os.path.join(args.out, f"results_cyclops_{case}.csv")
    coef = os.path.join(args.out, f"coef_cyclops_{case}_v{v}_tol1e-8.csv")
    if args.rerun_cyclops or not os.path.exists(coef):
        subprocess.run(["Rscript", CYCLOPS_R, os.path.join(args.data, data_set), cy_model, args.out, case,
                        f"{v}:1e-8", "1"], check=True)
    row = pd.read_csv(results).iloc[-1]
    c = pd.read_csv(coef, dtype={"name": str})
    names = ["intercept" if n == "(Intercept)" else str(int(float(n)) - 1) for n in c.name]  # ids 1..P
    return dict(cpu_s=float(row.cpu_s), wall_s=float(row.wall_s), coef=dict(zip(names, c.beta)))


def child(spec):
    """Runs in a fresh process: warm-up, then ``repeats`` timed fits; prints one JSON line."""
    import riskset

    data = load(spec["data"], spec["model"])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        riskset.fit(load(spec["data"], spec["model"], nrows=2000), spec["model"], riskset.Laplace(variance=1.0))
        best = None
        for _ in range(spec["repeats"]):
            c0, w0 = time.process_time(), time.perf_counter()
            fit = riskset.fit(data, spec["model"], riskset.Laplace(variance=spec["variance"]),
                              n_jobs=spec["threads"])
            cpu, wall = time.process_time() - c0, time.perf_counter() - w0
            if best is None or cpu < best["cpu_s"]:
                best = dict(cpu_s=cpu, wall_s=wall, cycles=fit.n_iter, kkt_reported=float(fit.kkt),
                            status=fit.status, prepare_s=fit.timings["prepare"], solve_s=fit.timings["solve"],
                            coef={str(k): float(v) for k, v in fit.coef.items()})
    print(json.dumps(best))


def run_riskset(args, case, threads):
    data_set, model, _, variance = CASES[case]
    spec = dict(data=os.path.join(args.data, data_set), model=model, variance=float(variance), threads=threads,
                repeats=args.repeats)
    env = dict(os.environ, NUMBA_NUM_THREADS=str(threads), OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1")
    run = subprocess.run([sys.executable, __file__, "--data", args.data, "--out", args.out, "--child",
                          json.dumps(spec)], env=env, capture_output=True, text=True)
    if run.returncode:
        sys.exit(f"riskset's run of {case} on {threads} thread(s) failed:\n{run.stderr}")
    return json.loads(run.stdout.strip().splitlines()[-1])


def evaluate(case, vectors):
    """Objective and relative KKT violation of each named coefficient vector, by one function."""
    from riskset.models.base import get_model

    data_set, model, _, variance = CASES[case]
    data = load(os.path.join(ARGS.data, data_set), model)
    m = get_model(model)
    datafit, names = m.datafit(data), m.coef_names(data)
    lam = np.sqrt(2.0 / float(variance))
    l1 = np.array([0.0 if n == "intercept" else lam for n in names])
    out = {}
    for label, coef in vectors.items():
        beta = np.array([coef.get(n, 0.0) for n in names])
        state = datafit.new_state(beta)
        g = datafit.gradient(state)
        viol = np.where(beta != 0, np.abs(g - l1 * np.sign(beta)), np.maximum(0.0, np.abs(g) - l1))
        out[label] = dict(objective=-datafit.loglik(state) + float(np.sum(l1 * np.abs(beta))),
                          kkt=float(viol.max() / lam), nonzero=int(np.sum((beta != 0) & (l1 > 0))))
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", required=True, help="folder of the generated data sets")
    ap.add_argument("--out", required=True, help="folder for Cyclops' results and coefficients")
    ap.add_argument("--cases", nargs="+", default=list(CASES), choices=list(CASES))
    ap.add_argument("--threads", nargs="+", type=int, default=[1, 2], help="riskset thread counts")
    ap.add_argument("--repeats", type=int, default=2, help="riskset fits per thread count (best is kept)")
    ap.add_argument("--rerun-cyclops", action="store_true", help="run Cyclops again even if OUT has its result")
    ap.add_argument("--child", help=argparse.SUPPRESS)
    global ARGS
    ARGS = args = ap.parse_args()
    if args.child:
        return child(json.loads(args.child))
    os.makedirs(args.out, exist_ok=True)
    rows = []
    for case in args.cases:
        cy = run_cyclops(args, case)
        rs = {t: run_riskset(args, case, t) for t in args.threads}
        ev = evaluate(case, {"cyclops": cy["coef"], **{t: r["coef"] for t, r in rs.items()}})
        best = min(e["objective"] for e in ev.values())
        row = {"case": case, "Cyclops CPU s": cy["cpu_s"], "Cyclops KKT": ev["cyclops"]["kkt"],
               "Cyclops gap": ev["cyclops"]["objective"] - best}
        for t, r in rs.items():
            clock = "cpu_s" if t == 1 else "wall_s"
            row[f"riskset {t}thr {'CPU' if t == 1 else 'wall'} s"] = r[clock]
            row[f"ratio {t}thr"] = cy["cpu_s"] / r[clock]
            row[f"KKT {t}thr"] = ev[t]["kkt"]
            row[f"gap {t}thr"] = ev[t]["objective"] - best
            row[f"cycles {t}thr"] = r["cycles"]
        row["nonzero"] = ev[args.threads[0]]["nonzero"]
        rows.append(row)
        print(pd.DataFrame([row]).to_string(index=False, float_format=lambda x: f"{x:.3g}"), flush=True)
    print("\n" + markdown(rows))


def markdown(rows):
    """The rows as a Markdown table (3 significant digits)."""
    columns = list(rows[0])
    cell = lambda x: f"{x:.3g}" if isinstance(x, float) else str(x)  # noqa: E731
    lines = ["| " + " | ".join(columns) + " |", "|" + "---|" * len(columns)]
    lines += ["| " + " | ".join(cell(r.get(c, "")) for c in columns) + " |" for r in rows]
    return "\n".join(lines)


if __name__ == "__main__":
    main()
