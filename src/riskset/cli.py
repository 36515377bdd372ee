"""The ``riskset`` command line.

    riskset fit       fit a model to data (files, DuckDB) or to a JSON specification
    riskset simulate  write a simulated cohort (the papers' sparse design)
    riskset demo      a small cohort study on built-in simulated data
    riskset info      versions, CPU threads and GPU devices
    riskset ode       integrate a batch of ODE systems (parameter sweeps)
"""
from __future__ import annotations

import argparse
import json
import sys
import warnings

from riskset import __version__

ROLE_OPTIONS = ("y", "time", "status", "start", "strata", "weights", "offset", "exposure", "subject")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="riskset",
        description="Regularized survival and regression models for massive observational health data.",
        epilog="Run 'riskset COMMAND --help' for the options of a command.")
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
               "  riskset fit --spec case.json --out result.json")
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
    m.add_argument("--model", default="logistic", help="model name: logistic, poisson, least_squares, cox, "
                                                         "fine_gray, conditional_logistic, sccs, ... (default logistic)")
    m.add_argument("--option", action="append", default=[], metavar="KEY=VALUE",
                   help="model option, value as JSON (e.g. ties=\"efron\", intercept=false); repeatable")
    pr = p.add_argument_group("prior")
    pr.add_argument("--prior", choices=["none", "laplace", "normal"], default="none",
                    help="none (maximum likelihood), laplace (L1) or normal (L2)")
    pr.add_argument("--gamma", type=float, help="Laplace rate: penalty gamma*|beta|")
    pr.add_argument("--variance", type=float, help="prior variance (normal; or laplace, gamma = sqrt(2/variance))")
    pr.add_argument("--exclude", metavar="A,B", default="", help="coefficients left unpenalized (e.g. treatment)")
    sel = p.add_argument_group("penalty selection and uncertainty")
    sel.add_argument("--cv", type=int, metavar="K", help="choose the prior variance by K-fold cross-validation "
                                                         "(needs --prior laplace or normal)")
    sel.add_argument("--cv-repeats", type=int, default=1, metavar="R", help="repetitions of the K folds (default 1)")
    sel.add_argument("--cv-grid", type=int, default=10, metavar="G", help="variances on the grid (default 10)")
    sel.add_argument("--cv-auto", action="store_true", help="refine the best grid variance by golden-section search")
    sel.add_argument("--bootstrap", type=int, metavar="B", help="B bootstrap replicates by subject: percentile "
                                                                "intervals and non-zero proportions")
    sel.add_argument("--seed", type=int, default=0, help="seed of folds and bootstrap samples (default 0)")
    sel.add_argument("--jobs", type=int, default=1, help="threads for replicate fits: cross-validation, bootstrap, "
                                                            "profile-likelihood points (default 1)")
    sel.add_argument("--dask", metavar="ADDRESS", help="run replicate fits on Dask: 'local' for a LocalCluster, "
                                                       "or a scheduler address tcp://host:port")
    sel.add_argument("--plot-dir", metavar="DIR", help="write the cross-validation curve and the forest plot here")
    s = p.add_argument_group("solver and output")
    s.add_argument("--tol", type=float, default=None, help="relative objective change that ends the fit "
                                                            "(default 1e-10; 1e-12 with --spec)")
    s.add_argument("--max-iter", type=int, default=1000, help="cap on coordinate-descent cycles (default 1000)")
    s.add_argument("--backend", choices=["cpu", "gpu"], default="cpu",
                   help="run the fit on the CPU (default) or keep it on a CUDA GPU, where --cv and --bootstrap fit "
                        "all their replicates in one device batch; NUMBA_ENABLE_CUDASIM=1 runs the GPU kernels in "
                        "Numba's simulator")
    s.add_argument("--dtype", choices=["float64", "float32"], default="float64", help="GPU state precision")
    s.add_argument("--profile", metavar="A,B", default="", help="coefficients given profile-likelihood intervals")
    s.add_argument("--out", metavar="FILE", help="write the result: .json (full) or .csv (coefficient table)")
    s.add_argument("--quiet", action="store_true", help="print nothing but errors")
    s.add_argument("--progress", action="store_true", help="show a progress bar over the cycles")


def _add_simulate(sub):
    p = sub.add_parser("simulate", help="write a simulated cohort (the papers' sparse design)",
                       description="Simulate N x P binary covariates at a given density, 80%% of the true "
                                   "coefficients zero, and an outcome; write them as OHDSI long tables into a "
                                   "DuckDB database (.duckdb) or as outcomes.parquet + covariates.parquet "
                                   "into a folder.")
    p.add_argument("--n", type=int, default=100_000, help="rows (default 100000)")
    p.add_argument("--p", type=int, default=1000, help="covariates (default 1000)")
    p.add_argument("--density", type=float, default=0.05, help="share of non-zero covariate values (default 0.05)")
    p.add_argument("--model", default="cox", help="outcome: cox, logistic, poisson, least_squares (default cox)")
    p.add_argument("--seed", type=int, default=0, help="random seed (default 0)")
    p.add_argument("--out", required=True, metavar="PATH", help="DB.duckdb or a folder for Parquet files")


