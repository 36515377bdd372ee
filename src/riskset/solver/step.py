"""The per-coordinate update of CCD, compiled so Numba cycle kernels can inline it.

Newton step on the penalized objective (maximized) for one coordinate, with the L1
kink handled by one-sided derivatives, then bounded by the Genkin-Lewis-Madigan
trust region (half-width r becomes max(2|step|, r/2)).
"""
from numba import njit


@njit(cache=True, nogil=True, error_model="numpy")
def newton_step(g, h, b, l1, l2):
    """Step for coordinate value ``b`` given dl/db = g and d2l/db2 = h."""
    curv = l2 - h  # curvature of the negated objective; > 0 unless degenerate
    if not curv > 0.0:
        return 0.0
    grad = g - l2 * b
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
    if (b + step) * sign < 0.0:  # would cross the kink: stop at zero
        step = -b
    return step


@njit(cache=True, nogil=True, error_model="numpy")
def bounded_step(g, h, b, l1, l2, radius, j):
    """Newton step clipped to the trust region of coordinate j; updates radius[j]."""
    step = newton_step(g, h, b, l1, l2)
    if step == 0.0:
        return 0.0
    r = radius[j]
    step = min(max(step, -r), r)
    radius[j] = max(2.0 * abs(step), 0.5 * r)
    return step
