"""The normal (L2, ridge) prior: penalty (beta_j - m_j)^2 / (2 variance)."""
import numpy as np

from riskset.solver.prior_kinds.base import PriorKind


class Normal(PriorKind):
    name = "normal"
    constructor = "Normal"
    strength_fields = ("variance",)
    varied = "variance"

    def rates(self, gamma, variance):
        return 0.0, (1.0 / variance if np.isfinite(variance) else 0.0)

    def strength_of_variance(self, variance):
        return float(variance)
