"""One fit: ``riskset.fit``, and the fit of a case.json specification (:mod:`riskset.spec`)."""
from __future__ import annotations

import time
import warnings
from dataclasses import dataclass, replace
from typing import Any, cast

import numpy as np
import pandas as pd

from riskset.backend import Backend, fit_work
from riskset.data.dataset import Dataset, check_dataset, first_names
from riskset.data.hierarchy import GROUP_PREFIX, with_group_columns
from riskset.data.normalize import normalized
from riskset.exceptions import ConvergenceWarning, DataWarning, InputError
from riskset.robust import robust_se
from riskset.inference import CREEP_REACH, creeping, refit_without_aliased, standard_errors
from riskset.profile_likelihood import profile_intervals
from riskset.progress import preparing
from riskset import validation as check
from riskset.models.base import Model, as_model
from riskset.results import FitResult, coef_labels, fit_roles
from riskset.solver.ccd import SolverOptions, fit_ccd
from riskset.solver.prior import AdaptiveRidge, HierarchicalPrior, JeffreysPrior, Prior, as_prior
from riskset.sharded import ShardedData, fit_sharded
from riskset.sharded.sources import refuse_options
from riskset.spec import analysis_from_spec, load_spec, spec_fixed
from riskset.core.memory import returns_freed_memory

#: Any riskset prior, as :func:`fit` takes it: Laplace, Normal, elastic net (:class:`Prior`),
#: BAR and IHT, Jeffreys, hierarchical.
AnyPrior = Prior | AdaptiveRidge | JeffreysPrior | HierarchicalPrior


