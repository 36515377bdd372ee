"""The Laplace (L1, lasso) prior: penalty gamma |beta_j - m_j|, variance 2 / gamma^2."""
import numpy as np

from riskset.solver.prior_kinds.base import PriorKind


class Laplace(PriorKind):
    name = "laplace"
    constructor = "Laplace"
    strength_fields = ("gamma",)
    varied = "gamma"
    path_from_gamma_max = True

    def rates(self, gamma, variance):
        return gamma, 0.0

    def override(self, l1, l2, j, variance):
        l1[j] = np.sqrt(2.0 / variance)

    def strength_of_variance(self, variance):
        return float(np.sqrt(2.0 / variance))
