"""Cross-validation of the prior variance (Cyclops' ``cvType = "grid"`` and ``"auto"``).

The variance grid is walked from the strongest prior to the weakest. At each variance
the full data are fitted first (warm-started from the previous variance: the
regularization path), then each task fits a batch of (repetition, fold) training
weightings, each warm-started from that full-data fit (a training set holds (k-1)/k of
the rows, so its optimum is close: typically one full sweep and a Newton polish or two),
and scores the held-out rows by their predictive log-likelihood (one split per task on
the CPU, every split in one device batch on the GPU; see :mod:`riskset.selection.common`).
The walk stops once the mean score has fallen past its peak (``early_stop``). The
selected variance maximizes the mean score over splits (``auto``: refined between grid
points by a parabolic search, each new variance scored as a grid point is); the refit on
all data starts from the nearest full-data fit.
"""
from __future__ import annotations

import warnings
from dataclasses import dataclass, replace

import numpy as np
import pandas as pd

from riskset import validation as check
from riskset.backend import Backend, fit_work
from riskset.data.dataset import check_dataset
from riskset.data.hierarchy import with_group_columns
from riskset.data.normalize import normalized
from riskset.exceptions import DataWarning, InputError
from riskset.models.base import Model, as_model
from riskset.results import FitResult
from riskset.api import fit
from riskset.selection.common import Context, checked_grid, prior_with_variance, varied_prior, variance_grid
from riskset.selection.executors import TaskRunner
from riskset.selection.folds import assign_folds, checked_splits
from riskset.sharded import ShardedData
from riskset.sharded.sources import refuse_options
from riskset.solver.prior import HierarchicalPrior, Prior
from riskset.core.memory import returns_freed_memory

_GOLDEN = (np.sqrt(5) - 1) / 2

#: CohortMethod's cross-validation of the propensity model (its ``createCreatePsArgs``
#: control: ``cvType = "auto"``, ``cvRepetitions = 10``, 10 folds, ``tolerance = 2e-7``,
#: ``seed = 1``); Cyclops' auto search starts at variance 0.01 and walks, riskset's scans
#: the grid from gamma_max and refines between the best point's neighbours.
COHORT_METHOD_CV = {"n_folds": 10, "n_repeats": 10, "auto": True, "tol": 2e-7, "seed": 1}


@dataclass
class CVResult:
    """Scores by variance, the selected variance and the refitted model.

    scores : one row per (variance, repeat, fold) with the held-out log-likelihood and
        whether that fold's fit converged (a DataWarning counts those that did not).
    summary : per variance: mean score over tasks, its standard deviation and error.
    """

    scores: pd.DataFrame
    summary: pd.DataFrame
    selected_variance: float
    prior: Prior
    fit: FitResult | None

    def plot(self, path=None, ax=None):
        """Cross-validation curve with the selected variance marked."""
        from riskset.plots.selection import plot_cv

        return plot_cv(self, path=path, ax=ax)


