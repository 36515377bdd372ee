"""Which compute devices are usable (``riskset info``)."""
from __future__ import annotations


def describe_devices() -> str:
    """One line per CUDA device (name, compute capability, multiprocessors, memory), or why none is usable."""
    from numba import config

    if config.ENABLE_CUDASIM:
        return ("GPU: Numba CUDA simulator (NUMBA_ENABLE_CUDASIM=1): GPU kernels run on the CPU as Python threads, "
                "slowly (for testing)")
    try:
        from numba import cuda
    except ImportError as err:  # pragma: no cover - numba always ships numba.cuda here
        return f"GPU: unavailable (numba.cuda cannot be imported: {err})"
    try:
        available = cuda.is_available()
    except Exception as err:  # broken driver installation
        return f"GPU: unavailable ({' '.join(str(err).split())})"
    if not available:
        return ("GPU: none found (no CUDA driver or device); install an NVIDIA driver and numba-cuda "
                "(pip install 'riskset[gpu]'), or set NUMBA_ENABLE_CUDASIM=1 to run GPU kernels in the simulator")
    lines = []
    try:
        for d in cuda.list_devices():
            name = d.name.decode() if isinstance(d.name, bytes) else d.name
            line = f"GPU {d.id}: {name}"
            try:
                with d:
                    dev = cuda.get_current_device()
                    free, total = cuda.current_context().get_memory_info()
                    cc = ".".join(map(str, dev.compute_capability))
                    line += (f", compute capability {cc}, {dev.MULTIPROCESSOR_COUNT} multiprocessors, "
                             f"{total / 2**30:.1f} GiB ({free / 2**30:.1f} GiB free)")
            except Exception as err:  # the device is listed but cannot be opened
                line += f" (cannot open: {' '.join(str(err).split())})"
            lines.append(line)
    except Exception as err:  # driver present but broken
        return f"GPU: unavailable ({' '.join(str(err).split())})"
    return "\n".join(lines) if lines else "GPU: none found (the CUDA driver lists no device)"
