"""``riskset info``: the versions of riskset and its engines, the CPU threads and the GPU devices."""
from __future__ import annotations

from riskset import __version__


def add_parser(sub) -> None:
    """Add the ``info`` command to the subcommands ``sub``."""
    p = sub.add_parser("info", help="print versions, CPU threads and GPU devices",
                       description="Print the versions of riskset and its engines, the CPU threads Numba uses, "
                                   "and the CUDA devices found (or why none is usable).")
    p.set_defaults(func=main)


def main(args) -> int:
    """Run ``riskset info``; returns the exit status."""
    import numba
    import numpy
    import scipy

    print(f"riskset {__version__}\nnumpy {numpy.__version__}, scipy {scipy.__version__}, numba {numba.__version__}")
    print(f"CPU threads (numba): {numba.config.NUMBA_NUM_THREADS}")
    from riskset.kernels.devices import describe_devices

    print(describe_devices())
    return 0
