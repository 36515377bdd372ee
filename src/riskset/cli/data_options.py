"""The data options that ``riskset fit`` and ``riskset study`` share: where the data come from
(a wide table, OHDSI long tables, DuckDB queries) and which column holds each role; their
checks, and the data set they name."""
from __future__ import annotations

import os

from riskset.arguments import ROLE_OPTIONS
from riskset.exceptions import InputError

#: What a role's column holds, where its name does not say it.
ROLE_HELP = {"censor_weights": "Fine-Gray censoring weights G(T-) in [0, 1] (Cyclops' censorWeights; default: "
                               "the Kaplan-Meier estimate)"}


def role_flag(role: str) -> str:
    """The command-line option of a column role: ``censor_weights`` -> ``--censor-weights``."""
    return "--" + role.replace("_", "-")


def add_data_options(p):
    """Add the data sources and the column roles to the command parser ``p``; returns the "data" group."""
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
        roles.add_argument(role_flag(role), dest=role, metavar="COLUMN",
                           help=f"column holding the {ROLE_HELP.get(role, role)}")
    roles.add_argument("--covariates", metavar="A,B,...", help="covariate columns (default: all other columns)")
    return src


def option_value(args, option: str):
    """The value of ``--some-option`` in the parsed ``args``."""
    return getattr(args, option[2:].replace("-", "_"))


def is_given(args, option: str) -> bool:
    """Whether ``option`` was given a value (a flag set, a list or text not empty)."""
    value = option_value(args, option)
    return value is not None and value is not False and value != "" and value != []


def listed_names(text) -> list[str]:
    """The names of an ``A,B,...`` option, blanks dropped."""
    return [s.strip() for s in (text or "").split(",") if s.strip()]


def check_data_source(args) -> None:
    """Exactly one source of data, with its partner options, and its input files present."""
    duckdb = args.duckdb or args.outcomes_sql or args.covariates_sql
    shards = getattr(args, "shards", None)  # riskset fit's sharded files (with --duckdb: the number of shards)
    sources = {"--spec": args.spec, "--data": args.data,
               "--outcomes/--covariates-file": args.outcomes or args.covariates_file,
               "--duckdb": duckdb, "--shards": shards and not duckdb}
    chosen = [name for name, value in sources.items() if value]
    if not chosen:
        sharded = ", --shards with --shard-covariates" if hasattr(args, "shards") else ""
        raise InputError(f"no data: give --spec, --data, --outcomes with --covariates-file{sharded}, "
                         "or --duckdb with --outcomes-sql and --covariates-sql")
    if len(chosen) > 1:
        raise InputError(f"give one source of data, not {' and '.join(chosen)}")
    needs = {"--outcomes": ("--covariates-file",), "--covariates-file": ("--outcomes",),
             "--duckdb": ("--outcomes-sql", "--covariates-sql"), "--outcomes-sql": ("--duckdb", "--covariates-sql"),
             "--covariates-sql": ("--duckdb", "--outcomes-sql")}
    for option, partners in needs.items():
        missing = [p for p in partners if not option_value(args, p)]
        if option_value(args, option) and missing:
            raise InputError(f"{option} needs {' and '.join(missing)}")
    for option in ("--data", "--outcomes", "--covariates-file", "--duckdb"):
        check_input(option_value(args, option), option)
    for path in args.spec or ():
        check_input(path, "--spec")


def check_input(path, option) -> None:
    if path and not os.path.exists(path):
        raise InputError(f"{option} {path!r}: the file does not exist")


def role_columns(args) -> dict:
    """The column roles given (``--strata``, ``--weights``, ``--time`` ...) as the keyword arguments
    of :func:`riskset.from_frame`, :func:`riskset.from_long` and :func:`riskset.from_duckdb`."""
    return {r: getattr(args, r) for r in ROLE_OPTIONS if getattr(args, r)}


def load_data(args, table=None, progress: bool = False):
    """The Dataset the data options name; ``table`` is the --data table when it is already read;
    ``progress``: a bar over the covariate rows of long tables (--outcomes, --duckdb)."""
    import riskset

    roles = role_columns(args)
    if args.covariate_ref_sql and not args.duckdb:
        raise InputError("--covariate-ref-sql queries the --duckdb database; give --covariate-ref FILE otherwise")
    if args.data:
        from riskset.data.ingest import _read_table

        return riskset.from_frame(_read_table(args.data) if table is None else table,
                                  covariates=listed_names(args.covariates) or None,
                                  covariate_ref=args.covariate_ref, **roles)
    if args.outcomes:
        return riskset.from_long(args.outcomes, args.covariates_file, covariate_ref=args.covariate_ref,
                                 progress=progress, **roles)
    return riskset.from_duckdb(args.duckdb, args.outcomes_sql, args.covariates_sql, covariate_ref=args.covariate_ref,
                               covariate_ref_sql=args.covariate_ref_sql, progress=progress, **roles)


def describe_source(args) -> str:
    """The data options, as an error message names them."""
    if args.data:
        return f"--data {args.data!r}"
    if args.outcomes:
        return f"--outcomes {args.outcomes!r} / --covariates-file {args.covariates_file!r}"
    return f"--duckdb {args.duckdb!r} queries"
