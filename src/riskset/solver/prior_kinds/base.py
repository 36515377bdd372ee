"""What a kind of separable prior declares (see the package docstring)."""
from __future__ import annotations

from typing import ClassVar

import numpy as np

#: Every registered kind by name.
KINDS: dict[str, "PriorKind"] = {}


class PriorKind:
    """A kind of prior: the penalty rates of its strength.

    ``strength_fields``: the prior fields it reads ("gamma", "variance"); ``varied``: the one
    of them cross-validation and regularization paths vary (None: no single strength), which
    may be left unset (None) for them to choose; ``constructor``: the function that makes it,
    as a prior's repr writes it.
    """

    name: ClassVar[str]
    constructor: ClassVar[str]
    strength_fields: ClassVar[tuple[str, ...]] = ()
    varied: ClassVar[str | None] = None
    #: Whether the default grid of a cross-validation starts from gamma_max, the L1 rate at
    #: which every penalized coefficient is zero (else a fixed log-spaced grid of variances).
    path_from_gamma_max: ClassVar[bool] = False

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        if "name" in cls.__dict__:
            KINDS[cls.name] = cls()

    def rates(self, gamma: float, variance: float) -> tuple[float, float]:
        """(l1, l2) of every penalized coefficient."""
        return 0.0, 0.0

    def override(self, l1: np.ndarray, l2: np.ndarray, j: int, variance: float) -> None:
        """Coefficient j's rates from its own prior variance."""
        l2[j] = 1.0 / variance

    def strength_of_variance(self, variance: float) -> float:
        """The value of the varied field that gives a prior of this ``variance``."""
        return variance
