"""Evidence synthesis across the databases of a network without sharing rows: each site
shares an approximation of its profile log-likelihood of the effect
(:func:`approximate_likelihood`, a small JSON file), and the approximations are pooled into
one estimate and interval, fixed or random effects (:func:`pool`), as OHDSI's
EvidenceSynthesis package does."""
from riskset.synthesis.approximation import KINDS, LikelihoodApproximation, approximate_likelihood
from riskset.synthesis.pooling import pool

__all__ = ["KINDS", "LikelihoodApproximation", "approximate_likelihood", "pool"]
