"""Standard errors from the observed information and profile-likelihood intervals."""
from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
from scipy import stats

from riskset.backend import Backend
from riskset.core.penalty import Penalty
from riskset.data.dataset import first_names
from riskset.exceptions import ConvergenceWarning, DataWarning
from riskset.solver.ccd import SolverOptions, fit_ccd
from riskset.solver.replicates import fit_replicates

#: Largest number of coefficients whose covariance is computed by a dense inverse.
MAX_SE_COEF = 5000

#: Relative pivot below which a coefficient is aliased: R's coxph tolerance (toler.chol =
#: eps^0.75), taken relative to the coefficient's own information so that it does not
#: depend on the covariate's scale.
ALIAS_TOL = np.finfo(float).eps ** 0.75

#: Relative log-likelihood loss within which a refit without the aliased columns counts as
#: the same fit (both converge to a relative objective change of 1e-10 by default).
SAME_LOGLIK = 1e-8


def aliased_coefficients(information: np.ndarray, scale: np.ndarray | None = None,
                         tol: float = ALIAS_TOL) -> np.ndarray:
    """Mask of the aliased coefficients of a positive semi-definite information matrix.

    Column order decides, as in R's glm and coxph: coefficient j is aliased when its
    information left after the earlier non-aliased coefficients (the pivot of an LDL'
    factorization in column order) is at most ``tol`` times ``scale[j]`` (default: its own
    information I_jj), i.e. its column is a linear combination of earlier columns (a
    constant beside the intercept, a duplicate, a dummy of every level). A coefficient
    without information (I_jj at most ``tol * scale[j]``: a rounding residue of the
    :meth:`~riskset.models.base.Datafit.information_scale`) is aliased too.

    Examples
    --------
    >>> info = np.array([[2.0, 1.0, 2.0], [1.0, 1.0, 1.0], [2.0, 1.0, 2.0]])  # column 2 = column 0
    >>> aliased_coefficients(info).tolist()
    [False, False, True]
    """
    info = np.asarray(information, dtype=np.float64)
    diag = np.diag(info).copy()
    scale = diag if scale is None else np.asarray(scale, dtype=np.float64)
    if np.all(diag > tol * scale) and _well_conditioned(info, diag, tol):
        return np.zeros(diag.size, bool)
    p = diag.size
    L, d = np.zeros((p, p)), np.zeros(p)  # unit lower factor and pivots; aliased columns stay 0
    aliased = np.zeros(p, bool)
    for j in range(p):
        pivot = diag[j] - L[j, :j] ** 2 @ d[:j]
        if not pivot > tol * scale[j]:
            aliased[j] = True
            continue
        d[j] = pivot
        L[j + 1:, j] = (info[j + 1:, j] - L[j + 1:, :j] @ (L[j, :j] * d[:j])) / pivot
    return aliased


def _well_conditioned(info, diag, tol) -> bool:
    """Fast path of :func:`aliased_coefficients`: the Cholesky factor of the information
    scaled to unit diagonal exists and its every pivot exceeds ``tol``."""
    if not np.all(diag > 0):
        return False
    scale = 1.0 / np.sqrt(diag)
    try:
        chol = np.linalg.cholesky(info * scale[:, None] * scale[None, :])
    except np.linalg.LinAlgError:
        return False
    return bool(np.all(np.diag(chol) ** 2 > tol))


def refit_without_aliased(datafit, result, penalty: Penalty, options: SolverOptions | None = None,
                          warn: bool = True):
    """``(result, aliased mask)`` of an unpenalized fit, R-style: the aliased coefficients
    (:func:`aliased_coefficients` of the observed information at ``result``) are held at 0
    and the others refitted, so that they are the estimates of the fit without the aliased
    columns (their standard errors exist).

    An aliased column is redundant, so the refit must reach the log-likelihood of
    ``result``; where it does not (the information was not a reliable guide, e.g. at
    diverging coefficients), or nothing is aliased, or the coefficients are more than
    :data:`MAX_SE_COEF`, ``result`` is returned with no coefficient aliased. ``warn``: a
    DataWarning names the aliased coefficients.
    """
    p = datafit.n_coef
    none = np.zeros(p, bool)
    if p == 0 or p > MAX_SE_COEF:
        return result, none
    columns = np.arange(p)
    aliased = aliased_coefficients(-datafit.hessian(result.state, columns),
                                   datafit.information_scale(result.state, columns))
    if not aliased.any():
        return result, none
    refit = fit_ccd(datafit, penalty.l1, penalty.l2, beta0=np.where(aliased, 0.0, result.beta), fixed=aliased,
                    options=options, center=penalty.center)
    if not (refit.converged and refit.loglik >= result.loglik - SAME_LOGLIK * (1.0 + abs(result.loglik))):
        return result, none
    if warn:
        _warn_aliased([datafit.coef_label(j) for j in np.flatnonzero(aliased)])
    return refit, aliased


