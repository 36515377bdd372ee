"""GPU backend: device datafits (Numba-CUDA) and batched replicate fits.

``to_device(datafit, dtype)`` turns a prepared CPU datafit into a device datafit that
the CCD solver uses unchanged: X (CSC) and the fit state live on the device, and a
whole CCD sweep is one launch of a persistent kernel (one block per replicate, the
Newton step, L1 rule and trust region computed on the device; no host round trip per
coordinate). ``fit_replicates`` fits R row weightings of one X at once.

Kernels run on a CUDA GPU through Numba-CUDA (``pip install 'riskset[gpu]'``) or, with
``NUMBA_ENABLE_CUDASIM=1`` set before Python starts, in Numba's CUDA simulator.
"""
from __future__ import annotations

from .device import require_device, simulator_enabled

__all__ = ["to_device", "fit_replicates", "simulator_enabled", "require_device"]


def to_device(datafit, dtype="float64"):
    """The device version of ``datafit`` (GLM families and Breslow Cox, stratified or not).

    Raises ``NotImplementedError`` naming the family for other datafits and
    ``RuntimeError`` when no CUDA device is usable and the simulator is off.
    """
    from .base import DeviceDatafit
    from .device import state_dtype

    if isinstance(datafit, DeviceDatafit):
        return datafit
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
        if getattr(datafit, "has_start", False):
            raise NotImplementedError("backend='gpu' does not support Cox (start, stop] (counting-process) data "
                                      "or time-varying coefficients yet; use backend='cpu'")
        if getattr(datafit, "efron", False):
            raise NotImplementedError("backend='gpu' supports Cox with Breslow ties only (this data has tied "
                                      "event times and ties='efron'); use ties='breslow' or backend='cpu'")
        return "cox"
    name = type(datafit).__name__
    raise NotImplementedError(f"backend='gpu' supports the logistic, poisson, least_squares and cox (Breslow) "
                              f"families; {name} ({type(datafit).__module__}) has no GPU kernels yet: use "
                              "backend='cpu'")


def fit_replicates(*args, **kwargs):
    """Batched replicate fits on the device; see :func:`riskset.kernels.gpu.replicates.fit_replicates`."""
    from .replicates import fit_replicates as _fit

    return _fit(*args, **kwargs)
