"""``riskset fit``: fit a model to data (files, DuckDB) or to JSON specifications, with
cross-validation, bootstrap and profile intervals if asked; or write one coefficient's profile
log-likelihood or its likelihood approximation (a site's share of a network study); or fit one
model to rows split into shards that Dask workers read and keep (``--shards``, :mod:`riskset.sharded`),
after its cross-validation and bootstrap there if asked.

No option is ever ignored: each applies to a fit from data, from one ``--spec`` and from
several, or is refused with an error saying why (:mod:`riskset.cli.fit_checks`).
"""
from __future__ import annotations

import argparse
import sys
import warnings

from riskset.arguments import COUNT, FOLDS, LEVEL, NON_NEGATIVE, NON_NEGATIVE_INT, POSITIVE, SEED
from riskset.backend import Backend
from riskset.cli.data_options import add_data_options, listed_names
from riskset.cli.fit_checks import check_fit_options
from riskset.cli.fit_inputs import (analysis_inputs, analysis_options, check_known, cv_options, dask_client,
                                    executor, parse_bounds, parse_number, sharded_inputs)
from riskset.cli.output import plot_analysis, write_fit, write_tables
from riskset.cli.reporting import EXIT_NOT_CONVERGED, EXIT_OK, EXIT_STATUS_HELP, one_line, report_written
from riskset.data.normalize import NORMALIZATIONS
from riskset.exceptions import ConvergenceWarning, InputError
from riskset.solver.prior import HierarchicalPrior, Prior
from riskset.synthesis.approximation import KINDS


