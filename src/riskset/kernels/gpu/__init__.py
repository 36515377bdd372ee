"""GPU backend: device datafits (Numba-CUDA) and batched replicate fits (issue 7).

Families: logistic, Poisson, least squares (:mod:`.glm`), Breslow Cox, stratified or
not (:mod:`.cox`), and Fine-Gray competing risks (:mod:`.fine_gray`).

``to_device(datafit, dtype)`` turns a prepared CPU datafit into a device datafit that
the CCD solver (:mod:`riskset.solver.ccd`) uses unchanged: X (CSC) and the fit state
live on the device, and a whole CCD sweep is one kernel launch in which the Newton
step under the prior (L1 kink, center, trust region: :func:`riskset.core.step.prior_step_value`,
compiled for the device) is taken on the device; per sweep only beta and the
trust-region radii cross to the host. ``replicate_batch(datafit, weights, dtype)`` is
the :class:`~riskset.core.replicates.ReplicateBatch` of R row weightings of one X,
which :func:`riskset.solver.replicates.fit_replicates` fits at once.

A CPU datafit with device kernels declares it (:class:`riskset.core.interface.RunsOnDevice`)
and names its device datafit class (``device_datafit``, "module:Class" in this package).

Architecture
------------
* State: (R, N) arrays per replicate (R = 1 for an ordinary fit): eta (always
  float64, the accumulator) and the family's per-row state (GLM: exp(eta), residual,
  curvature; Cox and Fine-Gray: w = c exp(eta - shift); conditional models: w = exp(eta - shift),
  the shift the stratum's largest eta as on the CPU) in
  ``dtype``; Cox and Fine-Gray also (R, n_slots) float64 slot sums (Cox: by exit slot;
  by entry slot for (start, stop] rows; event rows for Efron ties) and cumulative
  aggregates, the conditional models (R, n_strata) float64 stratum sums W_s. X values
  are stored in ``dtype`` and row indices in int32.
* One persistent sweep kernel, one block per replicate (:mod:`.sweep`), specialized
  per family by its block-cooperative device functions ``refresh``, ``gradient``,
  ``terms`` and ``move`` (:mod:`.glm`, :mod:`.cox`, :mod:`.fine_gray`,
  :mod:`.conditional`; the latter gives each thread whole strata of the column, exact
  n:m sets by the CPU's Gail-Lubin-Rubinstein recursion): for each coordinate of the
  sweep the block screens a coordinate at its prior center by its gradient, reduces
  g and h over the column's non-zeros (shared-memory tree), takes the step, and all
  threads move their non-zeros; a per-replicate coordinate mask gives each replicate
  its own active set. Cox and Fine-Gray refresh their per-slot aggregates
  after a move by block-level (segmented) scans over the slots (:mod:`.blocks`), and
  compute the squared risk-set term with block scans over the column's non-zeros
  (right-censored rows) or, for Cox (start, stop] rows (hence time-varying
  coefficients), over its static entry/exit breakpoints; Efron ties add per-event-slot
  terms and a second scan (the tied event rows' sum) in the same walk.
* A single fit of a GLM, a right-censored Cox model or Fine-Gray spreads the same sweep
  over the whole grid (``sweep_grid_kernel`` of :mod:`.glm`, :mod:`.cox`,
  :mod:`.fine_gray`; cooperative launch, one block per multiprocessor, every block
  computing the same step from the same partials); the risk-set families' refresh and
  column walks become grid-wide segmented scans (:mod:`.gridscan`), and so does their
  exact state + log-likelihood pass. Replicate batches and Cox (start, stop] fits keep
  one block per fit.
* Row-parallel passes (GLM refresh and log-likelihood; the conditional models' exact
  state + log-likelihood, a thread per stratum) use many blocks per replicate.
* ``gradient`` is one block per (coefficient, replicate) on the device (a float32
  state's on the host in float64); for Cox and the GLMs in float64 ``local_quadratic``
  (the Newton polish: Hessian-vector products by :mod:`.columns` and, for Cox, a
  cooperative kernel of grid scans), ``information_scale`` and a new state's linear
  predictor also run on the device. ``hessian``, ``diagnose`` and the rest of the polish
  rebuild a CPU state from the coefficients and use the CPU datafit; questions about the
  data (names, reach, separation) are the CPU datafit's.

Kernels run on a CUDA GPU through Numba-CUDA (``pip install 'riskset[gpu]'``) or, with
``NUMBA_ENABLE_CUDASIM=1`` set before Python starts, in Numba's CUDA simulator.
"""
from __future__ import annotations

import numpy as np

from riskset.core.interface import RunsOnDevice
from riskset.exceptions import InputError

from .device import require_device, simulator_enabled

__all__ = ["to_device", "replicate_batch", "simulator_enabled", "require_device"]

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
    device_class = _device_class(datafit)
    if state_dtype(dtype) == np.float32:
        _check_float32_range(datafit)
    require_device()
    return device_class(datafit, dtype)


def replicate_batch(datafit, weights, dtype="float64"):
    """The :class:`~riskset.core.replicates.ReplicateBatch` of R row weightings of ``datafit``
    (a CPU datafit or a device datafit from :func:`to_device`) on the device: ``weights``
    (R, n) in Dataset row order (as ``Datafit.reweighted``); 0 removes a row (a held-out
    fold), counts give bootstrap draws."""
    from .replicates import DeviceReplicates

    return DeviceReplicates(to_device(datafit, dtype=dtype).replicates(np.atleast_2d(weights)))


def _device_class(datafit):
    """The device datafit class ``datafit`` declares (:class:`~riskset.core.interface.RunsOnDevice`)."""
    import importlib

    if not isinstance(datafit, RunsOnDevice):
        name = type(datafit).__name__
        raise NotImplementedError(f"backend='gpu' supports the logistic, poisson, least_squares, cox, fine_gray, "
                                  f"conditional_poisson, sccs and conditional_logistic families; {name} "
                                  f"({type(datafit).__module__}) has no GPU kernels yet: use backend='cpu'")
    module, name = type(datafit).device_datafit.split(":")
    return getattr(importlib.import_module(f".{module}", __name__), name)


#: Largest magnitude a covariate value may have on a float32 device (its square must not
#: overflow float32's 3.4e38 in a curvature sum).
FLOAT32_MAX_VALUE = 1e18


def _check_float32_range(datafit) -> None:
    """InputError naming the covariate whose values a float32 device cannot hold (they would
    become inf on the device), with the way out."""
    values = np.abs(datafit.values)  # the valued columns' values in column order, then ones
    if values.size and values.max() > FLOAT32_MAX_VALUE:
        k = int(np.argmax(values))
        valued = np.flatnonzero(~datafit.indicator)
        starts = datafit.indptr[valued] + datafit.value_shift[valued]
        j = int(valued[np.searchsorted(starts, k, side="right") - 1])
        raise InputError(f"covariate {datafit.coef_label(datafit.coef_of_column(j))!r} has the value "
                         f"{datafit.values[k]:.3g}: beyond {FLOAT32_MAX_VALUE:g}, float32 on the device would "
                         "overflow; rescale the covariate or use dtype='float64'")
