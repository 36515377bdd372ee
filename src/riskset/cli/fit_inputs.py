"""What the options of ``riskset fit`` build: the data set, the model, the prior and the fixed
coefficients of the analysis, and the keyword arguments of its steps; with the parsers of the
option values that argparse does not check (``NAME=VALUE`` lists, ``LO,HI`` bounds)."""
from __future__ import annotations

import argparse
import contextlib
import json
import os

from riskset.arguments import NUMBER, POSITIVE
from riskset.cli.data_options import describe_source, listed_names, load_data, role_columns
from riskset.cli.reporting import one_line, reader_errors
from riskset.exceptions import InputError


def analysis_inputs(args):
    """(dataset, model, prior, fixed coefficients) from the specification, or from the data
    and the model and prior options."""
    if args.spec:
        from riskset.spec import analysis_from_spec, load_spec, spec_fixed

        spec, frame = load_spec(args.spec[0])
        return *analysis_from_spec(spec, frame, args.spec[0]), spec_fixed(spec, args.spec[0])
    try:
        data = load_data(args, progress=args.progress)
    except reader_errors() as err:  # the reader's message does not say which input it was reading
        raise InputError(f"{describe_source(args)}: {one_line(err)}") from err
    fixed = dict(parse_assignment("--fixed", "VALUE", v, NUMBER) for v in listed_names(args.fixed))
    return data, _model(args.model or "logistic", args.option), _prior(args), fixed


def sharded_inputs(args):
    """(sharded data, model, prior) of a fit over --shards: one shard per pair of files matched
    by the globs, or per value of {shard} in the --duckdb queries; the column roles go to
    :func:`riskset.from_long` on each worker. Paths are made absolute (the workers read them)."""
    from riskset.sharded import duckdb_shards, parquet_shards

    roles = role_columns(args)
    if args.duckdb:
        data = duckdb_shards(os.path.abspath(args.duckdb), args.outcomes_sql, args.covariates_sql, args.shards,
                             by=args.shard_by or "row", **roles)
    else:
        data = parquet_shards(os.path.abspath(args.shards), os.path.abspath(args.shard_covariates),
                              by=args.shard_by or "row", **roles)
    return data, _model(args.model or "logistic", args.option), _prior(args)


@contextlib.contextmanager
def dask_client(address: str, n_workers: int):
    """A Dask client of the scheduler at ``address``, or with ``"local"`` of a LocalCluster on this
    machine (worker processes of one thread each, at most ``n_workers`` and the usable cores),
    closed when the block ends."""
    try:
        from distributed import Client, LocalCluster
    except ImportError:
        raise InputError("--dask needs Dask: pip install 'riskset[dask]'") from None
    if address != "local":
        try:
            client = Client(address)
        except OSError as err:  # refused, timed out, unknown host
            raise InputError(f"--dask {address!r}: cannot reach the scheduler ({err})") from None
        with client:
            yield client
        return
    from riskset.cores import resolve_jobs

    # no dashboard; the scheduler's HTTP server on a free loopback port (not 8787, which another cluster may hold)
    with LocalCluster(n_workers=max(1, min(n_workers, resolve_jobs(None))), processes=True, threads_per_worker=1,
                      dashboard_address=None, scheduler_kwargs={"dashboard": False, "dashboard_address": "127.0.0.1:0"}
                      ) as cluster, Client(cluster) as client:
        yield client


def cv_options(args) -> dict | None:
    """Keyword arguments of riskset.cross_validate from --cv K and its options; None without --cv."""
    return dict(n_folds=args.cv, n_repeats=args.cv_repeats, n_grid=args.cv_grid, auto=args.cv_auto,
                early_stop=args.cv_early_stop or None) if args.cv else None


def analysis_options(args, tol) -> dict:
    """Keyword arguments of riskset.selection.analyses.analyse shared by every way of fitting."""
    cv = cv_options(args)
    if cv is not None and args.group_variance is not None:  # a hierarchical prior's group variance, held
        cv["group_variances"] = [args.group_variance]
    return dict(cv=cv, n_boot=args.bootstrap, seed=args.seed or 0, n_jobs=args.jobs, tol=tol,
                max_iter=args.max_iter, profile=listed_names(args.profile), level=args.level, backend=args.backend,
                dtype=args.dtype, **({"normalize": args.normalize} if args.normalize else {}))


def executor(args):
    """Where replicate fits run: None (threads), "dask" (a LocalCluster) or a scheduler address."""
    return None if not args.dask else ("dask" if args.dask == "local" else args.dask)


def check_known(option, names, known) -> None:
    unknown = [n for n in names if n not in known]
    if unknown:
        shown = ", ".join(known[:20]) + (", ..." if len(known) > 20 else "")
        raise InputError(f"{option} names unknown coefficient(s) {', '.join(map(repr, unknown))}; "
                         f"the model's coefficients are: {shown}")


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

    exclude = listed_names(args.exclude)
    variances = dict(parse_assignment("--variances", "VARIANCE", v, POSITIVE) for v in listed_names(args.variances))
    means = dict(parse_assignment("--means", "MEAN", v, NUMBER) for v in listed_names(args.means))
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
        return riskset.Jeffreys(listed_names(args.jeffreys_coefs))
    if args.prior == "hierarchical":
        groups = dict(parse_assignment("--groups", "GROUP", g, str) for g in listed_names(args.groups))
        if variance is None:
            raise InputError("--prior hierarchical needs --variance (or --cv K to choose it)")
        return riskset.Hierarchical(variance, 1.0 if args.group_variance is None else args.group_variance,
                                    groups=groups, exclude=exclude)
    if args.prior in ("bar", "iht"):
        penalty = "bic" if args.penalty in (None, "bic") else parse_number("--penalty", args.penalty)
        if args.prior == "iht":
            return riskset.IHT(args.max_nonzero, penalty, exclude=exclude, fit_best_subset=args.best_subset)
        return riskset.BAR(penalty, exclude=exclude, fit_best_subset=args.best_subset)
    return riskset.NoPrior()


def parse_assignment(option, what, text, convert):
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


def parse_number(option: str, text: str) -> float:
    try:
        return NUMBER(text)
    except argparse.ArgumentTypeError as err:
        raise InputError(f"{option} {text!r}: {err}") from None


def parse_bounds(text: str) -> tuple[float, float]:
    parts = text.split(",")
    try:
        lo, hi = (NUMBER(v) for v in parts) if len(parts) == 2 else (None, None)
    except argparse.ArgumentTypeError:
        lo = hi = None
    if lo is None or not lo < hi:
        raise InputError(f"--bounds expects LO,HI with LO < HI (the range of the coefficient, e.g. "
                         f"-2.3026,2.3026 for hazard ratios 0.1 to 10), got {text!r}")
    return lo, hi