def add_parser(sub) -> None:
    """Add the ``fit`` command to the subcommands ``sub``."""
    p = sub.add_parser(
        "fit", help="fit a model to data or to a JSON specification",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        description="Fit a penalized regression or survival model by cyclic coordinate descent.\n\n"
                    "Data come from one of:\n"
                    "  --data FILE                      a wide CSV/Parquet table (one column per variable)\n"
                    "  --outcomes FILE --covariates-file FILE\n"
                    "                                   OHDSI long tables: outcomes (row_id, [stratum_id],\n"
                    "                                   y or time/status, [weight], [offset]) and covariates\n"
                    "                                   (row_id, covariate_id, [value])\n"
                    "  --duckdb DB --outcomes-sql Q --covariates-sql Q\n"
                    "                                   the same two tables as queries on a DuckDB database\n"
                    "  --spec FILE                      a case.json specification (model, columns, covariates,\n"
                    "                                   model options, penalty); data.csv beside it unless it\n"
                    "                                   names another. The format: python -m pydoc riskset.spec\n"
                    "  --shards GLOB --shard-covariates GLOB --dask ADDRESS\n"
                    "  --duckdb DB --outcomes-sql Q --covariates-sql Q --shards N --dask ADDRESS\n"
                    "                                   long tables split into shards, each read and kept by a\n"
                    "                                   Dask worker: one fit over them all (see 'sharded fit')\n\n"
                    "A specification gives the model, the columns and the prior, so the options of those\n"
                    "groups cannot be used with it; the others (--cv, --bootstrap, --profile, --backend,\n"
                    "--dtype, --jobs, --dask, --out, ...) apply to it as to any fit. Several --spec are\n"
                    "fitted into one table (--jobs or --dask spread the analyses over workers).\n"
                    "An option that would change nothing is refused, never ignored.",
        epilog="Examples:\n"
               "  riskset fit --data cohort.parquet --model cox --time days --status died \\\n"
               "              --prior laplace --gamma 2 --exclude treatment --out fit.json\n"
               "  riskset fit --duckdb cohort.duckdb --outcomes-sql 'SELECT * FROM outcomes' \\\n"
               "              --covariates-sql 'SELECT * FROM covariates' \\\n"
               "              --model logistic --prior normal --variance 1\n"
               "  riskset fit --spec case.json --cv 10 --bootstrap 200 --out result.csv\n"
               "              (writes result.csv, result_cross_validation.csv, result_bootstrap.csv)\n"
               "  riskset fit --dask tcp://host:8786 --shards 'cohort/outcomes-*.parquet' \\\n"
               "              --shard-covariates 'cohort/covariates-*.parquet' \\\n"
               "              --model cox --prior laplace --variance 0.1 --out fit.json\n"
               "  riskset fit --dask local --duckdb cohort.duckdb --shards 8 \\\n"
               "              --outcomes-sql 'SELECT * FROM outcomes WHERE row_id % {n_shards} = {shard}' \\\n"
               "              --covariates-sql 'SELECT * FROM covariates WHERE row_id % {n_shards} = {shard}' \\\n"
               "              --model logistic --prior normal --cv 5 --bootstrap 100 --out fit.json\n\n"
               + EXIT_STATUS_HELP)
    src = add_data_options(p)
    src.add_argument("--spec", metavar="FILE", action="append", help="JSON analysis specification (case.json "
                     "format); repeat it to fit many analyses (with --jobs or --dask) into one table")
    m = p.add_argument_group("model")
    m.add_argument("--model", help="model name: logistic, poisson, least_squares, cox, "
                                   "fine_gray, conditional_logistic, sccs, ... (default logistic). cox handles "
                                   "tied event times by Breslow's method by default (as Cyclops and CohortMethod; "
                                   "R's coxph and lifelines default to Efron's: --option ties=\"efron\"); "
                                   "fine_gray shows robust (sandwich) standard errors, as cmprsk::crr "
                                   "(--option variance=\"model-based\" for the inverse information)")
    m.add_argument("--option", action="append", default=[], metavar="KEY=VALUE",
                   help="model option, value as JSON (e.g. ties=\"efron\", intercept=false); repeatable. "
                        "ties: \"breslow\" (cox default) or \"efron\" (R's coxph default)")
    pr = p.add_argument_group("prior")
    pr.add_argument("--prior", choices=["none", "laplace", "normal", "elastic_net", "bar", "iht", "jeffreys",
                                        "hierarchical"],
                    help="none (maximum likelihood, the default), laplace (L1), normal (L2), elastic_net "
                         "(both: --gamma and --variance), bar (broken adaptive ridge) or iht (iterative hard "
                         "thresholding, with --max-nonzero): the sparse selection of OHDSI's BrokenAdaptiveRidge "
                         "and IterativeHardThresholding; jeffreys (Firth's penalized likelihood: finite estimates "
                         "where events are rare or separated); hierarchical (--groups, --group-variance: "
                         "coefficients normal around their group's mean)")
    pr.add_argument("--gamma", type=NON_NEGATIVE,
                    help="L1 rate: penalty gamma*|beta| (with --prior laplace or elastic_net)")
    pr.add_argument("--variance", type=POSITIVE,
                    help="prior variance (normal, elastic_net; or laplace, gamma = sqrt(2/variance))")
    pr.add_argument("--variances", metavar="A=V,B=W", default="",
                    help="per-coefficient variances overriding --variance for the coefficients named (for "
                         "laplace the Laplace variance of each)")
    pr.add_argument("--means", metavar="A=M,B=N", default="",
                    help="prior means of the coefficients named (a location prior: shrink towards M instead of "
                         "0, e.g. the estimates of a previous database); the others have mean 0")
    pr.add_argument("--exclude", metavar="A,B", default="", help="coefficients left unpenalized (e.g. treatment)")
    pr.add_argument("--penalty", metavar="bic|X", help="bar, iht: the selection penalty, 'bic' (log(N)/2, the "
                                                        "default) or a positive number")
    pr.add_argument("--max-nonzero", type=COUNT, metavar="K", help="iht: the most non-zero coefficients")
    pr.add_argument("--normalize", choices=NORMALIZATIONS,
                    help="scale each covariate that is not an indicator before the fit, as Cyclops' normalize= "
                         "(stdev, max, median or q95 of its values): the prior acts on the scaled coefficients; "
                         "coefficients are shown on the original scale")
    pr.add_argument("--groups", metavar="A=G,B=G", default="",
                    help="hierarchical: each grouped covariate's group (the others have the plain normal prior)")
    pr.add_argument("--group-variance", type=POSITIVE, metavar="W",
                    help="hierarchical: the variance of the group means (with --cv: chosen too, on a grid)")
    pr.add_argument("--jeffreys-coefs", metavar="A,B", default="",
                    help="jeffreys: the coefficients in the prior's determinant (default all: Firth)")
    pr.add_argument("--best-subset", action="store_true",
                    help="bar, iht: refit the selected coefficients without a prior (standard errors follow, "
                         "conditional on the selection)")
    pr.add_argument("--fixed", metavar="A=V,B=W", default="",
                    help="coefficients held at the values given while the others are fitted (Cyclops' "
                         "fixedCoefficients; a specification's \"fixed\" field)")
    sel = p.add_argument_group("penalty selection and uncertainty")
    sel.add_argument("--cv", type=FOLDS, metavar="K", help="choose the prior variance by K-fold cross-validation "
                                                         "(needs --prior laplace or normal, not a variance)")
    sel.add_argument("--cv-repeats", type=COUNT, metavar="R", help="repetitions of the K folds (default 1)")
    sel.add_argument("--cv-grid", type=FOLDS, metavar="G", help="variances on the grid (default 10)")
    sel.add_argument("--cv-auto", action="store_true",
                     help="refine the best grid variance by a parabolic search in log-variance")
    sel.add_argument("--cv-early-stop", type=NON_NEGATIVE_INT, metavar="N",
                     help="leave the grid (walked from the strongest prior) once N consecutive variances score "
                          "below the best (default 2; 0 scores every variance)")
    sel.add_argument("--bootstrap", type=COUNT, metavar="B", help="B bootstrap replicates by subject: percentile "
                                                                "intervals and non-zero proportions")
    sel.add_argument("--seed", type=SEED, help="seed of folds and bootstrap samples (default 0)")
    sel.add_argument("--jobs", type=COUNT, help="CPU threads: of a fit's kernels, of replicate fits (cross-"
                                                "validation, bootstrap, profile-likelihood points, one thread "
                                                "each) or of the analyses of several --spec (default: every core "
                                                "this process may use, or $RISKSET_NUM_THREADS)")
    sel.add_argument("--dask", metavar="ADDRESS", help="run replicate fits (or several --spec analyses) on Dask: "
                                                       "'local' for a LocalCluster, or a scheduler address "
                                                       "tcp://host:port; with --shards, the cluster whose "
                                                       "workers hold the shards (required)")
    sel.add_argument("--plot-dir", metavar="DIR", help="write the cross-validation curve (--cv) and the forest "
                                                       "plot (--bootstrap) here")
    es = p.add_argument_group("evidence synthesis (a site's share of a network study; 'riskset pool' combines them)")
    es.add_argument("--approximate", metavar="COEF", help="write, instead of the fit, an approximation of the "
                                                          "profile log-likelihood of COEF to --out FILE.json: no "
                                                          "row of the data, only the curve (riskset.synthesis)")
    es.add_argument("--approximation", choices=KINDS, default=None,
                    help="its kind (default grid_with_gradients, as EvidenceSynthesis)")
    es.add_argument("--bounds", metavar="LO,HI", help="the range of COEF profiled (default log(0.1),log(10)); "
                                                     "with --profile-loglik an adaptive grid over it; a lower "
                                                     "bound below 0: --bounds=-1,1")
    es.add_argument("--profile-loglik", metavar="COEF", help="write, instead of the fit, the profile "
                                                             "log-likelihood of COEF (point, value, derivative, "
                                                             "converged) to --out FILE.csv, at --points or on an "
                                                             "adaptive grid over --bounds")
    es.add_argument("--points", metavar="A,B,...", help="the values of COEF profiled (with --profile-loglik); "
                                                        "a list starting with a minus: --points=-0.5,0,0.5")
    sh = p.add_argument_group(
        "sharded fit (rows on Dask workers)",
        "One fit over rows split into shards: each worker of the --dask cluster reads its\n"
        "shards and keeps them, and the rows never leave it. The outer Newton iterations\n"
        "run here and send the workers only coefficients (and, for a Cox model without\n"
        "strata, sums over the event times); the fit ends at the optimum of the same fit\n"
        "on one machine. The column options (--strata, --weights, --time, ...) apply to\n"
        "every shard's long tables. A sharded fit takes a laplace, normal or elastic_net\n"
        "prior or none, on the CPU. --cv K (--cv-grid, --cv-early-stop, --seed) chooses the\n"
        "variance there too, its folds weights drawn on the workers from the rows' ids (not\n"
        "the one-machine folds), and --bootstrap B fits Poisson draws drawn the same way;\n"
        "their tables, --out files and --plot-dir plots are those of a fit on one machine.\n"
        "No --cv-repeats above 1, --cv-auto, --profile, --fixed, --normalize or --spec.")
    sh.add_argument("--shards", metavar="GLOB|N",
                    help="the outcomes files of the shards, a quoted glob ('cohort/outcomes-*.parquet', .parquet "
                         "or .csv; one shard per file, in name order); with --duckdb, the number of shards N, "
                         "whose queries pick shard {shard} of {n_shards} (e.g. WHERE row_id %% {n_shards} = "
                         "{shard}). The files must be readable by the workers at the same path")
    sh.add_argument("--shard-covariates", metavar="GLOB",
                    help="the covariates files, a quoted glob matching one file per outcomes file (paired in name "
                         "order); each shard may hold its own covariates: the fit aligns them on their union")
    sh.add_argument("--shard-by", choices=("row", "stratum"),
                    help="how the rows were split: row (the default: any split; GLMs and Cox without strata, "
                         "whose risk sets span shards) or stratum (each stratum whole in one shard: needed by "
                         "stratified Cox, conditional logistic and Poisson, SCCS)")
    s = p.add_argument_group("solver and output")
    s.add_argument("--tol", type=POSITIVE, default=None, help="relative objective change that ends the fit "
                                                            "(default 1e-10; 1e-12 with --spec)")
    s.add_argument("--max-iter", type=COUNT, default=1000, help="cap on coordinate-descent cycles (with --shards: "
                                                                "on outer Newton iterations) (default 1000)")
    s.add_argument("--backend", choices=Backend.NAMES, default="cpu",
                   help="run the fit on the CPU (default) or keep it on a CUDA GPU, where --cv and --bootstrap fit "
                        "all their replicates in one device batch; NUMBA_ENABLE_CUDASIM=1 runs the GPU kernels in "
                        "Numba's simulator")
    s.add_argument("--dtype", choices=Backend.DTYPES, default="float64", help="GPU state precision")
    s.add_argument("--profile", metavar="A,B", default="", help="coefficients given profile-likelihood intervals")
    s.add_argument("--level", type=LEVEL, default=0.95, help="confidence level of the intervals: Wald, --profile "
                                                             "and --bootstrap (default 0.95)")
    s.add_argument("--out", metavar="FILE", help="write the result: .json (the full fit, its cross-validation and "
                                                 "bootstrap tables inside) or .csv (the coefficient table); other "
                                                 "tables go beside it as FILE_cross_validation.csv, "
                                                 "FILE_bootstrap.csv (.json for several --spec); the last line "
                                                 "lists the files written. Its folder must exist (checked "
                                                 "before the fit)")
    s.add_argument("--quiet", action="store_true", help="print nothing but errors")
    s.add_argument("--progress", action="store_true", help="show a progress bar over the covariate rows read "
                                                           "from long tables (--outcomes, --duckdb), the model's "
                                                           "preparation, then over the cycles (with --shards: "
                                                           "over the outer Newton iterations, with the KKT "
                                                           "violation against its target)")
    p.set_defaults(func=main)


