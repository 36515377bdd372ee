"""Pooling the sites' likelihood approximations into one estimate and interval.

- Fixed effect: one effect b shared by every site; the pooled log-likelihood is the sum of
  the sites' (EvidenceSynthesis' ``computeFixedEffectMetaAnalysis`` with likelihood
  approximations). Its maximum is the estimate, the likelihood-ratio interval the points
  where it is chi2_1(level) / 2 below.
- Random effects: site i's effect b_i ~ N(mu, tau^2); its marginal log-likelihood
  log of the integral of exp(l_i(b)) N(b; mu, tau^2) db (quadrature: Gauss-Hermite around mu
  for a narrow tau, the trapezoid rule on a fine grid of the bounds otherwise). (mu, tau)
  maximize the sum; mu's interval is the profile-likelihood one, tau re-maximized at each mu.
  At tau = 0 it is the fixed-effect model.
"""
from __future__ import annotations

import numpy as np
import pandas as pd
from scipy import special

from riskset.exceptions import InputError
from riskset.synthesis.approximation import LOG_2PI, LikelihoodApproximation

#: Points of the grid over the bounds on which the pooled log-likelihood is first scanned.
SCAN_POINTS = 4001

#: Points of the first scan of the random-effects profile (each a maximization over tau).
RANDOM_SCAN_POINTS = 161

#: Gauss-Hermite nodes of the random-effects integral for a narrow tau.
HERMITE_NODES = 64

#: Largest between-site standard deviation searched (on the scale of the coefficient).
TAU_MAX = 10.0


def pool(approximations, *, method: str = "fixed", level: float = 0.95) -> pd.DataFrame:
    """Pooled estimate of one effect from the sites' :class:`LikelihoodApproximation` (or
    paths of their files): ``method`` 'fixed' or 'random'.

    Returns one row: ``method``, ``estimate``, ``lower``, ``upper`` (likelihood-ratio
    interval at ``level``; +-inf where the pooled likelihood does not fall that far within
    the bounds), ``se`` (from the interval's width, as EvidenceSynthesis), ``tau``
    (random: the between-site standard deviation), ``n_sites``, ``ratio``,
    ``ratio_lower``, ``ratio_upper`` (exponentiated), ``note``.

    >>> from riskset.synthesis import LikelihoodApproximation, pool
    >>> sites = [LikelihoodApproximation("normal", "cox", "x0", params={"mu": m, "sigma": 0.2}) for m in (0.1, 0.3)]
    >>> round(float(pool(sites)["estimate"].iloc[0]), 6)
    0.2
    """
    sites = _checked_sites(approximations)
    if method not in ("fixed", "random"):
        raise InputError(f"method must be 'fixed' or 'random', got {method!r}")
    if not 0 < level < 1:
        raise InputError(f"level must be strictly between 0 and 1, got {level!r}")
    lo, hi = max(s.bounds[0] for s in sites), min(s.bounds[1] for s in sites)
    if not lo < hi:
        raise InputError(f"the sites' bounds do not overlap: {[s.bounds for s in sites]}")
    drop = special.chdtri(1, 1 - level) / 2
    if method == "fixed":
        def pooled(b):
            return sum(s.loglik(b) for s in sites)
        estimate, top, note = _maximize(pooled, lo, hi, SCAN_POINTS)
        tau = np.nan
    else:
        marginal = RandomEffects(sites, lo, hi)
        pooled = marginal.profile
        estimate, top, note = _maximize(pooled, lo, hi, RANDOM_SCAN_POINTS)
        tau = marginal.best_tau(estimate)
    lower, note_lo = _bound(pooled, top - drop, estimate, lo)
    upper, note_hi = _bound(pooled, top - drop, estimate, hi)
    se = (upper - lower) / (2 * special.ndtri(0.5 + level / 2)) if np.isfinite([lower, upper]).all() else np.nan
    notes = "; ".join(n for n in (note, note_lo, note_hi) if n)
    with np.errstate(over="ignore"):
        ratios = np.exp([estimate, lower, upper])
    return pd.DataFrame({"method": [method], "coef": [sites[0].coef], "estimate": [estimate], "lower": [lower],
                         "upper": [upper], "se": [se], "tau": [tau], "n_sites": [len(sites)], "level": [level],
                         "ratio": [ratios[0]], "ratio_lower": [ratios[1]], "ratio_upper": [ratios[2]],
                         "note": [notes]})


