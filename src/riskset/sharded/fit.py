"""One fit over sharded data: the shards read and built where they live, the outer Newton
iterations on the client (:func:`fit_sharded`)."""
from __future__ import annotations

import time
import warnings

import numpy as np
import pandas as pd

from riskset.exceptions import ConvergenceWarning, DataWarning, InputError
from riskset.inference import standard_errors
from riskset.models.base import Model, as_model
from riskset.models.cox import CoxModel
from riskset.models.fine_gray import FineGrayModel
from riskset.results import FitResult
from riskset.sharded import competing_risks, risk_sets
from riskset.sharded.datafit import Exchange, RiskSetDatafit, SeparableDatafit, ShardedDatafit
from riskset.sharded.shards import (ShardSummary, build_fine_gray, build_risk_sets, build_separable, censoring_counts,
                                    event_censor_weights, summarize)
from riskset.sharded.sources import ShardedData
from riskset.solver.ccd import SolverOptions
from riskset.solver.prior import Prior, as_prior
from riskset.solver.proximal_newton import fit_proximal_newton
from riskset import validation as check


def fit_sharded(data: ShardedData, model: str | Model = "logistic", prior=None, *, executor,
                tol: float = 1e-10, kkt_tol: float = 1e-4, max_iter: int = 100, progress: bool = False,
                **model_options) -> FitResult:
    """Fit a penalized model to rows that stay on many Dask workers, to the optimum of the
    one-machine fit (:func:`riskset.fit` calls it for :class:`~riskset.sharded.ShardedData`).

    Each worker reads its shard and keeps it prepared; the client runs outer Newton iterations
    (:mod:`riskset.solver.proximal_newton`), each a few rounds of tasks that send coefficients
    (and, for a Cox model without strata, vectors over event times) and gather sums.

    Parameters
    ----------
    data : ShardedData
        From :func:`riskset.sharded.split`, :func:`~riskset.sharded.parquet_shards` or
        :func:`~riskset.sharded.duckdb_shards`. A stratified model (stratified Cox,
        conditional logistic / Poisson, SCCS) needs the data split by stratum
        (``by="stratum"``, each stratum in one shard); a GLM, a Cox model without strata and a
        Fine-Gray model take any split of the rows.
    model, prior, tol, kkt_tol, progress, model_options : as :func:`riskset.fit`; the priors
        are those of :class:`~riskset.solver.prior.Prior` (Laplace, Normal, elastic net, none).
        ``max_iter`` caps the outer iterations. For a Fine-Gray model the censoring Kaplan-Meier
        is built from every shard's counts, or the data's ``censor_weights`` are taken as given
        (:mod:`riskset.sharded.competing_risks`).
    executor : distributed.Client or str
        The Dask client, or a scheduler address (``"tcp://host:8786"``).

    Returns
    -------
    FitResult
        As :func:`riskset.fit`'s; ``sharding`` gives the shards, the workers that held them,
        the rounds of tasks and the bytes exchanged. Standard errors of an unpenalized fit are
        computed, model-based (inverse observed information) even where the model's are robust
        (Fine-Gray's default, as crr; a warning says so); aliased columns are not detected (their
        standard errors are NaN).

    Examples
    --------
    >>> import riskset
    >>> from distributed import Client
    >>> from riskset.sharded import split
    >>> client = Client(processes=False, n_workers=2, threads_per_worker=1)  # doctest: +SKIP
    >>> data = riskset.simulate(n=2000, p=20, model="cox", seed=1)
    >>> fit = riskset.fit(split(data, 4), "cox", riskset.Laplace(gamma=5.0), executor=client)  # doctest: +SKIP
    """
    t0 = time.perf_counter()
    if not isinstance(data, ShardedData):
        raise InputError(f"data must be ShardedData, not {type(data).__name__}")
    m = as_model(model, **model_options)
    given = as_prior(prior)
    if not isinstance(given, Prior):
        raise InputError(f"a sharded fit takes a Laplace, Normal or elastic-net prior (or none), not "
                         f"{type(given).__name__}")
    check.solver_settings(tol, max_iter, kkt_tol)
    client, owned = connect(executor)
    try:
        datafit, names, n_rows, roles = prepare_shards(client, data, m)
        t_prepare = time.perf_counter()
        options = SolverOptions(tol=tol, kkt_tol=kkt_tol, max_iter=max_iter, progress=progress)
        result = fit_prepared(datafit, m, given, options, n_rows=n_rows, roles=roles, n_shards=data.n_shards)
    finally:
        if owned:
            client.close()
    result.timings = {"prepare": t_prepare - t0, "solve": result.timings["solve"], "total": time.perf_counter() - t0}
    return result