def main(args) -> int:
    """Run ``riskset fit``; returns the exit status."""
    check_fit_options(args)
    tol = args.tol if args.tol is not None else (1e-12 if args.spec else 1e-10)
    if args.shards:
        return _fit_sharded(args, tol)
    if args.approximate:
        return _write_approximation(args, tol)
    if args.profile_loglik:
        return _write_profile(args, tol)
    if args.spec and len(args.spec) > 1:
        return _fit_many_specs(args, tol)
    with warnings.catch_warnings():
        if args.quiet:
            warnings.simplefilter("ignore")
        analysis = _analyse(args, tol)
    return _report(args, analysis.fit, analysis.tables(), analysis)


def _report(args, fit, tables: dict, analysis=None) -> int:
    """Write the fit (--out) and the plots of ``analysis`` (--plot-dir), show its summary and
    tables; the exit status."""
    written = write_fit(args.out, fit, tables, args.level) if args.out else []
    if analysis is not None:
        written += plot_analysis(args.plot_dir, analysis)
    if not args.quiet:
        print(fit.summary(args.level, full_table=args.out or "write it with --out FILE.csv or FILE.json"))
        for name, table in tables.items():
            print(f"\n{name.replace('_', ' ')}:\n{table.to_string(index=False)}")
        report_written(written)
    if not fit.converged:
        inspect = f"; the results were written to {args.out} for inspection" if args.out else ""
        print(f"riskset fit: error: the {fit.model_name} fit did not converge: {one_line(fit.message)}{inspect}",
              file=sys.stderr)
        return EXIT_NOT_CONVERGED
    return EXIT_OK


