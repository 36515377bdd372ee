"""The per-coordinate update of CCD under a prior, written once for both backends.

A prior is a per-coefficient row ``(l1, l2, center)`` of a penalty table
(:mod:`riskset.core.penalty`): the penalized objective (maximized) is

    l(beta) - sum_j ( l1_j |beta_j - m_j| + l2_j (beta_j - m_j)^2 / 2 ),   m_j = center.

The step is Newton's on that objective for one coordinate, with the L1 kink at
``beta_j = m_j`` handled by one-sided derivatives (a step that would cross it stops on
it), then bounded by the Genkin-Lewis-Madigan trust region: half-width r becomes
max(2|step|, r/2).

The device kernels call :func:`prior_step_value` as it is (Numba-CUDA compiles ``@njit``
functions for the device), so the step has one definition for both backends.
"""
from numba import njit

#: Columns of a penalty table row.
L1, L2, CENTER = 0, 1, 2


_jit = njit(cache=True, nogil=True, error_model="numpy")


@_jit
def newton_step(g, h, b, l1, l2):
    """Step for the coefficient's offset ``b = beta_j - m_j`` from its prior center,
    given dl/dbeta_j = g and d2l/dbeta_j^2 = h."""
    curv = l2 - h  # curvature of the negated objective; > 0 unless degenerate
    grad = g - l2 * b
    if not curv > 0.0:
        # no curvature (a column without rows of positive weight, e.g. in a training fold
        # warm-started from the full data): the objective is linear in b beside the L1 term,
        # whose minimum is the center if |slope| <= l1 (else there is none: no step)
        if l1 > 0.0 and b != 0.0 and abs(grad) <= l1:
            return -b
        return 0.0
    if l1 == 0.0:
        return grad / curv
    if b == 0.0:
        if grad > l1:
            return (grad - l1) / curv
        if grad < -l1:
            return (grad + l1) / curv
        return 0.0
    sign = 1.0 if b > 0 else -1.0
    step = (grad - l1 * sign) / curv
    if (b + step) * sign < 0.0:  # would cross the kink: stop at it
        step = -b
    return step


@_jit
def prior_step_value(g, h, beta_j, l1, l2, center, rad):
    """(step, new value of the coefficient, new trust-region half-width) for one coordinate
    with value ``beta_j`` and trust-region half-width ``rad``. The new value is ``center``
    exactly when the step ends on the kink (so the solver's "at the center" tests are exact)."""
    b = beta_j - center
    step = newton_step(g, h, b, l1, l2)
    if step == 0.0:
        return 0.0, beta_j, rad
    if step > rad:
        step = rad
    elif step < -rad:
        step = -rad
    grow = 2.0 * abs(step)
    half = 0.5 * rad
    rad = grow if grow > half else half
    if step == -b:
        return step, center, rad
    return step, beta_j + step, rad


@_jit
def prior_step(g, h, beta, prior, radius, j):
    """(step, new beta_j) of coefficient j under its row of the penalty table ``prior``;
    updates the trust-region half-width ``radius[j]`` when the coefficient moves."""
    step, new, rad = prior_step_value(g, h, beta[j], prior[j, L1], prior[j, L2], prior[j, CENTER], radius[j])
    if step != 0.0:
        radius[j] = rad
    return step, new

