"""Non-existence of the estimate: monotone likelihood (separation), one test for every family.

Every family's log-likelihood is concave and bounded above, so a positive penalty on a
coefficient keeps it finite; the maximizer can fail to exist only along directions d of
*unpenalized* coefficients (no prior, or ``exclude=``) that are directions of recession:
``l(beta + t d)`` never decreases as t grows (the gain shrinks to a finite supremum) yet
is not constant (else d would be aliasing, not divergence). Coordinate descent then moves
along d for ever until its relative gain falls below ``tol``, ending at a "converged" fit
with huge coefficients and standard errors.

:func:`diverging_coefficients` tests this after the cycles, through the datafit interface
only (``reach``, ``new_state``, ``loglik``, ``recedes``), so it covers every family and the
device datafits alike:

1. candidates: unpenalized free coefficients whose contribution ``max_i |x_ij beta_j|``
   to the linear predictor exceeds :data:`CANDIDATE_ETA` (a clean fit almost never has
   one; the test costs nothing then);
2. directions: each candidate alone (towards the sign of its estimate: every one that
   passes is reported), else all candidates together (complete separation moves the intercept with the covariate) and
   their flattest direction (least curvature), scaled so that ``max_i |x_i d| = 1`` (one
   unit of linear predictor);
3. the ray test: ``l(beta + t d) >= l(beta) - eps`` for t in :data:`RAY_STEPS` (a finite
   maximum loses at least ~ info / 2 per unit step), and ``l`` with beta's component along
   d removed is clearly lower than ``l(beta)`` (the direction matters: not an aliased column).
   Where the datafit reads it from the data (:meth:`~riskset.core.interface.ExactSeparation.recedes`,
   the GLMs: every row's linear predictor moves only the way its outcome lets it go), that
   exact test replaces the ray: at a fit that separates every row (l ~ -1e-13, the 30
   covariates of the breast-cancer data) a single coefficient's ray lost less than ``eps``
   and passed, naming covariates that diverge only together with the others.
4. a candidate that alone separates the outcome (the univariable check,
   :meth:`~riskset.core.interface.Datafit.univariable_separation`, where it is exact: the GLMs;
   towards the sign of its estimate) diverges even where the ray's changes are below rounding (e.g. one row of
   weight 1e12 holds the intercept near -28, so the other rows' terms are ~1e-12): its
   direction, with the intercept or baseline, is a recession direction of the whole
   likelihood (Albert & Anderson 1984), so the estimate cannot exist.

A strong but finite effect (beta = 3 on a rare covariate, wide SE) is no candidate, and
were it one, the first step of the ray would lose likelihood.
"""
from __future__ import annotations

import numpy as np

from riskset.core.interface import ExactSeparation

#: Contribution to the linear predictor (log-odds, log-hazard ...) beyond which an
#: unpenalized coefficient is tested for divergence (a ratio of e^5 ~ 150 per unit of x).
CANDIDATE_ETA = 5.0

#: Steps along the ray, in units of linear predictor, at which the likelihood must not drop.
RAY_STEPS = (1.0, 4.0, 16.0)

#: Relative tolerance of "does not drop" (rounding of a log-likelihood sum).
RAY_RTOL = 1e-9

#: Relative loss of likelihood, setting the candidates to zero, that shows the direction
#: matters (an aliased direction loses nothing).
MATTERS_RTOL = 1e-8


def univariable_directions(datafit, columns) -> np.ndarray:
    """Per coefficient index of ``columns``: +1 / -1 if it alone separates towards
    +inf / -inf, else 0 (:meth:`~riskset.core.interface.Datafit.univariable_separation`;
    the check before a fit, :func:`riskset.separability`, reports it per covariate)."""
    columns = np.asarray(columns, dtype=np.int64)
    if not columns.size:
        return np.zeros(0, dtype=np.int64)
    return np.asarray(datafit.univariable_separation(columns), dtype=np.int64)


def diverging_coefficients(datafit, beta, l1, l2, free) -> dict[int, int]:
    """Coefficients along which the likelihood keeps increasing for ever: {index: +1 / -1}.

    Parameters
    ----------
    datafit : any :class:`~riskset.core.interface.Datafit`.
    beta : the coefficients where the fit ended.
    l1, l2, free : penalties and the mask of fitted (not fixed) coefficients.

    Examples
    --------
    >>> import numpy as np, riskset
    >>> from riskset.solver.ccd import fit_ccd
    >>> x = np.array([0, 0, 0, 0, 1, 1, 1, 1.0])
    >>> datafit = riskset.models.get_model("logistic").datafit(riskset.from_arrays(x[:, None], y=x))
    >>> res = fit_ccd(datafit, np.zeros(2), np.zeros(2))
    >>> diverging_coefficients(datafit, res.beta, np.zeros(2), np.zeros(2), np.ones(2, bool))
    {1: 1}
    """
    candidates = _candidates(datafit, np.asarray(beta, float), l1, l2, free)
    if not candidates.size:
        return {}
    state = datafit.new_state(beta)
    ll = datafit.loglik(state)
    if not np.isfinite(ll):
        return {}
    alone = {int(j): int(np.sign(beta[j])) for j in candidates if _is_recession(datafit, beta, _on(beta, [j]), ll)}
    if isinstance(datafit, ExactSeparation):
        for j, separates in zip(candidates, univariable_directions(datafit, candidates)):
            if separates != 0 and separates == np.sign(beta[j]):
                alone.setdefault(int(j), int(separates))
    if alone or candidates.size < 2:
        return alone
    for direction in _joint_directions(datafit, state, beta, candidates):
        if _is_recession(datafit, beta, direction, ll):
            return {int(j): int(np.sign(direction[j])) for j in np.flatnonzero(direction)}
    return {}


