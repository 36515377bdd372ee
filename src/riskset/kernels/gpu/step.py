"""Device versions of :mod:`riskset.solver.step`.

Newton step on the penalized objective for one coordinate with the L1 kink handled
by one-sided derivatives, clipped to the Genkin-Lewis-Madigan trust region whose
half-width becomes max(2|step|, half-width/2). ``radius`` is (replicates, coef).
"""
import math

from numba import cuda

from riskset.solver import step as host_step


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
    step = newton_step(g, h, b, l1, l2)
    if step == 0.0:
        return 0.0
    rad = radius[r, j]
    # explicit comparisons: the builtins min/max/abs do not lower in every numba.cuda version
    if step > rad:
        step = rad
    elif step < -rad:
        step = -rad
    grow = 2.0 * math.fabs(step)
    half = 0.5 * rad
    radius[r, j] = grow if grow > half else half
    return step