def _fit_sharded(args, tol) -> int:
    """``fit --shards``: the variance chosen by cross-validation (--cv), the bootstrap (--bootstrap)
    and the fit, each over the shards on the --dask cluster (a LocalCluster for the command's
    duration with --dask local), in the order and with the tables and plots of an Analysis."""
    import riskset
    from riskset.selection.analyses import Analysis

    data, model, prior = sharded_inputs(args)
    cv, steps = cv_options(args), dict(seed=args.seed or 0, progress=not args.quiet)
    chosen = boot = None
    with warnings.catch_warnings():
        if args.quiet:
            warnings.simplefilter("ignore")
        warnings.simplefilter("ignore", ConvergenceWarning)  # reported by _report's last line
        with dask_client(args.dask, data.n_shards) as client:
            if cv is not None:
                chosen = riskset.cross_validate(data, model, prior, executor=client, refit=False, **cv, **steps)
                prior = chosen.prior
            if args.bootstrap:
                boot = riskset.bootstrap(data, model, prior, executor=client, n_boot=args.bootstrap, level=args.level,
                                         **steps)
            fit = riskset.fit(data, model, prior, executor=client, tol=tol, max_iter=args.max_iter,
                              progress=args.progress)
    analysis = Analysis(fit, chosen, boot)
    return _report(args, fit, analysis.tables(), analysis)