@returns_freed_memory
def fit(data: Dataset, model: str | Model = "logistic", prior: AnyPrior | None = None, *, tol: float = 1e-10,
        kkt_tol: float = 1e-4, max_iter: int = 1000, warm_start=None, fixed=None, profile=(), level: float = 0.95,
        progress: bool = False, backend: str = "cpu", dtype: str = "float64", n_jobs: int | None = None,
        normalize: str | None = None, executor=None, **model_options) -> FitResult:
    """Fit a penalized regression model by cyclic coordinate descent.

    Parameters
    ----------
    data : Dataset or ShardedData
        From :func:`riskset.from_frame`, :func:`riskset.from_long`,
        :func:`riskset.from_duckdb` or :func:`riskset.from_arrays`; or rows split over Dask
        workers (:mod:`riskset.sharded`: :func:`~riskset.sharded.split`,
        :func:`~riskset.sharded.parquet_shards`, :func:`~riskset.sharded.duckdb_shards`), fitted
        where they are by outer Newton iterations (:func:`riskset.sharded.fit_sharded`, which
        lists the options it takes) on the Dask client or scheduler address ``executor``.
    model : str or Model
        A registered model name ('logistic', 'poisson', 'least_squares', 'cox', ...)
        or a configured model instance; ``model_options`` go to its constructor.
    prior : Prior, optional
        ``riskset.Laplace(gamma=...)``, ``riskset.Normal(variance=...)``, ...; no
        penalty by default.
    tol, kkt_tol, max_iter : stopping rule. After a full sweep whose relative change of the
        objective is below ``tol``, the fit has converged when its largest violation of the
        optimality (KKT) conditions, relative to the largest L1 rate (without an L1 prior,
        in standard errors: over sqrt(I_jj + l2_j)), is at most ``kkt_tol`` (reported as
        ``FitResult.kkt``);
        ``max_iter`` caps the cycles.
    warm_start : FitResult or mapping name -> value, optional
        Starting coefficients, matched by name (integer covariate ids name the
        covariate ``str(id)``); coefficients it does not give start at 0. A mapping
        naming an unknown coefficient raises; a FitResult's other coefficients are ignored.
    fixed : mapping name -> value, optional
        Coefficients held at the given values while the others are fitted (Cyclops'
        ``fixedCoefficients``): an offset that names its covariate. They keep their
        prior's term in the penalized log-likelihood (a constant), get no standard error
        (the others' are conditional on them) and show as ``fixed`` in the tables.
    profile : list of str or int
        Coefficients that get profile-likelihood intervals (at ``level``); their root
        searches run together, one replicate batch per round
        (:func:`riskset.profile_likelihood.profile_intervals`).
    level : float
        Confidence level of the profile intervals, strictly between 0 and 1.
    progress : bool
        Show the preparation of the model, then a progress bar over the cycles (and over the
        profile searches).
    backend : {'cpu', 'gpu'}
        Where the coordinate-descent cycles run. 'gpu' keeps the whole fit on a CUDA
        device (Numba-CUDA; with ``NUMBA_ENABLE_CUDASIM=1`` in Numba's simulator).
    dtype : {'float64', 'float32'}
        Precision of the device state (GPU only; accumulations stay in float64).
    normalize : {None, 'stdev', 'max', 'median', 'q95'}
        Scale each covariate that is not an indicator before the fit, as Cyclops'
        ``createCyclopsData(normalize=)`` (:mod:`riskset.data.normalize`): the prior acts on
        the normalized coefficients; coefficients, standard errors, intervals and ``fixed``
        values are on the original scale (given and shown), as Cyclops'
        ``coef(rescale = TRUE)``; ``gamma_max`` is on the normalized scale.
    n_jobs : int, optional
        CPU threads (default: every core this process may use, or ``RISKSET_NUM_THREADS``:
        :mod:`riskset.cores`; the fit reports them as ``threads``): of the fit's compiled
        kernels (the large ones run in parallel blocks fixed by the data, so 2 or 16 threads
        give the same fit, equal to the one-thread fit up to rounding), and then the threads
        fitting the points of the profile searches, each on one.

    Returns
    -------
    FitResult
        Standard errors are given when no coefficient is penalized. Then, as in R, a
        coefficient whose column is a linear combination of earlier ones (a constant
        beside the intercept, a duplicate) is *aliased*: listed in ``aliased``, held at 0
        (shown as NaN in ``coef_table``), the others being the fit without it. A fit
        that did not converge says so in ``converged``, ``status`` and ``message`` and warns.
        A fit whose estimate does not exist (monotone likelihood, separation: the likelihood
        keeps increasing along unpenalized coefficients) has ``status ==
        "estimate_does_not_exist"``, ``converged == False`` and names those coefficients in
        ``diverging`` (name -> +1 / -1); their standard errors are NaN and their profile
        bound on the diverging side is infinite. :func:`riskset.separability` checks each
        covariate alone before a fit.

    Examples
    --------
    >>> import riskset
    >>> data = riskset.simulate(n=2000, p=20, model="logistic", seed=1)
    >>> fit = riskset.fit(data, "logistic", riskset.Laplace(gamma=5.0))
    >>> fit.converged
    True
    """
    if isinstance(data, ShardedData):
        refuse_options(warm_start=(warm_start, None), fixed=(fixed, None), profile=(profile, ()),
                       backend=(backend, "cpu"), dtype=(dtype, "float64"), n_jobs=(n_jobs, None),
                       normalize=(normalize, None))
        return fit_sharded(data, model, prior, executor=executor, tol=tol, kkt_tol=kkt_tol, max_iter=max_iter,
                           progress=progress, **model_options)
    if executor is not None:
        raise InputError("executor is for sharded data (riskset.sharded); a fit of a Dataset runs in this process")
    if isinstance(prior, HierarchicalPrior):
        check_dataset("data", data)
        return _fit_hierarchical(data, as_model(model, **model_options), prior, fixed=fixed, warm_start=warm_start,
                                 profile=profile, tol=tol, kkt_tol=kkt_tol, max_iter=max_iter, level=level,
                                 progress=progress, backend=backend, dtype=dtype, n_jobs=n_jobs, normalize=normalize)
    if normalize is not None:
        check_dataset("data", data)
        return _fit_normalized(data, as_model(model, **model_options), prior, normalize, fixed=fixed,
                               warm_start=warm_start, tol=tol, kkt_tol=kkt_tol, max_iter=max_iter, profile=profile,
                               level=level, progress=progress, backend=backend, dtype=dtype, n_jobs=n_jobs)
    t0 = time.perf_counter()
    args = check_fit(data, model, prior, tol=tol, kkt_tol=kkt_tol, max_iter=max_iter, warm_start=warm_start,
                     fixed=fixed, profile=profile, level=level, backend=backend, dtype=dtype, n_jobs=n_jobs,
                     **model_options)
    m, prior, fit_backend, profile = args.model, args.prior, args.backend, args.profile
    with fit_backend.fit_threads(fit_work(data)) as threads:  # every kernel of this fit (not of the profile's pool)
        with preparing(progress, m, data):
            datafit, names = prepared_datafit(data, m, fit_backend)
        penalty = prior.penalty(names, m.unpenalized_names())
        held = np.isin(names, list(args.fixed))
        beta0 = _align_start(warm_start, names)
        if held.any():
            beta0 = penalty.center.copy() if beta0 is None else beta0
            beta0[held] = [args.fixed[n] for n in np.asarray(names)[held]]
        options = SolverOptions(tol=tol, kkt_tol=kkt_tol, max_iter=max_iter, progress=progress)
        t_prepare = time.perf_counter()
        if isinstance(prior, Prior):
            res = fit_ccd(datafit, penalty.l1, penalty.l2, beta0=beta0, fixed=held if held.any() else None,
                          options=options, center=penalty.center)
        else:  # BAR, IHT, Jeffreys: fits of their own
            assert not isinstance(prior, HierarchicalPrior)  # fitted by _fit_hierarchical, above
            solved = prior.solve(datafit, names, m.unpenalized_names(), data.n_rows, options, held, beta0)
            res, penalty, held = solved.result, solved.penalty, solved.held
        t_solve = time.perf_counter()
        if not res.converged:
            what = "fit" if res.diverging else "fit did not converge"
            warnings.warn(f"{m.name} {what}: {res.message}", ConvergenceWarning, stacklevel=2)
        se, aliased = np.full(len(names), np.nan), np.zeros(len(names), bool)
        if (res.converged or res.diverging) and not penalty.is_penalized:
            if res.converged and isinstance(prior, Prior):  # (Jeffreys: an aliased column leaves I_S singular)
                res, aliased = refit_without_aliased(datafit, res, penalty, options, fixed=held)
            # the information vanishes along diverging coefficients: the others' SEs are those at the limit
            kept = np.flatnonzero(~aliased & ~held & ~np.isin(np.arange(len(names)), list(res.diverging)))
            se[kept] = standard_errors(datafit, res.state, kept)
            computed = np.isin(np.arange(len(names)), kept)
            creep = creeping(datafit, res.beta, se, computed) if res.converged else np.zeros(len(names), bool)
            if creep.any():
                _refuse_creeping(res, creep, names, m.name)
                se[creep] = np.nan
    result = FitResult(model_name=m.name, model_options=m.options(), coef=pd.Series(res.beta, index=names),
                       se=pd.Series(se, index=names), loglik=res.loglik, objective=res.objective,
                       converged=res.converged, message=res.message, n_iter=res.n_iter, prior=prior,
                       n_rows=data.n_rows, gamma_max=res.gamma_max, roles=fit_roles(data, m),
                       aliased=[n for n, a in zip(names, aliased) if a],
                       diverging={names[j]: s for j, s in res.diverging.items()},
                       labels=coef_labels(data, m, names), kkt=res.kkt, fixed=dict(args.fixed),
                       threads=threads)
    if m.variance == "robust" and np.isfinite(se).any():  # Fine-Gray (cmprsk::crr), Cox (coxph robust=TRUE)
        _show_robust_se(result, data, m, np.flatnonzero(np.isfinite(se)))
    if profile:
        cols = np.array([names.index(n) for n in profile])
        searched = cols[~aliased[cols]]  # an aliased coefficient has no interval (NaN), as R's NA
        intervals = profile_intervals(datafit, res.beta, res.objective, penalty, searched, names, level, options,
                                      se=se[searched], backend=fit_backend, progress=progress,
                                      fixed=aliased | held if (aliased | held).any() else None,
                                      diverging=res.diverging)
        unsearched = pd.DataFrame({"name": [names[j] for j in cols[aliased[cols]]], "lower": np.nan,
                                   "upper": np.nan, "level": level, "evaluations": 0, "note": "aliased"})
        result.intervals = pd.concat([intervals, unsearched], ignore_index=True) if len(unsearched) else intervals
    result.timings = {"prepare": t_prepare - t0, "solve": t_solve - t_prepare,
                      "total": time.perf_counter() - t0}
    return result


