"""Priors (penalties) on the coefficients.

A prior is resolved against the coefficient names of a fit into a
:class:`~riskset.core.penalty.Penalty`: per coefficient an L1 rate ``l1``, an L2 weight
``l2`` and a center ``m`` (the prior mean, 0 unless given in ``means``), so that the
penalized objective that is maximized is

    l(beta) - sum_j ( l1_j |beta_j - m_j| + l2_j (beta_j - m_j)^2 / 2 ).

Laplace (L1) with rate ``gamma``: l1 = gamma (variance 2 / gamma^2).
Normal (L2) with variance ``v``: l2 = 1 / v.
Elastic net: both. Excluded coefficients (the treatment, the intercept) get 0, 0.
Each kind's rates are a module of :mod:`riskset.solver.prior_kinds`.
A location prior (``means={"drug": 0.4}``) shrinks towards the mean instead of zero:
knowledge carried from one database to the next.

:class:`AdaptiveRidge` (``BAR``, ``IHT``) is a prior of another kind: a sequence of normal
priors, each fitted from the last estimate (:mod:`riskset.solver.adaptive_ridge`).
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from riskset.core.penalty import Penalty
from riskset.exceptions import InputError
from riskset.solver.adaptive_ridge import AdaptiveRidgeSettings, fit_adaptive_ridge
from riskset.solver.ccd import SolverOptions, SolverResult
from riskset.solver.jeffreys import MAX_COEF as JEFFREYS_MAX_COEF, fit_jeffreys
from riskset.solver.prior_kinds import KINDS
from riskset.validation import (coef_mapping, coef_names, finite_numbers, flag, known_names, one_of, positive_int,
                                positive_number)


@dataclass(frozen=True)
class Prior:
    """A prior on the coefficients.

    Parameters
    ----------
    kind : {'none', 'laplace', 'normal', 'elastic_net'}
        A kind of :mod:`riskset.solver.prior_kinds`.
    gamma : float
        L1 rate (Laplace): penalty ``gamma * |beta_j|``.
    variance : float
        Normal variance: penalty ``beta_j^2 / (2 variance)``.
    exclude : sequence of str or int
        Coefficients left unpenalized (an integer covariate id names the covariate
        ``str(id)``) (in addition to the model's own, e.g. intercept).
    variances : dict, optional
        Per-coefficient variance overriding ``variance`` (normal) or the Laplace
        variance ``2 / gamma^2`` (laplace) for the named coefficients.
    means : dict, optional
        Per-coefficient prior mean (location prior): the named coefficients are shrunk
        towards their mean instead of 0 (an L1 prior's kink is at the mean, so it
        selects "different from the mean"). Coefficients not named have mean 0.

    A Laplace prior without ``gamma`` (``Laplace()``) or a Normal prior without
    ``variance`` (``Normal()``) leaves its strength to be chosen:
    :func:`riskset.cross_validate` and :func:`riskset.regularization_path` choose it on
    a grid of their own (Laplace: from gamma_max down) and need no starting value;
    :func:`riskset.fit` refuses it.

    Examples
    --------
    >>> Laplace(gamma=2.0, exclude=["treatment"]).penalty_arrays(["treatment", "age"])
    (array([0., 2.]), array([0., 0.]))
    >>> Normal(variance=0.5).penalty_arrays(["a"])
    (array([0.]), array([2.]))
    >>> Normal(variance=0.5, means={"a": 0.3}).penalty(["a", "b"]).center.tolist()
    [0.3, 0.0]
    """

    kind: str = "none"
    gamma: float | None = 0.0  # None: left for cross-validation to choose
    variance: float | None = np.inf
    exclude: tuple[str, ...] = ()
    variances: dict = field(default_factory=dict)
    means: dict = field(default_factory=dict)

    def __post_init__(self):
        one_of("prior kind", self.kind, tuple(KINDS))
        varied = KINDS[self.kind].varied  # may be left unset, for cross-validation to choose
        if not (self.gamma is None and varied == "gamma"):
            object.__setattr__(self, "gamma", positive_number("gamma", self.gamma, allow_zero=True))
        if not (self.variance is None and varied == "variance"):
            object.__setattr__(self, "variance", positive_number("variance", self.variance, allow_inf=True))
        variances = coef_mapping("variances", self.variances)
        for name, v in variances.items():
            positive_number(f"variances[{name!r}]", v, allow_inf=True)
        object.__setattr__(self, "variances", variances)
        means = coef_mapping("means", self.means)
        for name, m in means.items():
            means[name] = float(finite_numbers(f"means[{name!r}]", m)[0])
        if means and self.kind == "none":
            raise InputError("means: a prior mean needs a prior (laplace, normal or elastic_net); without one "
                             f"nothing is shrunk towards it, got means for {', '.join(map(repr, means))}")
        object.__setattr__(self, "means", means)
        object.__setattr__(self, "exclude", tuple(coef_names("exclude", self.exclude)))

    @property
    def is_penalized(self) -> bool:
        return self.kind != "none"

    @property
    def is_varied(self) -> bool:
        """Whether its kind has a single strength that cross-validation can vary (Laplace, Normal)."""
        return KINDS[self.kind].varied is not None

    def with_strength(self, value: float) -> "Prior":
        """The same prior with its strength replaced: gamma for Laplace, variance for Normal."""
        varied = KINDS[self.kind].varied
        if varied is None:
            raise InputError(f"a {self.kind!r} prior has no single strength to vary")
        return Prior(self.kind, **{varied: value}, exclude=self.exclude, variances=self.variances, means=self.means)

    def with_variance(self, variance: float) -> "Prior":
        """The same prior with its variance set (Laplace: gamma = sqrt(2 / variance))."""
        if not self.is_varied:
            raise InputError(f"cross-validation varies a Laplace or Normal prior, not {self.kind!r}")
        return self.with_strength(KINDS[self.kind].strength_of_variance(variance))

    @property
    def strength_is_set(self) -> bool:
        """False for ``Laplace()`` / ``Normal()``: a strength still to be chosen (cross-validation)."""
        return self.gamma is not None and self.variance is not None

    def penalty(self, names, always_unpenalized=()) -> Penalty:
        """The penalty on coefficients ``names`` (``always_unpenalized``: the model's own
        unpenalized coefficients, e.g. the intercept)."""
        l1, l2 = self.penalty_arrays(names, always_unpenalized)
        names = list(names)
        known_names("the prior's means", list(self.means), names)
        center = np.zeros(len(names))
        for name, m in self.means.items():
            j = names.index(name)
            if l1[j] == 0 and l2[j] == 0:
                raise InputError(f"means: coefficient {name!r} is not penalized (excluded, or the model never "
                                 f"penalizes it), so its prior mean {m:g} would do nothing; drop it from means "
                                 "or from exclude")
            center[j] = m
        return Penalty(l1, l2, center)

    def penalty_arrays(self, names, always_unpenalized=()) -> tuple[np.ndarray, np.ndarray]:
        """Per-coordinate (l1, l2) for coefficients ``names`` (the centers: :meth:`penalty`)."""
        if self.gamma is None or self.variance is None:  # not self.strength_is_set
            what = "gamma=... or variance=..." if KINDS[self.kind].varied == "gamma" else "variance=..."
            raise InputError(f"the {self.kind} prior has no strength: give {what}, or choose it with "
                             f"riskset.cross_validate")
        names = list(names)
        known_names("the prior's exclude", self.exclude, names)
        known_names("the prior's variances", list(self.variances), names)
        p = len(names)
        kind = KINDS[self.kind]
        l1 = np.zeros(p)
        l2 = np.zeros(p)
        l1[:], l2[:] = kind.rates(self.gamma, self.variance)
        for name, v in self.variances.items():
            kind.override(l1, l2, names.index(name), v)
        free = set(self.exclude) | set(always_unpenalized)
        for j, n in enumerate(names):
            if n in free:
                l1[j] = l2[j] = 0.0
        return l1, l2

    def __repr__(self) -> str:
        """The call that makes this prior, its strength as given (no ``variance=inf`` on a Laplace prior).

        >>> Laplace(gamma=2.0, exclude=["x0"])
        Laplace(gamma=2, exclude=['x0'])
        >>> Normal(variance=0.5), NoPrior(), Laplace()
        (Normal(variance=0.5), NoPrior(), Laplace())
        """
        d = self.to_dict()
        args = ", ".join(f"{k}={v:g}" if isinstance(v, float) else f"{k}={v!r}"
                         for k, v in d.items() if k != "kind" and v is not None)
        return f"{KINDS[self.kind].constructor}({args})"

    def to_dict(self) -> dict:
        d: dict[str, Any] = {"kind": self.kind}
        fields = KINDS[self.kind].strength_fields
        if "gamma" in fields:
            d["gamma"] = self.gamma
        if "variance" in fields:
            d["variance"] = self.variance
        if self.exclude:
            d["exclude"] = list(self.exclude)
        if self.variances:
            d["variances"] = dict(self.variances)
        if self.means:
            d["means"] = dict(self.means)
        return d

    @classmethod
    def from_dict(cls, d: dict) -> "Prior":
        d = dict(d)
        return cls(d.pop("kind"), **d)


def NoPrior() -> Prior:
    """No penalty: maximum likelihood."""
    return Prior("none")


def Laplace(gamma: float | None = None, *, variance: float | None = None, exclude=(), variances=None,
            means=None) -> Prior:
    """Laplace (L1, lasso) prior: penalty ``gamma * |beta_j - m_j|``; ``variance = 2 / gamma**2``.

    Give either ``gamma`` or ``variance`` (Cyclops' parametrization), or neither for
    cross-validation and regularization paths, which choose it. ``means`` maps
    coefficients to prior means m_j (0 for the others).

    >>> Laplace(variance=2.0).gamma
    1.0
    >>> Laplace().strength_is_set
    False
    """
    if gamma is not None and variance is not None:
        raise InputError(f"give exactly one of gamma or variance for a Laplace prior, got gamma={gamma!r}, "
                         f"variance={variance!r}")
    if variance is not None:
        gamma = np.sqrt(2.0 / positive_number("variance", variance))
    return Prior("laplace", gamma=gamma, exclude=exclude, variances=variances or {}, means=means or {})


def Normal(variance: float | None = None, *, exclude=(), variances=None, means=None) -> Prior:
    """Normal (L2, ridge) prior with the given variance: penalty ``(beta_j - m_j)^2 / (2 variance)``.

    Without ``variance``, for cross-validation and regularization paths, which choose it.
    ``means`` maps coefficients to prior means m_j (0 for the others): a location prior,
    e.g. the estimates of a previous database.

    >>> Normal(1.0, means={"drug": 0.4}).to_dict()
    {'kind': 'normal', 'variance': 1.0, 'means': {'drug': 0.4}}
    """
    return Prior("normal", variance=variance, exclude=exclude, variances=variances or {}, means=means or {})


def ElasticNet(gamma: float, variance: float, *, exclude=(), means=None) -> Prior:
    """Both penalties: ``gamma |beta_j - m_j| + (beta_j - m_j)^2 / (2 variance)``."""
    return Prior("elastic_net", gamma=gamma, variance=variance, exclude=exclude, means=means or {})


@dataclass
class PriorFit:
    """A fit under a prior that is not one penalty table (:meth:`AdaptiveRidge.solve`,
    :meth:`JeffreysPrior.solve`): the solver result, the penalty of its last fit (standard
    errors exist where it penalizes nothing) and the coefficients held (``fixed`` and any the
    prior set to 0)."""

    result: SolverResult
    penalty: Penalty
    held: np.ndarray


@dataclass(frozen=True)
class AdaptiveRidge:
    """Broken adaptive ridge (``max_nonzero`` None) or iterative hard thresholding (at most
    ``max_nonzero`` non-zero coefficients): sparse selection by iterated ridge fits, as the
    OHDSI packages BrokenAdaptiveRidge (``createBarPrior``) and IterativeHardThresholding
    (``createIhtPrior``) compute it (:mod:`riskset.solver.adaptive_ridge`). Made by
    :func:`BAR` and :func:`IHT`, whose docstrings give the parameters.
    """

    weight: float | str = "bic"   # the packages' ``penalty``
    max_nonzero: int | None = None
    exclude: tuple[str, ...] = ()
    initial_variance: float = 1e4
    tolerance: float = 1e-8
    max_iterations: int = 10_000
    threshold: float = 1e-6
    delta: float = 0.0
    fit_best_subset: bool = False

    def __post_init__(self):
        if not (isinstance(self.weight, str) and self.weight.lower() == "bic"):
            if isinstance(self.weight, str):
                raise InputError(f"penalty must be 'bic' or a positive number, got {self.weight!r}")
            object.__setattr__(self, "weight", positive_number("penalty", self.weight))
        else:
            object.__setattr__(self, "weight", "bic")
        if self.max_nonzero is not None:
            object.__setattr__(self, "max_nonzero", positive_int("max_nonzero", self.max_nonzero))
        object.__setattr__(self, "exclude", tuple(coef_names("exclude", self.exclude)))
        object.__setattr__(self, "initial_variance", positive_number("initial_variance", self.initial_variance))
        object.__setattr__(self, "tolerance", positive_number("tolerance", self.tolerance))
        object.__setattr__(self, "max_iterations", positive_int("max_iterations", self.max_iterations))
        object.__setattr__(self, "threshold", positive_number("threshold", self.threshold, allow_zero=True))
        delta = positive_number("delta", self.delta, allow_zero=True)
        if delta >= 2:
            raise InputError(f"delta must be below 2 (the prior variance is |b|^(2 - delta) / penalty), got {delta!r}")
        object.__setattr__(self, "delta", delta)
        object.__setattr__(self, "fit_best_subset", flag("fit_best_subset", self.fit_best_subset))

    @property
    def kind(self) -> str:
        return "bar" if self.max_nonzero is None else "iht"

    is_penalized = True
    strength_is_set = True
    means: dict = field(default_factory=dict, init=False, repr=False)

    def penalty(self, names, always_unpenalized=()) -> Penalty:
        """The starting ridge's penalty on coefficients ``names`` (the coefficients it
        selects among: those with l2 > 0)."""
        names = list(names)
        known_names("the prior's exclude", self.exclude, names)
        free = set(self.exclude) | set(always_unpenalized)
        l2 = np.array([0.0 if n in free else 1.0 / self.initial_variance for n in names])
        return Penalty(np.zeros(len(names)), l2, np.zeros(len(names)))

    def solve(self, datafit, names, unpenalized, n_rows: int, options: SolverOptions, held: np.ndarray,
              beta0) -> PriorFit:
        """The BAR / IHT fit of ``datafit`` (:func:`~riskset.solver.adaptive_ridge.fit_adaptive_ridge`),
        its message saying how many ridge fits it took. With ``fit_best_subset`` the last
        fit penalizes nothing and holds the coefficients set to 0: the others get standard
        errors, conditional on the selection."""
        start = self.penalty(names, unpenalized)
        result = fit_adaptive_ridge(datafit, self.settings(n_rows), start.l2 > 0, options,
                                    fixed=held if held.any() else None, beta0=beta0)
        res = result.fit
        what = f"{self.kind.upper()}: {result.iterations} ridge fit(s) after the starting one"
        if res.converged and not result.converged:
            res.converged = False
            res.message = (f"{what}; no fixed point: a coefficient still moved by {self.tolerance:g} or more after "
                           f"max_iterations={self.max_iterations}")
        else:
            res.message = f"{what}; {res.message}" if res.message else what
        zeros = np.zeros_like(start.l2)
        if self.fit_best_subset and result.converged:
            return PriorFit(res, Penalty(zeros, zeros, zeros), held | ((start.l2 > 0) & (res.beta == 0.0)))
        with np.errstate(divide="ignore"):
            l2 = np.where(result.variances > 0, 1.0 / result.variances, 0.0)
        return PriorFit(res, Penalty(zeros, l2, zeros), held)

    def settings(self, n_rows: int) -> AdaptiveRidgeSettings:
        """The iteration's settings for data of ``n_rows`` rows ('bic': penalty log(N) / 2)."""
        weight = np.log(n_rows) / 2.0 if self.weight == "bic" else float(self.weight)
        if not weight > 0:
            raise InputError(f"the 'bic' penalty log(N) / 2 needs more than one row, got N = {n_rows}")
        return AdaptiveRidgeSettings(penalty=weight, initial_variance=self.initial_variance,
                                     threshold=self.threshold, tolerance=self.tolerance,
                                     max_iterations=self.max_iterations, delta=self.delta,
                                     max_nonzero=self.max_nonzero, fit_best_subset=self.fit_best_subset)

    def to_dict(self) -> dict:
        """Every setting, by the packages' names (``penalty``)."""
        d: dict[str, Any] = {"kind": self.kind, "penalty": self.weight}
        if self.max_nonzero is not None:
            d["max_nonzero"] = self.max_nonzero
        d.update({name: getattr(self, name) for name in SETTINGS})
        d["exclude"] = list(self.exclude)
        return d

    def __repr__(self) -> str:
        """The call that makes this prior, with the settings that differ from its defaults.

        >>> BAR(exclude=["x0"]), IHT(5, fit_best_subset=True)
        (BAR(penalty='bic', exclude=['x0']), IHT(max_nonzero=5, penalty='bic', fit_best_subset=True))
        """
        defaults = BAR() if self.max_nonzero is None else IHT(self.max_nonzero)
        shown: dict[str, Any] = {"max_nonzero": self.max_nonzero} if self.max_nonzero is not None else {}
        shown["penalty"] = self.weight
        shown.update({n: getattr(self, n) for n in SETTINGS if getattr(self, n) != getattr(defaults, n)})
        if self.exclude:
            shown["exclude"] = list(self.exclude)
        args = ", ".join(f"{k}={v:g}" if isinstance(v, float) else f"{k}={v!r}" for k, v in shown.items())
        return f"{self.kind.upper()}({args})"


#: The settings of an :class:`AdaptiveRidge` besides its penalty, K and exclusions.
SETTINGS = ("initial_variance", "tolerance", "max_iterations", "threshold", "delta", "fit_best_subset")


def BAR(penalty: float | str = "bic", *, exclude=(), initial_variance: float = 1e4, tolerance: float = 1e-8,
        max_iterations: int = 10_000, threshold: float = 1e-6, delta: float = 0.0,
        fit_best_subset: bool = False) -> AdaptiveRidge:
    """Broken adaptive ridge: iterated ridge fits whose variances |b_j|^(2 - delta) / penalty
    follow the last estimate, coefficients below ``threshold`` held at 0, until no coefficient
    moves by ``tolerance`` (BrokenAdaptiveRidge's ``createBarPrior``, same defaults).

    penalty : 'bic' (log(N) / 2, N the data's rows) or a positive number.
    exclude : coefficients left unpenalized and never set to 0 (the intercept always is).
    initial_variance : variance of the starting ridge fit.
    fit_best_subset : refit the selected coefficients without a prior (the others at 0).

    >>> import riskset
    >>> data = riskset.simulate(n=1000, p=10, model="logistic", seed=4)
    >>> fit = riskset.fit(data, "logistic", BAR())
    >>> fit.converged, int((fit.coef != 0).sum()) < 11
    (True, True)
    """
    return AdaptiveRidge(penalty, None, exclude, initial_variance, tolerance, max_iterations, threshold, delta,
                         fit_best_subset)


def IHT(max_nonzero: int, penalty: float | str = "bic", *, exclude=(), initial_variance: float = 0.1,
        tolerance: float = 1e-8, max_iterations: int = 10_000, threshold: float = 1e-6, delta: float = 0.0,
        fit_best_subset: bool = False) -> AdaptiveRidge:
    """Iterative hard thresholding: :func:`BAR`'s iteration, each estimate cut to its
    ``max_nonzero`` largest coefficients (IterativeHardThresholding's ``createIhtPrior``, same
    defaults and rule: the K largest are counted over all coefficients, so an intercept among
    them takes one of the K places; unpenalized coefficients are always kept)."""
    if max_nonzero is None:
        raise InputError("IHT needs max_nonzero, the most non-zero coefficients (K)")
    return AdaptiveRidge(penalty, max_nonzero, exclude, initial_variance, tolerance, max_iterations, threshold,
                         delta, fit_best_subset)


@dataclass(frozen=True)
class JeffreysPrior:
    """The Jeffreys prior, density |I_S(beta)|^(1/2) on the coefficients ``coefs`` (S; empty:
    all of them, Firth's penalized likelihood): :func:`Jeffreys` makes it and says more."""

    coefs: tuple[str, ...] = ()
    max_iter: int = 100

    kind = "jeffreys"
    is_penalized = True
    strength_is_set = True
    means: dict = field(default_factory=dict, init=False, repr=False)
    exclude = ()

    def __post_init__(self):
        object.__setattr__(self, "coefs", tuple(coef_names("coefs", self.coefs)))
        object.__setattr__(self, "max_iter", positive_int("max_iter", self.max_iter))

    def penalty(self, names, always_unpenalized=()) -> Penalty:
        """No L1 or L2 term (the log determinant is the solver's: :mod:`riskset.solver.jeffreys`)."""
        zeros = np.zeros(len(list(names)))
        return Penalty(zeros, zeros, zeros)

    def solve(self, datafit, names, unpenalized, n_rows: int, options: SolverOptions, held: np.ndarray,
              beta0) -> PriorFit:
        """The Jeffreys-penalized fit of ``datafit`` (:func:`~riskset.solver.jeffreys.fit_jeffreys`):
        dense, so at most :data:`~riskset.solver.jeffreys.MAX_COEF` free coefficients; its
        standard errors are the inverse information at the estimate."""
        free = int((~held).sum())
        if free > JEFFREYS_MAX_COEF:
            raise InputError(f"a Jeffreys prior works with the dense information of the free coefficients: at most "
                             f"{JEFFREYS_MAX_COEF}, got {free}; hold the others (fixed=) or select first")
        result = fit_jeffreys(datafit, self.selected(names), replace(options, max_iter=self.max_iter),
                              fixed=held if held.any() else None, beta0=beta0)
        return PriorFit(result, self.penalty(names), held)

    def selected(self, names) -> np.ndarray:
        """Mask of the coefficients ``names`` in the determinant."""
        names = list(names)
        known_names("the Jeffreys prior's coefs", list(self.coefs), names)
        return np.isin(names, list(self.coefs)) if self.coefs else np.ones(len(names), bool)

    def to_dict(self) -> dict:
        d: dict[str, Any] = {"kind": "jeffreys", "coefs": list(self.coefs)}
        if self.max_iter != 100:
            d["max_iter"] = self.max_iter
        return d

    def __repr__(self) -> str:
        """
        >>> Jeffreys(), Jeffreys(["treatment"])
        (Jeffreys(), Jeffreys(coefs=['treatment']))
        """
        d = self.to_dict()
        args = [f"coefs={d['coefs']!r}"] if d["coefs"] else []
        args += [f"max_iter={self.max_iter}"] if "max_iter" in d else []
        return f"Jeffreys({', '.join(args)})"


def Jeffreys(coefs=(), *, max_iter: int = 100) -> JeffreysPrior:
    """The Jeffreys (Firth) prior: maximize l(beta) + 1/2 log det I_S(beta), I_S the observed
    information of the coefficients ``coefs`` (default: all, Firth 1993 as R's logistf and
    coxphf; one coefficient, alone in the model: Cyclops' ``jeffreys`` prior type). The
    estimate is finite where the maximum likelihood one is not (a treatment without events,
    separation), and biased less in small samples. Standard errors are the inverse
    information at the estimate (logistf's Wald ones). Dense: at most
    :data:`riskset.solver.jeffreys.MAX_COEF` coefficients; ``max_iter`` Newton iterations.

    >>> import riskset
    >>> data = riskset.from_arrays([[1.0], [1.0], [0.0], [0.0], [0.0]], y=[1, 1, 0, 1, 0])
    >>> import warnings
    >>> with warnings.catch_warnings():
    ...     warnings.simplefilter("ignore")      # the fit warns: the estimate does not exist
    ...     fit = riskset.fit(data, "logistic")  # x0 = 1 predicts y = 1 perfectly
    >>> fit.status
    'estimate_does_not_exist'
    >>> firth = riskset.fit(data, "logistic", Jeffreys())
    >>> firth.converged, round(float(firth.coef["x0"]), 4)   # log(2.5 / 0.5) - log(1.5 / 2.5)
    (True, 2.1203)
    """
    return JeffreysPrior(tuple(coefs) if not isinstance(coefs, str) else (coefs,), max_iter)


@dataclass(frozen=True)
class HierarchicalPrior:
    """A hierarchical normal prior: :func:`Hierarchical` makes it and says more."""

    variance: float | None
    group_variance: float
    groups: dict
    exclude: tuple[str, ...] = ()

    kind = "hierarchical"
    is_penalized = True
    means: dict = field(default_factory=dict, init=False, repr=False)

    def __post_init__(self):
        if self.variance is not None:
            object.__setattr__(self, "variance", positive_number("variance", self.variance))
        object.__setattr__(self, "group_variance", positive_number("group_variance", self.group_variance))
        groups = coef_mapping("groups", self.groups)
        if not groups:
            raise InputError("groups must map at least one covariate to its group")
        object.__setattr__(self, "groups", {n: str(g) for n, g in groups.items()})
        object.__setattr__(self, "exclude", tuple(coef_names("exclude", self.exclude)))
        both = [n for n in self.exclude if n in self.groups]
        if both:
            raise InputError(f"exclude and groups both name {', '.join(map(repr, both))}: a grouped covariate is "
                             f"penalized towards its group's mean")

    @property
    def strength_is_set(self) -> bool:
        return self.variance is not None

    def with_strength(self, value: float) -> "HierarchicalPrior":
        return replace(self, variance=float(value))

    def design_prior(self, group_names) -> Prior:
        """The normal prior of the design with a column per group
        (:mod:`riskset.data.hierarchy`): ``variance`` on the covariates, ``group_variance`` on
        the groups' columns."""
        return Prior("normal", variance=self.variance, exclude=self.exclude,
                     variances={g: self.group_variance for g in group_names})

    def penalty(self, names, always_unpenalized=()) -> Penalty:
        raise InputError("a hierarchical prior is fitted on the design with a column per group: riskset.fit and "
                         "riskset.cross_validate take it; its bootstrap and paths are not implemented")

    def to_dict(self) -> dict:
        d: dict[str, Any] = {"kind": "hierarchical", "variance": self.variance, "group_variance": self.group_variance,
             "groups": dict(self.groups)}
        if self.exclude:
            d["exclude"] = list(self.exclude)
        return d

    def __repr__(self) -> str:
        """
        >>> Hierarchical(1.0, 0.5, groups={"a": "g", "b": "g"})
        Hierarchical(variance=1, group_variance=0.5, groups={'a': 'g', 'b': 'g'})
        """
        d = self.to_dict()
        d.pop("kind")
        return "Hierarchical(" + ", ".join(f"{k}={v:g}" if isinstance(v, float) else f"{k}={v!r}"
                                           for k, v in d.items() if v is not None) + ")"


def Hierarchical(variance: float | None = None, group_variance: float = 1.0, *, groups, exclude=()
                 ) -> HierarchicalPrior:
    """A hierarchical normal prior: the coefficient of each covariate j of group g (``groups``:
    covariate -> group label) is normal around its group's mean, beta_j ~ N(mu_g, variance),
    and the group means are normal, mu_g ~ N(0, group_variance): covariates of a group
    (drugs of one class, outcomes of one kind) borrow strength from each other (Cyclops'
    ``hierarchical`` prior, Genkin et al.'s multi-level normal prior). Covariates in no
    group have the plain N(0, variance) prior; ``exclude``: unpenalized.

    Fitted exactly, as a ridge on the design with a column per group
    (:mod:`riskset.data.hierarchy`); ``riskset.cross_validate`` chooses ``variance`` for each
    of a grid of ``group_variances`` (Cyclops' auto search in one dimension, a grid in the
    other). The fit's message gives the group means.

    >>> import riskset
    >>> data = riskset.simulate(n=500, p=4, model="logistic", seed=3)
    >>> fit = riskset.fit(data, "logistic", Hierarchical(0.1, 1.0, groups={"x0": "a", "x1": "a"}))
    >>> fit.converged and "group means" in fit.message
    True
    """
    return HierarchicalPrior(variance, group_variance, dict(groups), tuple(exclude))


def prior_from_dict(d: dict) -> Prior | AdaptiveRidge | JeffreysPrior | HierarchicalPrior:
    """The prior of a ``to_dict()`` (a saved fit's)."""
    d = dict(d)
    kind = d.pop("kind")
    if kind == "hierarchical":
        return HierarchicalPrior(d["variance"], d["group_variance"], d["groups"], tuple(d.get("exclude", ())))
    if kind == "jeffreys":
        return JeffreysPrior(tuple(d.get("coefs", ())), d.get("max_iter", 100))
    if kind in ("bar", "iht"):
        d["weight"] = d.pop("penalty", "bic")
        d["exclude"] = tuple(d.get("exclude", ()))
        return AdaptiveRidge(**d)
    return Prior(kind, **d)


def as_prior(value) -> Prior | AdaptiveRidge | JeffreysPrior | HierarchicalPrior:
    """``value`` if it is a prior, the unpenalized prior if None (the ``prior`` argument of
    ``riskset.fit`` and the selection tools); InputError otherwise."""
    if value is None:
        return NoPrior()
    if not isinstance(value, (Prior, AdaptiveRidge, JeffreysPrior, HierarchicalPrior)):
        raise InputError(f"prior must be a riskset prior such as riskset.Laplace(gamma=1.0), "
                         f"riskset.Normal(variance=1.0) or riskset.BAR(), got {value!r}")
    return value