@returns_freed_memory
def cross_validate(data, model: str | Model, prior: Prior, *, variances=None, n_grid: int = 10,
                   n_folds: int = 10, n_repeats: int = 1, seed: int = 0, auto: bool = False,
                   n_refine: int = 4, early_stop: int | None = 2, executor=None, n_jobs: int | None = None,
                   progress: bool = True, tol: float = 1e-8, refit: bool = True, backend: str = "cpu",
                   dtype: str = "float64", held_out=None, group_variances=None, normalize: str | None = None,
                   **model_options) -> CVResult:
    """Choose the prior variance by k-fold cross-validation, repeated ``n_repeats`` times.

    Parameters
    ----------
    prior : Laplace or Normal prior; its excluded coefficients stay unpenalized. A
        :func:`riskset.Hierarchical` prior has its ``variance`` chosen so for each of
        ``group_variances`` (default :data:`GROUP_VARIANCES`), and the pair with the best mean
        score wins (Cyclops' auto search in one dimension, a grid in the other); ``scores``
        and ``summary`` then have a ``group_variance`` column.
    normalize : the covariate normalization of :func:`riskset.fit` (``"stdev"``, ...): the
        variance is chosen for the normalized coefficients, the refit reports the original
        scale.
    variances : grid of prior variances; by default ``n_grid`` values log-spaced from
        the variance at gamma_max (everything zero) down 10^2.5 in gamma.
    auto : after the grid, refine the best variance by ``n_refine`` golden-section
        steps in log-variance between its grid neighbours (bracket, then refine).
    early_stop : the grid is walked from the strongest prior to the weakest and left once
        this many consecutive variances score below the best so far (the maximum is then
        bracketed; Cyclops' auto search, which assumes one mode, leaves after one). The weak
        end of a grid is where fits are slowest (many active covariates, little curvature)
        and, past the peak, of no use to the choice. None scores every variance; ``scores``
        and ``summary`` hold the variances scored.
    executor, n_jobs : where the (repeat, fold) tasks run; see
        :func:`riskset.selection.executors.run_tasks`. For sharded data
        (:class:`riskset.sharded.ShardedData`) ``executor`` is the Dask client or scheduler address
        whose workers hold the shards, and the folds are weights drawn there
        (:func:`riskset.selection.sharded_cv.cross_validate_sharded`).
    backend, dtype : ``"gpu"`` fits every split in one batch on the device (see
        :func:`riskset.fit`); the refit on all data uses the same backend.
    held_out : boolean mask of the rows held out, one row per split, instead of random folds
        (``n_folds``, ``n_repeats`` and ``seed`` are then not used). One mask is one split:
        Cyclops' weight-based search (``createWeightBasedSearchControl``) is
        ``held_out=(weights == 0)``, training on the rows of positive weight and scoring the
        others. Subjects and matched sets must stay whole.

    CohortMethod's propensity-model search (auto search, 10 repetitions of 10 folds,
    tolerance 2e-7, seed 1) is ``**riskset.selection.cv.COHORT_METHOD_CV``.

    Examples
    --------
    >>> import riskset
    >>> d = riskset.simulate(n=2000, p=30, model="logistic", seed=4)
    >>> cv = riskset.cross_validate(d, "logistic", riskset.Laplace(gamma=1.0), n_folds=5, n_grid=6,
    ...                             progress=False)
    >>> cv.selected_variance in set(cv.summary["variance"])
    True
    """
    if isinstance(data, ShardedData):  # (the sharded search builds this module's CVResult: imported here)
        from riskset.selection.sharded_cv import cross_validate_sharded

        refuse_options(n_repeats=(n_repeats, 1), auto=(auto, False), held_out=(held_out, None),
                          group_variances=(group_variances, None), normalize=(normalize, None),
                          backend=(backend, "cpu"), dtype=(dtype, "float64"), n_jobs=(n_jobs, None))
        return cross_validate_sharded(data, model, prior, executor=executor, variances=variances, n_grid=n_grid,
                                      n_folds=n_folds, seed=seed, early_stop=early_stop, progress=progress, tol=tol,
                                      refit=refit, **model_options)
    check_dataset("data", data)
    m = as_model(model, **model_options)
    if normalize is not None:
        scaled, _ = normalized(data, normalize)
        chosen = cross_validate(scaled, m, prior, variances=variances, n_grid=n_grid, n_folds=n_folds,
                                n_repeats=n_repeats, seed=seed, auto=auto, n_refine=n_refine,
                                early_stop=early_stop, executor=executor,
                                n_jobs=n_jobs, progress=progress, tol=tol, refit=False, backend=backend, dtype=dtype,
                                held_out=held_out, group_variances=group_variances)
        if refit:
            chosen = replace(chosen, fit=fit(data, m, chosen.prior, tol=tol, backend=backend, dtype=dtype,
                                             normalize=normalize))
        return chosen
    if isinstance(prior, HierarchicalPrior):
        return _cross_validate_hierarchical(
            data, m, prior, group_variances, refit=refit, tol=tol, backend=backend, dtype=dtype, variances=variances,
            n_grid=n_grid, n_folds=n_folds, n_repeats=n_repeats, seed=seed, auto=auto, n_refine=n_refine,
            early_stop=early_stop, executor=executor, n_jobs=n_jobs, progress=progress, held_out=held_out)
    if group_variances is not None:
        raise InputError("group_variances is the grid of a hierarchical prior's group variance: give "
                         "prior=riskset.Hierarchical(...)")
    n_folds, n_repeats = check.positive_int("n_folds", n_folds, minimum=2), check.positive_int("n_repeats", n_repeats)
    seed, n_refine = check.seed("seed", seed), check.positive_int("n_refine", n_refine, minimum=0)
    if early_stop is not None:
        early_stop = check.positive_int("early_stop", early_stop)
    check.positive_number("tol", tol)
    where = Backend.of(backend, dtype, n_jobs)
    where.check_executor(executor)
    prior, grid = varied_prior(prior), checked_grid(variances, n_grid)
    if held_out is None:
        folds = assign_folds(data, n_folds, n_repeats, seed, m)  # checks n_folds against the units, before any work
        splits = [(r, k) for r in range(n_repeats) for k in range(n_folds)]
        held_out = np.array([np.packbits(folds[r] == k) for r, k in splits])
        del folds
    else:
        held_out = np.packbits(checked_splits(data, held_out, m), axis=1)
        splits, n_folds = [(0, k) for k in range(held_out.shape[0])], held_out.shape[0]
    ctx = Context(data, m, prior, tol, where, progress)
    grid = variance_grid(ctx, grid, n_grid)
    _require_informative_training(ctx, held_out, splits, n_folds)
    # the full-data fits between the rounds on this thread: the fit's threads, as riskset.fit's
    with where.fit_threads(fit_work(data)), TaskRunner(ctx, executor=executor, n_jobs=n_jobs,
                                                       progress=progress, desc="cross-validation") as runner:
        search = _Search(ctx, runner, held_out, splits)
        runner.expect(grid.size * search.fits_per_variance)
        for v in grid:
            search.score(v)
            if early_stop is not None and search.past_peak(early_stop):
                break
        if auto and len(search.means) >= 3:
            _refine(search, grid[:len(search.means)], n_refine)
    scores = pd.DataFrame(search.rows)
    warn_unconverged(scores)
    summary = summarize_scores(scores)
    best = float(summary.loc[summary["mean"].idxmax(), "variance"])
    chosen = prior_with_variance(prior, best)
    start = pd.Series(search.nearest_fit(np.log(best)), index=ctx.names)
    final = (fit(data, m, chosen, tol=tol, backend=backend, dtype=dtype, n_jobs=n_jobs, warm_start=start)
             if refit else None)
    return CVResult(scores, summary, best, chosen, final)


