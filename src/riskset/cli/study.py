"""``riskset study``: a comparative cohort study from a table or a DuckDB database into a folder
(:func:`riskset.study.cohort_study`); its data options are those of ``riskset fit``."""
from __future__ import annotations

import argparse

from riskset.arguments import COUNT, FOLDS, NON_NEGATIVE, POSITIVE, ROLE_OPTIONS, SEED, SHARE, bounded
from riskset.cli.data_options import add_data_options, check_data_source, load_data
from riskset.data.ingest import _read_table
from riskset.exceptions import InputError
from riskset.solver.prior import Laplace
from riskset.study.adjustment import IPTW_ESTIMANDS
from riskset.study.cohort import ADJUSTMENTS, OUTCOME_MODELS, cohort_study


def add_parser(sub) -> None:
    """Add the ``study`` command to the subcommands ``sub``."""
    p = sub.add_parser(
        "study", help="a comparative cohort study: propensity scores, matching, balance, outcome model",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        description="A comparative cohort study of a 0/1 treatment covariate, as OHDSI's CohortMethod runs\n"
                    "one: the large-scale propensity model (L1 logistic, cross-validated), optional trimming,\n"
                    "matching (default 1:1, caliper 0.2 SD of the logit score), stratification or inverse-\n"
                    "probability weights, covariate balance before and after, and the outcome model on the\n"
                    "adjusted population (Cox stratified by matched set, Fine-Gray, conditional logistic or\n"
                    "Poisson) with a profile-likelihood interval for the treatment's effect.\n\n"
                    "Writes into --out: attrition.csv, balance.csv, propensity_model.csv, estimate.csv,\n"
                    "outcome_model.csv, preference_score.png, balance.png and summary.txt.",
        epilog="Examples:\n"
               "  riskset simulate --model cox --out cohort/   (or any table with a 0/1 treatment column)\n"
               "  riskset study --data cohort.csv --time time --status status --treatment treatment \\\n"
               "                --out study/\n"
               "  riskset study --duckdb cohort.duckdb --outcomes-sql 'SELECT * FROM outcomes' \\\n"
               "                --covariates-sql 'SELECT * FROM covariates' --treatment 1001 \\\n"
               "                --adjustment stratify --ps-strata 5 --out study/\n\n"
               "exit status: 0 success; 1 the outcome fit did not converge (the results are still\n"
               "written); 2 bad usage or input (one line 'riskset study: error: ...').")
    add_data_options(p)
    s = p.add_argument_group("study")
    s.add_argument("--model", choices=tuple(OUTCOME_MODELS), default="cox", help="outcome model (default cox)")
    s.add_argument("--treatment", default="treatment", metavar="COVARIATE",
                   help="the 0/1 treatment covariate (default 'treatment')")
    s.add_argument("--adjustment", choices=ADJUSTMENTS, default="match", help="default match")
    s.add_argument("--caliper", type=NON_NEGATIVE, default=0.2,
                   help="matching caliper, SDs of the logit score (default 0.2; 0: none)")
    s.add_argument("--max-ratio", type=bounded(int, 0), default=1,
                   help="comparators per target row when matching (default 1; 0: no limit)")
    s.add_argument("--ps-strata", type=COUNT, default=10, help="propensity strata with --adjustment stratify "
                                                            "(default 10)")
    s.add_argument("--estimand", choices=IPTW_ESTIMANDS, default="ate", help="with --adjustment iptw "
                                                                            "(default ate)")
    s.add_argument("--max-weight", type=POSITIVE, help="truncate the weights at this value (with iptw)")
    s.add_argument("--trim", type=SHARE, metavar="FRACTION", help="drop scores below FRACTION and above "
                                                                 "1 - FRACTION first")
    s.add_argument("--equipoise", metavar="LO,HI", help="keep preference scores within LO,HI first (e.g. 0.3,0.7)")
    s.add_argument("--ps-variance", type=POSITIVE, help="the propensity model's L1 prior variance (default: "
                                                        "cross-validated)")
    s.add_argument("--folds", type=FOLDS, default=10, help="cross-validation folds (default 10, CohortMethod's)")
    s.add_argument("--repeats", type=COUNT, default=10, help="cross-validation repetitions (default 10)")
    s.add_argument("--outcome-covariates", action="store_true",
                   help="also put the covariates in the outcome model (L1, cross-validated; treatment unpenalized)")
    s.add_argument("--bootstrap", type=bounded(int, 0), default=0, metavar="N", help="bootstrap draws of the "
                                                                                     "outcome model (default 0)")
    s.add_argument("--negative-control", action="append", default=[], metavar="NAME=TIME:STATUS",
                   help="an outcome known not to be caused by the treatment, from columns of the --data table "
                        "(NAME=TIME:STATUS for cox and fine_gray, NAME=Y for logistic and poisson); repeat it: "
                        "their estimates calibrate the p-value and interval (writes negative_controls.csv and "
                        "calibration.png)")
    s.add_argument("--seed", type=SEED, default=1, help="random seed (default 1)")
    s.add_argument("--jobs", type=COUNT, help="CPU threads (default: every core this process may use)")
    s.add_argument("--out", required=True, metavar="DIR", help="folder for the tables, plots and summary")
    s.add_argument("--quiet", action="store_true", help="no progress bar and no summary on the screen")
    p.set_defaults(func=main)