def _add_demo(sub):
    p = sub.add_parser("demo", help="a small cohort study on built-in simulated data",
                       description="Simulate a cohort, store it in a DuckDB file, read it back and fit the "
                                   "study's models; prints the results and writes plots into --out.")
    p.add_argument("--n", type=int, default=20_000, help="patients (default 20000)")
    p.add_argument("--out", default="riskset-demo", metavar="DIR", help="output folder (default riskset-demo)")
    p.add_argument("--seed", type=int, default=1, help="random seed (default 1)")


def main(argv=None) -> int:
    args = build_parser().parse_args(argv)
    from riskset.exceptions import InputError

    try:
        return _COMMANDS[args.command](args)
    except (InputError, FileNotFoundError) as err:
        print(f"riskset {args.command}: error: {err}", file=sys.stderr)
        return 2


def _cmd_fit(args) -> int:
    import riskset
    from riskset.spec import run_spec

    profile = [s for s in args.profile.split(",") if s]
    tol = args.tol if args.tol is not None else (1e-12 if args.spec else 1e-10)
    if args.spec and len(args.spec) > 1:
        return _fit_many_specs(args, tol)
    with warnings.catch_warnings():
        if args.quiet:
            warnings.simplefilter("ignore")
        if args.spec:
            fit = run_spec(args.spec[0], tol=tol, max_iter=args.max_iter, profile=profile, progress=args.progress,
                           n_jobs=args.jobs)
            extra = {}
        else:
            data = _load_data(args)
            options = dict(_parse_option(o) for o in args.option)
            model = riskset.models.get_model(args.model, **options)
            prior, extra = _select(args, data, model, _prior(args))
            fit = riskset.fit(data, model, prior, tol=tol, max_iter=args.max_iter, profile=profile,
                              progress=args.progress, backend=args.backend, dtype=args.dtype, n_jobs=args.jobs)
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
    return 0 if fit.converged else 1


def _fit_many_specs(args, tol) -> int:
    """Several specifications: fit each (threads or Dask) and write one table."""
    import riskset

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        table = riskset.fit_specs(args.spec, executor=_executor(args), n_jobs=args.jobs, progress=not args.quiet,
                                  tol=tol, max_iter=args.max_iter)
    if args.out:
        if args.out.endswith(".csv"):
            table.to_csv(args.out, index=False)
        else:
            table.to_json(args.out, orient="records", indent=2)
    if not args.quiet:
        print(table.to_string(index=False, float_format=lambda v: f"{v:.5g}"))
    return 0 if table["converged"].all() else 1


def _executor(args):
    return None if not args.dask else ("dask" if args.dask == "local" else args.dask)


def _select(args, data, model, prior):
    """Cross-validate the prior and bootstrap the fit as asked; returns (prior, tables)."""
    import os

    import riskset

    common = dict(seed=args.seed, executor=_executor(args), n_jobs=args.jobs, progress=not args.quiet,
                  backend=args.backend, dtype=args.dtype)
    tables = {}
    if args.plot_dir:
        os.makedirs(args.plot_dir, exist_ok=True)
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

        covariates = args.covariates.split(",") if args.covariates else None
        return riskset.from_frame(_read_table(args.data), covariates=covariates, **roles)
    long_roles = {"y": "y", "time": "time", "status": "status", "start": "start", "strata": "stratum",
                  "weights": "weight", "offset": "offset", "exposure": "exposure", "subject": "subject"}
    kw = {long_roles[r]: c for r, c in roles.items()}
    if args.outcomes and args.covariates_file:
        return riskset.from_long(args.outcomes, args.covariates_file, **kw)
    if args.duckdb and args.outcomes_sql and args.covariates_sql:
        return riskset.from_duckdb(args.duckdb, args.outcomes_sql, args.covariates_sql, **kw)
    raise riskset.InputError("no data: give --spec, --data, --outcomes with --covariates-file, "
                             "or --duckdb with --outcomes-sql and --covariates-sql")


def _prior(args):
    import riskset

    exclude = [s for s in args.exclude.split(",") if s]
    if args.prior == "laplace":
        if args.gamma is not None:
            return riskset.Laplace(gamma=args.gamma, exclude=exclude)
        if args.variance is None:
            raise riskset.InputError("--prior laplace needs --gamma or --variance")
        return riskset.Laplace(variance=args.variance, exclude=exclude)
    if args.prior == "normal":
        if args.variance is None:
            raise riskset.InputError("--prior normal needs --variance")
        return riskset.Normal(args.variance, exclude=exclude)
    return riskset.NoPrior()


def _parse_option(text):
    key, sep, value = text.partition("=")
    if not sep:
        raise ValueError(f"--option expects KEY=VALUE, got {text!r}")
    try:
        return key, json.loads(value)
    except json.JSONDecodeError:
        return key, value


def _cmd_simulate(args) -> int:
    import riskset
    from riskset.data.export import write_duckdb, write_parquet

    data = riskset.simulate(n=args.n, p=args.p, density=args.density, model=args.model, seed=args.seed)
    if args.out.endswith(".duckdb"):
        write_duckdb(data, args.out)
        print(f"wrote tables outcomes and covariates ({data.X.nnz} non-zeros) into {args.out}")
    else:
        paths = write_parquet(data, args.out)
        print(f"wrote {paths[0]} and {paths[1]} ({data.X.nnz} non-zeros)")
    return 0


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