def _joint_directions(datafit, state, beta, candidates):
    """Directions of several candidates (none diverges alone): their estimates together and
    the flattest direction of the likelihood among them (the eigenvector of the least
    curvature, oriented with the estimate: e.g. intercept -> -inf while the treatment ->
    +inf, the treated rows' linear predictor held)."""
    yield _on(beta, candidates)
    curvature = -datafit.hessian(state, candidates)
    if not np.all(np.isfinite(curvature)):
        return
    flattest = np.linalg.eigh(curvature)[1][:, 0]
    direction = np.zeros_like(beta)
    direction[candidates] = flattest * np.sign(flattest @ beta[candidates] or 1.0)
    direction[np.abs(direction) < 1e-8 * np.max(np.abs(direction))] = 0.0
    yield direction


def _candidates(datafit, beta, l1, l2, free) -> np.ndarray:
    """Unpenalized free non-zero coefficients that each move the linear predictor by more
    than :data:`CANDIDATE_ETA` somewhere (one product if none can)."""
    unpenalized = np.flatnonzero(np.asarray(free, bool) & (l1 == 0) & (l2 == 0) & (beta != 0))
    if not unpenalized.size or not datafit.reach(_on(beta, unpenalized)) > CANDIDATE_ETA:
        return unpenalized[:0]
    return np.array([j for j in unpenalized if datafit.reach(_on(beta, [j])) > CANDIDATE_ETA], dtype=np.int64)


def _on(beta, coords) -> np.ndarray:
    """``beta`` on ``coords``, 0 elsewhere."""
    d = np.zeros_like(beta)
    d[coords] = beta[coords]
    return d


def _is_recession(datafit, beta, direction, ll) -> bool:
    """The test of ``direction`` from ``beta`` (item 3 of the module docstring): the datafit's
    exact one where it has one (:meth:`~riskset.core.interface.ExactSeparation.recedes`), else the ray."""
    if isinstance(datafit, ExactSeparation):
        if not datafit.recedes(direction):
            return False
    elif not _ray_climbs(datafit, beta, direction, ll):
        return False
    back = beta - (beta @ direction) / (direction @ direction) * direction  # beta's component along it removed
    return bool(ll - _loglik_at(datafit, back) > MATTERS_RTOL * (abs(ll) + 1.0))


def _ray_climbs(datafit, beta, direction, ll) -> bool:
    """Whether l does not drop along the ray from ``beta`` (log-likelihood ``ll``) at the steps
    :data:`RAY_STEPS`. It ends early where the datafit's arithmetic fails (far out, e.g. the
    start-stop Cox risk sums cancel at huge weights); the first step must be computable. Near a
    fit that separates every row (l ~ -1e-13) a direction that is none loses less than the
    tolerance over these steps: the GLMs' exact test decides there."""
    unit = direction / datafit.reach(direction)
    eps = RAY_RTOL * (abs(ll) + 1.0)
    for k, t in enumerate(RAY_STEPS):
        ahead = _loglik_at(datafit, beta + t * unit)
        if not np.isfinite(ahead):
            return k > 0
        if ahead < ll - eps:
            return False
    return True


def _loglik_at(datafit, beta) -> float:
    """l(beta), NaN where the datafit's arithmetic fails (a division by a risk sum that
    rounded to zero raises in a compiled kernel)."""
    try:
        return float(datafit.loglik(datafit.new_state(beta)))
    except ArithmeticError:
        return np.nan


#: Diverging coefficients a message names (the others are counted; FitResult.diverging has them all).
NAMED_AT_MOST = 5


def nonexistence_message(datafit, diverging: dict[int, int]) -> str:
    """The message of a fit whose estimate does not exist, naming the diverging
    coefficients and, where the univariable check confirms it, the pattern in the data."""
    columns = np.array(sorted(diverging), dtype=np.int64)
    names = [datafit.coef_label(j) for j in columns]
    shown = columns[:NAMED_AT_MOST]
    more = f" and {columns.size - shown.size} more" if columns.size > shown.size else ""
    limits = ", ".join(f"{n!r} -> {'+' if diverging[j] > 0 else '-'}inf" for n, j in zip(names, shown)) + more
    alone = univariable_directions(datafit, shown)
    reasons = [datafit.separation_pattern(n, diverging[j]) for n, j, s in zip(names, shown, alone)
               if s == diverging[j]]
    why = f": {'; '.join(reasons)}{' ...' if more and reasons else ''}" if reasons else ""
    them = "it" if len(names) == 1 else "them"
    return (f"the estimate does not exist: the likelihood keeps increasing as {limits} "
            f"(monotone likelihood, separation{why}). Put a prior on {them} (e.g. riskset.Normal(variance=1), "
            f"or remove {them} from exclude=) or remove the covariate")
