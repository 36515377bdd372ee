"""The ``riskset`` command line.

    riskset fit       fit a model to data (files, DuckDB) or to a JSON specification
    riskset simulate  write a simulated cohort (the papers' sparse design)
    riskset demo      a small cohort study on built-in simulated data
    riskset info      versions, CPU threads and GPU devices
    riskset ode       integrate a batch of ODE systems (parameter sweeps)

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
import math
import os
import sys
import traceback
import warnings

from riskset import __version__
from riskset.exceptions import ConvergenceWarning, InputError

ROLE_OPTIONS = ("y", "time", "status", "start", "strata", "weights", "offset", "exposure", "subject")

EXIT_OK, EXIT_NOT_CONVERGED, EXIT_INPUT, EXIT_BUG, EXIT_INTERRUPTED = 0, 1, 2, 3, 130

EXIT_STATUS_HELP = ("exit status: 0 success; 1 a fit did not converge or its estimate does not exist (the\n"
                    "results are still written; the reason is on stderr); 2 bad usage or input (one line\n"
                    "'riskset COMMAND: error: ...'); 3 internal error, a bug: rerun with --debug for the\n"
                    "traceback and please report it.")


class UsageError(InputError):
    """A command-line mistake found while parsing; ``prog`` is the (sub)command at fault."""

    def __init__(self, prog: str, message: str):
        super().__init__(message)
        self.prog = prog


class Parser(argparse.ArgumentParser):
    """An ArgumentParser whose errors are one line ``PROG: error: ... (see PROG --help)``, not a usage block."""

    def error(self, message):
        raise UsageError(self.prog, f"{message} (see {self.prog} --help)")

    def option_strings(self) -> list[str]:
        return [s for action in self._actions for s in action.option_strings]  # argparse has no public list


def bounded(convert, low=None, high=None, *, low_open=False, high_open=False):
    """An argparse ``type``: ``convert`` (int or float) of the text, finite and within the bounds.

    >>> bounded(int, 1)("3")
    3
    >>> bounded(float, 0, 1, low_open=True, high_open=True)("2")
    Traceback (most recent call last):
    argparse.ArgumentTypeError: must be a number in (0, 1), got '2'
    """
    kind = "a whole number" if convert is int else "a number"
    if low is not None and high is not None:
        rule = f"{kind} in {'(' if low_open else '['}{low:g}, {high:g}{')' if high_open else ']'}"
    elif low is not None:
        rule = f"{kind} {'>' if low_open else '>='} {low:g}"
    else:
        rule = kind

    def parse(text):
        try:
            value = convert(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"must be {rule}, got {text!r}") from None
        below = low is not None and (value <= low if low_open else value < low)
        above = high is not None and (value >= high if high_open else value > high)
        if not math.isfinite(value) or below or above:
            raise argparse.ArgumentTypeError(f"must be {rule}, got {text!r}")
        return value

    parse.__name__ = rule
    return parse


COUNT = bounded(int, 1)
SEED = bounded(int, 0)
FOLDS = bounded(int, 2)
POSITIVE = bounded(float, 0, low_open=True)
NON_NEGATIVE = bounded(float, 0)
LEVEL = bounded(float, 0, 1, low_open=True, high_open=True)
SHARE = bounded(float, 0, 1, low_open=True)


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
                    "                                   penalty); data.csv beside it unless it names another",
        epilog="Examples:\n"
               "  riskset fit --data cohort.parquet --model cox --time days --status died \\\n"
               "              --prior laplace --gamma 2 --exclude treatment --out fit.json\n"
               "  riskset fit --duckdb cohort.duckdb --outcomes-sql 'SELECT * FROM outcomes' \\\n"
               "              --covariates-sql 'SELECT * FROM covariates' --model logistic --prior normal --variance 1\n"
               "  riskset fit --spec case.json --out result.json\n\n" + EXIT_STATUS_HELP)
    src = p.add_argument_group("data")
    src.add_argument("--spec", metavar="FILE", action="append", help="JSON analysis specification (case.json "
                     "format); repeat it to fit many analyses (with --jobs or --dask) into one table")
    src.add_argument("--data", metavar="FILE", help="wide table, .csv or .parquet")
    src.add_argument("--outcomes", metavar="FILE", help="long outcomes table, .csv or .parquet")
    src.add_argument("--covariates-file", metavar="FILE", help="long covariates table, .csv or .parquet")
    src.add_argument("--duckdb", metavar="DB", help="DuckDB database file")
    src.add_argument("--outcomes-sql", metavar="SQL", help="query returning the outcomes table")
    src.add_argument("--covariates-sql", metavar="SQL", help="query returning the covariates table")
    roles = p.add_argument_group("columns (wide tables; long tables use the OHDSI names by default)")
    for role in ROLE_OPTIONS:
        roles.add_argument(f"--{role}", metavar="COLUMN", help=f"column holding the {role}")
    roles.add_argument("--covariates", metavar="A,B,...", help="covariate columns (default: all other columns)")
    m = p.add_argument_group("model")
    m.add_argument("--model", help="model name: logistic, poisson, least_squares, cox, "
                                                         "fine_gray, conditional_logistic, sccs, ... (default logistic)")
    m.add_argument("--option", action="append", default=[], metavar="KEY=VALUE",
                   help="model option, value as JSON (e.g. ties=\"efron\", intercept=false); repeatable")
    pr = p.add_argument_group("prior")
    pr.add_argument("--prior", choices=["none", "laplace", "normal"],
                    help="none (maximum likelihood, the default), laplace (L1) or normal (L2)")
    pr.add_argument("--gamma", type=NON_NEGATIVE, help="Laplace rate: penalty gamma*|beta| (with --prior laplace)")
    pr.add_argument("--variance", type=POSITIVE,
                    help="prior variance (normal; or laplace, gamma = sqrt(2/variance))")
    pr.add_argument("--exclude", metavar="A,B", default="", help="coefficients left unpenalized (e.g. treatment)")
    sel = p.add_argument_group("penalty selection and uncertainty")
    sel.add_argument("--cv", type=FOLDS, metavar="K", help="choose the prior variance by K-fold cross-validation "
                                                         "(needs --prior laplace or normal, not a variance)")
    sel.add_argument("--cv-repeats", type=COUNT, metavar="R", help="repetitions of the K folds (default 1)")
    sel.add_argument("--cv-grid", type=FOLDS, metavar="G", help="variances on the grid (default 10)")
    sel.add_argument("--cv-auto", action="store_true", help="refine the best grid variance by golden-section search")
    sel.add_argument("--bootstrap", type=COUNT, metavar="B", help="B bootstrap replicates by subject: percentile "
                                                                "intervals and non-zero proportions")
    sel.add_argument("--seed", type=SEED, default=0, help="seed of folds and bootstrap samples (default 0)")
    sel.add_argument("--jobs", type=COUNT, default=1, help="threads for replicate fits: cross-validation, bootstrap, "
                                                            "profile-likelihood points (default 1)")
    sel.add_argument("--dask", metavar="ADDRESS", help="run replicate fits on Dask: 'local' for a LocalCluster, "
                                                       "or a scheduler address tcp://host:port")
    sel.add_argument("--plot-dir", metavar="DIR", help="write the cross-validation curve and the forest plot here")
    s = p.add_argument_group("solver and output")
    s.add_argument("--tol", type=POSITIVE, default=None, help="relative objective change that ends the fit "
                                                            "(default 1e-10; 1e-12 with --spec)")
    s.add_argument("--max-iter", type=COUNT, default=1000, help="cap on coordinate-descent cycles (default 1000)")
    s.add_argument("--backend", choices=["cpu", "gpu"], default="cpu",
                   help="run the fit on the CPU (default) or keep it on a CUDA GPU, where --cv and --bootstrap fit "
                        "all their replicates in one device batch; NUMBA_ENABLE_CUDASIM=1 runs the GPU kernels in "
                        "Numba's simulator")
    s.add_argument("--dtype", choices=["float64", "float32"], default="float64", help="GPU state precision")
    s.add_argument("--profile", metavar="A,B", default="", help="coefficients given profile-likelihood intervals")
    s.add_argument("--level", type=LEVEL, default=0.95, help="confidence level of --profile intervals (default 0.95)")
    s.add_argument("--out", metavar="FILE", help="write the result: .json (full) or .csv (coefficient table); its "
                                                 "folder must exist (checked before the fit)")
    s.add_argument("--quiet", action="store_true", help="print nothing but errors")
    s.add_argument("--progress", action="store_true", help="show a progress bar over the cycles")


def _add_simulate(sub):
    p = sub.add_parser("simulate", help="write a simulated cohort (the papers' sparse design)",
                       description="Simulate N x P binary covariates at a given density, 80%% of the true "
                                   "coefficients zero, and an outcome; write them as OHDSI long tables into a "
                                   "DuckDB database (.duckdb) or as outcomes.parquet + covariates.parquet "
                                   "into a folder.")
    from riskset.simulate import MODELS

    p.add_argument("--n", type=COUNT, default=100_000, help="rows (default 100000)")
    p.add_argument("--p", type=COUNT, default=1000, help="covariates (default 1000)")
    p.add_argument("--density", type=SHARE, default=0.05, help="share of non-zero covariate values (default 0.05)")
    p.add_argument("--model", choices=MODELS, default="cox", help="outcome model (default cox)")
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
    if args.spec and len(args.spec) > 1:
        return _fit_many_specs(args, tol)
    with warnings.catch_warnings():
        if args.quiet:
            warnings.simplefilter("ignore")
        fit, extra = _fit_one(args, tol)
    if args.out:
        if args.out.endswith(".csv"):
            fit.coef_table().to_csv(args.out, index=False)
        else:
            result = fit.to_dict() | {k: v.to_dict(orient="records") for k, v in extra.items()}
            with open(args.out, "w") as f:
                json.dump(result, f, indent=2)
    if not args.quiet:
        print(fit.summary())
        for name, table in extra.items():
            print(f"\n{name.replace('_', ' ')}:\n{table.to_string(index=False)}")
    if not fit.converged:
        written = f"; the results were written to {args.out} for inspection" if args.out else ""
        print(f"riskset fit: error: the {fit.model_name} fit did not converge: {_one_line(fit.message)}{written}",
              file=sys.stderr)
        return EXIT_NOT_CONVERGED
    return EXIT_OK


def _fit_one(args, tol):
    """The fit asked for, and the cross-validation / bootstrap tables; (FitResult, {name: table})."""
    import riskset
    from riskset.spec import run_spec

    profile = _names(args.profile)
    if args.spec:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)  # reported by _cmd_fit's last line
            return run_spec(args.spec[0], progress=args.progress, **_solver_options(args, tol)), {}
    try:
        data = _load_data(args)
    except _reader_errors() as err:  # the reader's message does not say which input it was reading
        raise InputError(f"{_source(args)}: {_one_line(err)}") from err
    model = _model(args.model or "logistic", args.option)
    names = model.coef_names(data)
    _check_known("--exclude", _names(args.exclude), names)
    _check_known("--profile", profile, names)
    prior, extra = _select(args, data, model, _prior(args))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)  # reported by _cmd_fit's last line
        fit = riskset.fit(data, model, prior, progress=args.progress, **_solver_options(args, tol))
    return fit, extra


def _solver_options(args, tol) -> dict:
    """Keyword arguments of riskset.fit shared by every way of fitting."""
    return dict(tol=tol, max_iter=args.max_iter, profile=_names(args.profile), level=args.level,
                backend=args.backend, dtype=args.dtype, n_jobs=args.jobs)


def _fit_many_specs(args, tol) -> int:
    """Several specifications: fit each (threads or Dask) and write one table."""
    import riskset

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        options = _solver_options(args, tol)
        table = riskset.fit_specs(args.spec, executor=_executor(args), n_jobs=options.pop("n_jobs"),
                                  progress=not args.quiet, **options)
    if args.out:
        if args.out.endswith(".csv"):
            table.to_csv(args.out, index=False)
        else:
            table.to_json(args.out, orient="records", indent=2)
    if not args.quiet:
        print(table.to_string(index=False, float_format=lambda v: f"{v:.5g}"))
    failed = table.loc[~table["converged"].astype(bool), "analysis"].unique()
    if len(failed):
        print(f"riskset fit: error: {len(failed)} of {len(args.spec)} analyses did not converge: "
              f"{', '.join(map(str, failed))} (see the 'converged' column)", file=sys.stderr)
        return EXIT_NOT_CONVERGED
    return EXIT_OK


def _check_fit_options(args) -> None:
    """Refuse missing, contradictory or unusable options before any data is read or fitted."""
    _check_data_source(args)
    given = [o for o, v in (("--model", args.model), ("--option", args.option), ("--prior", args.prior),
                            ("--gamma", args.gamma is not None), ("--variance", args.variance is not None),
                            ("--exclude", args.exclude), ("--cv", args.cv), ("--bootstrap", args.bootstrap)) if v]
    if args.spec and given:
        raise InputError(f"--spec gives the model and the penalty, so {', '.join(given)} cannot be used with it; "
                         f"use --data, --outcomes or --duckdb instead of --spec")
    _check_prior_options(args)
    cv_only = [o for o, v in (("--cv-repeats", args.cv_repeats), ("--cv-grid", args.cv_grid),
                              ("--cv-auto", args.cv_auto)) if v]
    if cv_only and not args.cv:
        raise InputError(f"{', '.join(cv_only)} set(s) up cross-validation: give --cv K too")
    args.cv_repeats, args.cv_grid = args.cv_repeats or 1, args.cv_grid or 10
    if args.backend == "gpu":
        _check_gpu()
    elif args.dtype != "float64":
        raise InputError(f"--dtype {args.dtype} is the precision of GPU fits: it needs --backend gpu")
    _check_output(args.out, "--out", (".json", ".csv"))
    if args.plot_dir:
        try:
            os.makedirs(args.plot_dir, exist_ok=True)
        except OSError as err:
            raise InputError(f"--plot-dir {args.plot_dir!r}: cannot create the folder ({err.strerror})") from None


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
    if args.gamma is not None and prior != "laplace":
        raise InputError(f"--gamma is the rate of the Laplace prior: it needs --prior laplace, not --prior {prior}")
    if prior == "laplace" and args.gamma is not None and args.variance is not None:
        raise InputError("--prior laplace takes --gamma or --variance, not both")
    if prior == "none" and not args.spec:
        penalty_options = [o for o, v in (("--variance", args.variance is not None), ("--exclude", args.exclude),
                                          ("--cv", args.cv)) if v]
        if penalty_options:
            raise InputError(f"{', '.join(penalty_options)} need(s) a prior: give --prior laplace or normal")


def _check_gpu() -> None:
    """--backend gpu needs a CUDA device or the simulator: say so before reading any data."""
    from numba import config

    from riskset.kernels.devices import describe_devices

    if config.ENABLE_CUDASIM:
        return
    try:
        from numba import cuda

        usable = cuda.is_available()
    except Exception:  # a broken driver installation: describe_devices says what is wrong
        usable = False
    if not usable:
        raise InputError(f"--backend gpu: {describe_devices()}; or use --backend cpu")


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


def _select(args, data, model, prior):
    """Cross-validate the prior and bootstrap the fit as asked; returns (prior, tables)."""
    import riskset

    common = dict(seed=args.seed, executor=_executor(args), n_jobs=args.jobs, progress=not args.quiet,
                  backend=args.backend, dtype=args.dtype)
    tables = {}
    if args.cv:
        cv = riskset.cross_validate(data, model, prior, n_folds=args.cv, n_repeats=args.cv_repeats,
                                    n_grid=args.cv_grid, auto=args.cv_auto, refit=False, **common)
        prior = cv.prior
        tables["cross_validation"] = cv.summary
        if args.plot_dir:
            cv.plot(os.path.join(args.plot_dir, "cross_validation.png"))
    if args.bootstrap:
        boot = riskset.bootstrap(data, model, prior, n_boot=args.bootstrap, **common)
        tables["bootstrap"] = boot.table
        if args.plot_dir:
            boot.plot(os.path.join(args.plot_dir, "bootstrap_forest.png"))
    return prior, tables


def _load_data(args):
    import riskset

    roles = {r: getattr(args, r) for r in ROLE_OPTIONS if getattr(args, r)}
    if args.data:
        from riskset.data.ingest import _read_table

        return riskset.from_frame(_read_table(args.data), covariates=_names(args.covariates) or None, **roles)
    long_roles = {"y": "y", "time": "time", "status": "status", "start": "start", "strata": "stratum",
                  "weights": "weight", "offset": "offset", "exposure": "exposure", "subject": "subject"}
    kw = {long_roles[r]: c for r, c in roles.items()}
    if args.outcomes:
        return riskset.from_long(args.outcomes, args.covariates_file, **kw)
    return riskset.from_duckdb(args.duckdb, args.outcomes_sql, args.covariates_sql, **kw)


def _source(args) -> str:
    if args.data:
        return f"--data {args.data!r}"
    if args.outcomes:
        return f"--outcomes {args.outcomes!r} / --covariates-file {args.covariates_file!r}"
    return f"--duckdb {args.duckdb!r} queries"


def _model(name, option_texts):
    """The model called ``name`` with the ``--option KEY=VALUE`` options, each checked against its signature."""
    import inspect

    from riskset.models.base import Model, get_model

    options = dict(_parse_option(o) for o in option_texts)
    get_model("logistic")  # registers the built-in families
    if name not in Model.registry:
        known = ", ".join(sorted(Model.registry))
        raise InputError(f"--model: unknown model {name!r}; the models are: {known}")
    accepted = [p for p in inspect.signature(Model.registry[name]).parameters]
    unknown = [k for k in options if k not in accepted]
    if unknown:
        raise InputError(f"--option {unknown[0]}: the {name} model has no option {unknown[0]!r}; its options are: "
                         f"{', '.join(accepted) or 'none'}")
    return get_model(name, **options)


def _prior(args):
    import riskset

    exclude = _names(args.exclude)
    # with --cv the variance is chosen on a grid of its own: any starting value will do
    variance = args.variance if args.variance is not None or not args.cv else 1.0
    if args.prior == "laplace":
        if args.gamma is not None:
            return riskset.Laplace(gamma=args.gamma, exclude=exclude)
        if variance is None:
            raise InputError("--prior laplace needs --gamma or --variance (or --cv K to choose it)")
        return riskset.Laplace(variance=variance, exclude=exclude)
    if args.prior == "normal":
        if variance is None:
            raise InputError("--prior normal needs --variance (or --cv K to choose it)")
        return riskset.Normal(variance, exclude=exclude)
    return riskset.NoPrior()


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
    data = riskset.simulate(n=args.n, p=args.p, density=args.density, model=args.model, seed=args.seed)
    if args.out.endswith(".duckdb"):
        write_duckdb(data, args.out)
        print(f"wrote tables outcomes and covariates ({data.X.nnz} non-zeros) into {args.out}")
    else:
        paths = write_parquet(data, args.out)
        print(f"wrote {paths[0]} and {paths[1]} ({data.X.nnz} non-zeros)")
    return EXIT_OK


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


_COMMANDS = {"fit": _cmd_fit, "simulate": _cmd_simulate, "demo": _cmd_demo, "info": _cmd_info, "ode": _cmd_ode}

if __name__ == "__main__":
    sys.exit(main())