def _checked_sites(approximations) -> list[LikelihoodApproximation]:
    """The approximations (files loaded), checked to describe one coefficient of one model."""
    sites = [a if isinstance(a, LikelihoodApproximation) else LikelihoodApproximation.load(a)
             for a in approximations]
    if not sites:
        raise InputError("no site approximations to pool")
    names = [s.site or f"site {i + 1}" for i, s in enumerate(sites)]
    for what in ("model", "coef"):
        first = getattr(sites[0], what)
        other = [(n, getattr(s, what)) for n, s in zip(names, sites) if getattr(s, what) != first]
        if other:
            raise InputError(f"the approximations are of different {'models' if what == 'model' else 'coefficients'}:"
                             f" {names[0]} has {what} {first!r}, {other[0][0]} has {other[0][1]!r}; pool one effect "
                             f"of one model at a time")
    for n, s in zip(names, sites):
        s.check(n)
    return sites


def _maximize(f, lo, hi, points: int) -> tuple[float, float, str]:
    """(argmax, max, note) of a concave ``f`` (vectorized) on [lo, hi]: a scan of ``points``,
    then Brent's method between the best point's neighbours."""
    grid = np.linspace(lo, hi, points)
    values = f(grid)
    k = int(np.argmax(values))
    if k in (0, grid.size - 1):
        side = "lower" if k == 0 else "upper"
        return float(grid[k]), float(values[k]), (f"the pooled likelihood is largest at the {side} bound "
                                                  f"({grid[k]:.4g}): the estimate lies beyond the bounds")
    from scipy import optimize  # in the functions: scipy.optimize costs a second at import (every CLI call)

    best = optimize.minimize_scalar(lambda x: -f(x), bounds=(grid[k - 1], grid[k + 1]), method="bounded",
                                    options={"xatol": 1e-10 * max(1.0, abs(grid[k]))})
    return (float(best.x), float(-best.fun), "") if -best.fun >= values[k] else (float(grid[k]), float(values[k]), "")


def _bound(f, level, estimate, end) -> tuple[float, str]:
    """The point between ``estimate`` and ``end`` (a bound) where ``f`` falls to ``level``,
    or +-inf with a note where it stays above it up to the bound."""
    if f(end) > level:
        side = np.inf if end > estimate else -np.inf
        return float(side), f"the interval reaches past the {'upper' if side > 0 else 'lower'} bound ({end:.4g})"
    from scipy import optimize

    return float(optimize.brentq(lambda x: f(x) - level, min(estimate, end), max(estimate, end), xtol=1e-10)), ""


class RandomEffects:
    """The random-effects marginal log-likelihood of the sites, and its profile in mu."""

    def __init__(self, sites, lo, hi):
        self.sites = sites
        self.grid = np.linspace(lo - 0.5 * (hi - lo), hi + 0.5 * (hi - lo), 2 * SCAN_POINTS - 1)
        self.logliks = np.array([s.loglik(self.grid) for s in sites])            # (sites, grid)
        self.nodes, self.weights = np.polynomial.hermite.hermgauss(HERMITE_NODES)
        self.spacing = self.grid[1] - self.grid[0]

    def loglik(self, mu: float, tau: float) -> float:
        """Sum over sites of log int exp(l_i(b)) N(b; mu, tau^2) db (l_i relative to its max)."""
        if tau <= 0:
            return float(sum(s.loglik(mu) for s in self.sites))
        if tau < 20 * self.spacing:  # narrow: Gauss-Hermite at mu + sqrt(2) tau z
            b = mu + np.sqrt(2.0) * tau * self.nodes
            values = np.array([s.loglik(b) for s in self.sites])
            log_w = np.log(self.weights / np.sqrt(np.pi))
        else:  # wide: the trapezoid rule on the grid
            values = self.logliks
            log_w = -0.5 * (((self.grid - mu) / tau) ** 2 + LOG_2PI) - np.log(tau) + np.log(self.spacing)
        top = values.max(axis=1, keepdims=True)
        return float(np.sum(top[:, 0] + np.log(np.sum(np.exp(values - top + log_w), axis=1))))

    def best_tau(self, mu: float) -> float:
        """The tau that maximizes the marginal log-likelihood at ``mu`` (0 included)."""
        from scipy import optimize

        found = optimize.minimize_scalar(lambda s: -self.loglik(mu, np.exp(s)), bounds=(np.log(1e-4), np.log(TAU_MAX)),
                                         method="bounded", options={"xatol": 1e-6})
        return float(np.exp(found.x)) if -found.fun > self.loglik(mu, 0.0) else 0.0

    def profile(self, mu) -> float | np.ndarray:
        """max over tau of the marginal log-likelihood at ``mu``."""
        if np.ndim(mu):
            return np.array([self.profile(m) for m in mu])
        return self.loglik(mu, self.best_tau(mu))
