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

Each command is a module with ``add_parser(sub)``, which adds the command to the subcommands
``sub`` and sets ``func`` to its ``main(args)``, the command run on the parsed options:
:mod:`~riskset.cli.fit` (its checks in :mod:`~riskset.cli.fit_checks`, what its options build in
:mod:`~riskset.cli.fit_inputs`, the data options it shares with ``study`` in
:mod:`~riskset.cli.data_options`, its files in :mod:`~riskset.cli.output`),
:mod:`~riskset.cli.simulate`, :mod:`~riskset.cli.demo`, :mod:`~riskset.cli.info`,
:mod:`~riskset.cli.pool`, :mod:`~riskset.cli.study`, :mod:`~riskset.cli.sccs` and
:mod:`riskset.ode.cli` (the ODE subsystem's command). How they report is
:mod:`~riskset.cli.reporting`.
"""
from __future__ import annotations

import argparse
import difflib
import sys

from riskset import __version__
from riskset.arguments import Parser, UsageError
from riskset.cli import demo, fit, info, pool, sccs, simulate, study
from riskset.cli.reporting import EXIT_INTERRUPTED, EXIT_STATUS_HELP, one_line_warnings, report_error
from riskset.ode import cli as ode

#: Options whose value is a glob the shell would expand (riskset fit's sharded files).
GLOB_OPTIONS = ("--shards", "--shard-covariates")

#: The commands, in the order ``riskset --help`` lists them.
COMMANDS = (fit, simulate, demo, info, pool, study, sccs, ode)


def build_parser() -> Parser:
    parser = Parser(
        prog="riskset", formatter_class=argparse.RawDescriptionHelpFormatter,
        description="Regularized survival and regression models for massive observational health data.",
        epilog="Run 'riskset COMMAND --help' for the options of a command.\n\n" + EXIT_STATUS_HELP)
    parser.add_argument("--version", action="version", version=f"riskset {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for command in COMMANDS:
        command.add_parser(sub)
    for command in sub.choices.values():
        command.add_argument("--debug", action="store_true",
                             help="on an internal error, show the Python traceback (for a bug report)")
    parser.commands = sub.choices
    return parser


def main(argv=None) -> int:
    """Run one command; returns the exit status (see the module docstring). ``--help`` exits as usual.

    >>> main(["fit", "--jobs", "0"])  # prints: riskset fit: error: argument --jobs: must be ... --help)
    2
    """
    parser = build_parser()
    try:
        args = _parse(parser, argv)
    except UsageError as err:
        return report_error(err.prog, err, debug=False)
    prog = f"riskset {args.command}"
    try:
        with one_line_warnings(prog):
            return args.func(args)
    except KeyboardInterrupt:
        print(f"{prog}: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    except Exception as err:  # the one place where exceptions become the one-line report
        return report_error(prog, err, debug=args.debug)


def _parse(parser: Parser, argv) -> argparse.Namespace:
    """Parse, refusing unknown options with the command's name and a guess at the intended one."""
    args, unknown = parser.parse_known_args(argv)
    if unknown:
        command = parser.commands[args.command]
        guesses = [g for u in unknown if u.startswith("-")
                   for g in difflib.get_close_matches(u.split("=")[0], command.option_strings(), n=1)]
        hint = f" (did you mean {', '.join(guesses)}?)" if guesses else ""
        given = sys.argv[1:] if argv is None else argv
        if any(not u.startswith("-") for u in unknown) and any(a.split("=")[0] in GLOB_OPTIONS for a in given):
            hint += (f" (quote the globs of {' and '.join(GLOB_OPTIONS)}, 'cohort/outcomes-*.parquet', so that the "
                     "shell does not expand them into many files)")
        command.error(f"unrecognized arguments: {' '.join(unknown)}{hint}")
    return args