def main(args) -> int:
    """Run ``riskset study``; returns the exit status."""
    if args.adjustment != "match" and (args.caliper != 0.2 or args.max_ratio != 1):
        raise InputError("--caliper and --max-ratio apply to --adjustment match")
    if args.adjustment != "stratify" and args.ps_strata != 10:
        raise InputError("--ps-strata applies to --adjustment stratify")
    if args.adjustment != "iptw" and (args.estimand != "ate" or args.max_weight is not None):
        raise InputError("--estimand and --max-weight apply to --adjustment iptw")
    cv = dict(n_folds=args.folds, n_repeats=args.repeats, auto=True, tol=2e-7, seed=args.seed)
    if args.negative_control and not args.data:
        raise InputError("--negative-control reads columns of the --data table; give --data FILE")
    check_data_source(args)
    table = _read_table(args.data) if args.data else None  # read once: the negative controls and the data set
    controls = _negative_controls(args, table) if args.negative_control else None
    study = cohort_study(load_data(args, table), args.model, treatment=args.treatment, adjustment=args.adjustment,
                         caliper=args.caliper, max_ratio=args.max_ratio, n_strata=args.ps_strata,
                         estimand=args.estimand, max_weight=args.max_weight, trim=args.trim,
                         equipoise=_bounds(args.equipoise),
                         ps_prior=None if args.ps_variance is None else Laplace(variance=args.ps_variance),
                         ps_cv=cv, outcome_covariates=args.outcome_covariates, outcome_cv=cv, n_boot=args.bootstrap,
                         negative_controls=controls, seed=args.seed, n_jobs=args.jobs, progress=not args.quiet)
    written = study.save(args.out)
    if not args.quiet:
        print(study.summary())
        print(f"\nwrote {len(written)} files into {args.out}")
    return 0 if study.outcome.converged else 1


def _negative_controls(args, table) -> dict:
    """The --negative-control outcomes, name -> {field: column values}, from ``table``, the --data
    table (only their columns leave Arrow); their columns are left out of the covariates
    (``args.covariates`` set to the others)."""
    fields = ("time", "status") if args.model in ("cox", "fine_gray") else ("y",)
    form = "NAME=TIME:STATUS" if len(fields) == 2 else "NAME=Y"
    controls, used = {}, set()
    for text in args.negative_control:
        name, _, columns = text.partition("=")
        columns = columns.split(":") if columns else []
        if not name or len(columns) != len(fields) or not all(columns):
            raise InputError(f"--negative-control takes {form} with --model {args.model}, got {text!r}")
        absent = [c for c in columns if c not in table.column_names]
        if absent:
            raise InputError(f"--negative-control {name}: column(s) {', '.join(map(repr, absent))} not in the "
                             f"--data table {args.data!r}")
        if name in controls:
            raise InputError(f"--negative-control {name!r} is given twice")
        controls[name] = {field: table.column(c).to_pandas().to_numpy() for field, c in zip(fields, columns)}
        used.update(columns)
    if args.covariates is None:
        roles = {getattr(args, r) for r in ROLE_OPTIONS if getattr(args, r)}
        args.covariates = ",".join(c for c in table.column_names if c not in used | roles)
    elif used & set(args.covariates.split(",")):
        both = sorted(used & set(args.covariates.split(",")))
        raise InputError(f"--covariates names negative-control column(s) {both}")
    return controls


def _bounds(text):
    if text is None:
        return None
    try:
        lo, hi = (float(v) for v in text.split(","))
    except ValueError:
        raise InputError(f"--equipoise takes two numbers LO,HI, got {text!r}") from None
    return lo, hi