#: The group variances a hierarchical prior's cross-validation tries by default.
GROUP_VARIANCES = (0.01, 0.1, 1.0, 10.0)


def _cross_validate_hierarchical(data, m, prior: HierarchicalPrior, group_variances, *, refit, tol, backend, dtype,
                                 **options) -> CVResult:
    """:func:`cross_validate` of a hierarchical prior: for each group variance, the variance
    chosen on the design with a column per group (:mod:`riskset.data.hierarchy`); the best
    pair by mean held-out score."""
    grid = checked_grid(GROUP_VARIANCES if group_variances is None else group_variances, 1)
    design = with_group_columns(data, prior.groups)
    scores, summaries = [], []
    for group_variance in grid:
        varied = replace(prior, variance=None, group_variance=float(group_variance))
        inner = cross_validate(design.data, m, varied.design_prior(design.group_names), refit=False, tol=tol,
                               backend=backend, dtype=dtype, **options)
        scores.append(inner.scores.assign(group_variance=group_variance))
        summaries.append(inner.summary.assign(group_variance=group_variance))
    scores, summary = pd.concat(scores, ignore_index=True), pd.concat(summaries, ignore_index=True)
    best = summary.loc[summary["mean"].idxmax()]
    chosen = replace(prior, variance=float(best["variance"]), group_variance=float(best["group_variance"]))
    final = fit(data, m, chosen, tol=tol, backend=backend, dtype=dtype) if refit else None
    return CVResult(scores, summary, chosen.variance, chosen, final)


def _unpacked(held_out: np.ndarray, n_rows: int) -> np.ndarray:
    """The boolean masks (splits, rows) of held-out rows kept as bits (``np.packbits`` along
    the rows): 100 splits of 643k rows are 8 MB, not the 64 MB of their masks."""
    return np.unpackbits(held_out, axis=-1, count=n_rows).view(bool)


