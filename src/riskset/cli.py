"""The ``riskset`` command line.

    riskset fit       fit a model to data (files, DuckDB) or to a JSON specification
    riskset simulate  write simulated data (the papers' sparse design, a cohort study, a case series)
    riskset study     a comparative cohort study (propensity scores, matching, balance, outcome model)
    riskset sccs      a self-controlled case series from observation, exposure and outcome tables
    riskset pool      evidence synthesis across databases
    riskset demo      a small cohort study on built-in simulated data
    riskset info      versions, CPU threads and GPU devices
    riskset ode       integrate a batch of ODE systems (parameter sweeps)

No option is ever ignored: ``riskset fit`` applies each option to a fit from data,
from one ``--spec`` and from several, or refuses it with an error saying why (a spec
gives the model, the columns and the prior; ``--seed`` needs ``--cv`` or
``--bootstrap``; ...). ``--out`` keeps every table: FILE.csv holds the coefficients
and FILE_cross_validation.csv / FILE_bootstrap.csv go beside it (FILE.json holds the
whole fit with its tables); the last line of output lists the files written.

No command shows a traceback. Every error is one line on stderr, ``riskset COMMAND:
error: ...``, and the exit status says which kind it was:

    0  success
    1  a fit did not converge, or its estimate does not exist (the results are still
       written, so they can be inspected; the reason is on stderr)
    2  bad usage or bad input: an option, a file, the data, a SQL query (checked before
       any fitting where possible, e.g. that --out can be written)
    3  an internal error, i.e. a bug in riskset: ``--debug`` shows its traceback

Input errors are :class:`riskset.InputError` (any ``ValueError``), ``NotImplementedError``
(a combination riskset does not support), ``OSError`` (files) and the errors of the
pyarrow and DuckDB readers. Any other exception is a bug. Warnings are one line each,
``riskset COMMAND: warning: ...``.
"""
from __future__ import annotations

import argparse
import contextlib
import difflib
import json
import os
import sys
import traceback
import warnings

from riskset import __version__
from riskset.data.normalize import NORMALIZATIONS
from riskset.arguments import (COUNT, FOLDS, LEVEL, NON_NEGATIVE, NON_NEGATIVE_INT, NUMBER, POSITIVE, ROLE_OPTIONS,
                               SEED, SHARE, Parser, UsageError, bounded)
from riskset.backend import Backend
from riskset.exceptions import ConvergenceWarning, InputError
from riskset.study.cli import add_study, run_study
from riskset.study.sccs_cli import add_sccs, run_sccs
from riskset.synthesis.cli import KIND_CHOICES, add_pool, run_pool

#: What a role's column holds, where its name does not say it.
ROLE_HELP = {"censor_weights": "Fine-Gray censoring weights G(T-) in [0, 1] (Cyclops' censorWeights; default: "
                               "the Kaplan-Meier estimate)"}

def _role_flag(role: str) -> str:
    """The command-line option of a column role: ``censor_weights`` -> ``--censor-weights``."""
    return "--" + role.replace("_", "-")


EXIT_OK, EXIT_NOT_CONVERGED, EXIT_INPUT, EXIT_BUG, EXIT_INTERRUPTED = 0, 1, 2, 3, 130

EXIT_STATUS_HELP = ("exit status: 0 success; 1 a fit did not converge or its estimate does not exist (the\n"
                    "results are still written; the reason is on stderr); 2 bad usage or input (one line\n"
                    "'riskset COMMAND: error: ...'); 3 internal error, a bug: rerun with --debug for the\n"
                    "traceback and please report it.")


