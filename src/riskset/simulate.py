"""Synthetic data with the design of the Cyclops papers.

N x P binary covariates, each present independently with probability ``density``;
80% of the true coefficients are zero, the others drawn from N(0, effect_sd^2).
"""
from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from riskset import validation as check
from riskset.data.dataset import Dataset
from riskset.exceptions import InputError

MODELS = ("logistic", "poisson", "least_squares", "cox")


def sparse_binary_design(n: int, p: int, density, rng: np.random.Generator) -> sp.csc_matrix:
    """CSC matrix of 0/1 entries, each non-zero with probability ``density`` (one number, or one
    per column; one draw per column)."""
    counts = rng.binomial(n, density, size=p)
    indptr = np.concatenate([[0], np.cumsum(counts)])
    indices = np.empty(indptr[-1], dtype=np.int64)
    for j in range(p):  # one sampling call per column; rows are never looped over
        indices[indptr[j]:indptr[j + 1]] = np.sort(rng.choice(n, counts[j], replace=False)) \
            if counts[j] > n // 20 else _distinct_sorted(n, counts[j], rng)
    return sp.csc_matrix((np.ones(indptr[-1]), indices, indptr), shape=(n, p))


def _distinct_sorted(n, k, rng):
    """k distinct sorted integers in [0, n) for k << n (rejection of the rare repeats)."""
    draw = np.unique(rng.integers(0, n, size=k))
    while draw.size < k:
        draw = np.unique(np.concatenate([draw, rng.integers(0, n, size=k - draw.size)]))
    return draw


def simulate(n: int = 10_000, p: int = 100, density: float = 0.05, model: str = "cox", *,
             fraction_nonzero: float = 0.2, effect_sd: float = 1.0, censoring: float = 0.5,
             seed: int | None = 0) -> Dataset:
    """Simulate a data set of the papers' design.

    Parameters
    ----------
    model : {'logistic', 'poisson', 'least_squares', 'cox'}
        Outcome model. Cox: event times exponential with rate exp(x beta), censoring
        times exponential with the rate giving about ``censoring`` censored rows.
        Poisson: counts over an exposure uniform on (0.5, 2), offset log(exposure).
    The true coefficients are in ``dataset.meta['true_coef']``.

    Examples
    --------
    >>> ds = simulate(n=1000, p=10, model="logistic", seed=3)
    >>> ds.n_rows, ds.n_covariates, sorted(ds.meta)
    (1000, 10, ['density', 'model', 'true_coef'])
    """
    check.one_of("model", model, MODELS)
    n, p = check.positive_int("n", n), check.positive_int("p", p, minimum=0)
    _share("density", density, zero=False)
    _share("fraction_nonzero", fraction_nonzero, zero=True)
    check.positive_number("effect_sd", effect_sd, allow_zero=True)
    if not (check.positive_number("censoring", censoring, allow_zero=True) < 1):
        raise InputError(f"censoring must be a share of rows in [0, 1), got {censoring!r}")
    if seed is not None:
        check.seed("seed", seed)
    rng = np.random.default_rng(seed)
    X = sparse_binary_design(n, p, density, rng)
    beta = np.where(rng.random(p) < fraction_nonzero, rng.normal(0.0, effect_sd, p), 0.0)
    eta = X @ beta
    names = [f"x{j}" for j in range(p)]
    out = {}
    if model == "logistic":
        out["y"] = (rng.random(n) < 1 / (1 + np.exp(-(eta - 1.0)))).astype(float)
    elif model == "poisson":
        exposure = rng.uniform(0.5, 2.0, n)
        out["y"] = rng.poisson(exposure * np.exp(eta - 1.0)).astype(float)
        out["offset"] = np.log(exposure)
    elif model == "least_squares":
        out["y"] = eta + rng.normal(size=n)
    else:
        event = rng.exponential(1.0 / np.exp(eta))
        rate_c = censoring / (1 - censoring)  # P(censoring time < event time) when the event rate is 1
        cens = rng.exponential(1.0 / rate_c, n) if rate_c > 0 else np.full(n, np.inf)
        out["time"] = np.minimum(event, cens)
        out["status"] = (event <= cens).astype(np.int64)
    meta = {"true_coef": dict(zip(names, beta)), "model": model, "density": density}
    return Dataset(X=X, covariate_names=names, row_ids=np.arange(n), meta=meta, **out)