def _require_informative_training(ctx: Context, held_out, splits, n_folds):
    """InputError if the training set of some split carries no information (a fold would
    silently score a fit of nothing, e.g. when too few units have an event for ``n_folds``)."""
    for (r, k), bits in zip(splits, held_out):
        problem = ctx.missing_information(np.where(_unpacked(bits, ctx.data.n_rows), 0.0, ctx.base_weights))
        if problem:
            raise InputError(f"cross-validation cannot fit the training set without fold {k + 1} of {n_folds} "
                             f"(repeat {r + 1}): {problem}. The data have {ctx.n_event_units()} resampling unit(s) "
                             f"with an event for n_folds = {n_folds}: use fewer folds (or more data)")


def _batches(ctx, held_out, v, start, likely):
    """Tasks of :func:`_batch_size` splits each (their held-out rows as bits), every split fitted
    at variance ``v`` from the full-data fit ``start`` whose likely entrants are ``likely``
    (:meth:`Context.likely_entrants`)."""
    size = _batch_size(ctx, held_out.shape[0])
    return [(held_out[a:a + size], v, start, likely) for a in range(0, held_out.shape[0], size)]


def _batch_size(ctx, n_splits: int) -> int:
    """Splits per task: the backend's batch (one on the CPU), or every split in one."""
    return ctx.backend.batch_size or n_splits


def _score_task(ctx: Context, task):
    """Fit a batch of training weightings at one variance from the same start; their held-out
    scores and whether each fit converged."""
    held_out, v, start, likely = task
    held_out = _unpacked(held_out, ctx.data.n_rows)
    n = held_out.shape[0]
    train = ctx.batch(np.where(held_out, 0.0, ctx.base_weights))
    score = ctx.scorer(np.where(held_out, ctx.base_weights, 0.0))
    res = ctx.fit_batch(train, [prior_with_variance(ctx.prior, v)] * n, np.broadcast_to(start, (n, start.size)),
                        np.broadcast_to(likely, (n, likely.size)))
    return score(res.beta), res.converged


def warn_unconverged(scores: pd.DataFrame) -> None:
    """A DataWarning counting the fold fits that did not converge (their scores are those of
    the coefficients where they stopped; the ``converged`` column of the scores marks them)."""
    bad = scores[~scores["converged"]]
    if len(bad):
        variances = ", ".join(f"{v:.3g}" for v in sorted(bad["variance"].unique())[:5])
        warnings.warn(f"{len(bad)} of {len(scores)} cross-validation fits did not converge (at variance(s) "
                      f"{variances}); their held-out scores are those of unconverged fits: see the 'converged' "
                      "column of the scores, raise tol or max_iter, or narrow the variance grid", DataWarning,
                      stacklevel=3)


def summarize_scores(scores):
    g = scores.groupby("variance")["score"]
    summary = pd.DataFrame({"mean": g.mean(), "sd": g.std(ddof=1), "n": g.size()}).reset_index()
    summary["se"] = summary["sd"] / np.sqrt(summary["n"])
    return summary


