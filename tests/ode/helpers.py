"""Shared test helpers for riskset.ode tests."""

import numpy as np


def seir_sample(n, seed=0, N=1e6, infected=10.0):
    """Log-uniform SEIR parameters (beta 0.1-2, sigma/gamma 0.05-1)."""
    rng = np.random.default_rng(seed)
    lo = np.log([0.1, 0.05, 0.05])
    hi = np.log([2.0, 1.0, 1.0])
    P = np.exp(rng.uniform(lo, hi, size=(n, 3)))
    y0 = np.array([N - infected, 0.0, infected, 0.0])
    return P, y0


def test_model_rhs(t, y, p, dydt):
    """Harmonic oscillator (x, v; angular frequency w = p[0]) plus a third
    state z' = -k z + c z^2 (k = p[1], c = p[2]): closed form for c = 0,
    finite-time blow-up at t = 1 for k = 0, c = 1, z(0) = 1."""
    w = p[0]
    dydt[0] = y[1]
    dydt[1] = -w * w * y[0]
    dydt[2] = -p[1] * y[2] + p[2] * y[2] * y[2]


# not a test, despite the name pattern
test_model_rhs.__test__ = False