def _refuse_creeping(res, creep: np.ndarray, names, model: str) -> None:
    """Mark ``res`` as an estimate that does not exist along the ``creep`` coefficients
    (:func:`~riskset.inference.creeping`), with a warning naming them."""
    res.diverging = {int(j): int(np.sign(res.beta[j])) for j in np.flatnonzero(creep)}
    res.converged = False
    listed = ", ".join(repr(names[j]) for j in np.flatnonzero(creep)[:5])
    res.message = (f"the estimate does not exist: {listed} move the linear predictor by more than "
                   f"{CREEP_REACH:g} with a standard error larger than the estimate (the likelihood keeps rising "
                   f"along them: quasi-separation). Put a prior on them (e.g. riskset.Normal(variance=1)) or remove "
                   f"them")
    warnings.warn(f"{model} fit: {res.message}", ConvergenceWarning, stacklevel=3)


def _fit_hierarchical(data, m: Model, prior: HierarchicalPrior, *, fixed, profile, **options) -> FitResult:
    """:func:`fit` under a hierarchical prior: a ridge fit of the design with a column per group
    (:mod:`riskset.data.hierarchy`), each grouped coefficient then its own part plus its
    group's mean."""
    if not prior.strength_is_set:
        raise InputError("the hierarchical prior has no variance: give variance=..., or choose it with "
                         "riskset.cross_validate")
    names = m.coef_names(data)
    split = [n for n in prior.groups if n not in names]
    if split:
        raise InputError(f"groups names covariate(s) that are not coefficients of the {m.name} model as they are "
                         f"(split by time_varying, or dropped as constant): {', '.join(map(repr, split[:5]))}")
    for what, given in (("fixed", list(check.fixed_values("fixed", fixed))), ("profile", check.coef_names(
            "profile", profile))):
        grouped = [n for n in given if n in prior.groups]
        if grouped:
            raise InputError(f"{what} names grouped coefficient(s) {', '.join(map(repr, grouped))}: under a "
                             f"hierarchical prior each is its own part plus its group's mean; not supported")
    design = with_group_columns(data, prior.groups)
    design_data = cast(Dataset, design.data)  # GroupedDesign.data is annotated as object
    result = fit(design_data, m, prior.design_prior(design.group_names), fixed=fixed, profile=profile, **options)
    means = result.coef[design.group_names].to_numpy()
    shift = pd.Series(design.members @ means, index=data.covariate_names)
    coef = result.coef.drop(design.group_names)
    described = ", ".join(f"{g[len(GROUP_PREFIX):]} {v:.4g}" for g, v in zip(design.group_names, means))
    return replace(result, coef=coef + shift.reindex(coef.index).fillna(0.0), se=result.se.drop(design.group_names),
                   prior=prior, aliased=[n for n in result.aliased if n not in design.group_names],
                   labels={k: v for k, v in result.labels.items() if k not in design.group_names},
                   message=f"{result.message}; group means: {described}")


