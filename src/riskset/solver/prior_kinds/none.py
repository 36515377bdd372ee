"""No prior: maximum likelihood."""
from riskset.solver.prior_kinds.base import PriorKind


class NoPenalty(PriorKind):
    name = "none"
    constructor = "NoPrior"