def fit_prepared(datafit: ShardedDatafit, model: Model, prior: Prior, options: SolverOptions, *, n_rows: int,
                 roles: dict, n_shards: int, beta0: np.ndarray | None = None) -> FitResult:
    """The fit of shards already built (:func:`prepare_shards`) under ``prior``, from ``beta0`` (the
    prior's centers by default), as a :class:`~riskset.results.FitResult`."""
    t0 = time.perf_counter()
    names = datafit.coef_names
    penalty = prior.penalty(names, model.unpenalized_names())
    res = fit_proximal_newton(datafit, penalty.l1, penalty.l2, beta0=beta0, options=options, center=penalty.center)
    if not res.converged:
        warnings.warn(f"{model.name} sharded fit did not converge: {res.message}", ConvergenceWarning, stacklevel=3)
    se = np.full(len(names), np.nan)
    if res.converged and not penalty.is_penalized:
        se = standard_errors(datafit, res.state, np.arange(len(names)))
        if model.variance == "robust":
            warnings.warn(f"standard errors: model-based, not robust: a sharded fit does not compute the "
                          f"{model.name} model's robust sandwich (its score residuals span shards)", DataWarning,
                          stacklevel=3)
    exchange = datafit.exchange
    workers = {w for held in exchange.client.who_has(exchange.shards).values() for w in held}
    sharding = {"shards": n_shards, "workers": len(workers), "rounds": exchange.rounds,
                "bytes_exchanged": exchange.bytes}
    result = FitResult(model_name=model.name, model_options=model.options(), coef=pd.Series(res.beta, index=names),
                       se=pd.Series(se, index=names), loglik=res.loglik, objective=res.objective,
                       converged=res.converged, message=res.message, n_iter=res.n_iter, prior=prior,
                       n_rows=n_rows, gamma_max=res.gamma_max, roles=roles,
                       diverging={names[j]: s for j, s in res.diverging.items()}, kkt=res.kkt, sharding=sharding)
    result.timings = {"solve": time.perf_counter() - t0}
    return result


def prepare_shards(client, data: ShardedData, model: Model) -> tuple[ShardedDatafit, list, int, dict]:
    """Read and summarize every shard where it lands, check the whole data, build each shard's
    likelihood there: (the client's datafit, coefficient names, rows, roles)."""
    labels = [f"{k} ({s.describe()})" for k, s in enumerate(data.sources)]
    loaded = [client.submit(source.load, pure=False) for source in data.sources]
    summaries = client.gather([client.submit(summarize, d, model, label, pure=False)
                               for d, label in zip(loaded, labels)])
    names = _covariates(summaries, model)
    stratified = model.uses_strata and any(s.strata_labels is not None for s in summaries)
    if stratified:
        _check_strata_whole(data, summaries, labels)
    datafit: ShardedDatafit
    if (isinstance(model, CoxModel) and not stratified) or isinstance(model, FineGrayModel):
        grid = risk_sets.event_time_grid([s.event_times for s in summaries])
        if isinstance(model, FineGrayModel):
            if not grid.size:
                raise InputError(f"the fine_gray model cannot be fitted: no shard has an event of interest (status "
                                 f"code {model.event_of_interest}) of positive weight")
            censoring, censor_grid = _censoring(client, loaded, summaries, model, grid)
            shards = [client.submit(build_fine_gray, d, model, names, grid, censoring, label, pure=False)
                      for d, label in zip(loaded, labels)]
            ties, censor_grids = "breslow", None if censor_grid is None else (grid, censor_grid)
        else:
            if not grid.size:
                raise InputError("the cox model cannot be fitted: no shard has an event")
            shards = [client.submit(build_risk_sets, d, model, names, grid, label, pure=False)
                      for d, label in zip(loaded, labels)]
            ties, censor_grids = model.ties, None
        datafit = RiskSetDatafit(Exchange(client, shards), len(names), names, sum(s.n_rows for s in summaries), ties,
                                 censor_grids)
        coef_names = names
    else:
        shards = [client.submit(build_separable, d, model, names, label, pure=False)
                  for d, label in zip(loaded, labels)]
        exchange = Exchange(client, shards)
        coef_names = exchange.each(_coef_names)[0]
        ranks = exchange.each(_rank)
        if not any(ranks):
            raise InputError(f"the {model.name} model cannot be fitted: no shard's rows carry information "
                             "(no event, no stratum with an event or with a case and a control)")
        datafit = SeparableDatafit(exchange, len(coef_names), coef_names, sum(ranks))
    del loaded  # each shard keeps what it built; a lost one is read again from its source
    roles = dict(summaries[0].roles)
    if "n_strata" in roles:
        roles["n_strata"] = sum(s.roles.get("n_strata", 0) for s in summaries)
    return datafit, coef_names, sum(s.n_rows for s in summaries), roles


