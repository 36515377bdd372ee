"""``riskset ode``: batch ODE integration from the command line.

Wiring into a parent CLI::

    from riskset.ode.cli import add_parser, main
    sub = parser.add_subparsers(dest="command")
    add_parser(sub)            # adds "ode"; sets func=main on its namespace
    args = parser.parse_args()
    sys.exit(args.func(args))  # or main(args) -> int exit code
"""

import argparse
import json
import os
import sys
import textwrap

import numpy as np

from riskset.arguments import COUNT, POSITIVE

DESCRIPTION = """\
Integrate one small ODE model for many parameter sets at once
(Dormand-Prince 5(4) with scipy RK45's error control and dense output; all
CPU cores via numba, or a CUDA GPU with one task per thread).

Two ways to describe the batch:

  1. A table of tasks:  --model seir|pk --params FILE --times A:B:STEP
     FILE is CSV or Parquet with one row per task and one column per
     parameter and per initial state (an optional 'set' column labels the
     tasks; default 1..n).
       seir: parameters beta, sigma, gamma (per day); states S, E, I, R
             dS=-beta*S*I/N, dE=beta*S*I/N-sigma*E, dI=sigma*E-gamma*I,
             dR=gamma*I, N=S+E+I+R
       pk:   two-compartment TMDD model; parameters kel, kcp, kpc, Vc, kon,
             koff, kint, ksyn, kdeg; states C, AP, R, RC

  2. A JSON specification:  --spec case.json
     with "system" (seir|pk), "parameter_sets" (list of {"set",
     "parameters": {name: value}, "initial": {state: value}}), "times"
     ({"from", "to", "by"} or a list) and optionally "solver" ({"rtol",
     "atol"}); command-line --rtol/--atol override the file.

The output (--out, .parquet or .csv) is a tidy table with columns
set, t and one column per state.
"""

EPILOG = """\
examples:
  riskset ode --model seir --params sets.csv --times 0:365:1 \\
      --rtol 1e-8 --atol 1e-8 --out seir.parquet --plot I.png
  riskset ode --spec case.json --out solution.csv
  riskset ode --model pk --params pk.parquet --times 0:672:4 --backend gpu \\
      --out pk.parquet

exit status: 0 all tasks succeeded; 1 some tasks failed (their rows are
NaN after the failure; see the per-task summary); 2 bad usage or input
(one line 'riskset ode: error: ...'); 3 internal error (a bug: rerun
with --debug for the traceback).
Task status codes: 0 success, 1 max steps reached, 2 step size underflow,
3 non-finite parameters or initial state.
"""


def add_parser(subparsers, name="ode"):
    """Add the ``ode`` subcommand to an argparse ``subparsers`` object."""
    p = subparsers.add_parser(
        name, help="integrate an ODE model for many parameter sets",
        description=DESCRIPTION, epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter)
    _add_arguments(p)
    p.set_defaults(func=main)
    return p


def _add_arguments(p):
    src = p.add_argument_group("what to integrate")
    src.add_argument("--model", choices=["seir", "pk"],
                     help="built-in model (with --params)")
    src.add_argument("--params", metavar="FILE",
                     help="CSV/Parquet table, one row per task: parameter "
                     "and initial-state columns (+ optional 'set')")
    src.add_argument("--times", metavar="A:B:STEP",
                     help="output times: A to B inclusive by STEP (e.g. "
                     "0:365:1), or a comma-separated list (0,1,7,30)")
    src.add_argument("--spec", metavar="FILE",
                     help="JSON specification (system, parameter_sets, "
                     "times, solver); replaces --model/--params/--times")
    sol = p.add_argument_group("solver")
    sol.add_argument("--rtol", type=POSITIVE, default=None,
                     help="relative tolerance (default 1e-6, or the spec's)")
    sol.add_argument("--atol", type=POSITIVE, default=None,
                     help="absolute tolerance (default 1e-6, or the spec's)")
    sol.add_argument("--backend", choices=["cpu", "gpu"], default="cpu",
                     help="cpu: numba prange over all cores (default); "
                     "gpu: numba-CUDA, one task per thread")
    sol.add_argument("--max-steps", type=COUNT, default=100_000,
                     help="max attempted steps per task (default 100000)")
    sol.add_argument("--bundle", dest="bundle", action="store_true",
                     default=None, help="sort tasks by predicted step "
                     "count (default: on for gpu, off for cpu)")
    sol.add_argument("--no-bundle", dest="bundle", action="store_false",
                     help="keep the input order")
    out = p.add_argument_group("output")
    out.add_argument("--out", metavar="OUT", required=False,
                     help="output table, .parquet or .csv (set, t, states)")
    out.add_argument("--plot", metavar="PNG",
                     help="write a fan chart (5-95%% and 25-75%% bands and "
                     "median over tasks) of one state")
    out.add_argument("--plot-state", metavar="NAME",
                     help="state for --plot (default I for seir, C for pk)")
    out.add_argument("--quiet", action="store_true",
                     help="no progress bar or summary")


class InputError(ValueError):
    pass


def parse_times(text):
    """``"A:B:STEP"`` (inclusive of B) or ``"t1,t2,..."`` -> float array."""
    text = str(text).strip()
    try:
        if ":" in text:
            parts = [float(x) for x in text.split(":")]
            if len(parts) == 2:
                parts.append(1.0)
            if len(parts) != 3:
                raise ValueError
            a, b, step = parts
            return seq_times(a, b, step)
        return np.array([float(x) for x in text.split(",") if x.strip()])
    except InputError as err:  # a well-formed but impossible range: keep its reason
        raise InputError(f"--times {text!r}: {err}") from None
    except ValueError:
        raise InputError(
            f"--times: cannot parse {text!r}; use A:B:STEP (e.g. 0:365:1) "
            "or a comma-separated list") from None


