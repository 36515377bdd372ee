"""The seed paper's real-world study shape (LEGEND-HTN), step by step: wall time, CPU time and
peak memory of each step of a comparative cohort study.

    python benchmarks/bench_legend.py [--n 1014618] [--p 9811] [--density 0.029] [--folds 10]
                                      [--repeats 10] [--boot 100] [--jobs N] [--steps ...]

The cohort is ``riskset.simulate.simulate_cohort`` with claims-like skewed prevalences (mean
``--density``), a confounded treatment, an outcome in about 3% of the patients (follow-up 0.3
years) and a competing event; LEGEND-HTN had 1,014,618 patients before matching, 434,866 after,
9,811 covariates at 2.9%. The steps, as CohortMethod runs them around Cyclops:

- ``propensity``: L1 logistic over every covariate, its variance by ``--folds`` x ``--repeats``
  cross-validation (auto search) on at most 250,000 sampled patients, then every patient scored;
- ``match``: 1:1 greedy matching on the logit of the score, caliper 0.2 SD;
- ``balance``: standardized differences of every covariate before and after;
- ``cox``, ``fine_gray``: the outcome model with every covariate, L1 (treatment unpenalized),
  its variance by ``--folds`` x ``--repeats`` cross-validation (auto search), then the fit at the
  selected variance (Cox stratified by matched set; Fine-Gray on the matched rows);
- ``bootstrap``: ``--boot`` draws of the Cox model at the selected variance.

Peak memory is each step's own (the kernel's high-water mark ``VmHWM``, reset before the step
through ``/proc/self/clear_refs``); it includes what the process held when the step started
(``held_gb``: the cohort, the matched data), shown beside it, and the input's size (row
indices as int32, the values that are not 1, the outcome). The seed paper (Cox and
Fine-Gray, 10 x 10 folds): ~2 days and more than 3 days on 8 CPU cores, 3.9 h and 8.6 h on
a GV100 GPU.
"""
from __future__ import annotations

import argparse
import gc
import os
import resource
import time
import warnings
from dataclasses import replace

import numpy as np
import pandas as pd

STEPS = ("propensity", "match", "balance", "cox", "fine_gray", "bootstrap")


class Meter:
    """Wall time, CPU time (this process, all threads), the RSS held when the step starts (what
    earlier steps keep: the cohort, the matched data) and the step's peak RSS, which includes it."""

    def __enter__(self):
        _reset_peak()
        self.held_gb = _status_kb("VmRSS") / 2 ** 20
        self.wall, self.cpu = time.perf_counter(), _cpu()
        return self

    def __exit__(self, *exc):
        self.wall, self.cpu = time.perf_counter() - self.wall, _cpu() - self.cpu
        self.peak_gb = _status_kb("VmHWM") / 2 ** 20


def _cpu():
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def _reset_peak():
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
    except OSError:
        pass


def _status_kb(key: str) -> float:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(key + ":"):
                return float(line.split()[1])
    return float("nan")