def _censoring(client, loaded: list, summaries: list[ShardSummary], model: FineGrayModel,
               grid: np.ndarray) -> tuple[competing_risks.Censoring, np.ndarray | None]:
    """The censoring survival of a Fine-Gray fit, one more exchange at setup: the Kaplan-Meier of
    every shard's censoring counts (and its grid of censoring times), or G(t-) at the event times
    from the events' given censoring weights (every shard must give them, or none; no grid).
    Warns, as the one-machine fit, where no shard has a competing event."""
    if not any(s.competing for s in summaries):
        warnings.warn("no competing events in the data: the Fine-Gray model reduces to the Cox model "
                      "(Breslow ties)", DataWarning, stacklevel=5)
    given = [s.censor_weights for s in summaries]
    if any(given) and not all(given):
        raise InputError(f"censoring weights are given in shard {given.index(True)} but not in shard "
                         f"{given.index(False)}: give censor_weights for the rows of every shard or of none")
    if all(given):
        return competing_risks.given_censoring(grid, client.gather(
            [client.submit(event_censor_weights, d, model, pure=False) for d in loaded])), None
    censor_grid = risk_sets.event_time_grid([s.censoring_times for s in summaries])
    counts = client.gather([client.submit(censoring_counts, d, model, censor_grid, pure=False) for d in loaded])
    counted = competing_risks.combine_censoring_counts(counts)
    return competing_risks.kaplan_meier_censoring(grid, censor_grid, counted), censor_grid


def _covariates(summaries: list[ShardSummary], model: Model) -> list:
    """The covariates of the whole data: every shard's, in id order (as :func:`riskset.from_long`
    orders them) or, where every shard lists the same ones, in their order; without those that
    are constant over every row where the model drops them (with a DataWarning naming them)."""
    first = summaries[0].covariate_names
    if all(s.covariate_names == first for s in summaries):
        names = list(first)
    else:
        union = sorted({n for s in summaries for n in s.covariate_names})
        numeric = all(n.lstrip("-").isdigit() for n in union)
        names = sorted(union, key=int) if numeric else union
    if not model.drops_constant_covariates:
        return names
    low, high = np.full(len(names), np.inf), np.full(len(names), -np.inf)
    position = {n: j for j, n in enumerate(names)}
    for s in summaries:
        at = np.array([position[n] for n in s.covariate_names], dtype=np.int64)
        low[at], high[at] = np.minimum(low[at], s.column_min), np.maximum(high[at], s.column_max)
        absent = np.setdiff1d(np.arange(len(names)), at)
        low[absent], high[absent] = np.minimum(low[absent], 0.0), np.maximum(high[absent], 0.0)
    constant = low == high
    if constant.any():
        dropped = [names[j] for j in np.flatnonzero(constant)]
        warnings.warn(f"dropped {len(dropped)} covariate(s) with zero variance over every shard (constant, no "
                      f"information): {', '.join(map(repr, dropped[:5]))}", DataWarning, stacklevel=4)
    return [n for n, c in zip(names, constant) if not c]


def _check_strata_whole(data: ShardedData, summaries: list[ShardSummary], labels: list) -> None:
    """A stratified model needs every stratum whole in one shard."""
    if data.by != "stratum":
        raise InputError("a stratified model needs the data split by stratum (by='stratum'; on the command line "
                         "--shard-by stratum), so that no stratum spans shards; these shards are split by row")
    seen: dict = {}
    for k, s in enumerate(summaries):
        for label in (s.strata_labels if s.strata_labels is not None else ()):
            if label in seen:
                raise InputError(f"stratum {label!r} is in shard {labels[seen[label]]} and in shard {labels[k]}: "
                                 "split the data by stratum")
            seen[label] = k


def _coef_names(shard) -> list:
    return shard.coef_names


def _rank(shard) -> int:
    return shard.hessian_rank


def connect(executor):
    """(a Dask client for ``executor``, whether this fit owns it and closes it)."""
    try:
        from distributed import Client
    except ImportError as err:  # pragma: no cover - the dask extra is installed with the tests
        raise ImportError("a sharded fit needs the 'dask' extra: pip install 'riskset[dask]'") from err
    if isinstance(executor, Client):
        return executor, False
    if isinstance(executor, str) and executor:
        return Client(executor), True
    raise InputError(f"executor must be a distributed.Client or a scheduler address, not {executor!r}")
