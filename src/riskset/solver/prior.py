"""Priors (penalties) on the coefficients.

A prior is resolved against the coefficient names of a fit into two per-coordinate
arrays, ``l1`` and ``l2``, so that the penalized objective that is maximized is

    l(beta) - sum_j ( l1_j |beta_j| + l2_j beta_j^2 / 2 ).

Laplace (L1) with rate ``gamma``: l1 = gamma (variance 2 / gamma^2).
Normal (L2) with variance ``v``: l2 = 1 / v.
Elastic net: both. Excluded coefficients (the treatment, the intercept) get 0, 0.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from riskset.exceptions import InputError
from riskset.validation import coef_mapping, coef_names, known_names, one_of, positive_number


@dataclass(frozen=True)
class Prior:
    """A prior on the coefficients.

    Parameters
    ----------
    kind : {'none', 'laplace', 'normal', 'elastic_net'}
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
    """

    kind: str = "none"
    gamma: float = 0.0
    variance: float = np.inf
    exclude: tuple[str, ...] = ()
    variances: dict = field(default_factory=dict)

    def __post_init__(self):
        one_of("prior kind", self.kind, ("none", "laplace", "normal", "elastic_net"))
        if not (self.gamma is None and self.kind == "laplace"):
            object.__setattr__(self, "gamma", positive_number("gamma", self.gamma, allow_zero=True))
        if not (self.variance is None and self.kind == "normal"):
            object.__setattr__(self, "variance", positive_number("variance", self.variance, allow_inf=True))
        variances = coef_mapping("variances", self.variances)
        for name, v in variances.items():
            positive_number(f"variances[{name!r}]", v, allow_inf=True)
        object.__setattr__(self, "variances", variances)
        object.__setattr__(self, "exclude", tuple(coef_names("exclude", self.exclude)))

    @property
    def is_penalized(self) -> bool:
        return self.kind != "none"

    def with_strength(self, value: float) -> "Prior":
        """The same prior with its strength replaced: gamma for Laplace, variance for Normal."""
        if self.kind == "laplace":
            return Prior("laplace", gamma=value, exclude=self.exclude, variances=self.variances)
        if self.kind == "normal":
            return Prior("normal", variance=value, exclude=self.exclude, variances=self.variances)
        raise InputError(f"a {self.kind!r} prior has no single strength to vary")

    @property
    def strength_is_set(self) -> bool:
        """False for ``Laplace()`` / ``Normal()``: a strength still to be chosen (cross-validation)."""
        return self.gamma is not None and self.variance is not None

    def penalty_arrays(self, names, always_unpenalized=()) -> tuple[np.ndarray, np.ndarray]:
        """Per-coordinate (l1, l2) for coefficients ``names``."""
        if not self.strength_is_set:
            what = "gamma=... or variance=..." if self.kind == "laplace" else "variance=..."
            raise InputError(f"the {self.kind} prior has no strength: give {what}, or choose it with "
                             f"riskset.cross_validate")
        names = list(names)
        known_names("the prior's exclude", self.exclude, names)
        known_names("the prior's variances", list(self.variances), names)
        p = len(names)
        l1 = np.zeros(p)
        l2 = np.zeros(p)
        if self.kind in ("laplace", "elastic_net"):
            l1[:] = self.gamma
        if self.kind in ("normal", "elastic_net") and np.isfinite(self.variance):
            l2[:] = 1.0 / self.variance
        for name, v in self.variances.items():
            j = names.index(name)
            if self.kind == "laplace":
                l1[j] = np.sqrt(2.0 / v)
            else:
                l2[j] = 1.0 / v
        free = set(self.exclude) | set(always_unpenalized)
        for j, n in enumerate(names):
            if n in free:
                l1[j] = l2[j] = 0.0
        return l1, l2

    def to_dict(self) -> dict:
        d = {"kind": self.kind}
        if self.kind in ("laplace", "elastic_net"):
            d["gamma"] = self.gamma
        if self.kind in ("normal", "elastic_net"):
            d["variance"] = self.variance
        if self.exclude:
            d["exclude"] = list(self.exclude)
        if self.variances:
            d["variances"] = dict(self.variances)
        return d

    @classmethod
    def from_dict(cls, d: dict) -> "Prior":
        d = dict(d)
        return cls(d.pop("kind"), **d)


def NoPrior() -> Prior:
    """No penalty: maximum likelihood."""
    return Prior("none")


def Laplace(gamma: float | None = None, *, variance: float | None = None, exclude=(), variances=None) -> Prior:
    """Laplace (L1, lasso) prior: penalty ``gamma * |beta_j|``; ``variance = 2 / gamma**2``.

    Give either ``gamma`` or ``variance`` (Cyclops' parametrization), or neither for
    cross-validation and regularization paths, which choose it.

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
    return Prior("laplace", gamma=gamma, exclude=exclude, variances=variances or {})


def Normal(variance: float | None = None, *, exclude=(), variances=None) -> Prior:
    """Normal (L2, ridge) prior with the given variance: penalty ``beta_j^2 / (2 variance)``.

    Without ``variance``, for cross-validation and regularization paths, which choose it."""
    return Prior("normal", variance=variance, exclude=exclude, variances=variances or {})


def ElasticNet(gamma: float, variance: float, *, exclude=()) -> Prior:
    """Both penalties: ``gamma |beta_j| + beta_j^2 / (2 variance)``."""
    return Prior("elastic_net", gamma=gamma, variance=variance, exclude=exclude)
