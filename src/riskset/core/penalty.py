"""The penalty of a fit as the solver and the kernels see it: one table, one value.

A prior (:mod:`riskset.solver.prior`) resolves against the coefficient names of a fit
into a :class:`Penalty`: per coefficient j an L1 rate ``l1_j``, an L2 weight ``l2_j``
and a center ``m_j`` (the prior mean), so that the objective maximized is

    l(beta) - sum_j ( l1_j |beta_j - m_j| + l2_j (beta_j - m_j)^2 / 2 ).

Its ``table`` (rows (l1, l2, m), columns :data:`~riskset.core.step.L1`, ``L2``,
``CENTER``) is what every compiled sweep reads, on both backends; a batch of R
replicates has (R, P) arrays and an (R, P, 3) table.
"""
from __future__ import annotations

import numpy as np

from riskset.core.step import CENTER, L1, L2


class Penalty:
    """Per-coefficient L1 rates, L2 weights and centers (arrays of one shape).

    >>> pen = Penalty([0.0, 2.0], [1.0, 0.0], center=[0.5, 0.0])
    >>> pen.value(np.array([1.5, -1.0]))
    2.5
    >>> pen.at_center(np.array([0.5, 1.0])).tolist()
    [True, False]
    """

    def __init__(self, l1, l2, center=None):
        l1 = np.asarray(l1, dtype=np.float64)
        l2 = np.broadcast_to(np.asarray(l2, dtype=np.float64), l1.shape)
        center = np.zeros(l1.shape) if center is None else np.asarray(center, dtype=np.float64)
        self.table = np.ascontiguousarray(np.stack(np.broadcast_arrays(l1, l2, center), axis=-1))

    @property
    def l1(self) -> np.ndarray:
        return self.table[..., L1]

    @property
    def l2(self) -> np.ndarray:
        return self.table[..., L2]

    @property
    def center(self) -> np.ndarray:
        return self.table[..., CENTER]

    @property
    def is_penalized(self) -> bool:
        """Whether some coefficient has a penalty term."""
        return bool(np.any((self.l1 > 0) | (self.l2 > 0)))

    def value(self, beta) -> float:
        """The penalty at ``beta`` (one fit)."""
        d = np.asarray(beta) - self.center
        return float(np.sum(self.l1 * np.abs(d)) + 0.5 * np.sum(self.l2 * d * d))

    def values(self, beta) -> np.ndarray:
        """The penalty of each replicate at ``beta`` (R, P)."""
        d = np.asarray(beta) - self.center
        return np.sum(self.l1 * np.abs(d), axis=-1) + 0.5 * np.sum(self.l2 * d * d, axis=-1)

    def at_center(self, beta) -> np.ndarray:
        """Whether each coefficient sits at its center (on the L1 kink: "zero" for the solver)."""
        return np.asarray(beta) == self.center

    def gradient(self, beta, side) -> np.ndarray:
        """d/dbeta of the smooth part of the penalty, l2 (beta - m), plus l1 times the side of
        the center each coefficient is held on, ``side`` (sign(beta - m) off the center): the
        penalty's side of a Newton step with the signs held."""
        return self.l2 * (np.asarray(beta) - self.center) + self.l1 * side

    @staticmethod
    def stack(penalties) -> "Penalty":
        """The penalties of R replicates as one batch ((R, P) arrays)."""
        out = Penalty.__new__(Penalty)
        out.table = np.ascontiguousarray(np.stack([p.table for p in penalties]))
        return out

    def kkt_violations(self, beta, grad) -> np.ndarray:
        """Per coefficient, the distance from 0 to the subdifferential of the penalized
        objective at ``beta`` given the log-likelihood's gradient ``grad``: off the center
        |g_j - l2_j d_j - l1_j sign(d_j)| (d = beta - m), at the center max(0, |g_j| - l1_j).
        All zero exactly at the optimum (the Karush-Kuhn-Tucker conditions).

        >>> Penalty([1.0, 1.0], [0.0, 0.0]).kkt_violations(np.array([0.0, 2.0]), np.array([1.5, 0.25])).tolist()
        [0.5, 0.75]
        """
        d = np.asarray(beta) - self.center
        off = np.abs(grad - self.l2 * d - self.l1 * np.sign(d))
        return np.where(d == 0, np.maximum(np.abs(grad) - self.l1, 0.0), off)

    def kkt_violation(self, beta, grad, unit, free) -> float:
        """The largest of :meth:`kkt_violations` over the ``free`` coefficients, each in its
        ``unit`` (0 if none is free)."""
        violations = (self.kkt_violations(beta, grad) / unit)[free]
        return float(np.max(violations)) if violations.size else 0.0

    def row(self, r: int) -> "Penalty":
        """The penalty of replicate r of a batch."""
        out = Penalty.__new__(Penalty)
        out.table = self.table[r]
        return out

    def __getitem__(self, index) -> "Penalty":
        """The penalty of the coefficients ``index`` (one fit)."""
        out = Penalty.__new__(Penalty)
        out.table = np.ascontiguousarray(self.table[index])
        return out
