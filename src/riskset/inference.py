"""Standard errors from the observed information, aliased coefficients, and fits settled
along covariates collinear beyond double precision."""
from __future__ import annotations

import warnings

import numpy as np

from riskset.core.penalty import Penalty
from riskset.data.dataset import first_names
from riskset.exceptions import ConvergenceWarning, DataWarning
from riskset.solver.ccd import SolverOptions, fit_ccd

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


#: A coefficient that moves the linear predictor by more than this (|beta_j| max |x_j|) while
#: its standard error exceeds it creeps along a likelihood that keeps rising (Heinze &
#: Schemper 2002): its estimate does not exist, however flat the likelihood looked to the solver.
CREEP_REACH = 10.0

#: A column whose residual on the other columns keeps less than this share of its sum of
#: squares is nearly collinear with them: a large, imprecise coefficient is then expected.
COLLINEAR_SHARE = 1e-6


def creeping(datafit, beta: np.ndarray, se: np.ndarray, computed: np.ndarray) -> np.ndarray:
    """Mask of the coefficients of an unpenalized fit whose estimate does not exist although the
    solver settled (quasi-separation that rounding hid from :mod:`riskset.solver.separation`):
    they move the linear predictor by more than :data:`CREEP_REACH`, their standard error (the
    ``computed`` ones) is not smaller than themselves or does not exist (a singular information
    at the fit), and their column is not nearly collinear with the others (whose coefficients are
    large and imprecise by design: x2 = x1 + 1e-9 z)."""
    X = datafit.design.to_csc()
    columns = np.array([datafit.coef_of_column(j) for j in range(X.shape[1])], dtype=np.int64)
    size = np.ones(beta.size)  # implicit columns (a GLM's intercept) are columns of ones
    size[columns] = np.asarray(abs(X).max(axis=0).todense()).ravel() if X.shape[1] else 0.0
    suspect = (np.abs(beta) * size > CREEP_REACH) & np.asarray(computed, bool) & ~(np.asarray(se) < np.abs(beta))
    if not suspect.any():
        return suspect
    gram = _coefficient_gram(X, columns, beta.size)
    for j in np.flatnonzero(suspect):
        o = np.flatnonzero(np.arange(beta.size) != j)
        explained = gram[j, o] @ np.linalg.lstsq(gram[np.ix_(o, o)], gram[o, j], rcond=None)[0] if o.size else 0.0
        if gram[j, j] - explained < COLLINEAR_SHARE * gram[j, j]:
            suspect[j] = False
    return suspect


def _coefficient_gram(X, columns: np.ndarray, p: int) -> np.ndarray:
    """D'D of the design D with one column per coefficient: X's columns at ``columns``, the
    implicit ones (a GLM's intercept) columns of ones."""
    gram = np.zeros((p, p))
    gram[np.ix_(columns, columns)] = (X.T @ X).toarray()
    implicit = np.setdiff1d(np.arange(p), columns)
    if implicit.size:
        sums = np.asarray(X.sum(axis=0)).ravel()
        gram[np.ix_(implicit, implicit)] = X.shape[0]
        for k in implicit:
            gram[k, columns] = gram[columns, k] = sums
    return gram


