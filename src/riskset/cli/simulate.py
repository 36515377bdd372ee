"""``riskset simulate``: write a simulated data set (the Cyclops papers' sparse design, a
cohort study, a self-controlled case series) with truth.json, the true effects, beside it."""
from __future__ import annotations

import argparse
import json
import os

from riskset.arguments import COUNT, NON_NEGATIVE, POSITIVE, SEED, SHARE
from riskset.cli.output import check_output
from riskset.cli.reporting import EXIT_OK
from riskset.exceptions import InputError


def add_parser(sub) -> None:
    """Add the ``simulate`` command to the subcommands ``sub``."""
    p = sub.add_parser("simulate", help="write a simulated data set: the papers' sparse design, or a cohort study",
                       formatter_class=argparse.RawDescriptionHelpFormatter,
                       description="Simulate N x P binary covariates at a given density and an outcome; write them "
                                   "as OHDSI long\ntables into a DuckDB database (.duckdb) or as outcomes.parquet + "
                                   "covariates.parquet\ninto a folder, with truth.json (the true coefficients) "
                                   "beside them.\n\n"
                                   "--model logistic|poisson|least_squares|cox: the Cyclops papers' design (80% of "
                                   "the true\ncoefficients zero).\n"
                                   "--model cohort: a new-user cohort study: a confounded treatment (covariate "
                                   "'treatment'),\na time-to-event outcome of true hazard ratio --hazard-ratio, "
                                   "optionally competing events\n(status 2) and claims-like skewed prevalences; "
                                   "'riskset study --treatment treatment' analyses it.\n"
                                   "--model sccs: a self-controlled case series: tables observation, exposures and "
                                   "outcomes\n(--n persons; three drugs of true rate ratios 2, 1 and 0.5, a "
                                   "pre-exposure dip before the\nfirst, age and season effects); 'riskset sccs' "
                                   "analyses them.",
                       epilog="Example:\n  riskset simulate --model cohort --n 20000 --p 500 --prevalence claims "
                              "--out cohort.duckdb\n  riskset study --duckdb cohort.duckdb --outcomes-sql 'SELECT * "
                              "FROM outcomes' \\\n      --covariates-sql 'SELECT * FROM covariates' --out study/")
    from riskset.simulate import MODELS

    p.add_argument("--n", type=COUNT, default=100_000, help="rows (default 100000)")
    p.add_argument("--p", type=COUNT, default=1000, help="covariates (default 1000)")
    p.add_argument("--density", type=SHARE, default=0.05, help="share of non-zero covariate values (default 0.05)")
    p.add_argument("--model", choices=MODELS + ("cohort", "sccs"), default="cox",
                   help="outcome model (default cox)")
    p.add_argument("--hazard-ratio", type=POSITIVE, default=0.7, help="cohort: the treatment's true hazard ratio "
                                                                      "(default 0.7)")
    p.add_argument("--competing-rate", type=NON_NEGATIVE, default=0.0,
                   help="cohort: hazard of a competing event, as a share of the outcome's (default 0: none)")
    p.add_argument("--prevalence", choices=("uniform", "claims"), default="uniform",
                   help="cohort: covariate prevalences, all at --density or skewed as in claims data")
    p.add_argument("--seed", type=SEED, default=0, help="random seed (default 0)")
    p.add_argument("--out", required=True, metavar="PATH", help="DB.duckdb or a folder for Parquet files")
    p.set_defaults(func=main)


def main(args) -> int:
    """Run ``riskset simulate``; returns the exit status."""
    import riskset
    from riskset.data.export import write_duckdb, write_parquet

    if args.out.endswith(".duckdb") or not os.path.isdir(args.out):  # a file, or a new folder: its folder must exist
        check_output(args.out.rstrip("/"), "--out")
    cohort_only = [o for o, v in (("--hazard-ratio", args.hazard_ratio != 0.7), ("--competing-rate",
                   args.competing_rate != 0), ("--prevalence", args.prevalence != "uniform")) if v]
    if args.model == "sccs":
        return _simulate_case_series(args, cohort_only)
    if args.model == "cohort":
        from riskset.simulate import simulate_cohort

        data = simulate_cohort(n=args.n, p=args.p, density=args.density, hazard_ratio=args.hazard_ratio,
                               n_confounders=min(10, args.p), competing_rate=args.competing_rate,
                               prevalence=args.prevalence, seed=args.seed)
    elif cohort_only:
        raise InputError(f"{', '.join(cohort_only)} appl{'y' if len(cohort_only) > 1 else 'ies'} to --model cohort")
    else:
        data = riskset.simulate(n=args.n, p=args.p, density=args.density, model=args.model, seed=args.seed)
    if args.out.endswith(".duckdb"):
        write_duckdb(data, args.out)
        where = [args.out]
    else:
        where = list(write_parquet(data, args.out))
    truth = _write_truth(args.out, {k: v for k, v in data.meta.items() if k not in ("confounders",)})
    print(f"wrote {' and '.join(where)} ({data.X.nnz} non-zeros) and {truth}")
    return EXIT_OK


def _simulate_case_series(args, cohort_only) -> int:
    from riskset.data.export import write_frames
    from riskset.simulate_sccs import simulate_case_series

    design_only = cohort_only + [o for o, v in (("--p", args.p != 1000), ("--density", args.density != 0.05)) if v]
    if design_only:
        raise InputError(f"{', '.join(design_only)} do{'' if len(design_only) > 1 else 'es'} not apply to --model sccs")
    sim = simulate_case_series(n=args.n, seed=args.seed)
    where = write_frames({"observation": sim.observation, "exposures": sim.exposures, "outcomes": sim.outcomes},
                         args.out)
    truth = _write_truth(args.out, sim.truth)
    print(f"wrote {', '.join(where)} ({sim.outcomes.person_id.nunique()} cases of {args.n} persons) and {truth}")
    return EXIT_OK


def _write_truth(out: str, truth: dict) -> str:
    """Write ``truth`` as truth.json beside the simulated data ``out`` (a .duckdb file, or a folder)."""
    path = os.path.join(os.path.dirname(out) if out.endswith(".duckdb") else out, "truth.json")
    with open(path, "w") as f:
        json.dump(truth, f, indent=1, default=float)
    return path

