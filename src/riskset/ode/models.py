"""ODE models for batch integration: built-in SEIR and two-compartment TMDD.

Writing your own model
----------------------
A model is a plain Python right-hand side that numba can compile::

    def rhs(t, y, p, dydt):
        # t: float time, y: state vector (read only), p: parameter vector,
        # dydt: output vector, same length as y -- write every entry.
        dydt[0] = -p[0] * y[0]

    model = ode_model(rhs, param_names=["k"], state_names=["x"], name="decay")
    res = solve_batch(model, params, y0, t_eval)

Rules: use only scalar arithmetic, ``math`` functions, indexing of ``y``,
``p`` and ``dydt`` and local scalar variables; do not allocate arrays, call
numpy or return a value (the result goes into ``dydt``). The same source is
compiled with ``numba.njit`` for the CPU and ``numba.cuda.jit(device=True)``
for the GPU (or run as plain Python under the CUDA simulator). An already
``@njit``-decorated function is accepted too (its ``py_func`` is used).

SEIR
----
States ``S, E, I, R``; parameters ``beta, sigma, gamma``; ``N = S+E+I+R`` is
constant::

    dS/dt = -beta*S*I/N
    dE/dt =  beta*S*I/N - sigma*E
    dI/dt =  sigma*E - gamma*I
    dR/dt =  gamma*I

PK: two-compartment model with target-mediated drug disposition (TMDD)
---------------------------------------------------------------------
The full TMDD model of Mager & Jusko (2001) with a peripheral compartment, the
structure used for the anti-EGFR antibody nimotuzumab in the seed paper's
ref. [14]. States: ``C`` free drug concentration in the central compartment,
``AP`` amount of drug in the peripheral compartment, ``R`` free target
(receptor) concentration, ``RC`` drug-target complex concentration.
Parameters: ``kel`` linear elimination rate, ``kcp``/``kpc`` central ->
peripheral / peripheral -> central rate constants, ``Vc`` central volume,
``kon``/``koff`` binding/unbinding rate constants, ``kint`` internalisation
rate of the complex, ``ksyn`` zero-order target synthesis rate and ``kdeg``
first-order target degradation rate::

    dC/dt  = -(kel + kcp)*C + kpc*AP/Vc - kon*C*R + koff*RC
    dAP/dt =  kcp*C*Vc - kpc*AP
    dR/dt  =  ksyn - kdeg*R - kon*C*R + koff*RC
    dRC/dt =  kon*C*R - (koff + kint)*RC

A single intravenous bolus ``dose`` into a target at baseline gives the
initial state ``C = dose/Vc, AP = 0, R = ksyn/kdeg, RC = 0``; see
:func:`pk_initial_state`.
"""

from dataclasses import dataclass, field

import numpy as np


@dataclass(frozen=True, eq=False)
class Model:
    """An ODE system ``dy/dt = rhs(t, y, p)`` with named parameters/states."""

    name: str
    rhs: object  # plain Python function rhs(t, y, p, dydt)
    param_names: tuple
    state_names: tuple
    description: str = ""
    equations: tuple = field(default=())

    @property
    def n_params(self):
        return len(self.param_names)

    @property
    def n_states(self):
        return len(self.state_names)

    def __repr__(self):
        return (f"Model({self.name!r}, params={list(self.param_names)}, "
                f"states={list(self.state_names)})")


def ode_model(rhs, param_names, state_names, name=None, description=""):
    """Wrap a user right-hand side ``rhs(t, y, p, dydt)`` as a :class:`Model`.

    ``rhs`` may be a plain Python function or a numba dispatcher.
    """
    py = getattr(rhs, "py_func", rhs)
    if not callable(py):
        raise TypeError("rhs must be a function rhs(t, y, p, dydt)")
    param_names = tuple(str(x) for x in param_names)
    state_names = tuple(str(x) for x in state_names)
    if len(state_names) == 0:
        raise ValueError("a model needs at least one state")
    for kind, names in (("parameter", param_names), ("state", state_names)):
        if len(set(names)) != len(names):
            raise ValueError(f"duplicate {kind} names: {list(names)}")
    return Model(name or py.__name__, py, param_names, state_names,
                 description)