def refit_without_aliased(datafit, result, penalty: Penalty, options: SolverOptions | None = None,
                          warn: bool = True, fixed: np.ndarray | None = None):
    """``(result, aliased mask)`` of an unpenalized fit, R-style: the aliased coefficients
    (:func:`aliased_coefficients` of the observed information at ``result``) are held at 0
    and the others refitted, so that they are the estimates of the fit without the aliased
    columns (their standard errors exist). ``fixed`` (mask): coefficients held at their
    value in ``result`` throughout, never aliased.

    An aliased column is redundant, so the refit must reach the log-likelihood of
    ``result``; where it does not (the information was not a reliable guide, e.g. at
    diverging coefficients), or nothing is aliased, or the coefficients are more than
    :data:`MAX_SE_COEF`, ``result`` is returned with no coefficient aliased (settled along
    the collinear directions, :func:`settle_collinear`). ``warn``: a DataWarning names the
    aliased coefficients.
    """
    p = datafit.n_coef
    held = np.zeros(p, bool) if fixed is None else np.asarray(fixed, bool)
    aliased = np.zeros(p, bool)
    columns = np.flatnonzero(~held)
    if columns.size == 0 or columns.size > MAX_SE_COEF:
        return result, aliased
    info = -datafit.hessian(result.state, columns)
    aliased[columns] = aliased_coefficients(info, datafit.information_scale(result.state, columns))
    if not aliased.any():
        return result, aliased
    refit = fit_ccd(datafit, penalty.l1, penalty.l2, beta0=np.where(aliased, 0.0, result.beta), fixed=aliased | held,
                    options=options, center=penalty.center)
    if not (refit.converged and refit.loglik >= result.loglik - SAME_LOGLIK * (1.0 + abs(result.loglik))):
        if result.converged:  # not redundant: collinear short of aliased (Cyclops #76)
            directions = np.zeros((int(aliased.sum()), p))
            directions[:, columns] = null_directions(info, aliased[columns])
            result = settle_collinear(datafit, result, directions, penalty, options, held)
        return result, np.zeros(p, bool)
    if warn:
        _warn_aliased([datafit.coef_label(j) for j in np.flatnonzero(aliased)])
    return refit, aliased


#: Rounds of :func:`settle_collinear` (a line search along the collinear directions, then a refit).
SETTLE_ROUNDS = 5

#: Doublings of a line search's step (from a move of 1e-4 in the linear predictor).
LINE_DOUBLINGS = 60


def null_directions(information: np.ndarray, aliased: np.ndarray) -> np.ndarray:
    """(k, P): for each coefficient j of ``aliased``, the direction e_j - sum_k c_k e_k over the
    earlier non-aliased coefficients k that leaves the linear predictor (nearly) unchanged:
    c regresses column j on them in the metric of the ``information``."""
    p = aliased.size
    out = np.zeros((int(aliased.sum()), p))
    for row, j in enumerate(np.flatnonzero(aliased)):
        earlier = np.flatnonzero(~aliased[:j])
        out[row, j] = 1.0
        if earlier.size:
            c = np.linalg.lstsq(information[np.ix_(earlier, earlier)], information[earlier, j], rcond=None)[0]
            out[row, earlier] = -c
    return out


def settle_collinear(datafit, result, directions: np.ndarray, penalty: Penalty, options: SolverOptions | None,
                     fixed: np.ndarray | None = None):
    """``result`` of an unpenalized fit, moved to the optimum along nearly collinear directions.

    Along a direction v where two covariates nearly coincide (x2 = x1 + 1e-9 z), the
    information is below double precision's resolution (its pivot under eps x I_jj), so
    coordinate steps and the KKT check, which read it, cannot see that the likelihood still
    rises along v; the likelihood itself, evaluated at beta + t v, can. Each round maximizes
    it along every v (a doubling bracket, then Brent's method) and refits from there; the
    fit is settled when no direction gains more than the solver's ``tol`` (relative). Not
    settled after :data:`SETTLE_ROUNDS` rounds, the result is marked not converged, naming
    the covariates, rather than reported at a point that is not the optimum. ``fixed``
    (mask): coefficients the refits hold at their value (the directions leave them alone).
    """
    names = [datafit.coef_label(int(j)) for j in np.flatnonzero(np.any(directions != 0, axis=0))]
    tol = (options or SolverOptions()).tol
    for _ in range(SETTLE_ROUNDS):
        beta, gained = result.beta, False
        for v in directions:
            beta, gain = _maximize_along(datafit, beta, v)
            gained |= gain > tol * (1.0 + abs(result.loglik))
        if not gained:
            return result
        result = fit_ccd(datafit, penalty.l1, penalty.l2, beta0=beta, fixed=fixed, options=options,
                         center=penalty.center)
        if not result.converged:
            return result
    result.converged = False
    result.message = (f"the covariates {first_names(names)} are collinear beyond what double precision resolves "
                      f"(their information matrix is singular to rounding) and the log-likelihood still rises "
                      f"along their difference after {SETTLE_ROUNDS} rounds: combine them (e.g. x1 and x2 - x1, "
                      f"rescaled) or remove one")
    return result