def seq_times(a, b, step):
    """R's ``seq(a, b, by=step)``: a, a+step, ... up to b (inclusive)."""
    if not step > 0:
        raise InputError(f"time step must be > 0, got {step}")
    if b < a:
        raise InputError(f"times: end {b} is before start {a}")
    k = int(np.floor((b - a) / step + 1e-9))
    t = a + step * np.arange(k + 1)
    return t


def _read_table(path):
    import pandas as pd

    ext = os.path.splitext(path)[1].lower()
    if ext in (".parquet", ".pq"):
        return pd.read_parquet(path)
    if ext in (".csv", ".txt", ""):
        return pd.read_csv(path)
    raise InputError(f"--params: unsupported file type {ext!r} "
                     "(use .csv or .parquet)")


def _write_table(df, path):
    ext = os.path.splitext(path)[1].lower()
    d = os.path.dirname(os.path.abspath(path))
    os.makedirs(d, exist_ok=True)
    if ext in (".parquet", ".pq"):
        df.to_parquet(path, index=False)
    elif ext == ".csv":
        df.to_csv(path, index=False, float_format="%.17g")
    else:
        raise InputError(f"--out: unsupported file type {ext!r} "
                         "(use .parquet or .csv)")


def load_spec(path):
    """Read a JSON spec -> (model, params DataFrame, times, rtol, atol)."""
    import pandas as pd

    from .models import get_model

    with open(path) as fh:
        spec = json.load(fh)
    system = spec.get("system")
    if system is None:
        raise InputError(f"{path}: no 'system' (seir or pk)")
    try:
        model = get_model(system)
    except ValueError as exc:
        raise InputError(f"{path}: {exc}") from None
    sets = spec.get("parameter_sets")
    if not sets:
        raise InputError(f"{path}: no 'parameter_sets'")
    rows = []
    for k, ps in enumerate(sets):
        row = {"set": ps.get("set", k + 1)}
        row.update(ps.get("parameters", {}))
        row.update(ps.get("initial", {}))
        rows.append(row)
    df = pd.DataFrame(rows)
    times = spec.get("times")
    if isinstance(times, dict):
        t = seq_times(float(times["from"]), float(times["to"]),
                      float(times.get("by", 1.0)))
    elif isinstance(times, list):
        t = np.asarray(times, float)
    else:
        raise InputError(f"{path}: 'times' must be {{from, to, by}} or a list")
    solver = spec.get("solver", {}) or {}
    return model, df, t, solver.get("rtol"), solver.get("atol")


def main(args):
    """Run the ``ode`` subcommand; returns the exit status."""
    from .solve import solve_batch

    err = sys.stderr
    try:
        if args.spec:
            if args.params or args.model or args.times:
                raise InputError("--spec replaces --model/--params/--times; "
                                 "give one or the other")
            model, table, t, s_rtol, s_atol = load_spec(args.spec)
        else:
            missing = [o for o, v in (("--model", args.model),
                                      ("--params", args.params),
                                      ("--times", args.times)) if not v]
            if missing:
                raise InputError(
                    f"missing {', '.join(missing)} (or use --spec FILE)")
            from .models import get_model

            model = get_model(args.model)
            table = _read_table(args.params)
            t = parse_times(args.times)
            s_rtol = s_atol = None
            if "set" not in table.columns:
                table = table.copy()
                table.insert(0, "set", np.arange(1, len(table) + 1))
        if not args.out and not args.plot:
            raise InputError("nothing to write: give --out and/or --plot")
        rtol = args.rtol if args.rtol is not None else (
            s_rtol if s_rtol is not None else 1e-6)
        atol = args.atol if args.atol is not None else (
            s_atol if s_atol is not None else 1e-6)
        res = solve_batch(model, table, None, t, rtol=rtol, atol=atol,
                          backend=args.backend, bundle=args.bundle,
                          max_steps=args.max_steps,
                          progress=not args.quiet)
    except (InputError, ValueError, OSError, KeyError) as exc:
        print(f"riskset ode: error: {exc}", file=err)
        return 2
    except RuntimeError as exc:  # e.g. no GPU
        print(f"riskset ode: error: {exc}", file=err)
        return 2
    try:
        if args.out:
            _write_table(res.to_frame(), args.out)
        if args.plot:
            default_state = {"seir": "I", "pk": "C"}.get(
                res.model_name, res.state_names[0])
            state = args.plot_state or default_state
            res.fan_chart(state, path=args.plot)
    except (InputError, OSError, KeyError, ValueError) as exc:
        print(f"riskset ode: error: {exc}", file=err)
        return 2
    n_fail = int(np.sum(~res.success))
    if not args.quiet:
        print(f"riskset ode: {res.n_tasks} task(s), model {res.model_name}, "
              f"{len(res.t)} output times, backend {res.backend}, "
              f"{res.elapsed:.2f} s; mean accepted steps "
              f"{np.mean(res.n_accepted):.1f}", file=err)
        if res.bundling is not None:
            print("riskset ode: " + res.bundling.summary(), file=err)
    if n_fail:
        bad = res.stats_frame()[~res.success]
        print(textwrap.indent(
            f"{n_fail} task(s) did not succeed:\n"
            + bad.head(20).to_string(index=False), "riskset ode: "),
            file=err)
        return 1
    return 0
