"""What one site of a network shares: an approximation of its profile log-likelihood of one
effect, never its rows (OHDSI EvidenceSynthesis' ``approximateLikelihood``).

Kinds, and how each evaluates the log-likelihood l(b) (relative to its maximum) at any b:

- ``normal``: -(b - mu)^2 / (2 sigma^2), sigma from the 95% profile interval's width, as
  EvidenceSynthesis (only where the estimate exists);
- ``skew_normal``: log 2 + log phi((b - mu) / sigma) - log sigma + log Phi(alpha (b - mu) / sigma)
  (Azzalini), fitted to the profile at 100 points by least squares weighted by the likelihood;
- ``grid``: the profile at 1,000 evenly spaced points, interpolated linearly;
- ``adaptive_grid``: the profile on Cyclops' adaptive grid (tolerance 1e-3), linearly;
- ``grid_with_gradients`` (the default, as EvidenceSynthesis): the profile and its derivative at
  8 evenly spaced points and the estimate, interpolated by cubic Hermite polynomials, extended
  linearly outside the points.

Grids are evaluated as they are outside their points: the end values (``grid``,
``adaptive_grid``), the end tangents (``grid_with_gradients``); pooled estimates are sought
within the sites' bounds.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field

import numpy as np
import pandas as pd
from scipy import special

from riskset.api import fit
from riskset.exceptions import InputError
from riskset.likelihood import checked_bounds, profile_loglik

KINDS = ("normal", "skew_normal", "grid", "adaptive_grid", "grid_with_gradients")

LOG_2PI = float(np.log(2.0 * np.pi))  # of the normal density

#: The bounds of the effect (log hazard / odds / rate ratio) that EvidenceSynthesis profiles over.
DEFAULT_BOUNDS = (float(np.log(0.1)), float(np.log(10.0)))

#: The tag and version of an approximation file.
FILE_FORMAT = "riskset likelihood approximation"
FILE_VERSION = 1


@dataclass(frozen=True)
class LikelihoodApproximation:
    """One site's approximation of its profile log-likelihood of coefficient ``coef``.

    ``params`` holds the parametric kinds' parameters (normal: mu, sigma; skew_normal: mu,
    sigma, alpha); ``points``, ``values`` (relative to their maximum) and, for
    ``grid_with_gradients``, ``derivatives`` the grids. ``estimate_exists`` is False where
    the site's likelihood keeps rising towards one end (e.g. no event among the treated).
    """

    kind: str
    model: str
    coef: str
    site: str = ""
    params: dict = field(default_factory=dict)
    points: np.ndarray | None = None
    values: np.ndarray | None = None
    derivatives: np.ndarray | None = None
    estimate_exists: bool = True
    bounds: tuple = DEFAULT_BOUNDS

    def loglik(self, b) -> np.ndarray:
        """The approximate log-likelihood at ``b`` (array), up to a constant."""
        b = np.asarray(b, dtype=np.float64)
        if self.kind == "normal":
            return -0.5 * ((b - self.params["mu"]) / self.params["sigma"]) ** 2
        if self.kind == "skew_normal":
            return skew_normal(b, self.params["mu"], self.params["sigma"], self.params["alpha"])
        if self.kind == "grid_with_gradients":
            return hermite(b, self.points, self.values, self.derivatives)
        return np.interp(b, self.points, self.values)

    def to_dict(self) -> dict:
        d = {"format": FILE_FORMAT, "version": FILE_VERSION, "kind": self.kind, "model": self.model,
             "coef": self.coef, "site": self.site, "estimate_exists": self.estimate_exists,
             "bounds": list(self.bounds)}
        if self.params:
            d["params"] = {k: float(v) for k, v in self.params.items()}
        for name in ("points", "values", "derivatives"):
            if getattr(self, name) is not None:
                d[name] = getattr(self, name).tolist()
        return d

    def save(self, path) -> None:
        """Write the approximation as JSON (what a site sends; no row of its data)."""
        with open(path, "w") as f:
            json.dump(self.to_dict(), f, indent=1)
            f.write("\n")

    @classmethod
    def from_dict(cls, d: dict, where: str = "approximation") -> "LikelihoodApproximation":
        if not isinstance(d, dict) or d.get("format") != FILE_FORMAT:
            raise InputError(f"{where} is not a riskset likelihood approximation (no \"format\": "
                             f"{FILE_FORMAT!r}); make one with riskset.synthesis.approximate_likelihood or "
                             f"'riskset approximate'")
        try:
            arrays = {n: np.asarray(d[n], dtype=np.float64) for n in ("points", "values", "derivatives") if n in d}
            out = cls(kind=d["kind"], model=d["model"], coef=d["coef"], site=d.get("site", ""),
                      params=dict(d.get("params", {})), estimate_exists=bool(d.get("estimate_exists", True)),
                      bounds=tuple(d.get("bounds", DEFAULT_BOUNDS)), **arrays)
        except (KeyError, TypeError, ValueError) as err:
            raise InputError(f"{where}: a malformed approximation ({type(err).__name__}: {err})") from None
        out.check(where)
        return out

    @classmethod
    def load(cls, path) -> "LikelihoodApproximation":
        """Read an approximation written by :meth:`save`."""
        try:
            with open(path) as f:
                d = json.load(f)
        except json.JSONDecodeError as err:
            raise InputError(f"{path} is not JSON ({err.msg} at line {err.lineno})") from None
        return cls.from_dict(d, str(path))

    def check(self, where: str = "approximation") -> None:
        """InputError unless the approximation can be evaluated: a known kind, its parameters
        or grids present and finite, points ascending."""
        if self.kind not in KINDS:
            raise InputError(f"{where}: unknown approximation kind {self.kind!r}; the kinds: {', '.join(KINDS)}")
        if self.kind in ("normal", "skew_normal"):
            needed = ("mu", "sigma") + (("alpha",) if self.kind == "skew_normal" else ())
            bad = [k for k in needed if not np.isfinite(self.params.get(k, np.nan))]
            if bad or not self.params["sigma"] > 0:
                raise InputError(f"{where}: the {self.kind} approximation needs finite {', '.join(needed)} (sigma > "
                                 f"0), got {self.params}")
            return
        arrays = [self.points, self.values] + ([self.derivatives] if self.kind == "grid_with_gradients" else [])
        if any(a is None or a.ndim != 1 or a.size != arrays[0].size for a in arrays) or arrays[0].size < 2:
            raise InputError(f"{where}: the {self.kind} approximation needs points and values (and derivatives "
                             f"for grid_with_gradients) of one length, at least 2")
        if not all(np.isfinite(a).all() for a in arrays) or np.any(np.diff(self.points) <= 0):
            raise InputError(f"{where}: the {self.kind} approximation's points must be ascending and every "
                             f"value finite")


def approximate_likelihood(data, model="cox", prior=None, *, coef, kind: str = "grid_with_gradients",
                           bounds=DEFAULT_BOUNDS, site: str = "", tol: float = 1e-10, max_iter: int = 1000,
                           fixed=None, n_jobs: int | None = None, backend: str = "cpu",
                           **model_options) -> LikelihoodApproximation:
    """The approximation of the profile log-likelihood of ``coef`` that a site shares.

    ``kind`` and ``bounds`` (of the coefficient: log hazard ratio, ...) as EvidenceSynthesis'
    ``approximateLikelihood``; the profile is :func:`riskset.profile_loglik` (the penalized
    log-likelihood where there is a prior: its other coefficients' priors are part of the
    site's model). ``tol``, ``max_iter``, ``fixed``, ``n_jobs``, ``backend`` and the model
    options are those of every fit (:func:`riskset.fit`).

    >>> import riskset
    >>> from riskset.synthesis import approximate_likelihood
    >>> data = riskset.simulate(n=500, p=3, model="cox", seed=4)
    >>> a = approximate_likelihood(data, "cox", coef="x0")
    >>> a.kind, a.points.size, bool(a.estimate_exists)
    ('grid_with_gradients', 9, True)
    """
    if kind not in KINDS:
        raise InputError(f"kind must be one of {', '.join(KINDS)}, got {kind!r}")
    lo, hi = checked_bounds(bounds)
    options = dict(max_iter=max_iter, fixed=fixed, n_jobs=n_jobs, backend=backend, **model_options)
    common = dict(model=getattr(model, "name", model), coef=str(coef), site=str(site), bounds=(lo, hi))
    if kind == "normal":
        result = fit(data, model, prior, profile=[coef], tol=tol, **options)
        row = result.intervals.iloc[0]
        if result.diverging or not np.isfinite([row["lower"], row["upper"]]).all():
            raise InputError(f"a normal approximation of {coef!r} does not exist at this site: its estimate or a "
                             f"profile bound is infinite ({row['lower']:.4g}, {row['upper']:.4g}); use "
                             f"kind='grid_with_gradients'")
        sigma = (row["upper"] - row["lower"]) / (2 * special.ndtri(0.975))
        return LikelihoodApproximation("normal", params={"mu": float(result.coef[str(coef)]), "sigma": sigma},
                                       **common)
    if kind == "adaptive_grid":
        profile = profile_loglik(data, model, prior, coef=coef, bounds=(lo, hi), tol=1e-3, fit_tol=tol, **options)
    else:
        points = {"grid": 1000, "skew_normal": 100, "grid_with_gradients": 8}[kind]
        profile = profile_loglik(data, model, prior, coef=coef, points=np.linspace(lo, hi, points), fit_tol=tol,
                                 include_estimate=kind == "grid_with_gradients", **options)
    profile = _usable(profile, str(coef))
    exists = bool(np.isfinite(profile.attrs["estimate"]))
    values = profile["value"].to_numpy()
    top = values.max()
    if kind == "skew_normal":
        return LikelihoodApproximation("skew_normal", params=fit_skew_normal(profile["point"].to_numpy(), values),
                                       estimate_exists=exists, **common)
    return LikelihoodApproximation(kind, points=profile["point"].to_numpy(), values=values - top,
                                   derivatives=profile["derivative"].to_numpy() if kind == "grid_with_gradients"
                                   else None, estimate_exists=exists, **common)


def _usable(profile: pd.DataFrame, coef: str) -> pd.DataFrame:
    """The profile's points whose fits converged; points that failed inside the range, or
    fewer than 2 usable, raise (EvidenceSynthesis truncates failed ends, gives up inside)."""
    ok = profile["converged"].to_numpy()
    if ok.sum() < 2:
        raise InputError(f"the profile of {coef!r} could be computed at {int(ok.sum())} point(s) only: "
                         f"{'; '.join(n for n in profile['note'] if n)[:300]}")
    first, last = np.flatnonzero(ok)[[0, -1]]
    if not ok[first:last + 1].all():
        raise InputError(f"the profile of {coef!r} failed inside its range: "
                         f"{'; '.join(n for n in profile['note'] if n)[:300]}")
    kept = profile.iloc[first:last + 1].reset_index(drop=True)
    kept.attrs = profile.attrs
    return kept


def skew_normal(b, mu, sigma, alpha) -> np.ndarray:
    """log of Azzalini's skew-normal density with location mu, scale sigma and shape alpha
    (EvidenceSynthesis' ``skewNormal``): log 2 + log phi(z) - log sigma + log Phi(alpha z), z = (b - mu) / sigma."""
    z = (np.asarray(b, dtype=np.float64) - mu) / sigma
    return np.log(2.0) - 0.5 * (z * z + LOG_2PI) - np.log(sigma) + special.log_ndtr(alpha * z)


def fit_skew_normal(points, values) -> dict:
    """(mu, sigma, alpha) of the skew-normal log-density that, shifted to the same maximum,
    is closest to the profile ``values`` at ``points`` in least squares weighted by the
    likelihood exp(value - max) (floored at 1e-3), as EvidenceSynthesis; the best of a
    Nelder-Mead and a BFGS search from (the profile's mode, 1, 0)."""
    values = values - values.max()
    weights = np.maximum(np.exp(values), 1e-3)
    mode = points[np.argmax(values)]
    if mode in (points[0], points[-1]):
        mode = 0.0

    def loss(p):
        mu, log_sigma, alpha = p
        approx = skew_normal(points, mu, np.exp(log_sigma), alpha)
        return float(np.sum(weights * (approx - approx.max() - values) ** 2))

    start = np.array([mode, 0.0, 0.0])
    from scipy import optimize  # here, not at import: scipy.optimize costs a second to import

    fits = [optimize.minimize(loss, start, method=m) for m in ("Nelder-Mead", "BFGS")]
    best = min(fits, key=lambda r: r.fun if np.isfinite(r.fun) else np.inf)
    mu, log_sigma, alpha = best.x
    return {"mu": float(mu), "sigma": float(np.exp(log_sigma)), "alpha": float(alpha)}


def hermite(b, points, values, derivatives) -> np.ndarray:
    """Cubic Hermite interpolation of (points, values, derivatives) at ``b``, linear outside
    the points along the end derivatives (EvidenceSynthesis' ``hermiteInterpolation``)."""
    b = np.asarray(b, dtype=np.float64)
    i = np.clip(np.searchsorted(points, b, side="right") - 1, 0, points.size - 2)
    h = points[i + 1] - points[i]
    t = (b - points[i]) / h
    inside = (t * t * (2 * t - 3) + 1) * values[i] + (t * (t - 1) ** 2) * h * derivatives[i] \
        + (t * t * (3 - 2 * t)) * values[i + 1] + (t * t * (t - 1)) * h * derivatives[i + 1]
    left = values[0] + (b - points[0]) * derivatives[0]
    right = values[-1] + (b - points[-1]) * derivatives[-1]
    return np.where(b < points[0], left, np.where(b > points[-1], right, inside))
