"""Batch ODE integration: many parameter sets of one small model at once.

Dormand-Prince 5(4) with scipy RK45's error control and dense output,
integrated for every task in parallel on CPU cores (numba ``prange``) or on a
GPU (numba-CUDA, one task per thread), with optional task bundling by a
regression-predicted step count (see :mod:`riskset.ode.bundling`).

>>> import numpy as np
>>> from riskset.ode import solve_batch
>>> res = solve_batch("seir", [[0.5, 0.2, 0.1]], [999990, 0, 10, 0],
...                   np.arange(0, 101.0), rtol=1e-8, atol=1e-8)
>>> res.states.shape
(1, 101, 4)

A user model is a numba-compilable right-hand side writing into ``dydt``
(see :mod:`riskset.ode.models` for the rules)::

    def decay(t, y, p, dydt):
        dydt[0] = -p[0] * y[0]

    model = ode_model(decay, param_names=["k"], state_names=["x"])
    res = solve_batch(model, k_values[:, None], [1.0], times)

Task status codes (``res.status``): 0 success, 1 max steps reached, 2 step
size underflow, 3 non-finite parameters, initial state or derivative.

Public API: :func:`solve_batch`, :class:`BatchResult`, :class:`Model`,
:func:`ode_model` (user models), :func:`get_model`, built-in ``SEIR`` and
``PK_TMDD`` models, :func:`pk_initial_state`, :func:`fan_chart`,
:func:`lockstep_efficiency`, status codes.
"""

from .bundling import BundleInfo, lockstep_efficiency
from .dopri import (MAX_STEPS, NONFINITE, STATUS_NAMES, STEP_UNDERFLOW,
                    SUCCESS)
from .models import (PK_TMDD, SEIR, Model, get_model, ode_model,
                     pk_initial_state)
from .plots import fan_chart
from .result import BatchResult
from .solve import solve_batch

__all__ = [
    "solve_batch", "BatchResult", "Model", "ode_model", "get_model", "SEIR",
    "PK_TMDD", "pk_initial_state", "fan_chart", "lockstep_efficiency",
    "BundleInfo", "SUCCESS", "MAX_STEPS", "STEP_UNDERFLOW", "NONFINITE",
    "STATUS_NAMES",
]
