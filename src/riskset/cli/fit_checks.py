"""The checks of ``riskset fit``'s options, made before any data is read or fitted: every option
is applied or refused with a reason (no option is ever ignored)."""
from __future__ import annotations

import argparse
import os

from riskset.arguments import COUNT, ROLE_OPTIONS
from riskset.backend import Backend
from riskset.cli.data_options import check_data_source, is_given, option_value, role_flag
from riskset.cli.output import check_output
from riskset.exceptions import InputError

#: Options that say what a specification says (model, columns, prior): refused with --spec.
SPEC_GIVES = ("--model", "--option", "--prior", "--gamma", "--variance", "--variances", "--means", "--exclude",
              "--penalty", "--max-nonzero", "--best-subset", "--jeffreys-coefs", "--groups", "--group-variance",
              "--fixed",
              "--covariates") + tuple(role_flag(role) for role in ROLE_OPTIONS)

#: Options of the steps and kinds of fit that a sharded fit (--shards: a fit of the rows where
#: they lie, by outer Newton iterations, after --cv and --bootstrap if asked: riskset.selection.
#: sharded_cv, sharded_bootstrap) does not take: refused with --shards, as is --cv-repeats above 1.
SHARDS_REFUSE = ("--spec", "--cv-auto", "--jobs", "--profile", "--approximate", "--approximation", "--bounds",
                 "--profile-loglik", "--points", "--normalize", "--fixed", "--covariate-ref", "--covariate-ref-sql")

#: The priors of a sharded fit (riskset.sharded.fit_sharded).
SHARD_PRIORS = ("none", "laplace", "normal", "elastic_net")


def check_fit_options(args) -> None:
    """Refuse missing, contradictory, unusable or ineffective options before any data is read or fitted."""
    _check_shard_options(args)
    check_data_source(args)
    _check_spec_options(args)
    _check_prior_options(args)
    _check_selection_options(args)
    _check_approximation_options(args)
    _check_backend(Backend.of(args.backend, args.dtype))
    check_output(args.out, "--out", (".json", ".csv"))
    if args.plot_dir:
        try:
            os.makedirs(args.plot_dir, exist_ok=True)
        except OSError as err:
            raise InputError(f"--plot-dir {args.plot_dir!r}: cannot create the folder ({err.strerror})") from None


def _check_spec_options(args) -> None:
    """With --spec: no option that the specification gives; with several, none that needs one fit."""
    if args.spec:
        given = [o for o in SPEC_GIVES if is_given(args, o)]
        if given:
            raise InputError(f"--spec gives the model, the columns and the prior, so {', '.join(given)} cannot be "
                             f"used with it: edit the specification (its format: python -m pydoc riskset.spec), "
                             f"or give the data with --data, --outcomes or --duckdb instead of --spec")
    if args.covariates and not args.data:
        raise InputError("--covariates picks the covariate columns of a wide --data table; long tables "
                         "(--outcomes, --duckdb) use every covariate_id they hold: select them in the file or query")
    if args.spec and len(args.spec) > 1:
        one_fit = [o for o in ("--plot-dir", "--progress") if is_given(args, o)]
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
        if is_given(args, option) and (curve is None or (owner != curve and option != "--bounds")):
            raise InputError(f"{option} sets up {owner} COEF: give it too")
    if curve is None:
        return
    suffix = ".json" if args.approximate else ".csv"
    if not args.out or not args.out.endswith(suffix):
        raise InputError(f"{curve} writes to --out FILE{suffix}, got --out {args.out!r}")
    if args.profile_loglik and bool(args.points) == bool(args.bounds):
        raise InputError("--profile-loglik needs --points A,B,... or --bounds LO,HI (an adaptive grid), one of them")
    steps = [o for o in ("--cv", "--bootstrap", "--profile", "--plot-dir", "--dask") if is_given(args, o)]
    if steps or (args.spec and len(args.spec) > 1):
        raise InputError(f"{curve} profiles one coefficient of one model: "
                         f"{', '.join(steps) or 'several --spec'} cannot be used with it")


def _check_selection_options(args) -> None:
    """Options of cross-validation, bootstrap and parallel fits without the step they belong to."""
    cv_only = [o for o in ("--cv-repeats", "--cv-grid", "--cv-auto", "--cv-early-stop") if is_given(args, o)]
    if cv_only and not args.cv:
        raise InputError(f"{', '.join(cv_only)} set(s) up cross-validation: give --cv K too")
    args.cv_repeats, args.cv_grid = args.cv_repeats or 1, args.cv_grid or 10
    args.cv_early_stop = 2 if args.cv_early_stop is None else args.cv_early_stop
    replicates = bool(args.cv or args.bootstrap)
    several = bool(args.spec and len(args.spec) > 1)
    needs = {"--seed": ("seeds the folds and bootstrap samples", replicates),
             "--plot-dir": ("plots the cross-validation curve and the bootstrap estimates", replicates),
             "--dask": ("runs replicate fits, several --spec analyses or a fit over --shards",
                        replicates or several or bool(args.shards)),
             "--jobs": ("runs replicate fits, profile-likelihood points or several --spec analyses in parallel",
                        replicates or several or bool(args.profile or args.profile_loglik or args.approximate))}
    for option, (role, used) in needs.items():
        if is_given(args, option) and not used:
            raise InputError(f"{option} {role}, and there is none to run: give --cv K or --bootstrap B"
                             + (" (or --profile, or several --spec)" if option == "--jobs" else ""))