def _fit_normalized(data, m: Model, prior, normalize: str, *, fixed, warm_start, **options) -> FitResult:
    """:func:`fit` of ``data`` with normalized covariates, on the original scale."""
    scaled, scales = normalized(data, normalize)
    by_covariate = dict(zip(data.covariate_names, scales))
    names = m.coef_names(scaled)
    scale = pd.Series([by_covariate.get(m.covariate_of(n), 1.0) for n in names], index=names)
    if fixed:
        fixed = {n: v / scale.get(n, 1.0) for n, v in check.fixed_values("fixed", fixed).items()}
    if warm_start is not None:
        start = warm_start.coef if isinstance(warm_start, FitResult) else pd.Series(
            check.coef_mapping("warm_start", warm_start), dtype=object)
        warm_start = {n: v / scale.get(n, 1.0) for n, v in start.items() if n in scale.index}
    result = fit(scaled, m, prior, fixed=fixed, warm_start=warm_start, **options)
    return result.rescaled(scale, normalize)


def prepared_datafit(data: Dataset, model: Model, backend: Backend):
    """(the model's datafit of ``data``, prepared for ``backend`` (it knows the coefficient
    names), the coefficient names)."""
    model.check_roles(data)
    datafit = model.datafit(data)
    names = model.coef_names(data)
    datafit.names = names
    return backend.prepare(datafit), names  # prepare takes the names along