def _write_approximation(args, tol) -> int:
    """``fit --approximate COEF``: the likelihood approximation a site shares, written to --out."""
    from riskset.synthesis import approximate_likelihood

    data, model, prior, fixed = analysis_inputs(args)
    check_known("--approximate", [args.approximate], model.coef_names(data))
    bounds = parse_bounds(args.bounds) if args.bounds else None
    approx = approximate_likelihood(data, model, prior, coef=args.approximate, kind=args.approximation or
                                    "grid_with_gradients", fixed=fixed, tol=tol, max_iter=args.max_iter,
                                    **({"bounds": bounds} if bounds else {}))
    approx.save(args.out)
    if not args.quiet:
        print(f"{approx.kind} approximation of the profile log-likelihood of {args.approximate!r} "
              f"({'its estimate exists' if approx.estimate_exists else 'its estimate does not exist'})")
        report_written([args.out])
    return EXIT_OK


def _write_profile(args, tol) -> int:
    """``fit --profile-loglik COEF``: the profile log-likelihood table, written to --out."""
    import riskset

    data, model, prior, fixed = analysis_inputs(args)
    check_known("--profile-loglik", [args.profile_loglik], model.coef_names(data))
    where = ({"points": [parse_number("--points", v) for v in listed_names(args.points)]} if args.points
             else {"bounds": parse_bounds(args.bounds)})
    table = riskset.profile_loglik(data, model, prior, coef=args.profile_loglik, fixed=fixed, fit_tol=tol,
                                   max_iter=args.max_iter, n_jobs=args.jobs, **where)
    table.to_csv(args.out, index=False)
    if not args.quiet:
        print(table.to_string(index=False))
        report_written([args.out])
    return EXIT_OK if table["converged"].all() else EXIT_NOT_CONVERGED


def _analyse(args, tol):
    """The fit asked for, after cross-validation and bootstrap if asked: an Analysis."""
    from riskset.selection.analyses import analyse

    data, model, prior, fixed = analysis_inputs(args)
    names = model.coef_names(data)
    check_known("--exclude", listed_names(args.exclude), names)
    check_known("--profile", listed_names(args.profile), names)
    check_known("--fixed", list(fixed), names)
    if args.cv and not (isinstance(prior, HierarchicalPrior) or (isinstance(prior, Prior) and prior.is_varied)):
        where = f"the specification's prior is {prior.kind!r}" if args.spec else f"--prior {args.prior}"
        raise InputError(f"--cv chooses the variance of a laplace or normal prior, and {where}")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)  # reported by main's last line
        return analyse(data, model, prior, progress=args.progress, replicate_progress=not args.quiet,
                       executor=executor(args), fixed=fixed, **analysis_options(args, tol))


def _fit_many_specs(args, tol) -> int:
    """Several specifications: run each analysis (threads or Dask) and write one table of each kind."""
    from riskset.selection.analyses import analyse_specs

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        options = analysis_options(args, tol)
        tables = analyse_specs(args.spec, executor=executor(args), n_jobs=options.pop("n_jobs"),
                               progress=not args.quiet, **options)
    coefficients = tables["coefficients"]
    written = write_tables(args.out, tables) if args.out else []
    if not args.quiet:
        for name, table in tables.items():
            heading = "" if name == "coefficients" else f"\n{name.replace('_', ' ')}:\n"
            print(heading + table.to_string(index=False, float_format=lambda v: f"{v:.5g}"))
        report_written(written)
    failed = coefficients.loc[~coefficients["converged"].astype(bool), "analysis"].unique()
    if len(failed):
        print(f"riskset fit: error: {len(failed)} of {len(args.spec)} analyses did not converge: "
              f"{', '.join(map(str, failed))} (see the 'converged' column)", file=sys.stderr)
        return EXIT_NOT_CONVERGED
    return EXIT_OK