def build_parser() -> Parser:
    parser = Parser(
        prog="riskset", formatter_class=argparse.RawDescriptionHelpFormatter,
        description="Regularized survival and regression models for massive observational health data.",
        epilog="Run 'riskset COMMAND --help' for the options of a command.\n\n" + EXIT_STATUS_HELP)
    parser.add_argument("--version", action="version", version=f"riskset {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    _add_fit(sub)
    _add_simulate(sub)
    _add_demo(sub)
    sub.add_parser("info", help="print versions, CPU threads and GPU devices",
                   description="Print the versions of riskset and its engines, the CPU threads Numba uses, "
                               "and the CUDA devices found (or why none is usable).")
    add_pool(sub)
    add_study(sub, _add_data_source)
    add_sccs(sub)
    try:
        from riskset.ode.cli import add_parser as add_ode
    except ImportError:
        pass
    else:
        add_ode(sub)
    for command in sub.choices.values():
        command.add_argument("--debug", action="store_true",
                             help="on an internal error, show the Python traceback (for a bug report)")
    parser.commands = sub.choices
    return parser


def _add_fit(sub):
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
                    "                                   names another. The format: python -m pydoc riskset.spec\n\n"
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
               "              (writes result.csv, result_cross_validation.csv, result_bootstrap.csv)\n\n"
               + EXIT_STATUS_HELP)
    src = _add_data_source(p)
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
                                                       "tcp://host:port")
    sel.add_argument("--plot-dir", metavar="DIR", help="write the cross-validation curve (--cv) and the forest "
                                                       "plot (--bootstrap) here")
    es = p.add_argument_group("evidence synthesis (a site's share of a network study; 'riskset pool' combines them)")
    es.add_argument("--approximate", metavar="COEF", help="write, instead of the fit, an approximation of the "
                                                          "profile log-likelihood of COEF to --out FILE.json: no "
                                                          "row of the data, only the curve (riskset.synthesis)")
    es.add_argument("--approximation", choices=KIND_CHOICES, default=None,
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
    s = p.add_argument_group("solver and output")
    s.add_argument("--tol", type=POSITIVE, default=None, help="relative objective change that ends the fit "
                                                            "(default 1e-10; 1e-12 with --spec)")
    s.add_argument("--max-iter", type=COUNT, default=1000, help="cap on coordinate-descent cycles (default 1000)")
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
    s.add_argument("--progress", action="store_true", help="show a progress bar over the cycles")


def _add_data_source(p):
    """The data options ``riskset fit`` and ``riskset study`` share: the sources and the column roles;
    returns the "data" group."""
    src = p.add_argument_group("data")
    p.set_defaults(spec=None)
    src.add_argument("--data", metavar="FILE", help="wide table, .csv or .parquet")
    src.add_argument("--outcomes", metavar="FILE", help="long outcomes table, .csv or .parquet")
    src.add_argument("--covariates-file", metavar="FILE", help="long covariates table, .csv or .parquet")
    src.add_argument("--duckdb", metavar="DB", help="DuckDB database file")
    src.add_argument("--outcomes-sql", metavar="SQL", help="query returning the outcomes table")
    src.add_argument("--covariates-sql", metavar="SQL", help="query returning the covariates table")
    src.add_argument("--covariate-ref", metavar="FILE", help="covariate reference table, .csv or .parquet "
                     "(covariate_id, covariate_name, ...): names shown for the covariate ids")
    src.add_argument("--covariate-ref-sql", metavar="SQL", help="query returning the covariate reference table "
                     "(with --duckdb)")
    roles = p.add_argument_group("columns (wide tables; long tables use the OHDSI names by default)")
    for role in ROLE_OPTIONS:
        roles.add_argument(_role_flag(role), dest=role, metavar="COLUMN",
                           help=f"column holding the {ROLE_HELP.get(role, role)}")
    roles.add_argument("--covariates", metavar="A,B,...", help="covariate columns (default: all other columns)")
    return src


def _add_simulate(sub):
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


def _add_demo(sub):
    p = sub.add_parser("demo", help="a small cohort study on built-in simulated data",
                       description="Simulate a cohort, store it in a DuckDB file, read it back and fit the "
                                   "study's models; prints the results and writes plots into --out.")
    p.add_argument("--n", type=bounded(int, 1000), default=20_000, help="patients (default 20000, at least 1000)")
    p.add_argument("--out", default="riskset-demo", metavar="DIR", help="output folder (default riskset-demo)")
    p.add_argument("--seed", type=SEED, default=1, help="random seed (default 1)")


def main(argv=None) -> int:
    """Run one command; returns the exit status (see the module docstring). ``--help`` exits as usual.

    >>> main(["fit", "--jobs", "0"])  # prints: riskset fit: error: argument --jobs: must be ... --help)
    2
    """
    parser = build_parser()
    try:
        args = _parse(parser, argv)
    except UsageError as err:
        return _report(err.prog, err, debug=False)
    prog = f"riskset {args.command}"
    try:
        with _one_line_warnings(prog):
            return _COMMANDS[args.command](args)
    except KeyboardInterrupt:
        print(f"{prog}: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    except Exception as err:  # the one place where exceptions become the one-line report
        return _report(prog, err, debug=args.debug)


def _parse(parser: Parser, argv) -> argparse.Namespace:
    """Parse, refusing unknown options with the command's name and a guess at the intended one."""
    args, unknown = parser.parse_known_args(argv)
    if unknown:
        command = parser.commands[args.command]
        guesses = [g for u in unknown if u.startswith("-")
                   for g in difflib.get_close_matches(u.split("=")[0], command.option_strings(), n=1)]
        hint = f" (did you mean {', '.join(guesses)}?)" if guesses else ""
        command.error(f"unrecognized arguments: {' '.join(unknown)}{hint}")
    return args


def _report(prog: str, err: BaseException, *, debug: bool) -> int:
    """Print ``err`` as one line on stderr (after its traceback with --debug); returns the exit status."""
    expected = isinstance(err, (ValueError, NotImplementedError, OSError, MemoryError) + _reader_errors())
    if debug:
        traceback.print_exception(err)
    text = _one_line(_describe(err))
    if not expected:
        how = "the traceback is above" if debug else "rerun with --debug for the traceback"
        text = f"internal error ({type(err).__name__}: {text}); this is a bug in riskset: {how}, and please report it"
    print(f"{prog}: error: {text}", file=sys.stderr)
    return EXIT_INPUT if expected else EXIT_BUG


def _reader_errors() -> tuple:
    """Error classes of the table readers already loaded (DuckDB, pyarrow): bad input, not bugs."""
    classes = []
    if "duckdb" in sys.modules:
        classes.append(sys.modules["duckdb"].Error)
    if "pyarrow" in sys.modules:
        classes.append(sys.modules["pyarrow"].lib.ArrowException)
    return tuple(classes)


def _describe(err: BaseException) -> str:
    if isinstance(err, OSError) and err.filename is not None and err.strerror:
        return f"{err.filename}: {err.strerror}"
    return str(err) or type(err).__name__


def _one_line(text) -> str:
    return " ".join(str(text).split())


@contextlib.contextmanager
def _one_line_warnings(prog: str):
    """Show each warning as one line ``PROG: warning: ...`` (no source line, no file name)."""
    with warnings.catch_warnings():
        warnings.showwarning = lambda message, *_: print(f"{prog}: warning: {_one_line(message)}",
                                                         file=sys.stderr)
        yield


def _cmd_fit(args) -> int:
    _check_fit_options(args)
    tol = args.tol if args.tol is not None else (1e-12 if args.spec else 1e-10)
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
    fit, tables = analysis.fit, analysis.tables()
    written = _write_fit(args.out, fit, tables, args.level) if args.out else []
    written += _plot(args.plot_dir, analysis)
    if not args.quiet:
        print(fit.summary(args.level, full_table=args.out or "write it with --out FILE.csv or FILE.json"))
        for name, table in tables.items():
            print(f"\n{name.replace('_', ' ')}:\n{table.to_string(index=False)}")
        _report_written(written)
    if not fit.converged:
        inspect = f"; the results were written to {args.out} for inspection" if args.out else ""
        print(f"riskset fit: error: the {fit.model_name} fit did not converge: {_one_line(fit.message)}{inspect}",
              file=sys.stderr)
        return EXIT_NOT_CONVERGED
    return EXIT_OK


def _write_approximation(args, tol) -> int:
    """``fit --approximate COEF``: the likelihood approximation a site shares, written to --out."""
    from riskset.synthesis import approximate_likelihood

    data, model, prior, fixed = _analysis_inputs(args)
    _check_known("--approximate", [args.approximate], model.coef_names(data))
    bounds = _bounds(args.bounds) if args.bounds else None
    approx = approximate_likelihood(data, model, prior, coef=args.approximate, kind=args.approximation or
                                    "grid_with_gradients", fixed=fixed, tol=tol, max_iter=args.max_iter,
                                    **({"bounds": bounds} if bounds else {}))
    approx.save(args.out)
    if not args.quiet:
        print(f"{approx.kind} approximation of the profile log-likelihood of {args.approximate!r} "
              f"({'its estimate exists' if approx.estimate_exists else 'its estimate does not exist'})")
        _report_written([args.out])
    return EXIT_OK


def _write_profile(args, tol) -> int:
    """``fit --profile-loglik COEF``: the profile log-likelihood table, written to --out."""
    import riskset

    data, model, prior, fixed = _analysis_inputs(args)
    _check_known("--profile-loglik", [args.profile_loglik], model.coef_names(data))
    where = ({"points": [_number("--points", v) for v in _names(args.points)]} if args.points
             else {"bounds": _bounds(args.bounds)})
    table = riskset.profile_loglik(data, model, prior, coef=args.profile_loglik, fixed=fixed, fit_tol=tol,
                                   max_iter=args.max_iter, n_jobs=args.jobs, **where)
    table.to_csv(args.out, index=False)
    if not args.quiet:
        print(table.to_string(index=False))
        _report_written([args.out])
    return EXIT_OK if table["converged"].all() else EXIT_NOT_CONVERGED


def _number(option: str, text: str) -> float:
    try:
        return NUMBER(text)
    except argparse.ArgumentTypeError as err:
        raise InputError(f"{option} {text!r}: {err}") from None


def _bounds(text: str) -> tuple[float, float]:
    parts = text.split(",")
    try:
        lo, hi = (NUMBER(v) for v in parts) if len(parts) == 2 else (None, None)
    except argparse.ArgumentTypeError:
        lo = hi = None
    if lo is None or not lo < hi:
        raise InputError(f"--bounds expects LO,HI with LO < HI (the range of the coefficient, e.g. "
                         f"-2.3026,2.3026 for hazard ratios 0.1 to 10), got {text!r}")
    return lo, hi


def _analyse(args, tol):
    """The fit asked for, after cross-validation and bootstrap if asked: an Analysis."""
    from riskset.selection.analyses import analyse

    data, model, prior, fixed = _analysis_inputs(args)
    names = model.coef_names(data)
    _check_known("--exclude", _names(args.exclude), names)
    _check_known("--profile", _names(args.profile), names)
    _check_known("--fixed", list(fixed), names)
    if args.cv and prior.kind not in ("laplace", "normal", "hierarchical"):
        where = f"the specification's prior is {prior.kind!r}" if args.spec else f"--prior {args.prior}"
        raise InputError(f"--cv chooses the variance of a laplace or normal prior, and {where}")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)  # reported by _cmd_fit's last line
        return analyse(data, model, prior, progress=args.progress, replicate_progress=not args.quiet,
                       executor=_executor(args), fixed=fixed, **_analysis_options(args, tol))


def _analysis_inputs(args):
    """(dataset, model, prior, fixed coefficients) from the specification, or from the data
    and the model and prior options."""
    if args.spec:
        from riskset.spec import analysis_from_spec, load_spec, spec_fixed

        spec, frame = load_spec(args.spec[0])
        return *analysis_from_spec(spec, frame, args.spec[0]), spec_fixed(spec, args.spec[0])
    try:
        data = _load_data(args)
    except _reader_errors() as err:  # the reader's message does not say which input it was reading
        raise InputError(f"{_source(args)}: {_one_line(err)}") from err
    fixed = dict(_parse_assignment("--fixed", "VALUE", v, NUMBER) for v in _names(args.fixed))
    return data, _model(args.model or "logistic", args.option), _prior(args), fixed


def _analysis_options(args, tol) -> dict:
    """Keyword arguments of riskset.selection.analyses.analyse shared by every way of fitting."""
    cv = dict(n_folds=args.cv, n_repeats=args.cv_repeats, n_grid=args.cv_grid, auto=args.cv_auto,
              early_stop=args.cv_early_stop or None) if args.cv else None
    if cv is not None and args.group_variance is not None:  # a hierarchical prior's group variance, held
        cv["group_variances"] = [args.group_variance]
    return dict(cv=cv, n_boot=args.bootstrap, seed=args.seed or 0, n_jobs=args.jobs, tol=tol,
                max_iter=args.max_iter, profile=_names(args.profile), level=args.level, backend=args.backend,
                dtype=args.dtype, **({"normalize": args.normalize} if args.normalize else {}))


def _fit_many_specs(args, tol) -> int:
    """Several specifications: run each analysis (threads or Dask) and write one table of each kind."""
    from riskset.selection.analyses import analyse_specs

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        options = _analysis_options(args, tol)
        tables = analyse_specs(args.spec, executor=_executor(args), n_jobs=options.pop("n_jobs"),
                               progress=not args.quiet, **options)
    coefficients = tables["coefficients"]
    written = _write_tables(args.out, tables) if args.out else []
    if not args.quiet:
        for name, table in tables.items():
            heading = "" if name == "coefficients" else f"\n{name.replace('_', ' ')}:\n"
            print(heading + table.to_string(index=False, float_format=lambda v: f"{v:.5g}"))
        _report_written(written)
    failed = coefficients.loc[~coefficients["converged"].astype(bool), "analysis"].unique()
    if len(failed):
        print(f"riskset fit: error: {len(failed)} of {len(args.spec)} analyses did not converge: "
              f"{', '.join(map(str, failed))} (see the 'converged' column)", file=sys.stderr)
        return EXIT_NOT_CONVERGED
    return EXIT_OK


def _write_fit(out: str, fit, tables: dict, level: float) -> list[str]:
    """Write one fit to ``out``: JSON holds everything, CSV the coefficients with the other tables beside."""
    if out.endswith(".csv"):
        return _write_tables(out, {"coefficients": fit.coef_table(level)} | tables)
    result = fit.to_dict() | {"coef_table": fit.coef_table(level).to_dict(orient="records")}
    result |= {name: table.to_dict(orient="records") for name, table in tables.items()}
    with open(out, "w") as f:
        json.dump(result, f, indent=2)
    return [f"{out} (the fit{''.join(', ' + n.replace('_', '-') for n in tables)})"]


def _write_tables(out: str, tables: dict) -> list[str]:
    """The 'coefficients' table to ``out``, every other one beside it as STEM_NAME.EXT; the files written."""
    stem, ext = os.path.splitext(out)
    written = []
    for name, table in tables.items():
        path = out if name == "coefficients" else f"{stem}_{name}{ext}"
        if ext == ".csv":
            table.to_csv(path, index=False)
        else:
            table.to_json(path, orient="records", indent=2)
        written.append(f"{path} ({name.replace('_', '-')})")
    return written


def _plot(plot_dir, analysis) -> list[str]:
    """The cross-validation curve and the bootstrap forest plot, those computed, into ``plot_dir``."""
    plots = {"cross_validation.png": analysis.cv, "bootstrap_forest.png": analysis.boot}
    written = []
    for name, result in plots.items():
        if plot_dir and result is not None:
            path = os.path.join(plot_dir, name)
            result.plot(path)
            written.append(f"{path} (plot)")
    return written


def _report_written(written: list[str]) -> None:
    if written:
        print(f"\nwrote {', '.join(written)}")


#: Options that say what a specification says (model, columns, prior): refused with --spec.
SPEC_GIVES = ("--model", "--option", "--prior", "--gamma", "--variance", "--variances", "--means", "--exclude",
              "--penalty", "--max-nonzero", "--best-subset", "--jeffreys-coefs", "--groups", "--group-variance",
              "--fixed",
              "--covariates") + tuple(_role_flag(role) for role in ROLE_OPTIONS)


def _check_fit_options(args) -> None:
    """Refuse missing, contradictory, unusable or ineffective options before any data is read or fitted."""
    _check_data_source(args)
    _check_spec_options(args)
    _check_prior_options(args)
    _check_selection_options(args)
    _check_approximation_options(args)
    _check_backend(Backend.of(args.backend, args.dtype))
    _check_output(args.out, "--out", (".json", ".csv"))
    if args.plot_dir:
        try:
            os.makedirs(args.plot_dir, exist_ok=True)
        except OSError as err:
            raise InputError(f"--plot-dir {args.plot_dir!r}: cannot create the folder ({err.strerror})") from None


def _given(args, option) -> bool:
    value = _value(args, option)
    return value is not None and value is not False and value != "" and value != []


def _check_spec_options(args) -> None:
    """With --spec: no option that the specification gives; with several, none that needs one fit."""
    if args.spec:
        given = [o for o in SPEC_GIVES if _given(args, o)]
        if given:
            raise InputError(f"--spec gives the model, the columns and the prior, so {', '.join(given)} cannot be "
                             f"used with it: edit the specification (its format: python -m pydoc riskset.spec), "
                             f"or give the data with --data, --outcomes or --duckdb instead of --spec")
    if args.covariates and not args.data:
        raise InputError("--covariates picks the covariate columns of a wide --data table; long tables "
                         "(--outcomes, --duckdb) use every covariate_id they hold: select them in the file or query")
    if args.spec and len(args.spec) > 1:
        one_fit = [o for o in ("--plot-dir", "--progress") if _given(args, o)]
        if one_fit:
            raise InputError(f"{', '.join(one_fit)} show(s) one fit; with several --spec run them one at a time")


def _check_approximation_options(args) -> None:
    """--approximate and --profile-loglik write one curve to --out (.json, .csv), and take
    none of the steps of an analysis."""
    curve = "--approximate" if args.approximate else "--profile-loglik" if args.profile_loglik else None
    if args.approximate and args.profile_loglik:
        raise InputError("give --approximate or --profile-loglik, not both")
    needs = {"--approximation": "--approximate", "--points": "--profile-loglik",
             "--bounds": curve or "--approximate or --profile-loglik"}
    for option, owner in needs.items():
        if _given(args, option) and (curve is None or (owner != curve and option != "--bounds")):
            raise InputError(f"{option} sets up {owner} COEF: give it too")
    if curve is None:
        return
    suffix = ".json" if args.approximate else ".csv"
    if not args.out or not args.out.endswith(suffix):
        raise InputError(f"{curve} writes to --out FILE{suffix}, got --out {args.out!r}")
    if args.profile_loglik and bool(args.points) == bool(args.bounds):
        raise InputError("--profile-loglik needs --points A,B,... or --bounds LO,HI (an adaptive grid), one of them")
    steps = [o for o in ("--cv", "--bootstrap", "--profile", "--plot-dir", "--dask") if _given(args, o)]
    if steps or (args.spec and len(args.spec) > 1):
        raise InputError(f"{curve} profiles one coefficient of one model: "
                         f"{', '.join(steps) or 'several --spec'} cannot be used with it")


def _check_selection_options(args) -> None:
    """Options of cross-validation, bootstrap and parallel fits without the step they belong to."""
    cv_only = [o for o in ("--cv-repeats", "--cv-grid", "--cv-auto", "--cv-early-stop") if _given(args, o)]
    if cv_only and not args.cv:
        raise InputError(f"{', '.join(cv_only)} set(s) up cross-validation: give --cv K too")
    args.cv_repeats, args.cv_grid = args.cv_repeats or 1, args.cv_grid or 10
    args.cv_early_stop = 2 if args.cv_early_stop is None else args.cv_early_stop
    replicates = bool(args.cv or args.bootstrap)
    several = bool(args.spec and len(args.spec) > 1)
    needs = {"--seed": ("seeds the folds and bootstrap samples", replicates),
             "--plot-dir": ("plots the cross-validation curve and the bootstrap estimates", replicates),
             "--dask": ("runs replicate fits or several --spec analyses", replicates or several),
             "--jobs": ("runs replicate fits, profile-likelihood points or several --spec analyses in parallel",
                        replicates or several or bool(args.profile or args.profile_loglik or args.approximate))}
    for option, (role, used) in needs.items():
        if _given(args, option) and not used:
            raise InputError(f"{option} {role}, and there is none to run: give --cv K or --bootstrap B"
                             + (" (or --profile, or several --spec)" if option == "--jobs" else ""))

def _check_data_source(args) -> None:
    sources = {"--spec": args.spec, "--data": args.data,
               "--outcomes/--covariates-file": args.outcomes or args.covariates_file,
               "--duckdb": args.duckdb or args.outcomes_sql or args.covariates_sql}
    chosen = [name for name, given in sources.items() if given]
    if not chosen:
        raise InputError("no data: give --spec, --data, --outcomes with --covariates-file, "
                         "or --duckdb with --outcomes-sql and --covariates-sql")
    if len(chosen) > 1:
        raise InputError(f"give one source of data, not {' and '.join(chosen)}")
    needs = {"--outcomes": ("--covariates-file",), "--covariates-file": ("--outcomes",),
             "--duckdb": ("--outcomes-sql", "--covariates-sql"), "--outcomes-sql": ("--duckdb", "--covariates-sql"),
             "--covariates-sql": ("--duckdb", "--outcomes-sql")}
    for option, partners in needs.items():
        missing = [p for p in partners if not _value(args, p)]
        if _value(args, option) and missing:
            raise InputError(f"{option} needs {' and '.join(missing)}")
    for option in ("--data", "--outcomes", "--covariates-file", "--duckdb"):
        _check_input(_value(args, option), option)
    for path in args.spec or ():
        _check_input(path, "--spec")


def _value(args, option):
    return getattr(args, option[2:].replace("-", "_"))


def _check_prior_options(args) -> None:
    prior = args.prior or "none"
    if args.gamma is not None and prior not in ("laplace", "elastic_net"):
        raise InputError(f"--gamma is the rate of the L1 penalty: it needs --prior laplace or elastic_net, "
                         f"not --prior {prior}")
    if prior == "laplace" and args.gamma is not None and args.variance is not None:
        raise InputError("--prior laplace takes --gamma or --variance, not both")
    if prior == "elastic_net" and not args.cv and (args.gamma is None or args.variance is None):
        raise InputError("--prior elastic_net needs both --gamma (the L1 rate) and --variance (the normal variance)")
    if prior == "elastic_net" and args.cv:
        raise InputError("--cv chooses the variance of a laplace or normal prior; an elastic_net prior has two "
                         "strengths: give --gamma and --variance")
    given = [o for o in ("--groups", "--group-variance") if _given(args, o)]
    if given and prior != "hierarchical":
        raise InputError(f"{', '.join(given)} are options of --prior hierarchical, not --prior {prior}")
    if prior == "hierarchical" and not args.groups:
        raise InputError("--prior hierarchical needs --groups A=G,B=G (each grouped covariate's group)")
    if _given(args, "--jeffreys-coefs") and prior != "jeffreys":
        raise InputError(f"--jeffreys-coefs is an option of --prior jeffreys, not --prior {prior}")
    if prior == "jeffreys":
        given = [o for o in ("--gamma", "--variance", "--variances", "--means", "--exclude") if _given(args, o)]
        if given:
            raise InputError(f"--prior jeffreys has no strength and penalizes no coefficient towards 0: "
                             f"{', '.join(given)} do(es) not apply (--jeffreys-coefs names its coefficients)")
    selection = prior in ("bar", "iht")
    given = [o for o in ("--penalty", "--best-subset") if _given(args, o)]
    if given and not selection:
        raise InputError(f"{', '.join(given)} are options of --prior bar or iht, not --prior {prior}")
    if (args.max_nonzero is not None) != (prior == "iht"):
        raise InputError("--prior iht needs --max-nonzero K" if prior == "iht"
                         else f"--max-nonzero is the K of --prior iht, not of --prior {prior}")
    strengths = [o for o in ("--gamma", "--variance", "--variances", "--means") if _given(args, o)]
    if selection and strengths:
        raise InputError(f"--prior {prior} sets its own variances: {', '.join(strengths)} do(es) not apply")
    if prior == "none" and not args.spec:
        penalty_options = [o for o in ("--variance", "--variances", "--means", "--exclude", "--cv")
                           if _given(args, o)]
        if penalty_options:
            raise InputError(f"{', '.join(penalty_options)} need(s) a prior: give --prior laplace, normal or "
                             f"elastic_net")


def _check_backend(backend: Backend) -> None:
    """--backend gpu needs a CUDA device or the simulator, --dtype float32 the GPU: say so before reading any data."""
    problem = backend.problem()
    if problem:
        raise InputError(f"--backend {backend.name}: {problem}; or use --backend cpu")
    if not backend.on_device and backend.dtype != "float64":
        raise InputError(f"--dtype {backend.dtype} is the precision of GPU fits: it needs --backend gpu")


def _check_input(path, option) -> None:
    if path and not os.path.exists(path):
        raise InputError(f"{option} {path!r}: the file does not exist")


def _check_output(path, option, suffixes=()) -> None:
    """Refuse an output file that cannot be written, before any work is done."""
    if not path:
        return
    if suffixes and not path.lower().endswith(suffixes):
        raise InputError(f"{option} {path!r}: the file name must end in {' or '.join(suffixes)}")
    folder = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(folder):
        raise InputError(f"{option} {path!r}: the folder {folder!r} does not exist; create it first")
    if not os.access(folder, os.W_OK):
        raise InputError(f"{option} {path!r}: the folder {folder!r} is not writable")
    if os.path.isdir(path):
        raise InputError(f"{option} {path!r} is a folder; give a file name")


def _check_known(option, names, known) -> None:
    unknown = [n for n in names if n not in known]
    if unknown:
        shown = ", ".join(known[:20]) + (", ..." if len(known) > 20 else "")
        raise InputError(f"{option} names unknown coefficient(s) {', '.join(map(repr, unknown))}; "
                         f"the model's coefficients are: {shown}")


def _names(text) -> list[str]:
    return [s.strip() for s in (text or "").split(",") if s.strip()]


def _executor(args):
    return None if not args.dask else ("dask" if args.dask == "local" else args.dask)


def _load_data(args):
    import riskset

    roles = {r: getattr(args, r) for r in ROLE_OPTIONS if getattr(args, r)}
    if args.covariate_ref_sql and not args.duckdb:
        raise InputError("--covariate-ref-sql queries the --duckdb database; give --covariate-ref FILE otherwise")
    if args.data:
        from riskset.data.ingest import _read_table

        return riskset.from_frame(_read_table(args.data), covariates=_names(args.covariates) or None,
                                  covariate_ref=args.covariate_ref, **roles)
    if args.outcomes:
        return riskset.from_long(args.outcomes, args.covariates_file, covariate_ref=args.covariate_ref, **roles)
    return riskset.from_duckdb(args.duckdb, args.outcomes_sql, args.covariates_sql, covariate_ref=args.covariate_ref,
                               covariate_ref_sql=args.covariate_ref_sql, **roles)


def _source(args) -> str:
    if args.data:
        return f"--data {args.data!r}"
    if args.outcomes:
        return f"--outcomes {args.outcomes!r} / --covariates-file {args.covariates_file!r}"
    return f"--duckdb {args.duckdb!r} queries"


def _model(name, option_texts):
    """The model called ``name`` with the ``--option KEY=VALUE`` options, each checked against its signature."""
    from riskset.models.base import Model, get_model

    options = dict(_parse_option(o) for o in option_texts)
    get_model("logistic")  # registers the built-in families
    if name not in Model.registry:
        known = ", ".join(sorted(Model.registry))
        raise InputError(f"--model: unknown model {name!r}; the models are: {known}")
    accepted = Model.registry[name].option_names()
    unknown = [k for k in options if k not in accepted]
    if unknown:
        raise InputError(f"--option {unknown[0]}: the {name} model has no option {unknown[0]!r}; its options are: "
                         f"{', '.join(accepted) or 'none'}")
    return get_model(name, **options)


def _prior(args):
    import riskset

    exclude = _names(args.exclude)
    variances = dict(_parse_assignment("--variances", "VARIANCE", v, POSITIVE) for v in _names(args.variances))
    means = dict(_parse_assignment("--means", "MEAN", v, NUMBER) for v in _names(args.means))
    # with --cv the variance is chosen on a grid of its own: any starting value will do
    variance = args.variance if args.variance is not None or not args.cv else 1.0
    if args.prior == "laplace":
        if args.gamma is not None:
            return riskset.Laplace(gamma=args.gamma, exclude=exclude, variances=variances, means=means)
        if variance is None:
            raise InputError("--prior laplace needs --gamma or --variance (or --cv K to choose it)")
        return riskset.Laplace(variance=variance, exclude=exclude, variances=variances, means=means)
    if args.prior == "normal":
        if variance is None:
            raise InputError("--prior normal needs --variance (or --cv K to choose it)")
        return riskset.Normal(variance, exclude=exclude, variances=variances, means=means)
    if args.prior == "elastic_net":
        return riskset.Prior("elastic_net", gamma=args.gamma, variance=variance, exclude=exclude,
                             variances=variances, means=means)
    if args.prior == "jeffreys":
        return riskset.Jeffreys(_names(args.jeffreys_coefs))
    if args.prior == "hierarchical":
        groups = dict(_parse_assignment("--groups", "GROUP", g, str) for g in _names(args.groups))
        if variance is None:
            raise InputError("--prior hierarchical needs --variance (or --cv K to choose it)")
        return riskset.Hierarchical(variance, 1.0 if args.group_variance is None else args.group_variance,
                                    groups=groups, exclude=exclude)
    if args.prior in ("bar", "iht"):
        penalty = "bic" if args.penalty in (None, "bic") else _number("--penalty", args.penalty)
        if args.prior == "iht":
            return riskset.IHT(args.max_nonzero, penalty, exclude=exclude, fit_best_subset=args.best_subset)
        return riskset.BAR(penalty, exclude=exclude, fit_best_subset=args.best_subset)
    return riskset.NoPrior()



def _parse_assignment(option, what, text, convert):
    """``NAME=V`` of --variances / --means -> (NAME, convert(V))."""
    name, sep, value = text.partition("=")
    if not sep or not name.strip():
        raise InputError(f"{option} expects NAME={what} items separated by commas, got {text!r}")
    try:
        return name.strip(), convert(value)
    except argparse.ArgumentTypeError as err:
        raise InputError(f"{option} {text!r}: the {what.lower()} {err}") from None


def _parse_option(text):
    key, sep, value = text.partition("=")
    if not sep or not key:
        raise InputError(f"--option expects KEY=VALUE (value as JSON), got {text!r}")
    try:
        return key, json.loads(value)
    except json.JSONDecodeError:
        return key, value


def _cmd_simulate(args) -> int:
    import riskset
    from riskset.data.export import write_duckdb, write_parquet

    if args.out.endswith(".duckdb") or not os.path.isdir(args.out):  # a file, or a new folder: its folder must exist
        _check_output(args.out.rstrip("/"), "--out")
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


def _cmd_demo(args) -> int:
    from riskset.demo import run_demo

    return run_demo(n=args.n, out=args.out, seed=args.seed)


def _cmd_info(args) -> int:
    import numba
    import numpy
    import scipy

    print(f"riskset {__version__}\nnumpy {numpy.__version__}, scipy {scipy.__version__}, numba {numba.__version__}")
    print(f"CPU threads (numba): {numba.config.NUMBA_NUM_THREADS}")
    from riskset.kernels.devices import describe_devices

    print(describe_devices())
    return 0


def _cmd_ode(args) -> int:
    from riskset.ode.cli import main as ode_main

    return ode_main(args)


def _cmd_study(args) -> int:
    return run_study(args, _checked_data)


def _checked_data(args):
    """The data set the data options of ``args`` name, after checking them."""
    _check_data_source(args)
    return _load_data(args)


_COMMANDS = {"fit": _cmd_fit, "simulate": _cmd_simulate, "demo": _cmd_demo, "info": _cmd_info, "ode": _cmd_ode,
             "pool": run_pool, "study": _cmd_study, "sccs": run_sccs}

if __name__ == "__main__":
    sys.exit(main())
