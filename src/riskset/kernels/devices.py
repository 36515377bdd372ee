"""Which compute devices are usable."""
from __future__ import annotations


def describe_devices() -> str:
    """One line per CUDA device, or why none is usable."""
    try:
        from numba import cuda
    except ImportError as err:  # pragma: no cover - numba always ships numba.cuda here
        return f"GPU: unavailable (numba.cuda cannot be imported: {err})"
    if cuda.is_available() and getattr(cuda, "simulator_enabled", False) is False:
        try:
            return "\n".join(f"GPU {d.id}: {d.name.decode() if isinstance(d.name, bytes) else d.name}"
                             for d in cuda.list_devices())
        except Exception as err:  # driver present but broken
            return f"GPU: unavailable ({err})"
    from numba import config

    if config.ENABLE_CUDASIM:
        return "GPU: Numba CUDA simulator (NUMBA_ENABLE_CUDASIM=1): GPU kernels run on the CPU, slowly"
    return "GPU: none found (no CUDA driver or device); set NUMBA_ENABLE_CUDASIM=1 to run GPU kernels in the simulator"
