"""``riskset sccs``: a self-controlled case series from observation, exposure and outcome
tables (files or DuckDB) into a folder (:func:`riskset.study.case_series`)."""
from __future__ import annotations

import argparse
import re

from riskset.arguments import COUNT, FOLDS, LEVEL, POSITIVE, SEED, bounded
from riskset.exceptions import InputError
from riskset.solver.prior import Laplace
from riskset.study.case_series import COLUMNS, case_series

TABLES = ("observation", "exposures", "outcomes")
KNOTS = bounded(int, 0)


def add_parser(sub) -> None:
    """Add the ``sccs`` command to the subcommands ``sub``."""
    p = sub.add_parser(
        "sccs", help="a self-controlled case series from observation, exposure and outcome tables",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        description="A self-controlled case series, as OHDSI's SelfControlledCaseSeries runs one: every person\n"
                    "with an outcome in their observation period is a case; their time is cut into eras at every\n"
                    "change of exposure (risk windows, optional pre-exposure windows) and calendar month; age and\n"
                    "season enter as splines (5 knots each by default); the conditional Poisson model gives each\n"
                    "drug's incidence rate ratio with a profile-likelihood interval.\n\n"
                    "Tables (CSV or Parquet files, or with --duckdb a table name or a query):\n"
                    "  observation  person_id, start, end, birth   (one period per person)\n"
                    "  exposures    person_id, drug, start, end    (exposure eras)\n"
                    "  outcomes     person_id, date\n"
                    "Dates are dates (or days since 1970-01-01); other column names with --columns.\n\n"
                    "Writes into --out: estimates.csv, model.csv, attrition.csv, season.csv, age.csv, irr.png,\n"
                    "time_effects.png and summary.txt.",
        epilog="Examples:\n"
               "  riskset simulate --model sccs --n 20000 --out sccs/\n"
               "  riskset sccs --observation sccs/observation.csv --exposures sccs/exposures.csv \\\n"
               "               --outcomes sccs/outcomes.csv --pre-exposure 30 --out sccs_study/\n"
               "  riskset sccs --duckdb cdm.duckdb --observation observation_period --exposures 'SELECT ...' \\\n"
               "               --outcomes 'SELECT ...' --columns birth=birth_date --out sccs_study/\n\n"
               "exit status: 0 success; 1 the fit did not converge (the results are still written);\n"
               "2 bad usage or input (one line 'riskset sccs: error: ...').")
    t = p.add_argument_group("tables")
    for name in TABLES:
        t.add_argument(f"--{name}", required=True, metavar="FILE|SQL", help=f"the {name} table")
    t.add_argument("--duckdb", metavar="DB", help="DuckDB database the table options query (a name or SQL)")
    t.add_argument("--columns", metavar="ROLE=NAME,...",
                   help=f"column names for the roles {', '.join(COLUMNS)} (defaults: "
                        f"{', '.join(f'{k}={v}' for k, v in COLUMNS.items())})")
    d = p.add_argument_group("design")
    d.add_argument("--risk-window", default="0,0", metavar="START,END",
                   help="risk window [exposure start + START, exposure ANCHOR + END) (default 0,0: the era; "
                        "a negative START as --risk-window=-7,0)")
    d.add_argument("--anchor", choices=("start", "end"), default="end", help="what END counts from (default end)")
    d.add_argument("--pre-exposure", type=POSITIVE, metavar="DAYS", help="a pre-exposure window of DAYS before "
                                                                         "every exposure (default none)")
    d.add_argument("--inclusive-end", action="store_true", help="end dates are inclusive days (OMOP eras)")
    d.add_argument("--age-knots", type=KNOTS, default=5, metavar="N",
                   help="age spline knots (default 5; 0: no age term)")
    d.add_argument("--season-knots", type=KNOTS, default=5, metavar="N",
                   help="season spline knots (default 5; 0: no season)")
    m = p.add_argument_group("model")
    m.add_argument("--interest", metavar="A,B,...", help="exposure columns of interest: unpenalized, with profile "
                                                         "intervals (default every exposure)")
    m.add_argument("--variance", type=POSITIVE, help="L1 prior variance on the other exposures")
    m.add_argument("--cv", action="store_true", help="cross-validate that variance (--folds x --repeats)")
    m.add_argument("--folds", type=FOLDS, default=10, help="cross-validation folds (default 10)")
    m.add_argument("--repeats", type=COUNT, default=10, help="cross-validation repetitions (default 10)")
    m.add_argument("--level", type=LEVEL, default=0.95, help="interval level (default 0.95)")
    m.add_argument("--seed", type=SEED, default=1, help="random seed of the cross-validation (default 1)")
    m.add_argument("--jobs", type=COUNT, help="CPU threads (default: every core this process may use)")
    p.add_argument("--out", required=True, metavar="DIR", help="folder for the tables, plots and summary")
    p.add_argument("--quiet", action="store_true", help="no progress bar and no summary on the screen")
    p.set_defaults(func=main)


def main(args) -> int:
    """Run ``riskset sccs``; returns the exit status."""
    if args.variance is not None and args.cv:
        raise InputError("--variance and --cv both set the prior variance; give one")
    if (args.folds != 10 or args.repeats != 10) and not args.cv:
        raise InputError("--folds and --repeats apply to --cv")
    if (args.variance is not None or args.cv) and not args.interest:
        raise InputError("a prior needs exposures to penalize: name the exposures of interest with --interest "
                         "(they stay unpenalized)")
    tables = {name: _table(getattr(args, name), args.duckdb, f"--{name}") for name in TABLES}
    study = case_series(**tables, risk_window=_pair(args.risk_window), anchor=args.anchor,
                        pre_exposure=args.pre_exposure, inclusive_end=args.inclusive_end,
                        age_knots=args.age_knots or None, season_knots=args.season_knots or None,
                        columns=_columns(args.columns),
                        prior=None if args.variance is None else Laplace(variance=args.variance),
                        cv=dict(n_folds=args.folds, n_repeats=args.repeats, auto=True, seed=args.seed)
                        if args.cv else None,
                        exposures_of_interest=args.interest.split(",") if args.interest else None,
                        level=args.level, n_jobs=args.jobs, progress=not args.quiet)
    written = study.save(args.out)
    if not args.quiet:
        print(study.summary())
        print(f"\nwrote {len(written)} files into {args.out}")
    return 0 if study.fit.converged else 1


def _table(source: str, database: str | None, option: str):
    """A table from a file, or from the DuckDB database: a table name or a query."""
    from riskset.data.ingest import _read_table, _to_pandas

    if database is None:
        return _to_pandas(_read_table(source))
    import duckdb

    sql = f'SELECT * FROM "{source}"' if re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", source) else source
    try:
        with duckdb.connect(database, read_only=True) as con:
            return con.sql(sql).df()
    except duckdb.Error as err:
        raise InputError(f"{option}: {sql!r} failed on {database!r}: {err}") from None


def _pair(text: str) -> tuple[float, float]:
    try:
        start, end = (float(v) for v in text.split(","))
    except ValueError:
        raise InputError(f"--risk-window takes two numbers START,END, got {text!r}") from None
    return start, end


def _columns(text: str | None) -> dict:
    if not text:
        return {}
    pairs = [item.split("=", 1) for item in text.split(",")]
    if any(len(p) != 2 or not p[0] or not p[1] for p in pairs):
        raise InputError(f"--columns takes ROLE=NAME pairs separated by commas, got {text!r}")
    return dict(pairs)