def seir_rhs(t, y, p, dydt):
    S = y[0]
    E = y[1]
    I = y[2]  # noqa: E741
    R = y[3]
    beta = p[0]
    sigma = p[1]
    gamma = p[2]
    N = S + E + I + R
    inf = beta * S * I / N
    dydt[0] = -inf
    dydt[1] = inf - sigma * E
    dydt[2] = sigma * E - gamma * I
    dydt[3] = gamma * I


def pk_tmdd_rhs(t, y, p, dydt):
    C = y[0]
    AP = y[1]
    R = y[2]
    RC = y[3]
    kel = p[0]
    kcp = p[1]
    kpc = p[2]
    Vc = p[3]
    kon = p[4]
    koff = p[5]
    kint = p[6]
    ksyn = p[7]
    kdeg = p[8]
    bind = kon * C * R - koff * RC
    dydt[0] = -(kel + kcp) * C + kpc * AP / Vc - bind
    dydt[1] = kcp * C * Vc - kpc * AP
    dydt[2] = ksyn - kdeg * R - bind
    dydt[3] = bind - kint * RC


SEIR = Model(
    "seir", seir_rhs, ("beta", "sigma", "gamma"), ("S", "E", "I", "R"),
    "SEIR epidemic model with constant population N = S+E+I+R",
    ("dS/dt = -beta*S*I/N", "dE/dt = beta*S*I/N - sigma*E",
     "dI/dt = sigma*E - gamma*I", "dR/dt = gamma*I"),
)

PK_TMDD = Model(
    "pk", pk_tmdd_rhs,
    ("kel", "kcp", "kpc", "Vc", "kon", "koff", "kint", "ksyn", "kdeg"),
    ("C", "AP", "R", "RC"),
    "two-compartment PK model with target-mediated drug disposition",
    ("dC/dt = -(kel+kcp)*C + kpc*AP/Vc - kon*C*R + koff*RC",
     "dAP/dt = kcp*C*Vc - kpc*AP",
     "dR/dt = ksyn - kdeg*R - kon*C*R + koff*RC",
     "dRC/dt = kon*C*R - (koff+kint)*RC"),
)

BUILTIN_MODELS = {"seir": SEIR, "pk": PK_TMDD, "tmdd": PK_TMDD}


def get_model(model):
    """Return a :class:`Model` from a Model or a built-in name."""
    if isinstance(model, Model):
        return model
    if isinstance(model, str):
        try:
            return BUILTIN_MODELS[model.lower()]
        except KeyError:
            raise ValueError(
                f"unknown model {model!r}; built-in models: "
                f"{sorted(set(BUILTIN_MODELS) - {'tmdd'})}") from None
    raise TypeError("model must be a Model (see ode_model) or a built-in name")


def pk_initial_state(dose, params):
    """Initial TMDD state after an IV bolus ``dose`` at target baseline.

    ``params`` is an (n_tasks, 9) array or a DataFrame with PK parameter
    columns; returns an (n_tasks, 4) array ``[dose/Vc, 0, ksyn/kdeg, 0]``.
    """
    if hasattr(params, "columns"):
        Vc = np.asarray(params["Vc"], float)
        ksyn = np.asarray(params["ksyn"], float)
        kdeg = np.asarray(params["kdeg"], float)
    else:
        a = np.atleast_2d(np.asarray(params, float))
        Vc, ksyn, kdeg = a[:, 3], a[:, 7], a[:, 8]
    dose = np.broadcast_to(np.asarray(dose, float), Vc.shape)
    z = np.zeros_like(Vc)
    return np.column_stack([dose / Vc, z, ksyn / kdeg, z])