def simulate_cohort(n: int = 20_000, p: int = 200, *, hazard_ratio: float = 0.7, density: float = 0.05,
                    n_confounders: int = 10, follow_up: float = 5.0, prevalence: str = "uniform",
                    competing_rate: float = 0.0, seed: int | None = 1) -> Dataset:
    """A new-user cohort: baseline covariates, a treatment and a time-to-event outcome.

    ``n_confounders`` baseline covariates raise both the chance of treatment and the
    outcome hazard (log hazard ratio 0.5 each), so the crude hazard ratio is biased; the
    true treatment hazard ratio is ``hazard_ratio``. Follow-up ends at ``follow_up`` years or
    at random loss to follow-up. The covariate ``treatment`` is the first column.

    prevalence : "uniform" (every covariate present with probability ``density``) or
        "claims" (skewed as in claims data: prevalences log-normal around ``density``, a few
        common covariates, many rare; capped at 0.5; the confounders among the common ones).
    competing_rate : hazard of a competing event (status 2; e.g. death from other causes) as a
        share of the outcome's baseline hazard, raised by the confounders alike; 0: none.

    The true log hazard ratios are in ``meta["true_coef"]``.

    >>> ds = simulate_cohort(n=500, p=20, seed=2)
    >>> ds.covariate_names[:2], ds.meta["true_hazard_ratio"]
    (['treatment', 'x0'], 0.7)
    """
    n, p = check.positive_int("n", n), check.positive_int("p", p, minimum=0)
    _share("density", density, zero=False)
    check.positive_number("hazard_ratio", hazard_ratio)
    check.positive_number("follow_up", follow_up)
    if not 0 <= check.positive_int("n_confounders", n_confounders, minimum=0) <= p:
        raise InputError(f"n_confounders must be at most p = {p}, got {n_confounders!r}")
    check.one_of("prevalence", prevalence, ("uniform", "claims"))
    check.positive_number("competing_rate", competing_rate, allow_zero=True)
    if seed is not None:
        check.seed("seed", seed)
    rng = np.random.default_rng(seed)
    Z = sparse_binary_design(n, p, density if prevalence == "uniform" else claims_prevalences(p, density, rng), rng)
    conf = np.zeros(p)
    conf[:n_confounders] = 1.0
    z_conf = np.asarray(Z @ conf)
    treatment = (rng.random(n) < 1 / (1 + np.exp(-(-0.5 + 0.8 * z_conf)))).astype(float)
    log_rate = np.log(0.05) + np.log(hazard_ratio) * treatment + 0.5 * z_conf
    event = rng.exponential(1.0 / np.exp(log_rate))
    competing = rng.exponential(1.0 / (competing_rate * np.exp(np.log(0.05) + 0.5 * z_conf))) if competing_rate \
        else np.full(n, np.inf)
    censor = np.minimum(rng.exponential(10.0, n), follow_up)
    time = np.minimum(np.minimum(event, competing), censor)
    status = np.where(event == time, 1, np.where(competing == time, 2, 0)).astype(np.int64)
    X = sp.hstack([sp.csc_matrix(treatment[:, None]), Z], format="csc")
    X.eliminate_zeros()
    names = ["treatment"] + [f"x{j}" for j in range(p)]
    true_coef = dict(zip(names, np.r_[np.log(hazard_ratio), 0.5 * conf]))
    meta = {"true_hazard_ratio": hazard_ratio, "confounders": names[1:n_confounders + 1], "true_coef": true_coef,
            "prevalence": prevalence, "competing_rate": competing_rate}
    return Dataset(X=X, covariate_names=names, row_ids=np.arange(n), time=time, status=status, meta=meta)


def claims_prevalences(p: int, density: float, rng: np.random.Generator) -> np.ndarray:
    """Per-covariate prevalences skewed as in claims data: log-normal (sd 1.5 on the log scale)
    with mean ``density``, capped at 0.5, sorted descending (the first covariates the common ones).

    >>> prev = claims_prevalences(1000, 0.03, np.random.default_rng(0))
    >>> bool(prev[0] > 10 * np.median(prev)), round(float(prev.mean()), 2)
    (True, 0.03)
    """
    raw = rng.lognormal(0.0, 1.5, p)
    prev = np.minimum(raw * density / raw.mean(), 0.5)
    return np.sort(prev)[::-1]


def _share(name, value, zero: bool) -> float:
    """A proportion in (0, 1] (in [0, 1] with ``zero``)."""
    if not (check.positive_number(name, value, allow_zero=zero) <= 1):
        raise InputError(f"{name} must be a proportion in {'[' if zero else '('}0, 1], got {value!r}")
    return float(value)