def _warn_aliased(names):
    warnings.warn(f"{len(names)} coefficient(s) not defined because of singularities (aliased: a linear "
                  f"combination of earlier columns, e.g. a constant or duplicated covariate): "
                  f"{first_names(names)}. They are reported as NaN "
                  "and held at 0; the other estimates are those of the fit without them", DataWarning, stacklevel=4)


def standard_errors(datafit, state, columns: np.ndarray) -> np.ndarray:
    """sqrt(diag(inverse observed information)) of the coefficients ``columns``.

    NaN where the information is singular (e.g. a covariate collinear with others).
    """
    if columns.size == 0 or columns.size > MAX_SE_COEF:
        return np.full(columns.size, np.nan)
    info = -datafit.hessian(state, columns)
    try:
        cov = np.linalg.inv(info)
    except np.linalg.LinAlgError:
        warnings.warn("the observed information is singular: standard errors are NaN", ConvergenceWarning,
                      stacklevel=3)
        return np.full(columns.size, np.nan)
    var = np.diag(cov)
    return np.sqrt(np.where(var > 0, var, np.nan))


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
    """
    options = options or SolverOptions()
    cut = np.sqrt(stats.chi2.ppf(level, 1))  # r at the bounds: 2 (f_hat - f_b) = chi2_1(level)
    columns = np.asarray(columns, dtype=np.int64)
    coef = np.repeat(columns, 2)                       # search 2k: lower bound of columns[k], 2k + 1: upper
    side = np.tile([-1.0, 1.0], columns.size)
    se = np.full(columns.size, np.nan) if se is None else np.asarray(se, dtype=np.float64)
    scale = np.where(np.isfinite(se) & (se > 0), se, 0.1 * np.maximum(1.0, np.abs(beta_hat[columns])))
    searches = ProfileSearches(beta_hat[coef], side * 2.0 * np.repeat(scale, 2), f_center=-cut)
    diverging = diverging or {}
    searches.unbounded(np.flatnonzero([diverging.get(int(j), 0) == s for j, s in zip(coef, side)]))
    warm = np.tile(np.asarray(beta_hat, dtype=np.float64), (coef.size, 1))
    bar = _bar(progress, coef.size)
    with backend.threads() as pool:
        while not searches.done.all():
            todo, x = searches.proposals()
            rows = np.arange(todo.size)
            beta0 = warm[todo]
            beta0[rows, coef[todo]] = x
            free = np.ones(beta0.shape, bool)
            if fixed is not None:
                free[:, fixed] = False
            free[rows, coef[todo]] = False
            batch = backend.repeated(datafit, todo.size, pool)
            fit = fit_replicates(batch, penalty.l1, penalty.l2, beta0=beta0, free=free, options=options,
                                 center=penalty.center)
            warm[todo] = fit.beta
            searches.update(todo, np.sqrt(2.0 * np.maximum(objective_hat - fit.objective, 0.0)) - cut)
            if bar is not None:
                bar.update(int(searches.done[todo].sum()))
                bar.set_postfix_str(f"round {searches.rounds}")
    if bar is not None:
        bar.close()
    bounds = searches.root.reshape(-1, 2)
    notes = [f"the estimate does not exist: {names[j]!r} -> {'+' if diverging[j] > 0 else '-'}inf, "
             f"{'upper' if diverging[j] > 0 else 'lower'} bound infinite" if j in diverging else ""
             for j in columns.tolist()]
    return pd.DataFrame({"name": [names[j] for j in columns], "lower": bounds[:, 0], "upper": bounds[:, 1],
                         "level": level, "evaluations": searches.evaluations.reshape(-1, 2).sum(axis=1),
                         "note": notes})


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

    def update(self, todo, f):
        """Record d at the points of the last :meth:`proposals` and plan the next ones."""
        self.rounds += 1
        self.evaluations[todo] += 1
        x, f = self._x, np.asarray(f, float)
        stepping = ~self.bracketed[todo]
        self._iterate(todo[~stepping], x[~stepping], f[~stepping])
        s, x, f = todo[stepping], x[stepping], f[stepping]
        crossed = f > 0
        self._start(s[crossed], x[crossed], f[crossed])
        s, x, f = s[~crossed], x[~crossed], f[~crossed]
        self.x1[s], self.f1[s] = x, f
        self.k[s] += 1
        self.unbounded(s[self.k[s] >= MAX_DOUBLINGS])

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
