"""Device versions of :mod:`riskset.solver.step`.

Newton step on the penalized objective for one coordinate with the L1 kink handled
by one-sided derivatives, clipped to the Genkin-Lewis-Madigan trust region whose
half-width becomes max(2|step|, half-width/2). ``radius`` is (replicates, coef).
"""
import math

from numba import cuda

from riskset.core import step as host_step


#: The host step compiled for the device: one definition of the math for both backends.
newton_step = cuda.jit(device=True)(host_step.newton_step.py_func)


@cuda.jit(device=True)
def clipped_step(g, h, b, l1, l2, rad):
    """(step, new half-width) for trust-region half-width ``rad`` (no memory writes)."""
    step = newton_step(g, h, b, l1, l2)
    if step == 0.0:
        return 0.0, rad
    if step > rad:
        step = rad
    elif step < -rad:
        step = -rad
    grow = 2.0 * math.fabs(step)
    half = 0.5 * rad
    return step, (grow if grow > half else half)


@cuda.jit(device=True)
def bounded_step(g, h, b, l1, l2, radius, r, j):
    """Clipped step for coordinate j of replicate r; updates radius[r, j]."""
    step, rad = clipped_step(g, h, b, l1, l2, radius[r, j])
    if step != 0.0:
        radius[r, j] = rad
    return step


@cuda.jit(device=True)
def coordinate_step(mode, g, h, beta, l1, l2, radius, fixed, out, r, j):
    """What a persistent sweep kernel does with coordinate j of replicate r once (g, h) are
    reduced; returns the step to apply. Mode 0: the trust-region step (beta and radius
    stored); mode 1: report (g, h) in out[r] and do not move; mode 2: the given step fixed[r].
    """
    if mode == 0:
        step = bounded_step(g, h, beta[r, j], l1[r, j], l2[r, j], radius, r, j)
        if step != 0.0:
            beta[r, j] += step
        return step
    if mode == 1:
        out[r, 0] = g
        out[r, 1] = h
        return 0.0
    return fixed[r]