def main():
    import riskset
    from riskset.cores import resolve_jobs
    from riskset.selection.cv import cross_validate
    from riskset.simulate import simulate_cohort
    from riskset.study import covariate_balance, fit_propensity, match_on_ps

    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--n", type=int, default=1_014_618, help="patients before matching")
    ap.add_argument("--p", type=int, default=9811)
    ap.add_argument("--density", type=float, default=0.029)
    ap.add_argument("--folds", type=int, default=10)
    ap.add_argument("--repeats", type=int, default=10)
    ap.add_argument("--boot", type=int, default=100)
    ap.add_argument("--ps-variance", type=float, default=None,
                    help="the propensity model's L1 variance, fixed (default: cross-validated)")
    ap.add_argument("--jobs", type=int, default=None, help="threads (default every usable core)")
    ap.add_argument("--steps", default=",".join(STEPS), help=f"which of {','.join(STEPS)}")
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()
    steps = args.steps.split(",")
    threads = resolve_jobs(args.jobs)
    folds = dict(n_folds=args.folds, n_repeats=args.repeats, auto=True, tol=2e-7, seed=args.seed)
    cv_args = dict(folds, progress=False, refit=False, n_jobs=args.jobs)
    rows = []

    def record(step, meter, rows_in, nnz, note=""):
        rows.append({"step": step, "rows": rows_in, "nnz": nnz, "wall_s": meter.wall, "cpu_s": meter.cpu,
                     "efficiency": meter.cpu / max(meter.wall, 1e-9) / threads, "held_gb": meter.held_gb,
                     "peak_gb": meter.peak_gb,
                     "note": note})
        print(f"  {step}: {meter.wall:.1f} s wall, {meter.cpu:.1f} s CPU, peak {meter.peak_gb:.2f} GB "
              f"(held at the start {meter.held_gb:.2f} GB)  {note}",
              flush=True)

    warnings.simplefilter("ignore")
    with Meter() as m:
        data = simulate_cohort(n=args.n, p=args.p, density=args.density, prevalence="claims", hazard_ratio=0.8,
                               n_confounders=3,
                               follow_up=0.3, competing_rate=0.5, seed=args.seed)
    record("simulate", m, data.n_rows, data.X.nnz,
           f"{(data.status == 1).mean():.1%} events, {(data.status == 2).mean():.1%} competing")
    population = scored = None
    if "propensity" in steps:
        with Meter() as m:
            model, scored = fit_propensity(data, cv=folds, n_jobs=args.jobs, prior=None if args.ps_variance is None
                                           else riskset.Laplace(variance=args.ps_variance))
        how = "fixed" if model.cv is None else f"CV {args.folds}x{args.repeats}"
        record("propensity", m, data.n_rows, data.X.nnz,
               f"variance {args.ps_variance if model.cv is None else model.cv.selected_variance:.3g} ({how}), "
               f"{int((model.fit.coef != 0).sum())} non-zero")
        population = scored
    if "match" in steps and population is not None:
        with Meter() as m:
            matched = match_on_ps(scored, caliper=0.2, max_ratio=1)
        record("match", m, scored.rows.size, 0, f"{matched.rows.size:,} matched")
        population = matched
    if "balance" in steps and population is not scored and population is not None:
        with Meter() as m:
            balance = covariate_balance(data, scored, population)
        record("balance", m, population.rows.size, 0,
               f"max |std diff| after {np.nanmax(np.abs(balance.std_diff_after)):.3f}")
    outcome = population.outcome_data(data) if population is not None else data
    with_competing, outcome = outcome, replace(outcome, status=(outcome.status == 1).astype(np.int64))  # Cox: censored
    nnz, ones, n_rows = data.X.nnz, int((data.X.data == 1).sum()), data.n_rows
    # the outcome models need the matched rows alone: the cohort, its scores and the propensity
    # model are let go, as a study script would (held_gb below is then the matched data)
    del data, population, scored
    model = matched = balance = None  # noqa: F841 (let go)
    gc.collect()
    selected = {}
    for name, fit_data in (("cox", outcome), ("fine_gray", _without_strata(with_competing))):
        if name not in steps:
            continue
        with Meter() as m:
            cv = cross_validate(fit_data, name, riskset.Laplace(exclude=["treatment"]), **cv_args)
            fit = riskset.fit(fit_data, name, cv.prior, n_jobs=args.jobs)
        selected[name] = cv.prior
        hr = float(np.exp(fit.coef["treatment"]))
        record(f"{name} CV {args.folds}x{args.repeats} + fit", m, fit_data.n_rows, fit_data.X.nnz,
               f"variance {cv.selected_variance:.3g}, HR {hr:.3f}, {int((fit.coef != 0).sum())} non-zero, "
               f"{'converged' if fit.converged else 'NOT converged'}")
    if "bootstrap" in steps and args.boot:
        prior = selected.get("cox", riskset.Laplace(variance=0.01, exclude=["treatment"]))
        with Meter() as m:
            boot = riskset.bootstrap(outcome, "cox", prior, n_boot=args.boot, seed=args.seed, n_jobs=args.jobs,
                                     progress=False)
        b = boot.table.set_index("name").loc["treatment"]
        record(f"bootstrap {args.boot} draws", m, outcome.n_rows, outcome.X.nnz,
               f"HR interval {np.exp(b.lower):.3f} to {np.exp(b.upper):.3f}")

    input_gb = (4 * nnz + 8 * (nnz - ones) + 16 * n_rows) / 2 ** 30
    print(f"\nLEGEND-shaped cohort: N = {args.n:,} before matching, P = {args.p:,}, density {args.density}, "
          f"{nnz:,} non-zeros (compact input {input_gb:.2f} GB); {threads} threads; "
          f"riskset {riskset.__version__}, {os.cpu_count()} CPUs")
    table = pd.DataFrame(rows)
    print(table.to_string(index=False, float_format=lambda v: f"{v:.2f}"))


def _without_strata(data):
    roles = {k: v for k, v in data.meta.get("roles", {}).items() if k != "strata"}
    return replace(data, strata=None, strata_labels=None, meta={**data.meta, "roles": roles})


if __name__ == "__main__":
    main()