class _Search:
    """The variances a cross-validation has scored: each fitted on all data first (from the
    full-data fit at the nearest variance so far), then every split from that fit (a training
    set holds (k-1)/k of the rows, so its optimum is close), its held-out rows scored."""

    def __init__(self, ctx: Context, runner: TaskRunner, held_out: np.ndarray, splits: list):
        self.ctx, self.runner, self.held_out, self.splits = ctx, runner, held_out, splits
        self.batch = ctx.batch(ctx.base_weights)
        self.full = {}   # log-variance -> full-data fit
        self.means = []  # mean score per variance, in the order scored
        self.rows = []   # one per (variance, split)
        # progress units per variance: the full-data fit and the tasks
        self.fits_per_variance = 1 + -(-len(splits) // _batch_size(ctx, len(splits)))

    def nearest_fit(self, log_variance: float) -> np.ndarray | None:
        """The full-data fit at the scored variance nearest ``log_variance`` (None before any)."""
        if not self.full:
            return None
        return self.full[min(self.full, key=lambda u: abs(u - log_variance))]

    def score(self, v: float) -> float:
        """Fit and score every split at variance ``v``; the mean score over splits."""
        ctx, logv = self.ctx, float(np.log(v))
        start = self.nearest_fit(logv)
        full = ctx.fit_batch(self.batch, [prior_with_variance(ctx.prior, v)], None if start is None else start[None])
        self.full[logv] = full.beta[0]
        self.runner.done()
        likely = ctx.likely_entrants(self.full[logv], v)
        out = self.runner.map(_score_task, _batches(ctx, self.held_out, v, self.full[logv], likely))
        fold_scores = np.concatenate([s for s, _ in out])
        converged = np.concatenate([c for _, c in out])
        self.rows.extend(dict(variance=v, repeat=r, fold=k, score=s, converged=bool(c))
                         for (r, k), s, c in zip(self.splits, fold_scores, converged))
        self.means.append(float(fold_scores.mean()))
        return self.means[-1]

    def past_peak(self, patience: int) -> bool:
        """The last ``patience`` variances scored all below the best so far (the grid is
        walked from strong priors to weak: the maximum is bracketed)."""
        return len(self.means) - 1 - int(np.argmax(self.means)) >= patience


def _refine(search: _Search, grid: np.ndarray, n_refine: int) -> None:
    """Search the best variance between the grid neighbours of the best grid point, in
    log-variance, by successive parabolic interpolation (:func:`next_log_variance`; Cyclops'
    auto search also steps to the vertex of a quadratic in log-variance): at most
    ``n_refine`` new variances, at least one (the first vertex, a check of the model
    through three distant grid points), fewer when the search resolves the maximum to the
    bracket golden-section search would leave after ``n_refine`` steps. ``grid``: the grid
    variances scored so far, ascending; each new variance is scored as a grid point is
    (:meth:`_Search.score`)."""
    means = np.array(search.means[:grid.size])
    i = int(np.clip(means.argmax(), 1, grid.size - 2))
    lo, hi = float(np.log(grid[i - 1])), float(np.log(grid[i + 1]))
    scores = {float(np.log(v)): m for v, m in zip(grid, means) if lo <= np.log(v) <= hi}
    resolution = (hi - lo) * _GOLDEN**n_refine / 2
    for step in range(n_refine):
        logv = next_log_variance(scores, resolution if step else 0.0)  # the first vertex is always tried
        if logv is None:
            break
        search.runner.expect(search.fits_per_variance)
        scores[logv] = search.score(float(np.exp(logv)))


def next_log_variance(scores: dict, resolution: float) -> float | None:
    """The next log-variance of the search (``scores``: mean score by log-variance, the
    bracket's ends included), or None once the maximum is resolved.

    With the best point b between evaluated neighbours a < b < c, the vertex of the parabola
    through the three (concave, since b is the best, and inside (a, c)); at an end of the
    bracket, or on a flat triple, the golden-section point of b's larger side. The search has
    converged when that point is within ``resolution`` of b: the maximum of the local model
    is then b, to the resolution asked.

    >>> round(next_log_variance({0.0: -1.0, 1.0: 0.0, 2.0: -4.0}, 0.01), 6)  # -2.5 x^2 + 3.5 x - 1
    0.7
    >>> next_log_variance({0.0: -1.0, 1.0: 0.0, 1.001: 0.0, 2.0: -1.0}, 0.01) is None
    True
    """
    xs = sorted(scores)
    k = max(range(len(xs)), key=lambda u: scores[xs[u]])
    b = xs[k]
    a = xs[k - 1] if k > 0 else b
    c = xs[k + 1] if k + 1 < len(xs) else b
    fa, fb, fc = scores[a], scores[b], scores[c]
    x = None
    den = (b - a) * (fb - fc) - (b - c) * (fb - fa)
    if a < b < c and den != 0.0:
        x = b - 0.5 * ((b - a) ** 2 * (fb - fc) - (b - c) ** 2 * (fb - fa)) / den
        x = x if a < x < c else None
    if x is None:  # golden section on the larger side
        x = b + (1 - _GOLDEN) * (c - b) if c - b >= b - a else b - (1 - _GOLDEN) * (b - a)
    return None if abs(x - b) <= resolution else float(x)
