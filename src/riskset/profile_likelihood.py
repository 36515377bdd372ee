"""Profile-likelihood intervals: the 2 x k root searches of k coefficients, advanced together."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy import special

from riskset.backend import Backend
from riskset.core.penalty import Penalty
from riskset.inference import MAX_SE_COEF, collinear_directions, settle_replicates
from riskset.solver.ccd import SolverOptions
from riskset.solver.replicates import fit_replicates


#: Doublings of the step away from the MLE before a profile bound is declared infinite.
MAX_DOUBLINGS = 60


def profile_intervals(datafit, beta_hat, objective_hat, penalty: Penalty, columns, names, level=0.95,
                      options: SolverOptions | None = None, se=None, *, backend: Backend = Backend(),
                      progress: bool = False, fixed=None, diverging: dict | None = None) -> pd.DataFrame:
    """Profile-likelihood intervals of coefficients ``columns`` (as Cyclops' ``confint``).

    The bound b of coefficient j solves ``max_{beta: beta_j = b} f(beta) = f_hat -
    chi2_1(level) / 2`` where f is the penalized log-likelihood; the searches solve the
    equivalent ``r(b) = z_level`` for the likelihood-ratio root ``r(b) = sqrt(2 (f_hat -
    f_b))``, which is close to linear in b (``|b - b_hat| / SE`` where the profile is
    quadratic), so interpolation needs few fits. The 2 x len(columns)
    root searches (:class:`ProfileSearches`) advance in lockstep: each round fits one
    point of every unfinished search as one replicate batch
    (:func:`riskset.solver.replicates.fit_replicates`; replicate = the data with that
    search's coefficient fixed at its proposal, warm-started from the search's previous
    fit), on ``backend`` (:meth:`riskset.backend.Backend.repeated`; ``datafit`` is from its
    ``prepare``): on the CPU the replicates of a round run on ``backend.n_jobs`` threads, on
    the GPU each round is one device batch.

    Examples
    --------
    >>> import numpy as np, riskset
    >>> data = riskset.simulate(n=500, p=3, model="cox", seed=2)
    >>> fit = riskset.fit(data, "cox", profile=["x1"], n_jobs=2)
    >>> lower, upper = fit.intervals.loc[0, ["lower", "upper"]]
    >>> bool(lower < fit.coef["x1"] < upper)
    True

    The table has, as Cyclops' ``confint``, the number of fits (``evaluations``) each
    interval took. ``fixed`` (mask) holds coefficients at their ``beta_hat`` value in every
    fit (aliased coefficients).

    A coefficient whose estimate does not exist (``diverging``: {index: +1 / -1}, from the
    fit) has the likelihood increase for ever on one side: that bound is +-inf, not searched
    (``objective_hat`` is then the supremum the fit approached, which the other bound is
    relative to), and the column ``note`` says so.

    Each fit starts from the search's previous fit moved along the profile's tangent
    (:func:`profile_tangents`), so that a coefficient correlated with others (an
    ill-conditioned fit, Cyclops #76) moves with them and each fit takes a few steps; where
    covariates are collinear beyond double precision, each fit is settled along their
    difference as the estimate was (:func:`riskset.inference.settle_collinear`). A
    bound whose fit does not converge (or whose log-likelihood is not a number) is NaN, and
    ``note`` says where, rather than a bound found from fits that are not at their optimum.
    """
    options = options or SolverOptions()
    cut = np.sqrt(special.chdtri(1, 1 - level))  # r at the bounds: 2 (f_hat - f_b) = chi2_1(level)
    columns = np.asarray(columns, dtype=np.int64)
    coef = np.repeat(columns, 2)                       # search 2k: lower bound of columns[k], 2k + 1: upper
    side = np.tile([-1.0, 1.0], columns.size)
    se = np.full(columns.size, np.nan) if se is None else np.asarray(se, dtype=np.float64)
    scale = np.where(np.isfinite(se) & (se > 0), se, 0.1 * np.maximum(1.0, np.abs(beta_hat[columns])))
    searches = ProfileSearches(beta_hat[coef], side * 2.0 * np.repeat(scale, 2), f_center=-cut)
    diverging = diverging or {}
    searches.unbounded(np.flatnonzero([diverging.get(int(j), 0) == s for j, s in zip(coef, side)]))
    fitter = HeldFits(datafit, beta_hat, penalty, columns, options, backend, fixed, diverging)
    warm = np.tile(np.asarray(beta_hat, dtype=np.float64), (coef.size, 1))  # each search's last fit
    warm_at = beta_hat[coef].astype(np.float64)                             # ... and its point
    failures = [""] * coef.size
    bar = _bar(progress, coef.size)
    with backend.threads() as pool:
        while not searches.done.all():
            todo, x = searches.proposals()
            fit = fitter.fit(pool, todo // 2, x, warm[todo], warm_at[todo])
            warm[todo], warm_at[todo] = fit.beta, x
            failed = np.isnan(fit.objective) | ~(fit.converged | np.array([bool(d) for d in fit.diverging]))
            for i in np.flatnonzero(failed):
                failures[todo[i]] = (f"the fit at {names[coef[todo[i]]]} = {x[i]:.6g} did not converge "
                                     f"({fit.messages[i] or 'its log-likelihood is not a number'}): bound not found")
            searches.fail(todo[failed])
            with np.errstate(invalid="ignore"):  # -inf objectives (a likelihood of 0) cross the cut
                deficit = np.sqrt(2.0 * np.maximum(objective_hat - fit.objective, 0.0)) - cut
            searches.update(todo[~failed], deficit[~failed], x[~failed])
            if bar is not None:
                bar.update(int(searches.done[todo].sum()))
                bar.set_postfix_str(f"round {searches.rounds}")
    if bar is not None:
        bar.close()
    bounds = searches.root.reshape(-1, 2)
    notes = [f"the estimate does not exist: {names[j]!r} -> {'+' if diverging[j] > 0 else '-'}inf, "
             f"{'upper' if diverging[j] > 0 else 'lower'} bound infinite" if j in diverging else ""
             for j in columns.tolist()]
    notes = ["; ".join(filter(None, (note, *failures[2 * k: 2 * k + 2]))) for k, note in enumerate(notes)]
    return pd.DataFrame({"name": [names[j] for j in columns], "lower": bounds[:, 0], "upper": bounds[:, 1],
                         "level": level, "evaluations": searches.evaluations.reshape(-1, 2).sum(axis=1),
                         "note": notes})


@dataclass(frozen=True)
class ProfilePoints:
    """A profile log-likelihood at points: ``points`` ascending, and at each the maximized
    log-likelihood (``loglik``), penalized log-likelihood (``objective``), derivative
    d objective / d point (``derivative``; of the log-likelihood where the penalty is not
    included), whether its fit converged and why not (``notes``)."""

    points: np.ndarray
    loglik: np.ndarray
    objective: np.ndarray
    derivative: np.ndarray
    converged: np.ndarray
    notes: list


def profile_at(fitter: "HeldFits", beta_hat, points, pool, *, penalized: bool = True) -> ProfilePoints:
    """The profile of ``fitter``'s first coefficient at ``points``, every point one replicate
    of one batch, each started from the estimate moved along the profile's tangent;
    ``derivative`` is that of the penalized log-likelihood (``penalized``) or of the
    log-likelihood.

    By the envelope theorem the derivative of the maximized (penalized) log-likelihood is
    its partial derivative along the held coefficient at each point's optimum: one gradient
    read per point. The log-likelihood alone is not what the others maximize where they are
    penalized: its derivative adds the penalty's gradient along the profile's tangent at
    the point, grad_b pen . db/dx (the others' KKT conditions make grad_b l = grad_b pen)."""
    points = np.sort(np.asarray(points, dtype=np.float64))
    j = int(fitter.columns[0])
    which = np.zeros(points.size, np.int64)
    fit = fitter.fit(pool, which, points, np.tile(beta_hat, (points.size, 1)), np.full(points.size, beta_hat[j]))
    converged = fit.converged & ~np.isnan(fit.objective)
    datafit, pen = fitter.datafit, fitter.penalty
    slope = np.array([datafit.slopes(datafit.new_state(b), np.array([j]))[0] for b in fit.beta])
    gradient = pen.gradient(fit.beta, np.sign(fit.beta - pen.center))  # 0 from the L1 term on its kink
    if penalized:
        derivative = slope - gradient[:, j]
    else:
        derivative, gradient[:, j] = slope.copy(), 0.0
        for r in np.flatnonzero(converged & gradient.any(axis=1)):  # a Hessian of the active set per point
            derivative[r] += gradient[r] @ profile_tangents(datafit, fit.beta[r], pen, [j], fitter.movable)[0]
    notes = [("" if ok else f"the fit did not converge ({message or 'its log-likelihood is not a number'})")
             for ok, message in zip(converged, fit.messages)]
    return ProfilePoints(points, np.where(converged, fit.loglik, np.nan), np.where(converged, fit.objective, np.nan),
                         np.where(converged, derivative, np.nan), converged, notes)


#: Most points of an adaptive profile (each round at most doubles them).
MAX_PROFILE_POINTS = 2000


def adaptive_profile(fitter: "HeldFits", beta_hat, bounds, pool, *, tol: float = 1e-3, initial: int = 10,
                     include_penalty: bool = True) -> tuple[ProfilePoints, str]:
    """The profile of ``fitter``'s first coefficient over ``bounds`` on a grid refined where
    a straight line between neighbouring points could be off by more than ``tol``
    (Cyclops' adaptive profiling): ``(points, problem)``, ``problem`` empty when the grid
    met the tolerance.

    It starts from ``initial`` evenly spaced points and the estimate (when inside).
    Between points a and b, the curve (concave: the profile of a concave log-likelihood)
    lies under the lines extending the neighbouring chords; their crossing bounds the
    error of the chord a-b (|x_c - a| |s_left - s_ab|, the extended chords at the ends).
    Each round fits the midpoints of the intervals whose bound exceeds ``tol``, as one
    batch. It ends unresolved when the largest bound grows (the profile is not concave
    there: a fit short of its optimum), when a point's fit fails inside the range, or
    after :data:`MAX_PROFILE_POINTS` points.
    """
    lo, hi = bounds
    grid = np.linspace(lo, hi, initial)
    j = int(fitter.columns[0])
    if lo < beta_hat[j] < hi:
        grid = np.union1d(grid, [beta_hat[j]])
    parts, worst = [], np.inf
    while True:
        parts.append(profile_at(fitter, beta_hat, grid, pool, penalized=include_penalty))
        profile = _merged(parts)
        value = profile.objective if include_penalty else profile.loglik
        if not profile.converged.all():
            return profile, (f"the fit at {profile.points[~profile.converged][0]:.6g} did not converge: "
                             f"{next(n for n in profile.notes if n)}")
        error = chord_errors(profile.points, value)
        if error.max() > worst:
            return profile, (f"the largest interpolation error grew ({worst:.3g} -> {error.max():.3g}): the "
                             f"profile is not concave there")
        worst = error.max()
        refine = np.flatnonzero(error > tol)
        if refine.size == 0:
            return profile, ""
        if profile.points.size + refine.size > MAX_PROFILE_POINTS:
            return profile, f"{MAX_PROFILE_POINTS} points did not reach the tolerance {tol:g}"
        grid = (profile.points[refine] + profile.points[refine + 1]) / 2


def chord_errors(x, y) -> np.ndarray:
    """For each interval of the points (x, y) (x ascending, at least 3), the largest gap
    between its chord and a concave curve through the points: at the crossing of the
    lines extending the neighbouring chords (the end intervals' outer neighbours have the
    slope extrapolated linearly)."""
    slope = np.diff(y) / np.diff(x)
    left = np.r_[slope[0] + (slope[1] - slope[2]), slope[:-1]]   # the chord before each interval
    right = np.r_[slope[1:], slope[-1] - (slope[-2] - slope[-1])]  # the chord after
    x0, y0, x1, y1 = x[:-1], y[:-1], x[1:], y[1:]
    with np.errstate(divide="ignore", invalid="ignore"):
        cross = (y1 - x1 * right - y0 + x0 * left) / (left - right)
        error = np.abs((cross - x0) * (left - slope))
    return np.where(np.isfinite(error), error, 0.0)


def _merged(parts) -> ProfilePoints:
    """One ProfilePoints of several, sorted by point."""
    points = np.concatenate([p.points for p in parts])
    order = np.argsort(points, kind="stable")
    arrays = {f: np.concatenate([getattr(p, f) for p in parts])[order]
              for f in ("points", "loglik", "objective", "derivative", "converged")}
    notes = [n for p in parts for n in p.notes]
    return ProfilePoints(**arrays, notes=[notes[i] for i in order])


class HeldFits:
    """Fits of the data with one coefficient of ``columns`` held at a point (the points of a
    profile likelihood), as replicate batches on ``backend``.

    Each fit starts from a previous fit (``warm``, at the point ``warm_at``) moved along the
    profile's tangent (:func:`profile_tangents`); where covariates are collinear beyond
    double precision it is settled along their difference
    (:func:`riskset.inference.settle_replicates`). ``fixed`` (mask): coefficients every
    fit holds at their ``beta_hat`` value; ``diverging`` ({index: side}): coefficients whose
    estimate does not exist, not moved along tangents.
    """

    def __init__(self, datafit, beta_hat, penalty: Penalty, columns, options: SolverOptions | None = None,
                 backend: Backend = Backend(), fixed=None, diverging=None):
        self.datafit, self.penalty, self.backend = datafit, penalty, backend
        self.options = options or SolverOptions()
        self.columns = np.asarray(columns, dtype=np.int64)
        self.fixed = None if fixed is None else np.asarray(fixed, bool)
        movable = np.ones(beta_hat.size, bool) if fixed is None else ~self.fixed
        movable[list(diverging or {})] = False
        self.movable = movable
        self.tangent = profile_tangents(datafit, beta_hat, penalty, self.columns, movable)
        self.collinear = np.zeros((0, beta_hat.size)) if penalty.is_penalized else collinear_directions(
            datafit, beta_hat, movable)

    def fit(self, pool, which, x, warm, warm_at):
        """:class:`~riskset.solver.replicates.ReplicateResult` of the fits holding coefficient
        ``columns[which[r]]`` at ``x[r]``, started from ``warm[r]`` (a fit at ``warm_at[r]``)."""
        held = self.columns[which]
        rows = np.arange(held.size)
        beta0 = warm + (x - warm_at)[:, None] * self.tangent[which]
        beta0[rows, held] = x
        free = np.ones(beta0.shape, bool)
        if self.fixed is not None:
            free[:, self.fixed] = False
        free[rows, held] = False
        pen = self.penalty

        def run(b, f):
            return fit_replicates(self.backend.repeated(self.datafit, len(b), pool), pen.l1, pen.l2, beta0=b,
                                  free=f, options=self.options, center=pen.center)

        fit = run(beta0, free)
        if self.collinear.size:
            settle_replicates(fit, self.collinear, free, run, self.datafit, self.options.tol)
        return fit


def profile_tangents(datafit, beta_hat, penalty: Penalty, columns, movable) -> np.ndarray:
    """(len(columns), P): d beta / d b_j along the profile of each coefficient j of ``columns``
    at the estimate, from the quadratic approximation of the penalized log-likelihood:
    holding beta_j = b, the others' optimum moves by (b - b_hat) Sigma[:, j] / Sigma[j, j],
    Sigma the inverse of the penalized information of the coefficients that may move
    (``movable``, and off an L1 kink: a coefficient held at its center stays there).

    The others stay put (a unit row: the previous fit is the start) for a coefficient that
    is not movable itself (diverging), and for all where the movable coefficients are more
    than :data:`MAX_SE_COEF` or their information is singular.
    """
    columns = np.asarray(columns, dtype=np.int64)
    tangent = np.zeros((columns.size, beta_hat.size))
    tangent[np.arange(columns.size), columns] = 1.0
    moving = movable & ((penalty.l1 == 0) | ~penalty.at_center(beta_hat))
    moving[columns] = movable[columns]
    free = np.flatnonzero(moving)
    searched = np.flatnonzero(movable[columns])  # rows of tangent to compute
    if searched.size == 0 or free.size > MAX_SE_COEF or free.size == searched.size:
        return tangent
    info = -datafit.hessian(datafit.new_state(beta_hat), free) + np.diag(penalty.l2[free])
    at = np.searchsorted(free, columns[searched])
    try:
        sigma = np.linalg.solve(info, np.eye(free.size)[:, at])  # Sigma[:, j] for the searched j
    except np.linalg.LinAlgError:
        return tangent
    rows = sigma.T / sigma[at, np.arange(at.size)][:, None]
    ok = np.all(np.isfinite(rows), axis=1)
    tangent[searched[ok][:, None], free[None, :]] = rows[ok]
    return tangent


class ProfileSearches:
    """Bracketing root searches of S functions d_s(b), advanced together (vectorized).

    Search s starts at ``center[s]`` (the MLE), where d_s = ``f_center`` < 0, and d_s
    grows away from it in the direction of ``step[s]`` (e.g. a profile deficit).

    1. Bracket: evaluate ``center + step * 2**k``, k = 0, 1, ... until d > 0; the
       previous point (or the center) is the other end. After :data:`MAX_DOUBLINGS`
       steps without a sign change the bound is infinite.
    2. Root: Chandrupatla's method (Chandrupatla 1997, as in SciPy's elementwise
       ``find_root``): the next point is x1 + t (x2 - x1) with [x1, x2] the bracket and
       x1 the newest point; t comes from inverse quadratic interpolation through the
       last three points where Chandrupatla's criterion says the interpolant is monotone
       there, from bisection otherwise (the first step, with two points, from the
       secant), and is kept at least tol from the bracket ends. Superlinear like Brent's
       method, with no branching state beyond three points.
    3. Stop (``scipy.optimize.brentq``'s rule, with its ``xtol`` as the sequential
       search used): the bracket is narrower than ``xtol + 4 eps |b|``, xtol =
       1e-8 max(1, |first bracket end|); the root is the end with the smaller |d|.

    Examples
    --------
    >>> s = ProfileSearches(np.zeros(2), np.array([-1.0, 1.0]), f_center=-1.0)
    >>> while not s.done.all():
    ...     todo, x = s.proposals()
    ...     s.update(todo, x * x - 1.0)   # roots -1 and 1
    >>> np.allclose(s.root, [-1.0, 1.0], atol=1e-8)
    True
    """

    def __init__(self, center, step, f_center):
        self.center, self.step = np.asarray(center, float), np.asarray(step, float)
        n = self.center.size
        self.k = np.zeros(n, np.int64)             # doublings so far (bracketing)
        self.bracketed = np.zeros(n, bool)
        self.done = np.zeros(n, bool)
        self.root = np.full(n, np.nan)
        self.x1, self.f1 = self.center.copy(), np.full(n, float(f_center))  # newest point
        self.x2, self.f2 = np.full(n, np.nan), np.full(n, np.nan)       # other bracket end
        self.x3, self.f3 = np.full(n, np.nan), np.full(n, np.nan)       # the point dropped last
        self.t = np.full(n, 0.5)
        self.xtol = np.zeros(n)
        self.evaluations = np.zeros(n, np.int64)
        self.rounds = 0

    def proposals(self):
        """(unfinished searches, the point each evaluates next)."""
        todo = np.flatnonzero(~self.done)
        b = self.bracketed[todo]
        x = np.where(b, self.x1[todo] + self.t[todo] * (self.x2[todo] - self.x1[todo]),
                     self.center[todo] + self.step[todo] * 2.0 ** self.k[todo])
        self._x = x
        return todo, x

    def update(self, todo, f, x=None):
        """Record d = ``f`` at the points ``x`` of searches ``todo`` (by default the last
        :meth:`proposals`, all of them) and plan the next ones."""
        self.rounds += 1
        self.evaluations[todo] += 1
        x, f = (self._x if x is None else np.asarray(x, float)), np.asarray(f, float)
        stepping = ~self.bracketed[todo]
        self._iterate(todo[~stepping], x[~stepping], f[~stepping])
        s, x, f = todo[stepping], x[stepping], f[stepping]
        crossed = f > 0
        self._start(s[crossed], x[crossed], f[crossed])
        s, x, f = s[~crossed], x[~crossed], f[~crossed]
        self.x1[s], self.f1[s] = x, f
        self.k[s] += 1
        self.unbounded(s[self.k[s] >= MAX_DOUBLINGS])

    def fail(self, s):
        """End searches ``s`` without a root (NaN): their function could not be evaluated."""
        self.evaluations[s] += 1
        self.root[s], self.done[s] = np.nan, True

    def unbounded(self, s):
        """End searches ``s``: their function never crosses zero, the root is at +-inf."""
        self.root[s], self.done[s] = np.sign(self.step[s]) * np.inf, True

    def _start(self, s, x, f):
        """Searches ``s`` found d(x) > 0: bracket [previous point, x], first step by the secant."""
        self.bracketed[s] = True
        self.xtol[s] = 1e-8 * np.maximum(1.0, np.abs(x))
        self.x2[s], self.f2[s] = self.x1[s], self.f1[s]
        self.x1[s], self.f1[s] = x, f
        with np.errstate(divide="ignore", invalid="ignore"):
            t = f / (f - self.f2[s])
        self._plan(s, np.where(np.isfinite(t), t, 0.5))

    def _iterate(self, s, x, f):
        """One Chandrupatla step of searches ``s`` that evaluated d(x) = f inside their bracket."""
        same = np.sign(f) == np.sign(self.f1[s])
        # the bracket end on f's side is dropped (to x3); x becomes x1
        self.x3[s] = np.where(same, self.x1[s], self.x2[s])
        self.f3[s] = np.where(same, self.f1[s], self.f2[s])
        self.x2[s] = np.where(same, self.x2[s], self.x1[s])
        self.f2[s] = np.where(same, self.f2[s], self.f1[s])
        self.x1[s], self.f1[s] = x, f
        x1, x2, x3, f1, f2, f3 = (a[s] for a in (self.x1, self.x2, self.x3, self.f1, self.f2, self.f3))
        with np.errstate(divide="ignore", invalid="ignore"):
            xi = (x1 - x2) / (x3 - x2)
            phi = (f1 - f2) / (f3 - f2)
            alpha = (x3 - x1) / (x2 - x1)
            # inverse quadratic interpolation through (x1, x2, x3), in units of x2 - x1
            t = f1 / (f1 - f2) * f3 / (f3 - f2) - alpha * f1 / (f3 - f1) * f2 / (f2 - f3)
            # Chandrupatla's test that the interpolant is monotone on the bracket (xi in (0, 1))
            monotone = (1.0 - np.sqrt(1.0 - xi) < phi) & (phi < np.sqrt(xi))
        self._plan(s, np.where(monotone, t, 0.5))

    def _plan(self, s, t):
        """Stop searches ``s`` whose bracket is below tolerance, else set their next t."""
        x1, x2, f1, f2 = self.x1[s], self.x2[s], self.f1[s], self.f2[s]
        best = np.where(np.abs(f1) < np.abs(f2), x1, x2)
        tol = self.xtol[s] + 4.0 * np.finfo(float).eps * np.abs(best)
        width = np.abs(x2 - x1)
        stop = (width < tol) | (np.minimum(np.abs(f1), np.abs(f2)) == 0) | ~np.isfinite(best)
        self.done[s[stop]], self.root[s[stop]] = True, best[stop]
        with np.errstate(divide="ignore", invalid="ignore"):
            tl = 0.5 * tol / width  # the next point at least tol / 2 inside the bracket
        self.t[s] = np.clip(t, tl, 1.0 - tl)


def _bar(show, total):
    if not show:
        return None
    from tqdm.auto import tqdm

    return tqdm(total=total, desc="profile likelihood", unit="bound")
