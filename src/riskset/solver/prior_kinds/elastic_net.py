"""The elastic net: gamma |beta_j - m_j| + (beta_j - m_j)^2 / (2 variance); no single strength."""
import numpy as np

from riskset.solver.prior_kinds.base import PriorKind


class ElasticNet(PriorKind):
    name = "elastic_net"
    constructor = "ElasticNet"
    strength_fields = ("gamma", "variance")

    def rates(self, gamma, variance):
        return gamma, (1.0 / variance if np.isfinite(variance) else 0.0)