@dataclass(frozen=True)
class FitArguments:
    """The arguments of :func:`fit` that :func:`check_fit` turns into objects."""

    model: Model
    prior: AnyPrior
    backend: Backend
    profile: list          # coefficient names
    fixed: dict            # coefficient name -> value


def check_fit(data: Dataset, model: str | Model = "logistic", prior: AnyPrior | None = None, *, tol: float = 1e-10,
              kkt_tol: float = 1e-4, max_iter: int = 1000, warm_start=None, fixed=None, profile=(),
              level: float = 0.95, progress: bool = False, backend: str = "cpu", dtype: str = "float64",
              n_jobs: int | None = None, **model_options) -> FitArguments:
    """The arguments of :func:`fit` (all of them, so that callers pass theirs on as they are),
    checked before any work.

    Each bad argument raises an InputError naming it and its value: the data, the model
    and its options, the prior, the stopping rule, ``level`` (in (0, 1), whether or not
    intervals are profiled: the summaries use it too), the backend, and the names in
    ``profile``, ``warm_start`` and ``fixed``, matched against the model's coefficients (a
    time-varying Cox covariate's are its intervals, ``x(0,10]``); a fixed value must be a
    finite number, and a fixed coefficient cannot be profiled. :func:`fit` and
    :func:`riskset.selection.analyses.analyse` (before cross-validation and bootstrap)
    call it.

    >>> import riskset
    >>> data = riskset.simulate(n=100, p=2, model="cox", seed=1)
    >>> check_fit(data, "cox", time_varying={"x0": [0.5]}, profile=["x0"])  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    riskset.exceptions.InputError: profile names ... 'x0' is split by time_varying into 'x0(0,0.5]', 'x0(0.5,inf)'
    """
    check_dataset("data", data)
    m = as_model(model, **model_options)
    prior = as_prior(prior)
    check.solver_settings(tol, max_iter, kkt_tol)
    check.probability("level", level)
    fit_backend = Backend.of(backend, dtype, n_jobs)
    profile = check.coef_names("profile", profile)
    start = [] if warm_start is None or isinstance(warm_start, FitResult) else list(
        check.coef_mapping("warm_start", warm_start))
    held = check.fixed_values("fixed", fixed)
    if profile or start or held:
        names = m.coef_names(data)
        _check_known("profile", profile, names, m, data)
        _check_known("warm_start", start, names, m, data)
        _check_known("fixed", list(held), names, m, data)
    if profile and isinstance(prior, AdaptiveRidge):
        raise InputError(f"profile: a {prior.kind.upper()} fit selects its coefficients by iterated ridge fits, so it "
                         f"has no likelihood to profile; refit the selected coefficients without a prior "
                         f"(fit_best_subset=True) and profile that fit")
    if profile and isinstance(prior, JeffreysPrior):
        raise InputError("profile: profile-likelihood intervals of a Jeffreys-penalized fit are not implemented "
                         "(its standard errors give Wald intervals)")
    both = [n for n in profile if n in held]
    if both:
        raise InputError(f"profile names fixed coefficient(s) {', '.join(map(repr, both))}: a coefficient held at "
                         f"a value has no interval (its profile is the point it is held at)")
    return FitArguments(m, prior, fit_backend, profile, held)


