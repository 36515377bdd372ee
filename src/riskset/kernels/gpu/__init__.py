"""GPU backend: device datafits (Numba-CUDA) and batched replicate fits (issue 7).

``to_device(datafit, dtype)`` turns a prepared CPU datafit into a device datafit that
the CCD solver (:mod:`riskset.solver.ccd`) uses unchanged: X (CSC) and the fit state
live on the device, and a whole CCD sweep is one kernel launch in which the Newton
step, the L1 rule and the trust region are computed on the device
(:mod:`.step`, line for line the CPU :mod:`riskset.solver.step`); per sweep only beta
and the trust-region radii cross to the host. ``fit_replicates`` fits R row
weightings of one X at once.

Architecture
------------
* State: (R, N) arrays per replicate (R = 1 for an ordinary fit): eta (always
  float64, the accumulator) and the family's per-row state (GLM: exp(eta), residual,
  curvature; Cox: w = c exp(eta)) in ``dtype``; Cox also (R, n_slots) float64 slot sums
  (by exit slot; by entry slot for (start, stop] rows; event rows for Efron ties) and
  cumulative aggregates. X values are stored in ``dtype`` and row indices in int32.
* Persistent sweep kernels, one block per replicate (:func:`.glm.sweep_kernel`,
  :func:`.cox.sweep_kernel`): for each coordinate of the sweep the block's threads
  reduce g and h over the column's non-zeros (shared-memory tree), thread 0 takes the
  step, all threads move their non-zeros; a per-replicate coordinate mask gives each
  replicate its own active set. Cox refreshes its per-slot aggregates after a move by
  block-level segmented scans over the slots (:mod:`.blocks`), and computes the
  squared risk-set term with a segmented block scan over the column's non-zeros
  (right-censored rows) or over its static entry/exit breakpoints ((start, stop] rows,
  hence time-varying coefficients); Efron ties add per-event-slot terms and a second
  scan (the tied event rows' sum) in the same walk.
* A single GLM fit spreads the sweep over the whole grid (:func:`.glm.sweep_grid_kernel`,
  cooperative launch, two grid syncs per coordinate, every block computing the same
  step from the same partials). A single Cox fit runs in one block.
* Row-parallel passes (GLM refresh and log-likelihood) use many blocks per
  replicate; the Cox exact state + log-likelihood pass runs per replicate block.
* ``gradient``, ``hessian``, ``diagnose`` (rare: screening, polish, standard errors)
  rebuild a CPU state from the coefficients and use the CPU datafit.

Kernels run on a CUDA GPU through Numba-CUDA (``pip install 'riskset[gpu]'``) or, with
``NUMBA_ENABLE_CUDASIM=1`` set before Python starts, in Numba's CUDA simulator.
"""
from __future__ import annotations

from .device import require_device, simulator_enabled

__all__ = ["to_device", "fit_replicates", "simulator_enabled", "require_device"]


def to_device(datafit, dtype="float64"):
    """The device version of ``datafit``: GLM families and Cox (Breslow or Efron ties, strata,
    (start, stop] rows and so step-function time-varying coefficients).

    Raises ``NotImplementedError`` naming the family for other datafits and
    ``RuntimeError`` when no CUDA device is usable and the simulator is off.
    """
    from .base import DeviceDatafit
    from .device import state_dtype

    if isinstance(datafit, DeviceDatafit):
        if state_dtype(dtype) == datafit.dtype:
            return datafit
        datafit = datafit.cpu
    state_dtype(dtype)
    kind = _family(datafit)
    require_device()
    if kind == "glm":
        from .glm import GLMDeviceDatafit

        return GLMDeviceDatafit(datafit, dtype)
    from .cox import CoxDeviceDatafit

    return CoxDeviceDatafit(datafit, dtype)


def _family(datafit) -> str:
    from riskset.models.glm import GLMDatafit

    if isinstance(datafit, GLMDatafit):
        return "glm"
    try:
        from riskset.models.cox import CoxDatafit
    except ImportError:  # pragma: no cover
        CoxDatafit = ()
    if isinstance(datafit, CoxDatafit):
        return "cox"
    name = type(datafit).__name__
    raise NotImplementedError(f"backend='gpu' supports the logistic, poisson, least_squares and cox "
                              f"families; {name} ({type(datafit).__module__}) has no GPU kernels yet: use "
                              "backend='cpu'")


def fit_replicates(*args, **kwargs):
    """Batched replicate fits on the device; see :func:`riskset.kernels.gpu.replicates.fit_replicates`."""
    from .replicates import fit_replicates as _fit

    return _fit(*args, **kwargs)

