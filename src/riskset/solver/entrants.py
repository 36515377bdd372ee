"""Which coordinates enter the active set: at the opening of a fit (a warm start near its
optimum, or a start from the prior's centers), at a replicate's warm start (its likely
entrants), and between polishes (those whose slope beats their L1 rate)."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from riskset.core.penalty import Penalty
from riskset.solver.newton import newton_coordinates, polishable

#: A warm start opens with a Newton polish, not a full sweep, when the coordinates that would
#: enter its active set are at most 5 and this fraction of it (:func:`opening_entrants`) ...
OPENING_ENTRANTS = 0.25
#: ... and its family's full sweep costs at least this many gradients (``Datafit.sweep_passes``:
#: a GLM's sweep, a few gradients, settles the active set for less than the opening's Newton steps).
OPENING_SWEEP_PASSES = 10.0
#: A replicate's likely entrants (:func:`likely_entrants`): the coordinates at their centers whose
#: slope at the warm start, in the fit it starts from, is at least this fraction of their L1 rate
#: (a fold's slopes differ from the full data's by a fraction of the rate that grows as it falls).
LIKELY_ENTRANT_RATE = 0.5


def warm_start(beta, pen: Penalty, free) -> bool:
    """Whether a fit starts with some free coefficient off its prior center (a warm start)."""
    return bool(np.any(free & ~pen.at_center(beta)))


def cold_start(beta, pen: Penalty, free) -> bool:
    """Whether every free L1-penalized coefficient is at its prior center (a fit from the
    centers; the unpenalized ones may have been fitted by the restricted start)."""
    return not np.any(free & (pen.l1 > 0) & ~pen.at_center(beta))


def entrants(beta, grad, pen: Penalty, free) -> np.ndarray:
    """The free coordinates at their centers whose slope ``grad`` beats their L1 rate: those a
    coordinate step would move off the center."""
    return np.flatnonzero(free & pen.at_center(beta) & (np.abs(grad) > pen.l1))


@dataclass
class Opening:
    """The opening of a fit (:func:`opening_entrants`): its entrants and the gradient
    that found them, exact or read at the replicate's likely entrants alone
    (:func:`likely_entrants`; then no reference for screened checks, zero elsewhere)."""

    entrants: np.ndarray
    grad: np.ndarray
    exact: bool = True


def likely_entrants(beta, grad, pen: Penalty) -> np.ndarray:
    """The coordinates that may enter the active set of a replicate warm-started at ``beta``,
    the end of a fit whose gradient there is ``grad`` (a cross-validation fold started from the
    full-data fit): at their centers, with an L1 term, and a slope of at least
    :data:`LIKELY_ENTRANT_RATE` of their rate. A replicate's opening reads its slopes there
    alone (a few of the columns, a fraction of the cost of a gradient); an entrant outside
    them enters at the first exact gradient, after the opening's polish."""
    return pen.at_center(beta) & (pen.l1 > 0) & (np.abs(grad) >= LIKELY_ENTRANT_RATE * pen.l1)


def opening_entrants(datafit, beta, grad, pen: Penalty, free, max_active) -> np.ndarray | None:
    """The opening of a warm start whose active set is nearly right (a cross-validation fold
    or a bootstrap draw started from the full-data fit at the same prior, the next point of a
    fine path): where the log-likelihood's gradient ``grad`` shows that at most 5 +
    :data:`OPENING_ENTRANTS` x |A| coordinates would enter the active set A, those that enter
    (each at its center with a slope beyond its L1 rate; possibly none). The fit then
    polishes (:meth:`riskset.solver.ccd.Solver.polish`, whose first Newton step they join)
    before any full sweep: a gradient and a polish cost less than one sweep of a risk-set family.

    A cold start (every L1-penalized coefficient at its center: a fit from the centers, after
    the restricted start) opens alike with all its entrants, where they and the unpenalized
    coefficients fit a polish (at most ``max_active``): the first sweep would let them in one
    coordinate step each, each refreshing the risk-set sums (docs/performance.md).

    None where the opening does not apply (too many entrants, none at a cold start, or an
    active set too large to polish or singular by count,
    :func:`~riskset.solver.newton.newton_coordinates`): the fit opens with a full sweep."""
    enter = entrants(beta, grad, pen, free & (pen.l1 > 0))
    if cold_start(beta, pen, free):
        block = np.union1d(enter, np.flatnonzero(free & (pen.l1 == 0)))
        fits = 0 < enter.size and polishable(datafit, block, pen, max_active)
        return enter if fits else None
    active = newton_coordinates(datafit, beta, pen, free, max_active)
    if active is None:
        return None
    return enter if enter.size <= 5 + OPENING_ENTRANTS * active.size else None