def _check_known(what: str, given: list[str], names: list[str], model: Model, data: Dataset) -> None:
    """InputError unless each of ``given`` is one of the coefficients ``names``; the message
    says where a covariate's coefficient went (time-varying intervals, a dropped column)."""
    known = set(names)
    unknown = [n for n in given if n not in known]
    if not unknown:
        return
    hints = []
    for n in unknown:
        parts = [c for c in names if c != n and model.covariate_of(c) == n]
        if parts:
            hints.append(f"{n!r} is split by time_varying into {', '.join(map(repr, parts))}")
        elif n in data.covariate_names:
            hints.append(f"{n!r} is a covariate of the data that the {model.name} model leaves out (constant in "
                         f"the rows it uses: no information)")
    raise InputError(f"{what} names unknown coefficient(s): {', '.join(map(repr, unknown))}"
                     + (f"; {'; '.join(hints)}" if hints else f" (the coefficients: {first_names(names)})"))


def fit_spec(spec: dict, frame: pd.DataFrame, *, tol: float = 1e-12, **fit_options) -> FitResult:
    """Fit the model of specification ``spec`` (:mod:`riskset.spec`) to the table ``frame``
    (its ``fixed`` coefficients held)."""
    data, model, prior = analysis_from_spec(spec, frame)
    return fit(data, model, prior, tol=tol, **({"fixed": spec_fixed(spec)} | fit_options))


def run_spec(path: str, **fit_options) -> FitResult:
    """Load and fit the specification at ``path`` (its data file beside it; its ``fixed``
    coefficients held)."""
    spec, frame = load_spec(path)
    data, model, prior = analysis_from_spec(spec, frame, path)
    options: dict[str, Any] = {"tol": 1e-12, "fixed": spec_fixed(spec, path)} | fit_options
    return fit(data, model, prior, **options)


def _align_start(warm_start, names):
    """Starting coefficients in the order ``names``; names the start lacks begin at 0."""
    if warm_start is None:
        return None
    if isinstance(warm_start, FitResult):  # a previous fit: its other coefficients are ignored
        return warm_start.coef.reindex(names).fillna(0.0).to_numpy()
    start = check.coef_mapping("warm_start", warm_start)
    check.known_names("warm_start", list(start), names)
    beta = pd.to_numeric(pd.Series(start, dtype=object), errors="coerce").reindex(names).to_numpy(dtype=float)
    given = np.isin(names, list(start))
    bad = given & ~np.isfinite(beta)
    if bad.any():
        name = names[int(np.flatnonzero(bad)[0])]
        raise InputError(f"warm_start[{name!r}] must be a finite number, got {start[name]!r}")
    return np.where(given, beta, 0.0)


#: The largest rows x coefficients product for which ``riskset.fit`` shows the robust
#: sandwich by default: it holds a few dense N x P arrays (here up to ~0.4 GB each).
ROBUST_DENSE_LIMIT = 50_000_000


def _show_robust_se(result, data, model, kept) -> None:
    """Replace ``result.se`` by the robust (sandwich) standard errors of ``kept``, unless
    the dense sandwich would not fit in memory: then the model-based ones stay, said so."""
    size = data.n_rows * kept.shape[0]
    if size > ROBUST_DENSE_LIMIT:
        warnings.warn(f"standard errors: model-based, not robust: the robust sandwich holds dense "
                      f"rows x coefficients arrays ({data.n_rows} x {kept.shape[0]}, "
                      f"{8 * size / 2**30:.1f} GB each); riskset.robust_se(fit, data, columns=...) "
                      f"computes it for chosen coefficients (columns=)", DataWarning, stacklevel=3)
        return
    names = list(result.se.index)
    robust = np.full(len(names), np.nan)
    robust[kept] = robust_se(result, data, model, kept).to_numpy()
    result.se, result.variance = pd.Series(robust, index=names), "robust"