def _check_shard_options(args) -> None:
    """--shards: only what a sharded fit does, on a Dask cluster, from files matched by globs
    or from --duckdb queries that pick each shard; ``args.shards`` becomes the number of shards
    with --duckdb."""
    given = [o for o in ("--shard-covariates", "--shard-by") if is_given(args, o)]
    if not args.shards:
        if given:
            raise InputError(f"{', '.join(given)} set(s) up a sharded fit: give --shards too")
        return
    refused = [o for o in SHARDS_REFUSE if is_given(args, o)]
    if args.cv_repeats is not None and args.cv_repeats > 1:
        refused.insert(0, f"--cv-repeats {args.cv_repeats}")
    if args.prior is not None and args.prior not in SHARD_PRIORS:
        refused.append(f"--prior {args.prior}")
    if args.backend != "cpu":
        refused.append(f"--backend {args.backend}")
    if refused:
        raise InputError(f"--shards does not support {', '.join(refused)}: a sharded fit runs on the CPUs of the "
                         f"Dask workers, with a {', '.join(SHARD_PRIORS[1:])} prior or none, and its only other "
                         f"steps are --cv K (one repeat of the folds, on the grid) and --bootstrap B; fit on one "
                         f"machine (without --shards) for the others")
    if not args.dask:
        raise InputError("--shards needs --dask ADDRESS: the Dask scheduler whose workers read and keep the shards "
                         "(tcp://host:8786), or 'local' for a cluster on this machine")
    if args.dask != "local" and "://" not in args.dask:
        raise InputError(f"--dask {args.dask!r}: give a scheduler address such as tcp://host:8786, or 'local'")
    if args.duckdb:
        if args.shard_covariates:
            raise InputError("--shard-covariates names the covariates files of --shards GLOB; with --duckdb each "
                             "shard's covariates come from --covariates-sql")
        try:
            args.shards = COUNT(args.shards)
        except argparse.ArgumentTypeError as err:
            raise InputError(f"--shards {args.shards!r}: with --duckdb, the number of shards: {err}") from None
        for option in ("--outcomes-sql", "--covariates-sql"):
            if option_value(args, option) and "{shard}" not in option_value(args, option):
                raise InputError(f"{option} must pick the rows of one shard with {{shard}} (0 to N-1) and "
                                 f"{{n_shards}} (N): e.g. SELECT * FROM outcomes WHERE row_id % {{n_shards}} = "
                                 f"{{shard}}")
    elif not args.shard_covariates and not (args.data or args.outcomes or args.covariates_file or args.outcomes_sql
                                            or args.covariates_sql):  # another source: check_data_source says
        hint = (f"; with --duckdb, --shards {args.shards} is the number of shards"
                if args.shards.strip().isdigit() else "")
        raise InputError(f"--shards GLOB (the outcomes files) needs --shard-covariates GLOB (the covariates files, "
                         f"one per outcomes file){hint}")


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
    given = [o for o in ("--groups", "--group-variance") if is_given(args, o)]
    if given and prior != "hierarchical":
        raise InputError(f"{', '.join(given)} are options of --prior hierarchical, not --prior {prior}")
    if prior == "hierarchical" and not args.groups:
        raise InputError("--prior hierarchical needs --groups A=G,B=G (each grouped covariate's group)")
    if is_given(args, "--jeffreys-coefs") and prior != "jeffreys":
        raise InputError(f"--jeffreys-coefs is an option of --prior jeffreys, not --prior {prior}")
    if prior == "jeffreys":
        given = [o for o in ("--gamma", "--variance", "--variances", "--means", "--exclude") if is_given(args, o)]
        if given:
            raise InputError(f"--prior jeffreys has no strength and penalizes no coefficient towards 0: "
                             f"{', '.join(given)} do(es) not apply (--jeffreys-coefs names its coefficients)")
    selection = prior in ("bar", "iht")
    given = [o for o in ("--penalty", "--best-subset") if is_given(args, o)]
    if given and not selection:
        raise InputError(f"{', '.join(given)} are options of --prior bar or iht, not --prior {prior}")
    if (args.max_nonzero is not None) != (prior == "iht"):
        raise InputError("--prior iht needs --max-nonzero K" if prior == "iht"
                         else f"--max-nonzero is the K of --prior iht, not of --prior {prior}")
    strengths = [o for o in ("--gamma", "--variance", "--variances", "--means") if is_given(args, o)]
    if selection and strengths:
        raise InputError(f"--prior {prior} sets its own variances: {', '.join(strengths)} do(es) not apply")
    if prior == "none" and not args.spec:
        penalty_options = [o for o in ("--variance", "--variances", "--means", "--exclude", "--cv")
                           if is_given(args, o)]
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