def collinear_directions(datafit, beta, movable) -> np.ndarray:
    """(k, P) :func:`null_directions` of the coefficients ``movable`` whose information at
    ``beta`` is singular to rounding (none beyond :data:`MAX_SE_COEF` coefficients)."""
    free = np.flatnonzero(movable)
    if free.size == 0 or free.size > MAX_SE_COEF:
        return np.zeros((0, beta.size))
    state = datafit.new_state(beta)
    info = -datafit.hessian(state, free)
    aliased = aliased_coefficients(info, datafit.information_scale(state, free))
    out = np.zeros((int(aliased.sum()), beta.size))
    out[:, free] = null_directions(info, aliased)
    return out


def settle_replicates(fit, directions, free, refit, datafit, tol: float) -> None:
    """:func:`settle_collinear` for the replicates of ``fit`` (a ReplicateResult, updated in
    place; ``refit(beta0, free)`` fits replicates again): each direction moves only the
    replicate's ``free`` coefficients; a replicate not settled is marked not converged."""
    rows = np.flatnonzero(fit.converged)
    for _ in range(SETTLE_ROUNDS):
        moved, gaining = fit.beta[rows].copy(), np.zeros(rows.size, bool)
        for i, r in enumerate(rows):
            for v in directions * free[r]:
                moved[i], gain = _maximize_along(datafit, moved[i], v)
                gaining[i] |= gain > tol * (1.0 + abs(fit.loglik[r]))
        rows, moved = rows[gaining], moved[gaining]
        if rows.size == 0:
            return
        again = refit(moved, free[rows])
        for field in ("beta", "loglik", "objective", "converged"):
            getattr(fit, field)[rows] = getattr(again, field)
        for i, r in enumerate(rows):
            fit.messages[r], fit.diverging[r] = again.messages[i], again.diverging[i]
        rows = rows[again.converged]
    fit.converged[rows] = False
    for r in rows:
        fit.messages[r] = f"the log-likelihood still rises along collinear covariates after {SETTLE_ROUNDS} rounds"


def _maximize_along(datafit, beta, v) -> tuple[np.ndarray, float]:
    """(beta + t v at the maximum of the log-likelihood along v, the gain over beta)."""
    reach = datafit.reach(v)
    f0 = datafit.loglik_at(beta)
    if not reach > 0 or not np.isfinite(f0):
        return beta, 0.0

    def loss(t):
        f = datafit.loglik_at(beta + t * v)
        return -f if np.isfinite(f) else np.inf

    for sign in (1.0, -1.0):
        t = sign * 1e-4 / reach  # a step that moves any linear predictor by 1e-4, doubled while it gains
        f_t = loss(t)
        if not f_t < -f0:
            continue
        t_prev = 0.0
        for _ in range(LINE_DOUBLINGS):
            f_next = loss(2.0 * t)
            if not f_next < f_t:
                break
            t_prev, t, f_t = t, 2.0 * t, f_next
        else:
            return beta, 0.0  # still rising: the separation test's ground, not this one's
        from scipy import optimize  # here: scipy.optimize costs a second at import, and few fits come here

        best = optimize.minimize_scalar(loss, bracket=(t_prev, t, 2.0 * t), tol=1e-10)
        t_best = best.x if best.fun <= f_t else t
        return beta + t_best * v, -min(best.fun, f_t) - f0
    return beta, 0.0


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
