"""GPU backend: device datafits (Numba-CUDA) and batched replicate fits (issue 7).

Families: logistic, Poisson, least squares (:mod:`.glm`), Breslow Cox, stratified or
not (:mod:`.cox`), and Fine-Gray competing risks (:mod:`.fine_gray`).

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
  curvature; Cox and Fine-Gray: w = c exp(eta); conditional models: w = exp(eta)) in
  ``dtype``; Cox and Fine-Gray also (R, n_slots) float64 slot sums (Cox: by exit slot;
  by entry slot for (start, stop] rows; event rows for Efron ties) and cumulative
  aggregates, the conditional models (R, n_strata) float64 stratum sums W_s. X values
  are stored in ``dtype`` and row indices in int32.
* Persistent sweep kernels, one block per replicate (:func:`.glm.sweep_kernel`,
  :func:`.cox.sweep_kernel`, :func:`.fine_gray.sweep_kernel`,
  :func:`.conditional.sweep_kernel`; the latter gives each thread whole strata of the
  column, exact n:m sets by the CPU's Gail-Lubin-Rubinstein recursion): for each
  coordinate of the sweep the block's threads
  reduce g and h over the column's non-zeros (shared-memory tree), thread 0 takes the
  step, all threads move their non-zeros; a per-replicate coordinate mask gives each
  replicate its own active set. Cox and Fine-Gray refresh their per-slot aggregates
  after a move by block-level (segmented) scans over the slots (:mod:`.blocks`), and
  compute the squared risk-set term with block scans over the column's non-zeros
  (right-censored rows) or, for Cox (start, stop] rows (hence time-varying
  coefficients), over its static entry/exit breakpoints; Efron ties add per-event-slot
  terms and a second scan (the tied event rows' sum) in the same walk.
* A single GLM fit spreads the sweep over the whole grid (:func:`.glm.sweep_grid_kernel`,
  cooperative launch, two grid syncs per coordinate, every block computing the same
  step from the same partials). A single Cox or Fine-Gray fit runs in one block.
* Row-parallel passes (GLM refresh and log-likelihood; the conditional models' exact
  state + log-likelihood, a thread per stratum) use many blocks per replicate; the Cox
  and Fine-Gray exact state + log-likelihood pass runs per replicate block.
* ``gradient``, ``hessian``, ``diagnose`` (rare: screening, polish, standard errors)
  rebuild a CPU state from the coefficients and use the CPU datafit.

Kernels run on a CUDA GPU through Numba-CUDA (``pip install 'riskset[gpu]'``) or, with
``NUMBA_ENABLE_CUDASIM=1`` set before Python starts, in Numba's CUDA simulator.
"""
from __future__ import annotations

import numpy as np

from riskset.exceptions import InputError

from .device import require_device, simulator_enabled

__all__ = ["to_device", "fit_replicates", "simulator_enabled", "require_device"]


def to_device(datafit, dtype="float64"):
    """The device version of ``datafit``: GLM families, Cox (Breslow or Efron ties, strata,
    (start, stop] rows and so step-function time-varying coefficients), Fine-Gray and the
    conditional models (conditional Poisson, SCCS, conditional logistic with Breslow or
    exact ties).

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
    if state_dtype(dtype) == np.float32:
        _check_float32_range(datafit)
    require_device()
    if kind == "glm":
        from .glm import GLMDeviceDatafit

        return GLMDeviceDatafit(datafit, dtype)
    if kind == "fine_gray":
        from .fine_gray import FineGrayDeviceDatafit

        return FineGrayDeviceDatafit(datafit, dtype)
    if kind == "conditional":
        from .conditional import ConditionalDeviceDatafit

        return ConditionalDeviceDatafit(datafit, dtype)
    from .cox import CoxDeviceDatafit

    return CoxDeviceDatafit(datafit, dtype)


def _family(datafit) -> str:
    from riskset.models.glm import GLMDatafit

    if isinstance(datafit, GLMDatafit):
        return "glm"
    from riskset.models.conditional import ConditionalDatafit

    if isinstance(datafit, ConditionalDatafit):
        from .conditional import MAX_EXACT_CASES

        m = int(datafit.exact_m.max(initial=0))
        if m > MAX_EXACT_CASES:
            raise NotImplementedError(f"backend='gpu' computes the exact conditional logistic likelihood for matched "
                                      f"sets of at most {MAX_EXACT_CASES} cases; this data has a set with {m}: use "
                                      "ties='breslow' or backend='cpu'")
        return "conditional"
    try:
        from riskset.models.cox import CoxDatafit
    except ImportError:  # pragma: no cover
        CoxDatafit = ()
    if isinstance(datafit, CoxDatafit):
        return "cox"
    from riskset.models.fine_gray import FineGrayDatafit

    if isinstance(datafit, FineGrayDatafit):
        return "fine_gray"
    name = type(datafit).__name__
    raise NotImplementedError(f"backend='gpu' supports the logistic, poisson, least_squares, cox, fine_gray, "
                              f"conditional_poisson, sccs and conditional_logistic families; {name} "
                              f"({type(datafit).__module__}) has no GPU kernels yet: use backend='cpu'")


def fit_replicates(*args, **kwargs):
    """Batched replicate fits on the device; see :func:`riskset.kernels.gpu.replicates.fit_replicates`."""
    from .replicates import fit_replicates as _fit

    return _fit(*args, **kwargs)


#: Largest magnitude a covariate value may have on a float32 device (its square must not
#: overflow float32's 3.4e38 in a curvature sum).
FLOAT32_MAX_VALUE = 1e18


def _check_float32_range(datafit) -> None:
    """InputError naming the covariate whose values a float32 device cannot hold (they would
    become inf on the device), with the way out."""
    values = np.abs(datafit.values)
    if values.size and values.max() > FLOAT32_MAX_VALUE:
        k = int(np.argmax(values))
        j = int(np.searchsorted(datafit.indptr, k, side="right") - 1)
        raise InputError(f"covariate {datafit.coef_label(datafit.coef_of_column(j))!r} has the value "
                         f"{datafit.values[k]:.3g}: beyond {FLOAT32_MAX_VALUE:g}, float32 on the device would "
                         "overflow; rescale the covariate or use dtype='float64'")
